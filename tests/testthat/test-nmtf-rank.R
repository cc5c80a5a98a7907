# select_rank() with tri-factorisation ranks given as (K, L) pairs.

nmtf_rank_data <- function() {
  withr::local_seed(301)
  d <- nmtf_draw(30, 24, 3, 2)
  abs(d$X)
}

test_that("cross-validation over (K, L) pairs fits each pair on the right folds", {
  X <- nmtf_rank_data()
  # NP from a fixed start is deterministic, so each fold's error can be
  # recomputed by hand from the folds select_rank() reports.
  withr::local_seed(302)
  init <- list(F = matrix(stats::runif(30 * 2), 30, 2), S = matrix(stats::runif(4), 2, 2),
               G = matrix(stats::runif(24 * 2), 24, 2))
  withr::local_seed(303)
  sel <- select_rank(X, ranks = list(c(2, 2)), criterion = "cv", method = "np", folds = 3,
                     init = init, iter = 60, tol = 0)
  expect_identical(best(sel), c(K = 2L, L = 2L))
  expect_identical(sel$ranks, matrix(c(2L, 2L), 1L, dimnames = list(NULL, c("K", "L"))))
  expect_identical(rownames(sel$fold_mse), "2x2")
  for (f in 1:3) {
    Xtr <- X
    test <- sel$obs[sel$folds == f]
    Xtr[test] <- NA
    fit <- bnmf(Xtr, rank = c(2, 2), method = "np", init = init, iter = 60, tol = 0)
    expect_equal(sel$fold_mse[1L, f], mean((predict(fit)[test] - X[test])^2), tolerance = 1e-12)
  }
  expect_equal(sel$table$mse, mean(sel$fold_mse[1L, ]))
})

test_that("(K, L) pairs as a list or a matrix give the same selection", {
  X <- nmtf_rank_data()
  pairs <- list(c(3, 2), c(2, 2), c(1, 3))
  withr::local_seed(304)
  a <- muffle_convergence(select_rank(X, ranks = pairs, criterion = "cv", method = "vb",
                                      folds = 3, iter = 40, keep_fits = TRUE))
  withr::local_seed(304)
  b <- muffle_convergence(select_rank(X, ranks = do.call(rbind, pairs), criterion = "cv",
                                      method = "vb", folds = 3, iter = 40))
  expect_identical(a$fold_mse, b$fold_mse)
  expect_identical(a$best, b$best)
  # Sorted by K, then L; every fit at its own (K, L).
  expect_identical(unname(a$ranks), matrix(c(1L, 2L, 3L, 3L, 2L, 2L), 3L))
  expect_identical(names(a$table)[1:2], c("K", "L"))
  expect_identical(names(a$fits), c("1x3", "2x2", "3x2"))
  for (nm in names(a$fits)) {
    r <- as.integer(strsplit(nm, "x")[[1L]])
    expect_true(all(vapply(a$fits[[nm]], function(f) identical(unname(f$rank), r), logical(1))))
  }
  m <- rowMeans(a$fold_mse)
  expect_identical(paste0(a$best[["K"]], "x", a$best[["L"]]), names(m)[which.min(m)])
  expect_output(print(a), "Chosen rank: ")
  expect_output(print(summary(a)), "2x2")
  png_file <- withr::local_tempfile(fileext = ".png")
  grDevices::png(png_file)
  expect_identical(plot(a), a)
  grDevices::dev.off()
})

test_that("ARD over (K, L) pairs counts the active factors of F and of G", {
  X <- nmtf_rank_data()
  withr::local_seed(305)
  sel <- muffle_convergence(select_rank(X, ranks = cbind(c(2, 5), c(2, 4)), criterion = "ard",
                                        method = "vb", iter = 200))
  expect_identical(unname(sel$fit$rank), c(5L, 4L))
  tab <- sel$table
  expect_identical(tab$matrix, rep(c("F", "G"), c(5L, 4L)))
  expect_identical(sel$best, c(K = sum(tab$active[1:5]), L = sum(tab$active[6:9])))
  # The relevance: column k of F contributes F[, k] S[k, ] G' to F S G'.
  fa <- factors(sel$fit)
  k <- 2L
  contrib <- fa$F[, k] %*% t(fa$G %*% fa$S[k, ])
  expect_equal(tab$signal[k], mean(contrib) / sigma(sel$fit), tolerance = 1e-10)
  expect_output(print(sel), "Chosen rank")
})

test_that("bad (K, L) pairs are refused with a classed error", {
  X <- nmtf_rank_data()
  expect_error(select_rank(X, ranks = list(c(2, 2), c(2, 2)), criterion = "cv"),
               class = "bnmf_error_input")
  expect_error(select_rank(X, ranks = list(c(2, 2, 1)), criterion = "cv"),
               class = "bnmf_error_input")
  expect_error(select_rank(X, ranks = cbind(2, 40), criterion = "cv"),
               class = "bnmf_error_input")
  expect_error(select_rank(X, ranks = cbind(2, 0.5), criterion = "cv"),
               class = "bnmf_error_input")
  expect_error(select_rank(X, ranks = list(c(2, 2)), criterion = "bic"),
               class = "bnmf_error_input")
  expect_error(select_rank(X, ranks = list(c(2, 2)), criterion = "chib"),
               class = "bnmf_error_input")
})

test_that("NMTF cross-validation on a sparse X gives the numbers of the dense X", {
  set.seed(1)
  X0 <- matrix(rpois(30 * 20, 2), 30)
  X <- Matrix::Matrix(X0, sparse = TRUE)
  for (m in c("vb", "gibbs")) {
    set.seed(3)
    r <- suppressWarnings(select_rank(X, ranks = list(c(2, 2), c(3, 2)), criterion = "cv",
                                      method = m, folds = 3, iter = 60))
    set.seed(3)
    r0 <- suppressWarnings(select_rank(X0, ranks = list(c(2, 2), c(3, 2)), criterion = "cv",
                                       method = m, folds = 3, iter = 60))
    expect_equal(r$table, r0$table, tolerance = 1e-10)
  }
})
