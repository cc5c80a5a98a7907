# Tasks in workers run with one thread of R's BLAS (R/tasks.R,
# src/blas_threads.c). R's reference BLAS has no thread control, so under it
# these tests check only that nothing is claimed or changed; CI runs this
# file again under OpenBLAS with BNMF_TEST_BLAS_THREADS=required, where a
# missing control fails instead of skipping.

blas_control_or_skip <- function() {
  if (!is.na(bnmf:::blas_threads())) return(invisible(TRUE))
  if (identical(Sys.getenv("BNMF_TEST_BLAS_THREADS"), "required")) {
    fail("BNMF_TEST_BLAS_THREADS=required, but R's BLAS shows no thread control")
  }
  skip("R's BLAS has no thread control (FlexiBLAS, OpenBLAS or Intel MKL)")
}

test_that("blas_threads() reads and sets the BLAS's threads, or says NA and changes nothing", {
  before <- bnmf:::blas_threads()
  if (is.na(before)) {
    # no control: NA for reading and for setting, nothing named
    expect_identical(as.vector(bnmf:::blas_threads(2L)), NA_integer_)
    expect_identical(attr(bnmf:::blas_threads(), "blas"), NA_character_)
  }
  blas_control_or_skip()
  withr::defer(bnmf:::blas_threads(before))
  expect_true(attr(before, "blas") %in% c("FlexiBLAS", "OpenBLAS", "MKL"))
  # setting returns the value before, reading returns what was set
  expect_identical(as.vector(bnmf:::blas_threads(2L)), as.vector(before))
  expect_identical(as.vector(bnmf:::blas_threads()), 2L)
  expect_identical(as.vector(bnmf:::blas_threads(1L)), 2L)
  expect_identical(as.vector(bnmf:::blas_threads()), 1L)
  # NA reads only
  expect_identical(as.vector(bnmf:::blas_threads(NA)), 1L)
  expect_identical(as.vector(bnmf:::blas_threads()), 1L)
})

test_that("a task in a worker runs with one BLAS thread; the worker gets its own back", {
  skip_on_cran()
  skip_on_os("windows")
  blas_control_or_skip()
  withr::local_options(bnmf.blas_threads = NULL)
  old <- future::plan(future::multisession, workers = 2)
  withr::defer(future::plan(old))
  # Both workers at 2 threads (each future of two goes to its own worker).
  per_worker <- function(f) {
    r <- future.apply::future_lapply(1:2, function(i) c(Sys.getpid(), f()))
    r <- do.call(rbind, r)
    stats::setNames(r[, 2L], r[, 1L])[order(r[, 1L])]
  }
  set2 <- per_worker(function() bnmf:::blas_threads(2L))
  expect_length(unique(names(set2)), 2L)
  seen <- function(task) c(Sys.getpid(), bnmf:::blas_threads())
  in_tasks <- function() {
    r <- do.call(rbind, bnmf:::run_tasks(2, seen, seeds = FALSE))
    r[, 2L]
  }
  expect_identical(unname(in_tasks()), c(1L, 1L))
  after <- per_worker(function() bnmf:::blas_threads())
  expect_identical(unname(after), c(2L, 2L))
  # A task that fails gives the worker its setting back too.
  expect_error(bnmf:::run_tasks(2, function(task) stop("task failed"), seeds = FALSE),
               "task failed")
  expect_identical(unname(per_worker(function() bnmf:::blas_threads())), c(2L, 2L))
  # The option: another number of threads, or NA (the workers' own).
  withr::with_options(list(bnmf.blas_threads = 3), {
    expect_identical(unname(in_tasks()), c(3L, 3L))
  })
  withr::with_options(list(bnmf.blas_threads = NA), {
    expect_identical(unname(in_tasks()), c(2L, 2L))
  })
  expect_identical(unname(per_worker(function() bnmf:::blas_threads())), c(2L, 2L))
  # A chain of a fit is such a task.
  X <- withr::with_seed(1, matrix(rexp(300), 30, 10))
  fit <- withr::with_seed(2, suppressWarnings(bnmf(X, rank = 2, iter = 20, chains = 2,
                                                   progress = FALSE)))
  expect_s3_class(fit, "bnmf")
  expect_identical(unname(per_worker(function() bnmf:::blas_threads())), c(2L, 2L))
})

test_that("tasks in this process run with the BLAS as it is, or with the option's threads", {
  blas_control_or_skip()
  withr::local_options(bnmf.blas_threads = NULL)
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  before <- bnmf:::blas_threads(2L)
  withr::defer(bnmf:::blas_threads(before))
  seen <- function(task) bnmf:::blas_threads()
  expect_identical(unlist(lapply(bnmf:::run_tasks(2, seen, seeds = FALSE), as.vector)), c(2L, 2L))
  withr::with_options(list(bnmf.blas_threads = 1), {
    expect_identical(unlist(lapply(bnmf:::run_tasks(2, seen, seeds = FALSE), as.vector)),
                     c(1L, 1L))
    expect_error(bnmf:::run_tasks(1, function(task) stop("task failed"), seeds = FALSE),
                 "task failed")
  })
  # and the setting before, after the tasks (also after an error)
  expect_identical(as.vector(bnmf:::blas_threads()), 2L)
})

test_that("with options(bnmf.blas_threads = 1), a fit is the same under every plan", {
  skip_on_cran()
  skip_on_os("windows")
  blas_control_or_skip()
  withr::local_options(bnmf.blas_threads = 1)
  before <- bnmf:::blas_threads(2L)
  withr::defer(bnmf:::blas_threads(before))
  # large enough for the BLAS to use its threads in this process's products
  X <- withr::with_seed(3, matrix(rexp(400 * 8), 400, 8) %*% matrix(rexp(8 * 300), 8, 300) +
                          matrix(rexp(400 * 300, 10), 400, 300))
  fit_under <- function(plan) {
    old <- future::plan(plan)
    on.exit(future::plan(old))
    withr::with_seed(4, suppressWarnings(bnmf(X, rank = 8, method = "vb", iter = 30,
                                              chains = 2, tol = 0, progress = FALSE)))
  }
  a <- fit_under(future::sequential)
  b <- fit_under(future::tweak(future::multisession, workers = 2))
  expect_identical(factors(b)$W, factors(a)$W)
  expect_identical(b$trace, a$trace)
})

test_that("options(bnmf.blas_threads =) is checked", {
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  for (bad in list(0, 2.5, "1", c(1, 2), -1, Inf)) {
    withr::with_options(list(bnmf.blas_threads = bad), {
      expect_error(bnmf:::run_tasks(2, function(task) task, seeds = FALSE),
                   "bnmf.blas_threads", fixed = TRUE)
    })
  }
})
