# align_factors(), wad(), covering_number(), the Laurberg generator and
# their use in summary() of Gibbs and particle fits.

angle_between <- function(u, v) {
  acos(min(1, sum(u * v) / sqrt(sum(u^2) * sum(v^2)))) * 180 / pi
}

test_that("align_factors recovers a known permutation and scaling exactly", {
  set.seed(11)
  W <- matrix(rexp(40), 10, 4)
  H <- matrix(rexp(32), 4, 8)
  p <- c(3, 1, 4, 2)
  s <- c(2, 0.5, 10, 3)          # b[, k] = W[, p[k]] * s[k]
  Wb <- W[, p] * rep(s, each = 10)
  Hb <- H[p, ] / s
  al <- align_factors(W, list(W = Wb, H = Hb))
  expect_s3_class(al, "bnmf_alignment")
  # column k of W is column order(p)[k] of b, scaled by 1 / s[that column]
  expect_identical(al$perm, order(p))
  expect_equal(al$scale, 1 / s[order(p)])
  expect_lt(max(al$angle), 1e-6)
  expect_equal(al$W, W, ignore_attr = TRUE)
  expect_equal(al$H, H, ignore_attr = TRUE)
  expect_equal(al$W %*% al$H, Wb %*% Hb, ignore_attr = TRUE)
  expect_length(al$unmatched_a, 0)
  expect_length(al$unmatched_b, 0)
  expect_output(print(al), "Mean angle")
  # match_factors(), used to align Gibbs chains, is the same matching
  expect_identical(bnmf:::match_factors(W, Wb), order(p))
})

test_that("align_factors recovers the permutation under noise that cannot confuse it", {
  # If every column of b is within an angle delta of its true partner and
  # the columns of a are pairwise at least theta apart, then a wrong
  # assignment that moves a set S of columns costs at least
  # |S| (theta - delta) (triangle inequality for angles) while the right
  # one costs at most |S| delta: the right one is the unique minimum when
  # delta < theta / 2. Noise e moves a column b by at most asin(|e| / |b|).
  set.seed(12)
  I <- 50; K <- 4
  W <- matrix(rexp(I * K), I, K)
  W[cbind(sample(I, 60, replace = TRUE), rep(1:K, 15))] <- 0
  theta <- min(outer(1:K, 1:K, Vectorize(function(i, j) {
    if (i == j) Inf else angle_between(W[, i], W[, j])
  })))
  p <- c(2, 4, 1, 3)
  s <- c(0.1, 7, 1, 2.5)
  B0 <- W[, p] * rep(s, each = I)
  E <- matrix(runif(I * K, 0, 0.02), I, K) * rep(s, each = I)
  B <- B0 + E
  delta <- max(asin(sqrt(colSums(E^2)) / sqrt(colSums(B0^2)))) * 180 / pi
  expect_lt(delta, theta / 2)      # the condition above holds
  al <- align_factors(W, B)
  expect_identical(al$perm, order(p))
  expect_true(all(al$angle <= delta + 1e-8))
  # scale = sum(a) / sum(b): off by the relative mass of the noise only
  expect_equal(al$scale, 1 / s[order(p)], tolerance = 0.05)
})

test_that("align_factors handles unequal numbers of factors and bad input", {
  set.seed(13)
  W <- matrix(rexp(30), 10, 3)
  extra <- rexp(10)
  al <- align_factors(W[, 1:2], cbind(W[, 2], extra, W[, 1]))
  expect_identical(al$perm, c(3L, 1L))
  expect_identical(al$unmatched_b, 2L)
  expect_equal(unname(al$W[, 3]), extra)     # unmatched factors of b come last
  expect_output(print(al), "Unmatched factors of `b`")
  al2 <- align_factors(cbind(W[, 2], extra, W[, 1]), W[, 1:2])
  expect_identical(al2$perm, c(2L, NA, 1L))
  expect_identical(al2$unmatched_a, 2L)
  expect_error(align_factors(W, W[1:5, ]), "`b`", class = "bnmf_error_input")
  expect_error(align_factors("W", W), "`a`", class = "bnmf_error_input")
  expect_error(align_factors(W, -W), "`b`", class = "bnmf_error_input")
  expect_error(align_factors(W, list(W = W, H = matrix(1, 2, 4))), "`b\\$H`",
               class = "bnmf_error_input")
})

test_that("wad is zero for permuted, rescaled copies, symmetric and at most 90 degrees", {
  set.seed(14)
  W <- matrix(rexp(60), 20, 3)
  H <- matrix(rexp(45), 3, 15)
  s <- c(3, 0.2, 9)
  copy <- list(W = W[, c(2, 3, 1)] * rep(s, each = 20), H = H[c(2, 3, 1), ] / s)
  f <- list(W = W, H = H)
  expect_lt(wad(f, copy), 1e-8)
  g <- list(W = matrix(rexp(60), 20, 3), H = matrix(rexp(45), 3, 15))
  expect_gt(wad(f, g), 1)
  expect_equal(wad(f, g), wad(g, f))
  expect_lte(wad(f, g), 90)
  # the largest possible value: every column orthogonal to its partner
  e <- diag(4)
  expect_equal(wad(list(W = e[, 1:2], H = diag(2)), list(W = e[, 3:4], H = diag(2))), 90)
  expect_error(wad(f, list(W = W[, 1:2], H = H[1:2, ])), "`b` must have the same number of factors",
               class = "bnmf_error_input")
})

test_that("wad equals the paper's formula on a hand-computed 2 x 2 example", {
  # A = I, weights W = [1 1; 3 3]: column sums of A are 1, row sums of W
  # 2 and 6, so w = (1/4, 3/4).
  # A' = [1 1; 1 0], W' = [2 2; 1 0]: A' columns (1,1) and (1,0). Matching
  # e1 -> (1,0) (0 degrees), e2 -> (1,1) (45): total 45 < 135, so
  # rho = (2, 1), alpha = (0, 45). Column-stochastic A' has columns scaled
  # by 1/2 and 1, so W' rows by 2 and 1: row sums 8 and 1, w' = (8/9, 1/9),
  # and in the order of rho (1/9, 8/9).
  # WAD = 0 * (1/4 + 1/9) / 2 + 45 * (3/4 + 8/9) / 2 = 45 * 59 / 72.
  A <- diag(2); Wt <- matrix(c(1, 3, 1, 3), 2)
  A2 <- matrix(c(1, 1, 1, 0), 2); W2 <- matrix(c(2, 1, 2, 0), 2)
  expect_equal(wad(list(W = A, H = Wt), list(W = A2, H = W2)), 45 * 59 / 72)
  expect_equal(wad(list(W = A2, H = W2), list(W = A, H = Wt)), 45 * 59 / 72)
  # bases without weights count their factors equally: the mean angle
  expect_equal(wad(A, A2), 22.5)
  expect_equal(align_factors(A, A2)$angle, c(0, 45))
})

test_that("wad of a set gives the pairwise distances", {
  set.seed(15)
  fs <- replicate(4, list(W = matrix(rexp(24), 8, 3), H = matrix(rexp(15), 3, 5)),
                  simplify = FALSE)
  D <- wad(fs)
  expect_s3_class(D, "dist")
  Dm <- as.matrix(D)
  expect_equal(Dm[2, 4], wad(fs[[2]], fs[[4]]))
  expect_equal(Dm[3, 1], wad(fs[[1]], fs[[3]]))
  expect_error(wad(list(fs[[1]], list(W = matrix(1, 7, 3)))), "first",
               class = "bnmf_error_input")
  expect_error(wad(list(fs[[1]], "x")), "`a\\[\\[2\\]\\]`", class = "bnmf_error_input")
})

test_that("covering_number is the greedy cover of a hand-constructed set", {
  # Rank-1 bases (WAD = angle) at 0, 5, 10, 40, 45, 80 degrees.
  deg <- c(0, 5, 10, 40, 45, 80)
  fs <- lapply(deg, function(a) list(W = cbind(c(cos(a * pi / 180), sin(a * pi / 180))),
                                     H = matrix(1, 1, 3)))
  expect_equal(as.matrix(wad(fs))[1, 4], 40)
  cv <- covering_number(fs, epsilon = c(0, 5, 35, 40, 90))
  expect_s3_class(cv, "bnmf_covering")
  # eps 5: the ball around 5 holds {0, 5, 10}, then {40, 45}, then {80}:
  # 3 (taking the first uncovered point as centre would need 4);
  # eps 35: around 10 {0, 5, 10, 40, 45}, then {80}; eps 40: around 40 all.
  expect_identical(cv$covering, c(6L, 3L, 2L, 1L, 1L))
  expect_identical(cv$centres[[2]], c(2L, 4L, 6L))
  expect_identical(cv$centres[[4]], 4L)
  # the same from the distances, and permuted copies are one point at eps 0
  expect_identical(covering_number(wad(fs), epsilon = 5)$covering, 3L)
  W <- matrix(rexp(20), 10, 2); H <- matrix(rexp(6), 2, 3)
  same <- list(list(W = W, H = H), list(W = W[, 2:1] * 4, H = H[2:1, ] / 4))
  expect_identical(covering_number(same, epsilon = 0)$covering, 1L)
  expect_output(print(cv), "covering")
  pdf(NULL)
  expect_silent(plot(cv))
  dev.off()
  expect_error(covering_number(fs, epsilon = -1), "`epsilon`", class = "bnmf_error_input")
  expect_error(covering_number("x"), "`fits`", class = "bnmf_error_input")
})

test_that("laurberg_data has exactly the two known exact NMFs, far apart", {
  set.seed(16)
  d <- bnmf:::laurberg_data(I = 24, J = 30)
  s <- d$solutions
  expect_equal(dim(d$X), c(24, 30))
  expect_identical(qr(d$X)$rank, 3L)
  for (k in 1:2) {
    expect_true(all(s[[k]]$W >= 0) && all(s[[k]]$H >= 0))
    expect_equal(s[[k]]$W %*% s[[k]]$H, d$X0, tolerance = 1e-12)
  }
  # each vertex of one triangle is 60 degrees from the nearest of the
  # other on the hexagon; in the data space the two bases are about 37
  # degrees apart (exactly acos(0.8) with equal row scales)
  expect_gt(wad(s[[1]], s[[2]]), 30)
  dn <- bnmf:::laurberg_data(I = 24, J = 30, noise = 0.05)
  expect_true(all(dn$X >= dn$X0) && max(dn$X - dn$X0) <= 0.05 * max(dn$X0))
})

test_that("particle fits of Laurberg data find both exact NMFs and report WAD", {
  set.seed(17)
  d <- bnmf:::laurberg_data(I = 40, J = 40, noise = 0.01)
  fit <- bnmf(d$X, rank = 3, method = "particles", init = "random", particles = 10)
  D <- as.matrix(wad(fit))
  expect_gt(max(D), 30)
  expect_gte(covering_number(fit, epsilon = 20)$covering, 2L)
  near <- vapply(fit$particles, function(p) {
    c(wad(p, d$solutions[[1]]), wad(p, d$solutions[[2]]))
  }, numeric(2))
  expect_true(all(apply(near, 2, min) < 5))     # every particle is near one of them
  expect_true(all(apply(near, 1, min) < 5))     # and each is found
  s <- summary(fit)
  expect_equal(s$wad, D)
  expect_identical(s$modes, 2L)
  expect_output(print(s), "2 distinct modes at WAD 10")
})

test_that("summary of a multi-chain Gibbs fit aligns the chains and counts modes", {
  skip_on_cran()
  set.seed(18)
  I <- 25; J <- 15; K <- 3
  # factors of clearly different sizes, so that their column sums differ
  W <- matrix(rexp(I * K), I, K) * rep(c(0.5, 1.5, 4), each = I)
  H <- matrix(rexp(K * J), K, J)
  X <- W %*% H + matrix(rnorm(I * J, sd = 0.05), I, J)
  X[X < 0] <- 0
  p <- c(3, 1, 2)
  fit <- bnmf(X, rank = 3, iter = 150, burnin = 50, chains = 2, keep = "draws",
              init = list(list(W = W, H = H), list(W = W[, p], H = H[p, ])))
  # chain 2 started with its factors relabelled; the fit matched them
  expect_identical(fit$chains[[2]]$perm, order(p))
  s <- summary(fit)
  fd <- s$factor_diagnostics
  expect_equal(fd$quantity, c(sprintf("W_sum[k%d]", 1:3), sprintf("H_sum[k%d]", 1:3)))
  expect_true(all(fd$rhat < 1.1))
  expect_true(all(fd$ess > 10))
  expect_identical(s$modes$n_modes, 1L)
  expect_lt(max(s$modes$wad), 5)
  expect_output(print(s), "Chains in distinct modes: 1 of 2")
  expect_output(print(s), "W_sum\\[k1\\]")

  # Store chain 2's draws in another labelling: summary re-aligns them
  # (without alignment the column sums of W disagree between chains).
  q <- c(2, 3, 1)
  iw <- as.vector(matrix(seq_len(I * K), I, K)[, q])
  ih <- as.vector(matrix(seq_len(K * J), K, J)[q, ])
  bad <- fit
  bad$draws[[2]]$W <- bad$draws[[2]]$W[iw, ]
  bad$draws[[2]]$H <- bad$draws[[2]]$H[ih, ]
  fd2 <- summary(bad)$factor_diagnostics
  expect_equal(fd2$rhat, fd$rhat)
  expect_identical(attr(fd2, "perm")[[2]], order(q))
  # bnmf's own split R-hat and ESS when posterior is not installed
  own <- bnmf:::factor_draw_diagnostics(bad, use_posterior = FALSE)
  expect_identical(attr(own, "engine"), "bnmf")
  expect_equal(own$rhat, fd$rhat, tolerance = 0.05)
  expect_true(all(own$ess > 10))
  raw <- function(f, k) {
    unlist(lapply(f$draws, function(d) colSums(matrix(d$W[(k - 1) * I + 1:I, ], I))))
  }
  n <- ncol(fit$draws[[1]]$W)
  expect_gt(max(vapply(1:3, function(k) {
    bnmf:::split_rhat(raw(bad, k), rep(1:2, each = n))
  }, numeric(1))), 1.5)

  # without draws: the chains' stored posterior means; no factor-level
  # diagnostics
  fit0 <- bnmf(X, rank = 3, iter = 60, burnin = 20, chains = 2,
               init = list(list(W = W, H = H), list(W = W[, p], H = H[p, ])))
  s0 <- summary(fit0)
  expect_null(s0$factor_diagnostics)
  expect_identical(s0$modes$n_modes, 1L)
  expect_match(s0$modes$basis, "posterior-mean")
  expect_output(print(s0), "need the draws")
  expect_error(summary(fit0, wad_threshold = -1), "`wad_threshold`", class = "bnmf_error_input")
})

test_that("chains started in the two exact NMFs of Laurberg data are two modes", {
  skip_on_cran()
  set.seed(19)
  d <- bnmf:::laurberg_data(I = 30, J = 30, noise = 0.01)
  fit <- bnmf(d$X, rank = 3, iter = 60, burnin = 20, chains = 2, keep = "draws",
              init = d$solutions)
  s <- summary(fit)
  expect_identical(s$modes$n_modes, 2L)
  expect_identical(s$modes$mode, c(1L, 2L))
  expect_gt(max(s$modes$wad), 30)
  expect_output(print(s), "Chains in distinct modes: 2 of 2")
  cv <- covering_number(fit, epsilon = c(1, 20, 40))
  expect_identical(cv$covering, c(2L, 2L, 1L))
  expect_gte(covering_number(fit, epsilon = 20, use = "draws", max_draws = 20)$covering, 2L)
})

test_that("covering_number() and wad() take the chains and draws of an HMC fit", {
  set.seed(4)
  X <- matrix(rexp(12 * 2), 12, 2) %*% matrix(rexp(2 * 8), 2, 8) * 10
  h <- bnmf(X, rank = 2, method = "hmc", iter = 40, chains = 2, progress = FALSE)
  d <- wad(h)
  expect_s3_class(d, "dist")
  expect_equal(attr(d, "Size"), 2L)
  cn <- covering_number(h, use = "draws", max_draws = 10, epsilon = c(0, 90))
  expect_equal(cn$n, 10L)
  # WAD is at most 90 degrees: one ball of that radius covers every draw
  expect_equal(cn$covering[2], 1L)
  expect_gte(cn$covering[1], 1L)
})

test_that("a Gibbs fit stores each chain's posterior means, also across update()", {
  set.seed(8)
  X <- matrix(rexp(20 * 3), 20, 3) %*% matrix(rexp(3 * 12), 3, 12) +
    matrix(rnorm(240, sd = 0.2), 20, 12)
  fit <- bnmf(X, rank = 3, iter = 50, burnin = 20, chains = 2, keep = "draws",
              progress = FALSE)
  check <- function(f) {
    for (c in 1:2) {
      expect_equal(f$chains[[c]]$W_mean, matrix(rowMeans(f$draws[[c]]$W), 20, 3))
      expect_equal(f$chains[[c]]$H_mean, matrix(rowMeans(f$draws[[c]]$H), 3, 12))
      expect_equal(f$chains[[c]]$n_kept, ncol(f$draws[[c]]$W))
    }
  }
  check(fit)
  check(update(fit, iter = 25, progress = FALSE))
})
