# Joint-distribution ("getting it right") test (Geweke 2004) of the Gibbs
# sampler with the ARD prior: lambda_k ~ Gamma(a0, b0), W[, k] and H[k, ] ~
# Exp(lambda_k), tau ~ Gamma(alpha, beta). Alternating one Gibbs sweep given X
# (W, H, scale move, tau, lambda) with a fresh draw of X given the parameters
# leaves the prior invariant, so the draws of lambda, W, H and tau must follow
# it.

geweke_ard_run <- function(I, J, K, a0, b0, alpha, beta, n, seed) {
  set.seed(seed)
  lambda <- rgamma(K, a0, b0)
  W <- matrix(rexp(I * K, rep(lambda, each = I)), I, K)
  H <- matrix(rexp(K * J, lambda), K, J)
  tau <- rgamma(1, alpha, beta)
  X <- W %*% H + matrix(rnorm(I * J, sd = 1 / sqrt(tau)), I, J)
  d <- bnmf:::prepare_data(X, K)
  pr <- list(lamW = matrix(1, I, K), lamH = matrix(1, K, J), alpha = alpha,
             beta = beta, ard = c(a0, b0))
  st <- bnmf:::new_state(X, d, W, H, tau, numeric(), FALSE, lambda = lambda)
  out <- matrix(NA_real_, n, 5,
                dimnames = list(NULL, c("tau", "lambda1", "lambdaK", "W11", "sumH")))
  for (t in seq_len(n)) {
    bnmf:::engine_sweeps(st, d, pr, 1, rule = "gibbs", masked = FALSE)
    x <- as.vector(st$W %*% st$H) + rnorm(I * J, sd = 1 / sqrt(st$tau))
    st$x <- x
    d$sumsq_obs <- sum(x^2)
    st$sumsq <- d$sumsq_obs
    out[t, ] <- c(st$tau, st$lambda[1], st$lambda[K], st$W[1, 1], sum(st$H))
  }
  out
}

test_that("the Gibbs sampler with ARD gets the joint distribution right", {
  skip_on_cran()
  I <- 4; J <- 3; K <- 2; a0 <- 4; b0 <- 3; alpha <- 3; beta <- 2
  out <- geweke_ard_run(I, J, K, a0, b0, alpha, beta, n = 40000, seed = 51)
  l1 <- out[, "lambda1"]
  stats <- list(
    tau = out[, "tau"], lambda1 = l1, lambda1_sq = l1^2, lambdaK = out[, "lambdaK"],
    lambda1_below_median = as.numeric(l1 < qgamma(0.5, a0, b0)),
    W11 = out[, "W11"], sumH = out[, "sumH"]
  )
  # E[1 / lambda] = b0 / (a0 - 1) for lambda ~ Gamma(a0, b0)
  exact <- c(tau = alpha / beta, lambda1 = a0 / b0, lambda1_sq = a0 * (a0 + 1) / b0^2,
             lambdaK = a0 / b0, lambda1_below_median = 0.5, W11 = b0 / (a0 - 1),
             sumH = K * J * b0 / (a0 - 1))
  est <- vapply(stats, mean, numeric(1))
  se <- vapply(stats, batch_se, numeric(1))
  z <- (est - exact[names(est)]) / se
  expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
})
