# CPU per sweep of Poisson VB under two builds, separate processes
# interleaved (A, B, A, B, ...), three rounds; prints the per-sweep CPU,
# their ratio B / A and the difference of the final ELBOs (0: the same fit).
#   Rscript bench/pois-vb-chunks.R <lib A> <lib B>
args <- commandArgs(TRUE)
one <- function(lib) {
  cmd <- sprintf("R_LIBS=%s Rscript -e 'suppressPackageStartupMessages({library(bnmf); library(Matrix)}); set.seed(1); X <- rsparsematrix(5000, 40000, 0.01, rand.x = function(n) rpois(n, 3) + 1); c1 <- system.time(f1 <- bnmf(X, rank = 10, likelihood = \"poisson\", method = \"vb\", iter = 5, tol = 0, progress = FALSE))[[1]]; c2 <- system.time(f2 <- bnmf(X, rank = 10, likelihood = \"poisson\", method = \"vb\", iter = 25, tol = 0, progress = FALSE))[[1]]; cat((c2 - c1) / 20, tail(f2$trace$logpost, 1), \"\\n\")'", lib)
  as.numeric(strsplit(system(cmd, intern = TRUE), " ")[[1]][1:2])
}
r <- replicate(3, { a <- one(args[1]); b <- one(args[2]); c(a[1], b[1], b[1] / a[1], a[2] - b[2]) })
print(r); cat("median ratio new/old", median(r[3, ]), "\n")
