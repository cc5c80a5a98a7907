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

# Noise around a positive mean, X = mu + N(0, 1), supports one factor: the
# constant mu (bench/ard-noise.R).
ard_noise <- function(mu, seed = 101) {
  set.seed(seed)
  matrix(mu + rnorm(40 * 30), 40, 30)
}
n_active <- function(fit) {
  if (inherits(fit, "bnmf_nmtf")) {
    tab <- bnmf:::nmtf_ard_relevance(fit)
    return(c(F = sum(tab$active[tab$matrix == "F"]), G = sum(tab$active[tab$matrix == "G"])))
  }
  sum(summary(fit)$factors$active)
}

test_that("the gain sees through a constant split over several factors", {
  X <- ard_noise(5)
  # eight equal shares of the constant: each contributes 5 / 8 to every
  # entry, far above a tenth of the noise sd, but only one adds to the fit
  W <- matrix(sqrt(5 / 8), 40, 8)
  H <- matrix(sqrt(5 / 8), 8, 30)
  gain <- bnmf:::ard_gain(X, W, H, sigma = 1)
  cut <- bnmf:::ard_gain_cut(40, 30)
  expect_equal(sum(gain > cut), 1)
  expect_gt(max(gain), 100 * cut)
  # the same shares at other units give the same gains (in noise variances)
  expect_equal(bnmf:::ard_gain(X * 1e-6, W * 1e-3, H * 1e-3, sigma = 1e-6), gain,
               tolerance = 1e-6)
})

test_that("ARD keeps one factor of noise around a mean, for every method", {
  skip_on_cran()
  for (mu in c(5, 50)) {
    X <- ard_noise(mu)
    for (m in c("gibbs", "vb", "icm")) {
      set.seed(1)
      fit <- suppressWarnings(bnmf(X, 8, method = m, prior = ard(), progress = FALSE))
      if (m == "icm" && mu == 50) {
        # ICM stops at a split of the constant over four factors whose shapes
        # differ by the noise's leading singular vectors: at mu = 50 a
        # rank-one term can fit them with either sign, and the MAP fit does,
        # so one share adds about what the largest singular value of the
        # noise takes off (its gain is near the cut), and two count.
        expect_true(n_active(fit) %in% 1:2, info = paste(m, mu))
      } else {
        expect_equal(n_active(fit), 1, info = paste(m, mu))
      }
      # the rule before (mean contribution >= 0.1 noise sd) counted the shares
      # and the factors fitting noise: 8 of 8 for Gibbs
      if (m == "gibbs") expect_gt(sum(summary(fit)$factors$signal >= 0.1), 1)
    }
    for (m in c("vb", "gibbs")) {
      set.seed(1)
      fit <- suppressWarnings(bnmf(X ~ nmtf(6, 6, prior = ard()), method = m, progress = FALSE))
      expect_equal(n_active(fit), c(F = 1, G = 1), info = paste("nmtf", m, mu))
    }
  }
  set.seed(1)
  sel <- suppressWarnings(select_rank(ard_noise(5), ranks = 8, criterion = "ard", method = "vb"))
  expect_equal(sel$best, 1)
})

test_that("ARD keeps the three factors of rank-3 data", {
  skip_on_cran()
  set.seed(201)
  S <- matrix(rexp(40 * 3), 40, 3) %*% matrix(rexp(3 * 30), 3, 30)
  X <- S + matrix(rnorm(40 * 30, sd = 0.1 * sd(S)), 40, 30)
  for (m in c("gibbs", "vb", "icm")) {
    set.seed(1)
    fit <- suppressWarnings(bnmf(X, 8, method = m, prior = ard(), progress = FALSE))
    expect_equal(n_active(fit), 3, info = m)
  }
  for (m in c("vb", "gibbs")) {
    set.seed(1)
    fit <- suppressWarnings(bnmf(X ~ nmtf(6, 6, prior = ard()), method = m, progress = FALSE))
    expect_equal(n_active(fit), c(F = 3, G = 3), info = paste("nmtf", m))
  }
})

test_that("the default ARD prior follows the units of X", {
  skip_on_cran()
  X <- ard_noise(5)
  for (m in c("gibbs", "vb", "icm")) {
    act <- vapply(c(1e-3, 1, 1e3), function(s) {
      set.seed(1)
      fit <- suppressWarnings(bnmf(X * s, 8, method = m, prior = ard(), progress = FALSE))
      expect_equal(fit$prior$ard[2L], sqrt(mean(X * s) / 8), info = m)
      n_active(fit)
    }, numeric(1))
    expect_equal(act, c(1, 1, 1), info = m)
  }
  # VB is deterministic from its start: the fit of s X is that of X with the
  # factors multiplied by sqrt(s) (to 1e-4 here: both runs stop at the
  # iteration limit, short of convergence, and round differently)
  set.seed(1)
  a <- suppressWarnings(bnmf(X, 8, method = "vb", prior = ard()))
  set.seed(1)
  b <- suppressWarnings(bnmf(X * 1e3, 8, method = "vb", prior = ard()))
  expect_equal(fitted(b) / 1e3, fitted(a), tolerance = 1e-4)
  # an explicit beta0 is kept
  set.seed(1)
  f <- suppressWarnings(bnmf(X, 8, method = "icm", prior = ard(2, 3), iter = 10))
  expect_identical(f$prior$ard, c(2, 3))
})
