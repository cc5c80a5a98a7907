# The task runner (R/tasks.R): chains, candidates, HMC chains, ranks and CV
# folds give the same results under any future plan, and select_rank() leaves
# the user's plan alone.

toy <- function(seed) {
  withr::local_seed(seed)
  matrix(rexp(120), 40, 3) %*% matrix(rexp(45), 3, 15) + matrix(rnorm(600, sd = 0.3), 40, 15)
}

fit_all <- function(X) {
  list(
    hmc = withr::with_seed(1, bnmf(X[1:20, 1:10] * 100, rank = 2, method = "hmc", iter = 40,
                                   chains = 2, progress = FALSE)),
    particles = withr::with_seed(2, bnmf(pmax(X, 0) * 100, rank = 3, method = "particles",
                                         particles = 4, init = "random", iter = 100)),
    bic = withr::with_seed(3, suppressWarnings(
      select_rank(X, ranks = 1:3, criterion = "bic", prior = exponential(1), chains = 2))),
    cv = withr::with_seed(4, suppressWarnings(
      select_rank(X, ranks = 1:2, criterion = "cv", method = "vb", folds = 3, iter = 50,
                  prior = exponential(1))))
  )
}

test_that("HMC chains, particle candidates, ranks and CV folds do not depend on the plan", {
  skip_on_cran()
  skip_on_os("windows")
  X <- toy(5)
  withr::local_options(future.rng.onMisuse = "error")
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  a <- fit_all(X)
  future::plan(future::multisession, workers = 2)
  b <- fit_all(X)
  # HMC: every chain on its own stream, the same numbers in a worker.
  expect_identical(b$hmc$draws, a$hmc$draws)
  expect_identical(b$hmc$trace, a$hmc$trace)
  # Two chains from one seed are not copies of each other.
  expect_false(identical(a$hmc$draws[[1]]$H, a$hmc$draws[[2]]$H))
  expect_identical(b$particles$particles, a$particles$particles)
  expect_identical(b$particles$weights, a$particles$weights)
  expect_identical(b$bic$table, a$bic$table)
  expect_identical(b$cv$folds, a$cv$folds)
  expect_identical(b$cv$fold_mse, a$cv$fold_mse)
})

test_that("run_tasks(): one stream per task, drawn in this process, whatever the plan", {
  withr::local_seed(6)
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  s0 <- .Random.seed
  draw <- function(task, n) c(task, stats::runif(n))
  a <- bnmf:::run_tasks(3, draw, n = 2)
  # The session's random numbers moved by the one draw of the streams only.
  after <- .Random.seed
  assign(".Random.seed", s0, envir = globalenv())
  streams <- bnmf:::chain_streams(3)
  expect_identical(after, .Random.seed)
  # Each task ran on its own stream: the same numbers as drawn by hand.
  for (t in 1:3) {
    expect_identical(a[[t]], withr::with_preserve_seed({
      assign(".Random.seed", streams[[t]], envir = globalenv())
      c(t, stats::runif(2))
    }))
  }
  # Tasks without streams run as they are.
  expect_identical(bnmf:::run_tasks(list("a"), function(task) task, seeds = FALSE), list("a"))
  skip_on_cran()
  skip_on_os("windows")
  future::plan(future::multisession, workers = 2)
  assign(".Random.seed", s0, envir = globalenv())
  expect_identical(bnmf:::run_tasks(3, draw, n = 2), a)
})

test_that("a task that starts after an interrupt of its run returns at once", {
  # The handshake of stop_tasks_on_interrupt() and task_in_worker(): the
  # main process makes the stop flag and then reads the marks; a task makes
  # its mark and then reads the flag. A task that reaches its worker late
  # must not run (it would hold the worker for the whole task).
  dir <- withr::local_tempfile()
  dir.create(dir)
  ran <- 0
  fun <- function(task) {
    ran <<- ran + 1
    # while the task runs, its mark names this process
    expect_true(file.exists(file.path(dir, paste(Sys.getpid(), Sys.info()[["nodename"]],
                                                 sep = "@"))))
    task * 2
  }
  expect_identical(bnmf:::task_in_worker(3, fun, dir, NA_integer_), 6)
  expect_identical(ran, 1)
  expect_length(list.files(dir), 0L) # the mark goes with the task
  # An interrupt: the handler makes the flag, signals the marked processes
  # (none here) and restarts the plan's workers; the interrupt goes on.
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  withr::defer(unlink(bnmf:::stop_flag(dir)))
  got <- tryCatch(bnmf:::stop_tasks_on_interrupt(dir, {
    signalCondition(structure(class = c("interrupt", "condition"),
                              list(message = "", call = NULL)))
    "not interrupted"
  }), interrupt = function(c) "interrupted")
  expect_identical(got, "interrupted")
  expect_true(file.exists(bnmf:::stop_flag(dir)))
  expect_null(bnmf:::task_in_worker(3, fun, dir, NA_integer_))
  expect_identical(ran, 1)
  expect_length(list.files(dir), 0L)
  # also once run_tasks() has removed the run's directory
  unlink(dir, recursive = TRUE)
  expect_null(bnmf:::task_in_worker(3, fun, dir, NA_integer_))
  expect_identical(ran, 1)
})

test_that("the local solver gives the candidates of bnmf()'s ICM with a flat prior", {
  withr::local_seed(7)
  X <- pmax(toy(7), 0)
  W <- matrix(rexp(40 * 3), 40, 3)
  H <- matrix(rexp(3 * 15), 3, 15)
  fit <- muffle_convergence(bnmf(X, rank = 3, method = "icm", prior = exponential(rate = 0),
                                 init = list(W = W, H = H), tol = 1e-8, iter = 300,
                                 progress = FALSE))
  sol <- muffle_convergence(bnmf:::nnls_solve(X, W, H, tol = 1e-8, maxit = 300))
  expect_identical(sol$W, unname(fit$W))
  expect_identical(sol$H, unname(fit$H))
  expect_equal(sol$iterations, fit$iterations[[1]])
  expect_identical(sol$converged, fit$converged[[1]])
  # With the data described once, as for many solves.
  d <- bnmf:::prepare_data(X, 3)
  expect_identical(muffle_convergence(bnmf:::nnls_solve(X, W, H, 1e-8, 300, d)), sol)
  # A solution is a KKT point of min |X - WH|^2: zero gradient where
  # positive, non-negative gradient at zero.
  sol <- bnmf:::nnls_solve(X, W, H, tol = 1e-14, maxit = 5000)
  R <- sol$W %*% sol$H - X
  gH <- crossprod(sol$W, R)
  scale <- max(abs(crossprod(sol$W, X)))
  expect_lt(max(abs(gH[sol$H > 1e-8])), 1e-5 * scale)
  expect_gt(min(gH), -1e-5 * scale)
})

test_that("select_rank() leaves the user's plan alone; `cores` sets a temporary one", {
  skip_on_cran()
  skip_on_os("windows")
  X <- toy(8)
  old <- future::plan(future::multisession, workers = 2)
  withr::defer(future::plan(old))
  withr::local_seed(9)
  expect_silent(a <- suppressWarnings(select_rank(X, ranks = 1:2, criterion = "bic")))
  expect_s3_class(future::plan(), "multisession")
  future::plan(future::sequential)
  withr::local_seed(9)
  expect_silent(b <- suppressWarnings(select_rank(X, ranks = 1:2, criterion = "bic")))
  expect_s3_class(future::plan(), "sequential")
  expect_identical(b$table, a$table)
  # cores = 2 under a sequential plan, cores = 1 under a multisession one:
  # a temporary plan, said in a message, and the user's plan afterwards.
  cases <- list(list(cores = 2, user = "sequential",
                     says = "temporary `future::plan\\(multisession, workers = 2\\)`"),
                list(cores = 1, user = "multisession",
                     says = "temporary `future::plan\\(sequential\\)`"))
  for (cs in cases) {
    if (cs$user == "multisession") future::plan(future::multisession, workers = 2)
    withr::local_seed(9)
    expect_message(r <- suppressWarnings(select_rank(X, ranks = 1:2, criterion = "bic",
                                                     cores = cs$cores)), cs$says)
    expect_s3_class(future::plan(), cs$user)
    expect_identical(r$table, a$table)
  }
})
