# The engine's internal interface (R/engine-nmf.R): new_state() writes the state,
# engine_sweeps(), engine_kl() and engine_chib() pass named controls that the
# C entries parse once, refusing a missing, malformed or unknown one by name.

engine_problem <- function() {
  set.seed(3)
  X <- matrix(rexp(20), 5, 4)
  X[2, 3] <- NA
  data <- bnmf:::prepare_data(X, 2L)
  prior <- list(lamW = matrix(1, 5, 2), lamH = matrix(1, 2, 4), alpha = 1, beta = 1)
  st <- bnmf:::new_state(X, data, matrix(1, 5, 2), matrix(1, 2, 4), 1, 0, FALSE)
  list(X = X, data = data, prior = prior, state = st)
}

test_that("the named controls are checked by name", {
  p <- engine_problem()
  ctrl <- list(n = 1L, rule = "icm", masked = TRUE, accumulate = FALSE, thin = 1L,
               keep_draws = FALSE, update_W = TRUE, update_H = TRUE, update_tau = TRUE,
               tol = 0, wh_thin = 1L, threads = 1L)
  sweeps <- function(ctrl) .Call(bnmf:::C_nmf_sweeps, p$state, p$data, p$prior, ctrl)
  expect_silent(sweeps(ctrl))
  expect_error(sweeps(utils::modifyList(ctrl, list(rule = "mcmc"))),
               "ctrl\\$rule must be \"gibbs\", \"icm\", \"vb\" or \"np\"")
  expect_error(sweeps(ctrl[names(ctrl) != "tol"]), "ctrl\\$tol is missing")
  expect_error(sweeps(utils::modifyList(ctrl, list(thin = 0L))), "ctrl\\$thin must be")
  expect_error(sweeps(utils::modifyList(ctrl, list(wh_thin = 0L))), "ctrl\\$wh_thin must be")
  expect_error(sweeps(ctrl[names(ctrl) != "wh_thin"]), "ctrl\\$wh_thin is missing")
  expect_error(sweeps(utils::modifyList(ctrl, list(masked = 1))), "ctrl\\$masked must be TRUE or FALSE")
  expect_error(sweeps(c(ctrl, list(thinning = 2L))), "ctrl\\$thinning is not a control")
  expect_error(sweeps(unname(ctrl)), "named list")
  expect_error(.Call(bnmf:::C_nmf_kl, p$state, p$data, list(n = 1L, tol = 0)),
               "ctrl\\$update_W is missing")
})

test_that("engine_sweeps() passes its arguments as the named controls", {
  p <- engine_problem()
  a <- p$state
  b <- bnmf:::new_state(p$X, p$data, a$W, a$H, 1, 0, FALSE)
  set.seed(1)
  out_a <- bnmf:::engine_sweeps(a, p$data, p$prior, 5, rule = "gibbs", masked = TRUE,
                                update = c("W", "H", "tau"))
  set.seed(1)
  out_b <- .Call(bnmf:::C_nmf_sweeps, b, p$data, p$prior,
                 list(n = 5L, rule = "gibbs", masked = TRUE, accumulate = FALSE,
                      thin = 1L, keep_draws = FALSE, update_W = TRUE, update_H = TRUE,
                      update_tau = TRUE, tol = 0, wh_thin = 1L, threads = 1L))
  expect_identical(out_a, out_b)
  expect_identical(a$W, b$W)
  # Updating nothing but the trace leaves the factors where they are.
  W0 <- a$W + 0
  bnmf:::engine_sweeps(a, p$data, p$prior, 2, rule = "icm", update = character())
  expect_identical(a$W, W0)
})

test_that("the trace's log posterior is the log joint density, rate by rate", {
  # Entry-wise rates in runs of equal values (the C code takes one log per
  # run), changing values and flat entries (rate 0: no term), against the
  # log joint density written out here.
  p <- engine_problem()
  X <- p$X
  lamW <- matrix(c(2, 2, 2, 0.5, 0.5, 3, 0, 0, 2, 1e-3), 5, 2)
  lamH <- matrix(c(1.5, 1.5, 0, 4, 4, 4, 1.5, 0.25), 2, 4)
  prior <- list(lamW = lamW, lamH = lamH, alpha = 2, beta = 3)
  set.seed(7)
  W <- matrix(rexp(10), 5, 2)
  H <- matrix(rexp(8), 2, 4)
  tau <- 1.7
  st <- bnmf:::new_state(X, p$data, W, H, tau, 0, FALSE)
  out <- bnmf:::engine_sweeps(st, p$data, prior, 1, rule = "icm", update = character())
  obs <- !is.na(X)
  sse <- sum(((X - W %*% H)[obs])^2)
  n <- sum(obs)
  loglik <- n / 2 * (log(tau) - log(2 * pi)) - tau / 2 * sse
  logpost <- loglik + dgamma(tau, shape = 2, rate = 3, log = TRUE) +
    sum(log(lamW[lamW > 0])) - sum(lamW * W) + sum(log(lamH[lamH > 0])) - sum(lamH * H)
  expect_equal(out$trace[1, 4], sse, tolerance = 1e-12)
  expect_equal(out$trace[1, 1], loglik, tolerance = 1e-12)
  expect_equal(out$trace[1, 3], logpost, tolerance = 1e-12)
})

test_that("the C entries refuse non-finite or negative rates and factors", {
  p <- engine_problem()
  sweep1 <- function(prior = p$prior, state = p$state) {
    bnmf:::engine_sweeps(state, p$data, prior, 1, rule = "icm")
  }
  for (bad in c(NA, NaN, Inf, -1)) {
    pr <- p$prior
    pr$lamH[2, 3] <- bad
    expect_error(sweep1(prior = pr), "rates must be finite and >= 0")
    W <- matrix(1, 5, 2)
    W[4, 2] <- bad
    st <- bnmf:::new_state(p$X, p$data, W, matrix(1, 2, 4), 1, 0, FALSE)
    expect_error(sweep1(state = st), "W must be finite and non-negative")
  }
})

test_that("new_state() writes the whole layout the C code reads", {
  p <- engine_problem()
  st <- bnmf:::new_state(p$X, p$data, matrix(1, 5, 2), matrix(1, 2, 4), 1, 0, TRUE,
                         lambda = c(1, 2), vb = list(tau_rate = 3, lambda_rate = c(4, 5)))
  expect_true(all(c("W", "H", "tau", "x", "sumsq", "logpost", "n_kept", "W_mean",
                    "WH_mean", "n_wh", "wh_wait", "work", "lambda", "lambda_mean", "W_var", "H_ent", "tau_rate",
                    "lambda_rate") %in% names(st)))
  expect_identical(st$lambda_rate, c(4, 5))
  pr <- c(p$prior, list(ard = c(1, 1)))
  out <- bnmf:::engine_sweeps(st, p$data, pr, 3, rule = "vb")
  expect_equal(dim(out$lambda), c(3L, 2L))
  expect_true(all(is.finite(out$trace)))
})

test_that("chunk_loop() makes calls of at least min_chunk sweeps, and every sweep once", {
  calls <- integer()
  step <- function(n) {
    calls[length(calls) + 1L] <<- n
    list(trace = matrix(0, n, 1))
  }
  run <- bnmf:::chunk_loop(23L, step, NULL, min_chunk = 4L)
  expect_identical(run$done, 23L)
  expect_identical(sum(calls), 23L)
  # every call but the last has at least 4 sweeps
  expect_true(all(head(calls, -1L) >= 4L))
  expect_identical(calls[1L], 4L)
  # and with thinning, multiples of it
  calls <- integer()
  run <- bnmf:::chunk_loop(30L, step, NULL, multiple = 3L, min_chunk = 4L)
  expect_identical(sum(calls), 30L)
  expect_true(all(head(calls, -1L) %% 3L == 0L & head(calls, -1L) >= 4L))
})
