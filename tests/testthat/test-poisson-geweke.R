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

test_that("the Poisson Gibbs sampler gets the joint distribution right with K >= 4 and shapes 1 and below 1", {
  skip_on_cran()
  # K = 5: the split's four lanes and the rest; W's shapes 0.8 + z (below
  # 1 at z = 0), H's 1 + z (the exponential at z = 0)
  m <- geweke_pois_model(Fn = 2, Tn = 2, K = 5, a = 0.8, b = 2, c = 1, d = 2)
  res <- geweke_compare(m, geweke_simulate(m, n = 20000, seed = 67), n_ref = 5e4, seed = 68)
  expect_geweke(res, label = "Poisson Gibbs, K = 5")
})

# ARD: lambda_k ~ Gamma(alpha0, beta0), W_fk ~ Gamma(a, lambda_k),
# H_kt ~ Gamma(c, lambda_k). One sweep of the sampler (Z, W, H, then lambda)
# given X, then a fresh X ~ Poisson(W H), leaves this prior invariant: each
# lambda_k ~ Gamma(alpha0, beta0) exactly; sum(W), sum(H), W_11, sum(W H)
# against independent prior draws.
geweke_pois_ard_model <- function(Fn, Tn, K, a, c, alpha0, beta0, miss = integer()) {
  obs <- setdiff(seq_len(Fn * Tn), miss)
  sweeps <- pois_hook("pois_gibbs_sweeps")
  prior <- list(a = a, c = c, ard = c(alpha0, beta0))
  draw_x <- function(W, H) {
    X <- matrix(NA_real_, Fn, Tn)
    X[obs] <- stats::rpois(length(obs), (W %*% H)[obs])
    X
  }
  draw_prior <- function() {
    lam <- stats::rgamma(K, alpha0, beta0)
    W <- matrix(stats::rgamma(Fn * K, a, rep(lam, each = Fn)), Fn, K)
    H <- matrix(stats::rgamma(K * Tn, c, rep(lam, Tn)), K, Tn)
    list(W = W, H = H, lambda = lam)
  }
  init <- function() {
    s <- draw_prior()
    s$X <- draw_x(s$W, s$H)
    s
  }
  step <- function(s) {
    st <- sweeps(s$X, s[c("W", "H", "lambda")], prior, 1)
    st$X <- draw_x(st$W, st$H)
    st
  }
  stats <- function(s) {
    c(setNames(s$lambda, sprintf("lambda%d", seq_len(K))), sumW = sum(s$W), sumH = sum(s$H),
      W11 = s$W[1, 1], sumWH = sum(s$W %*% s$H))
  }
  prior_draws <- function(n) {
    t(vapply(seq_len(n), function(i) stats(draw_prior()), numeric(K + 4L)))
  }
  exact <- stats::setNames(rep(list(geweke_gamma(alpha0, beta0)), K),
                           sprintf("lambda%d", seq_len(K)))
  list(init = init, step = step, stats = stats, prior = prior_draws, exact = exact)
}

test_that("the Poisson ARD Gibbs sampler gets the joint distribution right", {
  skip_on_cran()
  # alpha0 large enough that lambda (and so W, H) stays away from 0 and oo
  m <- geweke_pois_ard_model(Fn = 3, Tn = 2, K = 2, a = 1.5, c = 2, alpha0 = 4, beta0 = 3,
                             miss = 4L)
  res <- geweke_compare(m, geweke_simulate(m, n = 20000, seed = 65), n_ref = 5e4, seed = 66)
  expect_geweke(res, label = "Poisson ARD Gibbs")
})
