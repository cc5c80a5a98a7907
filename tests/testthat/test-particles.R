# Particle fits: the SILF likelihood and its score (against finite
# differences of a log posterior written out here), starts, the fit object
# and its methods.

# silf_plain(), objective_plain() and log_post_plain(): helper-particles.R.

test_that("SILF is the piecewise loss of section 5.1, with a continuous derivative", {
  eps <- 10; beta <- 0.1
  y <- c(0, 8.9, 9, 9.5, 10, 11, 11.5, 30)
  expect_equal(bnmf:::silf_loss(y, eps, beta), vapply(y, silf_plain, 1, eps = eps, beta = beta))
  h <- 1e-6
  for (yy in c(8.95, 9.5, 10.7, 12)) {
    fd <- (silf_plain(yy + h, eps, beta) - silf_plain(yy - h, eps, beta)) / (2 * h)
    expect_equal(bnmf:::silf_deriv(yy, eps, beta), fd, tolerance = 1e-6)
  }
  # continuity at both ends of the transition
  expect_equal(bnmf:::silf_deriv(c(9, 11), eps, beta), c(0, 1))
  expect_equal(bnmf:::silf_loss(11, eps, beta), 11 - eps)
})

test_that("the score is the gradient of the log posterior (all three objectives)", {
  withr::local_seed(31)
  I <- 4; J <- 3; R <- 2
  X <- matrix(rexp(I * J) + 0.1, I, J)
  W <- matrix(rexp(I * R), I, R)
  H <- matrix(rexp(R * J), R, J)
  for (obj in c("frobenius", "kl", "is")) {
    f0 <- objective_plain(X, W, H, obj)
    # epsilon puts f in the quadratic transition, then in the linear part
    for (eps in c(f0, f0 / 3)) {
      lik <- silf(epsilon = eps, beta = 0.1, C = 2, objective = obj)
      g <- bnmf:::objective_grad(X, W, H, obj)
      expect_equal(g$f, f0, tolerance = 1e-12)
      s <- bnmf:::particle_score(g, lik, rate = 1.5)
      h <- 1e-6
      num_W <- W * 0
      for (i in seq_along(W)) {
        Wp <- W; Wp[i] <- Wp[i] + h
        Wm <- W; Wm[i] <- Wm[i] - h
        num_W[i] <- (log_post_plain(X, Wp, H, lik, 1.5) - log_post_plain(X, Wm, H, lik, 1.5)) / (2 * h)
      }
      num_H <- H * 0
      for (i in seq_along(H)) {
        Hp <- H; Hp[i] <- Hp[i] + h
        Hm <- H; Hm[i] <- Hm[i] - h
        num_H[i] <- (log_post_plain(X, W, Hp, lik, 1.5) - log_post_plain(X, W, Hm, lik, 1.5)) / (2 * h)
      }
      expect_equal(s$W, num_W, tolerance = 1e-6)
      expect_equal(s$H, num_H, tolerance = 1e-6)
    }
  }
})

test_that("to_simplex moves the scale into H and leaves W H unchanged", {
  withr::local_seed(32)
  W <- matrix(rexp(12), 6, 2); W[, 2] <- 0
  H <- matrix(rexp(10), 2, 5)
  p <- bnmf:::to_simplex(W, H)
  expect_equal(colSums(p$W), c(1, 1))
  expect_equal(p$W %*% p$H, W %*% H)
})

test_that("the SVD sign convention does not depend on the signs LAPACK returns", {
  withr::local_seed(33)
  X <- matrix(rexp(40 * 15), 40, 15)
  s <- svd(X, nu = 3, nv = 3)
  a <- bnmf:::svd_signs(list(u = s$u, d = s$d[1:3], v = s$v))
  flip <- c(-1, 1, -1)
  b <- bnmf:::svd_signs(list(u = sweep(s$u, 2, flip, "*"), d = s$d[1:3],
                             v = sweep(s$v, 2, flip, "*")))
  expect_equal(a, b)
  expect_true(all(a$u[, 1] > 0) && all(a$v[, 1] > 0))
  expect_equal(a$u %*% diag(a$d) %*% t(a$v), s$u %*% diag(s$d[1:3]) %*% t(s$v))
})

test_that("NNDSVD is exact on a rank-one matrix and non-negative", {
  withr::local_seed(34)
  X <- tcrossprod(rexp(20), rexp(9))
  st <- bnmf:::nndsvd_start(bnmf:::svd_top(X, 1), 1, mean(X), "nndsvd")
  expect_equal(st$W %*% st$H, X)
  Y <- matrix(rexp(200), 20, 10)
  st2 <- bnmf:::nndsvd_start(bnmf:::svd_top(Y, 4), 4, mean(Y), "nndsvdar")
  expect_true(all(st2$W > 0) && all(st2$H > 0))
})

test_that("Q-Transform pairs relate SVD and NMF factors by least squares", {
  withr::local_seed(35)
  qp <- qtransform_pairs(n_data = 1, restarts = 2, size = 8, rank = 2)
  expect_s3_class(qp, "bnmf_qtransform")
  expect_identical(dim(qp$Q_A), c(2L, 2L, 2L))
  # The shipped pairs: 100, rank 3, finite
  sp <- qtransform_pairs_default()
  expect_identical(dim(sp$Q_A), c(3L, 3L, 100L))
  expect_true(all(is.finite(sp$Q_A)) && all(is.finite(sp$Q_W)))
  more <- qtransform_pairs(n_data = 1, restarts = 1, size = 8, rank = 2, extend = qp)
  expect_identical(dim(more$Q_W), c(2L, 2L, 3L))
  expect_equal(more$Q_A[, , 1:2], qp$Q_A)
  expect_error(qtransform_pairs(rank = 3, extend = qp), class = "bnmf_error_input")
})

test_that("the shipped pairs are reproduced by the data-raw recipe", {
  skip_on_cran()
  # They were made with R's reference BLAS. Another BLAS sums the products in
  # another order, and the recipe's solver stops at another point within its
  # tolerance (under OpenBLAS about 3e-6 of the largest value away).
  blas <- tolower(extSoftVersion()[["BLAS"]])
  if (!is.na(bnmf:::blas_threads()) ||
      grepl("openblas|mkl|blis|atlas|flexiblas|accelerate|veclib", blas)) {
    skip("the shipped pairs are reproduced to the last digits under R's reference BLAS only")
  }
  withr::local_seed(20180319, .rng_kind = "Mersenne-Twister", .rng_normal_kind = "Inversion",
                    .rng_sample_kind = "Rejection")
  pairs <- muffle_convergence(qtransform_pairs(n_data = 20, restarts = 5, size = 12, rank = 3,
                                                noise = 0.1))
  shipped <- qtransform_pairs_default()
  # The solver stops where the C code says it converged, whatever the chunks
  # the R driver cut the run into, so the recipe is deterministic; only a
  # different BLAS could move the last digits.
  expect_lt(max(abs(pairs$Q_A - shipped$Q_A)), 1e-10 * max(abs(shipped$Q_A)))
  expect_lt(max(abs(pairs$Q_W - shipped$Q_W)), 1e-10 * max(abs(shipped$Q_W)))
})

test_that("a particle fit has simplex weights, simplex bases and a consistent discrepancy", {
  d <- make_nmf_data(I = 30, J = 20, K = 3, sd = 0.2, seed = 36)
  withr::local_seed(36)
  fit <- bnmf(d$X - min(d$X, 0), rank = 3, method = "particles", particles = 6,
              init = "random")
  X <- fit$X
  expect_s3_class(fit, c("bnmf_particles", "bnmf"))
  w <- weights(fit)
  expect_length(w, 6)
  expect_equal(sum(w), 1)
  expect_lt(fit$qp$kkt, 1e-10)
  # The weights minimise w'Kw on the simplex for the fit's own K, recomputed
  # here: g = K w equals w'Kw where w > 0 and is no smaller where w = 0
  # (scaled by the largest diagonal entry, as the solver's KKT residual).
  g <- drop(fit$K %*% w) / max(diag(fit$K))
  lam <- sum(w * g)
  expect_lt(max(abs(g[w > 0] - lam), pmax(lam - g[w == 0], 0)), 1e-10)
  for (m in 1:6) {
    f <- factors(fit, particle = m)
    expect_equal(unname(colSums(f$W)), rep(1, 3))
    expect_equal(fit$objective[m], sum((X - f$W %*% f$H)^2), tolerance = 1e-10)
  }
  expect_equal(factors(fit), factors(fit, particle = which.max(w)))
  # epsilon: 1.2 x the largest candidate objective
  expect_equal(fit$likelihood$epsilon, 1.2 * max(fit$objective))
  # fitted: the weighted mean of the particles' products
  fm <- Reduce(`+`, lapply(1:6, function(m) w[[m]] * (fit$particles[[m]]$W %*% fit$particles[[m]]$H)))
  expect_equal(unname(fitted(fit)), unname(fm))
  expect_equal(residuals(fit), X - fitted(fit))
  # The discrepancy: w'Kw, and the same from the list of factorisations
  expect_equal(as.numeric(stein_discrepancy(fit)), drop(w %*% fit$K %*% w))
  parts <- lapply(1:6, function(m) factors(fit, particle = m))
  sd_list <- stein_discrepancy(parts, X, likelihood = silf(fit$likelihood$epsilon))
  expect_equal(as.numeric(sd_list), as.numeric(stein_discrepancy(fit)), tolerance = 1e-10)
  expect_equal(attr(sd_list, "weights"), unname(w), tolerance = 1e-8)
  # Unscaled factorisations give the same value (they are moved to the simplex)
  parts2 <- lapply(parts, function(p) list(W = p$W * 3, H = p$H / 3))
  expect_equal(as.numeric(stein_discrepancy(parts2, X, likelihood = silf(fit$likelihood$epsilon))),
               as.numeric(sd_list), tolerance = 1e-10)
  # Equal weights can only be worse than the optimal ones
  expect_gte(as.numeric(stein_discrepancy(parts, X, likelihood = silf(fit$likelihood$epsilon),
                                          weights = "equal")),
             as.numeric(sd_list))
  # Candidates are converged NNLS solutions: KKT of min |X - WH|^2 in H
  f <- factors(fit, particle = 1)
  gH <- crossprod(f$W, f$W %*% f$H - X)
  expect_lt(max(abs(gH[f$H > 1e-8 * max(f$H)])), 1e-3 * max(abs(crossprod(f$W, X))))
})

test_that("every kind of start gives a fit", {
  X <- leukemia[1:60, 1:30]
  for (init in c("qtransform", "random", "nndsvd", "nndsvdar")) {
    withr::local_seed(37)
    if (init == "nndsvd") {
      expect_warning(fit <- bnmf(X, rank = 4, method = "particles", particles = 3, init = init),
                     "deterministic")
      # identical candidates: the discrepancy is the same whatever the split
      expect_equal(as.numeric(stein_discrepancy(fit)), fit$K[1, 1], tolerance = 1e-6)
    } else {
      fit <- bnmf(X, rank = 4, method = "particles", particles = 3, init = init)
    }
    expect_equal(sum(weights(fit)), 1)
    expect_true(all(fit$candidates$converged))
  }
  for (obj in c("kl", "is")) {
    withr::local_seed(37)
    fit <- bnmf(X, rank = 3, method = "particles", particles = 3,
                likelihood = silf(objective = obj))
    f <- factors(fit, particle = 2)
    WH <- f$W %*% f$H
    expect_equal(fit$objective[2], objective_plain(X, f$W, f$H, obj), tolerance = 1e-10)
    expect_equal(fit$likelihood$epsilon, 1.2 * max(fit$objective))
    expect_lt(fit$qp$kkt, 1e-10)
  }
  withr::local_seed(38)
  qp <- qtransform_pairs(n_data = 1, restarts = 2)
  fit <- bnmf(X, rank = 2, method = "particles", particles = 2, init = qp)
  expect_identical(fit$init, "qtransform (given pairs)")
})

test_that("the default start of method particles is Q-Transform, and set.seed reproduces a fit", {
  X <- leukemia[1:50, 1:20]
  set.seed(39)
  a <- bnmf(X, rank = 5, method = "particles", particles = 3)
  set.seed(39)
  b <- bnmf(X, rank = 5, method = "particles", particles = 3)
  expect_identical(a$init, "qtransform")
  set.seed(39)
  sa <- bnmf:::particle_starts(X, 5, 3, "qtransform")
  set.seed(39)
  sb <- bnmf:::particle_starts(X, 5, 3, "qtransform")
  expect_identical(lapply(sa, `[`, c("W", "H")), lapply(sb, `[`, c("W", "H")))
  # The solver's stopping sweep can depend on timing (see above), so the
  # particles agree to the solver's tolerance rather than bit for bit.
  expect_equal(a$particles, b$particles, tolerance = 1e-4)
  expect_equal(a$weights, b$weights, tolerance = 1e-4)
})

test_that("candidates solved as futures give the same fit as in this process", {
  skip_on_cran()
  X <- leukemia[1:60, 1:30]
  set.seed(43)
  a <- bnmf(X, rank = 3, method = "particles", particles = 4)
  old <- future::plan(future::multisession, workers = 2)
  on.exit(future::plan(old), add = TRUE)
  set.seed(43)
  b <- bnmf(X, rank = 3, method = "particles", particles = 4)
  expect_equal(a$particles, b$particles, tolerance = 1e-4)
  expect_equal(a$weights, b$weights, tolerance = 1e-4)
})

test_that("predict() finds non-negative least-squares coefficients of new samples", {
  withr::local_seed(40)
  fit <- bnmf(leukemia[1:80, 1:40], rank = 3, method = "particles", particles = 3)
  W <- factors(fit)$W
  h <- matrix(rexp(3 * 4), 3, 4)
  h[2, 3] <- 0
  Xn <- W %*% h
  expect_equal(unname(predict(fit, newdata = Xn, type = "coef")), h, tolerance = 1e-8)
  expect_identical(dim(predict(fit, newdata = Xn)), dim(Xn))
  expect_equal(predict(fit), fitted(fit))
})

test_that("summary, print and plot work", {
  withr::local_seed(41)
  fit <- bnmf(leukemia[1:80, 1:40], rank = 3, method = "particles", particles = 4)
  s <- summary(fit, n_top = 4, n_particles = 2)
  expect_s3_class(s, "summary.bnmf_particles")
  expect_identical(dim(s$top[[1]]), c(4L, 3L))
  expect_equal(s$particles$weight, unname(weights(fit)))
  expect_equal(diag(s$distance), rep(0, 4), ignore_attr = TRUE)
  # the top features are the largest entries of each (aligned) factor
  m <- which.max(weights(fit))
  Wm <- factors(fit, particle = m)$W
  expect_identical(s$top[[1]][, 1], rownames(Wm)[order(-Wm[, 1])[1:4]], ignore_attr = TRUE)
  expect_output(print(fit), "Stein-weighted particles")
  expect_output(print(s), "Top features")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  for (type in c("weights", "distance", "basis", "features")) {
    expect_identical(plot(fit, type = type), fit)
  }
})

test_that("particle fits reject what they cannot use", {
  X <- leukemia[1:20, 1:10]
  expect_error(bnmf(X, rank = 2, method = "particles", particles = 0), class = "bnmf_error_input")
  # Missing entries and sparse data are fitted (test-particles-missing.R);
  # a row with no observed entry, or an objective that needs W H at every
  # entry of a sparse X, is refused.
  Xn <- X; Xn[1, ] <- NA
  expect_error(bnmf(Xn, rank = 2, method = "particles"), class = "bnmf_error_input")
  expect_error(bnmf(-X, rank = 2, method = "particles"), class = "bnmf_error_input")
  Xs <- Matrix::Matrix(X, sparse = TRUE)
  expect_error(bnmf(Xs, rank = 2, method = "particles", likelihood = silf(objective = "kl")),
               class = "bnmf_error_input")
  expect_error(bnmf(X, rank = 2, method = "particles", init = "kmeans"), class = "bnmf_error_input")
  expect_error(bnmf(X, rank = 2, method = "particles", likelihood = "silf"),
               class = "bnmf_error_input")
  expect_error(silf(beta = 1), class = "bnmf_error_input")
  expect_error(silf(objective = "hellinger"), class = "bnmf_error_input")
  X0 <- X; X0[1, 1] <- 0
  expect_error(bnmf(X0, rank = 2, method = "particles", likelihood = silf(objective = "is")),
               class = "bnmf_error_input")
  withr::local_seed(42)
  fit <- bnmf(X, rank = 2, method = "particles", particles = 2)
  expect_error(factors(fit, particle = 3), class = "bnmf_error_input")
  expect_error(logLik(fit), class = "bnmf_error_unsupported")
  expect_error(stein_discrepancy(list(list(W = 1)), X), class = "bnmf_error_input")
  expect_error(stein_discrepancy(1:3), class = "bnmf_error_input")
  expect_bnmf_error(quote(bnmf(Xs, rank = 2, method = "particles", likelihood = silf(objective = "kl"))),
                    "input", paste(
    '`likelihood`: the Kullback-Leibler objective of method "particles" needs W H at every entry',
    'of X, a dense 20 x 10 matrix that a sparse X is meant to avoid; use',
    '`silf(objective = "frobenius")` (sparse products only) or `as.matrix(X)`.'))
})
