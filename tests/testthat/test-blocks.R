# Poisson VB by blocks of samples (R/blocks.R, src/pois_vb.c): the same
# numbers as the fit in memory; from HDF5 files read by blocks; on the
# workers of a cluster.

pois_vb_fit <- function(X, ..., seed = 4, iter = 60) {
  set.seed(seed)
  muffle_convergence(bnmf(X, likelihood = "poisson", method = "vb", iter = iter, ...))
}

rel_diff <- function(a, b) max(abs(a - b) / pmax(abs(b), 1e-300))

test_that("one block is the fit in memory, bit for bit (dense with NA, sparse, ARD)", {
  # The blocks' passes run in column order; in memory the pass for q(W)'s
  # sums runs by rows (pois_rows()): the same q bit for bit, the log
  # likelihood summed in the other order. In column order in memory too
  # (option bnmf.vb_rows = FALSE), the whole fit is the same bits.
  X <- blocks_counts(I = 45, J = 30)
  for (args in list(list(X = X, rank = 3),
                    list(X = blocks_counts(I = 45, J = 30, sparse = TRUE, na = 0), rank = 3),
                    list(X = X, rank = 4, prior = ard()))) {
    f0 <- do.call(pois_vb_fit, args)
    f1 <- do.call(pois_vb_fit, c(args, blocks = 1))
    fc <- withr::with_options(list(bnmf.vb_rows = FALSE), do.call(pois_vb_fit, args))
    for (f in list(f0, fc)) {
      expect_identical(f1$W, f$W)
      expect_identical(f1$H, f$H)
      expect_identical(f1$q[setdiff(names(f1$q), "elbo")], f$q[setdiff(names(f$q), "elbo")])
      expect_identical(f1$lambda, f$lambda)
      expect_identical(class(f1), class(f))
      expect_identical(names(f1), names(f))
      expect_identical(f1$n_missing, f$n_missing)
    }
    expect_identical(elbo(f1), elbo(fc))
    expect_identical(f1$q$elbo, fc$q$elbo)
    expect_equal(elbo(f1), elbo(f0), tolerance = 1e-13)
  }
})

test_that("a partition in 3 blocks agrees with one block to rounding, and its ELBO never decreases", {
  X <- blocks_counts()
  for (prior in list(exponential(), ard())) {
    f1 <- pois_vb_fit(X, rank = 3, prior = prior, blocks = 1)
    f3 <- pois_vb_fit(X, rank = 3, prior = prior, blocks = 3)
    expect_identical(f3$settings$blocks, 3L)
    expect_lt(rel_diff(f3$W, f1$W), 1e-10)
    expect_lt(rel_diff(f3$H, f1$H), 1e-10)
    expect_lt(rel_diff(elbo(f3), elbo(f1)), 1e-12)
    e <- elbo(f3)
    expect_true(all(diff(e) >= -1e-9 * abs(e[-1])))
    # the trace's ELBO is the ELBO of the final state, as the in-memory code
    # computes it
    pp <- f3$prior
    pr <- if (identical(pp$type, "ard")) list(a = pp$a, c = pp$c, ard = pp$ard) else
      pp[c("a", "b", "c", "d")]
    expect_equal(pois_hook("pois_vb_elbo")(X, f3$q, pr), e[length(e)], tolerance = 1e-12)
  }
})

test_that("update() continues a fit by blocks by the same blocks", {
  X <- blocks_counts()
  a <- pois_vb_fit(X, rank = 2, blocks = 3, iter = 20, tol = 0)
  b <- update(a, iter = 10)
  c30 <- pois_vb_fit(X, rank = 2, blocks = 3, iter = 30, tol = 0)
  expect_identical(b$W, c30$W)
  expect_identical(b$H, c30$H)
  expect_identical(elbo(b), elbo(c30))
})

test_that("a 10x HDF5 file and an HDF5Matrix are read by blocks into the fit of the matrix", {
  skip_if_no_hdf5()
  X <- blocks_counts(na = 0)
  dir <- withr::local_tempdir()
  T <- tenx_counts()
  expect_true(bnmf:::is_tenx(T))
  # a few sweeps: each reads every block of the file again, and the numbers
  # of one sweep are those of any other (one block: the fit in memory in
  # column order, as the blocks run)
  m1 <- withr::with_options(list(bnmf.vb_rows = FALSE), pois_vb_fit(X, rank = 3, iter = 8))
  m3 <- pois_vb_fit(X, rank = 3, blocks = 3, iter = 8)
  t1 <- pois_vb_fit(T, rank = 3, blocks = 1, iter = 8)
  t3 <- pois_vb_fit(T, rank = 3, blocks = 3, iter = 8)
  expect_identical(unname(t1$W), unname(m1$W))
  expect_identical(elbo(t1), elbo(m1))
  expect_identical(unname(t3$W), unname(m3$W))
  expect_identical(unname(t3$H), unname(m3$H))
  expect_identical(elbo(t3), elbo(m3))
  expect_s3_class(t3, c("bnmf_vb", "bnmf_poisson", "bnmf"))
  expect_identical(t3$X, T)
  # a dense HDF5Matrix (blocks through DelayedArray), bare and as an assay
  D <- HDF5Array::writeHDF5Array(X, file.path(dir, "dense.h5"), "counts")
  d3 <- pois_vb_fit(D, rank = 3, blocks = 3, iter = 8)
  expect_identical(unname(d3$W), unname(m3$W))
  expect_identical(elbo(d3), elbo(m3))
  skip_if_not_installed("SingleCellExperiment")
  sce <- SingleCellExperiment::SingleCellExperiment(assays = list(counts = D))
  e3 <- pois_vb_fit(sce, rank = 3, blocks = 3, assay = "counts", iter = 8)
  expect_identical(unname(e3$W), unname(m3$W))
  expect_s4_class(e3$X, "DelayedMatrix")
})

test_that("the generics of a fit from a file answer as those of the fit in memory", {
  skip_if_no_hdf5()
  X <- blocks_counts(na = 0)
  T <- tenx_counts()
  m <- pois_vb_fit(X, rank = 2, blocks = 3, iter = 20)
  t <- pois_vb_fit(T, rank = 2, blocks = 3, iter = 20)
  expect_identical(unname(t$W), unname(m$W))
  expect_equal(as.numeric(logLik(t)), as.numeric(logLik(m)), tolerance = 1e-12)
  expect_identical(attributes(logLik(t))[c("df", "nobs")], attributes(logLik(m))[c("df", "nobs")])
  expect_equal(unname(residuals(t)), unname(residuals(m)), tolerance = 1e-12)
  expect_equal(residuals(t, i = c(1, 5, 30), j = c(2, 2, 44)),
               residuals(m, i = c(1, 5, 30), j = c(2, 2, 44)), tolerance = 1e-12)
  expect_equal(glance(t)[setdiff(names(glance(t)), "call")],
               glance(m)[setdiff(names(glance(m)), "call")], tolerance = 1e-12)
  expect_equal(unname(fitted(t)), unname(fitted(m)), tolerance = 1e-12)
  u <- muffle_convergence(update(t, iter = 5))
  expect_identical(unname(u$W), unname(muffle_convergence(update(m, iter = 5))$W))
})

test_that("the default blocks of a file follow DelayedArray's block size", {
  skip_if_no_hdf5()
  X <- blocks_counts(na = 0)
  T <- tenx_counts()
  old <- DelayedArray::getAutoBlockSize()
  suppressMessages(DelayedArray::setAutoBlockSize(1200))
  on.exit(suppressMessages(DelayedArray::setAutoBlockSize(old)), add = TRUE)
  nnz <- sum(X > 0)
  f <- pois_vb_fit(T, rank = 2, iter = 5)
  expect_identical(f$settings$blocks, as.integer(ceiling(12 * nnz / 1200)))
  src <- bnmf:::block_source(T, NULL, 0L)
  cols <- unlist(lapply(src$specs, function(s) s$cols[1L]:s$cols[2L]))
  expect_identical(as.integer(cols), seq_len(ncol(X)))
  # each block read on its own is those columns of X
  for (s in src$specs) {
    expect_identical(as.matrix(bnmf:::read_block(s)), unname(X[, s$cols[1L]:s$cols[2L]]) + 0)
  }
})

test_that("counts that are not counts are refused when a file is read", {
  skip_if_no_hdf5()
  X <- blocks_counts(na = 0)
  X[3, 5] <- 2.5
  D <- HDF5Array::writeHDF5Array(X, file.path(withr::local_tempdir(), "bad.h5"), "counts")
  expect_error(pois_vb_fit(D, rank = 2), class = "bnmf_error_input", regexp = "`X` must hold counts")
})

test_that("bad `blocks` and `cluster` are input errors; other methods refuse them", {
  X <- blocks_counts()
  expect_error(pois_vb_fit(X, rank = 2, blocks = 0), class = "bnmf_error_input", regexp = "`blocks`")
  expect_error(pois_vb_fit(X, rank = 2, blocks = 46), class = "bnmf_error_input", regexp = "`blocks`")
  expect_error(pois_vb_fit(X, rank = 2, blocks = 1.5), class = "bnmf_error_input", regexp = "`blocks`")
  expect_error(pois_vb_fit(X, rank = 2, cluster = "a"), class = "bnmf_error_input",
               regexp = "`cluster`")
  expect_error(bnmf(X, rank = 2, likelihood = "poisson", method = "ssvi", blocks = 2),
               class = "bnmf_error_unsupported", regexp = "method \"ssvi\"")
  expect_error(bnmf(X, rank = 2, method = "vb", prior = ard(), blocks = 2),
               class = "bnmf_error_unsupported")
})

test_that("a 2-worker cluster gives the numbers of one process for the same blocks", {
  skip_on_cran()
  cl <- test_cluster()
  X <- blocks_counts()
  m3 <- pois_vb_fit(X, rank = 3, blocks = 3)
  c3 <- pois_vb_fit(X, rank = 3, blocks = 3, cluster = cl)
  expect_identical(c3$W, m3$W)
  expect_identical(c3$H, m3$H)
  expect_identical(c3$q, m3$q)
  expect_identical(elbo(c3), elbo(m3))
  expect_identical(names(c3), names(m3))
  # two chains, ARD
  a <- pois_vb_fit(X, rank = 4, prior = ard(), blocks = 2, chains = 2)
  b <- pois_vb_fit(X, rank = 4, prior = ard(), cluster = cl, chains = 2)
  expect_identical(b$settings$blocks, 2L)
  expect_identical(b$W, a$W)
  expect_identical(b$lambda, a$lambda)
  expect_identical(b$trace, a$trace)
  # the workers keep nothing after the fit
  left <- parallel::clusterEvalQ(cl, ls(bnmf:::block_store))
  expect_identical(left, list(character(), character()))
  expect_error(bnmf(X, rank = 2, likelihood = "poisson", method = "ssvi", cluster = cl),
               class = "bnmf_error_unsupported", regexp = "`cluster`")
  skip_if_no_hdf5()
  # the workers read their own columns of a 10x file
  T <- tenx_counts()
  t1 <- pois_vb_fit(T, rank = 3, blocks = 3)
  t2 <- pois_vb_fit(T, rank = 3, blocks = 3, cluster = cl)
  expect_identical(t2$W, t1$W)
  expect_identical(elbo(t2), elbo(t1))
  # and of a dense HDF5Matrix (through DelayedArray on the workers)
  X0 <- blocks_counts(na = 0)
  D <- HDF5Array::writeHDF5Array(X0, file.path(withr::local_tempdir(), "d.h5"), "x")
  d2 <- pois_vb_fit(D, rank = 3, cluster = cl)
  m2 <- pois_vb_fit(X0, rank = 3, blocks = 2)
  expect_identical(unname(d2$W), unname(m2$W))
  expect_identical(elbo(d2), elbo(m2))
})

test_that("a worker that died ends the fit with an error naming it", {
  skip_on_cran()
  cl <- parallel::makePSOCKcluster(2)
  # each worker stopped on its own, and the dead one's socket closed
  on.exit(for (w in seq_along(cl)) {
    try(parallel::stopCluster(cl[w]), silent = TRUE)
    try(close(cl[[w]]$con), silent = TRUE)
  }, add = TRUE)
  pids <- unlist(parallel::clusterCall(cl, Sys.getpid))
  tools::pskill(pids[2])
  Sys.sleep(0.5)
  X <- blocks_counts()
  expect_error(pois_vb_fit(X, rank = 2, cluster = cl), class = "bnmf_error_cluster",
               regexp = "worker 2 of `cluster`")
})

# ---- Gaussian NMF, methods "vb" and "icm", by blocks (R/blocks-gaussian.R,
# src/nmf_blocks.c) ----

gauss_fit <- function(X, method, ..., seed = 5, iter = 60) {
  set.seed(seed)
  muffle_convergence(bnmf(X, method = method, iter = iter, ...))
}

test_that("Gaussian VB and ICM: one block is the fit in memory, bit for bit", {
  for (sparse in c(FALSE, TRUE)) for (method in c("vb", "icm")) {
    X <- blocks_gaussian(sparse = sparse)
    f0 <- gauss_fit(X, method, rank = 3)
    f1 <- gauss_fit(X, method, rank = 3, blocks = 1)
    expect_identical(f1$W, f0$W)
    expect_identical(f1$H, f0$H)
    expect_identical(f1$tau, f0$tau)
    expect_identical(f1$trace, f0$trace)
    expect_identical(f1$chains, f0$chains)
    expect_identical(f1$q_W, f0$q_W)
    expect_identical(f1$q_H, f0$q_H)
    expect_identical(f1$q_tau, f0$q_tau)
    expect_identical(class(f1), class(f0))
    expect_identical(names(f1), names(f0))
    expect_identical(f1$settings$blocks, 1L)
  }
  # from a given start, with and without tau, and with two chains
  X <- blocks_gaussian()
  set.seed(3)
  st <- list(W = matrix(rexp(90), 30), H = matrix(rexp(135), 3))
  for (init in list(st, c(st, tau = 2))) for (method in c("vb", "icm")) {
    f0 <- gauss_fit(X, method, rank = 3, init = init, iter = 20)
    f1 <- gauss_fit(X, method, rank = 3, init = init, iter = 20, blocks = 1)
    expect_identical(f1$chains, f0$chains)
    expect_identical(f1$trace, f0$trace)
  }
  f0 <- gauss_fit(X, "vb", rank = 2, chains = 2, iter = 20)
  f1 <- gauss_fit(X, "vb", rank = 2, chains = 2, iter = 20, blocks = 1)
  expect_identical(f1$chains, f0$chains)
  expect_identical(f1$best, f0$best)
})

test_that("Gaussian VB and ICM: 3 blocks agree with one block to rounding", {
  for (sparse in c(FALSE, TRUE)) for (method in c("vb", "icm")) {
    X <- blocks_gaussian(sparse = sparse)
    f1 <- gauss_fit(X, method, rank = 3, blocks = 1)
    f3 <- gauss_fit(X, method, rank = 3, blocks = 3)
    expect_identical(f3$settings$blocks, 3L)
    expect_lt(rel_diff(f3$W, f1$W), 1e-10)
    expect_lt(rel_diff(f3$H, f1$H), 1e-10)
    expect_lt(rel_diff(f3$trace$logpost, f1$trace$logpost), 1e-10)
    # the objective never decreases
    e <- f3$trace$logpost
    expect_true(all(diff(e) >= -1e-9 * abs(e[-1])))
  }
})

test_that("Gaussian fits by blocks refuse ARD and other methods (missing entries: test-blocks-missing.R)", {
  X <- blocks_gaussian()
  expect_error(bnmf(X, rank = 2, method = "vb", prior = ard(), blocks = 2),
               class = "bnmf_error_unsupported", regexp = "ARD")
  expect_error(bnmf(X, rank = 2, method = "hmc", blocks = 2),
               class = "bnmf_error_unsupported", regexp = "method \"hmc\"")
  expect_error(bnmf(X, rank = 2, method = "np", blocks = 2),
               class = "bnmf_error_unsupported", regexp = "method \"np\"")
  expect_error(bnmf(X, rank = c(2, 2), method = "vb", blocks = 2),
               class = "bnmf_error_unsupported", regexp = "tri-factorisation")
  expect_error(bnmf(X, rank = 2, method = "icm", blocks = 0), class = "bnmf_error_input",
               regexp = "`blocks`")
  expect_error(bnmf(X, rank = 2, method = "icm", cluster = 3), class = "bnmf_error_input",
               regexp = "`cluster`")
})

test_that("Gaussian VB and ICM from a 10x file and an HDF5Matrix: the numbers of the matrix", {
  skip_if_no_hdf5()
  # the file's blocks are dgCMatrix: the fit of the sparse matrix
  X <- methods::as(blocks_counts(na = 0) + 0, "CsparseMatrix")
  T <- tenx_counts()
  G <- blocks_gaussian()
  D <- HDF5Array::writeHDF5Array(G, file.path(withr::local_tempdir(), "g.h5"), "x")
  # a few sweeps: each reads every block of the file twice
  for (method in c("vb", "icm")) {
    m1 <- gauss_fit(X, method, rank = 3, iter = 8)
    m3 <- gauss_fit(X, method, rank = 3, iter = 8, blocks = 3)
    t1 <- gauss_fit(T, method, rank = 3, iter = 8, blocks = 1)
    t3 <- gauss_fit(T, method, rank = 3, iter = 8, blocks = 3)
    expect_identical(unname(t1$W), unname(m1$W))
    expect_identical(t1$trace, m1$trace)
    expect_identical(unname(t3$W), unname(m3$W))
    expect_identical(unname(t3$H), unname(m3$H))
    expect_identical(t3$trace, m3$trace)
    expect_s3_class(t3, c(paste0("bnmf_", method), "bnmf_nmf", "bnmf"))
    expect_identical(t3$X, T)
    g3 <- gauss_fit(G, method, rank = 3, iter = 8, blocks = 3)
    d3 <- gauss_fit(D, method, rank = 3, iter = 8, blocks = 3)
    expect_identical(unname(d3$W), unname(g3$W))
    expect_identical(d3$trace, g3$trace)
    # update() continues Gaussian fits in memory: a fit read by blocks is refused
    expect_error(update(d3, iter = 5, progress = FALSE), class = "bnmf_error_unsupported",
                 regexp = "read by blocks")
  }
})

test_that("Gaussian VB and ICM on a 2-worker cluster: the numbers of one process", {
  skip_on_cran()
  cl <- test_cluster()
  X <- blocks_gaussian()
  for (method in c("vb", "icm")) {
    m3 <- gauss_fit(X, method, rank = 3, blocks = 3)
    c3 <- gauss_fit(X, method, rank = 3, blocks = 3, cluster = cl)
    expect_identical(c3$chains, m3$chains)
    expect_identical(c3$trace, m3$trace)
    expect_identical(names(c3), names(m3))
  }
  S <- blocks_gaussian(sparse = TRUE)
  a <- gauss_fit(S, "vb", rank = 2, blocks = 2, chains = 2)
  b <- gauss_fit(S, "vb", rank = 2, cluster = cl, chains = 2)
  expect_identical(b$settings$blocks, 2L)
  expect_identical(b$chains, a$chains)
  left <- parallel::clusterEvalQ(cl, ls(bnmf:::block_store))
  expect_identical(left, list(character(), character()))
  skip_if_no_hdf5()
  T <- tenx_counts()
  t1 <- gauss_fit(T, "icm", rank = 3, blocks = 3, iter = 30)
  t2 <- gauss_fit(T, "icm", rank = 3, blocks = 3, iter = 30, cluster = cl)
  expect_identical(t2$W, t1$W)
  expect_identical(t2$trace, t1$trace)
})

test_that("the blocks' streams are the chain's substreams, swapped in and out", {
  RNGkind("L'Ecuyer-CMRG")
  on.exit(RNGkind("default"), add = TRUE)
  set.seed(7)
  s0 <- .Random.seed
  st <- bnmf:::block_streams(3)
  # substreams b = 1, 2, 3 of the session's stream, and the session's state untouched
  expect_identical(st[[1]], parallel::nextRNGSubStream(s0))
  expect_identical(st[[3]], parallel::nextRNGSubStream(parallel::nextRNGSubStream(st[[1]])))
  expect_identical(.Random.seed, s0)
  # a block's draws from its own stream; the session's stream goes on as if
  # they had not been made
  r <- bnmf:::with_stream(st[[2]], function() runif(2))
  expect_identical(.Random.seed, s0)
  assign(".Random.seed", st[[2]], envir = globalenv())
  expect_identical(r$value, runif(2))
  expect_identical(r$seed, .Random.seed)
  assign(".Random.seed", s0, envir = globalenv())
  # put back on an error too
  expect_error(bnmf:::with_stream(st[[1]], function() {
    runif(1)
    stop("boom")
  }), "boom")
  expect_identical(.Random.seed, s0)
  RNGkind("default")
  expect_error(bnmf:::block_streams(2), "L'Ecuyer")
})

test_that("a Gaussian fit by blocks warns of negative values as the fit in memory does", {
  X <- blocks_gaussian() - 1 # some entries negative
  share <- mean(X < 0)
  expect_gt(share, 0.05)
  w_mem <- tryCatch(gauss_fit(X, "icm", rank = 2, iter = 2), bnmf_warning_negative = identity)
  w_blk <- tryCatch(gauss_fit(X, "icm", rank = 2, iter = 2, blocks = 3),
                    bnmf_warning_negative = identity)
  expect_s3_class(w_blk, "bnmf_warning_negative")
  expect_identical(conditionMessage(w_blk), conditionMessage(w_mem))
  expect_match(conditionMessage(w_blk), sprintf("%.1f%%", 100 * share), fixed = TRUE)
  # a few negatives (at most 5%) are no cause for a warning
  X2 <- blocks_gaussian()
  X2[1:3] <- -0.1
  expect_no_warning(gauss_fit(X2, "icm", rank = 2, iter = 2, blocks = 3))
})
