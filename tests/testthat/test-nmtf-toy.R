# The paper's toy problem for NMTF (Brouwer, Frellsen & Lio, section 4.1):
# I = 100, J = 80, K = L = 5, unit-mean exponential F, S, G, unit Gaussian
# noise. Every method fits the training data down to the noise level, predicts
# held-out entries far better than row means, and its objective (VB: ELBO,
# ICM: log posterior, NP: squared loss) is monotone at every sweep, with
# missing entries and under ARD.

nmtf_toy <- function(seed) {
  withr::local_seed(seed)
  nmtf_draw(100, 80, 5, 5)
}

# Iterations per method: enough to converge from the k-means start on this
# problem (NP, plain multiplicative steps, is the slowest, as in the paper).
# NP needs X >= 0: it gets pmax(X, 0) (the few negative entries the noise
# makes are set to 0) and is scored on X like the others.
nmtf_toy_iter <- list(gibbs = list(iter = 1500, burnin = 1000), vb = list(iter = 1500),
                      icm = list(iter = 1500), np = list(iter = 10000))

nmtf_toy_fit <- function(X, method, ...) {
  if (method == "np") X <- pmax(X, 0)
  args <- c(list(X ~ nmtf(5, 5), method = method, tol = 0, progress = FALSE),
            nmtf_toy_iter[[method]], list(...))
  do.call(bnmf, args)
}

test_that("every NMTF method fits the paper's toy down to the noise level", {
  skip_on_cran()
  toy <- nmtf_toy(201)
  X <- toy$X
  for (method in names(nmtf_toy_iter)) {
    withr::local_seed(202)
    fit <- nmtf_toy_fit(X, method)
    mse <- mean((fitted(fit) - X)^2)
    # The noise variance is 1 and the signal variance about 300. At the best
    # fit the training MSE is a little below 1: (I + J) 5 + 25 = 925 free
    # values for 8000 entries take about 925 / 8000 of the noise (least
    # squares); it cannot go much lower. The NMTF objective also has local
    # optima on this problem where two clusters are not yet told apart, at a
    # training MSE of about 1.35 (a share 0.001 of the signal variance left);
    # every method can settle there (as Gibbs, ICM and NP do on this data
    # set, VB reaches 0.89). A fit that misses structure is far above 1.5.
    expect_gt(mse, 0.8, label = method)
    expect_lt(mse, 1.5, label = method)
  }
})

test_that("every NMTF method predicts 20% held-out toy entries far better than row means", {
  skip_on_cran()
  toy <- nmtf_toy(203)
  X <- toy$X
  withr::local_seed(204)
  test <- sample(length(X), round(0.2 * length(X)))
  Xtr <- X
  Xtr[test] <- NA
  row_mean <- rowMeans(Xtr, na.rm = TRUE)[row(X)[test]]
  mse_row <- mean((X[test] - row_mean)^2)
  for (method in names(nmtf_toy_iter)) {
    withr::local_seed(205)
    fit <- nmtf_toy_fit(Xtr, method)
    mse <- mean((predict(fit)[test] - X[test])^2)
    # The best possible is the noise variance 1 (plus the estimation error
    # and, in a local optimum, about 0.35 more, see above); row means leave
    # the column structure unexplained (MSE in the hundreds).
    expect_lt(mse, 2, label = method)
    expect_lt(mse, mse_row / 50, label = method)
  }
})

test_that("VB's ELBO, ICM's log posterior and NP's loss are monotone at every sweep", {
  skip_on_cran()
  toy <- nmtf_toy(206)
  X <- toy$X
  withr::local_seed(207)
  X[sample(length(X), round(0.2 * length(X)))] <- NA
  for (prior in list(NULL, ard(), ard(2, 0.5))) {
    model <- if (is.null(prior)) X ~ nmtf(5, 5) else
      eval(bquote(X ~ nmtf(5, 5, prior = .(prior))))
    for (method in c("vb", "icm")) {
      withr::local_seed(208)
      fit <- bnmf(model, method = method, iter = 150, tol = 0, progress = FALSE)
      obj <- if (method == "vb") elbo(fit) else fit$trace$logpost
      expect_length(obj, 150)
      expect_true(all(is.finite(obj)))
      expect_lte(max(-diff(obj)), 1e-10 * max(abs(obj)),
                 label = paste(method, if (is.null(prior)) "exponential" else "ARD"))
    }
  }
  withr::local_seed(209)
  Xp <- pmax(X, 0)
  fit <- bnmf(Xp ~ nmtf(5, 5), method = "np", iter = 300, tol = 0, progress = FALSE)
  l <- fit$trace$sse
  expect_length(l, 300)
  expect_lte(max(diff(l)), 1e-12 * max(l))
})

test_that("plot(type = \"biclusters\") draws an NMTF fit and refuses an NMF fit", {
  toy <- nmtf_toy(210)
  X <- toy$X[1:40, 1:30]
  X[3, 4] <- NA
  withr::local_seed(211)
  fit <- muffle_convergence(bnmf(X ~ nmtf(3, 2), method = "vb", iter = 50, progress = FALSE))
  png_file <- withr::local_tempfile(fileext = ".png")
  grDevices::png(png_file, width = 800, height = 400)
  expect_identical(plot(fit, type = "biclusters"), fit)
  grDevices::dev.off()
  expect_gt(file.size(png_file), 1000)
  nmf_fit <- muffle_convergence(bnmf(X, rank = 2, method = "vb", iter = 20, progress = FALSE))
  expect_error(plot(nmf_fit, type = "biclusters"), class = "bnmf_error_input")
})
