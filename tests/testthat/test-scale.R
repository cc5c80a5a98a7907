# Fit quality does not depend on the units of X: the default priors follow
# the data's scale, the noise sum stays exact on near-exact data, and the
# extremes of the priors and the data give answers or classed errors.

rel_err <- function(fit, truth) sqrt(sum((fitted(fit) - truth)^2) / sum(truth^2))

test_that("the same data at scales 1e-100 to 1e100 give the same relative error", {
  d <- make_nmf_data()
  scales <- c(1e-100, 1e-3, 1, 1e3, 1e100)
  for (method in c("gibbs", "vb", "icm")) {
    res <- vapply(scales, function(s) {
      withr::local_seed(2)
      # ICM and VB to convergence: their relative stopping rule compares the
      # change of the log posterior with its size, which has a -n log(s) term.
      fit <- muffle_convergence(bnmf(d$X * s, rank = 3, method = method, progress = FALSE,
                                     iter = if (method == "gibbs") 300 else 20000,
                                     tol = if (method == "gibbs") 1e-6 else 1e-13))
      c(rel = rel_err(fit, d$WH * s), sigma = sigma(fit) / s)
    }, numeric(2))
    info <- method
    # At every scale the fit recovers W0 H0 to the noise level (the noise sd
    # 0.1 is 1.3% of the rms of W0 H0): with the old fixed noise prior
    # Gamma(1, 1), scale 1e-3 gave 61% (VB, Gibbs) and 100% (ICM, W = 0).
    expect_true(all(res["rel", ] < 0.02), info = info)
    expect_true(all(abs(res["sigma", ] - 0.1) < 0.03), info = info)
    # The same seed and the same start (on the data's scale) make the fits
    # the same up to rounding: the posterior of c X is that of X with W, H
    # times sqrt(c) and tau / c^2. Gibbs: measured agreement 1e-15; should
    # rounding ever decouple the chains, the two estimates are independent
    # and the bound, 2e-3 on a relative error of 0.014, is 5 Monte Carlo sd
    # of their difference (the sd of the relative error over 10 seeds is
    # 2.6e-4 with 300 sweeps, so 3.7e-4 for a difference). ICM, VB:
    # deterministic; measured 1e-5 (rounding along the slow directions of
    # the iteration), bound 1e-4.
    tol <- if (method == "gibbs") 2e-3 else 1e-4
    expect_lt(max(abs(res["rel", ] - res["rel", 3])) / res["rel", 3],
              if (method == "gibbs") tol / 0.014 else tol, label = info)
    expect_lt(max(abs(res["sigma", ] / res["sigma", 3] - 1)),
              if (method == "gibbs") 0.05 else tol, label = info)
  }
})

test_that("the automatic noise rate is shape * 1e-4 * mean(X^2) and an explicit rate is kept", {
  d <- make_nmf_data()
  X <- d$X
  X[c(3, 50, 71)] <- NA
  fit <- bnmf(X, rank = 3, method = "icm", progress = FALSE)
  expect_equal(fit$noise$rate, 1e-4 * mean(X^2, na.rm = TRUE))
  expect_true(fit$noise$auto)
  fit2 <- bnmf(X, rank = 3, method = "icm", noise = gamma_prior(2), progress = FALSE)
  expect_equal(fit2$noise$rate, 2e-4 * mean(X^2, na.rm = TRUE))
  fit3 <- bnmf(X, rank = 3, method = "icm", noise = gamma_prior(1, 1), progress = FALSE)
  expect_identical(fit3$noise$rate, 1)
  expect_null(fit3$noise$auto)
  # update() keeps the resolved rate
  fit4 <- update(fit, iter = 5)
  expect_identical(fit4$noise$rate, fit$noise$rate)
  expect_identical(gamma_prior()$rate, "auto")
  expect_error(gamma_prior(rate = "automatic"), "`rate`", class = "bnmf_error_input")
  expect_output(print(gamma_prior()), "rate = \"auto\"")
})

# Near-exact data: relative noise 1e-9. The SSE, about 1e-18 sumsq, is far
# below the rounding of sumsq - 2 lin + quad; it is then summed entry by
# entry. ICM's tau is the conditional mode (alpha + n/2 - 1) / (beta + SSE/2)
# for its final W, H, so it must match the SSE computed here from the
# residuals (relative 1e-5: the balancing of the scales after the tau
# update moves WH by rounding, 1e-16 of X, so 1e-7 of the residual).
near_exact <- function(s, I = 30, J = 20, K = 3, sparse = FALSE) {
  withr::local_seed(7)
  W0 <- matrix(rexp(I * K), I, K)
  H0 <- matrix(rexp(K * J), K, J)
  if (sparse) {
    W0[sample(length(W0), length(W0) / 2)] <- 0
    H0[sample(length(H0), length(H0) / 2)] <- 0
  }
  X0 <- W0 %*% H0
  X <- X0 + (X0 > 0) * matrix(rnorm(I * J, sd = 1e-9), I, J)
  list(X = X * s, X0 = X0 * s)
}

icm_tau_check <- function(fit, X, noise, info) {
  R <- as.matrix(X) - fitted(fit)
  sse <- sum(R^2, na.rm = TRUE)
  n <- sum(!is.na(as.matrix(X)))
  expect_equal(fit$tau, (noise$shape + n / 2 - 1) / (noise$rate + sse / 2),
               tolerance = 1e-5, info = info)
}

test_that("the noise of near-exact data is exact (dense, sparse, missing)", {
  for (s in c(1, 1e100)) {
    # scale 1 needs a rate far below the SSE (6e-16) for tau to follow the
    # data; at 1e100 Gamma(1, 1) is the issue's case
    noise <- if (s == 1) gamma_prior(1, 1e-40) else gamma_prior(1, 1)
    d <- near_exact(s)
    info <- paste("scale", s)
    fit <- bnmf(d$X, rank = 3, method = "icm", noise = noise, tol = 1e-12, iter = 5000,
                progress = FALSE)
    icm_tau_check(fit, d$X, noise, info)
    # sigma is the true noise 1e-9 s up to the residual's degrees of freedom:
    # MAP residuals have about n - (I + J) K = 450 of 600 (sqrt: 0.87).
    expect_equal(sigma(fit) / s, 1e-9 * sqrt(450 / 600), tolerance = 0.1, info = info)
    expect_equal(1 / sqrt(fit$tau), sigma(fit), info = info)
    # VB: E[tau] and the noise sd agree, near the true 1e-9 (its sd from
    # 600 entries is about 3%)
    fv <- muffle_convergence(bnmf(d$X, rank = 3, method = "vb", noise = noise, tol = 1e-12,
                                  iter = 5000, progress = FALSE))
    expect_equal(sigma(fv) / s, 1e-9, tolerance = 0.15, info = info)
    expect_equal(1 / sqrt(fv$tau), sigma(fv), tolerance = 0.01, info = info)
    # Gibbs from the ICM fit (a chain from a random start needs far longer to
    # find a posterior this narrow): its kept draws of the SSE (the trace's
    # sse, from the final W and H of each sweep) match the residuals of the
    # last draw, and the noise sd is near the truth.
    withr::local_seed(1)
    fg <- bnmf(d$X, rank = 3, noise = noise, init = list(W = fit$W, H = fit$H), iter = 200,
               keep = "draws", progress = FALSE)
    expect_equal(sigma(fg) / s, 1e-9, tolerance = 0.15, info = info)
    last <- fg$draws[[1]]
    Wl <- matrix(last$W[, ncol(last$W)], 30, 3)
    Hl <- matrix(last$H[, ncol(last$H)], 3, 20)
    expect_equal(fg$trace$sse[nrow(fg$trace)], sum((d$X - Wl %*% Hl)^2), tolerance = 1e-5,
                 info = info)
  }
  # missing entries, masked (ICM) and latent (Gibbs)
  noise <- gamma_prior(1, 1)
  d <- near_exact(1e100)
  X <- d$X
  X[c(5, 77, 230, 231, 599)] <- NA
  fit <- bnmf(X, rank = 3, method = "icm", noise = noise, tol = 1e-12, iter = 5000,
              progress = FALSE)
  icm_tau_check(fit, X, noise, "missing, ICM")
  withr::local_seed(1)
  fg <- bnmf(X, rank = 3, noise = noise, init = list(W = fit$W, H = fit$H), iter = 100,
             keep = "draws", progress = FALSE)
  last <- fg$draws[[1]]
  R <- X - matrix(last$W[, ncol(last$W)], 30, 3) %*% matrix(last$H[, ncol(last$H)], 3, 20)
  expect_equal(fg$trace$sse[nrow(fg$trace)], sum(R^2, na.rm = TRUE), tolerance = 1e-5)
  # sparse data: the stored entries and the zeros
  skip_if_not_installed("Matrix")
  d <- near_exact(1e100, sparse = TRUE)
  Xs <- Matrix::Matrix(d$X, sparse = TRUE)
  fit <- bnmf(Xs, rank = 3, method = "icm", noise = noise, tol = 1e-12, iter = 5000,
              progress = FALSE)
  icm_tau_check(fit, Xs, noise, "sparse, ICM")
})

test_that("Chib's estimate follows the units of X and survives near-exact data", {
  d <- make_nmf_data()
  est <- vapply(c(1, 1e100, 1e-100), function(s) {
    withr::local_seed(4)
    fit <- bnmf(d$X * s, rank = 3, iter = 300, progress = FALSE)
    withr::local_seed(5)
    # (300 samples: a weak factor's block may warn of few effective draws)
    ml <- suppressWarnings(marginal_likelihood(fit, samples = 300),
                           classes = "bnmf_warning_chib_ess")
    # log p(c X) = log p(X) - n log c under the automatic priors
    c(ml$logml + length(d$X) * log(s), ml$se)
  }, numeric(2))
  # the same seeds give the same chains up to rounding; the bound is 0.1
  # Monte Carlo standard error of one estimate
  expect_lt(max(abs(est[1, ] - est[1, 1])), 0.1 * est[2, 1])
  # |X| near 1e100 with relative noise 1e-9 and Gamma(1, 1) (formerly an
  # internal error: the scale integral's integrand is narrower than the
  # resolution of its variable)
  x <- near_exact(1e100)$X
  fv <- bnmf(x, rank = 3, method = "vb", noise = gamma_prior(1, 1), tol = 1e-12,
             iter = 5000, progress = FALSE)
  withr::local_seed(6)
  ml <- suppressWarnings(marginal_likelihood(fv, samples = 200),
                         classes = "bnmf_warning_chib_ess")
  expect_true(is.finite(ml$logml))
})

test_that("tiny exponential rates: ICM and VB fit, Gibbs refuses with a classed error", {
  d <- make_nmf_data()
  for (method in c("icm", "vb")) {
    fit <- bnmf(d$X, rank = 3, method = method, prior = exponential(1e-320), progress = FALSE)
    expect_true(all(is.finite(fit$W)) && all(is.finite(fit$H)) && is.finite(fit$tau),
                info = method)
    expect_lt(rel_err(fit, d$WH), 0.1)
  }
  err <- expect_error(bnmf(d$X, rank = 3, prior = exponential(1e-320), iter = 20,
                           progress = FALSE), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`prior`.*1e-150")
  # a small rate Gibbs can represent runs, with the factors' scale far from
  # the data's (the scale move is exact)
  withr::local_seed(3)
  fit <- bnmf(d$X, rank = 3, prior = exponential(1e-100), iter = 50, progress = FALSE)
  expect_true(all(is.finite(fitted(fit))))
  expect_lt(rel_err(fit, d$WH), 0.1)
})

test_that("the posterior sd of tau is finite where its running sum of squares overflows", {
  withr::local_seed(3)
  X <- matrix(rexp(200), 20, 10)
  fit <- bnmf(X, rank = 2, iter = 200, thin = 2, chains = 2, progress = FALSE)
  # The kept draws of the trace are the ones the running moments saw.
  expect_equal(bnmf:::kept_sd(fit$trace, "tau", 2), fit$tau_sd, tolerance = 1e-12)
  tiny <- bnmf(X * 1e-100, rank = 2, iter = 200, thin = 2, progress = FALSE)
  expect_true(is.finite(tiny$tau_sd) && tiny$tau_sd > 0)
  tr <- tiny$trace[tiny$trace$sampling, ]
  kept <- tr$tau[seq_len(nrow(tr)) %% 2 == 0]
  expect_equal(tiny$tau_sd / max(kept), stats::sd(kept / max(kept)), tolerance = 1e-12)
})

# ---- the other models: NMTF, the particle model, RRT ----------------------------

# A small rank-3 X >= 0 (the particle model and RRT need non-negative data).
scale_data <- function(I = 20, J = 15, K = 3) {
  withr::local_seed(11)
  WH <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J)
  pmax(WH + matrix(rnorm(I * J, sd = 0.05 * sqrt(mean(WH^2))), I, J), 0)
}

rel_x <- function(fit, X) sqrt(sum((X - fitted(fit))^2) / sum(X^2))

# Fits of X * s for s in 1, 1e-100, 1e100 from the same seed: their relative
# errors (a fit that fails is an error of the test).
rel_at_scales <- function(X, fit_fun, scales = c(1, 1e-100, 1e100)) {
  vapply(scales, function(s) {
    withr::local_seed(5)
    rel_x(suppressWarnings(fit_fun(X * s)), X * s)
  }, numeric(1))
}

# Within 1.5 times, or 0.01, of the error at scale 1; never the zero fit.
expect_scale_free <- function(rel, info) {
  expect_true(all(is.finite(rel)), info = info)
  expect_lt(max(rel), 0.99)
  expect_lt(max(rel[-1]), max(1.5 * rel[1], rel[1] + 0.01), label = info)
}

test_that("NMTF fits of X * 1e-100 and X * 1e100 are those of X (every method)", {
  X <- scale_data()
  for (m in c("icm", "vb", "np", "gibbs")) {
    rel <- rel_at_scales(X, function(Y) {
      bnmf(Y ~ nmtf(3, 3), method = m, iter = if (m == "gibbs") 100 else 200, progress = FALSE)
    })
    # Formerly ICM: an all-zero fit (relative error 1) at both extremes: the
    # k-means start had F, G at 1 whatever the data's scale.
    expect_scale_free(rel, paste("nmtf", m))
    # ICM, VB and NP are deterministic from the same start (up to rounding):
    # the same fit, up to where each stops (tol = 1e-6; measured 2e-3 of
    # the relative error)
    if (m != "gibbs") expect_lt(max(abs(rel - rel[1])), 0.01 * rel[1], label = m)
  }
  # the start follows the scale: each block of c X's start is c^(1/3) times
  # that of X (up to rounding) and F S G' is c times
  withr::local_seed(3)
  a <- bnmf:::nmtf_init("kmeans", X, 3, 3, mean(X), "icm")
  withr::local_seed(3)
  b <- bnmf:::nmtf_init("kmeans", X * 1e99, 3, 3, mean(X * 1e99), "icm")
  expect_equal(b$F, a$F * 1e33)
  expect_equal(b$S, a$S * 1e33)
  # so does the NMF start (its NMF ICM fits stop on the relative change of
  # the squared error, the same at every scale; measured 1e-14), for K = L
  # (S diagonal) and K != L (S drawn)
  for (KL in list(c(3, 3), c(3, 2))) {
    withr::local_seed(4)
    a <- bnmf:::nmtf_init("nmf", X, KL[1], KL[2], mean(X), "icm")
    withr::local_seed(4)
    b <- bnmf:::nmtf_init("nmf", X * 1e-99, KL[1], KL[2], mean(X * 1e-99), "icm")
    expect_equal(b$F, a$F * 1e-33, tolerance = 1e-10)
    expect_equal(b$S, a$S * 1e-33, tolerance = 1e-10)
    expect_equal(b$G, a$G * 1e-33, tolerance = 1e-10)
  }
})

test_that("particle fits follow the units of X: weights, discrepancy, epsilon and rate", {
  X <- scale_data()
  fits <- lapply(c(1, 1e-100, 1e100), function(s) {
    bnmf(X * s, rank = 3, method = "particles", particles = 4, iter = 1000, progress = FALSE)
  })
  rel <- vapply(seq_along(fits), function(k) rel_x(fits[[k]], X * c(1, 1e-100, 1e100)[k]), 0)
  expect_scale_free(rel, "particles")
  s <- bnmf:::data_scale(X)
  for (k in 2:3) {
    c <- c(1, 1e-100, 1e100)[k]
    expect_equal(weights(fits[[k]]), weights(fits[[1]]), tolerance = 1e-6)
    expect_equal(as.numeric(stein_discrepancy(fits[[k]])),
                 as.numeric(stein_discrepancy(fits[[1]])), tolerance = 1e-6)
    expect_equal(fits[[k]]$likelihood$epsilon, fits[[1]]$likelihood$epsilon * c^2,
                 tolerance = 1e-6)
    expect_equal(fits[[k]]$prior$rate, fits[[1]]$prior$rate / c, tolerance = 1e-6)
    expect_equal(fits[[k]]$H, fits[[1]]$H * c, tolerance = 1e-6)
  }
  # "auto" is rate 1 on X / s, so 1 / s on the H of X; the fit's objective
  # is that of X
  expect_equal(fits[[1]]$prior$rate, 1 / s)
  expect_equal(fits[[1]]$objective[1],
               sum((X - fits[[1]]$particles[[1]]$W %*% fits[[1]]$particles[[1]]$H)^2),
               tolerance = 1e-10)
  # an explicit rate and epsilon are in the units of X: the fit of c X with
  # rate / c and epsilon c^2 is the fit of X
  f1 <- bnmf(X, rank = 3, method = "particles", particles = 4, iter = 1000,
             prior = exponential(0.5), likelihood = silf(epsilon = 20), progress = FALSE)
  f2 <- bnmf(X * 1e50, rank = 3, method = "particles", particles = 4, iter = 1000,
             prior = exponential(0.5e-50), likelihood = silf(epsilon = 20e100), progress = FALSE)
  expect_equal(weights(f2), weights(f1), tolerance = 1e-6)
  expect_equal(f2$likelihood$epsilon, 20e100)
})

test_that("SVGD and DSGD fits of X * 1e-100 and X * 1e100 are those of X", {
  X <- scale_data()
  for (m in c("svgd", "dsgd")) {
    fits <- lapply(c(1, 1e-100, 1e100), function(s) {
      withr::local_seed(8)
      bnmf(X * s, rank = 3, method = m, iter = 40, particles = 3, progress = FALSE)
    })
    rel <- vapply(seq_along(fits), function(k) rel_x(fits[[k]], X * c(1, 1e-100, 1e100)[k]), 0)
    # Formerly SVGD: relative error 1 at 1e-100 (a step of 0.01 in H of
    # order 1e-100) and an internal error at 1e100 (a non-finite Stein
    # discrepancy); DSGD alike.
    expect_scale_free(rel, m)
    expect_lt(max(abs(rel - rel[1])), 1e-6, label = m)
    for (k in 2:3) {
      expect_equal(fits[[k]]$trace$stein, fits[[1]]$trace$stein, tolerance = 1e-6, info = m)
    }
  }
})

test_that("HMC fits of X * 1e-100 and X * 1e100 are those of X", {
  X <- scale_data(12, 10, 2)
  rel <- rel_at_scales(X, function(Y) {
    bnmf(Y, rank = 2, method = "hmc", iter = 60, progress = FALSE)
  })
  # Formerly 1e-100: relative error 1e98 (H ~ Exp(1) against data of 1e-100)
  expect_scale_free(rel, "hmc")
})

test_that("RRT fits of X * 1e-100 and X * 1e100 are those of X, ELBO and sigma2 in the units of X", {
  X <- scale_data(15, 12, 2)
  fits <- lapply(c(1, 1e-100, 1e100), function(s) {
    withr::local_seed(9)
    bnmf(X * s, rank = 2, method = "rrt", iter = 15, progress = FALSE,
         control = rrt_control(starts = 5, max_failures = 10, solver_iter = 100,
                               optimise_iter = 20))
  })
  sc <- c(1, 1e-100, 1e100)
  rel <- vapply(seq_along(fits), function(k) rel_x(fits[[k]], X * sc[k]), 0)
  expect_scale_free(rel, "rrt")
  n <- length(X)
  for (k in 2:3) {
    expect_equal(fits[[k]]$sigma2, fits[[1]]$sigma2 * sc[k]^2, tolerance = 1e-6)
    expect_equal(fits[[k]]$variances, fits[[1]]$variances * sc[k], tolerance = 1e-6)
    expect_equal(fits[[k]]$W, fits[[1]]$W * sqrt(sc[k]), tolerance = 1e-6)
    # the ELBO of c X is that of X minus n log(c)
    expect_equal(fits[[k]]$elbo + n * log(sc[k]), fits[[1]]$elbo, tolerance = 1e-6)
    expect_equal(as.numeric(logLik(fits[[k]])) + n * log(sc[k]), as.numeric(logLik(fits[[1]])),
                 tolerance = 1e-6)
  }
  # the automatic rate is 1 / sqrt((I + J) mean(X / s)) on X / s: over
  # sqrt(s) on the W and H of X
  s <- bnmf:::data_scale(X)
  expect_equal(fits[[1]]$prior$rate, 1 / sqrt((15 + 12) * mean(X / s)) / sqrt(s))
  # The weights, under rate 1 on X / s (given in the units of each X).
  # (They are the arg max of the ELBO in w, found by optimize(); under the
  # weak automatic rate that maximum is flat enough for the last-bit
  # differences of X / s to move them by more than 1e-6, while the ELBO
  # agrees to 1e-6 as above.)
  wts <- lapply(sc, function(c) {
    withr::local_seed(9)
    bnmf(X * c, rank = 2, method = "rrt", iter = 15, progress = FALSE,
         prior = exponential(1 / sqrt(s * c)),
         control = rrt_control(starts = 5, max_failures = 10, solver_iter = 100,
                               optimise_iter = 20))$weights
  })
  expect_equal(wts[[2]], wts[[1]], tolerance = 1e-6)
  expect_equal(wts[[3]], wts[[1]], tolerance = 1e-6)
})
