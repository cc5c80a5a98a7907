# Methods of fits to a sparse X: the same numbers as the dense computation,
# without ever forming the I x J matrix; dense results refused above the
# limit; cross-validation folds of a large sparse X.

sparse_data <- function(seed = 1, I = 30, J = 20) {
  withr::local_seed(seed)
  S <- Matrix::rsparsematrix(I, J, 0.3, rand.x = function(n) rexp(n))
  S@x[c(2, 7)] <- NA
  S
}

# The posterior mean of W H on every entry, written for the test: the point
# estimate W H; for Gibbs the running moments on the stored entries of X and
# elsewhere the average of the kept draws (or the product of the means).
reference_wh <- function(fit) {
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  m <- unname(fit$W %*% fit$H)
  if (fit$method == "gibbs") {
    if (!is.null(fit$draws)) {
      acc <- 0; n <- 0
      for (d in fit$draws) for (t in seq_len(ncol(d$W))) {
        acc <- acc + matrix(d$W[, t], I, K) %*% matrix(d$H[, t], K, J)
        n <- n + 1
      }
      m <- acc / n
    }
    X <- fit$X
    m[cbind(X@i + 1L, rep(seq_len(J), diff(X@p)))] <- fit$moments$WH$mean
  }
  m
}

test_that("sparse fits give the dense answers: logLik, RMSE, R^2, entries", {
  S <- sparse_data()
  X <- as.matrix(S)
  ii <- c(1, 5, 30, 2, 12)
  jj <- c(1, 20, 3, 2, 7)
  for (case in list(c("gibbs", "summary"), c("gibbs", "draws"), c("icm", "summary"),
                    c("vb", "summary"), c("np", "summary"))) {
    info <- paste(case, collapse = " ")
    withr::local_seed(2)
    f <- suppressWarnings(bnmf(S, rank = 2, method = case[1], iter = 40, keep = case[2],
                               progress = FALSE))
    m <- reference_wh(f)
    res <- X - m
    sse <- sum(res^2, na.rm = TRUE)
    expect_equal(f$n_obs, sum(!is.na(X)), info = info)
    s <- summary(f)
    expect_equal(s$rmse, sqrt(sse / sum(!is.na(X))), tolerance = 1e-12, info = info)
    expect_equal(s$r_squared, 1 - sse / sum((X - mean(X, na.rm = TRUE))^2, na.rm = TRUE),
                 tolerance = 1e-12, info = info)
    if (case[1] != "np") {
      ll <- 0.5 * f$n_obs * (log(f$tau) - log(2 * pi)) - 0.5 * f$tau * sse
      expect_equal(as.numeric(logLik(f)), ll, tolerance = 1e-12, info = info)
    }
    expect_equal(predict(f, i = ii, j = jj), m[cbind(ii, jj)], tolerance = 1e-12, info = info)
    expect_equal(predict(f, i = cbind(ii, jj)), m[cbind(ii, jj)], tolerance = 1e-12, info = info)
    expect_equal(residuals(f, i = ii, j = jj), res[cbind(ii, jj)], tolerance = 1e-12, info = info)
    expect_equal(unname(predict(f)), m, tolerance = 1e-12, info = info)
    expect_equal(unname(residuals(f)), res, tolerance = 1e-12, info = info)
    fv <- fitted(f)
    expect_s4_class(fv, "dgCMatrix")
    expect_equal(fv@x, m[cbind(S@i + 1L, rep(seq_len(ncol(S)), diff(S@p)))],
                 tolerance = 1e-12, info = info)
  }
})

test_that("the sparse products of a sweep are X H' and W' X, in one row block and many", {
  # bnmf_x_ht_rows(), bnmf_x_ht() and bnmf_wt_x() take the rows of X in
  # blocks of about 128 KB of the I x K arrays they touch (a cursor per
  # column), when there are enough stored values per column: I = 20,000 at
  # K = 10 makes 13 blocks, 3,000 at K = 1 one. Reference: the dense
  # products in R; the column-major X H' (NMTF's) the same bits as the
  # transposed one. Empty rows and columns, a column full to its last row,
  # rows in the last (shorter) block.
  prods <- function(X, W, H) {
    d <- bnmf:::prepare_data(X, ncol(W))
    .Call(bnmf:::C_sparse_products, d, X@x, W, H)
  }
  set.seed(41)
  for (case in list(c(20000, 60, 10, 0.02), c(20011, 7, 3, 0.05), c(3000, 40, 1, 0.05),
                    c(50, 30, 4, 0.3))) {
    I <- case[1]; J <- case[2]; K <- case[3]
    X <- Matrix::rsparsematrix(I, J, case[4], rand.x = function(n) rexp(n))
    X[, 2] <- 0
    X[I, 3] <- 1.5
    X[c(1, I), ] <- 0
    X <- Matrix::drop0(X)
    W <- matrix(rexp(I * K), I, K)
    H <- matrix(rexp(K * J), K, J)
    got <- prods(X, W, H)
    Xd <- as.matrix(X)
    lab <- sprintf("I = %d, J = %d, K = %d", I, J, K)
    refD <- Xd %*% t(H)
    refF <- crossprod(W, Xd)
    expect_lt(max(abs(got$D - refD)), 1e-13 * max(refD), label = paste(lab, "X H'"))
    expect_identical(got$Dc, got$D, label = paste(lab, "X H', column-major"))
    expect_lt(max(abs(got$F - refF)), 1e-13 * max(refF), label = paste(lab, "W' X"))
    expect_true(all(got$D[c(1, I), ] == 0) && all(got$F[, 2] == 0), label = lab)
  }
  # the blocks do not change a fit: every stored value of a tall sparse X
  # counts once (ICM to the dense fit's values)
  X <- Matrix::rsparsematrix(20000, 30, 0.05, rand.x = function(n) rexp(n))
  set.seed(9)
  fs <- bnmf(X, rank = 10, method = "icm", iter = 3, tol = 0)
  set.seed(9)
  fd <- bnmf(as.matrix(X), rank = 10, method = "icm", iter = 3, tol = 0)
  expect_lt(max(abs(fs$W %*% fs$H - fd$W %*% fd$H)), 1e-9 * max(fd$W %*% fd$H))
})

test_that("a sparse Gibbs fit's moments of W H on the stored entries are those of its draws", {
  # The running mean and sum of squared deviations of W H at the stored
  # values go through bnmf_sparse_visit(), which takes the rows in blocks of
  # about 128 KB of W' (a cursor per column): 20,000 x 25 at K = 3 makes 4
  # blocks, 40 x 30 one. Reference: W H of every kept draw, formed in R.
  # Empty rows and columns, a value in the last row.
  set.seed(43)
  for (case in list(c(20000, 25, 3, 0.06), c(40, 30, 2, 0.3))) {
    I <- case[1]; J <- case[2]; K <- case[3]
    X <- Matrix::rsparsematrix(I, J, case[4], rand.x = function(n) rexp(n))
    X[, 2] <- 0
    X[I, 3] <- 1.5
    X[c(1, I - 1), ] <- 0
    X <- Matrix::drop0(X)
    f <- bnmf(X, rank = K, iter = 9, burnin = 3, keep = "draws", wh_thin = 2,
              progress = FALSE)
    ii <- X@i + 1L
    jj <- rep(seq_len(J), diff(X@p))
    d <- f$draws[[1]]
    taken <- seq(1, ncol(d$W), by = 2) # kept draws 1, 3, 5, ...
    wh <- sapply(taken, function(t) {
      W <- matrix(d$W[, t], I, K)
      H <- matrix(d$H[, t], K, J)
      rowSums(W[ii, , drop = FALSE] * t(H[, jj, drop = FALSE]))
    })
    lab <- sprintf("I = %d, J = %d, K = %d", I, J, K)
    m <- f$moments$WH
    expect_equal(m$n, length(taken), label = lab)
    expect_equal(m$mean, rowMeans(wh), tolerance = 1e-12, label = paste(lab, "mean"))
    v <- apply(wh, 1, var)
    expect_lt(max(abs(m$m2 / (m$n - 1) - v)), 1e-10 * max(v), label = paste(lab, "variance"))
  }
})

test_that("entries by name and by recycling; bad entries are refused by name", {
  S <- sparse_data()
  dimnames(S) <- list(paste0("g", 1:30), paste0("s", 1:20))
  withr::local_seed(3)
  f <- bnmf(S, rank = 2, method = "icm", iter = 30, progress = FALSE)
  m <- unname(f$W %*% f$H)
  expect_equal(predict(f, i = "g4", j = c("s1", "s9")), m[4, c(1, 9)], tolerance = 1e-12)
  expect_equal(predict(f, i = 4, j = c(1, 9)), m[4, c(1, 9)], tolerance = 1e-12)
  expect_error(predict(f, i = 1:3), "`i` and `j`", class = "bnmf_error_input")
  expect_error(predict(f, i = 31, j = 1), "`i`", class = "bnmf_error_input")
  expect_error(predict(f, i = 1, j = 0), "`j`", class = "bnmf_error_input")
  expect_error(predict(f, i = 1:2, j = 1:3), "same length", class = "bnmf_error_input")
  expect_error(predict(f, i = "nope", j = 1), "nope", class = "bnmf_error_input")
  expect_error(predict(f, i = 1, j = 1, type = "coef"), "`i`, `j`", class = "bnmf_error_input")
})

test_that("se.fit on entries equals the dense se.fit", {
  S <- sparse_data()
  ii <- c(3, 8, 1); jj <- c(2, 2, 19)
  withr::local_seed(4)
  v <- bnmf(S, rank = 2, method = "vb", iter = 30, progress = FALSE)
  full <- predict(v, se.fit = TRUE)
  at <- predict(v, i = ii, j = jj, se.fit = TRUE)
  expect_equal(at$se.fit, unname(full$se.fit[cbind(ii, jj)]), tolerance = 1e-12)
  X <- as.matrix(S)
  withr::local_seed(5)
  g <- bnmf(X, rank = 2, iter = 40, progress = FALSE)
  full <- predict(g, se.fit = TRUE)
  expect_equal(predict(g, i = ii, j = jj, se.fit = TRUE)$se.fit,
               unname(full$se.fit[cbind(ii, jj)]), tolerance = 1e-12)
  # A sparse Gibbs fit has the moments of W H on its stored entries only.
  withr::local_seed(5)
  gs <- bnmf(S, rank = 2, iter = 40, progress = FALSE)
  st <- cbind(S@i[1:3] + 1L, rep(seq_len(ncol(S)), diff(S@p))[1:3])
  expect_equal(predict(gs, i = st, se.fit = TRUE)$se.fit,
               sqrt(gs$moments$WH$m2[1:3] / (gs$moments$WH$n - 1)), tolerance = 1e-12)
  unstored <- which(as.matrix(S) == 0, arr.ind = TRUE)[1, , drop = FALSE]
  expect_error(predict(gs, i = unstored, se.fit = TRUE), "stored entries",
               class = "bnmf_error_input")
})

test_that("dense results of a sparse fit are refused above the limit, with their size", {
  S <- sparse_data()
  withr::local_seed(6)
  f <- bnmf(S, rank = 2, method = "vb", iter = 30, progress = FALSE)
  s_ok <- summary(f)
  ll_ok <- logLik(f)
  withr::local_options(bnmf.max_dense = 599)
  for (expr in list(quote(predict(f)), quote(residuals(f)), quote(predict(f, se.fit = TRUE)))) {
    err <- expect_error(eval(expr), class = "bnmf_error_dense")
    expect_s3_class(err, "bnmf_error_input")
    expect_match(conditionMessage(err), "30 x 20")
    expect_match(conditionMessage(err), "600 values")
    expect_match(conditionMessage(err), "predict(fit, i = , j = )", fixed = TRUE)
  }
  # What needs no dense matrix still answers.
  expect_equal(summary(f)$rmse, s_ok$rmse)
  expect_equal(logLik(f), ll_ok)
  expect_length(predict(f, i = 1:3, j = 1), 3L)
  expect_s4_class(fitted(f), "dgCMatrix")
  # At the limit it is allowed; a dense fit is never refused.
  withr::local_options(bnmf.max_dense = 600)
  expect_identical(dim(predict(f)), c(30L, 20L))
  withr::local_options(bnmf.max_dense = 1)
  withr::local_seed(6)
  d <- bnmf(as.matrix(S), rank = 2, method = "vb", iter = 30, progress = FALSE)
  expect_identical(dim(residuals(d)), c(30L, 20L))
  withr::local_options(bnmf.max_dense = "a lot")
  expect_error(predict(f), "bnmf.max_dense", class = "bnmf_error_input")
})

test_that("CV of a sparse X above the limit: stored entries and weighted zeros", {
  S <- sparse_data(seed = 7, I = 40, J = 30)
  X <- as.matrix(S)
  withr::local_options(bnmf.max_dense = 100)
  withr::local_seed(8)
  # (random sparse values: the larger rank compared wins, and select_rank()
  # warns that the best may lie beyond it)
  expect_warning(
    cv <- muffle_convergence(select_rank(S, ranks = 1:2, criterion = "cv", method = "icm",
                                        folds = 3, iter = 30, keep_fits = TRUE)),
    class = "bnmf_warning_rank_edge")
  expect_identical(cv$best, 2L)
  stored <- which(!is.na(X) & X != 0)
  n_zero <- sum(X == 0, na.rm = TRUE)
  n_stored <- length(stored)
  expect_equal(cv$zeros, list(n = n_zero, sampled = n_stored, weight = n_zero / n_stored))
  # The design: every stored observed entry and as many distinct zeros.
  expect_true(all(stored %in% cv$obs))
  expect_length(cv$obs, 2 * n_stored)
  expect_false(anyDuplicated(cv$obs) > 0)
  expect_true(all(X[setdiff(cv$obs, stored)] == 0))
  # A fold's error is the weighted mean over its test entries.
  w <- ifelse(X[cv$obs] == 0, n_zero / n_stored, 1)
  for (f in 1:3) {
    fit <- cv$fits[["2"]][[f]]
    test <- cv$obs[cv$folds == f]
    wt <- w[cv$folds == f]
    expect_true(all(is.na(as.matrix(fit$X)[test])))
    e2 <- (X[test] - (fit$W %*% fit$H)[test])^2
    expect_equal(cv$fold_mse["2", f], sum(wt * e2) / sum(wt), tolerance = 1e-12)
  }
  # Under the limit the folds deal every observed entry, zeros included.
  withr::local_options(bnmf.max_dense = 5e7)
  withr::local_seed(8)
  cv2 <- muffle_convergence(select_rank(S, ranks = 1, criterion = "cv", method = "icm",
                                       folds = 3, iter = 30))
  expect_equal(cv2$obs, which(!is.na(X)))
  expect_null(cv2$zeros)
})

test_that("every method of fits to a 60,000 x 40,000 sparse X answers under a memory cap", {
  skip_on_cran()
  skip_on_os("windows")
  bash <- Sys.which("bash")
  skip_if(!nzchar(bash), "no bash")
  skip_if(system2(bash, c("-c", shQuote("ulimit -v 4000000")), stdout = FALSE,
                  stderr = FALSE) != 0L, "no ulimit -v")
  lib <- dirname(find.package("bnmf"))
  script <- withr::local_tempfile(fileext = ".R")
  out <- withr::local_tempfile(fileext = ".txt")
  writeLines(c(
    sprintf(".libPaths(c(%s, .libPaths()))", deparse(lib)),
    "suppressPackageStartupMessages({library(bnmf); library(Matrix)})",
    "set.seed(1)",
    "I <- 60000; J <- 40000",
    "S <- sparseMatrix(i = sample.int(I, 50000, TRUE), j = sample.int(J, 50000, TRUE),",
    "                  x = rexp(50000), dims = c(I, J))",
    "stopifnot(prod(as.double(dim(S))) > 2^31)",
    "for (m in c('gibbs', 'icm', 'vb')) {",
    "  f <- suppressWarnings(bnmf(S, rank = 2, method = m, iter = 6, progress = FALSE))",
    "  capture.output(print(f), print(summary(f)))",
    "  s <- summary(f); stopifnot(is.finite(s$rmse), is.finite(s$r_squared))",
    "  stopifnot(is.finite(logLik(f)), is.finite(sigma(f)), nobs(f) == prod(as.double(dim(S))))",
    "  p <- predict(f, i = c(1, 60000), j = c(40000, 1)); stopifnot(length(p) == 2, all(is.finite(p)))",
    "  r <- residuals(f, i = cbind(S@i[1:3] + 1, 1)); stopifnot(length(r) == 3)",
    "  stopifnot(length(fitted(f)@x) == length(S@x), nrow(factors(f)$W) == I)",
    "  pdf(NULL); plot(f); invisible(dev.off())",
    "  for (g in list(function() predict(f), function() residuals(f))) {",
    "    e <- tryCatch(g(), error = identity); stopifnot(inherits(e, 'bnmf_error_dense'))",
    "  }",
    "  cat('ok', m, '\\n')",
    "}",
    "cv <- suppressWarnings(select_rank(S, ranks = 1:2, criterion = 'cv', method = 'icm',",
    "                                  folds = 2, iter = 5))",
    "stopifnot(all(is.finite(cv$table$mse)), cv$best %in% 1:2)",
    "cat('ok cv\\n')"
  ), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  status <- system2(bash, c("-c", shQuote(sprintf("ulimit -v 4000000; %s --vanilla %s > %s 2>&1",
                                                  shQuote(rscript), shQuote(script),
                                                  shQuote(out)))))
  log <- readLines(out)
  expect_identical(status, 0L, info = paste(log, collapse = "\n"))
  expect_identical(grep("^ok", log, value = TRUE),
                   c("ok gibbs ", "ok icm ", "ok vb ", "ok cv"))
})
