# The engine's internal interface (R/engine.R): new_state() writes the state,
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
