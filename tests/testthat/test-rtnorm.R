# Tests of the truncated normal sampler rtnorm() and of the internal helpers
# tn_moments() and tn_logdens() (src/truncnorm.c).
#
# Statistical tests use fixed seeds (set.seed() inside each test), so they are
# deterministic: a correct sampler passes them every time, and the threshold
# p > 1e-3 is far above what a wrong sampler produces with n = 20000 draws
# (a distribution off by a few percent anywhere gives KS p-values < 1e-10).

# ---- independent references (no code shared with src/truncnorm.c) --------

# CDF of N(mean, sd^2) truncated to [lower, upper], stable in both tails:
# on the right (a >= 0) through upper-tail log probabilities,
#   F(x) = (Q(a) - Q(z)) / (Q(a) - Q(b)),
# on the left (b <= 0) through lower-tail ones, directly otherwise.
ptn_ref <- function(x, mean, sd, lower, upper) {
  a <- (lower - mean) / sd
  b <- (upper - mean) / sd
  z <- pmin(pmax((x - mean) / sd, a), b)
  if (a >= 0) {
    lq <- function(t) pnorm(t, lower.tail = FALSE, log.p = TRUE)
    -expm1(lq(z) - lq(a)) / -expm1(lq(b) - lq(a))
  } else if (b <= 0) {
    lp <- function(t) pnorm(t, log.p = TRUE)
    exp(lp(z) - lp(b)) * -expm1(lp(a) - lp(z)) / -expm1(lp(a) - lp(b))
  } else {
    (pnorm(z) - pnorm(a)) / (pnorm(b) - pnorm(a))
  }
}

# Laplace's continued fraction t1(a) = a + 2/(a + 3/(a + 4/(a + ...))),
# evaluated forwards by the modified Lentz algorithm; the Mills ratio is
# R(a) = (1 - Phi(a)) / phi(a) = 1 / (a + 1 / t1(a)).
mills_t1_ref <- function(a, maxit = 5000L) {
  tiny <- 1e-300
  f <- a
  C <- f
  D <- 0
  for (j in seq_len(maxit)) {
    D <- 1 / (a + (j + 1) * D)
    C <- a + (j + 1) / C
    if (abs(C) < tiny) C <- tiny
    delta <- C * D
    f <- f * delta
    if (abs(delta - 1) < 1e-17) break
  }
  f
}

# Moments of N(-a, 1) truncated to [0, Inf) by quadrature in the offset
# u >= 0, whose density is proportional to exp(-a u - u^2 / 2): no
# cancellation, valid for any a.
tn_moments_quad <- function(a) {
  g <- function(u) exp(-a * u - u^2 / 2)
  scale <- 1 / max(a, 1)
  int <- function(h) {
    stats::integrate(function(u) h(u) * g(u), 0, Inf, rel.tol = 1e-13,
                     abs.tol = 0, subdivisions = 1000L)$value
  }
  z <- int(function(u) 1)
  e <- int(function(u) u) / z
  v <- int(function(u) (u - e)^2) / z
  c(mean = e, var = v)
}

ks_cases <- list(
  list(mean = -1000, sd = 1, lower = 0, upper = Inf),
  list(mean = 1000, sd = 1, lower = 0, upper = Inf),
  list(mean = 0, sd = 1, lower = 0, upper = Inf),
  list(mean = 0, sd = 1, lower = 5, upper = 5.1),
  list(mean = 0, sd = 1, lower = 30, upper = 31),
  list(mean = 0, sd = 1, lower = -31, upper = -30),
  list(mean = 0, sd = 1, lower = -0.1, upper = 0.1),
  list(mean = 0, sd = 1, lower = -3, upper = Inf),
  list(mean = 0, sd = 1, lower = 0.3, upper = 0.300001),
  list(mean = 0, sd = 1, lower = 5, upper = 5.0000001),
  list(mean = -3e-10, sd = 1e-10, lower = 0, upper = Inf),    # tiny sd, tail
  list(mean = 1, sd = 1e-10, lower = 0, upper = Inf),         # tiny sd
  list(mean = -2e10, sd = 1e10, lower = 0, upper = Inf),      # huge sd, tail
  list(mean = 0, sd = 1e10, lower = 0, upper = Inf),          # huge sd
  # every branch of the sampler and the edges between them
  list(mean = 0, sd = 1, lower = 0.65, upper = Inf),
  list(mean = 0, sd = 1, lower = 0.67, upper = Inf),
  list(mean = 0, sd = 1, lower = 1, upper = 10),
  list(mean = 0, sd = 1, lower = -Inf, upper = -0.7),
  list(mean = 0, sd = 1, lower = 0.2, upper = 3),
  list(mean = 0, sd = 1, lower = -3, upper = -0.2),
  list(mean = 0, sd = 1, lower = -2, upper = 4),
  list(mean = 0, sd = 1, lower = -1, upper = 0.5),
  list(mean = 0, sd = 1, lower = 0.5, upper = 2),
  list(mean = 0, sd = 1, lower = 0.6, upper = 1),
  list(mean = 0, sd = 1, lower = -0.9, upper = -0.5),
  list(mean = 0, sd = 1, lower = 0.65, upper = 1.14),
  list(mean = 0, sd = 1, lower = -1.14, upper = -0.65),
  list(mean = 0, sd = 1, lower = -Inf, upper = Inf),
  list(mean = 3, sd = 2, lower = -1, upper = 4)
)

test_that("rtnorm draws pass KS tests against the exact truncated CDF", {
  for (k in seq_along(ks_cases)) {
    p <- ks_cases[[k]]
    set.seed(100 + k)
    x <- rtnorm(20000, p$mean, p$sd, p$lower, p$upper)
    # compare on the scale of the interval/offset: t = (x - lower) / width
    # for bounded intervals (exact for narrow ones), x itself otherwise
    if (is.finite(p$lower) && is.finite(p$upper)) {
      w <- p$upper - p$lower
      t <- (x - p$lower) / w
      cdf <- function(t) ptn_ref(p$lower + t * w, p$mean, p$sd, p$lower, p$upper)
    } else {
      t <- x
      cdf <- function(t) ptn_ref(t, p$mean, p$sd, p$lower, p$upper)
    }
    pv <- ks_p(t, cdf)
    expect_gt(pv, 1e-3, label = sprintf(
      "KS p-value for mean = %g, sd = %g, [%g, %g]",
      p$mean, p$sd, p$lower, p$upper))
  }
})

test_that("rtnorm is exact far in the tail (mean / sd = -1e6)", {
  # x ~ N(-1e6, 1) | x >= 0: P(x > u) = exp(-(a u + u^2/2)) R(a + u) / R(a)
  # with a = 1e6; R(a + u) / R(a) = 1 + O(u / a) = 1 + O(1e-12) here.
  set.seed(7)
  a <- 1e6
  x <- rtnorm(20000, mean = -a, sd = 1)
  expect_true(all(x > 0))
  expect_gt(ks_p(x, function(u) -expm1(-(a * u + u^2 / 2))), 1e-3)
})

test_that("the one-sided tail [a, Inf) is exact for every a above 0.66", {
  # The draw of every Gibbs coordinate whose conditional mean lies more than
  # 0.66 sd below 0: rejection from an exponential proposal with Robert's
  # rate and two squeezes (bnmf.h). At a just above 0.66 all three ways to
  # decide (lower squeeze, upper squeeze, exp()) are common; from a = 64
  # the rate is a itself; at 1e200, a^2 overflows. Reference: the exact CDF
  # (ptn_ref) up to a = 1e4; beyond, x = u has P(x > u) =
  # exp(-(a u + u^2 / 2)) R(a + u) / R(a), with R(a + u) / R(a) = 1 +
  # O(u / a) = 1 + O(1 / a^2).
  for (a in c(0.6601, 0.8, 1, 1.5, 2.5, 4, 8, 30, 63.9, 64, 1e4, 1e9, 1e200)) {
    set.seed(round(1000 * log1p(a)))
    x <- rtnorm(20000, mean = -a, sd = 1)
    expect_true(all(x >= 0), label = paste("a =", a))
    cdf <- if (a <= 1e4) {
      function(u) ptn_ref(u, -a, 1, 0, Inf)
    } else {
      function(u) -expm1(-(a * u + u^2 / 2))
    }
    expect_gt(ks_p(x, cdf), 1e-3, label = sprintf("KS p-value at a = %g", a))
    if (a <= 30) {
      # the mean offset against quadrature, within 5 Monte Carlo standard
      # errors
      m <- tn_moments_quad(a)
      expect_lt(abs(mean(x) - m[["mean"]]), 5 * sqrt(m[["var"]] / 20000),
                label = sprintf("mean at a = %g", a))
    }
  }
})

test_that("every draw lies inside [lower, upper]", {
  set.seed(11)
  lo <- c(0, 5, 30, -31, -0.1, -3, 0.3, 5, 1000, -Inf, -Inf, 0, 0)
  up <- c(Inf, 5.1, 31, -30, 0.1, Inf, 0.300001, 5.0000001, Inf, -1000, Inf, 1e-300, Inf)
  mu <- c(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, -1e300)
  s <- c(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1e-10)
  n <- 5000 * length(lo)
  x <- rtnorm(n, mu, s, lo, up)
  expect_true(all(is.finite(x)))
  expect_true(all(x >= rep_len(lo, n) & x <= rep_len(up, n)))
  # hot path of the Gibbs sampler: random means, [0, Inf)
  y <- rtnorm(1e5, mean = rnorm(1e5, sd = 10), sd = rexp(1e5))
  expect_true(all(y >= 0 & is.finite(y)))
})

test_that("sample moments agree with tn_moments() within 5 standard errors", {
  cases <- list(c(0, 1), c(-1000, 1), c(-1e6, 1), c(2, 0.5), c(-1, 3),
                c(-3e-10, 1e-10), c(1e10, 1e10))
  for (k in seq_along(cases)) {
    m <- cases[[k]][1]
    s <- cases[[k]][2]
    set.seed(200 + k)
    n <- 20000
    x <- rtnorm(n, m, s)
    ref <- tn_moments(m, s)
    se_mean <- sqrt(ref$var / n)
    se_var <- stats::sd((x - mean(x))^2) / sqrt(n)
    expect_lt(abs(mean(x) - ref$mean), 5 * se_mean)
    expect_lt(abs(stats::var(x) - ref$var), 5 * se_var)
  }
})

test_that("tn_moments() matches numerical integration on moderate cases", {
  for (m in c(-4, -2, -0.5, 0, 1, 3)) {
    for (s in c(0.5, 1, 3)) {
      lz <- pnorm(0, m, s, lower.tail = FALSE, log.p = TRUE)
      f <- function(x) exp(dnorm(x, m, s, log = TRUE) - lz)
      int <- function(h) {
        stats::integrate(function(x) h(x) * f(x), 0, Inf, rel.tol = 1e-13,
                         abs.tol = 0, subdivisions = 1000L)$value
      }
      e <- int(identity)
      v <- int(function(x) (x - e)^2)
      got <- tn_moments(m, s)
      expect_lt(abs(got$mean / e - 1), 1e-8, label = sprintf("mean at (%g, %g)", m, s))
      expect_lt(abs(got$var / v - 1), 1e-8, label = sprintf("var at (%g, %g)", m, s))
    }
  }
})

test_that("tn_moments() is exact in the far tail", {
  # quadrature in the offset (independent of the C code), a = -mean/sd
  for (a in c(3, 5, 10, 30, 100)) {
    ref <- tn_moments_quad(a)
    got <- tn_moments(-a, 1)
    expect_lt(abs(got$mean / ref[["mean"]] - 1), 1e-10)
    expect_lt(abs(got$var / ref[["var"]] - 1), 1e-10)
  }
  # the mean from the continued fraction written above: E = sd / t1(a)
  for (a in c(3, 8, 30, 300)) {
    expect_lt(abs(tn_moments(-2 * a, 2)$mean / (2 / mills_t1_ref(a)) - 1), 1e-14)
  }
  # asymptotic series of the Mills ratio, R(a) = 1/a (1 - 1/a^2 + 3/a^4 - ...):
  #   E / sd   = 1/a - 2/a^3 + 10/a^5 - 74/a^7 + O(a^-9)
  #   Var/sd^2 = 1/a^2 - 6/a^4 + 50/a^6 + O(a^-8)
  for (a in c(1e3, 1e6, 1e100)) {
    for (s in c(1, 1e-50, 1e50)) {
      e <- s * (1 / a - 2 / a^3 + 10 / a^5 - 74 / a^7)
      v <- s^2 * (1 / a^2 - 6 / a^4 + 50 / a^6)
      got <- tn_moments(-a * s, s)
      expect_lt(abs(got$mean / e - 1), 1e-14)
      expect_lt(abs(got$var / v - 1), 1e-13)
    }
  }
  # positive mean far from 0: the untruncated moments
  got <- tn_moments(c(1e3, 1e6), 1)
  expect_equal(got$mean, c(1e3, 1e6), tolerance = 1e-15)
  expect_equal(got$var, c(1, 1), tolerance = 1e-15)
})

test_that("the tail a >= 3: moments, VB entropy and log Mills ratio on a dense grid", {
  # For a = -mean / sd >= 3 the C code evaluates U(a) = a (lambda - a) and
  # V(a) = a^2 Var / sd^2 by polynomials in 3 / a on 8 pieces (src/truncnorm.c,
  # section 6). Reference: Laplace's continued fraction, evaluated here
  # backwards from 4000 terms (at least 60 times what double precision needs
  # at a = 3): t_{k-1} = a + k / t_k, lambda - a = 1 / t_1 and
  # Var / sd^2 = (a + 4 / t_2 - 3 / t_3) / (t_1^2 t_2), sums of positive terms.
  # The grid is dense near a = 3, takes in every piece's ends (a = 24 / p)
  # and reaches far out. Allowance: the polynomials' 2.8e-16 (U) and 4e-16
  # (V) against 50-digit values, a few roundings on each side: 1.5e-15.
  cf <- function(a) {
    t <- a
    for (k in 4000:4) t <- a + k / t
    t2 <- a + 3 / t
    t1 <- a + 2 / t2
    list(u = 1 / t1, f = (a + 4 / t2 - 3 / t) / (t1 * t1 * t2))
  }
  ends <- 24 / (1:8)
  a <- sort(c(seq(3, 12, by = 1 / 256), ends, ends * (1 + 1e-15), ends[-8] * (1 - 1e-15),
              12 * 1.01^(1:700)))
  ref <- cf(a)
  for (s in c(1e-3, 1, 7.5e2)) {
    got <- tn_moments(-a * s, s)
    expect_lte(max(abs(got$mean / (s * ref$u) - 1)), 1.5e-15)
    expect_lte(max(abs(got$var / (s^2 * ref$f) - 1)), 1.5e-15)
    # VB's moments and entropy (gauss_cond.c), the entropy written without
    # cancellation: H = 1/2 + log sd - log lambda + a (lambda - a) / 2
    v <- .Call(bnmf:::C_tn_vb, as.double(-a * s), as.double(s))
    expect_lte(max(abs(v$mean / (s * ref$u) - 1)), 1.5e-15)
    expect_lte(max(abs(v$var / (s^2 * ref$f) - 1)), 1.5e-15)
    h_ref <- 0.5 + log(s) - log(a + ref$u) + 0.5 * a * ref$u
    expect_lte(max(abs(v$entropy - h_ref) / pmax(1, abs(h_ref))), 1e-14)
  }
  # the log Mills ratio log R(a) = -log(a + U / a), from the same polynomials
  # for a >= 5, through the log density at 0: log f(0) = -log R(a) - log sd
  far <- a >= 5
  lr <- log(a[far] + ref$u[far])
  expect_lte(max(abs(tn_logdens(0, -a[far], 1) - lr) / lr), 1e-15)
})

test_that("tn_moments() never returns NaN or negative variances", {
  m <- c(-1e300, -1e10, -50, -3, -2.999, 0, 1e-300, 1e10, 1e300)
  s <- c(1e-300, 1e-10, 1, 1e10, 1e300)
  g <- expand.grid(m = m, s = s)
  got <- tn_moments(g$m, g$s)
  expect_equal(nrow(got), nrow(g))
  expect_false(anyNA(got$mean))
  expect_false(anyNA(got$var))
  expect_true(all(got$mean >= 0 & got$var >= 0))
  expect_named(got, c("mean", "var"))
})

test_that("tn_logdens() integrates to 1 and matches dnorm/pnorm", {
  for (p in list(c(0, 1), c(2, 0.5), c(-3, 1), c(-1000, 1), c(5, 10))) {
    m <- p[1]
    s <- p[2]
    hi <- if (m < 0) 50 * s^2 / -m else m + 50 * s
    tot <- stats::integrate(function(x) exp(tn_logdens(x, m, s)), 0, hi,
                            rel.tol = 1e-12)$value
    expect_equal(tot, 1, tolerance = 1e-10)
  }
  x <- c(0, 0.1, 1, 2.5, 7)
  for (m in c(-2, 0, 3)) {
    for (s in c(0.5, 2)) {
      ref <- dnorm(x, m, s, log = TRUE) - pnorm(0, m, s, lower.tail = FALSE, log.p = TRUE)
      expect_equal(tn_logdens(x, m, s), ref, tolerance = 1e-12)
    }
  }
  expect_identical(tn_logdens(c(-1, -1e-300, -Inf), 1, 1), rep(-Inf, 3))
  expect_identical(tn_logdens(Inf, c(-1, 1), 1), rep(-Inf, 2))
})

test_that("tn_logdens() is exact in the far tail", {
  # log f(x) = -(a u + u^2/2) - log R(a), u = x / sd, a = -mean / sd
  for (a in c(30, 300)) {
    lr <- -log(a + 1 / mills_t1_ref(a))
    expect_equal(tn_logdens(0, -a, 1), -lr, tolerance = 1e-14)
  }
  a <- 1e6
  u <- c(0, 1e-7, 1e-6, 5e-6)
  lr <- -log(a) + log1p(-1 / a^2 + 3 / a^4)
  for (s in c(1, 1e-3, 1e3)) {
    ref <- -(a * u + u^2 / 2) - lr - log(s)
    expect_equal(tn_logdens(u * s, -a * s, s), ref, tolerance = 1e-13)
  }
})

test_that("rtnorm recycles its parameters like rnorm", {
  mu <- c(-5, 5, 0)
  s <- c(1, 2, 3, 4)
  lo <- c(0, -1, 1, -Inf, 0.5)
  up <- c(1.5, 2, Inf, 3, 1.2, 4)
  n <- 60
  set.seed(3)
  x <- rtnorm(n, mu, s, lo, up)
  expect_length(x, n)
  i <- seq_len(n) - 1L
  expect_true(all(x >= lo[i %% 5 + 1] & x <= up[i %% 6 + 1]))
  # one call with vectors = n calls with scalars, in order
  set.seed(3)
  y <- vapply(seq_len(n), function(k) {
    rtnorm(1, mu[(k - 1) %% 3 + 1], s[(k - 1) %% 4 + 1],
           lo[(k - 1) %% 5 + 1], up[(k - 1) %% 6 + 1])
  }, numeric(1))
  expect_identical(x, y)
  # length(n) > 1 means length(n); n = 0 gives numeric(0)
  expect_length(rtnorm(c(4, 1, 7)), 3)
  expect_identical(rtnorm(0), numeric(0))
  expect_identical(rtnorm(0, mean = numeric(0)), numeric(0))
  expect_length(rtnorm(5L, mean = 1:5), 5)
})

test_that("set.seed reproduces the draws", {
  set.seed(42)
  x <- rtnorm(100, mean = -2:2, lower = -1, upper = 3)
  set.seed(42)
  y <- rtnorm(100, mean = -2:2, lower = -1, upper = 3)
  expect_identical(x, y)
  z <- rtnorm(100, mean = -2:2, lower = -1, upper = 3)
  expect_false(identical(x, z))
})

test_that("bad inputs give classed errors naming the argument", {
  bad <- function(expr, arg) {
    expect_error(expr, class = "bnmf_error_input", regexp = paste0("`", arg, "`"))
  }
  bad(rtnorm(-1), "n")
  bad(rtnorm(1.5), "n")
  bad(rtnorm(NA), "n")
  bad(rtnorm("3"), "n")
  bad(rtnorm(Inf), "n")
  bad(rtnorm(numeric(0)), "n")
  bad(rtnorm(1, mean = NA), "mean")
  bad(rtnorm(1, mean = "0"), "mean")
  bad(rtnorm(1, mean = Inf), "mean")
  bad(rtnorm(1, mean = numeric(0)), "mean")
  bad(rtnorm(1, sd = 0), "sd")
  bad(rtnorm(1, sd = -1), "sd")
  bad(rtnorm(1, sd = Inf), "sd")
  bad(rtnorm(1, sd = NaN), "sd")
  bad(rtnorm(1, sd = c(1, 2, -3)), "sd")
  bad(rtnorm(1, lower = NA), "lower")
  bad(rtnorm(1, lower = TRUE), "lower")
  bad(rtnorm(1, upper = NA_real_), "upper")
  bad(rtnorm(1, upper = list(1)), "upper")
  bad(rtnorm(1, lower = 1, upper = 1), "lower")
  bad(rtnorm(1, lower = 2, upper = 1), "lower")
  bad(rtnorm(1, lower = Inf), "lower")
  bad(rtnorm(1, lower = -Inf, upper = -Inf), "lower")
  bad(rtnorm(6, lower = c(0, 1), upper = c(2, 3, 1)), "lower")
  bad(tn_moments(0, 0), "sd")
  bad(tn_moments(NA, 1), "mean")
  bad(tn_logdens("a", 0, 1), "x")
})

test_that("a non-finite mean or sd is named with its element, in long vectors too", {
  # the check scans blocks of 1024 values; offenders first, last and on
  # both sides of a block's edge
  n <- 5000
  for (pos in c(1, 1023, 1024, 1025, 2048, 2049, n)) {
    for (bad_value in c(NA, NaN, Inf, -Inf)) {
      m <- rep(0.5, n)
      m[pos] <- bad_value
      # and a later offender of the other kind, which must not be the one named
      if (pos < n) m[n] <- if (is.na(bad_value)) Inf else NA
      what <- if (is.na(bad_value)) "must not contain NA" else "must be finite"
      expect_error(rtnorm(n, mean = m), class = "bnmf_error_input",
                   regexp = sprintf("`mean` %s \\(element %d\\)", what, pos))
      expect_identical(.Call(C_first_nonfinite, m), as.double(pos))
    }
  }
  expect_identical(.Call(C_first_nonfinite, rep(-1e308, 3000)), 0)
  expect_identical(.Call(C_first_nonfinite, numeric()), 0)
  expect_error(rtnorm(2, sd = c(1, Inf)), class = "bnmf_error_input",
               regexp = "`sd` must be finite \\(element 2\\)")
  expect_error(.Call(C_first_nonfinite, 1L), "double")
})

test_that("the C entry points check their arguments", {
  expect_error(.Call(C_rtnorm, 1, "a", 1, 0, Inf), "mean")
  expect_error(.Call(C_rtnorm, c(1, 2), 0, 1, 0, Inf), "n")
  expect_error(.Call(C_rtnorm, -1, 0, 1, 0, Inf), "n")
  expect_error(.Call(C_rtnorm, 1, 0, -1, 0, Inf), "sd")
  expect_error(.Call(C_rtnorm, 1, 0, 1, 1, 0), "lower")
  expect_error(.Call(C_rtnorm, 1, numeric(0), 1, 0, Inf), "mean")
  expect_error(.Call(C_tn_moments, 1L, 1), "mean")
  expect_error(.Call(C_tn_logdens, 0, 0, "1"), "sd")
  expect_identical(.Call(C_tn_logdens, 0, numeric(0), 1), numeric(0))
})

test_that("rtnorm uses only the uniform generator: normal.kind plays no part", {
  k <- RNGkind()
  withr::defer(RNGkind(k[1], k[2], k[3]))   # withr alone may not restore kinds
  # every branch, the wide one (normal rejection) included
  mu <- c(0, 0, 0, -3, 2, 0.3)
  lo <- c(-1, 0, -Inf, 0, 0, 0.2)
  up <- c(Inf, Inf, -0.1, Inf, 0.5, 0.21)
  a <- withr::with_seed(5, rtnorm(600, mu, 1, lo, up), .rng_normal_kind = "Inversion")
  b <- withr::with_seed(5, rtnorm(600, mu, 1, lo, up), .rng_normal_kind = "Box-Muller")
  d <- withr::with_seed(5, rtnorm(600, mu, 1, lo, up), .rng_normal_kind = "Kinderman-Ramage")
  expect_identical(a, b)
  expect_identical(a, d)
})

test_that("log Q, the hazard and VB's moments from erfcx match Rmath's pnorm", {
  # bnmf_logq_hazard() and bnmf_tn_pos_vb() (src/truncnorm.c,
  # src/gauss_cond.c) compute log Q(a), lambda(a) = phi(a) / Q(a) and VB's
  # truncated-normal moments and entropy from one scaled complementary error
  # function instead of pnorm(). References: Rmath's pnorm(log.p = TRUE) for
  # log Q on a dense grid from -37.5 to 40 and far beyond (below -37.5,
  # Q(-a) is subnormal in both); phi / Q from the same for lambda on
  # [-37, 5], where both carry the rounding of a^2 / 2 inside an exp (hence
  # the a^2 / 2 ulps), and Laplace's continued fraction (mills_t1_ref) for
  # a > 5, where exp(dnorm - log Q) loses digits.
  tn_vb <- function(mu, sd) .Call(bnmf:::C_tn_vb, as.double(mu), as.double(sd))
  a <- c(seq(-37.5, 40, by = 1 / 1024), 40 * 1.01^(1:1500))
  r <- tn_vb(-a, 1)
  lq <- pnorm(a, lower.tail = FALSE, log.p = TRUE)
  expect_lte(max(abs(r$logq - lq) / abs(lq)), 1e-14)
  mid <- a >= -37 & a <= 5
  lam <- exp(dnorm(a[mid], log = TRUE) - lq[mid])
  expect_lte(max(abs(r$lambda[mid] - lam) / lam /
                   (1e-14 + a[mid]^2 / 2 * .Machine$double.eps)), 1)
  near <- abs(a[mid]) <= 5
  expect_lte(max(abs(r$lambda[mid][near] - lam[near]) / lam[near]), 1e-14)
  far <- a > 5 & a < 1e4
  lam_cf <- vapply(a[far], function(x) x + 1 / mills_t1_ref(x), 0)
  expect_lte(max(abs(r$lambda[far] - lam_cf) / lam_cf), 1e-14)
  # VB's moments and entropy against the pnorm-based formulas, for a < 3
  # (the erfcx branch) and several scales: E = sd (lambda - a),
  # Var = sd^2 (1 - lambda (lambda - a)), whose relative error is that of
  # lambda times the condition number kappa = lambda |2 lambda - a| / (1 -
  # lambda (lambda - a)) (153 at a = 2.94, where both formulas lose digits:
  # against 40-digit values the erfcx one is off by 3e-14 there, the pnorm
  # one by 1.8e-13), and H = log(sqrt(2 pi e) sd) + log Q + a lambda / 2
  # (absolute error).
  b <- a[a >= -37 & a < 3]
  lqb <- pnorm(b, lower.tail = FALSE, log.p = TRUE)
  lamb <- exp(dnorm(b, log = TRUE) - lqb)
  for (s in c(1e-3, 1, 7.5e2)) {
    v <- tn_vb(-b * s, s)
    m_ref <- ifelse(b <= 0, -b * s + s * lamb, s * (lamb - b))
    expect_lte(max(abs(v$mean - m_ref) / m_ref), 1e-13)
    f <- 1 - lamb * (lamb - b)
    v_ref <- s^2 * f
    kappa <- lamb * abs(2 * lamb - b) / f
    expect_lte(max(abs(v$var - v_ref) / v_ref / (1 + kappa)), 1e-14)
    h_ref <- 0.5 * log(2 * pi * exp(1)) + log(s) + lqb + 0.5 * b * lamb
    expect_lte(max(abs(v$entropy - h_ref) / pmax(1, abs(h_ref))), 1e-14)
  }
  # a < -12: phi(a) < 2.2e-32 leaves the mean mu and the variance sd^2
  # exactly (VB then skips its exp()); the entropy is log(sqrt(2 pi e) sd)
  # up to a term below 2^-100, also where that sum is near 0 (scale s0)
  s0 <- exp(-0.5 * log(2 * pi * exp(1)))
  for (s in c(1e-3, 1, 7.5e2, s0)) {
    bf <- c(seq(-38.4, -12.001, length.out = 500), -12 - 2^-40)
    v <- tn_vb(-bf * s, s)
    expect_identical(v$mean, -bf * s)
    expect_identical(v$var, rep(s * s, length(bf)))
    h_ref <- 0.5 * log(2 * pi * exp(1)) + log(s)
    expect_lte(max(abs(v$entropy - h_ref)), 4 * .Machine$double.eps * max(1, abs(h_ref)))
  }
  # the far tails: lambda(a) ~ a, log Q(a) ~ -a^2 / 2; below -38.5, Q = 1
  expect_equal(tn_vb(-c(1e9, 1e200), 1)$lambda, c(1e9, 1e200), tolerance = 1e-15)
  expect_equal(tn_vb(50, 1)$logq, 0)
  expect_true(all(is.nan(unlist(tn_vb(c(NA, -Inf, Inf), 1)))))
  expect_true(all(is.nan(unlist(tn_vb(1, c(0, -1, Inf))))))
})
