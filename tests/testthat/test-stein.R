# The Stein kernel matrix against a plain-R implementation written for the
# test (per pair, from the mixed Hessian of the IMQ kernel), its derivative
# terms against finite differences, and the kernel Stein discrepancy of
# draws from a known target.

# stein_pair_plain() and stein_matrix_plain(): helper-stein.R.

test_that("the Stein kernel matrix matches a plain-R implementation", {
  withr::local_seed(11)
  M <- 7
  theta <- list(matrix(runif(6 * M), 6, M), matrix(rexp(4 * M, 0.1), 4, M))
  score <- list(matrix(rnorm(6 * M), 6, M), matrix(rnorm(4 * M, sd = 3), 4, M))
  par <- list(c(0.3, -0.5, 2), c(5, -0.3, 0.7))
  K <- bnmf:::stein_kernel(theta, score, par)
  K0 <- stein_matrix_plain(theta, score, par)
  expect_lt(max(abs(K - K0)) / max(abs(K0)), 1e-10)
  expect_identical(K, t(K))
  expect_gt(min(eigen(K, symmetric = TRUE, only.values = TRUE)$values), -1e-10 * max(abs(K)))
})

test_that("the Stein kernel of NMF particles (equation 7 scaling) matches plain R and is PSD", {
  withr::local_seed(12)
  I <- 5; J <- 4; R <- 2; M <- 6
  parts <- lapply(1:M, function(m) bnmf:::to_simplex(matrix(rexp(I * R), I, R),
                                                      matrix(rexp(R * J), R, J)))
  scores <- lapply(1:M, function(m) list(W = matrix(rnorm(I * R), I, R),
                                         H = matrix(rnorm(R * J), R, J)))
  kp <- bnmf:::stein_kernel_par()
  K <- bnmf:::particle_kernel_matrix(parts, scores, kp)
  theta <- list(sapply(parts, function(p) as.vector(p$W)), sapply(parts, function(p) as.vector(p$H)))
  score <- list(sapply(scores, function(s) as.vector(s$W)), sapply(scores, function(s) as.vector(s$H)))
  # 1 / (2 gamma) with gamma = (c^2)^b: each term in (0, 1/2], the sum in (0, 1]
  par <- list(c(1e-2, -0.5, 1 / (2 * (1e-4)^-0.5)), c(1e3, -0.5, 1 / (2 * (1e6)^-0.5)))
  K0 <- stein_matrix_plain(theta, score, par)
  expect_lt(max(abs(K - K0)) / max(abs(K0)), 1e-10)
  expect_gt(min(eigen(K, symmetric = TRUE, only.values = TRUE)$values), -1e-10 * max(abs(K)))
})

test_that("the closed-form derivative terms agree with finite differences", {
  withr::local_seed(13)
  d <- 3; cc <- 0.7; bb <- -0.5; aa <- 1.3
  k <- function(x, y) aa * (cc^2 + sum((x - y)^2))^bb
  x <- rnorm(d); y <- rnorm(d)
  sx <- rnorm(d); sy <- rnorm(d)
  h <- 1e-4
  e <- diag(d)
  gx <- sapply(1:d, function(i) (k(x + h * e[, i], y) - k(x - h * e[, i], y)) / (2 * h))
  gy <- sapply(1:d, function(i) (k(x, y + h * e[, i]) - k(x, y - h * e[, i])) / (2 * h))
  tr <- sum(sapply(1:d, function(i) {
    (k(x + h * e[, i], y + h * e[, i]) - k(x + h * e[, i], y - h * e[, i]) -
       k(x - h * e[, i], y + h * e[, i]) + k(x - h * e[, i], y - h * e[, i])) / (4 * h^2)
  }))
  fd <- sum(sx * sy) * k(x, y) + sum(sy * gx) + sum(sx * gy) + tr
  K <- bnmf:::stein_kernel(list(cbind(x, y)), list(cbind(sx, sy)), list(c(cc, bb, aa)))
  expect_equal(K[1, 2], fd, tolerance = 1e-6)
})

test_that("ksd of a single point is its closed-form Stein kernel value", {
  x <- c(0.3, -1, 2); s <- -x
  cc <- 1; bb <- -0.5
  # k(x, x) = 1 (unit scale), gradient terms vanish, trace = -2 b d c^(2(b-1))
  expect_equal(as.numeric(ksd(rbind(x), rbind(s))), sum(s^2) - 2 * bb * 3 * cc^(2 * (bb - 1)),
               tolerance = 1e-14)
})

test_that("ksd of draws from a Gaussian with its exact score decreases toward 0", {
  skip_on_cran()
  withr::local_seed(14)
  d <- 2
  ns <- c(25, 100, 400, 1600)
  reps <- 5
  # The V-statistic of an exact sample has expectation E[K_p(x, x)] / n.
  mean_ksd <- sapply(ns, function(n) {
    mean(replicate(reps, {
      th <- matrix(rnorm(n * d), n, d)
      as.numeric(ksd(th, -th))
    }))
  })
  expect_true(all(diff(mean_ksd) < 0))
  expect_lt(mean_ksd[4], mean_ksd[1] / 20)
  # E[K_p(x, x)] = E|x|^2 + 2 b d (b - 1 < 0 terms) for c = 1: here d + d = 4
  # (|s|^2 = |x|^2 has mean d; the trace term at r = 0 is -2 b d = d).
  expect_equal(mean_ksd[4] * ns[4], 2 * d, tolerance = 0.25)
  # Draws from a shifted Gaussian do not approach 0 under the N(0, I) score.
  th <- matrix(rnorm(1600 * d, mean = 1), 1600, d)
  expect_gt(as.numeric(ksd(th, -th)), 20 * mean_ksd[4])
})

test_that("ksd checks its input", {
  th <- matrix(rnorm(6), 3, 2)
  expect_error(ksd(th, th[, 1, drop = FALSE]), class = "bnmf_error_input")
  expect_error(ksd(th, th, b = -1), class = "bnmf_error_input")
  expect_error(ksd(th, th, weights = c(1, 2)), class = "bnmf_error_input")
  expect_error(ksd(th, th, weights = "best"), class = "bnmf_error_input")
  w <- c(0.2, 0.3, 0.5)
  v <- ksd(th, -th, weights = w, kernel = TRUE)
  expect_equal(as.numeric(v), drop(w %*% attr(v, "K") %*% w))
})
