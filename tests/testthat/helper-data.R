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
