# Builds inst/extdata/qtransform-pairs.rds: the 100 Q-Transform pairs used by
# bnmf(method = "particles", init = "qtransform").
#
# As in Masood & Doshi-Velez (section 6.1): 20 synthetic 12 x 12 data sets of
# rank 3 with truncated-Gaussian noise, 5 random restarts of NMF on each, and
# the transfer rank and SVD rank both 3. Deterministic: run from the package
# root with bnmf installed,
#   Rscript data-raw/qtransform.R
library(bnmf)
set.seed(20180319)
pairs <- qtransform_pairs(n_data = 20, restarts = 5, size = 12, rank = 3, noise = 0.1)
dir.create("inst/extdata", showWarnings = FALSE, recursive = TRUE)
saveRDS(pairs, "inst/extdata/qtransform-pairs.rds", version = 2)
print(pairs)
