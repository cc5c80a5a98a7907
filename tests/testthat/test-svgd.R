# SVGD and DSGD: the closed-form gradient of the kernel Stein discrepancy
# against finite differences, SVGD on targets with a known score, and the
# fits of methods "svgd" and "dsgd".

# w'Kw of NMF particles on the particle model, scores recomputed.
ksd_nmf <- function(parts, sd, lik, kernel, w) {
  sc <- bnmf:::svgd_scores(parts, sd, lik, 1)
  K <- bnmf:::particle_kernel_matrix(parts, lapply(sc, `[[`, "score"), kernel)
  drop(crossprod(w, K %*% w))
}

test_that("the closed-form gradient of w'Kw equals finite differences (DSGD)", {
  withr::local_seed(21)
  I <- 4; J <- 3; R <- 2; M <- 3
  X <- matrix(rexp(I * J) + 0.2, I, J)
  kernel <- bnmf:::stein_kernel_par(c_W = 0.7, c_H = 1.5)
  w <- c(0.2, 0.3, 0.5)
  for (miss in c(FALSE, TRUE)) {
    Xd <- X
    if (miss) Xd[c(2, 9)] <- NA
    sd <- bnmf:::silf_data(Xd)
    parts <- lapply(1:M, function(m) bnmf:::to_simplex(matrix(rexp(I * R), I, R),
                                                       matrix(rexp(R * J), R, J)))
    f <- vapply(parts, function(p) objective_plain(Xd, p$W, p$H, "frobenius"), 1)
    # epsilon puts the objectives in the quadratic transition of the SILF
    lik <- silf(epsilon = max(f) / 1.5, beta = 0.9, C = 2)
    expect_true(all(f > 0.1 * max(f) / 1.5 & f < 1.9 * max(f) / 1.5))
    sc <- bnmf:::svgd_scores(parts, sd, lik, 1)
    grad <- bnmf:::dsgd_gradient(parts, sc, sd, lik, kernel, w)
    h <- 1e-5
    for (m in 1:M) for (blk in c("W", "H")) {
      A <- parts[[m]][[blk]]
      num <- A * 0
      for (i in seq_along(A)) {
        pp <- parts; pp[[m]][[blk]][i] <- A[i] + h
        pm <- parts; pm[[m]][[blk]][i] <- A[i] - h
        num[i] <- (ksd_nmf(pp, sd, lik, kernel, w) - ksd_nmf(pm, sd, lik, kernel, w)) / (2 * h)
      }
      expect_equal(grad[[m]][[blk]], num, tolerance = 1e-6)
    }
  }
})

test_that("the SVGD and DSGD terms of a Gaussian target equal plain R", {
  withr::local_seed(22)
  d <- 3; M <- 5
  theta <- matrix(rnorm(d * M), d, M)
  score <- -theta                       # N(0, I): Hessian -I
  par <- c(1.3, -0.5, 0.8)
  w <- rep(1 / M, M)
  out <- .Call(bnmf:::C_stein_directions, list(theta), list(score), par, w, TRUE)
  k <- function(x, y) par[3] * (par[1]^2 + sum((x - y)^2))^par[2]
  gk <- function(x, y) 2 * par[3] * par[2] * (par[1]^2 + sum((x - y)^2))^(par[2] - 1) * (x - y)
  v <- sapply(1:M, function(m) rowSums(sapply(1:M, function(n) {
    w[n] * (k(theta[, n], theta[, m]) * score[, n] + gk(theta[, n], theta[, m]))
  })))
  expect_equal(out[[1]][[1]], v, tolerance = 1e-12)
  # gradient of w'Kw for the Gaussian target, by finite differences
  ksd_gauss <- function(th) {
    drop(crossprod(w, bnmf:::stein_kernel(list(th), list(-th), list(par)) %*% w))
  }
  grad <- sapply(1:M, function(m) 2 * w[m] * (-out[[1]][[1]][, m] + out[[2]][[1]][, m]))
  h <- 1e-5
  num <- theta * 0
  for (i in seq_along(theta)) {
    tp <- theta; tp[i] <- tp[i] + h
    tm <- theta; tm[i] <- tm[i] - h
    num[i] <- (ksd_gauss(tp) - ksd_gauss(tm)) / (2 * h)
  }
  expect_equal(grad, num, tolerance = 1e-6)
})

test_that("SVGD with the exact score of a Gaussian approaches its mean and variance", {
  withr::local_seed(23)
  M <- 40; mu <- 2; s2 <- 0.5
  theta <- matrix(rnorm(M, -3, 0.3), 1, M)
  par <- c(1, -0.5, 1)
  err <- NULL
  for (it in 1:1000) {
    v <- .Call(bnmf:::C_stein_directions, list(theta), list(-(theta - mu) / s2), par,
               rep(1 / M, M), FALSE)[[1]][[1]]
    theta <- theta + 0.05 * v
    if (it %in% c(10, 100, 1000)) {
      err <- rbind(err, c(abs(mean(theta) - mu), abs(mean((theta - mean(theta))^2) - s2)))
    }
  }
  # the errors of the mean and the variance shrink as the steps grow
  expect_true(all(diff(err[, 1]) < 0))
  expect_true(all(diff(err[, 2]) < 0))
  expect_lt(err[3, 1], 0.01)
  expect_lt(err[3, 2] / s2, 0.05)
  # the equal-weight discrepancy of the final particles is small, as for
  # M exact draws (about 1/M for the unit-scaled kernel)
  expect_lt(as.numeric(ksd(t(theta), -(t(theta) - mu) / s2)),
            as.numeric(ksd(matrix(rnorm(M, -3, 0.3)), -(matrix(rnorm(M, -3, 0.3)) - mu) / s2)))
})

test_that("DSGD lowers the Stein discrepancy of NMF particles over its steps", {
  withr::local_seed(24)
  X <- matrix(rexp(20 * 3), 20, 3) %*% matrix(rexp(3 * 10), 3, 10)
  # The slope C applies to the objective of X / s (s the root mean square
  # of X): C = 2 mean(X^2) is the sharp posterior of C = 2 on X itself, on
  # which the step size was chosen (with C = 2 the discrepancy levels off
  # at 15% of its start).
  fit <- bnmf(X, rank = 2, method = "dsgd", iter = 100, control = stein_control(step_size = 0.003),
              likelihood = silf(C = 2 * mean(X^2)))
  s <- fit$trace$stein
  expect_equal(nrow(fit$trace), 11)
  expect_lt(s[11], 0.05 * s[1])
  expect_lt(s[6], s[1])
  # the recorded objective is the mean Frobenius objective of the particles
  expect_equal(fit$trace$objective[11],
               mean(vapply(fit$particles, function(p) objective_plain(X, p$W, p$H, "frobenius"), 1)),
               tolerance = 1e-10)
  # the recorded value is the equal-weight discrepancy of the particles
  w <- rep(1 / 5, 5)
  expect_equal(s[11], as.numeric(stein_discrepancy(fit$particles, X, likelihood = fit$likelihood,
                                                   weights = w)), tolerance = 1e-10)
})

test_that("SVGD and DSGD fits are particle fits with their methods", {
  withr::local_seed(25)
  X <- leukemia[1:40, 1:15]
  X[sample(length(X), 60)] <- NA
  fit <- bnmf(X, rank = 2, method = "svgd", iter = 30)
  expect_s3_class(fit, c("bnmf_svgd", "bnmf_particles", "bnmf"))
  expect_length(weights(fit), 5)
  expect_equal(sum(weights(fit)), 1)
  expect_equal(as.numeric(stein_discrepancy(fit)),
               as.numeric(stein_discrepancy(fit$particles, X, likelihood = fit$likelihood)),
               tolerance = 1e-8)
  for (p in fit$particles) expect_equal(unname(colSums(p$W)), rep(1, 2))
  # the last recorded discrepancy is the equal-weight one of the final
  # particles, their scores over the observed entries only
  expect_equal(fit$trace$stein[nrow(fit$trace)],
               as.numeric(stein_discrepancy(fit$particles, X, likelihood = fit$likelihood,
                                            weights = "equal")),
               tolerance = 1e-10)
  expect_equal(dim(predict(fit)), dim(X))
  expect_output(print(fit), "SVGD")
  fit2 <- bnmf(X, rank = 2, method = "dsgd", iter = 5, particles = 3, init = "nndsvdar")
  expect_s3_class(fit2, "bnmf_dsgd")
  expect_length(weights(fit2), 3)
  expect_error(bnmf(X, rank = 2, method = "dsgd", likelihood = silf(objective = "kl")),
               class = "bnmf_error_input")
  expect_error(bnmf(X, rank = 2, method = "svgd", control = hmc_control()),
               class = "bnmf_error_input")
  expect_error(bnmf(X, rank = 2, method = "svgd", chains = 2), class = "bnmf_error_input")
  expect_error(stein_control(momentum = 1), class = "bnmf_error_input")
})
