# Numerical extremes: every fit is finite, or bnmf refuses the data with a
# classed error that names the argument.

extreme_data <- function() {
  set.seed(1)
  base <- matrix(rexp(10 * 2), 10, 2) %*% matrix(rexp(2 * 8), 2, 8)
  list(
    "entries of 1e300" = list(X = base * 1e300, error = "too large"),
    "one entry of 1e200" = list(X = replace(base, 1, 1e200), error = "too large"),
    "entries of 1e-300" = list(X = base * 1e-300, error = "too small"),
    "subnormal entries" = list(X = base * 1e-310, error = "too small"),
    "entries of 1e100" = list(X = base * 1e100),
    "entries of 1e-100" = list(X = base * 1e-100),
    "a few entries of 1e-300" = list(X = replace(base, c(3, 17, 40), 1e-300)),
    "constant matrix" = list(X = matrix(5, 10, 8)),
    "all zero" = list(X = matrix(0, 10, 8), error = "automatic rate"),
    "all zero, rate given" = list(X = matrix(0, 10, 8), prior = exponential(1)),
    "zero rows and columns" = list(X = {
      b <- base
      b[3, ] <- 0
      b[, c(4, 8)] <- 0
      b
    }),
    "rank above the data's rank" = list(X = outer(1:10, 1:8) / 10, rank = 5),
    "duplicated rows" = list(X = base[c(1:5, 1:5), ]),
    "duplicated columns, missing entries" = list(X = {
      b <- base[, c(1:4, 1:4)]
      b[c(2, 13, 50)] <- NA
      b
    })
  )
}

test_that("numerical extremes give finite fits or a clear error", {
  for (nm in names(extreme_data())) {
    case <- extreme_data()[[nm]]
    for (method in c("gibbs", "icm")) {
      set.seed(2)
      res <- tryCatch(
        suppressWarnings(bnmf(case$X, rank = case$rank %||% 2, method = method, iter = 200,
                              prior = case$prior %||% exponential(), progress = FALSE)),
        error = function(e) e)
      info <- paste(nm, method)
      if (!is.null(case$error)) {
        expect_s3_class(res, "bnmf_error_input")
        expect_match(conditionMessage(res), case$error, info = info)
        expect_match(conditionMessage(res), "`(X|prior)`", info = info)
        next
      }
      expect_s3_class(res, "bnmf")
      if (!inherits(res, "bnmf")) next
      expect_true(all(is.finite(res$W)) && all(res$W >= 0), info = info)
      expect_true(all(is.finite(res$H)) && all(res$H >= 0), info = info)
      expect_true(is.finite(res$tau) && res$tau > 0, info = info)
      expect_true(all(is.finite(fitted(res))), info = info)
      expect_true(all(is.finite(predict(res))), info = info)
      expect_true(all(is.finite(summary(res)$factors$W_sum)), info = info)
    }
  }
})

test_that("fits of extreme but representable data reconstruct them", {
  d <- extreme_data()
  for (nm in c("entries of 1e100", "constant matrix", "rank above the data's rank",
               "zero rows and columns")) {
    X <- d[[nm]]$X
    set.seed(3)
    # (a rank above the data's rank need not converge within `iter`)
    fit <- suppressWarnings(bnmf(X, rank = d[[nm]]$rank %||% 2, method = "icm", progress = FALSE),
                            classes = "bnmf_warning_convergence")
    rel <- sqrt(sum((fitted(fit) - X)^2) / sum(X^2))
    expect_lt(rel, 0.01, label = nm)
  }
})

test_that("new data are checked for magnitude as well", {
  set.seed(4)
  X <- matrix(rexp(40), 8, 5)
  fit <- bnmf(X, rank = 2, method = "icm", progress = FALSE)
  expect_error(predict(fit, newdata = X[, 1:2] * 1e300), class = "bnmf_error_input")
  expect_error(predict(fit, newdata = X[, 1:2] * 1e-300), "`newdata`", class = "bnmf_error_input")
})
