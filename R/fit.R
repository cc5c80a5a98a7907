# The fit object: constructor (types) and validator (values), Advanced R style.

factor_names <- function(K) paste0("k", seq_len(K))

# Build a bnmf fit from the chains' results.
new_bnmf_fit <- function(runs, X, data, method, K, rates, noise, settings, call,
                         previous = NULL) {
  I <- data$dims[1L]
  J <- data$dims[2L]
  rn <- rownames(X)
  cn <- colnames(X)
  kn <- factor_names(K)
  chains <- lapply(runs, function(r) {
    st <- r$state
    ch <- list(W = st$W, H = st$H, tau = st$tau[[1L]],
               latent = r$latent, logpost = st$logpost[[1L]], seed = r$seed)
    # What a VB or ARD state needs to be continued exactly.
    for (nm in c("lambda", "lambda_rate", "W_var", "H_var", "W_ent", "H_ent", "tau_rate")) {
      if (!is.null(st[[nm]])) ch[[nm]] <- st[[nm]]
    }
    # Gibbs: the kept draws to skip before the next that enters WH's moments.
    if (length(st$WH_mean)) ch$wh_wait <- st$wh_wait[[1L]]
    ch
  })
  traces <- lapply(seq_along(runs), function(c) {
    tr <- runs[[c]]$trace
    if (!is.null(previous)) {
      old <- previous$trace[previous$trace$chain == c, names(tr), drop = FALSE]
      tr$iteration <- tr$iteration + nrow(old)
      tr <- rbind(old, tr)
    }
    tr$chain <- c
    tr
  })
  trace <- do.call(rbind, traces)
  rownames(trace) <- NULL
  fit <- c(fit_header(call, method, "nmf", X, K, settings), list(
    prior = list(type = if (length(rates$ard)) "ard" else if (method == "np") "none" else "exponential",
                 rate = rates$rate, auto = rates$auto,
                 lamW = rates$lamW, lamH = rates$lamH, ard = rates$ard),
    noise = noise, trace = trace, chains = chains
  ))
  if (method == "gibbs") {
    ns <- vapply(runs, function(r) r$state$n_kept[[1L]], numeric(1))
    # Chains may find the same factors in another order (the posterior is
    # invariant to permuting factors): match every chain's factors to a
    # reference before pooling, by the angles between the posterior mean
    # bases, as an exact assignment problem (align_factors()).
    ref <- if (!is.null(previous)) previous$W else matrix(runs[[1L]]$state$W_mean, I, K)
    perms <- lapply(runs, function(r) match_factors(ref, matrix(r$state$W_mean, I, K)))
    for (c in seq_along(runs)) {
      chains[[c]]$perm <- perms[[c]]
      runs[[c]] <- permute_run(runs[[c]], perms[[c]], I, J, K)
      # The chain's own posterior means (in the pooled labelling), for
      # comparing chains (covering_number(), summary()).
      st <- runs[[c]]$state
      n_new <- st$n_kept[[1L]]
      Wm <- st$W_mean
      Hm <- st$H_mean
      old <- if (!is.null(previous)) previous$chains[[c]] else NULL
      if (!is.null(old$W_mean) && old$n_kept + n_new > 0) {
        w <- old$n_kept / (old$n_kept + n_new)
        Wm <- w * as.vector(old$W_mean) + (1 - w) * Wm
        Hm <- w * as.vector(old$H_mean) + (1 - w) * Hm
        n_new <- n_new + old$n_kept
      }
      chains[[c]]$W_mean <- matrix(Wm, I, K)
      chains[[c]]$H_mean <- matrix(Hm, K, J)
      chains[[c]]$n_kept <- n_new
    }
    fit$chains <- chains
    # WH's moments count their own draws (every settings$wh_thin-th kept one).
    ns_wh <- vapply(runs, function(r) r$state$n_wh[[1L]], numeric(1))
    mom <- function(what, n = ns) {
      means <- lapply(runs, function(r) r$state[[paste0(what, "_mean")]])
      m2s <- lapply(runs, function(r) r$state[[paste0(what, "_m2")]])
      nn <- n
      if (!is.null(previous)) {
        means <- c(means, list(previous$moments[[what]]$mean))
        m2s <- c(m2s, list(previous$moments[[what]]$m2))
        nn <- c(nn, previous$moments[[what]]$n)
      }
      pool_moments(means, m2s, nn)
    }
    fit$moments <- list(W = mom("W"), H = mom("H"), tau = mom("tau"), WH = mom("WH", ns_wh))
    if (length(rates$ard)) {
      for (c in seq_along(runs)) {
        p <- perms[[c]]
        runs[[c]]$state$lambda_mean <- runs[[c]]$state$lambda_mean[p]
        runs[[c]]$state$lambda_m2 <- runs[[c]]$state$lambda_m2[p]
      }
      fit$moments$lambda <- mom("lambda")
      fit$lambda <- stats::setNames(fit$moments$lambda$mean, kn)
      fit$lambda_sd <- stats::setNames(moment_sd(fit$moments$lambda$m2, fit$moments$lambda$n), kn)
    }
    m <- fit$moments
    fit$W <- matrix(m$W$mean, I, K, dimnames = list(rn, kn))
    fit$H <- matrix(m$H$mean, K, J, dimnames = list(kn, cn))
    fit$W_sd <- matrix(moment_sd(m$W$m2, m$W$n), I, K, dimnames = list(rn, kn))
    fit$H_sd <- matrix(moment_sd(m$H$m2, m$H$n), K, J, dimnames = list(kn, cn))
    fit$tau <- m$tau$mean
    fit$tau_sd <- moment_sd(m$tau$m2, m$tau$n)
    # Its running sum of squares overflows for tau beyond 1e154 (data near
    # 1e-77 and below): then the sd of the kept draws in the trace, rescaled.
    if (is.infinite(fit$tau_sd)) fit$tau_sd <- kept_sd(fit$trace, "tau", settings$thin)
    fit$n_draws <- m$W$n
    if (settings$keep == "draws") {
      fit$draws <- lapply(seq_along(runs), function(c) {
        old <- if (!is.null(previous)) previous$draws[[c]] else NULL
        list(W = cbind(old$W, runs[[c]]$W_draws), H = cbind(old$H, runs[[c]]$H_draws))
      })
    }
    class(fit) <- fit_class("gibbs", "nmf")
  } else {
    best <- which.max(vapply(chains, function(ch) ch$logpost, numeric(1)))
    b <- chains[[best]]
    fit$best <- best
    fit$W <- matrix(b$W, I, K, dimnames = list(rn, kn))
    fit$H <- matrix(b$H, K, J, dimnames = list(kn, cn))
    fit$tau <- b$tau
    fit$logpost <- b$logpost
    fit$converged <- vapply(runs, function(r) r$converged, logical(1))
    fit$iterations <- vapply(runs, function(r) nrow(r$trace), numeric(1))
    if (!is.null(b$lambda)) fit$lambda <- stats::setNames(b$lambda, kn)
    if (method == "vb") {
      # q(W_ik), q(H_kj): truncated normals with these means and variances;
      # q(tau) = Gamma(alpha + |Omega| / 2, tau_rate); q(lambda_k) =
      # Gamma(alpha0 + I + J, lambda_rate_k).
      fit$W_sd <- matrix(sqrt(b$W_var), I, K, dimnames = list(rn, kn))
      fit$H_sd <- matrix(sqrt(b$H_var), K, J, dimnames = list(kn, cn))
      if (!is.null(b$lambda_rate)) {
        fit$q_lambda <- cbind(shape = rates$ard[1L] + I + J, rate = b$lambda_rate)
        rownames(fit$q_lambda) <- kn
        fit$lambda_sd <- stats::setNames(sqrt(fit$q_lambda[, "shape"]) / b$lambda_rate, kn)
      }
    }
    fit <- optimiser_noise_parts(fit, b, noise$shape, data$n_obs)
    class(fit) <- fit_class(method, "nmf")
  }
  fit
}

# Values of a Gaussian NMF fit (Gibbs, ICM, VB, NP): non-negative finite
# factors of the fit's dimensions, a positive finite tau (none for NP).
validate_bnmf_fit <- function(fit) {
  validate_fit_header(fit)
  bad <- function(what) abort_fit(sprintf("the fit has %s", what))
  if (any(!is.finite(fit$W)) || any(fit$W < 0)) bad("a non-finite or negative W")
  if (any(!is.finite(fit$H)) || any(fit$H < 0)) bad("a non-finite or negative H")
  if (!all(is.finite(fit$tau)) || any(fit$tau <= 0)) {
    bad("a non-finite or non-positive tau")
  }
  if (!identical(dim(fit$W), c(fit$dims[1L], fit$rank))) bad("W of the wrong size")
  if (!identical(dim(fit$H), c(fit$rank, fit$dims[2L]))) bad("H of the wrong size")
  if (!isTRUE(all(dim(fit$X) == fit$dims))) bad("X of the wrong size")
  if (!(fit$n_obs > 0 && fit$n_obs + fit$n_missing <= prod(fit$dims))) {
    bad("a count of observed entries that does not fit X")
  }
  if (!is.null(fit$W_sd) && !identical(dim(fit$W_sd), dim(fit$W))) bad("W_sd of the wrong size")
  if (!is.null(fit$H_sd) && !identical(dim(fit$H_sd), dim(fit$H))) bad("H_sd of the wrong size")
  fit
}

# A broken internal contract of a fit object (never the user's mistake).

# Checks shared by the particle and HMC fits: factors W (I x K, every column
# on the simplex) and H (K x J), finite and non-negative.
check_simplex_factors <- function(W, H, I, J, K, bad, what) {
  if (!identical(dim(W), c(I, K)) || !identical(dim(H), c(K, J))) {
    bad(sprintf("%s of the wrong size", what))
  }
  if (any(!is.finite(W)) || any(W < 0) || any(!is.finite(H)) || any(H < 0)) {
    bad(sprintf("%s with non-finite or negative entries", what))
  }
  if (any(abs(colSums(W) - 1) > 1e-8)) bad(sprintf("%s whose W is not on the simplex", what))
}

# The sd of the kept draws of a trace column (every `thin`-th sweep of the
# sampling phase of each chain), computed on the draws divided by their
# largest absolute value, so that it neither overflows nor underflows.
kept_sd <- function(trace, column, thin) {
  tr <- trace[trace$sampling, , drop = FALSE]
  v <- tr[[column]][stats::ave(seq_len(nrow(tr)), tr$chain, FUN = seq_along) %% thin == 0]
  s <- max(abs(v))
  if (!(s > 0) || !is.finite(s)) return(stats::sd(v))
  s * stats::sd(v / s)
}

# A permutation of 1..K for every particle or chain.
check_alignment <- function(alignment, n, K, bad) {
  ok <- is.list(alignment) && length(alignment) == n &&
    all(vapply(alignment, function(p) identical(sort(as.integer(p)), seq_len(K)), logical(1)))
  if (!ok) bad("an alignment that is not a permutation of the factors per member")
}

#' Continue a fit
#'
#' Runs more sweeps of every chain of a Gibbs fit, starting exactly where it
#' stopped (its last state and its random number stream), and pools the new
#' draws with the old ones; or continues the ICM iterations of the kept
#' restart.
#'
#' @param object A `bnmf` fit.
#' @param iter Number of further sweeps per chain (all of them kept, thinned
#'   by the fit's `thin`).
#' @param progress Show a progress bar.
#' @param ... Not used: an argument here is an error (a misspelt name would
#'   otherwise be ignored).
#' @return The updated fit.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:50, ], rank = 2, iter = 200)
#' fit <- update(fit, iter = 200)
#' fit$n_draws
#' @export
update.bnmf <- function(object, iter = 1000, progress = interactive(), ...) {
  check_dots_empty(list(...), names(formals()), "update")
  iter <- check_count(iter, "iter", min = 1)
  progress <- check_flag(progress, "progress")
  fit <- object
  settings <- fit$settings
  if (fit$method == "gibbs") {
    iter <- max(settings$thin, iter %/% settings$thin * settings$thin)
  }
  # The chains continue from their last states and random number streams,
  # through the engine that ran them.
  job <- list(method = fit$method, X = fit$X, data = prepare_data(fit$X, fit$rank),
              model = fit, settings = settings)
  job$settings$iter <- iter
  job$settings$burnin <- 0L
  chains <- if (fit$method != "gibbs") fit$chains[fit$best] else fit$chains
  starts <- lapply(chains, function(ch) ch[setdiff(names(ch), c("seed", "perm"))])
  job <- chain_tasks(job, starts, progress)
  job$model <- NULL
  runs <- run_tasks(job$tasks, gaussian_chain, job = job,
                    seeds = lapply(chains, function(ch) ch$seed))
  if (fit$method != "gibbs") {
    fit$trace <- fit$trace[fit$trace$chain == fit$best, , drop = FALSE]
    fit$trace$chain <- 1L
  }
  settings$iter <- settings$iter + iter
  new <- new_bnmf_fit(runs, fit$X, job$data, fit$method, fit$rank, fit$prior,
                      fit$noise, settings, fit$call, previous = fit)
  validate_bnmf_fit(new)
}

# match_factors() (R/diversity.R): the alignment of align_factors().

# Reorder the factors of one chain's running moments and draws.
permute_run <- function(run, perm, I, J, K) {
  if (identical(perm, seq_len(K))) return(run)
  iw <- as.vector(matrix(seq_len(I * K), I, K)[, perm])
  ih <- as.vector(matrix(seq_len(K * J), K, J)[perm, ])
  st <- run$state
  for (nm in c("W_mean", "W_m2")) st[[nm]] <- st[[nm]][iw]
  for (nm in c("H_mean", "H_m2")) st[[nm]] <- st[[nm]][ih]
  # The chain's own state is left in its own labelling: update() continues it.
  run$state <- st
  if (!is.null(run$W_draws)) {
    run$W_draws <- run$W_draws[iw, , drop = FALSE]
    run$H_draws <- run$H_draws[ih, , drop = FALSE]
  }
  run
}

# What the Gaussian noise gives the kept restart `b` of an optimiser of any
# model: VB its q(tau) (shape, rate), the sd of tau and the ELBO; NP, which
# has no noise model, its loss instead of tau and a log posterior.
optimiser_noise_parts <- function(fit, b, shape0, n_obs) {
  if (fit$method == "vb") {
    shape <- shape0 + n_obs / 2
    fit$q_tau <- c(shape = shape, rate = b$tau_rate)
    fit$tau_sd <- sqrt(shape) / b$tau_rate
    fit$elbo <- b$logpost
  }
  if (fit$method == "np") {
    fit$tau <- NULL
    fit$loss <- -b$logpost
    fit$logpost <- NULL
  }
  fit
}

# The fields every fit shares, written in one place: the call, the method
# and model, the rank, the data (X as given, its size, names, whether
# sparse, how many entries are observed and missing) and the settings. Each
# model's constructor adds its own fields to this header.
fit_header <- function(call, method, model, X, rank, settings) {
  n_miss <- n_missing(X)
  list(call = call, method = method, model = model, rank = rank, dims = dim(X),
       dimnames = list(rownames(X), colnames(X)), sparse = inherits(X, "dgCMatrix"),
       n_obs = prod(as.double(dim(X))) - n_miss, n_missing = n_miss, settings = settings,
       X = X)
}

# Checks of the header (fit_header()) that every constructor's validator
# makes first: its class names its method and model, and the data fields
# agree with X.
validate_fit_header <- function(fit) {
  bad <- function(what) abort_fit(sprintf("the fit has %s", what))
  cls <- class(fit)
  if (!identical(cls[1L], paste0("bnmf_", fit$method)) ||
      !identical(utils::tail(cls, 2L), c(paste0("bnmf_", fit$model), "bnmf"))) {
    bad(sprintf("the class %s, not that of its method \"%s\" and model \"%s\"",
                paste(cls, collapse = ", "), fit$method, fit$model))
  }
  if (!identical(as.integer(fit$dims), dim(fit$X))) bad("dimensions other than those of X")
  if (!isTRUE(all.equal(fit$n_obs + fit$n_missing, prod(as.double(fit$dims))))) {
    bad("counts of observed entries and missing entries that do not add up to the size of X")
  }
  if (!isTRUE(fit$settings$chains >= 1)) bad("no chain")
  fit
}

# The class of a fit: its method (with any family it belongs to, as the
# SVGD fits to the particles), its model ("nmf", "nmtf", "poisson"), and
# what every fit is. Methods dispatch on the method, then the model, then
# what all fits share.
fit_class <- function(method, model) {
  c(paste0("bnmf_", method), paste0("bnmf_", model), "bnmf")
}
