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
                dimnames = list(NULL, c("tau", "lambda1", "lambdaK", "W11", "sumH1")))
  for (t in seq_len(n)) {
    bnmf:::engine_sweeps(st, d, pr, 1, rule = "gibbs", masked = FALSE)
    x <- as.vector(st$W %*% st$H) + rnorm(I * J, sd = 1 / sqrt(st$tau))
    st$x <- x
    d$sumsq_obs <- sum(x^2)
    st$sumsq <- d$sumsq_obs
    out[t, ] <- c(st$tau, st$lambda[1], st$lambda[K], st$W[1, 1], sum(st$H[1, ]))
  }
  out
}

test_that("the Gibbs sampler with ARD gets the joint distribution right", {
  skip_on_cran()
  I <- 4; J <- 3; K <- 2; a0 <- 4; b0 <- 3; alpha <- 3; beta <- 2
  # 20 independent runs of 2000 steps, each from its own exact draw of
  # (parameters, data): a run started in the joint distribution stays in it,
  # so the run means are independent and their spread gives the Monte Carlo
  # error whatever the autocorrelation (one long run mixes over lambda too
  # slowly for batch means to be reliable).
  runs <- lapply(seq_len(20), function(r) {
    geweke_ard_run(I, J, K, a0, b0, alpha, beta, n = 2000, seed = 5100 + r)
  })
  # W11 and the row sums of H are scale mixtures over lambda with heavy tails
  # (W11 is Lomax: its fourth moment is infinite for a0 = 4), so they are
  # tested through the exact probabilities of falling below their quartiles:
  # P(W11 <= w) = 1 - (b0 / (b0 + w))^a0, and the sum of row 1 of H, a
  # Gamma(J, lambda_1) given lambda_1, is b0 times a beta-prime(J, a0), so
  # P(sum <= s) = pbeta(s / (s + b0), J, a0).
  q_w <- b0 * ((1 - c(0.25, 0.5, 0.75))^(-1 / a0) - 1)
  x_s <- stats::qbeta(c(0.25, 0.5, 0.75), J, a0)
  q_s <- b0 * x_s / (1 - x_s)
  run_means <- function(out) {
    l1 <- out[, "lambda1"]
    c(tau = mean(out[, "tau"]), lambda1 = mean(l1), lambda1_sq = mean(l1^2),
      lambdaK = mean(out[, "lambdaK"]),
      lambda1_below_median = mean(l1 < qgamma(0.5, a0, b0)),
      W11_q1 = mean(out[, "W11"] <= q_w[1]), W11_q2 = mean(out[, "W11"] <= q_w[2]),
      W11_q3 = mean(out[, "W11"] <= q_w[3]),
      H1_q1 = mean(out[, "sumH1"] <= q_s[1]), H1_q2 = mean(out[, "sumH1"] <= q_s[2]),
      H1_q3 = mean(out[, "sumH1"] <= q_s[3]))
  }
  means <- t(vapply(runs, run_means, numeric(11)))
  exact <- c(tau = alpha / beta, lambda1 = a0 / b0, lambda1_sq = a0 * (a0 + 1) / b0^2,
             lambdaK = a0 / b0, lambda1_below_median = 0.5,
             W11_q1 = 0.25, W11_q2 = 0.5, W11_q3 = 0.75, H1_q1 = 0.25, H1_q2 = 0.5,
             H1_q3 = 0.75)
  est <- colMeans(means)
  se <- apply(means, 2, stats::sd) / sqrt(nrow(means))
  z <- (est - exact[colnames(means)]) / se
  # Under a right sampler z is Student t with 19 degrees of freedom:
  # P(|t_19| > 4.5) = 2.4e-4 for each of the 11 summaries.
  expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
})
