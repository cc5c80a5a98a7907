# Same seed, same script: after any call the session's random numbers are
# where they would be under any other future plan, and the fits are the same.

rng_plan_data <- function() {
  withr::local_seed(11)
  matrix(rexp(90), 30, 3) %*% matrix(rexp(36), 3, 12) + matrix(rnorm(360, sd = 0.2), 30, 12)
}

# Every call, from one seed: the result and the session's RNG state after it.
rng_plan_calls <- function(X) {
  calls <- list(
    gibbs = function() bnmf(X, rank = 2, iter = 40, chains = 2, progress = FALSE),
    icm = function() bnmf(X, rank = 2, method = "icm", iter = 30, chains = 2, progress = FALSE),
    vb = function() bnmf(X, rank = 2, method = "vb", iter = 30, chains = 2, progress = FALSE),
    np = function() bnmf(pmax(X, 0), rank = 2, method = "np", iter = 30, chains = 2,
                         progress = FALSE),
    particles = function() bnmf(pmax(X, 0) * 100, rank = 2, method = "particles",
                                particles = 3, init = "random", iter = 30),
    hmc = function() bnmf(X[1:12, 1:8] * 100, rank = 2, method = "hmc", iter = 20, chains = 2,
                          progress = FALSE),
    update = function() {
      fit <- bnmf(X, rank = 2, iter = 20, chains = 2, progress = FALSE)
      update(fit, iter = 10, progress = FALSE)
    },
    chib = function() {
      fit <- bnmf(X, rank = 2, iter = 40, prior = exponential(1), progress = FALSE)
      marginal_likelihood(fit, samples = 100, burnin = 10, batches = 10, progress = FALSE)
    },
    bic = function() suppressWarnings(select_rank(X, ranks = 1:2, criterion = "bic",
                                                  prior = exponential(1), iter = 30)),
    cv = function() suppressWarnings(select_rank(X, ranks = 1:2, criterion = "cv",
                                                 method = "vb", folds = 2, iter = 30,
                                                 prior = exponential(1)))
  )
  lapply(calls, function(f) {
    withr::local_seed(21)
    res <- f()
    res$call <- NULL
    res$elapsed <- NULL
    list(result = res, seed = .Random.seed)
  })
}

test_that("the fits and the session's random numbers after them do not depend on the plan", {
  skip_on_cran()
  skip_on_os("windows")
  X <- rng_plan_data()
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  a <- muffle_convergence(rng_plan_calls(X))
  future::plan(future::multisession, workers = 2)
  b <- muffle_convergence(rng_plan_calls(X))
  for (m in names(a)) {
    expect_identical(b[[m]]$seed, a[[m]]$seed, label = paste("RNG state after", m))
    # The same results (HMC included); the times measured inside differ.
    strip <- function(r) {
      r <- r[setdiff(names(r), c("elapsed", "timing", "call"))]
      if (is.data.frame(r$candidates)) {
        r$candidates <- r$candidates[setdiff(names(r$candidates), c("init_time", "solve_time"))]
      }
      r
    }
    expect_identical(strip(b[[m]]$result), strip(a[[m]]$result), label = paste("result of", m))
  }
})

test_that("run_tasks() under a multisession plan leaves the session's RNG where the sequential plan does", {
  skip_on_cran()
  skip_on_os("windows")
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  draw <- function(task) stats::runif(1)
  withr::local_seed(3)
  a <- bnmf:::run_tasks(2, draw)
  s_seq <- .Random.seed
  future::plan(future::multisession, workers = 2)
  withr::local_seed(3)
  b <- bnmf:::run_tasks(2, draw)
  expect_identical(.Random.seed, s_seq)
  expect_identical(b, a)
  # Tasks that draw nothing leave the session's RNG alone under either plan.
  withr::local_seed(4)
  s0 <- .Random.seed
  bnmf:::run_tasks(list(1, 2), function(task) task, seeds = FALSE)
  expect_identical(.Random.seed, s0)
})
