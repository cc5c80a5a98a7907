# The Laurberg toy of section 5.1 (R/engine-rrt.R).
laurberg_toy <- bnmf:::laurberg_toy
