# Arguments that reach no function are errors, named, with the closest valid
# name; select_rank() checks everything before starting any fit or worker;
# an impossible fit is refused before any work.

dots_fit <- function() {
  withr::local_seed(1)
  X <- matrix(rexp(30 * 12), 30, 12)
  list(X = X, fit = bnmf(X, rank = 2, iter = 40, prior = exponential(1), progress = FALSE))
}

test_that("misspelt arguments of marginal_likelihood() and update() are errors naming them", {
  d <- dots_fit()
  err <- expect_error(marginal_likelihood(d$fit, smaples = 100), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`smaples` is not an argument of `marginal_likelihood\\(\\)`; did you mean `samples`\\?")
  err <- expect_error(update(d$fit, iterations = 10), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`iterations` is not an argument of `update\\(\\)`; did you mean `iter`\\?")
  err <- expect_error(update(d$fit, 10, FALSE, 3), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "takes no further arguments, but 1 unnamed argument was given")
  # Nothing close: no suggestion; every unknown name is listed.
  err <- expect_error(marginal_likelihood(d$fit, zzz = 1, qqq = 2), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`zzz` is not an argument of `marginal_likelihood\\(\\)` \\(also unknown: `qqq`\\)")
  # The checks come before any work: the fit is unchanged and no RNG is used.
  withr::local_seed(2)
  s0 <- .Random.seed
  expect_error(update(d$fit, iterations = 10), class = "bnmf_error_input")
  expect_identical(.Random.seed, s0)
})

test_that("closest_name() suggests a prefix or a near spelling, or nothing", {
  expect_identical(bnmf:::closest_name("smaples", c("samples", "burnin")), "samples")
  expect_identical(bnmf:::closest_name("iterations", c("iter", "progress")), "iter")
  expect_identical(bnmf:::closest_name("Burnin", c("samples", "burnin")), "burnin")
  expect_identical(bnmf:::closest_name("zzz", c("samples", "burnin")), NA_character_)
  expect_identical(bnmf:::closest_name("x", character()), NA_character_)
})

test_that("select_rank() refuses unknown or invalid marglik_args before any fit", {
  d <- dots_fit()
  withr::local_seed(3)
  s0 <- .Random.seed
  err <- expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(unknown = 1)),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`marglik_args`: `unknown` is not an argument of `marginal_likelihood\\(\\)`")
  err <- expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(batchs = 10)),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "did you mean `batches`\\?")
  expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(batches = 1)),
               "`batches` must be a single whole number >= 2", class = "bnmf_error_input")
  expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(point = "median")),
               "`point` must be one of", class = "bnmf_error_input")
  # No fit ran: the session's random numbers were not touched.
  expect_identical(.Random.seed, s0)
})

test_that("select_rank() checks the fits' arguments before starting workers", {
  d <- dots_fit()
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  # The temporary plan of `cores` (and its message) comes after the checks:
  # an invalid argument of the fits errors with no message and no workers.
  for (crit in c("bic", "chib", "cv")) {
    args <- list(d$X, ranks = 1:2, criterion = crit, cores = 2, iter = -1)
    if (crit == "cv") args$method <- "vb"
    expect_no_message(err <- expect_error(do.call(select_rank, args), class = "bnmf_error_input"))
    expect_match(conditionMessage(err), "`iter` must be a single whole number >= 1")
    expect_s3_class(future::plan(), "sequential")
  }
  expect_no_message(expect_error(select_rank(d$X, ranks = 1:2, cores = 2, burnin = 50, iter = 40),
                                 "`burnin` \\(50\\) must be smaller than `iter` \\(40\\)",
                                 class = "bnmf_error_input"))
  expect_no_message(expect_error(select_rank(d$X, ranks = 1:2, criterion = "bic", cores = 2,
                                             prior = "exp"),
                                 "`prior` must be made by", class = "bnmf_error_input"))
})

test_that("a fit that cannot fit in memory is refused before any work, naming the sizes", {
  X <- Matrix::sparseMatrix(i = c(seq_len(1e6), 1:3), j = c(seq_len(1e6), 3:1), x = 1,
                            dims = c(1e6, 1e6))
  err <- expect_error(bnmf(X, rank = 1e6, progress = FALSE), class = "bnmf_error_input")
  expect_match(conditionMessage(err),
               "rank 1,000,000 for a 1,000,000 x 1,000,000 matrix needs a W array of 1,000,000,000,000 elements, more than the 2,147,483,647")
  d <- dots_fit()
  # Kept draws count: 30 x 2 x 4e7 elements.
  err <- expect_error(bnmf(d$X, rank = 2, iter = 4e7, burnin = 0, keep = "draws", progress = FALSE),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "W draws array of 2,400,000,000 elements")
  expect_match(conditionMessage(err), "lower `rank`, `iter` or keep fewer draws")
  # The total against getOption("bnmf.max_memory") (bytes): 4 chains of
  # 5 copies of W and H (30 x 2 + 2 x 12) and 3 copies of X, 8 bytes each.
  need <- 8 * 4 * (5 * (30 * 2 + 2 * 12) + 3 * 30 * 12)
  expect_identical(bnmf:::check_fit_size(30, 12, 2, 4, data = 3, nx = 360), need)
  withr::local_options(bnmf.max_memory = need - 1)
  err <- expect_error(bnmf(d$X, rank = 2, iter = 10, chains = 4, progress = FALSE),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "rank 2 for a 30 x 12 matrix \\(4 chains\\) needs about 46.9 kB of memory, more than `getOption\\(\"bnmf.max_memory\"\\)`")
  withr::local_options(bnmf.max_memory = need)
  expect_s3_class(bnmf(d$X, rank = 2, iter = 10, chains = 4, progress = FALSE), "bnmf")
})
