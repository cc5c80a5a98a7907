# Poisson Gibbs sampling by blocks of samples (R/blocks-pois-gibbs.R,
# src/pois_gibbs.c): the same bits wherever the blocks are read or held,
# and the posterior of the sampler in memory.

pg_fit <- function(X, ..., seed = 4, iter = 20) {
  set.seed(seed)
  bnmf(X, likelihood = "poisson", method = "gibbs", iter = iter, progress = FALSE, ...)
}

# The numbers of a fit (not the data it keeps, which differ by source).
pg_numbers <- function(f) {
  f[c("W", "H", "W_sd", "H_sd", "lambda", "trace", "n_draws", "draws", "seeds", "state")]
}

expect_same_fit <- function(a, b) {
  na <- pg_numbers(a)
  nb <- pg_numbers(b)
  # the dimnames come from X (a file has none)
  strip <- function(z) {
    if (is.list(z) && !is.data.frame(z)) return(lapply(z, strip))
    if (is.matrix(z) || !is.null(names(z))) z <- unname(z)
    z
  }
  expect_identical(strip(na), strip(nb))
}

test_that("a Gibbs fit by blocks is a Poisson Gibbs fit: fields, draws, update()", {
  X <- blocks_counts()
  f0 <- pg_fit(X, rank = 3, iter = 12)
  f <- pg_fit(X, rank = 3, blocks = 3, keep = "draws", iter = 12, burnin = 4, thin = 2)
  expect_identical(class(f), class(f0))
  expect_setequal(names(f), names(f0))
  expect_identical(f$settings$blocks, 3L)
  expect_identical(f$n_draws, 4)
  expect_identical(dim(f$draws[[1]]$W_draws), c(90L, 4L))
  expect_identical(dim(f$draws[[1]]$H_draws), c(135L, 4L))
  # the running means are the means of the kept draws
  expect_equal(unname(f$W), matrix(rowMeans(f$draws[[1]]$W_draws), 30, 3), tolerance = 1e-12)
  expect_equal(unname(f$H), matrix(rowMeans(f$draws[[1]]$H_draws), 3, 45), tolerance = 1e-12)
  # the last state is the last draw
  expect_identical(as.vector(f$state[[1]]$H), f$draws[[1]]$H_draws[, 4])
  expect_identical(as.vector(f$state[[1]]$W), f$draws[[1]]$W_draws[, 4])
  # the trace's log-likelihood is that of the state (missing entries left out)
  st <- f$state[[1]]
  M <- st$W %*% st$H
  ok <- !is.na(X)
  expect_equal(f$trace$loglik[12], sum(dpois(X[ok], M[ok], log = TRUE)), tolerance = 1e-10)
  expect_identical(sum(f$trace$sampling), 8L)
  # fitted values: those of the posterior means (no running sums of W H)
  expect_null(f$WH)
  expect_equal(unname(fitted(f)), unname(f$W %*% f$H), tolerance = 1e-12)
  # update() continues by the same blocks, chain and block streams and the
  # last split: the draws of one longer run
  u <- update(f, iter = 4)
  expect_identical(nrow(u$trace), 16L)
  expect_identical(u$n_draws, 6)
  expect_identical(u$settings$blocks, 3L)
  g <- pg_fit(X, rank = 3, blocks = 3, keep = "draws", iter = 16, burnin = 4, thin = 2)
  expect_identical(u$W, g$W)
  expect_identical(u$H_sd, g$H_sd)
  expect_identical(u$trace, g$trace)
  expect_identical(u$draws, g$draws)
  expect_identical(u$state, g$state)
  # other Poisson methods still refuse blocks
  expect_error(bnmf(X, rank = 2, likelihood = "poisson", method = "ssvi", blocks = 2),
               class = "bnmf_error_unsupported", regexp = "method \"ssvi\"")
})

test_that("dense, sparse and a 10x file give the same bits for the same blocks", {
  X0 <- blocks_counts(na = 0)
  S <- Matrix::Matrix(X0, sparse = TRUE)
  for (prior in list(NULL, ard())) {
    args <- list(rank = 3, blocks = 3, keep = "draws", iter = 10)
    if (!is.null(prior)) args$prior <- prior
    m <- do.call(pg_fit, c(list(X0), args))
    s <- do.call(pg_fit, c(list(S), args))
    expect_same_fit(s, m)
  }
  skip_on_cran()
  skip_if_no_hdf5()
  # (the 10x file first: TENxMatrix() fails after other rhdf5 calls, see
  # helper-blocks.R)
  T <- tenx_counts() # the counts of X0
  D <- HDF5Array::writeHDF5Array(X0, file.path(withr::local_tempdir(), "d.h5"), "x")
  for (prior in list(NULL, ard())) {
    # (a file is read block by block in every sweep)
    args <- list(rank = 3, blocks = 3, keep = "draws", iter = 6)
    if (!is.null(prior)) args$prior <- prior
    m <- do.call(pg_fit, c(list(X0), args))
    expect_same_fit(do.call(pg_fit, c(list(D), args)), m)
    expect_same_fit(do.call(pg_fit, c(list(T), args)), m)
  }
})

test_that("a 2-worker cluster gives the bits of one process for the same blocks", {
  skip_on_cran()
  cl <- test_cluster()
  X <- blocks_counts()
  for (prior in list(NULL, ard())) {
    args <- list(rank = 3, blocks = 3, keep = "draws", chains = if (is.null(prior)) 2 else 1,
                 iter = 10)
    if (!is.null(prior)) args$prior <- prior
    m <- do.call(pg_fit, c(list(X), args))
    c3 <- do.call(pg_fit, c(list(X), args, list(cluster = cl)))
    expect_identical(pg_numbers(c3), pg_numbers(m))
    expect_identical(c3$WH, m$WH)
    # update() continues in this process with the same numbers
    expect_identical(update(c3, iter = 4)$W, update(m, iter = 4)$W)
  }
  left <- parallel::clusterEvalQ(cl, ls(bnmf:::block_store))
  expect_identical(left, list(character(), character()))
  skip_if_no_hdf5()
  # the workers read their own columns of a 10x file
  X0 <- blocks_counts(na = 0)
  T <- tenx_counts() # the counts of X0
  expect_same_fit(pg_fit(T, rank = 3, blocks = 3, prior = ard(), cluster = cl, iter = 10),
                  pg_fit(X0, rank = 3, blocks = 3, prior = ard(), iter = 10))
})

test_that("by blocks, Poisson Gibbs posterior moments equal quadrature within Monte Carlo error", {
  skip_on_cran()
  # F = 1, T = 3, K = 1 (pois_exact_tiny(), helper-poisson.R): three blocks
  # of one column each
  x <- c(3, 0, 5); a <- 2; b <- 1.5; c <- 1.5; d <- 2
  ex <- pois_exact_tiny(x, a, b, c, d)
  set.seed(41)
  f <- bnmf(matrix(x, 1, 3), rank = 1, likelihood = "poisson", method = "gibbs",
            prior = list(W = gamma_prior(a, b), H = gamma_prior(c, d)), blocks = 3,
            iter = 4500, burnin = 500, keep = "draws", progress = FALSE)
  w <- f$draws[[1]]$W_draws[1, ]
  h <- f$draws[[1]]$H_draws
  fs <- list(W = w, H1 = h[1, ], H2 = h[2, ], H3 = h[3, ], WH3 = w * h[3, ], W2 = w^2,
             H3sq = h[3, ]^2)
  ref <- c(W = ex$W, H1 = ex$H[1], H2 = ex$H[2], H3 = ex$H[3], WH3 = ex$WH[3], W2 = ex$W2,
           H3sq = ex$H2[3])
  z <- (vapply(fs, mean, numeric(1)) - ref) / vapply(fs, batch_se, numeric(1))
  expect_true(all(abs(z) < 4), info = paste(names(z), round(z, 2), collapse = " "))
  # the fit's running means are the draws' means
  expect_equal(unname(f$W[1, 1]), mean(w), tolerance = 1e-12)
})

test_that("by blocks, the posterior is that of the Gibbs sampler in memory (z-tests)", {
  skip_on_cran()
  set.seed(5)
  X <- matrix(rpois(24, 3), 4, 6)
  X[2, 5] <- NA
  # quantities that do not depend on the labels of the factors
  stats_of <- function(f) {
    d <- f$draws[[1]]
    n <- ncol(d$W_draws)
    wh <- vapply(seq_len(n), function(s) {
      M <- matrix(d$W_draws[, s], 4, 2) %*% matrix(d$H_draws[, s], 2, 6)
      c(M[1, 1], M[3, 4], M[2, 5], M[1, 1]^2, sum(M))
    }, numeric(5))
    rbind(wh, loglik = f$trace$loglik[f$trace$sampling])
  }
  for (prior in list(gamma_prior(1, 1), ard())) {
    set.seed(6)
    args <- list(X, rank = 2, likelihood = "poisson", method = "gibbs", prior = prior,
                 iter = 3000, burnin = 200, keep = "draws", progress = FALSE)
    sb <- stats_of(do.call(bnmf, c(args, blocks = 3)))
    sm <- stats_of(do.call(bnmf, args))
    se <- sqrt(apply(sb, 1, batch_se, batches = 40)^2 + apply(sm, 1, batch_se, batches = 40)^2)
    z <- (rowMeans(sb) - rowMeans(sm)) / se
    expect_true(all(abs(z) < 4), info = paste(round(z, 2), collapse = " "))
  }
})

test_that("the kept draws of a sampler by blocks count towards bnmf.max_memory", {
  X <- blocks_counts()
  args <- list(X, rank = 2, likelihood = "poisson", method = "gibbs", iter = 100, burnin = 50,
               blocks = 3, progress = FALSE)
  # 8 bytes x (8 copies + 50 kept draws) x (30 x 2 + 2 x 45) = 69,600 bytes
  # with the draws, 9,600 without
  withr::local_options(bnmf.max_memory = 20000)
  expect_error(do.call(bnmf, c(args, keep = "draws")), "68 kB", class = "bnmf_error_input")
  set.seed(1)
  expect_s3_class(do.call(bnmf, c(args, keep = "summary")), "bnmf_poisson")
})
