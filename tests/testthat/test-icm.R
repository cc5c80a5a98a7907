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

test_that("icm_control(): \"auto\" by default, resolved on the data, kept by update(), checked", {
  dat <- make_nmf_data(I = 20, J = 10, K = 2, sd = 0.3, seed = 3)
  Y <- dat$X
  set.seed(4)
  Y[sample(length(Y), 40)] <- NA
  expect_identical(icm_control()$missing, "auto")
  # this Y: a row misses more than a third of its 10 entries
  expect_gt(max(rowMeans(is.na(Y))), 1 / 3)
  f1 <- bnmf(Y, rank = 2, method = "icm", progress = FALSE)
  expect_identical(f1$settings$missing, "mask")
  f2 <- bnmf(Y, rank = 2, method = "icm", progress = FALSE,
             control = icm_control("impute"))
  expect_identical(f2$settings$missing, "impute")
  expect_identical(suppressWarnings(update(f2, iter = 5))$settings$missing, "impute")
  expect_error(icm_control("none"), "missing", class = "bnmf_error_input")
  expect_error(icm_control(1), class = "bnmf_error_input")
  expect_error(bnmf(Y, rank = 2, method = "icm", control = hmc_control()),
               "icm_control", class = "bnmf_error_input")
  expect_error(bnmf(Y, rank = 2, method = "vb", control = icm_control()),
               "control", class = "bnmf_error_input")
})

test_that("icm_control(\"auto\") imputes when no row or column misses more than a third", {
  tm <- third_missing()
  X <- tm$X
  Xa <- tm$Xa
  expect_equal(max(rowMeans(tm$miss)), 1 / 3)
  expect_equal(max(colMeans(tm$miss)), 1 / 3)
  fa <- expect_auto_setting(Xa, "icm", "impute", 50)
  # a fit asked to mask keeps masking when update() continues it, though
  # "auto" would impute on these data
  expect_update_continues(Xa, "icm", "mask", 50)
  # rows: three of them miss a third (3 of 9), every column one entry (1 of
  # 12), so "impute"; a fourth entry in the first row: "mask" on the row alone
  Xr <- X
  Xr[cbind(rep(1:3, each = 3), 1:9)] <- NA
  expect_identical(missing_fit(Xr, "icm", 50)$settings$missing, "impute")
  Xr[1, 4] <- NA
  expect_gt(max(rowMeans(is.na(Xr))), 1 / 3)
  expect_lt(max(colMeans(is.na(Xr))), 1 / 3)
  expect_identical(missing_fit(Xr, "icm", 50)$settings$missing, "mask")
  # columns: three of them miss a third (4 of 12), every row one entry (1 of
  # 9), so "impute"; a fifth entry in the first column: "mask" on the column
  # alone (no row misses more than 2 of 9)
  Xc <- X
  Xc[cbind(1:12, rep(1:3, each = 4))] <- NA
  expect_identical(missing_fit(Xc, "icm", 50)$settings$missing, "impute")
  Xc[5, 1] <- NA
  expect_lt(max(rowMeans(is.na(Xc))), 1 / 3)
  expect_gt(max(colMeans(is.na(Xc))), 1 / 3)
  fc <- expect_auto_setting(Xc, "icm", "mask", 50)
  # print() says which ran, when entries are missing
  expect_output(print(fa), "missing entries: filled with W H", fixed = TRUE)
  expect_output(print(fc), "missing entries: left out", fixed = TRUE)
  # complete data: one sweep for both, recorded as "mask", not printed
  fx <- missing_fit(X, "icm", 50)
  expect_identical(fx$settings$missing, "mask")
  expect_false(any(grepl("missing entries:", capture.output(print(fx)), fixed = TRUE)))
  # a sparse X: the shares count every entry, stored or not
  skip_if_not_installed("Matrix")
  Xs <- Matrix::Matrix(Xa, sparse = TRUE)
  expect_identical(missing_fit(Xs, "icm", 50)$settings$missing, "impute")
})

test_that("ICM stops at a KKT point when masked rows skip their own Gram matrix (K >= 16)", {
  # From K = 16 on, rows and columns with at most half their entries missing
  # are updated without forming their own Gram matrix (bnmf_cond_row_sub);
  # row 1 and column 2, mostly missing, still form theirs.
  dat <- make_nmf_data(I = 40, J = 34, K = 3, sd = 0.3, seed = 12)
  X <- dat$X
  set.seed(13)
  X[sample(length(X), 200)] <- NA
  X[1, 1:30] <- NA
  X[3:30, 2] <- NA
  set.seed(14)
  fit <- bnmf(X, rank = 16, method = "icm", prior = exponential(3), tol = 1e-13,
              iter = 20000, progress = FALSE)
  expect_true(fit$converged)
  v <- kkt_violation(fit, X)
  expect_lt(v[["neg_grad"]], 1e-7)
  expect_lt(v[["slack"]], 1e-7)
  expect_equal(fit$tau, tau_mode(fit, X), tolerance = 1e-8)
  lp <- fit$trace$logpost
  expect_true(all(diff(lp) >= -1e-10 * abs(lp[-1])))
  obs <- !is.na(X)
  mu <- fit$W %*% fit$H
  ref <- sum(dnorm(X[obs], mu[obs], 1 / sqrt(fit$tau), log = TRUE)) +
    sum(dexp(fit$W, 3, log = TRUE)) + sum(dexp(fit$H, 3, log = TRUE)) +
    dgamma(fit$tau, fit$noise$shape, rate = fit$noise$rate, log = TRUE)
  expect_equal(fit$logpost, ref, tolerance = 1e-10)
})

test_that("the ICM log posterior is the model's log posterior", {
  dat <- make_nmf_data(I = 10, J = 8, K = 2, seed = 9)
  X <- dat$X
  X[3, 4] <- NA
  set.seed(1)
  fit <- bnmf(X, rank = 2, method = "icm", prior = exponential(0.7),
              noise = gamma_prior(2, 3), progress = FALSE)
  obs <- !is.na(X)
  mu <- fit$W %*% fit$H
  ref <- sum(dnorm(X[obs], mu[obs], 1 / sqrt(fit$tau), log = TRUE)) +
    sum(dexp(fit$W, 0.7, log = TRUE)) + sum(dexp(fit$H, 0.7, log = TRUE)) +
    dgamma(fit$tau, 2, rate = 3, log = TRUE)
  expect_equal(fit$logpost, ref, tolerance = 1e-10)
  expect_equal(as.numeric(logLik(fit)), sum(dnorm(X[obs], mu[obs], 1 / sqrt(fit$tau), log = TRUE)),
               tolerance = 1e-10)
})

test_that("ICM reconstructs exactly factorisable data with weak priors", {
  set.seed(3)
  W0 <- matrix(rexp(40 * 3), 40, 3)
  H0 <- matrix(rexp(3 * 30), 3, 30)
  X <- W0 %*% H0
  set.seed(4)
  fit <- bnmf(X, rank = 3, method = "icm", prior = exponential(1e-6),
              noise = gamma_prior(1, 1e-6), tol = 1e-14, iter = 20000, progress = FALSE)
  rel <- sqrt(sum((fitted(fit) - X)^2) / sum(X^2))
  expect_lt(rel, 1e-6)
})

test_that("ICM with a flat prior is allowed and fits as well as least squares can", {
  dat <- make_nmf_data(I = 30, J = 20, K = 2, sd = 0.05, seed = 8)
  set.seed(1)
  fit <- suppressWarnings(bnmf(dat$X, rank = 2, method = "icm", prior = exponential(0),
                               tol = 1e-10, iter = 5000, progress = FALSE),
                          classes = "bnmf_warning_convergence")
  # Residual RMSE near the noise level (unconstrained rank-2 SVD is a lower bound).
  s <- svd(dat$X)
  svd_rmse <- sqrt(mean((dat$X - s$u[, 1:2] %*% diag(s$d[1:2]) %*% t(s$v[, 1:2]))^2))
  rmse <- sqrt(mean(residuals(fit)^2))
  expect_gte(rmse, svd_rmse - 1e-12)
  expect_lt(rmse, 1.05 * svd_rmse)
})

test_that("rows updated as a block get exactly their row-by-row ICM and VB updates", {
  # ICM and VB sweeps update up to four rows that share their Gram matrix
  # together (bnmf_cond_rows, which interleaves their coordinate passes).
  # Each row must come out bit for bit as the row-by-row kernel leaves it,
  # whatever its number of ICM passes, and ICM must be the coordinate ascent
  # written out below; VB one pass of the truncated-normal moments.
  cond <- function(G, B, Z, L, tau, rule, block) {
    .Call(bnmf:::C_cond_rows, G, B, Z, L, c(tau, rule, block))
  }
  icm_ref <- function(G, b, z, lam, tau) {
    pass <- function(z) {
      ch <- 0
      for (k in seq_along(z)) {
        s <- b[k] - sum(G[k, -k] * z[-k])
        zn <- if (G[k, k] > 0) max((s - lam[k] / tau) / G[k, k], 0) else 0
        ch <- ch + abs(zn - z[k])
        z[k] <- zn
      }
      list(z = z, ch = ch)
    }
    p <- pass(z)
    for (i in 2:3) {
      if (p$ch <= 1e-8 * sum(p$z)) break
      p <- pass(p$z)
    }
    p$z
  }
  vb_ref <- function(G, b, z, lam, tau) {
    v <- e <- as <- numeric(length(z))
    for (k in seq_along(z)) {
      s <- b[k] - sum(G[k, -k] * z[-k])
      mu <- (s - lam[k] / tau) / G[k, k]
      sd <- 1 / sqrt(tau * G[k, k])
      a <- as[k] <- -mu / sd
      lQ <- pnorm(a, lower.tail = FALSE, log.p = TRUE) # exact in the tail
      l <- exp(dnorm(a, log = TRUE) - lQ)
      z[k] <- if (a <= 8) mu + sd * l else {
        # in the tail mu + sd l cancels: E[X] = sd E[U], U the overshoot
        # of a standard normal past a, by quadrature
        f <- function(u, p) u^p * exp(-a * u - u^2 / 2)
        sd * integrate(f, 0, 60 / a, p = 1, rel.tol = 1e-13)$value /
          integrate(f, 0, 60 / a, p = 0, rel.tol = 1e-13)$value
      }
      v[k] <- sd^2 * (1 + a * l - l^2)
      e[k] <- log(sqrt(2 * pi * exp(1)) * sd) + lQ + a * l / 2
    }
    list(z = z, v = v, ent = e, a = as)
  }
  set.seed(17)
  n_far <- 0 # VB coordinates in the untruncated branch (a < -38.5)
  for (K in c(1L, 2L, 5L, 20L)) {
    A <- matrix(rexp(K * 40L), K)
    G <- tcrossprod(A) / 40
    for (nr in 1:4) {
      Z <- matrix(rexp(K * nr), K, nr)
      B <- G %*% matrix(rexp(K * nr), K, nr) + matrix(rnorm(K * nr, sd = 0.3), K, nr)
      L <- matrix(rexp(K * nr, 4), K, nr)
      # tau = 1e6: VB's coordinates far from the bound (the untruncated
      # branch, whose log(sd) the rows of a block share)
      for (tau in c(2, 1e6)) {
      # ICM: the first row starts at its own fixed point (one pass), the
      # others take two or three
      z1 <- Z[, 1]
      for (i in 1:200) z1 <- cond(G, B[, 1, drop = FALSE], matrix(z1), L[, 1, drop = FALSE],
                                  tau, 1, 0)$z[, 1]
      Z[, 1] <- z1
      for (rule in 1:2) {
        blk <- cond(G, B, Z, L, tau, rule, 1)
        one <- cond(G, B, Z, L, tau, rule, 0)
        expect_identical(blk, one, label = sprintf("block of %d rows, K = %d, rule %d",
                                                   nr, K, rule))
        for (c in seq_len(nr)) {
          if (rule == 1) {
            ref <- icm_ref(G, B[, c], Z[, c], L[, c], tau)
            expect_lt(max(abs(blk$z[, c] - ref)), 1e-12 * max(1, abs(ref)))
          } else {
            # (these formulas cancel in the truncated tail: the variance
            # loses about a^4 ulps; a > 8 is checked against quadrature in
            # test-rtnorm.R)
            ref <- vb_ref(G, B[, c], Z[, c], L[, c], tau)
            ok <- ref$a < 8
            for (f in c("z", "v", "ent"))
              expect_lt(max(abs(blk[[f]][ok, c] - ref[[f]][ok]), 0),
                        1e-10 * max(1, abs(ref[[f]][ok])))
            n_far <- n_far + sum(ref$a < -38.5)
          }
        }
      }
      }
    }
  }
  expect_gt(n_far, 20)
  expect_error(cond(diag(2), matrix(1, 2, 5), matrix(1, 2, 5), matrix(1, 2, 5), 1, 1, 1),
               "1 to 4 rows")
})

test_that("a masked row updated without its own Gram matrix gets its exact update", {
  # A row (of W, or column of H) with at most half its entries missing is
  # updated by bnmf_cond_row_sub: the full Gram matrix G and, kept current
  # coordinate by coordinate, the products r = O' z with the missing
  # entries' vectors O. Reference: the row kernel on G - O O' (VB: less the
  # variances of O on the diagonal) formed here in R. Odd and even numbers
  # of vectors (the kernel pads them to pairs), one vector, none, and 13
  # (the gather takes eight, then four, then one at a time); K odd and
  # even, below and above the 32 coordinates the variance sums take a pass
  # and the K mod 4 they take last.
  cond <- function(G, b, z, lam, tau, rule) {
    .Call(bnmf:::C_cond_rows, G, matrix(b), matrix(z), matrix(lam), c(tau, rule, 0))
  }
  sub <- function(G, O, V, b, z, lam, tau, rule) {
    .Call(bnmf:::C_cond_row_sub, G, O, V, b, z, lam, c(tau, rule))
  }
  set.seed(23)
  for (K in c(1L, 2L, 3L, 6L, 20L, 33L, 41L)) {
    n <- 400L
    A <- matrix(rexp(K * n), K)
    Va <- matrix(rexp(K * n, 50), K)
    for (nm in c(0L, 1L, 2L, 7L, 13L, 200L)) {
      miss <- sort(sample(n, nm))
      O <- A[, miss, drop = FALSE]
      Vm <- Va[, miss, drop = FALSE]
      for (rule in 1:2) {
        vb <- rule == 2
        # the full (expected) Gram matrix and the row's own
        G <- tcrossprod(A) + if (vb) diag(rowSums(Va), K) else 0
        Gi <- G - tcrossprod(O) - if (vb) diag(rowSums(Vm), K) else 0
        b <- as.vector(Gi %*% rexp(K)) + rnorm(K, sd = 0.3)
        z <- rexp(K)
        lam <- rexp(K, 4)
        for (tau in c(0.5, 20)) {
          ref <- cond(Gi, b, z, lam, tau, rule)
          got <- sub(G, O, if (vb) Vm else numeric(), b, z, lam, tau, rule)
          lab <- sprintf("K = %d, %d missing, rule %d, tau = %g", K, nm, rule, tau)
          expect_lt(max(abs(got$gkk - diag(Gi))), 1e-12 * max(diag(G)), label = lab)
          fields <- if (vb) c("z", "v", "ent") else "z"
          for (f in fields) {
            expect_lt(max(abs(got[[f]] - ref[[f]][, 1])), 1e-10 * max(1, abs(ref[[f]])),
                      label = paste(lab, f))
          }
          expect_equal(got$r, as.vector(crossprod(O, got$z)), tolerance = 1e-12,
                       label = paste(lab, "r"))
          # the update moved the row: not a vacuous comparison
          expect_gt(max(abs(got$z - z)), 1e-3, label = lab)
        }
      }
    }
  }
})
