# Tests of the exact Exp(1) generator of src/exponential.c (a ziggurat on R's
# uniform generator), the proposal of the truncated normal's one-sided tail.
#
# Statistical tests use fixed seeds, so they are deterministic. Their
# thresholds come from the Monte Carlo error of each statistic under a correct
# generator: KS p-values > 1e-3; counts and moments within 4 standard
# deviations of the estimator, whose variance is known exactly.

exp_std <- function(n) .Call(C_exp_std, n)

# The abscissae r = x_1 > ... > x_255 > x_256 = 0 of the 256-block
# exponential ziggurat, from the published r (Marsaglia and Tsang 2000) by
# the recursion f(x_{i+1}) = f(x_i) + v / x_i, independently of the C code.
exp_zig_ref <- function(r = 7.69711747013104972, N = 256L) {
  v <- (r + 1) * exp(-r)
  x <- numeric(N)
  x[1] <- r
  f <- exp(-r)
  for (i in 1:(N - 2L)) {
    f <- f + v / x[i]
    x[i + 1] <- -log(f)
  }
  list(r = r, v = v, x = x)                   # x[N] = 0
}

test_that("the exponential ziggurat's table solves its defining equations", {
  # Marsaglia and Tsang (2000), 256 blocks
  expect_zig_table(.Call(C_exp_table), 256L, r = 7.69711747013104972,
                   v = 3.949659822581572e-3, f = function(x) exp(-x),
                   tail = function(r) exp(-r), x_ref = exp_zig_ref()$x)
})

test_that("exponential draws pass a KS test against pexp", {
  local_rng_kinds()
  for (kind in c("Mersenne-Twister", "L'Ecuyer-CMRG", "Knuth-TAOCP-2002")) {
    withr::local_seed(401, .rng_kind = kind)
    e <- exp_std(2e5)
    expect_true(all(e >= 0 & is.finite(e)))
    expect_gt(ks_p(e, stats::pexp), 1e-3, label = paste("KS p-value under", kind))
  }
})

test_that("every layer and the tail of 1e7 exponential draws carry their probability", {
  # 1e7 draws in chunks of 1e6, keeping the counts in the intervals between
  # the ziggurat's abscissae (as exp_zig_ref() computes them), [0, x_255],
  # [x_255, x_254], ..., [x_2, r], (r, Inf), and the tail values themselves.
  withr::local_seed(402, .rng_kind = "Mersenne-Twister")
  r <- 7.69711747013104972
  edges <- rev(exp_zig_ref(r)$x)              # 0 = x_256 < x_255 < ... < x_1 = r
  lc <- zig_layer_counts(exp_std, edges, r)
  n <- lc$n
  counts <- lc$counts
  tail <- lc$tail
  # Pearson's statistic over the 256 intervals (the last one is the tail):
  # chi-squared with 255 degrees of freedom.
  p_cell <- diff(stats::pexp(c(edges, Inf)))
  ex <- n * p_cell
  stat <- sum((counts - ex)^2 / ex)
  expect_gt(stats::pchisq(stat, df = length(ex) - 1, lower.tail = FALSE), 1e-3,
            label = sprintf("chi-squared p-value of the layer counts (statistic %.1f)", stat))
  # Expected counts: 4540 beyond r (sd 67), 454 beyond 10 and 45 beyond
  # 12.3 (past r twice, through the tail twice). A tail that returned r plus
  # a fresh uniform multiple of x_0, or stopped at r + 8.7, fails these.
  for (b in c(r, 10, 12.3)) {
    p <- stats::pexp(b, lower.tail = FALSE)
    count <- sum(tail > b)
    z_score <- (count - n * p) / sqrt(n * p * (1 - p))
    expect_lt(abs(z_score), 4, label = sprintf("z-score of the count beyond %.4g", b))
  }
  # beyond r the draws are r + Exp(1)
  expect_gt(ks_p(tail - r, stats::pexp), 1e-3)
})

test_that("exponential moments agree within Monte Carlo error", {
  # Var(mean(e^k)) = (E e^(2k) - (E e^k)^2) / n exactly: (2 - 1) / n for the
  # mean, (24 - 4) / n for E e^2; P(e > 1) = exp(-1) has variance
  # p (1 - p) / n.
  withr::local_seed(403, .rng_kind = "Mersenne-Twister")
  n <- 1e6
  e <- exp_std(n)
  p1 <- exp(-1)
  m <- c(mean(e), mean(e^2), mean(e > 1))
  truth <- c(1, 2, p1)
  se <- sqrt(c(1, 20, p1 * (1 - p1)) / n)
  for (k in seq_along(m)) {
    expect_lt(abs(m[k] - truth[k]), 4 * se[k],
              label = sprintf("%s (z = %.2f)", c("mean", "E e^2", "P(e > 1)")[k],
                              (m[k] - truth[k]) / se[k]))
  }
})

test_that("successive exponential draws are independent, and set.seed repeats them", {
  # 5e5 successive pairs in a 10 x 10 table of equiprobable cells: Pearson's
  # statistic is chi-squared with 99 degrees of freedom
  withr::local_seed(404, .rng_kind = "Mersenne-Twister")
  u <- stats::pexp(exp_std(1e6))
  cell <- floor(10 * u[c(TRUE, FALSE)]) * 10 + floor(10 * u[c(FALSE, TRUE)])
  counts <- tabulate(cell + 1, nbins = 100)
  ex <- length(cell) / 100
  stat <- sum((counts - ex)^2 / ex)
  expect_gt(stats::pchisq(stat, df = 99, lower.tail = FALSE), 1e-3)
  a <- withr::with_seed(42, exp_std(1000))
  b <- withr::with_seed(42, exp_std(1000))
  expect_identical(a, b)
  expect_error(exp_std(-1), "non-negative whole number")
  expect_error(exp_std(c(1, 2)), "non-negative whole number")
})
