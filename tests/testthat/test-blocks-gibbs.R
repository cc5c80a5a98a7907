# Gaussian Gibbs by blocks of samples (R/blocks-gaussian.R,
# src/nmf_blocks.c): the same draws wherever the blocks are (memory, HDF5
# files, a cluster), the same posterior as the sampler in memory, the
# joint distribution right, and the refusals of the fits by blocks.

gibbs_blocks_fit <- function(X, ..., seed = 6, iter = 40, burnin = 10) {
  set.seed(seed)
  bnmf(X, rank = 3, method = "gibbs", iter = iter, burnin = burnin, thin = 2, keep = "draws",
       ...)
}

# Few sweeps (a file is read in every sweep, a cluster answers two calls a
# sweep) from a given start (no warm-up sweeps).
file_fit <- function(X, ...) {
  set.seed(7)
  init <- list(W = matrix(rexp(nrow(X) * 3), nrow(X)), H = matrix(rexp(3 * ncol(X)), 3),
               tau = 1)
  gibbs_blocks_fit(X, ..., iter = 12, burnin = 4, init = init)
}

# The parts of a Gibbs fit that must agree bit for bit.
expect_same_gibbs <- function(a, b) {
  expect_identical(unname(a$W), unname(b$W))
  expect_identical(unname(a$H), unname(b$H))
  expect_identical(unname(a$W_sd), unname(b$W_sd))
  expect_identical(unname(a$H_sd), unname(b$H_sd))
  expect_identical(a$tau, b$tau)
  expect_identical(a$trace, b$trace)
  expect_identical(a$draws, b$draws)
  expect_identical(a$moments[c("W", "H", "tau")], b$moments[c("W", "H", "tau")])
  expect_identical(lapply(a$chains, function(ch) unname(ch[c("W", "H", "tau", "seed")])),
                   lapply(b$chains, function(ch) unname(ch[c("W", "H", "tau", "seed")])))
}

test_that("Gibbs by blocks: the fit of the sampler in memory's class and fields; draws and moments agree", {
  for (sparse in c(FALSE, TRUE)) {
    X <- blocks_gaussian(I = 12, J = 15, sparse = sparse)
    a <- gibbs_blocks_fit(X)
    b <- gibbs_blocks_fit(X, blocks = 3)
    expect_identical(class(b), class(a))
    expect_identical(names(b), names(a))
    expect_identical(names(b$chains[[1L]]), names(a$chains[[1L]]))
    expect_identical(setdiff(names(b$settings), names(a$settings)), "blocks")
    expect_identical(lapply(b[c("W", "H", "W_sd", "H_sd")], dimnames),
                     lapply(a[c("W", "H", "W_sd", "H_sd")], dimnames))
    # W H's moments on the entries the fit in memory keeps them
    expect_identical(length(b$moments$WH$mean), length(a$moments$WH$mean))
    expect_identical(b$moments$WH$n, a$moments$WH$n)
    # the moments are those of the kept draws (15 of them), the last draw the chain's state
    d <- b$draws[[1L]]
    expect_identical(ncol(d$H), 15L)
    expect_equal(as.vector(b$H), rowMeans(d$H), tolerance = 1e-12)
    expect_equal(as.vector(b$W), rowMeans(d$W), tolerance = 1e-12)
    expect_equal(as.vector(b$H_sd), apply(d$H, 1, sd), tolerance = 1e-10)
    expect_identical(d$H[, 15L], as.vector(b$chains[[1L]]$H))
    expect_identical(d$W[, 15L], as.vector(b$chains[[1L]]$W))
    kept <- b$trace$sampling & b$trace$iteration %% 2 == 0
    expect_equal(b$tau, mean(b$trace$tau[kept]), tolerance = 1e-12)
    # W H's mean over every 4th kept draw (wh_thin = 4: the 1st, 5th, ...)
    t <- seq(1, 15, by = 4)
    wh <- Reduce(`+`, lapply(t, function(s) {
      matrix(d$W[, s], nrow(X)) %*% matrix(d$H[, s], 3)
    })) / length(t)
    wh <- if (sparse) wh[cbind(X@i + 1L, rep(seq_len(ncol(X)), diff(X@p)))] else as.vector(wh)
    expect_equal(b$moments$WH$mean, wh, tolerance = 1e-12)
  }
})

test_that("Gibbs by blocks: the same numbers from memory, an HDF5Matrix, a 10x file and a 2-worker cluster", {
  skip_on_cran()
  cl <- test_cluster()
  G <- blocks_gaussian(I = 20, J = 24)
  g3 <- file_fit(G, blocks = 3)
  c3 <- file_fit(G, blocks = 3, cluster = cl)
  expect_same_gibbs(c3, g3)
  expect_identical(c3$moments, g3$moments)
  expect_identical(c3$chains, g3$chains)
  # two chains, one after the other on the same blocks
  a2 <- gibbs_blocks_fit(G, blocks = 2, chains = 2, iter = 12, burnin = 4)
  b2 <- gibbs_blocks_fit(G, cluster = cl, chains = 2, iter = 12, burnin = 4)
  expect_identical(b2$settings$blocks, 2L)
  expect_same_gibbs(b2, a2)
  left <- parallel::clusterEvalQ(cl, ls(bnmf:::block_store))
  expect_identical(left, list(character(), character()))
  # update() continues a fit of a matrix in memory
  u <- update(g3, iter = 10, progress = FALSE)
  expect_identical(g3$n_draws, 4)
  expect_identical(u$n_draws, g3$n_draws + 5)
  skip_if_no_hdf5()
  T <- tenx_counts() # (before any other file: see tenx_counts())
  D <- HDF5Array::writeHDF5Array(G, file.path(withr::local_tempdir(), "g.h5"), "x")
  d3 <- file_fit(D, blocks = 3)
  expect_same_gibbs(d3, g3)
  # a DelayedMatrix keeps no moments of W H: the mean of W H from the draws
  expect_identical(d3$moments$WH$n, 0)
  expect_equal(unname(fitted(d3)), unname(bnmf:::draws_wh_mean(d3)))
  expect_error(predict(d3, se.fit = TRUE), class = "bnmf_error_unsupported")
  expect_error(update(d3, iter = 5, progress = FALSE), class = "bnmf_error_unsupported",
               regexp = "read by blocks")
  # the file's blocks are dgCMatrix: the numbers of the sparse matrix
  S <- methods::as(blocks_counts(na = 0) + 0, "CsparseMatrix")
  s3 <- file_fit(S, blocks = 3)
  t3 <- file_fit(T, blocks = 3)
  expect_same_gibbs(t3, s3)
  expect_identical(t3$X, T)
  tc <- file_fit(T, blocks = 3, cluster = cl)
  expect_same_gibbs(tc, s3)
})

# Batch-means z-scores of the differences of E[f] between two chains' draws
# (columns of A and B: one summary each).
two_chain_z <- function(A, B, batches = 40) {
  vapply(seq_len(ncol(A)), function(s) {
    (mean(A[, s]) - mean(B[, s])) /
      sqrt(batch_se(A[, s], batches)^2 + batch_se(B[, s], batches)^2)
  }, numeric(1))
}

test_that("Gibbs by blocks samples the posterior of the sampler in memory", {
  set.seed(5)
  W0 <- cbind(c(3, 2, 1, 0.2, 0.1, 0.1), c(0.1, 0.2, 0.5, 2, 3, 2))
  H0 <- rbind(c(2, 1.5, 0.1, 0.2, 1, 2, 0.3, 1.2), c(0.1, 0.2, 2, 1.8, 1, 0.5, 2.5, 0.1))
  X <- W0 %*% H0 + matrix(rnorm(48, sd = 0.3), 6, 8)
  n <- 4000
  run <- function(seed, ...) {
    set.seed(seed)
    bnmf(X, rank = 2, method = "gibbs", iter = n + 500, burnin = 500, keep = "draws", ...)
  }
  # summaries of each kept draw: tau, two entries of W H (free of the
  # factors' labels), W[1, k] and H[k, 1] of the factor k that W[1, ] loads
  summaries <- function(f) {
    d <- f$draws[[1L]]
    k <- which.max(f$W[1, ])
    S <- cbind(tau = f$trace$tau[f$trace$sampling],
               wh11 = colSums(d$W[c(1, 7), ] * d$H[c(1, 2), ]),
               wh68 = colSums(d$W[c(6, 12), ] * d$H[c(15, 16), ]),
               w1 = d$W[1 + 6 * (k - 1), ], h1 = d$H[k, ])
    cbind(S, S^2)
  }
  a <- summaries(run(11))
  b <- summaries(run(12, blocks = 3))
  z <- two_chain_z(a, b)
  expect_true(all(abs(z) < 4), info = paste(round(z, 2), collapse = " "))
  # and the sampler has moved: the posterior sd of tau is not degenerate
  expect_gt(sd(b[, "tau"]), 0.1 * mean(b[, "tau"]))
})

test_that("Gibbs by blocks gets the joint distribution right", {
  # The successive-conditional simulator of helper-geweke.R with the sweep
  # by blocks (3 blocks of one column) and its holders in this process; new
  # data are written into the holders' blocks after each sweep.
  I <- 4; J <- 3; K <- 2; NB <- 3L
  ref <- geweke_nmf_model(I = I, J = J, K = K, lambda = 1, alpha = 3, beta = 2)
  runners <- new.env()
  on.exit(for (r in as.list(runners)) r$close(), add = TRUE)
  prior <- list(lamW = matrix(1, I, K), lamH = matrix(1, K, J), alpha = 3, beta = 2)
  new_data <- function(s, W, H, tau) {
    X <- W %*% H + matrix(stats::rnorm(I * J, sd = 1 / sqrt(tau)), I, J)
    h <- get(s$key, envir = bnmf:::block_store)
    for (b in seq_along(s$runner$cols)) {
      r <- s$runner$cols[[b]]
      h$blocks[[b]]$x <- X[, r[1L]:r[2L], drop = FALSE]
    }
    s$ctrl$sumsq <- sum(X^2)
    s$env$acc <- s$runner$w_step(NULL, list(rule = 3))
    s
  }
  init <- function() {
    W <- matrix(stats::rexp(I * K), I, K)
    H <- matrix(stats::rexp(K * J), K, J)
    tau <- stats::rgamma(1, 3, 2)
    X <- W %*% H
    runner <- bnmf:::gaussian_block_runner(bnmf:::block_source(X, NB, 0L), K)
    assign(as.character(length(runners) + 1L), runner, envir = runners)
    seeds <- lapply(seq_len(NB), function(b) {
      parallel::nextRNGStream(c(10407L, as.integer(stats::runif(6) * 2147483646) + 1L))
    })
    runner$gibbs_init(lapply(runner$cols, function(r) list(H = H[, r[1L]:r[2L], drop = FALSE])),
                      prior$lamH, seeds, FALSE)
    env <- new.env()
    env$wq <- list(W = as.double(W) + 0, tau = tau + 0)
    env$log_rates <- 0
    s <- list(runner = runner, key = runner$key, env = env,
              ctrl = list(dims = c(I, J, K), n_obs = I * J, sumsq = 0, rule = 3),
              W = W, H = H, tau = tau)
    new_data(s, W, H, tau)
  }
  step <- function(s) {
    bnmf:::gaussian_gibbs_block_sweep(s$env, s$runner, prior, s$ctrl, function() NULL)
    h <- get(s$key, envir = bnmf:::block_store)
    s$H <- do.call(cbind, lapply(h$states, function(b) matrix(b$H, K)))
    s$W <- matrix(s$env$wq$W, I, K)
    s$tau <- s$env$wq$tau
    new_data(s, s$W, s$H, s$tau)
  }
  stats <- function(s) {
    c(tau = s$tau, sumW = sum(s$W), sumH = sum(s$H), logW11 = log(s$W[1, 1]),
      logHKJ = log(s$H[K, J]))
  }
  model <- list(init = init, step = step, stats = stats, prior = ref$prior, exact = ref$exact)
  expect_geweke(geweke_run(model, n = 12000, seed = 41), label = "by blocks")
})

test_that("Gibbs by blocks refuses ARD, classed (missing entries: test-blocks-missing.R)", {
  X <- blocks_gaussian(I = 10, J = 12)
  expect_error(bnmf(X, rank = 2, method = "gibbs", prior = ard(), blocks = 2),
               class = "bnmf_error_unsupported", regexp = "ARD")
  expect_error(bnmf(X, rank = c(2, 2), method = "gibbs", blocks = 2),
               class = "bnmf_error_unsupported", regexp = "tri-factorisation")
  expect_identical(ls(bnmf:::block_store), character())
})
