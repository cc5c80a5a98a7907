# The Gibbs sampler against exact posterior moments (quadrature, helper-exact.R)
# on a problem small enough to integrate: I = 1, J = 2, K = 1.

gibbs_vs_exact <- function(x, lambda, alpha, beta, iter, seed, masked = FALSE) {
  set.seed(seed)
  X <- matrix(x, 1, 2)
  fit <- bnmf(X, rank = 1, method = "gibbs", prior = exponential(lambda),
              noise = gamma_prior(alpha, beta), iter = iter, burnin = 1000,
              keep = "draws", progress = FALSE)
  ex <- exact_tiny_nmf(x, lambda_w = lambda, lambda_h = lambda, alpha = alpha, beta = beta)
  d <- fit$draws[[1]]
  w <- d$W[1, ]
  h1 <- d$H[1, ]
  h2 <- d$H[2, ]
  tau <- kept_trace(fit)$tau
  draws <- list(W = w, H1 = h1, H2 = h2, WH1 = w * h1, WH2 = w * h2, tau = tau,
                W2 = w^2, tau2 = tau^2)
  exact <- c(W = ex$W, H1 = ex$H[1], H2 = ex$H[2], WH1 = ex$WH[1], WH2 = ex$WH[2],
             tau = ex$tau, W2 = ex$W_sd^2 + ex$W^2, tau2 = ex$tau_sd^2 + ex$tau^2)
  est <- vapply(draws, mean, numeric(1))
  se <- vapply(draws, batch_se, numeric(1))
  list(fit = fit, est = est, se = se, exact = exact[names(est)])
}

kept_trace <- function(fit) bnmf:::kept_trace(fit)

test_that("Gibbs posterior moments match exact quadrature (complete data)", {
  skip_on_cran()
  r <- gibbs_vs_exact(c(1.2, 2.5), lambda = 1, alpha = 2, beta = 1, iter = 61000, seed = 11)
  z <- (r$est - r$exact) / r$se
  # 8 quantities, each within 4.5 Monte Carlo standard errors (batch means):
  # a wrong conditional shifts these moments by many standard errors.
  expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
  # The running moments kept by the fit agree with the draws.
  expect_equal(unname(r$fit$W[1, 1]), unname(r$est[["W"]]), tolerance = 1e-10)
  expect_equal(unname(fitted(r$fit)[1, ]), unname(r$est[c("WH1", "WH2")]), tolerance = 1e-10)
  expect_equal(r$fit$tau, unname(r$est[["tau"]]), tolerance = 1e-10)
})

test_that("Gibbs posterior moments match quadrature with small data and a strong prior", {
  skip_on_cran()
  r <- gibbs_vs_exact(c(0.3, 0.1), lambda = 2, alpha = 1, beta = 1, iter = 61000, seed = 12)
  z <- (r$est - r$exact) / r$se
  expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
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
