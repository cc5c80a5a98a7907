# update() of fits that cannot be continued (update.bnmf, which continues the
# Gibbs, ICM, VB and NP fits, is in R/fit.R beside the fit's constructor).

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

#' @export
update.bnmf_poisson <- function(object, ...) {
  abort_unsupported("`update()` does not apply to a Poisson fit yet: fit again with a larger `iter`.")
}

# ---- RRT (method = "rrt") ---------------------------------------------------

#' @export
update.bnmf_rrt <- function(object, ...) {
  abort_unsupported("`update()` does not apply to an RRT fit: its tree cannot be continued; search again from its components with `bnmf(X, rank, method = \"rrt\", init = fit$components)`.")
}
