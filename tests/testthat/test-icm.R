# ICM: a genuine local maximum of the joint posterior.

kkt_violation <- function(fit, X) {
  lamW <- fit$prior$lamW
  lamH <- fit$prior$lamH
  g <- neg_log_post_grad(X, fit$W, fit$H, fit$tau, lamW, lamH)
  scale <- fit$tau * max(abs(X), na.rm = TRUE)^2 * max(ncol(X), nrow(X))
  # KKT of min f subject to W, H >= 0: gradient >= 0 everywhere, and zero
  # where the variable is positive (complementary slackness).
  c(neg_grad = max(0, -min(g$W, g$H)) / scale,
    slack = max(abs(fit$W * g$W), abs(fit$H * g$H)) / scale)
}

tau_mode <- function(fit, X) {
  sse <- sum((X - fit$W %*% fit$H)^2, na.rm = TRUE)
  (fit$noise$shape + sum(!is.na(X)) / 2 - 1) / (fit$noise$rate + sse / 2)
}

test_that("ICM stops at a KKT point of its MAP problem (complete data)", {
  dat <- make_nmf_data(I = 30, J = 20, K = 3, sd = 0.1, seed = 1)
  set.seed(2)
  fit <- bnmf(dat$X, rank = 3, method = "icm", tol = 1e-13, iter = 20000, progress = FALSE)
  expect_true(fit$converged)
  v <- kkt_violation(fit, dat$X)
  expect_lt(v[["neg_grad"]], 1e-7)
  expect_lt(v[["slack"]], 1e-7)
  expect_equal(fit$tau, tau_mode(fit, dat$X), tolerance = 1e-8)
})

test_that("ICM stops at a KKT point with missing data and a strong prior", {
  dat <- make_nmf_data(I = 25, J = 15, K = 4, sd = 0.3, seed = 4)
  X <- dat$X
  set.seed(5)
  X[sample(length(X), 60)] <- NA
  for (missing in c("impute", "mask")) {
    set.seed(6)
    fit <- bnmf(X, rank = 4, method = "icm", prior = exponential(3), tol = 1e-13,
                iter = 20000, progress = FALSE, control = icm_control(missing))
    expect_identical(fit$settings$missing, missing)
    expect_true(fit$converged)
    v <- kkt_violation(fit, X)
    expect_lt(v[["neg_grad"]], 1e-7)
    expect_lt(v[["slack"]], 1e-7)
    # The strong prior switches some entries off exactly: no floor is applied.
    expect_gt(sum(fit$W == 0) + sum(fit$H == 0), 0)
    expect_equal(fit$tau, tau_mode(fit, X), tolerance = 1e-8)
  }
})

test_that("the ICM log posterior never decreases", {
  for (seed in 1:3) for (missing in c("impute", "mask")) {
    dat <- make_nmf_data(I = 40, J = 25, K = 4, sd = 0.5, seed = seed)
    X <- dat$X
    X[sample(length(X), c(100, 450, 300)[seed])] <- NA
    set.seed(seed)
    fit <- bnmf(X, rank = 5, method = "icm", tol = 0, iter = 300, progress = FALSE,
                prior = if (seed == 3) ard() else exponential(),
                control = icm_control(missing))
    lp <- fit$trace$logpost
    expect_true(all(diff(lp) >= -1e-10 * abs(lp[-1])), info = paste("seed", seed, missing))
  }
})

test_that("an imputing ICM sweep is the complete-data sweep on X filled with W H", {
  # The ECM step of icm_control(missing = "impute"): W and H as one sweep of
  # ICM on complete data whose missing entries hold W0 H0 of the start, tau
  # the exact conditional mode from the observed entries alone.
  dat <- make_nmf_data(I = 30, J = 20, K = 3, sd = 0.3, seed = 7)
  X <- dat$X
  set.seed(8)
  miss <- sample(length(X), 150)
  X[miss] <- NA
  W0 <- matrix(rexp(30 * 3), 30)
  H0 <- matrix(rexp(3 * 20), 3)
  Xf <- X
  Xf[miss] <- (W0 %*% H0)[miss]
  start <- list(W = W0, H = H0, tau = 2)
  for (n in c(1, 3)) {
    fi <- bnmf(X, rank = 3, method = "icm", init = start, iter = n, tol = 0,
               prior = exponential(1), progress = FALSE,
               control = icm_control("impute"))
    if (n == 1) {
      ff <- bnmf(Xf, rank = 3, method = "icm", init = start, iter = 1, tol = 0,
                 prior = exponential(1), progress = FALSE)
      expect_equal(fi$W, ff$W, tolerance = 1e-10)
      expect_equal(fi$H, ff$H, tolerance = 1e-10)
      expect_false(isTRUE(all.equal(fi$tau, ff$tau)))
    }
    expect_equal(fi$tau, tau_mode(fi, X), tolerance = 1e-10)
    # The reported log posterior is the observed-data one.
    R <- X - fi$W %*% fi$H
    lp <- sum(dnorm(R[!is.na(R)], sd = 1 / sqrt(fi$tau), log = TRUE)) +
      sum(dexp(fi$W, 1, log = TRUE)) + sum(dexp(fi$H, 1, log = TRUE)) +
      dgamma(fi$tau, shape = fi$noise$shape, rate = fi$noise$rate, log = TRUE)
    expect_equal(fi$logpost, lp, tolerance = 1e-10)
  }
})

test_that("icm_control(): \"auto\" imputes when f <= min(1/2, 1 - 4/K), and is checked", {
  dat <- make_nmf_data(I = 20, J = 10, K = 2, sd = 0.3, seed = 3)
  X <- dat$X
  set.seed(4)
  o <- sample(length(X))
  data_with <- function(n) {
    Y <- X
    Y[o[seq_len(n)]] <- NA
    bnmf:::prepare_data(Y, 2)
  }
  auto <- function(n, K) bnmf:::icm_missing("auto", data_with(n), K)
  expect_identical(auto(0, 2), "impute")          # complete: the same sweep
  expect_identical(auto(1, 4), "mask")            # 1 - 4/K = 0
  expect_identical(auto(40, 5), "impute")         # f = 0.2 = 1 - 4/5
  expect_identical(auto(41, 5), "mask")
  expect_identical(auto(100, 8), "impute")        # f = 0.5
  expect_identical(auto(101, 8), "mask")
  expect_identical(auto(101, 20), "mask")         # never above 1/2
  expect_identical(bnmf:::icm_missing("impute", data_with(150), 2), "impute")
  Y <- X
  Y[o[1:60]] <- NA
  f1 <- bnmf(Y, rank = 2, method = "icm", progress = FALSE)
  expect_identical(f1$settings$missing, "mask")
  f2 <- bnmf(Y, rank = 2, method = "icm", progress = FALSE,
             control = icm_control("impute"))
  expect_identical(f2$settings$missing, "impute")
  expect_identical(suppressWarnings(update(f2, iter = 5))$settings$missing, "impute")
  expect_error(icm_control("none"), class = "bnmf_error_input")
  expect_error(icm_control(1), class = "bnmf_error_input")
  expect_error(bnmf(Y, rank = 2, method = "icm", control = hmc_control()),
               "icm_control", class = "bnmf_error_input")
  expect_error(bnmf(Y, rank = 2, method = "vb", control = icm_control()),
               "control", class = "bnmf_error_input")
})
