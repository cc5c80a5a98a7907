## bench/poisson-start.R: Poisson VB from the random start and from
## init = "spectral", against the truth of simulated counts.
##
##   R_LIBS=<lib> Rscript bench/atlas.R make 5000 100000 small      # the counts (11 s)
##   R_LIBS=<lib> Rscript bench/poisson-start.R sparse [cells] [sweeps] [seeds]
##        # default 20000 cells of small.h5, 300 sweeps, seeds 1:3 (10 min);
##        # seeds "none": the start from the truth only
##   R_LIBS=<lib> Rscript bench/poisson-start.R easy    # 16 small fits (1 min)
##
## `sparse`: the first `cells` cells of bench/atlas.R's small file (5,000
## genes, K = 20, 0.74% non-zeros, about 37 counts a cell; see atlas.R for
## the model), in memory as a dgCMatrix; VB at K = 20 with tol = 0 for
## `sweeps` sweeps from the random start, from init = "spectral" (both per
## seed) and from the true W, H (once); the final ELBO, and the matched
## correlations of W's columns (normalised to sum 1; Hungarian assignment
## with clue) against the truth.
##
## `easy`: counts X ~ Poisson(W H) with W, H Gamma(0.5, 1) entries (H times
## a scale), four shapes (I x J, K, mean count) and four seeds each; VB to
## tol = 1e-6 (at most 500 sweeps) from both starts; the ELBO difference
## (spectral - random), the median matched correlation of W's columns and
## the sweeps each took.

suppressPackageStartupMessages({library(bnmf); library(Matrix)})
args <- commandArgs(trailingOnly = TRUE)
mode <- if (length(args)) args[1L] else "sparse"
dir <- Sys.getenv("BNMF_ATLAS_DIR", "/tmp/bnmf-atlas")

matched <- function(W_true, W_fit) {
  nt <- sweep(W_true, 2L, colSums(W_true), "/")
  nf <- sweep(W_fit, 2L, colSums(W_fit), "/")
  C <- stats::cor(nt, nf)
  C[!is.finite(C)] <- -1
  p <- as.integer(clue::solve_LSAP(C - min(C), maximum = TRUE))
  C[cbind(seq_len(ncol(C)), p)]
}

if (mode == "sparse") {
  ncell <- if (length(args) >= 2L) as.integer(args[2L]) else 20000L
  iter <- if (length(args) >= 3L) as.integer(args[3L]) else 300L
  # seeds "none": the start from the truth only
  seeds <- if (length(args) >= 4L && args[4L] == "none") integer() else
    if (length(args) >= 4L) eval(parse(text = args[4L])) else 1:3
  K <- 20L
  file <- file.path(dir, "small.h5")
  p <- as.double(rhdf5::h5read(file, "counts/indptr"))
  sh <- as.integer(rhdf5::h5read(file, "counts/shape"))
  X <- bnmf:::read_tenx_block(list(file = file, group = "counts", I = sh[1L],
                                    cols = c(1, ncell), indptr = p[seq_len(ncell + 1L)]))
  truth <- readRDS(file.path(dir, "small-truth.rds"))
  cat(sprintf("%d x %d, %d stored counts (%.1f a cell); K = %d, %d sweeps, tol = 0; load %s\n",
              nrow(X), ncol(X), length(X@x), sum(X@x) / ncol(X), K, iter,
              paste(readLines("/proc/loadavg"), collapse = " ")))
  one <- function(label, seed, init) {
    if (is.numeric(seed)) set.seed(seed)
    t <- system.time(fit <- suppressWarnings(bnmf(X, K, likelihood = "poisson", method = "vb",
                                                   iter = iter, tol = 0, progress = FALSE,
                                                   init = init)))
    m <- matched(truth$W, unname(as.matrix(fit$W)))
    tr <- fit$trace[, "logpost"]
    cat(sprintf("| %s | %s | %.6e | %.3f | %.3f | %.3f | %.0f |\n", label, seed, tr[length(tr)],
                min(m), stats::median(m), max(m), t[["elapsed"]]))
  }
  cat("| start | seed | final ELBO | W corr. min | median | max | elapsed s |\n|---|---|---:|---:|---:|---:|---:|\n")
  for (s in seeds) {
    one("random", s, "random")
    one("spectral", s, "spectral")
  }
  one("truth", "-", list(W = truth$W, H = truth$H[, seq_len(ncell)]))
}

if (mode == "easy") {
  rows <- NULL
  for (cfg in list(c(100, 200, 5, 1), c(300, 500, 10, 0.3), c(50, 1000, 3, 0.1),
                   c(500, 300, 8, 0.02))) {
    I <- cfg[1L]; J <- cfg[2L]; K <- cfg[3L]
    for (s in 1:4) {
      set.seed(s)
      W <- matrix(stats::rgamma(I * K, 0.5), I, K)
      H <- matrix(stats::rgamma(K * J, 0.5), K, J) * cfg[4L]
      X <- matrix(stats::rpois(I * J, W %*% H), I, J)
      out <- vapply(c("random", "spectral"), function(init) {
        set.seed(100 + s)
        f <- suppressWarnings(bnmf(X, K, likelihood = "poisson", method = "vb", iter = 500,
                                   progress = FALSE, init = init))
        c(elbo = utils::tail(f$trace[, "logpost"], 1),
          corW = stats::median(matched(W, unname(as.matrix(f$W)))), sweeps = nrow(f$trace))
      }, numeric(3))
      rows <- rbind(rows, data.frame(I = I, J = J, K = K, mean = round(mean(X), 3), seed = s,
                                     d_elbo = round(out[1, 2] - out[1, 1], 1),
                                     corW_random = round(out[2, 1], 3),
                                     corW_spectral = round(out[2, 2], 3),
                                     sweeps_random = out[3, 1], sweeps_spectral = out[3, 2]))
    }
  }
  print(rows, row.names = FALSE)
}
