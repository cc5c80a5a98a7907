# The Poisson model against exact answers on F = 1, T = 2, K = 1
# (pois_exact_tiny() in helper-poisson.R: 1-D quadrature after the analytic
# Poisson-Gamma integral over H), and the ELBO against an independent
# computation.

pois_tiny <- list(
  list(x = c(3, 0), a = 2, b = 1.5, c = 1.5, d = 2),
  list(x = c(5, NA), a = 1.5, b = 1, c = 2, d = 1)
)

test_that("the quadrature reference is exact (self-checks)", {
  # (1) over all data sets the evidence sums to 1 and the posterior means
  # average to the prior means (small prior means so that x1, x2 <= 20
  # carries all but 1e-9 of the mass)
  a <- 2; b <- 4; c <- 2; d <- 4
  g <- as.matrix(expand.grid(0:20, 0:20))
  r <- t(apply(g, 1, function(x) {
    e <- pois_exact_tiny(x, a, b, c, d)
    c(exp(e$logpx), e$W, e$H[1L], e$WH[2L])
  }))
  expect_equal(sum(r[, 1L]), 1, tolerance = 1e-9)
  expect_equal(sum(r[, 1L] * r[, 2L]), a / b, tolerance = 1e-8)
  expect_equal(sum(r[, 1L] * r[, 3L]), c / d, tolerance = 1e-8)
  expect_equal(sum(r[, 1L] * r[, 4L]), a / b * c / d, tolerance = 1e-8)
  # (2) log p(X) the other way round: W integrated out analytically given
  # H, p(X | H) = Gamma(a + x.) / Gamma(a) b^a prod H_t^x_t / (b + H1 + H2)^(a + x.)
  # / prod x_t!, then a 2-D integral over H by nested quadrature
  p <- pois_tiny[[1L]]
  x <- p$x
  lpxh <- function(h1, h2) {
    lgamma(p$a + sum(x)) - lgamma(p$a) + p$a * log(p$b) + x[1] * log(h1) + x[2] * log(h2) -
      (p$a + sum(x)) * log(p$b + h1 + h2) - sum(lfactorial(x)) +
      stats::dgamma(h1, p$c, p$d, log = TRUE) + stats::dgamma(h2, p$c, p$d, log = TRUE)
  }
  inner <- function(h1) vapply(h1, function(v) stats::integrate(function(h2) exp(lpxh(v, h2)),
                                                                0, Inf, rel.tol = 1e-11)$value,
                               numeric(1))
  lp2 <- log(stats::integrate(inner, 0, Inf, rel.tol = 1e-10)$value)
  e <- pois_exact_tiny(x, p$a, p$b, p$c, p$d)
  expect_equal(e$logpx, lp2, tolerance = 1e-8)
  expect_lt(e$rel_error, 1e-10)
})

# A chain of the Gibbs sampler through the internal hook: n draws, one sweep
# apart, after a burn-in.
pois_tiny_chain <- function(p, n, burnin = 500, seed = 1) {
  withr::local_seed(seed)
  sweeps <- pois_hook("pois_gibbs_sweeps")
  X <- matrix(p$x, 1, 2)
  prior <- list(a = p$a, b = p$b, c = p$c, d = p$d)
  s <- sweeps(X, list(W = matrix(p$a / p$b, 1, 1), H = matrix(p$c / p$d, 1, 2)), prior, burnin)
  out <- matrix(NA_real_, n, 3L, dimnames = list(NULL, c("W", "H1", "H2")))
  for (i in seq_len(n)) {
    s <- sweeps(X, s, prior, 1)
    out[i, ] <- c(s$W, s$H)
  }
  out
}

pois_tiny_z <- function(est, draws, ex) {
  w <- draws[, "W"]
  h <- draws[, c("H1", "H2")]
  f <- list(W = w, H1 = h[, 1], H2 = h[, 2], WH1 = w * h[, 1], WH2 = w * h[, 2],
            W2 = w^2, H1sq = h[, 1]^2, WH1sq = (w * h[, 1])^2)
  ref <- c(W = ex$W, H1 = ex$H[1], H2 = ex$H[2], WH1 = ex$WH[1], WH2 = ex$WH[2],
           W2 = ex$W2, H1sq = ex$H2[1], WH1sq = ex$WH2[1])
  se <- vapply(f, batch_se, numeric(1))
  if (is.null(est)) est <- vapply(f, mean, numeric(1))
  nm <- intersect(names(est), names(ref))
  (est[nm] - ref[nm]) / se[nm]
}

test_that("Poisson Gibbs posterior moments equal quadrature within Monte Carlo error", {
  skip_on_cran()
  for (i in seq_along(pois_tiny)) {
    p <- pois_tiny[[i]]
    ex <- pois_exact_tiny(p$x, p$a, p$b, p$c, p$d)
    draws <- pois_tiny_chain(p, n = 40000, seed = 20 + i)
    z <- pois_tiny_z(NULL, draws, ex)
    # 8 moments, batch means over 50 batches: |z| < 4.5
    expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
  }
})

test_that("a Poisson Gibbs fit reports the exact posterior means", {
  skip_on_cran()
  p <- pois_tiny[[1L]]
  ex <- pois_exact_tiny(p$x, p$a, p$b, p$c, p$d)
  X <- matrix(p$x, 1, 2)
  withr::local_seed(31)
  fit <- bnmf(X, rank = 1, likelihood = "poisson", method = "gibbs",
              prior = list(W = gamma_prior(p$a, p$b), H = gamma_prior(p$c, p$d)),
              iter = 41000, burnin = 1000, progress = FALSE)
  expect_s3_class(fit, "bnmf_poisson")
  fa <- factors(fit)
  est <- c(W = fa$W[1, 1], H1 = fa$H[1, 1], H2 = fa$H[1, 2],
           WH1 = fitted(fit)[1, 1], WH2 = fitted(fit)[1, 2])
  # the Monte Carlo error of 40000 draws of the same sampler (a chain of the
  # hook of the same length)
  z <- pois_tiny_z(est, pois_tiny_chain(p, n = 40000, seed = 32), ex)
  expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
  # the masks of sparsity = "none" are all 1
  m <- masks(fit)
  expect_equal(unname(m$W), matrix(1, 1, 1))
  expect_equal(unname(m$H), matrix(1, 1, 2))
})

# ELBO of mean-field VB with Gamma q(W), q(H) and the optimal multinomial
# q(Z) given them (written here independently): with
# L_ftk = E[log W_fk] + E[log H_kt] = digamma(nu) - log(rho) for both,
#   ELBO = sum_{ft obs} [ X_ft log sum_k exp(L_ftk) - log X_ft! ]
#          - sum_{ft obs} sum_k E[W_fk] E[H_kt]
#          - KL(q(W) || p(W)) - KL(q(H) || p(H)).
gamma_kl <- function(nu, rho, a, b) {
  (nu - a) * digamma(nu) - lgamma(nu) + lgamma(a) + a * (log(rho) - log(b)) +
    nu * (b - rho) / rho
}

pois_elbo_r <- function(X, q, prior) {
  obs <- !is.na(X)
  K <- ncol(q$shape_W)
  LW <- digamma(q$shape_W) - log(q$rate_W)
  LH <- digamma(q$shape_H) - log(q$rate_H)
  EW <- q$shape_W / q$rate_W
  EH <- q$shape_H / q$rate_H
  lse <- matrix(0, nrow(X), ncol(X))
  m <- outer(LW[, 1], LH[1, ], "+")
  for (k in seq_len(K)) m <- pmax(m, outer(LW[, k], LH[k, ], "+"))
  for (k in seq_len(K)) lse <- lse + exp(outer(LW[, k], LH[k, ], "+") - m)
  lse <- m + log(lse)
  sum((X * lse - lfactorial(X))[obs]) - sum((EW %*% EH)[obs]) -
    sum(gamma_kl(q$shape_W, q$rate_W, prior$a, prior$b)) -
    sum(gamma_kl(q$shape_H, q$rate_H, prior$c, prior$d))
}

test_that("pois_vb_elbo() equals the ELBO computed independently", {
  elbo_fn <- pois_hook("pois_vb_elbo")
  withr::local_seed(41)
  prior <- list(a = 1.3, b = 0.7, c = 0.9, d = 1.1)
  for (K in 1:3) {
    X <- matrix(rpois(5 * 4, 2), 5, 4)
    X[2, 3] <- NA
    q <- list(shape_W = matrix(rgamma(5 * K, 2) + 0.2, 5, K),
              rate_W = matrix(rgamma(5 * K, 2) + 0.2, 5, K),
              shape_H = matrix(rgamma(K * 4, 2) + 0.2, K, 4),
              rate_H = matrix(rgamma(K * 4, 2) + 0.2, K, 4))
    expect_equal(elbo_fn(X, q, prior), pois_elbo_r(X, q, prior), tolerance = 1e-10,
                 label = sprintf("pois_vb_elbo() with K = %d", K))
  }
})

test_that("the VB ELBO lies below the exact log p(X)", {
  elbo_fn <- pois_hook("pois_vb_elbo")
  withr::local_seed(42)
  for (p in pois_tiny) {
    ex <- pois_exact_tiny(p$x, p$a, p$b, p$c, p$d)
    X <- matrix(p$x, 1, 2)
    prior <- list(a = p$a, b = p$b, c = p$c, d = p$d)
    # any q: the bound holds everywhere
    for (r in 1:20) {
      q <- list(shape_W = matrix(rgamma(1, 2) + 0.1), rate_W = matrix(rgamma(1, 2) + 0.1),
                shape_H = matrix(rgamma(2, 2) + 0.1, 1), rate_H = matrix(rgamma(2, 2) + 0.1, 1))
      expect_lt(elbo_fn(X, q, prior), ex$logpx)
    }
    # the converged fit: below, and at the maximum of the ELBO (found here
    # by BFGS on the independent ELBO over the log parameters: a gap of 0.13
    # nats to log p(X)). bnmf() refuses a column with no observed entry, so
    # only the complete problem is fitted.
    if (anyNA(X)) next
    fit <- bnmf(X, rank = 1, likelihood = "poisson", method = "vb",
                prior = list(W = gamma_prior(p$a, p$b), H = gamma_prior(p$c, p$d)),
                iter = 5000, tol = 1e-12, progress = FALSE)
    e <- elbo(fit)
    last <- e[length(e)]
    expect_lt(last, ex$logpx)
    negf <- function(v) {
      v <- exp(v)
      -pois_elbo_r(X, list(shape_W = matrix(v[1]), rate_W = matrix(v[2]),
                           shape_H = matrix(v[3:4], 1), rate_H = matrix(v[5:6], 1)), prior)
    }
    opt <- stats::optim(rep(0, 6), negf, method = "BFGS",
                        control = list(reltol = 1e-14, maxit = 1000))
    expect_equal(last, -opt$value, tolerance = 1e-6)
    expect_true(all(diff(e) >= -1e-10 * abs(e[-1])))
  }
})

test_that("the Gibbs sampler's Gamma draws have the Gamma distribution", {
  skip_on_cran()
  # shape a + z: below 1 (the boost), 1 (the exponential ziggurat), above 1
  # from the table (z < 64) and beyond it; under both uniform generators
  cases <- rbind(c(0.3, 0), c(0.6, 0), c(1, 0), c(1, 1), c(1.5, 0), c(0.6, 3), c(1, 70),
                 c(2.5, 1e4))
  for (kind in c("Mersenne-Twister", "L'Ecuyer-CMRG")) {
    withr::local_seed(41, .rng_kind = kind)
    for (r in seq_len(nrow(cases))) {
      sh <- sum(cases[r, ])
      g <- .Call(C_pois_rgamma, 20000, cases[r, 1], cases[r, 2])
      info <- sprintf("%s, shape %g + %g", kind, cases[r, 1], cases[r, 2])
      expect_gt(suppressWarnings(stats::ks.test(g, "pgamma", sh))$p.value, 1e-3, label = info)
      # the mean and the variance within 4.5 standard errors
      expect_lt(abs(mean(g) - sh) / sqrt(sh / 20000), 4.5, label = info)
      expect_lt(abs(stats::var(g) - sh) / sqrt((6 * sh + 2 * sh^2) / 20000), 4.5, label = info)
    }
  }
  # the test has teeth: a shape off by 2% is found
  withr::local_seed(42)
  expect_lt(suppressWarnings(stats::ks.test(.Call(C_pois_rgamma, 20000, 2.55, 0), "pgamma",
                                            2.5))$p.value, 1e-3)
})

test_that("exp(E log z) of q's Gamma factors matches digamma() and exp() over their whole range", {
  # the VB sweeps take lgamma, digamma, the logs and exp of q's factors four
  # at a time; factors outside the vectorised range go one at a time
  set.seed(3)
  n <- 40001
  al <- c(exp(runif(n, log(1e-7), log(1e6))), 1, 2, 9.999999, 10, 1e-6, 5e-7, 1e300, 0.5, 3)
  be <- c(exp(runif(n, log(1e-8), log(1e8))), 1, 1, 1, 1, 1, 1, 1, 1e-310, 1e300)
  N <- length(al)
  L <- .Call(bnmf:::C_pois_vb_logmeans, al, be, as.double(c(N, 1)), FALSE)
  y <- digamma(al) - log(be)
  ref <- exp(y)
  ok <- is.finite(ref) & ref > 1e-300
  # exp() turns an absolute error in y into a relative one: a few ulps of
  # digamma(al) and log(be) (y is their difference), and digamma's series'
  # 1e-14 absolute error
  tol <- 2e-14 + 8 * .Machine$double.eps * (abs(digamma(al)) + abs(log(be)) + 1)
  expect_true(all(abs(L[ok] - ref[ok]) <= tol[ok] * ref[ok]))
  tiny <- !ok & is.finite(ref)
  expect_true(any(tiny))
  expect_true(all(abs(L[tiny] - ref[tiny]) <= 1e-300))
  expect_identical(L[!is.finite(ref)], ref[!is.finite(ref)])
  # every factor the same bits wherever it stands: the values shifted by one
  # place (other groups of four), and as an I x K matrix transposed
  L1 <- .Call(bnmf:::C_pois_vb_logmeans, al[-1], be[-1], as.double(c(N - 1, 1)), FALSE)
  expect_identical(L1, L[-1])
  M <- .Call(bnmf:::C_pois_vb_logmeans, al[1:40000], be[1:40000], as.double(c(2000, 20)), TRUE)
  expect_identical(M, as.double(t(matrix(L[1:40000], 2000, 20))))
})

test_that("the log likelihood's sum of x log r takes counts of 1 by products of mantissas, within its rounding", {
  # bnmf_xlog_sum() (linalg.c): a group of four counts of 1 multiplies the
  # rates' mantissas into four products (brought back into [1, 2) after 64
  # factors) and adds their exponents; one log of each product at the end.
  # Its rounding: a relative error of one ulp a factor in each product (so
  # an absolute error of one ulp a count in its log), and the summation's
  # ulps of the terms' magnitudes: at most u (n + 8 sum |terms|) here.
  xlog <- function(x, r) .Call(bnmf:::C_kl_loss, x, r)$xlog
  bound <- function(x, r) {
    t <- ifelse(x > 0, x * log(r), 0)
    2^-53 * (length(x) + 8 * sum(abs(t)))
  }
  set.seed(47)
  # counts of 1 over the whole range of normal rates: exponents up to +-1022,
  # runs of many products (4 x 64 x 6 counts and a tail of 3)
  r <- exp(runif(4 * 64 * 6 + 3, log(2.3e-308), log(1.7e308)))
  x <- rep(1, length(r))
  ref <- sum(x * log(r))
  expect_lte(abs(xlog(x, r) - ref), bound(x, r))
  # rates near 1 (terms near 0: the absolute error is what the sum keeps),
  # and rates of one sign of log only (no cancellation)
  for (r in list(1 + runif(5000, -1e-3, 1e-3), runif(5000, 1, 2), runif(5000, 1e-6, 1e-5))) {
    x <- rep(1, length(r))
    expect_lte(abs(xlog(x, r) - sum(log(r))), bound(x, r))
  }
  # counts of 1 mixed with larger counts and zeros (the groups with another
  # count take four logs), a subnormal rate where x = 1, rates of 0 and Inf
  # where x = 0 (no term)
  x <- sample(c(0, 1, 2, 7), 8003, TRUE, prob = c(0.05, 0.85, 0.07, 0.03))
  r <- rexp(8003) * 10
  x[c(5, 6, 20)] <- 0
  r[c(5, 6, 20)] <- c(1e-310, 0, Inf)
  x[9] <- 1
  r[9] <- 1e-310
  ref <- sum(ifelse(x > 0, x * log(r), 0))
  expect_lte(abs(xlog(x, r) - ref), bound(x, r))
  # all the groups of four by products: the same as one pass of log()
  x <- rep(1, 4096)
  r <- rgamma(4096, 0.5)
  expect_lte(abs(xlog(x, r) - sum(log(r))), bound(x, r))
})
