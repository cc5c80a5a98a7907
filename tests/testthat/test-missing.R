# Missing entries: left out of the likelihood, never treated as zero.

held_out_setup <- function(seed, frac = 0.15) {
  dat <- make_nmf_data(I = 60, J = 40, K = 3, sd = 0.3, seed = seed)
  set.seed(seed + 100)
  miss <- sample(length(dat$X), round(frac * length(dat$X)))
  X <- dat$X
  X[miss] <- NA
  list(X = X, truth = dat$X, miss = miss)
}

row_mean_rmse <- function(s) {
  rm <- rowMeans(s$X, na.rm = TRUE)[row(s$X)]
  sqrt(mean((rm[s$miss] - s$truth[s$miss])^2))
}

test_that("Gibbs predictions of held-out entries beat row-mean imputation", {
  s <- held_out_setup(1)
  set.seed(2)
  fit <- bnmf(s$X, rank = 3, iter = 600, progress = FALSE)
  rmse <- sqrt(mean((predict(fit)[s$miss] - s$truth[s$miss])^2))
  # The noise sd is 0.3; row means are off by the whole signal variation.
  expect_lt(rmse, 0.5)
  expect_lt(rmse, 0.3 * row_mean_rmse(s))
})

test_that("ICM predictions of held-out entries beat row-mean imputation", {
  s <- held_out_setup(3, frac = 0.2)
  set.seed(4)
  fit <- bnmf(s$X, rank = 3, method = "icm", progress = FALSE)
  rmse <- sqrt(mean((predict(fit)[s$miss] - s$truth[s$miss])^2))
  expect_lt(rmse, 0.5)
  expect_lt(rmse, 0.3 * row_mean_rmse(s))
})

test_that("a missing entry's value never influences the fit", {
  dat <- make_nmf_data(I = 12, J = 9, K = 2, seed = 5)
  X <- dat$X
  X[4, 5] <- NA
  # dgCMatrix with an NA stored: missing as well.
  for (method in c("gibbs", "icm")) {
    set.seed(6)
    a <- muffle_convergence(bnmf(X, rank = 2, method = method, iter = 200, progress = FALSE))
    expect_equal(a$n_obs, length(X) - 1)
    # Replacing the NA by zero changes the fit (zero is data), by a large value
    # too; leaving it NA gives a prediction close to the truth.
    X0 <- X
    X0[4, 5] <- 0
    set.seed(6)
    b <- muffle_convergence(bnmf(X0, rank = 2, method = method, iter = 200, progress = FALSE))
    expect_false(isTRUE(all.equal(a$W, b$W)))
    expect_lt(abs(predict(a)[4, 5] - dat$WH[4, 5]), 0.5 * dat$WH[4, 5])
  }
})

test_that("missing entries of a sparse matrix are its stored NAs", {
  dat <- make_nmf_data(I = 12, J = 9, K = 2, seed = 7)
  X <- dat$X
  X[X < 0.5] <- 0
  X[2, 2] <- NA
  S <- Matrix::Matrix(X, sparse = TRUE)
  expect_true(is.na(S[2, 2]))
  set.seed(1)
  fs <- bnmf(S, rank = 2, method = "icm", progress = FALSE)
  set.seed(1)
  fd <- bnmf(X, rank = 2, method = "icm", progress = FALSE)
  expect_equal(fs$n_obs, length(X) - 1)
  expect_equal(fs$W, fd$W, tolerance = 1e-8)
})

test_that("the masked Gram kernel equals crossprod() for every shape it blocks differently", {
  # bnmf_gram_update() gathers the vectors into chunks of 4096 / K' (K' = K
  # rounded up to 4) and works in tiles of 8 x 4 (4 x 4 at the diagonal's
  # end), or falls back to rank-four updates when K' > 256: K below, at and
  # above multiples of 4 (9 and 13: an 8 x 4 tile over padding), one chunk
  # and several, and both kernels.
  gram_update <- function(G, Z, idx, sign) .Call(bnmf:::C_gram_update, G, Z, idx - 1L, sign)
  set.seed(31)
  for (K in c(1L, 3L, 4L, 5L, 9L, 13L, 20L, 257L, 300L)) {
    for (n in c(0L, 1L, 7L, 230L, 1000L)) {
      Z <- matrix(runif(K * 1200L), K, 1200L)
      idx <- sort(sample(1200L, n))
      G <- crossprod(matrix(rnorm(K * K), K, K))
      for (sign in c(-1, 1)) {
        ref <- G + sign * tcrossprod(Z[, idx, drop = FALSE])
        got <- gram_update(G, Z, idx, sign)
        expect_lt(max(abs(got - ref)), 1e-13 * max(abs(ref)),
                  label = sprintf("error at K = %d, n = %d, sign = %g", K, n, sign))
      }
    }
  }
  expect_error(gram_update(diag(2), matrix(1, 2, 3), 4L, 1), "outside")
})

test_that("the Gram kernel of a factor's columns equals crossprod() for every shape", {
  # bnmf_gram_cols() (W'W for the H update of every sweep) runs blocks of
  # two by four columns down chunks of 256 rows, then adds the last I mod 4
  # rows one at a time: no rows, fewer than four, every remainder mod 4,
  # one chunk and several; K odd and even, below and above the block sizes.
  gram_cols <- function(W) .Call(bnmf:::C_gram_cols, W)
  set.seed(37)
  for (K in c(0L, 1L, 2L, 3L, 5L, 8L, 11L, 20L, 33L)) {
    for (I in c(0L, 1L, 3L, 4L, 6L, 257L, 1023L, 1026L)) {
      W <- matrix(rexp(I * K), I, K)
      W[sample(length(W), length(W) %/% 3)] <- 0
      ref <- crossprod(W)
      got <- gram_cols(W)
      lab <- sprintf("I = %d, K = %d", I, K)
      expect_identical(dim(got), c(K, K), label = lab)
      expect_lt(max(abs(got - ref), 0), 1e-13 * max(abs(ref), 1), label = lab)
      expect_identical(got, t(got), label = lab)
    }
  }
  expect_error(gram_cols(1:3), "`W` must be a double matrix")
})

test_that("masked ICM, VB and NP sweeps on several threads give the one-thread fit, bit for bit", {
  # options(bnmf.threads) runs the rows (then columns) with missing entries
  # on OpenMP threads, each row alone; nothing is summed across rows but the
  # SSE terms, added in column order whatever the threads. 1100 rows: more
  # than one chunk of rows between interrupt checks (1024). Row 1 and
  # column 2 miss more than half their entries (their own Gram matrix, not
  # the corrections); rows 3-12 and columns 3-6 are complete (updated by
  # blocks); K = 12 and 17 put VB and ICM on either side of the size at
  # which the corrections take over from the row's Gram matrix. VB with the
  # entries filled in runs its rows by blocks of four, each row with its
  # own sums (column 2 summed over its observed entries).
  withr::local_seed(11)
  I <- 1100L
  J <- 40L
  make <- function(K) {
    X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(rnorm(I * J, sd = 0.5), I)
    X <- pmax(X, 0)
    X[sample(length(X), 0.2 * length(X))] <- NA
    X[1, 1:30] <- NA
    X[c(2, 13:900), 2] <- NA
    X[3:12, ][is.na(X[3:12, ])] <- 1
    X[, 3:6][is.na(X[, 3:6])] <- 1
    X
  }
  runs <- list(
    list(method = "vb", K = 12L, args = list(iter = 25, tol = 0, control = vb_control("mask"))),
    list(method = "vb", K = 4L, args = list(iter = 25, tol = 0, control = vb_control("mask"))),
    list(method = "vb", K = 12L, args = list(iter = 25, tol = 0, control = vb_control("impute"))),
    list(method = "icm", K = 17L, args = list(iter = 25, tol = 0, control = icm_control("mask"))),
    list(method = "icm", K = 5L, args = list(iter = 25, tol = 0, control = icm_control("mask"))),
    list(method = "np", K = 6L, args = list(iter = 25, tol = 0))
  )
  for (r in runs) {
    X <- make(r$K)
    for (x in list(X, Matrix::Matrix(X, sparse = TRUE))) {
      fit <- function(threads) {
        withr::local_options(bnmf.threads = threads)
        set.seed(2)
        do.call(bnmf, c(list(x, r$K, method = r$method), r$args))
      }
      one <- fit(1)
      info <- paste(r$method, r$K, class(x)[1])
      for (th in 2:3) {
        many <- fit(th)
        expect_identical(many$W, one$W, info = info)
        expect_identical(many$H, one$H, info = info)
        expect_identical(many$trace, one$trace, info = info)
        if (r$method == "vb") {
          expect_identical(many$W_sd, one$W_sd, info = info)
          expect_identical(many$H_sd, one$H_sd, info = info)
        }
      }
    }
  }
  # More threads than rows and columns: as many as there are pieces.
  Xs <- make(3L)[1:6, 1:5]
  Xs[2, 3] <- NA
  small <- function(threads) {
    withr::local_options(bnmf.threads = threads)
    set.seed(4)
    bnmf(Xs, 2L, method = "vb", iter = 20, tol = 0, control = vb_control("mask"))
  }
  expect_identical(small(64)$W, small(1)$W)
  withr::local_options(bnmf.threads = 1.5)
  expect_error(bnmf(make(3L), 3L, method = "vb", iter = 2), "bnmf.threads",
               class = "bnmf_error_input")
})
