# Non-probabilistic NMF (Lee-Seung multiplicative updates) on observed entries.

# Plain-R reference of the masked updates, one sweep (W then H).
ls_sweep_r <- function(X, W, H, loss) {
  M <- !is.na(X)
  X0 <- X
  X0[!M] <- 0
  if (loss == "euclidean") {
    W <- W * (X0 %*% t(H)) / ((M * (W %*% H)) %*% t(H))
    H <- H * (t(W) %*% X0) / (t(W) %*% (M * (W %*% H)))
  } else {
    # X / WH, 0 where X is 0 (0 log 0 = 0: a row of W that has gone to 0
    # with its row of X stays there)
    R <- ifelse(M & X0 > 0, X0 / (W %*% H), 0)
    W <- W * (R %*% t(H)) / (M %*% t(H))
    R <- ifelse(M & X0 > 0, X0 / (W %*% H), 0)
    H <- H * (t(W) %*% R) / (t(W) %*% M)
  }
  list(W = W, H = H)
}

np_loss_r <- function(X, W, H, loss) {
  M <- !is.na(X)
  WH <- W %*% H
  if (loss == "euclidean") return(sum(((X - WH)^2)[M]))
  x <- X[M]
  wh <- WH[M]
  sum(ifelse(x > 0, x * log(x / wh), 0) - x + wh)
}

test_that("the multiplicative updates equal a plain-R implementation", {
  d <- make_nmf_data(I = 15, J = 12, K = 3, sd = 0.05, seed = 21)
  X <- abs(d$X)
  X[c(3, 40, 41, 100)] <- NA
  set.seed(22)
  W0 <- matrix(runif(15 * 3), 15, 3)
  H0 <- matrix(runif(3 * 12), 3, 12)
  for (loss in c("euclidean", "kl")) {
    fit <- bnmf(X, rank = 3, method = "np", loss = loss, init = list(W = W0, H = H0),
                iter = 7, tol = 0, control = np_control("mask"))
    ref <- list(W = W0, H = H0)
    for (s in 1:7) ref <- ls_sweep_r(X, ref$W, ref$H, loss)
    expect_equal(unname(fit$W), ref$W, tolerance = 1e-10)
    expect_equal(unname(fit$H), ref$H, tolerance = 1e-10)
    expect_equal(fit$loss, np_loss_r(X, ref$W, ref$H, loss), tolerance = 1e-10)
  }
})

test_that("masked Euclidean and KL updates match plain R when rows or columns miss most entries", {
  # the Euclidean kernel takes a row's G z less its missing terms when at
  # most half its entries are missing, else the sum over its observed ones;
  # K = 6 covers both the four-value steps and the remainder, K = 45 the
  # loop for K above 43. The KL updates' denominators (the other side's sum
  # over a row's observed entries) make the same choice.
  for (K in c(6L, 45L)) for (loss in c("euclidean", "kl")) {
    I <- if (K > 6) 60L else 20L
    J <- if (K > 6) 50L else 16L
    d <- make_nmf_data(I = I, J = J, K = K, sd = 0.05, seed = 31)
    X <- abs(d$X)
    set.seed(32)
    X[sample(length(X), 40)] <- NA
    X[1:3, 1:12] <- NA # rows 1-3 miss most of their entries
    X[5:19, 2] <- NA   # and column 2 (more so below at K = 45)
    if (K > 6) {
      X[1:3, 1:40] <- NA
      X[5:50, 2] <- NA
    }
    W0 <- matrix(runif(I * K), I, K)
    H0 <- matrix(runif(K * J), K, J)
    fit <- bnmf(X, rank = K, method = "np", loss = loss, init = list(W = W0, H = H0),
                iter = 7, tol = 0, control = if (loss == "euclidean") np_control("mask"))
    ref <- list(W = W0, H = H0)
    for (s in 1:7) ref <- ls_sweep_r(X, ref$W, ref$H, loss)
    expect_equal(unname(fit$W), ref$W, tolerance = 1e-10, info = loss)
    expect_equal(unname(fit$H), ref$H, tolerance = 1e-10, info = loss)
    expect_equal(fit$loss, np_loss_r(X, ref$W, ref$H, loss), tolerance = 1e-10, info = loss)
    expect_equal(fit$trace$loglik[7], -np_loss_r(X, ref$W, ref$H, loss),
                 tolerance = 1e-10, info = loss)
  }
})

test_that("the loss never increases, and sparse input gives the dense answer", {
  d <- make_nmf_data(I = 30, J = 25, K = 3, sd = 0.1, seed = 23)
  X <- abs(d$X)
  Xm <- X
  set.seed(24)
  Xm[sample(length(X), 150)] <- NA
  set.seed(25)
  Xs <- Matrix::rsparsematrix(30, 25, 0.3, rand.x = function(n) rexp(n))
  for (loss in c("euclidean", "kl")) {
    # Xm: the Euclidean loss masks by default ("auto"), and imputes when asked
    for (case in list(list(X, NULL), list(Xm, NULL),
                      list(Xm, if (loss == "euclidean") np_control("impute")),
                      list(Xs, NULL))) {
      Y <- case[[1]]
      set.seed(26)
      fit <- bnmf(Y, rank = 4, method = "np", loss = loss, iter = 200, tol = 0,
                  control = case[[2]])
      l <- fit$trace$sse
      expect_length(l, 200)
      expect_lte(max(diff(l)), 1e-12 * max(l))
      expect_equal(fit$loss, tail(l, 1))
    }
    set.seed(27)
    fs <- bnmf(Xs, rank = 3, method = "np", loss = loss, iter = 50, tol = 0)
    set.seed(27)
    fd <- bnmf(as.matrix(Xs), rank = 3, method = "np", loss = loss, iter = 50, tol = 0)
    expect_equal(fs$W, fd$W, tolerance = 1e-10)
    expect_equal(fs$loss, np_loss_r(as.matrix(Xs), fd$W, fd$H, loss), tolerance = 1e-10)
  }
})

# Plain-R reference of one imputing sweep (np_control(missing = "impute")):
# the Euclidean updates of X filled with W H (at the sweep's start) where it
# is missing.
ls_fill_sweep_r <- function(X, W, H) {
  Xf <- ifelse(is.na(X), W %*% H, X)
  W <- W * (Xf %*% t(H)) / (W %*% H %*% t(H))
  H <- H * (t(W) %*% Xf) / (t(W) %*% W %*% H)
  list(W = W, H = H)
}

# |X| of make_nmf_data(I, J, K, sd = 0.05, seed) with n_miss entries missing
# at random (drawn after set.seed(miss_seed)).
abs_missing_x <- function(I, J, K, seed, n_miss, miss_seed) {
  X <- abs(make_nmf_data(I = I, J = J, K = K, sd = 0.05, seed = seed)$X)
  set.seed(miss_seed)
  X[sample(length(X), n_miss)] <- NA
  X
}

test_that("imputing updates equal a plain-R implementation of EM", {
  X <- abs_missing_x(15, 12, 3, seed = 21, n_miss = 36, miss_seed = 41)
  set.seed(22)
  W0 <- matrix(runif(15 * 3), 15, 3)
  H0 <- matrix(runif(3 * 12), 3, 12)
  fit <- bnmf(X, rank = 3, method = "np", init = list(W = W0, H = H0), iter = 7, tol = 0,
              control = np_control("impute"))
  expect_identical(fit$settings$missing, "impute")
  ref <- list(W = W0, H = H0)
  for (s in 1:7) ref <- ls_fill_sweep_r(X, ref$W, ref$H)
  expect_equal(unname(fit$W), ref$W, tolerance = 1e-10)
  expect_equal(unname(fit$H), ref$H, tolerance = 1e-10)
  # the loss reported is the observed one, not the filled data's
  expect_equal(fit$loss, np_loss_r(X, ref$W, ref$H, "euclidean"), tolerance = 1e-10)
  # and the steps differ from the masked ones (the test above has power)
  fm <- bnmf(X, rank = 3, method = "np", init = list(W = W0, H = H0), iter = 7, tol = 0,
             control = np_control("mask"))
  expect_gt(max(abs(fm$W - fit$W)), 1e-3)
})

test_that("imputing and masking have the same fixed points", {
  X <- abs_missing_x(12, 10, 2, seed = 31, n_miss = 24, miss_seed = 32)
  set.seed(33)
  fm <- bnmf(X, rank = 2, method = "np", control = np_control("mask"), iter = 50000, tol = 0)
  one <- function(f, setting) {
    bnmf(X, rank = 2, method = "np", control = np_control(setting),
         init = list(W = f$W, H = f$H), iter = 1, tol = 0)
  }
  # at the masked fit's fixed point an imputing sweep stays (and so does a
  # masked one: the fit has converged)
  for (setting in c("impute", "mask")) {
    f1 <- one(fm, setting)
    expect_lt(max(abs(f1$W - fm$W) / fm$W), 1e-12)
    expect_lt(max(abs(f1$H - fm$H) / fm$H), 1e-12)
  }
  # short of it, it moves
  set.seed(33)
  f100 <- bnmf(X, rank = 2, method = "np", control = np_control("mask"), iter = 100, tol = 0)
  expect_gt(max(abs(one(f100, "impute")$W - f100$W) / f100$W), 1e-3)
})

test_that("np_control(): the auto rule, update(), print() and errors", {
  tm <- third_missing()
  # "auto" masks, also where ICM's and VB's rule would impute (tm$Xa) and
  # where a row misses more than a third (Xr)
  fr <- expect_auto_setting(tm$Xa, "np", "mask", 30)
  Xr <- tm$X
  Xr[1, 1:4] <- NA
  expect_auto_setting(Xr, "np", "mask", 30)
  expect_update_continues(tm$Xa, "np", "impute", 30)
  expect_update_continues(tm$Xa, "np", "mask", 30)
  fa <- missing_fit(tm$Xa, "np", 30, "impute")
  expect_identical(fa$settings$missing, "impute")
  expect_output(print(fa), "missing entries: filled with W H of the previous sweep (EM",
                fixed = TRUE)
  expect_output(print(fr), "missing entries: left out", fixed = TRUE)
  expect_identical(missing_fit(tm$X, "np", 30)$settings$missing, "mask")
  # the KL loss masks
  fk <- bnmf(tm$Xa, rank = 2, method = "np", loss = "kl", iter = 30, tol = 0)
  expect_identical(fk$settings$missing, "mask")
  expect_error(bnmf(tm$Xa, rank = 2, method = "np", loss = "kl",
                    control = np_control("impute")),
               "Euclidean", class = "bnmf_error_input")
  expect_error(bnmf(tm$Xa, rank = 2, method = "np", control = icm_control()),
               "np_control", class = "bnmf_error_input")
  expect_error(np_control("fill"), "missing", class = "bnmf_error_input")
  # a sparse X (its NA entries missing, its zeros data) imputes the same way
  skip_if_not_installed("Matrix")
  fs <- missing_fit(Matrix::Matrix(tm$Xa, sparse = TRUE), "np", 30, "impute")
  expect_identical(fs$settings$missing, "impute")
  expect_equal(fs$W, fa$W, tolerance = 1e-12)
  expect_equal(fs$loss, fa$loss, tolerance = 1e-12)
  # and masks the same way (the default)
  fsm <- missing_fit(Matrix::Matrix(tm$Xa, sparse = TRUE), "np", 30)
  expect_identical(fsm$settings$missing, "mask")
  expect_equal(fsm$W, fr$W, tolerance = 1e-12)
  expect_equal(fsm$H, fr$H, tolerance = 1e-12)
  expect_equal(fsm$loss, fr$loss, tolerance = 1e-12)
})

test_that("KL updates of a tall sparse X (several row blocks) equal a plain-R implementation", {
  # The sparse I-divergence updates take X / WH at the stored values through
  # bnmf_sparse_visit() and the numerators through the row-blocked sparse
  # products: 20,000 x 25 at K = 3 makes 4 blocks of rows. Stored NAs are
  # missing entries; the stored zeros and the unstored entries are observed.
  set.seed(45)
  I <- 20000; J <- 25; K <- 3
  Xs <- Matrix::rsparsematrix(I, J, 0.06, rand.x = function(n) rexp(n) + 0.1)
  Xs[I, 3] <- 1.5
  Xs@x[c(4, 900, 5000)] <- NA
  Xs@x[c(10, 11)] <- 0
  X <- as.matrix(Xs)
  W0 <- matrix(runif(I * K), I, K)
  H0 <- matrix(runif(K * J), K, J)
  fit <- bnmf(Xs, rank = K, method = "np", loss = "kl", init = list(W = W0, H = H0),
              iter = 4, tol = 0)
  ref <- list(W = W0, H = H0)
  for (s in 1:4) ref <- ls_sweep_r(X, ref$W, ref$H, "kl")
  expect_equal(unname(fit$W), ref$W, tolerance = 1e-10)
  expect_equal(unname(fit$H), ref$H, tolerance = 1e-10)
  expect_equal(fit$loss, np_loss_r(X, ref$W, ref$H, "kl"), tolerance = 1e-10)
})

test_that("the I-divergence's terms take a log within one ulp of log()", {
  # bnmf_kl_loss() takes log r four values at a time by its own series
  # (kl_log4 in linalg.c): across the whole range of normal doubles, near 1
  # (where log r is small and its relative error matters), and near the
  # ends of its reduction interval (sqrt(1/2), sqrt(2)).
  set.seed(46)
  r <- c(exp(runif(40000, log(2.3e-308), log(1.7e308))), 1 + runif(20000, -0.3, 0.45),
         1 + rnorm(4000, sd = 1e-9), sqrt(2) * (1 + c(-1, 1) %o% (1:2000) * 2^-52),
         sqrt(0.5) * (1 + c(-1, 1) %o% (1:2000) * 2^-52), 2^(-1022:1023),
         .Machine$double.xmin, .Machine$double.xmax)
  r <- r[seq_len(length(r) %/% 4 * 4)]
  out <- .Call(bnmf:::C_kl_loss, rep(1, length(r)), r)
  ref <- log(r)
  ulp <- 2^(floor(log2(abs(ref))) - 52)
  nz <- ref != 0
  expect_lte(max(abs(out$log - ref)[nz] / ulp[nz]), 1)
  expect_identical(out$log[!nz], ref[!nz]) # log 1 = 0 exactly
  # The terms: x log r - x where x > 0, nothing where x = 0 (whatever r is
  # there); groups with a ratio that is subnormal, 0 or infinite take log()
  x <- rexp(4003)
  x[sample(4003, 800)] <- 0
  rr <- rexp(4003) * 10
  rr[c(5, 6)] <- c(1e-310, 0) # a subnormal and a zero ratio where x = 0 ...
  x[c(5, 6)] <- 0
  rr[9] <- 1e-310 # ... and a subnormal one where x > 0
  x[9] <- 2
  rr[20] <- Inf # an infinite ratio where x = 0
  x[20] <- 0
  term <- ifelse(x > 0, x * log(rr) - x, 0)
  expect_equal(.Call(bnmf:::C_kl_loss, x, rr)$loss, sum(term), tolerance = 1e-13)
  x[20] <- 1
  expect_identical(.Call(bnmf:::C_kl_loss, x, rr)$loss, Inf)
})

test_that("np fits give point estimates and refuse posterior summaries by name", {
  d <- make_nmf_data(I = 20, J = 15, K = 2, sd = 0.05, seed = 28)
  X <- abs(d$X)
  X[2, 2] <- NA
  set.seed(29)
  fit <- muffle_convergence(bnmf(X, rank = 2, method = "np", loss = "kl", iter = 300))
  expect_s3_class(fit, c("bnmf_np", "bnmf"))
  expect_equal(dim(fitted(fit)), dim(X))
  expect_equal(predict(fit)[2, 2], sum(fit$W[2, ] * fit$H[, 2]))
  expect_named(factors(fit), c("W", "H"))
  h <- predict(fit, newdata = X[, 1:3], type = "coef")
  expect_equal(dim(h), c(2L, 3L))
  expect_output(print(fit), "multiplicative updates")
  expect_output(print(summary(fit)), "KL loss")
  # no prior: not headed as a Bayesian fit
  expect_output(print(summary(fit)), "^NMF by multiplicative updates \\(np\\)")
  tri <- muffle_convergence(bnmf(X, rank = c(2, 2), method = "np", iter = 20, tol = 0))
  expect_output(print(summary(tri)), "^NMTF by multiplicative updates \\(np\\)")
  for (bad in list(function() sigma(fit), function() logLik(fit),
                   function() predict(fit, se.fit = TRUE), function() elbo(fit),
                   function() bnmf:::draws_cube(fit))) {
    expect_error(bad(), class = "bnmf_error_unsupported", regexp = "np")
  }
  expect_error(bnmf(X - 1, rank = 2, method = "np"), class = "bnmf_error_input",
               regexp = "negative")
  expect_error(bnmf(X, rank = 2, method = "np", prior = ard()),
               class = "bnmf_error_input", regexp = "prior")
  expect_error(bnmf(X, rank = 2, method = "gibbs", loss = "kl"),
               class = "bnmf_error_input", regexp = "loss")
})

test_that("all four methods recover a synthetic signal to the noise level", {
  skip_on_cran()
  # Brouwer et al. (2017), section 4.1: I = 100, J = 80, K = 10, unit-mean
  # exponential factors, unit-variance Gaussian noise.
  set.seed(30)
  I <- 100; J <- 80; K <- 10
  S <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J)
  X <- S + matrix(rnorm(I * J), I, J)
  for (m in c("gibbs", "vb", "icm", "np")) {
    set.seed(31)
    Y <- if (m == "np") pmax(X, 0) else X
    fit <- muffle_convergence(bnmf(Y, rank = K, method = m, iter = if (m == "np") 3000 else 1000))
    train <- mean((Y - fitted(fit))^2)
    # Fitting 1800 parameters to 8000 entries leaves about
    # (1 - 1800 / 8000) = 0.78 of the noise variance in the residuals.
    expect_gt(train, 0.7)
    expect_lt(train, 1.0)
    # and the fit is close to the signal itself
    expect_lt(mean((fitted(fit) - S)^2), 0.35)
  }
})
