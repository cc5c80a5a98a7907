# Every model x method x generic (helper-conformance.R), on dense and sparse
# data: no call ends in an error that is not a classed `bnmf_error`, and the
# cells the package promises work.

grid <- conformance_grid()
grid$required <- conformance_is_required(grid)

test_that("no generic of any fit ends in an unclassed error", {
  bare <- grid[startsWith(grid$status, "bare"), ]
  expect_identical(nrow(bare), 0L,
                   info = paste(bare$kind, bare$model, bare$method, bare$generic, bare$status,
                                collapse = "\n"))
})

test_that("every fit of every model and method is made on dense and sparse data", {
  fits <- unique(grid[, c("kind", "model", "method")])
  expect_identical(nrow(fits), 3L * length(conformance_fits()))
  made <- !startsWith(grid$status, "refused fit") & !startsWith(grid$status, "bare fit") |
    grid$kind == "limited"
  expect_true(all(made), info = paste(unique(grid$status[!made]), collapse = "\n"))
})

# Required cells not yet working, each refused with bnmf_error_unsupported
# until it is built; a cell that starts working must leave this list.
conformance_pending <- character()

test_that("every required cell works, and the pending ones are refused as unsupported", {
  req <- grid[grid$required, ]
  key <- paste(req$model, req$method, req$generic)
  pending <- key %in% conformance_pending
  failing <- req[!pending & !conformance_met(req), ]
  expect_identical(nrow(failing), 0L,
                   info = paste(failing$kind, failing$model, failing$method, failing$generic,
                                failing$status, collapse = "\n"))
  expect_true(all(req$status[pending] == "refused: bnmf_error_unsupported"))
  expect_true(all(conformance_pending %in% key))
})

test_that("a refusal says why: unsupported operations are classed so", {
  X <- conformance_data()
  set.seed(1)
  fit <- suppressWarnings(bnmf(X, rank = 2, method = "np", iter = 20))
  expect_error(logLik(fit), class = "bnmf_error_unsupported")
  expect_error(elbo(fit), class = "bnmf_error_unsupported", regexp = "trace")
  e <- tryCatch(logLik(fit), error = identity)
  expect_identical(class(e), c("bnmf_error_unsupported", "bnmf_error", "error", "condition"))
  e <- tryCatch(bnmf(X, rank = 0), error = identity)
  expect_identical(class(e), c("bnmf_error_input", "bnmf_error", "error", "condition"))
})

test_that("the fit's class names its method and its model", {
  X <- conformance_data()
  set.seed(1)
  expect_identical(class(suppressWarnings(bnmf(X, rank = 2, method = "icm", iter = 10))),
                   c("bnmf_icm", "bnmf_nmf", "bnmf"))
  expect_identical(class(suppressWarnings(bnmf(X, rank = c(2, 2), method = "vb", iter = 10))),
                   c("bnmf_vb", "bnmf_nmtf", "bnmf"))
  expect_identical(class(suppressWarnings(bnmf(X, rank = 2, likelihood = "poisson",
                                               method = "gibbs", iter = 10))),
                   c("bnmf_gibbs", "bnmf_poisson", "bnmf"))
})

test_that("a Gaussian VB or ICM fit by blocks has the class and fields of the fit in memory", {
  for (sparse in c(FALSE, TRUE)) for (method in c("vb", "icm")) {
    X <- conformance_data(sparse)
    set.seed(2)
    a <- suppressWarnings(bnmf(X, rank = 2, method = method, iter = 10))
    set.seed(2)
    b <- suppressWarnings(bnmf(X, rank = 2, method = method, iter = 10, blocks = 3))
    expect_identical(class(b), class(a))
    expect_identical(names(b), names(a))
    expect_identical(names(b$chains[[1L]]), names(a$chains[[1L]]))
    expect_identical(lapply(b[c("W", "H", "W_sd", "H_sd")], dimnames),
                     lapply(a[c("W", "H", "W_sd", "H_sd")], dimnames))
    expect_identical(setdiff(names(b$settings), names(a$settings)), "blocks")
  }
})

test_that("a Poisson VB fit by blocks has the class and fields of the fit in memory", {
  for (sparse in c(FALSE, TRUE)) {
    X <- conformance_data(sparse)
    set.seed(2)
    a <- suppressWarnings(bnmf(X, rank = 2, likelihood = "poisson", method = "vb", iter = 10))
    set.seed(2)
    b <- suppressWarnings(bnmf(X, rank = 2, likelihood = "poisson", method = "vb", iter = 10,
                               blocks = 3))
    expect_identical(class(b), class(a))
    expect_identical(names(b), names(a))
    expect_identical(names(b$q), names(a$q))
    expect_identical(lapply(b[c("W", "H", "W_sd", "H_sd")], dimnames),
                     lapply(a[c("W", "H", "W_sd", "H_sd")], dimnames))
    expect_identical(setdiff(names(b$settings), names(a$settings)), "blocks")
  }
})
