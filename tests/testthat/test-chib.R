# Chib's estimator of log p(X) against exact answers.

tiny_fit <- function(X, lw, lh, alpha, beta, prior = NULL, seed = 1) {
  set.seed(seed)
  prior <- prior %||% exponential(rate = list(W = matrix(lw, nrow(X), 1),
                                              H = matrix(lh, 1, ncol(X))))
  bnmf(X, rank = 1, prior = prior, noise = gamma_prior(alpha, beta), iter = 1000,
       progress = FALSE)
}

test_that("Chib's estimate matches the exact log p(X) of tiny problems", {
  skip_on_cran()
  # I = 1, J = 2, K = 1: tau integrated analytically, w and h by quadrature
  # (helper-exact.R). The transposed problems (I = 2, J = 1) have the same
  # evidence with the rates of w and h swapped and go through the other
  # block order (rows of H first).
  cases <- list(
    list(x = c(1, 2), lw = 1, lh = 1, a = 1, b = 1),
    list(x = c(3, 0.5), lw = 2, lh = 0.5, a = 2, b = 1),
    list(x = c(10, 12), lw = 1, lh = 1, a = 3, b = 2),
    list(x = c(0.1, 0.2), lw = 1, lh = 1, a = 1, b = 1),
    list(x = c(0.4, 0.05), lw = 0.5, lh = 3, a = 4, b = 0.5)
  )
  z <- numeric()
  for (cs in cases) {
    ex <- exact_tiny_nmf(cs$x, cs$lw, cs$lh, cs$a, cs$b)$log_evidence
    for (transpose in c(FALSE, TRUE)) {
      X <- if (transpose) matrix(cs$x, 2, 1) else matrix(cs$x, 1, 2)
      fit <- if (transpose) tiny_fit(X, cs$lh, cs$lw, cs$a, cs$b) else
        tiny_fit(X, cs$lw, cs$lh, cs$a, cs$b)
      set.seed(length(z) + 10)
      ml <- marginal_likelihood(fit, samples = 20000)
      expect_lt(abs(ml$logml - ex), 0.05)
      expect_equal(ml$blocks$block[1], if (transpose) "H[1,]" else "W[,1]")
      z <- c(z, (ml$logml - ex) / ml$se)
    }
  }
  # The standard errors are honest: the z-scores are a sample of N(0, 1).
  expect_lt(sum(z^2), qchisq(0.999, length(z)))
  expect_lt(max(abs(z)), 4)
})

test_that("Chib's estimate with an ARD prior matches quadrature over lambda", {
  skip_on_cran()
  # p(x) = int p(x | lambda) Gamma(lambda; a0, b0) d lambda, with p(x | lambda)
  # exact given lambda (the rate of w, h1 and h2).
  x <- c(1.2, 0.8)
  a0 <- 3; b0 <- 2; alpha <- 2; beta <- 1
  # (log-lambda steps 0.5 and 0.25 agree to 1e-5)
  grid <- exact_tiny_ard(x, a0, b0, alpha, beta, u = seq(-6, 4, by = 0.5))
  lp <- grid$lp
  expect_lt(max(lp[c(1, length(lp))]) - max(lp), -25) # the grid holds the mass
  ex <- grid$log_evidence
  z <- numeric()
  for (transpose in c(FALSE, TRUE)) {
    X <- if (transpose) matrix(x, 2, 1) else matrix(x, 1, 2)
    fit <- tiny_fit(X, prior = ard(a0, b0), alpha = alpha, beta = beta, seed = 2)
    set.seed(5 + transpose)
    ml <- marginal_likelihood(fit, samples = 20000)
    expect_true("tau, lambda" %in% ml$blocks$block)
    expect_lt(abs(ml$logml - ex), 0.05)
    z <- c(z, (ml$logml - ex) / ml$se)
  }
  expect_lt(max(abs(z)), 4)
})

# log p(X) by simple Monte Carlo over the prior, with tau integrated
# analytically: p(X | W, H) = beta^a Gamma(a + n/2) /
# (Gamma(a) (2 pi)^(n/2) (beta + SSE/2)^(a + n/2)). Unbiased, and accurate
# when the data are too few to concentrate the posterior far from the prior.
# With `ard = c(alpha0, beta0)` the rates are lambda_k ~ Gamma(alpha0, beta0),
# one per factor, drawn too.
prior_mc_evidence <- function(X, K, rate, a, b, n, chunk = 250000, ard = NULL) {
  I <- nrow(X); J <- ncol(X)
  obs <- which(!is.na(X))
  nobs <- length(obs)
  lv <- unlist(lapply(seq_len(n / chunk), function(r) {
    W <- matrix(rexp(chunk * I * K), chunk) # columns: (i, k), i fastest
    H <- matrix(rexp(chunk * K * J), chunk) # columns: (k, j), k fastest
    if (is.null(ard)) {
      W <- W / rate
      H <- H / rate
    } else {
      lam <- matrix(rgamma(chunk * K, ard[1], ard[2]), chunk)
      W <- W / lam[, rep(seq_len(K), each = I)]
      H <- H / lam[, rep(seq_len(K), times = J)]
    }
    sse <- 0
    for (o in obs) {
      i <- (o - 1L) %% I + 1L
      j <- (o - 1L) %/% I + 1L
      wh <- 0
      for (k in seq_len(K)) wh <- wh + W[, i + (k - 1L) * I] * H[, k + (j - 1L) * K]
      sse <- sse + (X[o] - wh)^2
    }
    a * log(b) + lgamma(a + nobs / 2) - lgamma(a) - nobs / 2 * log(2 * pi) -
      (a + nobs / 2) * log(b + sse / 2)
  }))
  m <- max(lv)
  e <- exp(lv - m)
  c(est = m + log(mean(e)), se = stats::sd(e) / sqrt(length(e)) / mean(e))
}

test_that("Chib's estimate for K = 2 (exchangeable labels) matches Monte Carlo over the prior", {
  skip_on_cran()
  # K = 2 on 2 x 2 data: complete, with a missing entry, and with an ARD
  # prior (the rates lambda_k travel with their labels). The label
  # symmetrisation is in use: the two factors have the same prior.
  X <- matrix(c(2.2, 1.1, 0.2, 0.6), 2, 2)
  Xm <- X
  Xm[2, 1] <- NA
  cases <- list(
    list(data = X, prior = exponential(1), ard = NULL, seeds = c(3, 4)),
    list(data = Xm, prior = exponential(1), ard = NULL, seeds = c(3, 4)),
    list(data = X, prior = ard(3, 2), ard = c(3, 2), seeds = c(13, 14))
  )
  for (cs in cases) {
    set.seed(cs$seeds[1])
    ref <- prior_mc_evidence(cs$data, 2, 1, 2, 1, n = 2e6, ard = cs$ard)
    set.seed(cs$seeds[2])
    fit <- bnmf(cs$data, rank = 2, prior = cs$prior, noise = gamma_prior(2, 1),
                iter = 1000, progress = FALSE)
    ml <- marginal_likelihood(fit, samples = 20000)
    expect_true(ml$symmetrised)
    d <- ml$logml - ref[["est"]]
    expect_lt(abs(d), 4 * sqrt(ml$se^2 + ref[["se"]]^2))
    expect_lt(abs(d), 0.1)
  }
})

test_that("averaging over the scale changes the variance, not the answer", {
  skip_on_cran()
  X <- matrix(c(3, 0.5), 1, 2)
  fit <- tiny_fit(X, 2, 0.5, 2, 1)
  ex <- exact_tiny_nmf(c(3, 0.5), 2, 0.5, 2, 1)$log_evidence
  set.seed(9)
  plain <- marginal_likelihood(fit, samples = 20000, orbit = FALSE)
  expect_lt(abs(plain$logml - ex), 4 * plain$se)
  # the MAP as theta*: still the same quantity
  set.seed(10)
  map <- marginal_likelihood(fit, samples = 20000, point = "map")
  expect_equal(map$point_type, "map")
  expect_lt(abs(map$logml - ex), max(4 * map$se, 0.01))
})

test_that("marginal_likelihood() checks its input and prints", {
  set.seed(1)
  X <- matrix(rexp(60), 10, 6)
  X[2, 3] <- NA
  fit <- bnmf(X, rank = 2, iter = 60, progress = FALSE)
  ml <- marginal_likelihood(fit, samples = 200, burnin = 20)
  expect_s3_class(ml, "bnmf_marglik")
  expect_equal(vapply(ml$logdens, nrow, 1L), rep(200L, 5L), ignore_attr = TRUE)
  expect_equal(ml$blocks$block, c("H[1,]", "H[2,]", "tau", "W[,1]", "W[,2]"))
  expect_equal(ncol(ml$logdens[["W[,1]"]]), 10L)
  # The likelihood and prior terms at theta*, from R's own densities: the
  # Gaussian of the observed entries, exponential W and H, Gamma tau.
  p <- ml$point
  obs <- !is.na(X)
  expect_equal(ml$loglik, sum(dnorm(X[obs], (p$W %*% p$H)[obs], 1 / sqrt(p$tau), log = TRUE)),
               tolerance = 1e-10)
  expect_equal(ml$logprior, sum(dexp(p$W, fit$prior$lamW, log = TRUE)) +
                 sum(dexp(p$H, fit$prior$lamH, log = TRUE)) +
                 dgamma(p$tau, fit$noise$shape, fit$noise$rate, log = TRUE),
               tolerance = 1e-10)
  expect_output(print(ml), "Chib")
  expect_output(print(ml), "effective sample size")
  # Each block's ESS is the smallest Kish ESS, (sum w)^2 / sum w^2, of the
  # weights exp(v) of its returned per-draw log densities.
  kish <- vapply(ml$logdens[ml$blocks$block], function(m) {
    min(apply(m, 2L, function(v) {
      w <- exp(v - max(v))
      sum(w)^2 / sum(w^2)
    }))
  }, numeric(1))
  expect_equal(ml$blocks$ess, unname(kish), tolerance = 1e-12)
  # the effective sample size of an average of exp(v)
  expect_equal(bnmf:::weight_ess(rep(-3, 50)), 50)
  expect_equal(bnmf:::weight_ess(c(0, rep(-800, 99))), 1)
  expect_equal(bnmf:::weight_ess(log(c(1, 1, 2))), 16 / 6)
  pdf(NULL)
  on.exit(grDevices::dev.off())
  est <- plot(ml)
  expect_equal(est$logml[nrow(est)], ml$logml)
  icm <- bnmf(X, rank = 2, method = "icm", progress = FALSE)
  expect_error(marginal_likelihood(icm), "gibbs", class = "bnmf_error_unsupported")
  expect_error(marginal_likelihood(list()), "bnmf fit", class = "bnmf_error_input")
  expect_error(marginal_likelihood(fit, samples = 10), "samples", class = "bnmf_error_input")
  expect_error(marginal_likelihood(fit, point = "median"), "point", class = "bnmf_error_input")
})

test_that("Chib's estimate of a Poisson Gibbs fit equals quadrature on a tiny problem", {
  # F = 1, T = 2, K = 1, x = (3, 1), Gamma(2, 1) priors: log p(X) integrates
  # in closed form over h and by quadrature over w
  X <- matrix(c(3, 1), 1, 2)
  f <- function(w) {
    vapply(w, function(v) {
      stats::dgamma(v, 2, 1) * prod(v^X / factorial(X) * gamma(X + 2) / (v + 1)^(X + 2))
    }, numeric(1))
  }
  exact <- log(stats::integrate(f, 0, Inf, rel.tol = 1e-12)$value)
  set.seed(1)
  fit <- bnmf(X, rank = 1, likelihood = "poisson", method = "gibbs", prior = gamma_prior(2, 1),
              iter = 2000)
  m <- marginal_likelihood(fit, samples = 4000, progress = FALSE)
  expect_s3_class(m, "bnmf_marglik")
  expect_lt(abs(m$logml - exact), 0.05)
  expect_lt(abs(m$logml - exact), 4 * m$se + 0.01)
  # with K = 1 the auxiliary counts are the data: the H block is exact
  w <- fit$W[1, 1]
  expect_equal(m$blocks$log_density[2], sum(stats::dgamma(fit$H, 2 + X, 1 + w, log = TRUE)),
               tolerance = 1e-10)
  expect_output(print(m), "Chib")
  vb <- bnmf(X, rank = 1, likelihood = "poisson", method = "vb", iter = 50)
  expect_error(marginal_likelihood(vb), class = "bnmf_error_unsupported", regexp = "elbo")
})

test_that("Poisson Chib equals the exact sum over the splits of the counts at K = 2", {
  # 2 x 3 counts, K = 2, Gamma(2, 1) priors: given the split Z of every
  # count among the factors, H integrates in closed form and each column of
  # W through the Dirichlet of its shares and a 1-D integral over its sum;
  # log p(X) is the sum over all 48 splits
  X <- matrix(c(2, 1, 0, 3, 1, 0), 2)
  exact <- exact_pois_logml(X, K = 2, a = 2, b = 1, c = 2, d = 1)
  # K = 1 reduces to the quadrature of the test above
  f1 <- function(w) vapply(w, function(v) {
    stats::dgamma(v, 2, 1) * prod(v^c(3, 1) / factorial(c(3, 1)) * gamma(c(3, 1) + 2) / (v + 1)^(c(3, 1) + 2))
  }, numeric(1))
  expect_equal(exact_pois_logml(matrix(c(3, 1), 1), 1, 2, 1, 2, 1),
               log(stats::integrate(f1, 0, Inf, rel.tol = 1e-12)$value), tolerance = 1e-8)
  skip_on_cran()
  set.seed(2)
  fit <- bnmf(X, rank = 2, likelihood = "poisson", method = "gibbs", prior = gamma_prior(2, 1),
              iter = 3000)
  m <- marginal_likelihood(fit, samples = 3000, progress = FALSE)
  expect_match(m$blocks$block[1:2], "^W\\[")
  expect_identical(m$blocks$block[3], "H | W")
  expect_lt(abs(m$logml - exact), 0.05)
  expect_lt(abs(m$logml - exact), 4 * m$se)
  # the transposed counts (the first blocks are then rows of H) have the
  # same evidence under the swapped priors
  set.seed(3)
  fit_t <- bnmf(t(X), rank = 2, likelihood = "poisson", method = "gibbs",
                prior = gamma_prior(2, 1), iter = 3000)
  mt <- marginal_likelihood(fit_t, samples = 3000, progress = FALSE)
  expect_match(mt$blocks$block[1:2], "^H\\[")
  expect_lt(abs(mt$logml - exact), 0.05)
  expect_lt(abs(mt$logml - exact), 4 * mt$se)
  # without the orbit average the estimate is unbiased too, with a larger se
  set.seed(4)
  mo <- marginal_likelihood(fit, samples = 3000, progress = FALSE, orbit = FALSE)
  expect_lt(abs(mo$logml - exact), 4 * mo$se)
})

test_that("Poisson Chib warns when a block's ESS is small", {
  skip_on_cran()
  set.seed(5)
  W <- matrix(rgamma(12 * 2, 1, 1), 12)
  H <- matrix(rgamma(2 * 8, 2, 0.5), 2)
  X <- matrix(rpois(96, W %*% H), 12)
  fit <- bnmf(X, rank = 5, likelihood = "poisson", method = "gibbs", iter = 2000)
  # far above the rank of the counts, with few samples, some block's
  # average is decided by few draws: the estimate says it cannot be trusted
  expect_warning(marginal_likelihood(fit, samples = 300, progress = FALSE),
                 class = "bnmf_warning_chib_ess")
})

test_that("Gaussian Chib warns when a block's ESS is small, not at the true rank", {
  skip_on_cran()
  set.seed(3)
  X <- abs(matrix(rexp(30), 30) %*% matrix(rexp(10), 1) + matrix(rnorm(300, sd = 0.3), 30))
  # three factors above the rank of the data, few samples: the blocks of the
  # weak factors' rows of H rest on a few draws
  fit <- bnmf(X, rank = 4, prior = exponential(1), iter = 500, progress = FALSE)
  set.seed(1)
  w <- expect_warning(ml <- marginal_likelihood(fit, samples = 300, progress = FALSE),
                      class = "bnmf_warning_chib_ess")
  low <- which.min(ml$blocks$ess)
  expect_lt(ml$blocks$ess[low], 10)
  # the warning names the weakest block
  expect_match(conditionMessage(w), ml$blocks$block[low], fixed = TRUE)
  # at the true rank every block is well sampled: no warning
  fit1 <- bnmf(X, rank = 1, prior = exponential(1), iter = 500, progress = FALSE)
  expect_no_warning(ml1 <- marginal_likelihood(fit1, samples = 300, progress = FALSE))
  expect_gt(min(ml1$blocks$ess), 100)
})
