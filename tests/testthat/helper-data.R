# Synthetic data for the tests: X = W0 H0 + noise, with unit-mean exponential
# factors (as in Schmidt et al. 2009 and Brouwer et al. 2017).
make_nmf_data <- function(I = 30, J = 20, K = 3, sd = 0.1, seed = 1) {
  set.seed(seed)
  W0 <- matrix(rexp(I * K), I, K)
  H0 <- matrix(rexp(K * J), K, J)
  list(X = W0 %*% H0 + matrix(rnorm(I * J, sd = sd), I, J), W = W0, H = H0,
       WH = W0 %*% H0)
}

# Batch-means Monte Carlo standard error of the mean of a (correlated) chain.
batch_se <- function(x, batches = 50) {
  n <- length(x) %/% batches
  m <- colMeans(matrix(x[seq_len(n * batches)], n, batches))
  sd(m) / sqrt(batches)
}

# Gradient of the negative log posterior of ICM at fixed tau, for the KKT check:
# d/dW = tau * (M o (WH - X)) H' + lamW, d/dH = tau * W' (M o (WH - X)) + lamH,
# where M masks the observed entries.
neg_log_post_grad <- function(X, W, H, tau, lamW, lamH) {
  R <- W %*% H - X
  R[is.na(R)] <- 0
  list(W = tau * R %*% t(H) + lamW, H = tau * t(W) %*% R + lamH)
}

# The GDSC drug-sensitivity matrix kept beside the repository (never shipped):
# look upward from the working directory; NULL when it is not there.
gdsc_path <- function() {
  dir <- normalizePath(getwd())
  for (up in 0:6) {
    p <- file.path(dir, "shared", "data", "gdsc", "ic50.txt")
    if (file.exists(p)) return(p)
    dir <- dirname(dir)
  }
  NULL
}

# A 12 x 9 positive X of rank 2 and its copy Xa with exactly a third of every
# row (3 of 9) and of every column (4 of 12) missing (`miss`, a cyclic
# pattern): the largest share at which the "auto" settings of
# icm_control() and vb_control() still impute.
third_missing <- function() {
  X <- abs(make_nmf_data(I = 12, J = 9, K = 2, sd = 0.3, seed = 5)$X)
  miss <- outer(seq_len(12), seq_len(9), function(i, j) (i + j) %% 3 == 0)
  Xa <- X
  Xa[miss] <- NA
  list(X = X, Xa = Xa, miss = miss)
}

# A fit of Y (rank 2, seed 9, `iter` sweeps, tol = 0) by `method` ("icm",
# "vb" or "np"), with its control's `missing = setting` (NULL: the default).
missing_fit <- function(Y, method, iter, setting = NULL) {
  control <- switch(method, icm = icm_control, vb = vb_control, np = np_control)
  set.seed(9)
  bnmf(Y, rank = 2, method = method, iter = iter, tol = 0, progress = FALSE,
       control = if (!is.null(setting)) control(setting))
}

# missing_fit() with the default control and with `setting` asked for: the
# default must have chosen `setting` and given the same fit. Returns the
# default's fit.
expect_auto_setting <- function(Y, method, setting, iter) {
  fa <- missing_fit(Y, method, iter)
  fs <- missing_fit(Y, method, iter, setting)
  expect_identical(fa$settings$missing, setting)
  expect_identical(fa$W, fs$W)
  expect_identical(fa$H, fs$H)
  expect_identical(fa$trace, fs$trace)
  invisible(fa)
}

# update() of missing_fit(Y, method, iter, setting) by 3 sweeps keeps the
# setting and continues exactly: the fit of iter + 3 sweeps.
expect_update_continues <- function(Y, method, setting, iter) {
  f3 <- suppressWarnings(update(missing_fit(Y, method, iter, setting), iter = 3))
  expect_identical(f3$settings$missing, setting)
  f <- missing_fit(Y, method, iter + 3, setting)
  expect_equal(f3$W, f$W, tolerance = 1e-12)
  expect_equal(f3$H, f$H, tolerance = 1e-12)
}
