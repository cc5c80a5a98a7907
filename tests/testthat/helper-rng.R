# Helpers for the tests of the package's random variate generators
# (test-normal.R, test-exponential.R, test-rtnorm.R).

# withr restores .Random.seed, but not the RNG kinds when there was no
# .Random.seed to restore: put the kinds back explicitly as well.
local_rng_kinds <- function(env = parent.frame()) {
  k <- RNGkind()
  withr::defer(RNGkind(k[1], k[2], k[3]), envir = env)
}

# KS p-value of x against the continuous CDF `cdf`. Ties are muffled: the
# generators' fast paths have 2^32 distinct values, so n draws hold about
# n^2 / 2^33 tied pairs, and draws on very narrow intervals tie more; they
# are harmless at these sample sizes.
ks_p <- function(x, cdf) {
  withCallingHandlers(
    stats::ks.test(x, cdf)$p.value,
    warning = function(w) {
      if (grepl("ties", conditionMessage(w))) invokeRestart("muffleWarning")
    }
  )
}

# The checks of a ziggurat's table (list(r, v, x = x_0..x_N, f = f_0..f_N),
# normal.c section 1) against its defining equations, for the density f
# (up to a constant, f(0) = 1) with tail area tail(r) = int_r^Inf f: N
# blocks, r and v as published (to 1e-9), x_1 = r > x_2 > ... > x_N = 0 with
# f_i = f(x_i), f_0 = 0, f_N = 1, every block of area v, the base's width
# x_0 = v / f(r), and the abscissae of an independent recursion, x_ref.
expect_zig_table <- function(tb, N, r, v, f, tail, x_ref) {
  expect_identical(length(tb$x) - 1L, N)
  expect_lt(abs(tb$r - r), 1e-9)
  expect_lt(abs(tb$v / v - 1), 1e-9)
  x <- tb$x
  fx <- tb$f
  expect_identical(x[2], tb$r)
  expect_identical(x[N + 1], 0)
  expect_identical(fx[c(1, N + 1)], c(0, 1))
  expect_true(all(diff(x) < 0))
  expect_equal(fx[2:N], f(x[2:N]), tolerance = 1e-14)
  # every block has area v: the base (rectangle and tail), then rectangles
  base <- tb$r * fx[2] + tail(tb$r)
  rect <- x[2:N] * (fx[3:(N + 1)] - fx[2:N])
  expect_lt(max(abs(c(base, rect) / tb$v - 1)), 1e-12)
  expect_equal(x[1], tb$v / fx[2], tolerance = 1e-15)
  expect_lt(max(abs(x[-1] - x_ref)), 1e-8)
}

# 10 chunks of 1e6 draws of draw(n) (a ziggurat's values, folded to |z| for
# the normal), counted in the intervals between the increasing abscissae
# `edges` (0 = x_N < ... < x_1 = r, the last interval (r, Inf)), and the
# values beyond r: list(n, counts, tail).
zig_layer_counts <- function(draw, edges, r, n_chunk = 1e6, chunks = 10L) {
  counts <- numeric(length(edges))
  tail <- vector("list", chunks)
  for (k in seq_len(chunks)) {
    z <- draw(n_chunk)
    counts <- counts + tabulate(findInterval(z, edges), nbins = length(edges))
    tail[[k]] <- z[z > r]
  }
  list(n = chunks * n_chunk, counts = counts, tail = unlist(tail))
}
