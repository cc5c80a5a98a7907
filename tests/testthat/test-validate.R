# The validators of the fit objects: a fit as built passes unchanged; a
# corrupted one is rejected with a classed internal error.

expect_rejected <- function(validate, x, pattern) {
  expect_error(validate(x), pattern, class = "bnmf_error_internal")
}

set.seed(1)
X <- matrix(rexp(40, 0.5), 8, 5)

test_that("Gaussian NMF fits: values are checked", {
  for (m in c("gibbs", "vb", "icm", "np")) {
    set.seed(2)
    fit <- muffle_convergence(bnmf(X, rank = 2, method = m, iter = 40, progress = FALSE))
    expect_identical(bnmf:::validate_bnmf_fit(fit), fit)
    bad <- fit
    bad$W[1, 1] <- -1
    expect_rejected(bnmf:::validate_bnmf_fit, bad, "negative W")
    bad <- fit
    bad$H <- bad$H[, -1]
    expect_rejected(bnmf:::validate_bnmf_fit, bad, "H of the wrong size")
    bad <- fit
    bad$n_obs <- 0
    expect_rejected(bnmf:::validate_bnmf_fit, bad, "observed entries")
    # the header every fit shares: its class names its method and model
    bad <- fit
    class(bad) <- c("bnmf_gibbs", "bnmf_nmtf", "bnmf")
    expect_rejected(bnmf:::validate_bnmf_fit, bad, "class")
    bad <- fit
    bad$dims <- bad$dims + 1L
    expect_rejected(bnmf:::validate_bnmf_fit, bad, "dimensions")
  }
  bad <- fit <- bnmf(X, rank = 2, method = "vb", iter = 40, progress = FALSE)
  bad$tau <- Inf
  expect_rejected(bnmf:::validate_bnmf_fit, bad, "tau")
  bad <- fit
  bad$W_sd <- bad$W_sd[-1, ]
  expect_rejected(bnmf:::validate_bnmf_fit, bad, "W_sd of the wrong size")
})

test_that("particle fits: weights and particles on the simplex", {
  set.seed(3)
  fit <- bnmf(X, rank = 2, method = "particles", particles = 4, progress = FALSE)
  expect_identical(bnmf:::validate_particles_fit(fit), fit)
  bad <- fit
  bad$weights[1] <- bad$weights[1] + 0.1
  expect_rejected(bnmf:::validate_particles_fit, bad, "probability vector")
  bad <- fit
  bad$weights[] <- c(1.5, -0.5, 0, 0)
  expect_rejected(bnmf:::validate_particles_fit, bad, "probability vector")
  bad <- fit
  bad$particles[[2]]$W <- 2 * bad$particles[[2]]$W
  expect_rejected(bnmf:::validate_particles_fit, bad, "particle 2 whose W is not on the simplex")
  bad <- fit
  bad$particles[[1]]$H[1, 1] <- NaN
  expect_rejected(bnmf:::validate_particles_fit, bad, "particle 1 with non-finite")
  bad <- fit
  bad$best <- if (fit$best == 1L) 2L else 1L
  expect_rejected(bnmf:::validate_particles_fit, bad, "best particle")
  bad <- fit
  bad$alignment[[1]] <- c(1L, 1L)
  expect_rejected(bnmf:::validate_particles_fit, bad, "alignment")
})

test_that("HMC fits: draws, acceptance and step sizes", {
  set.seed(4)
  fit <- bnmf(X, rank = 2, method = "hmc", iter = 40, chains = 2, progress = FALSE)
  expect_identical(bnmf:::validate_hmc_fit(fit), fit)
  bad <- fit
  bad$acceptance[2] <- 1.2
  expect_rejected(bnmf:::validate_hmc_fit, bad, "acceptance")
  bad <- fit
  bad$step_size[1] <- 0
  expect_rejected(bnmf:::validate_hmc_fit, bad, "step sizes")
  bad <- fit
  bad$draws[[1]]$W <- bad$draws[[1]]$W[-1, ]
  expect_rejected(bnmf:::validate_hmc_fit, bad, "draws of the wrong size")
  bad <- fit
  bad$n_draws <- bad$n_draws + 1
  expect_rejected(bnmf:::validate_hmc_fit, bad, "draw count")
  bad <- fit
  bad$W[, 1] <- bad$W[, 1] / 2
  expect_rejected(bnmf:::validate_hmc_fit, bad, "not on the simplex")
})

test_that("marginal likelihoods and rank selections: values are checked", {
  set.seed(5)
  fit <- bnmf(X, rank = 1, iter = 60, progress = FALSE)
  ml <- marginal_likelihood(fit, samples = 100, burnin = 10)
  expect_identical(bnmf:::validate_marglik(ml), ml)
  bad <- ml
  bad$logml <- bad$logml + 1
  expect_rejected(bnmf:::validate_marglik, bad, "logml")
  bad <- ml
  bad$blocks$log_density[1] <- bad$blocks$log_density[1] + 1
  expect_rejected(bnmf:::validate_marglik, bad, "blocks")
  bad <- ml
  bad$blocks$ess[1] <- 101
  expect_rejected(bnmf:::validate_marglik, bad, "effective sample sizes")
  sel <- suppressWarnings(select_rank(X, ranks = 1:2, criterion = "bic"))
  expect_identical(bnmf:::validate_rank_result(sel), sel)
  bad <- sel
  bad$best <- 3
  expect_rejected(bnmf:::validate_rank_result, bad, "chosen rank")
  bad <- sel
  bad$criterion <- "aic"
  expect_rejected(bnmf:::validate_rank_result, bad, "criterion")
  # ARD: the number of active factors, 0 to the rank fitted
  ard_sel <- suppressWarnings(select_rank(X, ranks = 3, criterion = "ard", method = "icm"))
  expect_identical(bnmf:::validate_rank_result(ard_sel), ard_sel)
  bad <- ard_sel
  bad$best <- 4
  expect_rejected(bnmf:::validate_rank_result, bad, "chosen rank")
})
