## bench/nmtf-kmeans.R: the k-means start of a tri-factorisation (what
## nmtf_init() runs for init = "kmeans", the default of Gibbs, ICM and NP):
## k = 10 clusters of the rows and k = 8 of the columns, timed for two
## installed builds, each in its own process, alternated.
##
##   Rscript bench/nmtf-kmeans.R [rounds] LIB_A LIB_B
##   bench/openblas.sh Rscript bench/nmtf-kmeans.R 2 LIB_A LIB_B
##
## Cases: sparse 100,000 x 5,000 at density 0.01 (bench_sparse_case() of
## chain-setup.R) and dense 1000 x 1000 (W0 H0 + noise, clipped at 0).
## Prints seconds per start (both k-means runs) and B / A per round.
args <- commandArgs(TRUE)
if (length(args) >= 1L && args[1] == "--child") {
  suppressPackageStartupMessages({
    library(bnmf, lib.loc = args[2])
    library(Matrix)
  })
  source("bench/chain-setup.R")
  X <- if (args[3] == "sparse") bench_sparse_case(0.01) else local({
    set.seed(1)
    pmax(matrix(rexp(1000 * 10), 1000, 10) %*% matrix(rexp(10 * 1000), 10, 1000) +
           matrix(rnorm(1e6), 1000), 0)
  })
  Xt <- if (inherits(X, "Matrix")) Matrix::t(X) else t(X)
  gc()
  set.seed(3)
  sec <- system.time({
    bnmf:::kmeans_rows(X, 10L)
    bnmf:::kmeans_rows(Xt, 8L)
  })[["elapsed"]]
  cat(sec, "\n")
  quit(save = "no")
}
rounds <- as.integer(args[1])
libs <- args[2:3]
if (length(libs) != 2L || anyNA(rounds)) stop("usage: Rscript bench/nmtf-kmeans.R rounds LIB_A LIB_B")
rscript <- file.path(R.home("bin"), "Rscript")
run <- function(lib, case) {
  as.numeric(system2(rscript, c("bench/nmtf-kmeans.R", "--child", lib, case), stdout = TRUE))
}
cat(sprintf("BLAS %s; %s; %d rounds\n\n", extSoftVersion()[["BLAS"]],
            format(Sys.time(), "%Y-%m-%d %H:%M %Z"), rounds))
cat("| case | A, s | B, s | B / A per round: median (range) |\n|---|---:|---:|---:|\n")
for (case in c("sparse", "dense")) {
  a <- b <- numeric(rounds)
  for (r in seq_len(rounds)) {
    if (r %% 2L) { a[r] <- run(libs[1], case); b[r] <- run(libs[2], case) }
    else { b[r] <- run(libs[2], case); a[r] <- run(libs[1], case) }
  }
  q <- b / a
  cat(sprintf("| %s | %.2f | %.2f | %.2f (%.2f-%.2f) |\n", case, stats::median(a),
              stats::median(b), stats::median(q), min(q), max(q)))
}
