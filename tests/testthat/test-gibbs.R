# The Gibbs sampler. Its posterior summaries on the tiny problem against the
# exact quadrature are in test-exact.R (the same reference for every method).

test_that("the running moments kept by a fit agree with its kept draws", {
  set.seed(11)
  fit <- bnmf(matrix(c(1.2, 2.5), 1, 2), rank = 1, method = "gibbs", iter = 3000,
              burnin = 1000, keep = "draws", progress = FALSE)
  d <- fit$draws[[1]]
  expect_equal(unname(fit$W[1, 1]), mean(d$W[1, ]), tolerance = 1e-10)
  expect_equal(unname(fitted(fit)[1, ]), c(mean(d$W[1, ] * d$H[1, ]), mean(d$W[1, ] * d$H[2, ])),
               tolerance = 1e-10)
  expect_equal(fit$tau, mean(bnmf:::kept_trace(fit)$tau), tolerance = 1e-10)
  expect_equal(unname(fit$W_sd[1, 1]), sd(d$W[1, ]), tolerance = 1e-8)
})

test_that("Gibbs with a missing entry matches the exact posterior predictive", {
  skip_on_cran()
  # bnmf() refuses a column with no observed entry, so the tiny problem with
  # x2 missing is run through the engine directly, both ways of treating the
  # missing entry (latent variable, or masked out).
  ex <- exact_tiny_nmf(c(1.2, NA), lambda_w = 1, lambda_h = 1, alpha = 2, beta = 1)
  X <- matrix(c(1.2, NA), 1, 2)
  d <- bnmf:::prepare_data(X, 1)
  pr <- list(lamW = matrix(1, 1, 1), lamH = matrix(1, 1, 2), alpha = 2, beta = 1)
  for (masked in c(FALSE, TRUE)) {
    set.seed(13 + masked)
    res <- bnmf:::run_chain(X, d, pr, "gibbs", iter = 61000, burnin = 1000, thin = 1,
                            keep = "draws", tol = 0,
                            start = list(W = matrix(1), H = matrix(1, 1, 2), tau = 1),
                            progress = FALSE, masked = masked)
    w <- res$W_draws[1, ]
    wh2 <- w * res$H_draws[2, ]
    tau <- res$trace$tau[res$trace$sampling]
    est <- c(mean(w), mean(wh2), mean(tau))
    se <- c(batch_se(w), batch_se(wh2), batch_se(tau))
    z <- (est - c(ex$W, ex$WH[2], ex$tau)) / se
    expect_true(all(abs(z) < 4.5), info = paste(masked, paste(round(z, 2), collapse = " ")))
    # The running posterior mean of WH at the missing entry is the same average.
    expect_equal(res$state$WH_mean[2], mean(wh2), tolerance = 1e-10)
  }
})

test_that("rates of zero are refused by the Gibbs sampler", {
  expect_error(bnmf(matrix(1:4, 2), 1, prior = exponential(0), progress = FALSE),
               class = "bnmf_error_input")
})

test_that("the augmented and the masked treatments of missing data agree", {
  skip_on_cran()
  # Both are exact samplers of the same posterior: compare their posterior
  # means of a missing entry on a small problem, within Monte Carlo error.
  dat <- make_nmf_data(I = 6, J = 5, K = 2, sd = 0.3, seed = 3)
  X <- dat$X
  X[2, 3] <- NA
  X[5, 1] <- NA
  run <- function(masked, seed) {
    set.seed(seed)
    d <- bnmf:::prepare_data(X, 2)
    pr <- list(lamW = matrix(1, 6, 2), lamH = matrix(1, 2, 5), alpha = 1, beta = 1)
    st <- list(W = dat$W[, 1:2] + 0, H = dat$H[1:2, ] + 0, tau = 10)
    res <- bnmf:::run_chain(X, d, pr, "gibbs", iter = 40000, burnin = 2000, thin = 1,
                            keep = "draws", tol = 0, start = st, progress = FALSE,
                            masked = masked)
    W <- res$W_draws
    H <- res$H_draws
    v <- W[2, ] * H[5, ] + W[8, ] * H[6, ]       # (WH)[2, 3]: W[2, k], H[k, 3]
    c(mean = mean(v), se = batch_se(v))
  }
  a <- run(FALSE, 21)
  b <- run(TRUE, 22)
  expect_lt(abs(a[["mean"]] - b[["mean"]]), 4.5 * sqrt(a[["se"]]^2 + b[["se"]]^2))
})
