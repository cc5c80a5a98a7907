## bench/poisson-scale.R: the Poisson model's VB on sparse counts at
## single-cell scale, and the cost of a VB sweep.
##
## Steps (each a separate process, so that /usr/bin/time -v measures one
## thing at a time):
##   simulate  draw X (20,000 x 50,000 dgCMatrix, about 5% non-zeros) from
##             the model at K = 20 and save it with the true W, H to
##             $POISX_SCALE (default /tmp/poisson-scale.rds). The counts are
##             drawn through the auxiliary variables, in O(total count):
##             N_k ~ Poisson(sum(W[, k]) sum(H[k, ])), then N_k row indices
##             with probabilities W[, k] and column indices with probabilities
##             H[k, ] (the multinomial split), summed into the sparse matrix.
##             W_fk ~ Gamma(0.5, 1) s, H_kt ~ Gamma(0.5, 1) s with the scale s
##             set so that P(X_ft > 0) = 0.05.
##   baseline  read X, load bnmf, do nothing (R's baseline memory with X).
##   fit [iter] [threads]
##             read X, VB at K = 20 (iter sweeps at most, default 200; on
##             `threads` threads, options(bnmf.threads), default 1): time, recovery of the true
##             factors (cosine similarity of the columns of W after
##             align_factors(), RRMSE of E[X] on 10^6 random entries).
##   sweep [I J]
##             on smaller sparse matrices (I x J, default 5000 x 10000, at 1, 2, 4, 8%
##             non-zeros) the time of one VB sweep (from fits of 5 and 25
##             iterations with tol = 0, the fastest of 3 runs of each) against the two sparse-dense
##             products X %*% t(H) and crossprod(W, X) in the same process,
##             in CPU seconds (user + system);
##             cost per sweep regressed on nnz.
##
##   R_LIBS=/tmp/bench/lib Rscript bench/poisson-scale.R simulate
##   /usr/bin/time -v env R_LIBS=/tmp/bench/lib Rscript bench/poisson-scale.R baseline
##   /usr/bin/time -v env R_LIBS=/tmp/bench/lib Rscript bench/poisson-scale.R fit 200
##   R_LIBS=/tmp/bench/lib Rscript bench/poisson-scale.R sweep
##   R_LIBS=/tmp/bench/lib Rscript bench/poisson-scale.R sweep 20000 5000
## (peak memory of the fit = "Maximum resident set size" of fit minus that of
## baseline, against object.size(X)).

suppressPackageStartupMessages({
  library(Matrix)
  library(bnmf)
})
step <- commandArgs(TRUE)[1]
iter_fit <- if (length(commandArgs(TRUE)) >= 2) as.integer(commandArgs(TRUE)[2]) else 200L
threads <- if (identical(step, "fit") && length(commandArgs(TRUE)) >= 3) as.integer(commandArgs(TRUE)[3]) else 1L
options(bnmf.threads = threads)
path <- Sys.getenv("POISX_SCALE", "/tmp/poisson-scale.rds")
K <- 20L

source(file.path(if (file.exists("bench/sim-counts.R")) "bench" else ".", "sim-counts.R"))

# CPU seconds (user + system) of this single-threaded process: less moved by
# other jobs on a shared machine than the wall clock.
cpu <- function() sum(proc.time()[c("user.self", "sys.self")])
sweep_time <- function(X, n) {
  set.seed(1)
  t0 <- cpu()
  suppressWarnings(bnmf(X, rank = K, likelihood = "poisson", method = "vb", iter = n, tol = 0,
                        progress = FALSE))
  cpu() - t0
}

if (identical(step, "simulate")) {
  t0 <- Sys.time()
  sim <- simulate_counts(20000, 50000, K)
  saveRDS(sim, path, compress = FALSE)
  cat(sprintf("X: %d x %d, nnz %d (%.2f%%), %.0f MB as dgCMatrix; simulated in %.0f s\n",
              nrow(sim$X), ncol(sim$X), length(sim$X@x), 100 * length(sim$X@x) / prod(dim(sim$X)),
              as.numeric(object.size(sim$X)) / 2^20, as.numeric(difftime(Sys.time(), t0, units = "secs"))))
} else if (identical(step, "baseline")) {
  sim <- readRDS(path)
  cat(sprintf("baseline: X read, %.0f MB\n", as.numeric(object.size(sim$X)) / 2^20))
} else if (identical(step, "fit")) {
  sim <- readRDS(path)
  X <- sim$X
  set.seed(1)
  t0 <- Sys.time()
  fit <- bnmf(X, rank = K, likelihood = "poisson", method = "vb", iter = iter_fit, progress = FALSE)
  secs <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
  fa <- factors(fit)
  al <- align_factors(sim$W, fa)
  cosW <- diag(al$cosine[, al$perm])
  f <- sample.int(nrow(X), 1e6, TRUE)
  t <- sample.int(ncol(X), 1e6, TRUE)
  m0 <- rowSums(sim$W[f, ] * t(sim$H[, t]))
  m1 <- rowSums(fa$W[f, ] * t(fa$H[, t]))
  e <- elbo(fit)
  cat(sprintf("fit: %.0f s for %d sweeps (%.2f s per sweep) on %d thread(s); X %.0f MB\n", secs,
              length(e), secs / length(e), threads, as.numeric(object.size(X)) / 2^20))
  cat(sprintf("recovery: cosine of the columns of W with the truth: median %.3f, min %.3f; RRMSE of E[X] on 1e6 entries %.3f\n",
              median(cosW), min(cosW), sqrt(sum((m1 - m0)^2) / sum(m0^2))))
  saveRDS(list(seconds = secs, sweeps = length(e), cosW = cosW,
               rrmse_EX = sqrt(sum((m1 - m0)^2) / sum(m0^2))), sub("\\.rds$", "-fit.rds", path))
} else if (identical(step, "sweep")) {
  rows <- list()
  dims <- if (length(commandArgs(TRUE)) >= 3) as.numeric(commandArgs(TRUE)[2:3]) else c(5000, 10000)
  cat(sprintf("%g x %g, K = %d; load average %s\n", dims[1], dims[2], K,
              paste(scan("/proc/loadavg", what = "", n = 3, quiet = TRUE), collapse = " ")))
  for (nz in c(0.01, 0.02, 0.04, 0.08)) {
    sim <- simulate_counts(dims[1], dims[2], K, nz = nz, seed = 2)
    X <- sim$X
    Wd <- sim$W; Hd <- sim$H
    prod_t <- min(replicate(3, {
      t0 <- cpu(); X %*% t(Hd); crossprod(Wd, X); cpu() - t0
    }))
    t5 <- min(replicate(3, sweep_time(X, 5)))
    t25 <- min(replicate(3, sweep_time(X, 25)))
    per <- (t25 - t5) / 20
    rows[[length(rows) + 1L]] <- data.frame(nnz = length(X@x), products = prod_t, sweep = per,
                                            ratio = per / prod_t)
  }
  d <- do.call(rbind, rows)
  fitl <- lm(sweep ~ nnz, d)
  cat("| nnz | two products (s) | VB sweep (s) | sweep / products |\n|---|---|---|---|\n")
  for (r in seq_len(nrow(d))) with(d[r, ], cat(sprintf("| %d | %.3f | %.3f | %.2f |\n", nnz, products, sweep, ratio)))
  cat(sprintf("\nsweep = %.3g + %.3g * nnz seconds (R^2 = %.4f)\n", coef(fitl)[1], coef(fitl)[2],
              summary(fitl)$r.squared))
}
