# Particles and HMC with missing entries (NA) and sparse data: the masked
# objective and score against finite differences of the log posterior over
# the observed entries, the Stein kernel of masked scores against plain R,
# and predictions of hidden entries.

fd_grad <- function(fun, A, h = 1e-6) {
  g <- A * 0
  for (i in seq_along(A)) {
    Ap <- A; Ap[i] <- Ap[i] + h
    Am <- A; Am[i] <- Am[i] - h
    g[i] <- (fun(Ap) - fun(Am)) / (2 * h)
  }
  g
}

test_that("with missing entries the score is the gradient of the masked log posterior", {
  withr::local_seed(7)
  I <- 5; J <- 4; R <- 2
  X <- matrix(rexp(I * J) + 0.1, I, J)
  X[c(2, 7, 13, 20)] <- NA
  W <- matrix(rexp(I * R), I, R)
  H <- matrix(rexp(R * J), R, J)
  Xs <- Matrix::Matrix(ifelse(is.na(X), NA, X * (X > 0.6)), sparse = TRUE)
  cases <- list(list(X = X, obj = c("frobenius", "kl", "is")),
                list(X = Xs, obj = "frobenius"))
  for (cs in cases) for (obj in cs$obj) {
    sd <- bnmf:::silf_data(cs$X)
    f0 <- objective_plain(cs$X, W, H, obj)
    g <- bnmf:::objective_grad(sd, W, H, obj)
    expect_equal(g$f, f0, tolerance = 1e-12)
    for (eps in c(f0, f0 / 3)) {
      lik <- silf(epsilon = eps, beta = 0.1, C = 2, objective = obj)
      s <- bnmf:::particle_score(g, lik, rate = 1.5)
      expect_equal(s$W, fd_grad(function(A) log_post_plain(cs$X, A, H, lik, 1.5), W),
                   tolerance = 1e-6)
      expect_equal(s$H, fd_grad(function(A) log_post_plain(cs$X, W, A, lik, 1.5), H),
                   tolerance = 1e-6)
    }
  }
  # A missing entry leaves the objective unchanged whatever W H is there,
  # while an observed one does not.
  f_obs <- function(X) bnmf:::objective_grad(bnmf:::silf_data(X), W, H, "frobenius")$f
  expect_equal(f_obs(X), sum((X - W %*% H)^2, na.rm = TRUE), tolerance = 1e-12)
})

test_that("the Stein kernel matrix with masked scores equals plain R", {
  withr::local_seed(8)
  I <- 6; J <- 5; R <- 2; M <- 4
  X <- matrix(rexp(I * J), I, J)
  X[sample(I * J, 8)] <- NA
  parts <- lapply(1:M, function(m) bnmf:::to_simplex(matrix(rexp(I * R), I, R),
                                                     matrix(rexp(R * J), R, J)))
  lik <- silf(epsilon = 5, beta = 0.1, C = 2)
  st <- bnmf:::particle_stein(X, parts, lik, rate = 1, kernel = list(c_W = 0.5, c_H = 2),
                              weights = "equal")
  # scores from finite differences of the masked log posterior, plain kernel
  scores <- lapply(parts, function(p) {
    list(W = fd_grad(function(A) log_post_plain(X, A, p$H, lik, 1), p$W),
         H = fd_grad(function(A) log_post_plain(X, p$W, A, lik, 1), p$H))
  })
  theta <- list(sapply(parts, function(p) as.vector(p$W)), sapply(parts, function(p) as.vector(p$H)))
  score <- list(sapply(scores, function(s) as.vector(s$W)), sapply(scores, function(s) as.vector(s$H)))
  par <- list(c(0.5, -0.5, 1 / (2 * (0.5^2)^-0.5)), c(2, -0.5, 1 / (2 * (2^2)^-0.5)))
  expect_equal(st$K, stein_matrix_plain(theta, score, par), tolerance = 1e-6)
  expect_equal(st$objective, vapply(parts, function(p) objective_plain(X, p$W, p$H, "frobenius"), 1),
               tolerance = 1e-12)
})

test_that("a particle fit with 20% hidden predicts them better than row means, inside the particles' range", {
  withr::local_seed(9)
  X <- leukemia[1:120, 1:40]
  hid <- sample(length(X), round(0.2 * length(X)))
  Xm <- X
  Xm[hid] <- NA
  fit <- bnmf(Xm, rank = 3, method = "particles", particles = 8)
  expect_equal(fit$n_missing, length(hid))
  p <- predict(fit, se.fit = TRUE)
  rmse <- function(v) sqrt(mean((v - X[hid])^2))
  row_means <- rowMeans(Xm, na.rm = TRUE)[row(X)[hid]]
  expect_lt(rmse(p$fit[hid]), rmse(row_means))
  # the weighted prediction is a convex combination of the particles'
  prods <- sapply(seq_along(fit$particles), function(m) {
    f <- factors(fit, particle = m)
    (f$W %*% f$H)[hid]
  })
  w <- weights(fit)
  use <- w > 0
  expect_true(all(p$fit[hid] >= apply(prods[, use, drop = FALSE], 1, min) - 1e-9))
  expect_true(all(p$fit[hid] <= apply(prods[, use, drop = FALSE], 1, max) + 1e-9))
  expect_equal(p$fit[hid], drop(prods %*% w), tolerance = 1e-12)
  expect_equal(p$se.fit[hid], sqrt(pmax(drop(prods^2 %*% w) - drop(prods %*% w)^2, 0)),
               tolerance = 1e-8)
  # every candidate fits the observed entries (the masked solver), and the
  # discrepancy is that of the particles on the masked model
  expect_equal(fit$candidates$objective,
               vapply(fit$particles, function(q) objective_plain(Xm, q$W, q$H, "frobenius"), 1),
               tolerance = 1e-10)
  expect_equal(as.numeric(stein_discrepancy(fit$particles, Xm, likelihood = fit$likelihood,
                                            weights = w)),
               fit$stein, tolerance = 1e-10)
  expect_s3_class(summary(fit), "summary.bnmf_particles")
  # On data of rank 3 with little noise the hidden entries are recovered.
  X <- matrix(rexp(60 * 3), 60, 3) %*% matrix(rexp(3 * 30), 3, 30)
  X <- abs(X + matrix(rnorm(length(X), sd = 0.01 * mean(X)), nrow(X)))
  hid <- sample(length(X), round(0.2 * length(X)))
  Xm <- X
  Xm[hid] <- NA
  p <- predict(bnmf(Xm, rank = 3, method = "particles", particles = 5))
  expect_lt(rmse(p[hid]), 0.1 * rmse(rowMeans(Xm, na.rm = TRUE)[row(X)[hid]]))
})

test_that("the Q-Transform start of data with missing entries uses the masked completion", {
  withr::local_seed(10)
  X <- leukemia[1:60, 1:20]
  X[sample(length(X), 100)] <- NA
  data <- bnmf:::prepare_data(X, 3)
  Xc <- bnmf:::start_data(X, data, 3, 1e-8, 2000L)
  expect_false(anyNA(Xc))
  expect_identical(Xc[!is.na(X)], X[!is.na(X)])
  # the filled entries are those of a masked multiplicative-update fit:
  # a local minimum of the observed-entry loss, so a gradient step on the
  # filled values alone cannot lower the loss of a rank-3 refit much
  expect_true(all(Xc[is.na(X)] >= 0))
  expect_identical(bnmf:::start_data(leukemia[1:5, 1:4], bnmf:::prepare_data(leukemia[1:5, 1:4], 2),
                                     2, 1e-6, 10L), leukemia[1:5, 1:4])
})

test_that("sparse data are fitted from sparse products, with the dense fit's objective", {
  withr::local_seed(11)
  X <- leukemia[1:50, 1:20]
  X[X < stats::median(X)] <- 0
  Xs <- Matrix::Matrix(X, sparse = TRUE)
  sv <- bnmf:::sparse_svd(Xs, 3)
  ref <- svd(X, nu = 3, nv = 3)
  expect_equal(sv$d[1:3], ref$d[1:3], tolerance = 1e-6)
  expect_equal(abs(crossprod(sv$u, ref$u[, 1:3])), diag(3), tolerance = 1e-5)
  fit <- bnmf(Xs, rank = 3, method = "particles", particles = 4, init = "nndsvdar")
  expect_true(fit$sparse)
  expect_equal(fit$candidates$objective,
               vapply(fit$particles, function(q) objective_plain(X, q$W, q$H, "frobenius"), 1),
               tolerance = 1e-10)
  expect_equal(dim(predict(fit)), dim(X))
  old <- options(bnmf.max_dense = 10)
  on.exit(options(old))
  expect_error(predict(fit), class = "bnmf_error_dense")
  options(old)
  expect_error(bnmf(Xs, rank = 3, method = "hmc", likelihood = silf(objective = "is")),
               class = "bnmf_error_input")
})

test_that("HMC with missing entries predicts them by the mean over its draws", {
  withr::local_seed(12)
  X <- leukemia[1:30, 1:12]
  hid <- sample(length(X), 60)
  Xm <- X
  Xm[hid] <- NA
  fit <- bnmf(Xm, rank = 2, method = "hmc", iter = 60, burnin = 30)
  expect_equal(fit$n_missing, 60)
  p <- predict(fit, se.fit = TRUE)
  draws <- sapply(seq_len(fit$n_draws), function(d) {
    f <- factors(fit, draw = d)
    (f$W %*% f$H)[hid]
  })
  expect_equal(p$fit[hid], rowMeans(draws), tolerance = 1e-10)
  expect_equal(p$se.fit[hid], sqrt(pmax(rowMeans(draws^2) - rowMeans(draws)^2, 0)), tolerance = 1e-8)
  expect_equal(predict(fit), p$fit, tolerance = 1e-10)
  # the chain's log posterior is that of the observed entries only
  tr <- fit$trace
  last <- factors(fit, draw = fit$n_draws)
  # (in the units of X: the SILF of X / s is SILF(f; epsilon) / s^2, s^2 the
  # mean square of the observed entries, and rate * H is the same)
  lik <- fit$likelihood
  lik$C <- lik$C / mean(Xm^2, na.rm = TRUE)
  expect_equal(tail(tr$logpost, 1), log_post_plain(Xm, last$W, last$H, lik, fit$prior$rate),
               tolerance = 1e-8)
})
