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

# The message of each call of the table above.
bad_call_messages <- c(
  "X character"        = "`X` must be a numeric matrix or a Matrix::dgCMatrix, not a character matrix.",
  "X vector"           = "`X` must be a matrix (features x samples), not a vector.",
  "X list"             = "`X` must be a numeric matrix or a Matrix::dgCMatrix, not an object of class list.",
  "X with Inf"         = "`X` has infinite entries; use NA for missing values.",
  "X all NA"           = "`X` has no observed entries.",
  "X NA row"           = "`X` has rows with no observed entry (row 3); remove them.",
  "X NA column"        = "`X` has columns with no observed entry (column 4); remove them.",
  "X zero rows"        = "`X` must have at least one row and one column (it is 0 x 3).",
  "X factor frame"     = "`X` must be numeric: column b of the data frame is not.",
  "rank missing"       = "`rank` is missing: give the number of factors, e.g. `rank = 5`.",
  "rank zero"          = "`rank` must be a single whole number >= 1.",
  "rank fractional"    = "`rank` must be a single whole number >= 1.",
  "rank too large"     = "`rank` must be at most min(nrow(X), ncol(X)) = 2, not 3.",
  "rank NA"            = "`rank` must be a single whole number >= 1.",
  "rank twice"         = "`rank` is given both in the formula and as an argument; give it once.",
  "formula rhs"        = "`X`: the right side of the formula must be `nmf(rank)` or `nmtf(K, L)`, not `pca(2)`.",
  "method unknown"     = '`method` must be one of "gibbs", "vb", "icm", "np", "particles", "hmc", "svgd", "dsgd", "ssvi", "rrt", not "magic".',
  "iter negative"      = "`iter` must be a single whole number >= 1.",
  "burnin too large"   = "`burnin` (10) must be smaller than `iter` (10).",
  "thin too large"     = "`thin` (6) leaves no draw after burn-in: (iter - burnin) / thin must be >= 1.",
  "chains zero"        = "`chains` must be a single whole number >= 1.",
  "tol negative"       = "`tol` must be a single finite number >= 0.",
  "keep unknown"       = '`keep` must be one of "summary", "draws", not "everything".',
  "keep draws icm"     = '`keep`: "draws" applies to method "gibbs" only.',
  "progress NA"        = "`progress` must be TRUE or FALSE.",
  "prior not a prior"  = "`prior` must be made by `exponential()` or `ard()`.",
  "noise not a prior"  = "`noise` must be made by `gamma_prior()`.",
  "rate negative"      = '`rate` must be "auto", a single finite number >= 0, or a list of rate matrices `W` and `H`.',
  "rate text"          = '`rate` must be "auto", a single finite number >= 0, or a list of rate matrices `W` and `H`.',
  "rate matrix size"   = "`prior`: the rate matrix `W` must be 2 x 1.",
  "gamma shape zero"   = "`shape` must be a single finite number > 0.",
  "gamma rate NA"      = "`rate` must be a single finite number > 0.",
  "init wrong size"    = "`init$W` must be a 2 x 1 matrix of finite values >= 0.",
  "init negative"      = "`init$W` must be a 2 x 1 matrix of finite values >= 0.",
  "init unknown"       = '`init` must be one of "random", not "svd".',
  "auto rate mean < 0" = "`prior`: the automatic rate needs a positive mean of the observed entries of `X`; give `exponential(rate = )` explicitly."
)

# The calls that warn before their error, with the warnings' classes.
bad_call_warnings <- list("auto rate mean < 0" = "bnmf_warning_negative")

test_that("every bad call has its message", {
  expect_setequal(names(bad_call_messages), names(bad_calls))
  expect_true(all(names(bad_call_warnings) %in% names(bad_calls)))
})

# One test per call, named after it, whose code is the call itself (spliced
# in with bquote(), so that a failure shows what gives the message): an
# error of class bnmf_error_input with the message of the table, and no
# warning but those of bad_call_warnings.
for (nm in names(bad_calls)) {
  warns <- if (is.null(bad_call_warnings[[nm]])) character() else bad_call_warnings[[nm]]
  eval(bquote(
    test_that(.(paste("error message:", nm)), {
      expect_bnmf_error(quote(.(bad_calls[[nm]])), "input", .(bad_call_messages[[nm]]),
                        warnings = .(warns))
    })
  ))
}

# rtnorm(), the priors and the S3 methods: each entry is the call and the
# argument its message must name.
set.seed(1)
fit_gibbs <- bnmf(good, rank = 1, iter = 20, progress = FALSE)
fit_icm <- bnmf(good, rank = 1, method = "icm", progress = FALSE)

bad_api_calls <- list(
  "rtnorm n negative"        = list(quote(rtnorm(-1)), "n"),
  "rtnorm n fractional"      = list(quote(rtnorm(1.5)), "n"),
  "rtnorm n text"            = list(quote(rtnorm("a")), "n"),
  "rtnorm n NA"              = list(quote(rtnorm(NA)), "n"),
  "rtnorm n Inf"             = list(quote(rtnorm(Inf)), "n"),
  "rtnorm n NULL"            = list(quote(rtnorm(NULL)), "n"),
  "rtnorm mean text"         = list(quote(rtnorm(3, mean = "a")), "mean"),
  "rtnorm mean NA"           = list(quote(rtnorm(3, mean = NA_real_)), "mean"),
  "rtnorm mean Inf"          = list(quote(rtnorm(3, mean = Inf)), "mean"),
  "rtnorm mean empty"        = list(quote(rtnorm(3, mean = numeric(0))), "mean"),
  "rtnorm sd zero"           = list(quote(rtnorm(3, sd = 0)), "sd"),
  "rtnorm sd negative"       = list(quote(rtnorm(3, sd = c(1, -1))), "sd"),
  "rtnorm sd Inf"            = list(quote(rtnorm(3, sd = Inf)), "sd"),
  "rtnorm lower > upper"     = list(quote(rtnorm(3, lower = 1, upper = 0)), "lower"),
  "rtnorm lower = upper"     = list(quote(rtnorm(3, lower = 2, upper = 2)), "lower"),
  "rtnorm lower NA"          = list(quote(rtnorm(3, lower = NA)), "lower"),
  "rtnorm upper text"        = list(quote(rtnorm(3, upper = "x")), "upper"),
  "rtnorm lower Inf"         = list(quote(rtnorm(3, lower = Inf)), "lower"),
  "exponential rate NA"      = list(quote(exponential(NA)), "rate"),
  "exponential rate Inf"     = list(quote(exponential(Inf)), "rate"),
  "exponential two rates"    = list(quote(exponential(c(1, 2))), "rate"),
  "exponential rate NULL"    = list(quote(exponential(NULL)), "rate"),
  "exponential list no H"    = list(quote(exponential(list(W = matrix(1)))), "rate"),
  "exponential list W < 0"   = list(quote(exponential(list(W = matrix(-1, 2, 1), H = matrix(1, 1, 3)))), "rate$W"),
  "exponential list vectors" = list(quote(exponential(list(W = 1, H = 1))), "rate$W"),
  "gamma shape negative"     = list(quote(gamma_prior(shape = -1)), "shape"),
  "gamma shape text"         = list(quote(gamma_prior(shape = "a")), "shape"),
  "gamma shape Inf"          = list(quote(gamma_prior(shape = Inf)), "shape"),
  "gamma rate zero"          = list(quote(gamma_prior(rate = 0)), "rate"),
  "gamma two rates"          = list(quote(gamma_prior(rate = c(1, 2))), "rate"),
  "nmf rank zero"            = list(quote(bnmf(good ~ nmf(0))), "rank"),
  "nmf prior not a prior"    = list(quote(bnmf(good ~ nmf(1, prior = 3))), "prior"),
  "formula one-sided"        = list(quote(bnmf(~ nmf(1))), "X"),
  "iter above int range"     = list(quote(bnmf(good, rank = 1, iter = 1e10)), "iter"),
  "init tau negative"        = list(quote(bnmf(good, rank = 1, init = list(W = matrix(1, 2, 1), H = matrix(1, 1, 3), tau = -1))), "init$tau"),
  "init list per chain"      = list(quote(bnmf(good, rank = 1, chains = 2, init = list(list(W = matrix(1, 2, 1), H = matrix(1, 1, 3))))), "init"),
  "burnin for icm"           = list(quote(bnmf(good, rank = 1, method = "icm", burnin = 5)), "burnin"),
  "predict newdata rows"     = list(quote(predict(fit_gibbs, newdata = matrix(1, 5, 2))), "newdata"),
  "predict newdata text"     = list(quote(predict(fit_gibbs, newdata = "a")), "newdata"),
  "predict newdata list"     = list(quote(predict(fit_gibbs, newdata = list(1))), "newdata"),
  "predict newdata all NA"   = list(quote(predict(fit_gibbs, newdata = matrix(NA_real_, 2, 2))), "newdata"),
  "predict newdata Inf"      = list(quote(predict(fit_gibbs, newdata = replace(good, 1, Inf))), "newdata"),
  "predict type"             = list(quote(predict(fit_gibbs, type = "nonsense")), "type"),
  "predict se.fit NA"        = list(quote(predict(fit_gibbs, se.fit = NA)), "se.fit"),
  "predict se.fit for icm"   = list(quote(predict(fit_icm, se.fit = TRUE)), "se.fit"),
  "predict iter zero"        = list(quote(predict(fit_gibbs, newdata = good, iter = 0)), "iter"),
  "plot type"                = list(quote(plot(fit_gibbs, type = "nonsense")), "type"),
  "plot factor too large"    = list(quote(plot(fit_gibbs, type = "basis", factor = 5)), "factor"),
  "plot factor zero"         = list(quote(plot(fit_gibbs, type = "basis", factor = 0)), "factor"),
  "update iter negative"     = list(quote(update(fit_gibbs, iter = -1)), "iter"),
  "update iter text"         = list(quote(update(fit_gibbs, iter = "a")), "iter"),
  "update iter fractional"   = list(quote(update(fit_icm, iter = 1.5)), "iter"),
  "update progress NA"       = list(quote(update(fit_gibbs, progress = NA)), "progress"),
  "factors not a fit"        = list(quote(factors(1:3)), "object"),
  "basis not a fit"          = list(quote(basis("a")), "object"),
  "summary digits text"      = list(quote(print(summary(fit_gibbs), digits = "a")), "digits")
)
if (requireNamespace("posterior", quietly = TRUE)) {
  bad_api_calls[["as_draws of icm"]] <- list(quote(posterior::as_draws(fit_icm)), "x")
}
if (requireNamespace("coda", quietly = TRUE)) {
  bad_api_calls[["as.mcmc of icm"]] <- list(quote(coda::as.mcmc(fit_icm)), "x")
}

test_that("bad calls of rtnorm(), the priors and the methods give classed errors naming the argument", {
  expect_gte(length(bad_api_calls), 30L)
  # No call of this table repeats one of the bnmf() table.
  expect_length(intersect(vapply(bad_api_calls, function(b) deparse1(b[[1L]]), ""),
                          vapply(bad_calls, deparse1, "")), 0L)
  for (nm in names(bad_api_calls)) {
    err <- tryCatch(suppressWarnings(eval(bad_api_calls[[nm]][[1L]])), error = function(e) e)
    # bad input, or an operation the fit's model or method cannot do
    expect_true(inherits(err, c("bnmf_error_input", "bnmf_error_unsupported")), info = nm)
    expect_true(grepl(paste0("`", bad_api_calls[[nm]][[2L]]), conditionMessage(err), fixed = TRUE),
                info = paste(nm, conditionMessage(err)))
  }
})

# The messages as text (an output snapshot, whose format does not depend on
# testthat's version), of the calls that need no suggested package; the
# others are checked below.
optional_api_calls <- c("as_draws of icm", "as.mcmc of icm")

test_that("error messages of rtnorm(), the priors and the methods are stable", {
  msgs <- vapply(setdiff(names(bad_api_calls), optional_api_calls), function(nm) {
    err <- tryCatch(suppressWarnings(eval(bad_api_calls[[nm]][[1L]])), error = function(e) e)
    paste0(nm, ": ", conditionMessage(err))
  }, "")
  expect_snapshot(writeLines(msgs))
})

test_that("posterior draws of an ICM fit are refused", {
  skip_if_not_installed("posterior")
  expect_bnmf_error(quote(posterior::as_draws(fit_icm)), "unsupported",
                    '`x`: posterior draws need a Gibbs fit, not method "icm".')
})

test_that("coda draws of an ICM fit are refused", {
  skip_if_not_installed("coda")
  expect_bnmf_error(quote(coda::as.mcmc(fit_icm)), "unsupported",
                    '`x`: posterior draws need a Gibbs fit, not method "icm".')
})

test_that("negative data are accepted by the Gaussian methods, with a warning when common", {
  X <- good
  X[1, 1] <- -0.5
  set.seed(1)
  expect_silent(bnmf(cbind(X, X + 1, X + 2, X + 3, X + 4, X + 5, X + 6, X + 7, X + 8, X + 9,
                           X + 10, X + 11), rank = 1, iter = 20, progress = FALSE))
  expect_warning(bnmf(X, rank = 1, iter = 20, progress = FALSE), "negative",
                 class = "bnmf_warning_negative")
})

test_that("a data frame of numbers and integer matrices are accepted", {
  set.seed(1)
  a <- bnmf(as.data.frame(good), rank = 1, method = "icm", progress = FALSE)
  set.seed(1)
  b <- bnmf(matrix(1:6, 2), rank = 1, method = "icm", progress = FALSE)
  expect_equal(unname(a$W), unname(b$W))
})
