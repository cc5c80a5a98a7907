# The spectral start of count fits (init = "spectral", R/spectral.R).

# Counts of K programmes with disjoint marker genes, each sample drawn from
# one programme only: the clusters a start must find.
programme_counts <- function(I = 60, J = 150, K = 3, depth = 60, seed = 31) {
  set.seed(seed)
  W <- matrix(0.02, I, K)
  for (k in seq_len(K)) W[(k - 1) * (I %/% K) + seq_len(I %/% K), k] <- 1
  W <- sweep(W, 2, colSums(W), "/")
  cl <- sample(rep_len(seq_len(K), J))
  X <- matrix(rpois(I * J, W[, cl] * rep(depth, I * J)), I, J)
  list(X = X, W = W, cl = cl)
}

memory_map <- function(X) function(fun, args) list(fun(X, args, c(1L, ncol(X))))

test_that("the spectral start finds well separated programmes, with the clusters' profiles as W", {
  d <- programme_counts()
  K <- 3L
  set.seed(1)
  st <- bnmf:::spectral_start(memory_map(d$X), nrow(d$X), ncol(d$X), K)
  cl <- max.col(t(st$H), ties.method = "first")
  # the same partition as the truth, up to the clusters' labels
  tab <- table(d$cl, cl)
  expect_identical(sum(apply(tab, 1, max)), ncol(d$X))
  expect_identical(sum(tab > 0), K)
  for (k in seq_len(K)) {
    prof <- rowSums(d$X[, cl == k, drop = FALSE])
    expect_equal(st$W[, k], prof / sum(prof) + 1e-3 / nrow(d$X), tolerance = 1e-12)
  }
  n <- colSums(d$X)
  expect_equal(st$H[cbind(cl, seq_along(cl))], n + 0.1 * mean(n) / K, tolerance = 1e-12)
  off <- matrix(TRUE, K, ncol(d$X))
  off[cbind(cl, seq_along(cl))] <- FALSE
  expect_true(all(st$H[off] == 0.1 * mean(n) / K))
  # a dgCMatrix of the same counts gives the same clusters and W
  set.seed(1)
  st2 <- bnmf:::spectral_start(memory_map(Matrix::Matrix(d$X, sparse = TRUE)), nrow(d$X),
                               ncol(d$X), K)
  expect_identical(max.col(t(st2$H), ties.method = "first"), cl)
  expect_equal(st2$W, st$W, tolerance = 1e-12)
})

test_that("init = \"spectral\" fits counts, and recovers the programmes with VB and Gibbs", {
  d <- programme_counts()
  X <- d$X
  X[c(3, 70, 400)] <- NA
  for (method in c("vb", "gibbs")) {
    set.seed(2)
    f <- muffle_convergence(bnmf(X, 3, likelihood = "poisson", method = method, iter = 200,
                                 init = "spectral", progress = FALSE))
    C <- stats::cor(d$W, as.matrix(f$W))
    expect_gt(min(apply(C, 1, max)), 0.98)
    expect_identical(length(unique(apply(C, 1, which.max))), 3L)
  }
})

test_that("the spectral start is the same from blocks in memory, an HDF5 file and a cluster", {
  X <- blocks_counts(na = 0, sparse = TRUE)
  fit <- function(...) {
    set.seed(5)
    muffle_convergence(bnmf(..., rank = 3, likelihood = "poisson", method = "vb", iter = 15,
                            init = "spectral", progress = FALSE))
  }
  f0 <- fit(X)
  f1 <- fit(X, blocks = 1)
  expect_identical(f1$W, f0$W)
  expect_identical(f1$H, f0$H)
  f3 <- fit(X, blocks = 3)
  skip_if_no_hdf5()
  T <- tenx_counts() # (made here: its first call sets the seed)
  expect_identical(unname(fit(T, blocks = 3)$W), unname(f3$W))
  fc <- fit(X, blocks = 3, cluster = test_cluster())
  expect_identical(fc$W, f3$W)
  expect_identical(fc$H, f3$H)
})

test_that("counts that cannot give K clusters start at random; a bad `init` is an input error", {
  # two distinct samples, each twice: no 3 clusters
  a <- c(5, 0, 1, 2, 0, 3)
  b <- c(0, 4, 0, 1, 2, 0)
  X <- cbind(a, a, b, b)
  set.seed(3)
  f <- muffle_convergence(bnmf(X, 3, likelihood = "poisson", method = "vb", iter = 5,
                               init = "spectral", progress = FALSE))
  expect_true(all(is.finite(f$W)))
  expect_error(bnmf(X, 2, likelihood = "poisson", init = "spectrl"), class = "bnmf_error_input")
  expect_error(bnmf(X, 2, likelihood = "poisson", init = "spectrl"), "init")
})
