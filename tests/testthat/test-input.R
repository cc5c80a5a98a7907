# Bad input: a classed error naming the argument, never a crash.

good <- matrix(c(1, 2, 3, 4, 5, 6), 2, 3)

bad_calls <- list(
  "X character"        = quote(bnmf(matrix(letters[1:6], 2), rank = 1)),
  "X vector"           = quote(bnmf(1:6, rank = 1)),
  "X list"             = quote(bnmf(list(1, 2), rank = 1)),
  "X with Inf"         = quote(bnmf(replace(good, 1, Inf), rank = 1)),
  "X all NA"           = quote(bnmf(matrix(NA_real_, 2, 3), rank = 1)),
  "X NA row"           = quote(bnmf(rbind(good, NA), rank = 1)),
  "X NA column"        = quote(bnmf(cbind(good, NA), rank = 1)),
  "X zero rows"        = quote(bnmf(matrix(numeric(), 0, 3), rank = 1)),
  "X factor frame"     = quote(bnmf(data.frame(a = 1:2, b = c("x", "y")), rank = 1)),
  "rank missing"       = quote(bnmf(good)),
  "rank zero"          = quote(bnmf(good, rank = 0)),
  "rank fractional"    = quote(bnmf(good, rank = 1.5)),
  "rank too large"     = quote(bnmf(good, rank = 3)),
  "rank NA"            = quote(bnmf(good, rank = NA)),
  "rank twice"         = quote(bnmf(good ~ nmf(1), rank = 2)),
  "formula rhs"        = quote(bnmf(good ~ pca(2))),
  "method unknown"     = quote(bnmf(good, rank = 1, method = "magic")),
  "iter negative"      = quote(bnmf(good, rank = 1, iter = -5)),
  "burnin too large"   = quote(bnmf(good, rank = 1, iter = 10, burnin = 10)),
  "thin too large"     = quote(bnmf(good, rank = 1, iter = 10, burnin = 5, thin = 6)),
  "chains zero"        = quote(bnmf(good, rank = 1, chains = 0)),
  "tol negative"       = quote(bnmf(good, rank = 1, method = "icm", tol = -1)),
  "keep unknown"       = quote(bnmf(good, rank = 1, keep = "everything")),
  "keep draws icm"     = quote(bnmf(good, rank = 1, method = "icm", keep = "draws")),
  "progress NA"        = quote(bnmf(good, rank = 1, progress = NA)),
  "prior not a prior"  = quote(bnmf(good, rank = 1, prior = 3)),
  "noise not a prior"  = quote(bnmf(good, rank = 1, noise = list(1, 1))),
  "rate negative"      = quote(exponential(rate = -1)),
  "rate text"          = quote(exponential(rate = "big")),
  "rate matrix size"   = quote(bnmf(good, rank = 1, prior = exponential(list(W = matrix(1, 3, 1), H = matrix(1, 1, 3))))),
  "gamma shape zero"   = quote(gamma_prior(shape = 0)),
  "gamma rate NA"      = quote(gamma_prior(rate = NA)),
  "init wrong size"    = quote(bnmf(good, rank = 1, init = list(W = matrix(1, 3, 1), H = matrix(1, 1, 3)))),
  "init negative"      = quote(bnmf(good, rank = 1, init = list(W = matrix(-1, 2, 1), H = matrix(1, 1, 3)))),
  "init unknown"       = quote(bnmf(good, rank = 1, init = "svd")),
  "auto rate mean < 0" = quote(bnmf(-good, rank = 1, method = "icm"))
)

test_that("bad calls give classed errors that name the argument", {
  for (nm in names(bad_calls)) {
    err <- tryCatch(suppressWarnings(eval(bad_calls[[nm]])), error = function(e) e)
    expect_s3_class(err, "bnmf_error_input")
    expect_match(conditionMessage(err), "`[A-Za-z_$.]+`", info = nm)
  }
})

test_that("error messages are stable", {
  for (nm in names(bad_calls)) {
    expect_snapshot(error = TRUE, suppressWarnings(eval(bad_calls[[nm]])),
                    variant = NULL)
  }
})

test_that("negative data are accepted by the Gaussian methods, with a warning when common", {
  X <- good
  X[1, 1] <- -0.5
  set.seed(1)
  expect_silent(bnmf(cbind(X, X + 1, X + 2, X + 3, X + 4, X + 5, X + 6, X + 7, X + 8, X + 9,
                           X + 10, X + 11), rank = 1, iter = 20, progress = FALSE))
  expect_warning(bnmf(X, rank = 1, iter = 20, progress = FALSE), "negative")
})

test_that("a data frame of numbers and integer matrices are accepted", {
  set.seed(1)
  a <- bnmf(as.data.frame(good), rank = 1, method = "icm", progress = FALSE)
  set.seed(1)
  b <- bnmf(matrix(1:6, 2), rank = 1, method = "icm", progress = FALSE)
  expect_equal(unname(a$W), unname(b$W))
})
