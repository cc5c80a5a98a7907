# Gaussian Gibbs, ICM and VB by blocks of samples with missing entries (NA)
# (R/blocks-gaussian.R, src/nmf_blocks.c): each block keeps the values of
# its missing entries (Gibbs: latent, drawn from the block's stream; ICM
# and VB: imputed, or zeros when masked). The same numbers wherever the blocks are held; ICM and
# VB those of the fit in memory, masking or imputing, to rounding; Gibbs
# the posterior of the sampler in memory.

miss_rel <- function(a, b) max(abs(a - b) / pmax(abs(b), 1e-300))

# Gaussian data 12 x 30 with 15% of the entries missing at random, dense or
# a dgCMatrix (small values stored as zeros, NA stored).
miss_data <- function(sparse = FALSE, I = 12, J = 30) {
  X <- unname(blocks_gaussian(I = I, J = J))
  set.seed(23)
  if (sparse) X[X < 0.8] <- 0
  X[sample(length(X), round(0.15 * length(X)))] <- NA
  if (sparse) X <- Matrix::Matrix(X, sparse = TRUE)
  X
}

# A start with tau (no warm-up sweeps of least squares).
miss_init <- function(X, K = 2) {
  set.seed(31)
  list(W = matrix(rexp(nrow(X) * K), nrow(X)), H = matrix(rexp(K * ncol(X)), K), tau = 2)
}

miss_fit <- function(X, method, ..., iter = 60, K = 2) {
  set.seed(5)
  muffle_convergence(bnmf(X, rank = K, method = method, iter = iter, progress = FALSE, ...))
}

miss_control <- function(method, missing) {
  if (method == "icm") icm_control(missing = missing) else vb_control(missing = missing)
}

test_that("ICM and VB by blocks mask or impute missing entries as the fit in memory, to rounding", {
  # The partition changes only the association of the blocks' sums (a
  # masked row's Gram matrix is the whole one less the sum of the blocks'
  # parts, not less its terms one by one; the imputed W H is taken before
  # the balance of the factors' scales, not after): a few ulps a sweep,
  # which the sweeps (contractions near the mode) do not amplify; after 60
  # sweeps 1e-14 relative is seen, 1e-9 is far above it and far below any
  # difference of algorithm (imputing instead of masking moves W by more
  # than 1e-6 here, asserted).
  for (sparse in c(FALSE, TRUE)) for (method in c("icm", "vb")) {
    X <- miss_data(sparse)
    for (init in list(miss_init(X), "random")) {
      f0 <- list(
        mask = miss_fit(X, method, init = init, control = miss_control(method, "mask"), tol = 0),
        impute = miss_fit(X, method, init = init, control = miss_control(method, "impute"),
                          tol = 0))
      expect_gt(miss_rel(f0$mask$W, f0$impute$W), 1e-6)
      for (missing in names(f0)) for (nb in c(1L, 3L)) {
        g <- f0[[missing]]
        f <- miss_fit(X, method, init = init, control = miss_control(method, missing), tol = 0,
                      blocks = nb)
        info <- sprintf("%s, %s, sparse %s, %s start, %d blocks", method, missing, sparse,
                        if (is.list(init)) "given" else "random", nb)
        expect_identical(f$settings$missing, missing)
        expect_identical(f$settings$blocks, nb)
        expect_identical(f$n_missing, g$n_missing)
        expect_identical(f$n_obs, g$n_obs)
        expect_identical(class(f), class(g))
        expect_identical(names(f), names(g))
        expect_identical(names(f$chains[[1L]]), names(g$chains[[1L]]))
        expect_lt(miss_rel(f$W, g$W), 1e-9, label = info)
        expect_lt(miss_rel(f$H, g$H), 1e-9, label = info)
        expect_lt(miss_rel(f$tau, g$tau), 1e-9, label = info)
        expect_lt(miss_rel(f$trace$logpost, g$trace$logpost), 1e-9, label = info)
        expect_lt(miss_rel(f$trace$sse, g$trace$sse), 1e-9, label = info)
        # the values of the missing entries kept for update(): W H (VB:
        # E[W] E[H]) when imputed, zeros when masked
        expect_length(f$chains[[1L]]$latent, g$n_missing)
        if (missing == "mask") expect_identical(f$chains[[1L]]$latent, g$chains[[1L]]$latent)
        else expect_lt(miss_rel(f$chains[[1L]]$latent, g$chains[[1L]]$latent), 1e-9, label = info)
        if (method == "vb") {
          expect_lt(miss_rel(f$W_sd, g$W_sd), 1e-9, label = info)
          expect_lt(miss_rel(f$H_sd, g$H_sd), 1e-9, label = info)
        }
        # and the objective never decreases
        e <- f$trace$logpost
        expect_true(all(diff(e) >= -1e-9 * abs(e[-1])), label = info)
      }
    }
  }
})

test_that("blocks that miss nothing take their part in the masked and imputed rows' sums", {
  # NA in the first two of three blocks only, and row 1 missing more than
  # half its entries (its masked Gram matrix is the sum over its observed
  # entries, the third block's included)
  X <- unname(blocks_gaussian(I = 12, J = 30))
  X[cbind(c(2, 5, 7, 9, 4), c(1, 3, 4, 9, 12))] <- NA
  X[1, 1:16] <- NA
  for (method in c("icm", "vb")) for (missing in c("mask", "impute")) {
    ctl <- miss_control(method, missing)
    f0 <- miss_fit(X, method, control = ctl, tol = 0)
    f <- miss_fit(X, method, control = ctl, tol = 0, blocks = 3)
    info <- paste(method, missing)
    expect_lt(miss_rel(f$W, f0$W), 1e-9, label = info)
    expect_lt(miss_rel(f$H, f0$H), 1e-9, label = info)
    expect_lt(miss_rel(f$trace$logpost, f0$trace$logpost), 1e-9, label = info)
  }
})

test_that("by blocks, missing = \"auto\" chooses as the fit in memory", {
  X <- miss_data()
  init <- miss_init(X)
  Y <- X
  Y[1, 1:20] <- NA # two thirds of a row: "auto" masks
  for (method in c("icm", "vb")) {
    for (Z in list(X, Y)) {
      f0 <- miss_fit(Z, method, init = init)
      f <- miss_fit(Z, method, init = init, blocks = 3)
      expect_identical(f$settings$missing, f0$settings$missing)
      expect_identical(f$iterations, f0$iterations)
      expect_lt(miss_rel(f$W, f0$W), 1e-9)
      expect_lt(miss_rel(f$H, f0$H), 1e-9)
    }
    expect_identical(f$settings$missing, "mask")
    expect_identical(miss_fit(X, method, init = init, iter = 2, blocks = 2)$settings$missing,
                     "impute")
  }
})

test_that("by blocks, ICM masking with one block is the fit in memory bit for bit", {
  # (at K = 2 the masked rows form their own Gram matrices in memory too)
  X <- miss_data()
  for (init in list(miss_init(X), "random")) {
    f0 <- miss_fit(X, "icm", init = init, control = icm_control(missing = "mask"))
    f1 <- miss_fit(X, "icm", init = init, control = icm_control(missing = "mask"), blocks = 1)
    expect_identical(f1$W, f0$W)
    expect_identical(f1$H, f0$H)
    expect_identical(f1$tau, f0$tau)
  }
})

test_that("with missing entries, the same numbers from memory, an HDF5Matrix and a 2-worker cluster", {
  skip_on_cran()
  cl <- test_cluster()
  X <- miss_data()
  S <- miss_data(sparse = TRUE)
  init <- miss_init(X)
  fits <- function(X, ...) {
    list(icm = miss_fit(X, "icm", iter = 8, init = init, ...),
         vb = miss_fit(X, "vb", iter = 8, init = init, ...),
         icm_random = miss_fit(X, "icm", iter = 8, ...),
         vb_mask = miss_fit(X, "vb", iter = 8, control = vb_control(missing = "mask"), ...),
         gibbs = miss_fit(X, "gibbs", iter = 12, burnin = 4, init = init, keep = "draws", ...))
  }
  same <- function(a, b) {
    for (nm in names(a)) {
      expect_identical(unname(a[[nm]]$W), unname(b[[nm]]$W), label = nm)
      expect_identical(unname(a[[nm]]$H), unname(b[[nm]]$H), label = nm)
      expect_identical(a[[nm]]$tau, b[[nm]]$tau, label = nm)
      expect_identical(a[[nm]]$trace, b[[nm]]$trace, label = nm)
      # (the chains' fields; a Gibbs fit of a DelayedMatrix has no W H
      # moments, so no wh_wait)
      ks <- intersect(names(a[[nm]]$chains[[1L]]), names(b[[nm]]$chains[[1L]]))
      expect_true(all(c("W", "H", "tau", "latent", "seed") %in% ks))
      expect_identical(lapply(a[[nm]]$chains, function(ch) unname(ch[ks])),
                       lapply(b[[nm]]$chains, function(ch) unname(ch[ks])), label = nm)
    }
    expect_identical(a$gibbs$moments[c("W", "H", "tau")], b$gibbs$moments[c("W", "H", "tau")])
    expect_identical(a$gibbs$draws, b$gibbs$draws)
    expect_identical(a$vb$q_W, b$vb$q_W)
  }
  m3 <- fits(X, blocks = 3)
  c3 <- fits(X, blocks = 3, cluster = cl)
  same(m3, c3)
  expect_identical(m3$gibbs$moments$WH, c3$gibbs$moments$WH)
  # a dgCMatrix with NA stored
  s3 <- fits(S, blocks = 3)
  sc <- fits(S, blocks = 3, cluster = cl)
  same(s3, sc)
  expect_identical(s3$gibbs$moments$WH, sc$gibbs$moments$WH)
  left <- parallel::clusterEvalQ(cl, ls(bnmf:::block_store))
  expect_identical(left, list(character(), character()))
  skip_if_no_hdf5()
  D <- HDF5Array::writeHDF5Array(X, file.path(withr::local_tempdir(), "na.h5"), "x")
  expect_identical(sum(is.na(as.matrix(D))), sum(is.na(X)))
  d3 <- fits(D, blocks = 3)
  same(m3, d3)
  dc <- fits(D, blocks = 3, cluster = cl)
  same(m3, dc)
})

test_that("a fit by blocks with missing entries answers as the fit in memory; update() continues it", {
  X <- miss_data()
  init <- miss_init(X)
  for (method in c("icm", "vb", "gibbs")) {
    ctl <- if (method == "icm") list(control = miss_control(method, "impute")) else
      if (method == "vb") list(control = miss_control(method, "mask"))
    f0 <- do.call(miss_fit, c(list(X, method, init = init, iter = 20), ctl))
    f <- do.call(miss_fit, c(list(X, method, init = init, iter = 20, blocks = 3), ctl))
    # fitted values everywhere, the missing entries included
    expect_identical(dim(fitted(f)), dim(fitted(f0)))
    expect_true(all(is.finite(fitted(f))))
    expect_identical(is.na(residuals(f)), is.na(residuals(f0)))
    expect_identical(dim(predict(f, i = 1:3, j = 1:3)), dim(predict(f0, i = 1:3, j = 1:3)))
    if (method == "gibbs") {
      expect_identical(length(f$moments$WH$mean), length(X))
      expect_length(f$chains[[1L]]$latent, sum(is.na(X)))
    }
    u <- muffle_convergence(update(f, iter = 4, progress = FALSE))
    expect_true(all(is.finite(u$W)))
    expect_identical(u$settings$missing, f$settings$missing)
  }
})

test_that("Gibbs by blocks with missing entries samples the posterior of the sampler in memory", {
  set.seed(5)
  W0 <- cbind(c(3, 2, 1, 0.2, 0.1, 0.1), c(0.1, 0.2, 0.5, 2, 3, 2))
  H0 <- rbind(c(2, 1.5, 0.1, 0.2, 1, 2, 0.3, 1.2), c(0.1, 0.2, 2, 1.8, 1, 0.5, 2.5, 0.1))
  X <- W0 %*% H0 + matrix(rnorm(48, sd = 0.3), 6, 8)
  # 8 of the 48 entries missing, two in column 1 and one at (6, 8)
  X[cbind(c(1, 3, 2, 4, 5, 6, 1, 6), c(1, 1, 3, 4, 5, 6, 7, 8))] <- NA
  n <- 4000
  run <- function(seed, ...) {
    set.seed(seed)
    bnmf(X, rank = 2, method = "gibbs", iter = n + 500, burnin = 500, keep = "draws",
         progress = FALSE, ...)
  }
  # summaries of each kept draw: tau, W H at an observed entry and at two
  # missing ones (free of the factors' labels), W[1, k] and H[k, 1] of the
  # factor k that W[1, ] loads
  summaries <- function(f) {
    d <- f$draws[[1L]]
    k <- which.max(f$W[1, ])
    wh <- function(i, j) colSums(d$W[c(i, i + 6), ] * d$H[c(2 * j - 1, 2 * j), ])
    S <- cbind(tau = f$trace$tau[f$trace$sampling], wh22 = wh(2, 2), wh11 = wh(1, 1),
               wh68 = wh(6, 8), w1 = d$W[1 + 6 * (k - 1), ], h1 = d$H[k, ])
    cbind(S, S^2)
  }
  a <- summaries(run(11))
  b <- summaries(run(12, blocks = 3))
  # batch-means z-scores of the differences of the two chains' means
  z <- vapply(seq_len(ncol(a)), function(s) {
    (mean(a[, s]) - mean(b[, s])) / sqrt(batch_se(a[, s], 40)^2 + batch_se(b[, s], 40)^2)
  }, numeric(1))
  expect_true(all(abs(z) < 4), info = paste(round(z, 2), collapse = " "))
  # the sampler has moved
  expect_gt(sd(b[, "tau"]), 0.1 * mean(b[, "tau"]))
  # and the latent entries are not fixed: W H at a missing entry varies as
  # at an observed one
  expect_gt(sd(b[, "wh11"]), 0.2 * sd(b[, "wh22"]))
})
