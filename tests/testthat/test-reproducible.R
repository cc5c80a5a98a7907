test_that("the same seed gives the same fit; another seed another", {
  dat <- make_nmf_data(seed = 2)
  set.seed(10); a <- bnmf(dat$X, rank = 3, iter = 100, progress = FALSE)
  set.seed(10); b <- bnmf(dat$X, rank = 3, iter = 100, progress = FALSE)
  set.seed(11); c <- bnmf(dat$X, rank = 3, iter = 100, progress = FALSE)
  expect_identical(a$W, b$W)
  expect_identical(a$trace, b$trace)
  expect_false(identical(a$W, c$W))
})

test_that("dense and dgCMatrix input give the same fit", {
  dat <- make_nmf_data(I = 20, J = 15, K = 2, seed = 3)
  X <- dat$X
  X[X < 0.6] <- 0
  S <- Matrix::Matrix(X, sparse = TRUE)
  expect_s4_class(S, "dgCMatrix")
  for (method in c("gibbs", "icm")) {
    set.seed(1)
    fd <- muffle_convergence(bnmf(X, rank = 2, method = method, iter = 30, progress = FALSE))
    set.seed(1)
    fs <- muffle_convergence(bnmf(S, rank = 2, method = method, iter = 30, progress = FALSE))
    # Same draws up to the rounding of BLAS versus sparse products.
    expect_equal(fs$W, fd$W, tolerance = 1e-8)
    expect_equal(fs$H, fd$H, tolerance = 1e-8)
    expect_equal(fs$trace$loglik, fd$trace$loglik, tolerance = 1e-8)
  }
  # The sparse fit's fitted values are on the stored entries of X.
  fv <- fitted(fs)
  expect_s4_class(fv, "dgCMatrix")
  expect_equal(fv@i, S@i)
})

test_that("chains give the same result whatever the future plan", {
  skip_on_cran()
  skip_if_not_installed("future")
  dat <- make_nmf_data(I = 15, J = 10, K = 2, seed = 4)
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  set.seed(5); a <- bnmf(dat$X, rank = 2, iter = 100, chains = 3, progress = FALSE)
  future::plan(future::multisession, workers = 2)
  set.seed(5); b <- bnmf(dat$X, rank = 2, iter = 100, chains = 3, progress = FALSE)
  expect_identical(a$W, b$W)
  expect_identical(a$trace, b$trace)
  # Chains are independent streams.
  tr <- split(a$trace$loglik, a$trace$chain)
  expect_false(identical(tr[[1]], tr[[2]]))
})

test_that("update() continues the chains exactly where they stopped", {
  dat <- make_nmf_data(I = 15, J = 10, K = 2, seed = 6)
  set.seed(7)
  long <- bnmf(dat$X, rank = 2, iter = 300, burnin = 100, chains = 2, progress = FALSE)
  set.seed(7)
  short <- bnmf(dat$X, rank = 2, iter = 200, burnin = 100, chains = 2, progress = FALSE)
  cont <- update(short, iter = 100, progress = FALSE)
  expect_equal(cont$chains[[1]]$W, long$chains[[1]]$W, tolerance = 1e-12)
  expect_equal(cont$chains[[2]]$H, long$chains[[2]]$H, tolerance = 1e-12)
  expect_equal(cont$trace$loglik, long$trace$loglik, tolerance = 1e-12)
  expect_equal(cont$W, long$W, tolerance = 1e-10)
  expect_equal(cont$W_sd, long$W_sd, tolerance = 1e-8)
  expect_equal(fitted(cont), fitted(long), tolerance = 1e-10)
  expect_equal(cont$n_draws, long$n_draws)
})

test_that("chains are aligned before their moments are pooled", {
  dat <- make_nmf_data(I = 30, J = 20, K = 3, sd = 0.05, seed = 8)
  # Start two chains at the truth, the second with its factors permuted: the
  # pooled posterior means must match the truth, not a mixture of factors.
  p <- c(3, 1, 2)
  init <- list(list(W = dat$W, H = dat$H, tau = 400),
               list(W = dat$W[, p], H = dat$H[p, ], tau = 400))
  set.seed(9)
  fit <- bnmf(dat$X, rank = 3, iter = 300, chains = 2, init = init, keep = "draws",
              prior = exponential(0.1), progress = FALSE)
  expect_equal(fit$chains[[2]]$perm, match(1:3, p))
  cosine <- diag(crossprod(fit$W, dat$W)) /
    sqrt(colSums(fit$W^2) * colSums(dat$W^2))
  expect_true(all(cosine > 0.99))
  # The draws of chain 2 are stored in the aligned order as well.
  w2 <- matrix(rowMeans(fit$draws[[2]]$W), 30, 3)
  expect_true(all(diag(cor(w2, dat$W)) > 0.99))
})
