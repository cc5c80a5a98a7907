# Tests of the exact N(0, 1) generator of src/normal.c (the ziggurat on R's
# uniform generator), which the samplers use instead of norm_rand().
#
# Statistical tests use fixed seeds, so they are deterministic.  Their
# thresholds come from the Monte Carlo error of each statistic under a correct
# generator: KS p-values > 1e-3; binomial counts and moments within 4 standard
# deviations of the estimator, whose variance is known exactly (no estimated
# standard errors).  A wrong table, tail or bit split moves them by many
# standard deviations (see the comments at each test).

norm_std <- function(n) .Call(C_norm_std, n)
kinds_at_start <- RNGkind()

# The abscissae r = x_1 > ... > x_127 > x_128 = 0 of the 128-block ziggurat,
# computed here from the published r (Marsaglia and Tsang 2000) by the
# recursion f(x_{i+1}) = f(x_i) + v / x_i, independently of the C code.
zig_ref <- function(r = 3.442619855899, N = 128L) {
  v <- r * exp(-r^2 / 2) + sqrt(2 * pi) * stats::pnorm(r, lower.tail = FALSE)
  x <- numeric(N)
  x[1] <- r
  f <- exp(-r^2 / 2)
  for (i in 1:(N - 2L)) {
    f <- f + v / x[i]
    x[i + 1] <- sqrt(-2 * log(f))
  }
  list(r = r, v = v, x = x)                   # x[N] = 0
}

test_that("the ziggurat's table solves its defining equations", {
  # Marsaglia and Tsang (2000), 128 blocks
  expect_zig_table(.Call(C_norm_table), 128L, r = 3.442619855899, v = 9.91256303526217e-3,
                   f = function(x) exp(-x^2 / 2),
                   tail = function(r) sqrt(2 * pi) * stats::pnorm(r, lower.tail = FALSE),
                   x_ref = zig_ref()$x)
})

test_that("draws pass a KS test against pnorm", {
  local_rng_kinds()
  for (kind in c("Mersenne-Twister", "L'Ecuyer-CMRG")) {
    withr::local_seed(301, .rng_kind = kind)
    z <- norm_std(2e5)
    expect_gt(ks_p(z, stats::pnorm), 1e-3, label = paste("KS p-value under", kind))
  }
})

test_that("the tail and every layer of 1e7 draws carry their exact probability", {
  # 1e7 draws in chunks of 1e6, keeping the counts of |z| in the intervals
  # between the ziggurat's abscissae (as zig_ref() computes them), [0, x_127],
  # [x_127, x_126], ..., [x_2, r], (r, Inf), and the tail values themselves.
  withr::local_seed(302, .rng_kind = "Mersenne-Twister")
  r <- 3.442619855899
  edges <- rev(zig_ref(r)$x)                  # 0 = x_128 < x_127 < ... < x_1 = r
  lc <- zig_layer_counts(function(m) abs(norm_std(m)), edges, r)
  n <- lc$n
  counts <- lc$counts
  tail <- lc$tail
  # Pearson's statistic over the 128 intervals (the last one is the tail):
  # chi-squared with 127 degrees of freedom.  A block boundary 20% off makes
  # its rectangle miss (or wrongly include) a few 1e-4 of the mass, which
  # this detects; the table test above checks the boundaries directly.
  p_cell <- diff(2 * stats::pnorm(c(edges, Inf))) # P(x_{i+1} < |Z| <= x_i)
  e <- n * p_cell
  stat <- sum((counts - e)^2 / e)
  expect_gt(stats::pchisq(stat, df = length(e) - 1, lower.tail = FALSE), 1e-3,
            label = sprintf("chi-squared p-value of the layer counts (statistic %.1f)", stat))
  # Expected counts: 5770 beyond r (sd 76) and 633 beyond 4 (sd 25).
  # Accepting r + E / r without Marsaglia's rejection would put 848 beyond 4
  # (z = 8.5); a tail that stopped early or started elsewhere also fails the
  # KS test of the tail values below.
  for (b in c(r, 4)) {
    p <- 2 * stats::pnorm(b, lower.tail = FALSE)
    count <- sum(tail > b)
    z_score <- (count - n * p) / sqrt(n * p * (1 - p))
    expect_lt(abs(z_score), 4, label = sprintf("z-score of the count beyond %.4g", b))
    expect_gt(stats::binom.test(count, n, p)$p.value, 1e-4)
  }
  # the tail values against P(|Z| <= t | |Z| > r), computed on the log scale
  lq <- function(t) stats::pnorm(t, lower.tail = FALSE, log.p = TRUE)
  expect_gt(ks_p(tail, function(t) -expm1(lq(t) - lq(r))), 1e-3)
  expect_true(all(is.finite(tail)))
})

test_that("mean, variance and fourth moment agree within Monte Carlo error", {
  # With the mean known (0), the raw moments m_k = mean(z^k) are unbiased
  # and Var(m_k) = (E z^(2k) - (E z^k)^2) / n exactly: 1 / n for the mean,
  # (3 - 1) / n for the variance, (105 - 9) / n for the fourth moment; and
  # the share of positive draws has variance 1 / (4 n).
  withr::local_seed(303, .rng_kind = "Mersenne-Twister")
  n <- 1e6
  z <- norm_std(n)
  m <- c(mean(z), mean(z^2), mean(z^4), mean(z > 0))
  truth <- c(0, 1, 3, 0.5)
  se <- sqrt(c(1, 2, 96, 0.25) / n)
  for (k in seq_along(m)) {
    expect_lt(abs(m[k] - truth[k]), 4 * se[k],
              label = sprintf("%s (z = %.2f)", c("mean", "E z^2", "E z^4", "P(z > 0)")[k],
                              (m[k] - truth[k]) / se[k]))
  }
})

test_that("successive draws are independent", {
  # 5e5 successive pairs in a 10 x 10 table of equiprobable cells: Pearson's
  # statistic is chi-squared with 99 degrees of freedom
  withr::local_seed(304, .rng_kind = "Mersenne-Twister")
  z <- stats::pnorm(norm_std(1e6))
  cell <- floor(10 * z[c(TRUE, FALSE)]) * 10 + floor(10 * z[c(FALSE, TRUE)])
  counts <- tabulate(cell + 1, nbins = 100)
  e <- length(cell) / 100
  stat <- sum((counts - e)^2 / e)
  expect_gt(stats::pchisq(stat, df = 99, lower.tail = FALSE), 1e-3)
})

test_that("the same seed gives the same draws; normal.kind plays no part", {
  local_rng_kinds()
  for (kind in c("Mersenne-Twister", "L'Ecuyer-CMRG")) {
    a <- withr::with_seed(42, norm_std(1000), .rng_kind = kind)
    b <- withr::with_seed(42, norm_std(1000), .rng_kind = kind)
    expect_identical(a, b)
    # one call for 1000 draws = 1000 calls for one draw
    c1 <- withr::with_seed(42, vapply(1:1000, function(i) norm_std(1), 0),
                           .rng_kind = kind)
    expect_identical(a, c1)
    d <- withr::with_seed(43, norm_std(1000), .rng_kind = kind)
    expect_false(identical(a, d))
    bm <- withr::with_seed(42, norm_std(1000), .rng_kind = kind,
                           .rng_normal_kind = "Box-Muller")
    expect_identical(a, bm)
  }
  mt <- withr::with_seed(42, norm_std(10), .rng_kind = "Mersenne-Twister")
  le <- withr::with_seed(42, norm_std(10), .rng_kind = "L'Ecuyer-CMRG")
  expect_false(identical(mt, le))
})

test_that("the RNG kinds were restored", {
  expect_identical(RNGkind(), kinds_at_start)
})

test_that("the entry point checks its argument", {
  expect_identical(norm_std(0), numeric(0))
  expect_length(norm_std(5L), 5)
  expect_error(norm_std(-1), "`n`")
  expect_error(norm_std(c(1, 2)), "`n`")
  expect_error(norm_std(1.5), "`n`")
  expect_error(norm_std("a"), "`n`")
  expect_error(norm_std(NA_real_), "`n`")
})
