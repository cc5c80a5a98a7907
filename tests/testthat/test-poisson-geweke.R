# Joint-distribution ("getting it right") test (Geweke 2004) of the Poisson
# Gibbs sampler (auxiliary counts Z, Gamma conditionals), through the hook
# pois_gibbs_sweeps(): alternating one sweep given X with a fresh draw of the
# observed X ~ Poisson(W H) leaves the prior W_fk ~ Gamma(a, b),
# H_kt ~ Gamma(c, d) invariant. Summaries with exact prior distributions:
# sum(W) ~ Gamma(F K a, b), sum(H) ~ Gamma(K T c, d), W_11 ~ Gamma(a, b),
# H_KT ~ Gamma(c, d); and sum(W H) against independent prior draws.
# Missing entries (NA) stay missing and are left out of the likelihood.

geweke_pois_model <- function(Fn, Tn, K, a, b, c, d, miss = integer()) {
  obs <- setdiff(seq_len(Fn * Tn), miss)
  sweeps <- pois_hook("pois_gibbs_sweeps")
  prior <- list(a = a, b = b, c = c, d = d)
  draw_x <- function(W, H) {
    X <- matrix(NA_real_, Fn, Tn)
    X[obs] <- stats::rpois(length(obs), (W %*% H)[obs])
    X
  }
  init <- function() {
    W <- matrix(stats::rgamma(Fn * K, a, b), Fn, K)
    H <- matrix(stats::rgamma(K * Tn, c, d), K, Tn)
    list(W = W, H = H, X = draw_x(W, H))
  }
  step <- function(s) {
    st <- sweeps(s$X, list(W = s$W, H = s$H), prior, 1)
    list(W = st$W, H = st$H, X = draw_x(st$W, st$H))
  }
  stats <- function(s) {
    c(sumW = sum(s$W), sumH = sum(s$H), W11 = s$W[1, 1], HKT = s$H[K, Tn],
      sumWH = sum(s$W %*% s$H))
  }
  prior_draws <- function(n) {
    out <- matrix(NA_real_, n, 5L, dimnames = list(NULL, c("sumW", "sumH", "W11", "HKT", "sumWH")))
    for (i in seq_len(n)) {
      W <- matrix(stats::rgamma(Fn * K, a, b), Fn, K)
      H <- matrix(stats::rgamma(K * Tn, c, d), K, Tn)
      out[i, ] <- c(sum(W), sum(H), W[1, 1], H[K, Tn], sum(W %*% H))
    }
    out
  }
  list(init = init, step = step, stats = stats, prior = prior_draws,
       exact = list(sumW = geweke_gamma(Fn * K * a, b), sumH = geweke_gamma(K * Tn * c, d),
                    W11 = geweke_gamma(a, b), HKT = geweke_gamma(c, d)))
}

test_that("the Poisson Gibbs sampler gets the joint distribution right", {
  skip_on_cran()
  m <- geweke_pois_model(Fn = 3, Tn = 2, K = 2, a = 2, b = 1.5, c = 1.5, d = 1)
  res <- geweke_compare(m, geweke_simulate(m, n = 20000, seed = 61), n_ref = 5e4, seed = 62)
  expect_geweke(res, label = "Poisson Gibbs")
})

test_that("the Poisson Gibbs sampler gets the joint distribution right with missing entries", {
  skip_on_cran()
  m <- geweke_pois_model(Fn = 3, Tn = 3, K = 2, a = 1.5, b = 1, c = 2, d = 1.5,
                         miss = c(2L, 6L))
  res <- geweke_compare(m, geweke_simulate(m, n = 20000, seed = 63), n_ref = 5e4, seed = 64)
  expect_geweke(res, label = "Poisson Gibbs, missing entries")
})
