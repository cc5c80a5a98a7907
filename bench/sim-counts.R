## bench/sim-counts.R: simulate_counts(), the sparse counts of the Poisson
## NMF model that bench/poisson-scale.R and bench/poisson-floor.R time the
## sweeps on (sourced by both). W (Fn x K) and H (K x Tn) have Gamma(shape,
## 1) entries scaled together so that the expected share of non-zeros,
## mean(1 - exp(-(W H)_ij)) over 2e5 random entries, is nz; factor k's
## Poisson(sum_i W_ik sum_j H_kj) units are placed at genes drawn with
## probabilities W[, k] and samples with probabilities H[k, ], and the units
## of a (gene, sample) pair summed: X ~ Poisson(W H) exactly. Also
## pois_call_args(): the sweeps of one .Call from a fixed start, for
## poisson-floor.R's `call` mode and pois-vb-sweep.R.

suppressPackageStartupMessages(library(Matrix))

simulate_counts <- function(Fn, Tn, K, nz = 0.05, shape = 0.5, seed = 1) {
  set.seed(seed)
  W1 <- matrix(rgamma(Fn * K, shape, 1), Fn, K)
  H1 <- matrix(rgamma(K * Tn, shape, 1), K, Tn)
  # P(X > 0) at scale s, from 2e5 random entries
  f <- sample.int(Fn, 2e5, TRUE)
  t <- sample.int(Tn, 2e5, TRUE)
  lam1 <- rowSums(W1[f, ] * t(H1[, t]))
  s2 <- uniroot(function(v) mean(1 - exp(-v * lam1)) - nz, c(1e-6, 10), tol = 1e-10)$root
  W <- W1 * sqrt(s2)
  H <- H1 * sqrt(s2)
  i <- j <- integer()
  ii <- list(); jj <- list()
  for (k in seq_len(K)) {
    n <- rpois(1, sum(W[, k]) * sum(H[k, ]))
    ii[[k]] <- sample.int(Fn, n, TRUE, prob = W[, k])
    jj[[k]] <- sample.int(Tn, n, TRUE, prob = H[k, ])
  }
  i <- unlist(ii); j <- unlist(jj)
  rm(ii, jj)
  X <- sparseMatrix(i = i, j = j, x = 1, dims = c(Fn, Tn))  # duplicates are summed
  list(X = X, W = W, H = H)
}

# The arguments of one .Call of n sweeps of the Poisson samplers on the
# counts X at rank K from a fixed random start, as the chains make them:
# W and H with Gamma(1, 1) entries, the prior Gamma(1, 1). `method` "vb"
# (q from W, H; `rows`: give the counts' row layout, made once a chain as
# bnmf() makes it, where the build has it) or "gibbs". Returns list(fun,
# args): do.call(.Call, c(list(fun), args)) runs the sweeps.
pois_call_args <- function(X, K, n, method = "vb", threads = 1, rows = TRUE) {
  I <- nrow(X); J <- ncol(X)
  set.seed(1)
  W0 <- matrix(rgamma(I * K, 1), I, K)
  H0 <- matrix(rgamma(K * J, 1), K, J)
  data <- bnmf:::prepare_data(X, K)
  x <- X@x + 0
  pr <- list(a = 1, b = 1, c = 1, d = 1)
  if (method == "vb") {
    rows <- if (rows && exists("C_pois_rows", asNamespace("bnmf"))) .Call(bnmf:::C_pois_rows, data, x)
    list(fun = bnmf:::C_pois_vb,
         args = list(bnmf:::pois_vb_state(W0, H0), data, x, pr,
                     list(n = as.double(n), tol = 0, threads = as.double(threads),
                          known = c(NA_real_, NA_real_), rows = rows)))
  } else {
    list(fun = bnmf:::C_pois_gibbs,
         args = list(bnmf:::pois_gibbs_state(W0, H0, FALSE), data, x, pr,
                     list(n = as.double(n), accumulate = 0, thin = 1, keep_draws = 0)))
  }
}
