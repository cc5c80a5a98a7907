# Automatic relevance determination: one rate per factor.

test_that("ICM with ARD stops at a mode of lambda, and VB at its q", {
  d <- make_nmf_data(I = 25, J = 20, K = 2, sd = 0.1, seed = 41)
  set.seed(42)
  fit <- bnmf(d$X, rank = 4, method = "icm", prior = ard(2, 3), tol = 1e-12, iter = 5000)
  # lambda_k = (alpha0 + I + J - 1) / (beta0 + sum_i W_ik + sum_j H_kj)
  expect_equal(unname(fit$lambda),
               unname((2 + 25 + 20 - 1) / (3 + colSums(fit$W) + rowSums(fit$H))),
               tolerance = 1e-6)
  # and W, H satisfy the KKT conditions of the MAP given lambda and tau
  g <- neg_log_post_grad(d$X, fit$W, fit$H, fit$tau,
                         matrix(fit$lambda, 25, 4, byrow = TRUE), matrix(fit$lambda, 4, 20))
  scale <- max(abs(g$W), abs(g$H))
  expect_lt(max(abs(g$W[fit$W > 1e-8])), 1e-3 * scale)
  expect_gt(min(g$W[fit$W <= 1e-8], Inf), -1e-3 * scale)
  expect_output(print(fit), "ARD")
})

test_that("Gibbs with ARD matches exact quadrature of a tiny problem", {
  skip_on_cran()
  # I = 1, J = 2, K = 1 with lambda ~ Gamma(a0, b0) shared by w, h1, h2.
  # Given lambda the exact reference applies; integrate lambda on a log grid:
  # p(lambda | x) propto Gamma(lambda; a0, b0) p(x | lambda).
  x <- c(1.2, 0.8)
  a0 <- 3; b0 <- 2; alpha <- 2; beta <- 1
  grid <- exact_tiny_ard(x, a0, b0, alpha, beta, u = seq(-6, 4, by = 0.25))
  lam <- grid$lambda
  ex <- grid$given
  wt <- exp(grid$lp - max(grid$lp))
  expect_lt(max(wt[c(1, length(wt))]), 1e-10) # the grid holds the posterior
  wt <- wt / sum(wt)
  e_lam <- sum(wt * lam)
  sd_lam <- sqrt(sum(wt * lam^2) - e_lam^2)
  e_wh <- colSums(wt * t(vapply(ex, function(e) e$WH, numeric(2))))
  e_tau <- sum(wt * vapply(ex, function(e) e$tau, 0))

  set.seed(43)
  fit <- bnmf(matrix(x, 1, 2), rank = 1, method = "gibbs", prior = ard(a0, b0),
              noise = gamma_prior(alpha, beta), iter = 30000, burnin = 1000)
  kt <- bnmf:::kept_trace(fit)
  lam_draws <- kt[["lambda[1]"]]
  se <- batch_se(lam_draws)
  expect_lt(abs(mean(lam_draws) - e_lam), 4 * se)
  expect_equal(unname(fit$lambda), mean(lam_draws))
  expect_equal(unname(fit$lambda_sd), sd(lam_draws), tolerance = 1e-10)
  expect_equal(sd(lam_draws), sd_lam, tolerance = 0.05)
  expect_lt(abs(fit$tau - e_tau), 4 * batch_se(kt$tau))
  # E[WH] from the running moments; its Monte Carlo error from tau-free
  # batches of the draws is not kept, so compare at 2 percent (the chain's
  # relative standard error of E[WH] is below 0.5 percent here).
  expect_equal(as.vector(fitted(fit)), e_wh, tolerance = 0.02)
})

test_that("ARD keeps about the true number of factors and predicts like the true rank", {
  skip_on_cran()
  set.seed(44)
  I <- 100; J <- 80; K <- 5
  S <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J)
  X <- S + matrix(rnorm(I * J), I, J)
  test <- sample(length(X), 0.2 * length(X))
  Xtr <- X
  Xtr[test] <- NA
  held_out <- function(f) mean((predict(f)[test] - X[test])^2)
  for (m in c("gibbs", "vb", "icm")) {
    set.seed(45)
    true_rank <- bnmf(Xtr, rank = 5, method = m)
    set.seed(45)
    big <- bnmf(Xtr, rank = 15, method = m)
    set.seed(45)
    big_ard <- bnmf(Xtr, rank = 15, method = m, prior = ard())
    act <- summary(big_ard)$factors$active
    expect_equal(sum(act), 5)
    expect_lt(held_out(big_ard), 1.02 * held_out(true_rank))
    # without ARD the 15-factor fit predicts worse: it overfits
    expect_gt(held_out(big), held_out(big_ard))
  }
  pdf(NULL)
  expect_silent(plot(big_ard, type = "ard"))
  dev.off()
  expect_output(print(summary(big_ard)), "5 of 15 factors active")
})
