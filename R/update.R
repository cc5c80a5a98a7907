# update() of every model but Gaussian NMF (update.bnmf, which continues
# its Gibbs, ICM, VB and NP fits, is in R/engine-nmf.R beside the fit's
# constructor): NMTF and Poisson continue, the others say why they cannot.

#' @export
update.bnmf_particles <- function(object, ...) {
  abort_unsupported("`update()` does not apply to a particle fit: fit again with more `particles`.")
}

#' @export
update.bnmf_hmc <- function(object, ...) {
  abort_unsupported("`update()` does not apply to an HMC fit: fit again with a larger `iter`.")
}

# ---- the tri-factorisation (bnmf_nmtf) ----

#' @rdname update.bnmf
#' @export
update.bnmf_nmtf <- function(object, iter = 1000, progress = interactive(), ...) {
  check_dots_empty(list(...), names(formals()), "update")
  fit <- object
  settings <- fit$settings
  # Gibbs keeps whole thinning intervals
  thin <- if (fit$method == "gibbs") settings$thin else 1L
  iter <- max(thin, check_count(iter, "iter", min = 1) %/% thin * thin)
  progress <- check_flag(progress, "progress")
  # every chain continues from its last state (running moments included)
  # and its random number stream
  job <- list(method = fit$method, X = fit$X, rank = unname(fit$rank),
              data = prepare_data(fit$X, fit$rank[[1L]]),
              model = list(prior = fit$prior, noise = fit$noise), settings = settings)
  job$settings$iter <- iter
  job$settings$burnin <- 0L
  job$settings$progress <- progress
  job$starts <- lapply(fit$chains, function(ch) list(state = ch$state))
  job <- nmtf_tasks(job)
  runs <- run_tasks(job$tasks, nmtf_chain, job = job,
                    seeds = lapply(fit$chains, function(ch) ch$seed))
  job$settings <- settings
  job$settings$iter <- settings$iter + iter
  validate_bnmf_nmtf_fit(new_bnmf_nmtf_fit(runs, job, fit$call, previous = fit))
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

# Gibbs continues every chain, VB its kept restart, from their last states
# and random number streams (no burn-in: every new sweep is kept, thinned as
# before), as one longer run would have; SSVI's stochastic steps cannot be
# continued.
#' @rdname update.bnmf
#' @export
update.bnmf_poisson <- function(object, iter = 1000, progress = interactive(), ...) {
  check_dots_empty(list(...), names(formals()), "update")
  fit <- object
  if (fit$method == "ssvi") {
    abort_unsupported("`update()` does not apply to an SSVI fit: its step sizes and final mask phase end with the run; fit again with a larger `iter`.")
  }
  settings <- fit$settings
  thin <- if (fit$method == "gibbs") settings$thin else 1L
  iter <- max(thin, check_count(iter, "iter", min = 1) %/% thin * thin)
  progress <- check_flag(progress, "progress")
  chains <- if (fit$method == "gibbs") seq_along(fit$seeds) else fit$best
  if (length(fit$state) != length(chains)) {
    abort_unsupported("`update()`: this Poisson fit keeps no state to continue from (made by an earlier version); fit again with a larger `iter`.")
  }
  job <- list(method = fit$method, X = fit$X, rank = fit$rank, sparsity = fit$sparsity,
              control = fit$control, init = "random",
              model = list(prior = fit$prior, mask_prior = fit$mask_prior))
  if (!is.null(settings$blocks)) {
    # a fit by blocks continues by the same blocks, in this process
    job$blocks <- settings$blocks
    job <- pois_blocks_setup(job)
    on.exit(job$runner$close(), add = TRUE)
  } else {
    job$data <- prepare_data(fit$X, fit$rank)
  }
  job$settings <- settings
  job$settings$iter <- iter
  job$settings$burnin <- 0L
  job$settings$chains <- length(chains)
  job$settings$progress <- progress
  job <- poisson_tasks(job)
  for (c in seq_along(chains)) job$tasks[[c]]$resume <- fit$state[[c]]
  runs <- run_tasks(job$tasks, poisson_run_task, job = job, seeds = fit$seeds[chains])
  job$settings <- settings
  job$settings$iter <- settings$iter + iter
  job$settings$chains <- length(chains)
  new <- new_poisson_fit(runs, job, fit$call)
  # the trace and kept draws of the earlier run before the new ones
  old <- fit$trace[fit$trace$chain %in% chains, , drop = FALSE]
  old$chain <- match(old$chain, chains)
  tr <- new$trace
  for (c in seq_along(chains)) {
    tr$iteration[tr$chain == c] <- tr$iteration[tr$chain == c] + sum(old$chain == c)
  }
  new$trace <- rbind(old, tr)
  new$trace <- new$trace[order(new$trace$chain, new$trace$iteration), , drop = FALSE]
  rownames(new$trace) <- NULL
  if (!is.null(new$draws) && !is.null(fit$draws)) {
    new$draws <- Map(function(a, b) list(W_draws = cbind(a$W_draws, b$W_draws),
                                         H_draws = cbind(a$H_draws, b$H_draws)),
                     fit$draws[chains], new$draws)
  }
  validate_poisson_fit(new)
}

# ---- RRT (method = "rrt") ---------------------------------------------------

#' @export
update.bnmf_rrt <- function(object, ...) {
  abort_unsupported("`update()` does not apply to an RRT fit: its tree cannot be continued; search again from its components with `bnmf(X, rank, method = \"rrt\", init = fit$components)`.")
}
