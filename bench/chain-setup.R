# A chain on a dense or sparse X for the engine's internal wrappers
# (engine_sweeps()), as a fit sets it up: bnmf's automatic exponential rate,
# a random start, the latent entries at W H when Gibbs augments missing
# entries. Sourced by the bench scripts that time sweeps directly
# (sweep-pairs.R, cpu-ratio.R, masked-rows.R, sparse-sweep.R,
# sparse-fixed.R). Returns list(state, data, prior).
bench_chain <- function(X, K, method, masked, keep_wh = FALSE) {
  I <- nrow(X)
  J <- ncol(X)
  data <- bnmf:::prepare_data(X, K)
  mean_x <- data$sum_obs / data$n_obs
  rate <- sqrt(K / mean_x)
  prior <- list(lamW = matrix(rate, I, K), lamH = matrix(rate, K, J), alpha = 1, beta = 1,
                ard = numeric())
  init <- bnmf:::random_init(I, J, K, mean_x)
  nmiss <- length(data$miss_pos)
  latent <- if (nmiss && !masked) {
    bnmf:::wh_entries(init$W, init$H, data$miss_i, data$miss_j)
  } else {
    numeric(nmiss)
  }
  vb <- if (method == "vb") list(tau_rate = 1 + data$n_obs / 2, lambda_rate = rep(1, K))
  state <- bnmf:::new_state(X, data, init$W, init$H, 1, latent, keep_wh = keep_wh,
                            lambda = NULL, vb = vb)
  list(state = state, data = data, prior = prior)
}

# The sweep table's dense X (bench-sweep.R): I = J = 1000 (K = 20), W0 H0 +
# N(0, 1) noise with unit-mean exponential factors, after set.seed(20240601)
# (the stream goes on from there for the caller's next draws).
bench_table_x <- function(I = 1000L, J = 1000L, K = 20L) {
  set.seed(20240601)
  matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J) + matrix(rnorm(I * J), I, J)
}

# A sparse I x J dgCMatrix (Matrix) with a share `density` of stored values
# at random positions: W0 H0 there plus |N(0, 1)| noise (sparse-sweep.R,
# sparse-fixed.R).
bench_sparse_x <- function(W0, H0, density) {
  I <- nrow(W0)
  J <- ncol(H0)
  n <- round(density * I * J)
  pos <- sort(sample.int(I * J, n)) - 1 # 0-based linear positions
  i <- pos %% I + 1
  j <- pos %/% I + 1
  v <- rowSums(W0[i, , drop = FALSE] * t(H0[, j, drop = FALSE])) + abs(rnorm(n))
  Matrix::sparseMatrix(i = i, j = j, x = v, dims = c(I, J))
}

# The 100,000 x 5,000 sparse X (K = 10, W0 and H0 drawn after set.seed(1))
# of sparse-fixed.R and sparse-default.R, at a share `density` of stored
# values.
bench_sparse_case <- function(density, I = 100000L, J = 5000L, K = 10L) {
  set.seed(1)
  W0 <- matrix(rexp(I * K), I, K)
  H0 <- matrix(rexp(K * J), K, J)
  bench_sparse_x(W0, H0, density)
}

# For the tables of scripts that time builds side by side (sparse-fixed.R,
# sparse-default.R): "median (min-max)" of x with d decimals, and the BLAS
# that bench/openblas.sh (beside this file) gives R.
bench_range <- function(x, d = 1) {
  sprintf(paste0("%.", d, "f (%.", d, "f-%.", d, "f)"), stats::median(x), min(x), max(x))
}
bench_openblas_name <- function(ob) {
  rscript <- file.path(R.home("bin"), "Rscript")
  system2(ob, c(rscript, "-e", shQuote("cat(extSoftVersion()[['BLAS']])")), stdout = TRUE)
}
