# The Gibbs sampler. Its posterior summaries on the tiny problem against the
# exact quadrature are in test-exact.R (the same reference for every method).

test_that("the running moments kept by a fit agree with its kept draws", {
  set.seed(11)
  fit <- bnmf(matrix(c(1.2, 2.5), 1, 2), rank = 1, method = "gibbs", iter = 3000,
              burnin = 1000, keep = "draws", progress = FALSE, wh_thin = 1)
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

test_that("rows drawn as a block get each coordinate from its full conditional", {
  # Gibbs sweeps draw up to four rows that share their Gram matrix together
  # (bnmf_cond_rows): coordinate k of each row in turn, then coordinate
  # k + 1. Reference: the same draws written out in R, from each row's
  # conditional N(mu, sd^2) on [0, Inf) given the values drawn before it,
  # with the package's rtnorm() taking R's uniforms in the same order.
  cond <- function(G, B, Z, L, tau, block) {
    .Call(bnmf:::C_cond_rows, G, B, Z, L, c(tau, 0, block))
  }
  gibbs_ref <- function(G, B, Z, L, tau) {
    a <- numeric()
    for (k in seq_len(nrow(Z))) for (c in seq_len(ncol(Z))) {
      s <- B[k, c] - sum(G[k, -k] * Z[-k, c])
      mu <- (s - L[k, c] / tau) / G[k, k]
      sd <- 1 / sqrt(tau * G[k, k])
      a <- c(a, -mu / sd)
      Z[k, c] <- rtnorm(1, mu, sd)
    }
    list(z = Z, a = a)
  }
  set.seed(41)
  a_all <- numeric()
  for (K in c(1L, 2L, 5L, 20L)) {
    A <- matrix(rexp(K * 40L), K)
    G <- tcrossprod(A) / 40
    for (nr in 1:4) {
      Z <- matrix(rexp(K * nr), K, nr)
      # right-hand sides of both signs: conditionals in the body and in the
      # tail beyond the bound
      B <- G %*% matrix(rnorm(K * nr), K, nr)
      L <- matrix(rexp(K * nr, 4), K, nr)
      for (tau in c(0.5, 50)) {
        lab <- sprintf("block of %d rows, K = %d, tau = %g", nr, K, tau)
        seed <- sample.int(1e6, 1)
        set.seed(seed)
        blk <- cond(G, B, Z, L, tau, 1)
        after_blk <- runif(1)
        set.seed(seed)
        ref <- gibbs_ref(G, B, Z, L, tau)
        after_ref <- runif(1)
        expect_lt(max(abs(blk$z - ref$z)), 1e-10 * max(1, abs(ref$z)), label = lab)
        # the same number of uniforms taken
        expect_identical(after_blk, after_ref, label = lab)
        a_all <- c(a_all, ref$a)
        if (nr > 1 && K > 1) {
          # row by row takes the uniforms in another order
          set.seed(seed)
          one <- cond(G, B, Z, L, tau, 0)
          expect_gt(max(abs(one$z - blk$z)), 1e-3, label = lab)
        }
      }
    }
  }
  # both samplers of the truncated normal were used: the body (a <= 0.66)
  # and the tail (a > 0.66)
  expect_gt(sum(a_all > 0.66), 20)
  expect_gt(sum(a_all <= 0.66), 20)
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

# The mean of W_s H_s over the kept draws `idx` of a chain's draws `d`, and
# their sum of squared deviations, entry by entry (I x J vectors).
draws_wh_moments <- function(d, I, J, K, idx = seq_len(ncol(d$W))) {
  whs <- vapply(idx, function(s) {
    as.vector(matrix(d$W[, s], I, K) %*% matrix(d$H[, s], K, J))
  }, numeric(I * J))
  whs <- matrix(whs, I * J)
  m <- rowMeans(whs)
  list(mean = m, m2 = rowSums((whs - m)^2), n = length(idx))
}

wh_test_data <- function() {
  set.seed(5)
  W0 <- matrix(rexp(12 * 2), 12, 2)
  H0 <- matrix(rexp(2 * 9), 2, 9)
  W0 %*% H0 + matrix(rnorm(12 * 9, sd = 0.3), 12, 9)
}

test_that("wh_thin = 1 keeps the moments of W H on every kept draw", {
  X <- wh_test_data()
  set.seed(3)
  fit <- bnmf(X, rank = 2, iter = 300, burnin = 100, thin = 2, keep = "draws",
              wh_thin = 1, progress = FALSE)
  ref <- draws_wh_moments(fit$draws[[1]], 12, 9, 2)
  expect_identical(fit$moments$WH$n, 100)
  expect_identical(fit$moments$WH$n, fit$moments$W$n)
  expect_equal(fit$moments$WH$mean, ref$mean, tolerance = 1e-12)
  expect_equal(fit$moments$WH$m2, ref$m2, tolerance = 1e-10)
  expect_equal(unname(fitted(fit)), matrix(ref$mean, 12, 9), tolerance = 1e-12)
  # The moments of W and H are those of every kept draw, whatever wh_thin.
  d <- fit$draws[[1]]
  expect_equal(as.vector(fit$W), rowMeans(d$W), tolerance = 1e-12)
  set.seed(3)
  fit4 <- bnmf(X, rank = 2, iter = 300, burnin = 100, thin = 2, keep = "draws",
               wh_thin = 4, progress = FALSE)
  expect_identical(fit4$W, fit$W)
  expect_identical(fit4$H, fit$H)
  expect_identical(fit4$W_sd, fit$W_sd)
  expect_identical(fit4$tau, fit$tau)
  expect_identical(fit4$trace, fit$trace)
  expect_false(isTRUE(all.equal(fit4$moments$WH$mean, fit$moments$WH$mean)))
})

test_that("wh_thin = m takes kept draws 1, 1 + m, 1 + 2m, ... into the moments of W H", {
  X <- wh_test_data()
  for (m in c(3L, 7L)) {
    set.seed(4)
    fit <- bnmf(X, rank = 2, iter = 250, burnin = 50, keep = "draws", wh_thin = m,
                progress = FALSE)
    idx <- seq(1L, 200L, by = m)
    ref <- draws_wh_moments(fit$draws[[1]], 12, 9, 2, idx)
    expect_identical(fit$moments$WH$n, as.double(length(idx)))
    expect_identical(fit$moments$W$n, 200)
    expect_equal(fit$moments$WH$mean, ref$mean, tolerance = 1e-12)
    expect_equal(fit$moments$WH$m2, ref$m2, tolerance = 1e-10)
    expect_equal(unname(predict(fit, se.fit = TRUE)$se.fit),
                 matrix(sqrt(ref$m2 / (length(idx) - 1)), 12, 9), tolerance = 1e-10)
    s <- summary(fit)
    expect_identical(s$wh_moments$n, as.double(length(idx)))
    expect_equal(s$wh_moments$mc_se,
                 median(sqrt(ref$m2 / (length(idx) - 1))) / sqrt(length(idx)))
  }
  # More than the kept draws: the first one only.
  set.seed(4)
  fit <- bnmf(X, rank = 2, iter = 20, burnin = 10, keep = "draws", wh_thin = 50,
              progress = FALSE)
  expect_identical(fit$moments$WH$n, 1)
  ref <- draws_wh_moments(fit$draws[[1]], 12, 9, 2, 1L)
  expect_equal(fit$moments$WH$mean, ref$mean, tolerance = 1e-12)
  expect_true(is.na(summary(fit)$wh_moments$mc_se))
  expect_output(print(summary(fit)), "Mean of W H from 1 of the 10 draws (wh_thin = 50)",
                fixed = TRUE)
})

test_that("the subset estimate of the mean of W H agrees with every draw's within its Monte Carlo error", {
  X <- wh_test_data()
  set.seed(8)
  fit <- bnmf(X, rank = 2, iter = 4000, burnin = 1000, keep = "draws", wh_thin = 1,
              progress = FALSE)
  full <- fit$moments$WH
  sub <- draws_wh_moments(fit$draws[[1]], 12, 9, 2, seq(1L, 3000L, by = 4L))
  set.seed(8)
  fit4 <- bnmf(X, rank = 2, iter = 4000, burnin = 1000, wh_thin = 4, progress = FALSE)
  expect_equal(fit4$moments$WH$mean, sub$mean, tolerance = 1e-12)
  # The subset's draws are among the full set's: the difference of the two
  # means has sd at most that of the subset's mean. Naive i.i.d. errors,
  # inflated by the chain's autocorrelation: 5 of them per entry.
  se <- sqrt(sub$m2 / (sub$n - 1)) / sqrt(sub$n)
  expect_true(all(abs(fit4$moments$WH$mean - full$mean) <= 5 * se))
  expect_lt(median(abs(fit4$moments$WH$mean - full$mean) / se), 2)
})

test_that("update() and chains pool the moments of W H with their own draw counts", {
  X <- wh_test_data()
  set.seed(6)
  fit <- bnmf(X, rank = 2, iter = 60, burnin = 20, keep = "draws", wh_thin = 3,
              chains = 2, progress = FALSE)
  # 40 kept draws per chain: draws 1, 4, ..., 40 (14 per chain).
  expect_identical(fit$moments$WH$n, 28)
  expect_identical(fit$n_draws, 80)
  fit2 <- update(fit, iter = 10)
  # Draws 41 to 50 of each chain: 43, 46, 49 enter.
  expect_identical(fit2$moments$WH$n, 34)
  expect_identical(fit2$n_draws, 100)
  idx <- c(seq(1L, 40L, by = 3L), 43L, 46L, 49L)
  # Each chain's draws in the pooled labelling (permute_run() reorders them).
  refs <- lapply(fit2$draws, function(d) draws_wh_moments(d, 12, 9, 2, idx))
  pooled <- (refs[[1]]$mean + refs[[2]]$mean) / 2
  expect_equal(fit2$moments$WH$mean, pooled, tolerance = 1e-12)
  m2 <- refs[[1]]$m2 + refs[[2]]$m2 +
    17 * (refs[[1]]$mean - pooled)^2 + 17 * (refs[[2]]$mean - pooled)^2
  expect_equal(fit2$moments$WH$m2, m2, tolerance = 1e-10)
  # Splitting the run into update() calls does not change the subset.
  set.seed(6)
  once <- bnmf(X, rank = 2, iter = 70, burnin = 20, keep = "draws", wh_thin = 3,
               chains = 2, progress = FALSE)
  expect_identical(once$moments$WH$n, 34)
  expect_equal(once$draws, fit2$draws)
  expect_equal(once$moments$WH$mean, fit2$moments$WH$mean, tolerance = 1e-12)
})

test_that("the moments of W H by batches of draws and tiles agree with every draw's product", {
  # 300 x 150 with K = 2: the sweeps hold 4 draws at a time and add them by
  # tiles of 256 x 64 entries (2 x 3 tiles here, the last ones partial).
  # 30 kept draws with wh_thin = 3 take 10 draws: two full batches and a
  # partial one at the end of the call; update() adds 7 more (draws 31 to
  # 50 of the chain), so calls end on partial batches too.
  set.seed(11)
  I <- 300L
  J <- 150L
  X <- matrix(rexp(I * 2), I, 2) %*% matrix(rexp(2 * J), 2, J) + matrix(rnorm(I * J, sd = 0.3), I, J)
  X <- pmax(X, 0)
  set.seed(12)
  fit <- bnmf(X, rank = 2, iter = 40, burnin = 10, keep = "draws", wh_thin = 3,
              progress = FALSE)
  idx <- seq(1L, 30L, by = 3L)
  ref <- draws_wh_moments(fit$draws[[1]], I, J, 2, idx)
  expect_identical(fit$moments$WH$n, 10)
  expect_equal(fit$moments$WH$mean, ref$mean, tolerance = 1e-12)
  expect_equal(fit$moments$WH$m2, ref$m2, tolerance = 1e-10)
  fit2 <- update(fit, iter = 20)
  idx2 <- seq(1L, 50L, by = 3L)
  ref2 <- draws_wh_moments(fit2$draws[[1]], I, J, 2, idx2)
  expect_identical(fit2$moments$WH$n, as.double(length(idx2)))
  expect_equal(fit2$moments$WH$mean, ref2$mean, tolerance = 1e-12)
  expect_equal(fit2$moments$WH$m2, ref2$m2, tolerance = 1e-10)
  # Every kept draw (wh_thin = 1), on a matrix of at most one tile's rows.
  set.seed(13)
  fit1 <- bnmf(X[1:100, ], rank = 2, iter = 23, burnin = 10, keep = "draws", wh_thin = 1,
               progress = FALSE)
  ref1 <- draws_wh_moments(fit1$draws[[1]], 100L, J, 2)
  expect_identical(fit1$moments$WH$n, 13)
  expect_equal(fit1$moments$WH$mean, ref1$mean, tolerance = 1e-12)
  expect_equal(fit1$moments$WH$m2, ref1$m2, tolerance = 1e-10)
})

test_that("the moments of W H on the stored entries of a sparse X use the subset", {
  X <- wh_test_data()
  X[X < 1] <- 0
  Xs <- Matrix::Matrix(pmax(X, 0), sparse = TRUE)
  set.seed(9)
  fit <- bnmf(Xs, rank = 2, iter = 120, burnin = 20, keep = "draws", wh_thin = 5,
              progress = FALSE)
  idx <- seq(1L, 100L, by = 5L)
  ref <- draws_wh_moments(fit$draws[[1]], 12, 9, 2, idx)
  stored <- rep(seq_len(9) - 1L, diff(Xs@p)) * 12L + Xs@i + 1L # linear index
  expect_identical(fit$moments$WH$n, 20)
  expect_equal(fit$moments$WH$mean, ref$mean[stored], tolerance = 1e-12)
})

test_that("bad values of wh_thin are refused, naming the argument", {
  X <- wh_test_data()
  for (bad in list(0, -1, 2.5, NA, "4", c(2, 3), Inf)) {
    expect_error(bnmf(X, rank = 2, iter = 20, wh_thin = bad, progress = FALSE),
                 "`wh_thin`", class = "bnmf_error_input")
  }
  expect_error(bnmf(X, rank = 2, method = "vb", wh_thin = 2), "`wh_thin`",
               class = "bnmf_error_input")
  expect_error(bnmf(round(abs(X) * 3), rank = 2, likelihood = "poisson", method = "gibbs",
                    iter = 20, wh_thin = 2), "`wh_thin`", class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(2, 2), iter = 20, wh_thin = 2), "`wh_thin`",
               class = "bnmf_error_input")
})
