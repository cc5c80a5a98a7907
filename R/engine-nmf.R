# The Gaussian NMF engine of bnmf() (methods "gibbs", "icm", "vb", "np"):
# its argument checks, model, tasks (chains or restarts), the chain of one
# task (its state, its C sweeps through run_chunks(), R/chains.R), the fit's
# constructor, validator and update(). The other models' engines are in
# R/engine-<model>.R; what every model shares in R/chains.R and R/fit.R.

# ---- the Gaussian NMF engine: methods gibbs, icm, vb, np ---------------------

gaussian_check <- function(job) {
  method <- job$method
  if (method != "np" && job$given[["loss"]]) {
    abort_input(sprintf("`loss` applies to method \"np\" only, not \"%s\" (the Bayesian methods have a Gaussian likelihood).", method))
  }
  keep <- check_choice(job$keep, c("summary", "draws"), "keep")
  loss <- check_choice(job$loss, c("euclidean", "kl"), "loss")
  if (!is_delayed(job$X)) job$X <- check_data_matrix(job$X)
  check_rank_bound(job$rank, job$X)
  if (!inherits(job$prior, "bnmf_prior")) abort_input("`prior` must be made by `exponential()` or `ard()`.")
  if (method == "np" && identical(job$prior$type, "ard")) {
    abort_input("`prior`: method \"np\" (Lee-Seung multiplicative updates) has no prior; use method \"icm\", \"vb\" or \"gibbs\" for ARD.")
  }
  if (!inherits(job$noise, "bnmf_noise")) abort_input("`noise` must be made by `gamma_prior()`.")
  job$settings <- check_settings(method, job$iter, job$burnin, job$thin, job$chains, job$tol,
                                 keep, job$progress)
  job$settings$loss <- if (method == "np") loss else NULL
  if (method == "gibbs") job$settings$wh_thin <- check_count(job$wh_thin, "wh_thin", min = 1)
  if (method %in% c("icm", "vb", "np")) {
    job$control <- check_control(job$control, paste0(method, "_control"))
  }
  # ICM, VB and Gibbs by blocks of samples (R/blocks-gaussian.R): `blocks` or
  # `cluster`
  job$cluster <- check_cluster(job$cluster)
  if (method %in% c("icm", "vb", "gibbs") && (!is.null(job$cluster) || !is.null(job$blocks))) {
    if (is_delayed(job$X) && (length(dim(job$X)) != 2L || any(dim(job$X) < 1L) ||
             !DelayedArray::type(job$X) %in% c("double", "integer", "logical"))) {
      abort_input("`X` must be a numeric matrix with at least one row and one column.")
    }
    s <- job$settings
    check_fit_size(nrow(job$X), ncol(job$X), job$rank, s$chains, copies = 7,
                   draws = if (method == "gibbs" && keep == "draws") (s$iter - s$burnin) %/% s$thin else 0)
    return(gaussian_blocks_setup(job))
  }
  if (method == "np" && loss == "kl" && job$control$missing == "impute") {
    abort_input("`control`: np_control(missing = \"impute\") is for the Euclidean loss; with loss = \"kl\" the missing entries are always masked.")
  }
  s <- job$settings
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, s$chains,
                 draws = if (keep == "draws") (s$iter - s$burnin) %/% s$thin else 0,
                 copies = if (method == "vb") 7 else 5, data = 1 + 2 * (method == "gibbs"),
                 nx = if (inherits(job$X, "Matrix")) length(job$X@x) else length(job$X))
  job$data <- prepare_data(job$X, job$rank)
  if (method %in% c("icm", "vb", "np")) {
    job$settings$missing <- if (identical(loss, "kl")) "mask" else
      if (method == "np") np_missing_setting(job$control$missing) else
        missing_setting(job$control$missing, job$data)
  }
  check_signs(job$X, method)
  job
}

gaussian_model <- function(job) {
  I <- nrow(job$X)
  J <- ncol(job$X)
  mean_x <- job$data$sum_obs / job$data$n_obs
  nmf_spec(I, J, job$rank, gaussian_prior(job$prior, I, J, job$rank, mean_x, job$method),
           if (job$method == "np") gamma_prior(1, 1) else resolve_noise(job$noise, job$data))
}

gaussian_tasks <- function(job) {
  starts <- make_starts(job$init, job$settings$chains, nrow(job$X), ncol(job$X), job$rank)
  chain_tasks(job, starts, job$settings$progress)
}

# One task per chain (or restart) from its start; the C view of the prior
# and whether the chains show progress bars (only in this process) go with
# the job.
chain_tasks <- function(job, starts, progress) {
  label <- c(gibbs = "Gibbs sampling", icm = "ICM", vb = "Variational Bayes",
             np = "Multiplicative updates")[[job$method]]
  n <- length(starts)
  job$tasks <- lapply(seq_len(n), function(c) {
    list(start = starts[[c]],
         label = if (n > 1L) sprintf("%s, chain %d", label, c) else label)
  })
  job$prior_c <- c_prior(job$model)
  job$chain_progress <- progress && tasks_in_process()
  job
}

# Run one chain; its random number stream's final state is kept, so that
# update() can continue it.
gaussian_chain <- function(task, job) {
  if (!is.null(job$runner)) return(gaussian_blocks_chain(task, job))
  s <- job$settings
  res <- run_chain(job$X, job$data, job$prior_c, job$method, s$iter, s$burnin, s$thin,
                   s$keep, s$tol, task$start, progress = job$chain_progress,
                   masked = job$method != "gibbs" && !identical(s$missing, "impute"),
                   loss = s$loss %||% "euclidean",
                   label = task$label, wh_thin = s$wh_thin %||% 1L)
  res$seed <- task_stream()
  res
}

gaussian_build <- function(runs, job, call) {
  fit <- new_bnmf_fit(runs, job$X, job$data, job$method, job$rank, job$model$prior,
                      job$model$noise, job$settings, call,
                      n_miss = job$data$n_missing %||% n_missing(job$X))
  validate_bnmf_fit(fit)
}

gaussian_engine <- function() {
  list(check = gaussian_check, model = gaussian_model, tasks = gaussian_tasks,
       run_task = gaussian_chain, seeds = TRUE, build = gaussian_build)
}

#' A fresh chain state: the one place that writes the state's layout
#'
#' The C routines (`engine_sweeps()`, `engine_kl()`, `engine_chib()`) read
#' the state by name and modify it in place, so every vector in it is owned
#' by this state alone (`+ 0` forces a copy); the data values are copied only
#' when the chain writes to them (missing entries).
#'
#' @param X the data (matrix or dgCMatrix), `data` its description
#'   (`prepare_data()`).
#' @param W,H,tau the starting point.
#' @param latent values of the missing entries (latent variables of Gibbs,
#'   zeros when masked).
#' @param keep_wh keep running moments of WH on the stored entries.
#' @param wh_wait with `keep_wh`: the kept draws to skip before the first
#'   that enters WH's moments (0: the first kept draw; `update()` passes the
#'   chain's count, so that its subset continues where it stopped).
#' @param lambda ARD: the K starting rates (NULL without ARD); adds their
#'   running moments.
#' @param vb VB: NULL, or a list with the parts of q that are not the means:
#'   `tau_rate` (required), `lambda_rate` (with ARD), and optionally `W_var`,
#'   `H_var`, `W_ent`, `H_ent` (zeros when absent).
#' @return list(W, H, tau, x, sumsq, logpost, n_kept, the running moments
#'   W_mean, W_m2, H_mean, H_m2, tau_mean, tau_m2, WH_mean, WH_m2, and n_wh
#'   (the draws in WH's moments) and wh_wait, and work (scratch); with ARD
#'   lambda, lambda_mean, lambda_m2; with VB W_var, H_var, W_ent, H_ent,
#'   tau_rate and with ARD lambda_rate).
#' @noRd
new_state <- function(X, data, W, H, tau, latent, keep_wh, lambda = NULL, vb = NULL,
                      wh_wait = 0) {
  I <- data$dims[1L]; J <- data$dims[2L]; K <- data$dims[3L]
  vals <- if (data$sparse == 1L) X@x else X
  nmiss <- length(data$miss_pos)
  if (nmiss) {
    x <- vals + 0
    x[data$miss_pos + 1L] <- latent
    sumsq <- data$sumsq_obs + sum(latent^2)
  } else {
    x <- vals
    sumsq <- data$sumsq_obs
  }
  nwh <- if (keep_wh) length(vals) else 0L
  st <- list(
    W = matrix(as.double(W), I, K) + 0, H = matrix(as.double(H), K, J) + 0,
    tau = as.double(tau) + 0, x = x, sumsq = sumsq + 0, logpost = -Inf + 0,
    n_kept = 0 + 0,
    W_mean = numeric(I * K), W_m2 = numeric(I * K),
    H_mean = numeric(K * J), H_m2 = numeric(K * J),
    tau_mean = 0 + 0, tau_m2 = 0 + 0,
    WH_mean = numeric(nwh), WH_m2 = numeric(nwh),
    n_wh = 0 + 0, wh_wait = as.double(wh_wait) + 0,
    # The sweeps' scratch (bnmf_sweep_work_len() in src/nmf_sweep.c, whose
    # row buffers hold COND_BLOCK = 4 rows, src/cond.h; then the missing
    # entries' WH, the batch of draws for WH's moments), kept with the state
    # so that every chunk of sweeps reuses it instead of leaving garbage.
    # The sweeps refuse a shorter one, so this sum and theirs cannot drift
    # apart unnoticed.
    work = numeric(2 * (I + J) * K + 2 * K^2 + 16 * K + nmiss +
                     if (keep_wh && data$sparse != 1L) wh_work_len(I, J, K) else 0)
  )
  if (!is.null(lambda)) {
    st$lambda <- as.double(lambda) + 0
    st$lambda_mean <- numeric(K)
    st$lambda_m2 <- numeric(K)
  }
  if (!is.null(vb)) {
    st$W_var <- as.double(vb$W_var %||% numeric(I * K)) + 0
    st$H_var <- as.double(vb$H_var %||% numeric(K * J)) + 0
    st$W_ent <- as.double(vb$W_ent %||% numeric(I * K)) + 0
    st$H_ent <- as.double(vb$H_ent %||% numeric(K * J)) + 0
    st$tau_rate <- as.double(vb$tau_rate) + 0
    if (!is.null(lambda)) st$lambda_rate <- as.double(vb$lambda_rate) + 0
  }
  st
}

# The doubles of a dense fit's scratch for WH's moments: wh_work_len() in
# src/nmf_sweep.c (a tile of W H of at most 256 x 64, then up to 4 draws'
# copies of W and H and their weights, the copies at most a quarter of X's
# size; with room for one draw only, a block of 64 columns of W H instead).
wh_work_len <- function(I, J, K) {
  nb <- min(J, 64)
  cap <- min(4, max(1, floor(I * J / (4 * (I + J) * K))))
  if (cap == 1) return(I * nb)
  min(I, 256) * nb + cap * ((I + J) * K + 1)
}

#' Advance a chain's state by sweeps of the Gaussian NMF engine (in place)
#'
#' The R face of the C routine `nmf_sweeps`: one sweep updates W row by row,
#' H column by column (each row from its Gaussian conditional, by the
#' `rule`), then tau and, with ARD, the rates.
#'
#' @param state a state made by `new_state()` (with `lambda` under ARD and
#'   `vb` for `rule = "vb"`); modified in place.
#' @param data,prior the data (`prepare_data()`) and the prior
#'   (list(lamW, lamH, alpha, beta, ard = numeric() or c(alpha0, beta0))).
#' @param n number of sweeps.
#' @param rule `"gibbs"` (draw), `"icm"` (mode), `"vb"` (moments) or `"np"`
#'   (Lee-Seung multiplicative updates of the Euclidean loss).
#' @param masked missing entries masked (TRUE) or latent variables redrawn
#'   each sweep (FALSE; Gibbs only).
#' @param accumulate update the running moments after each kept sweep
#'   (Gibbs only).
#' @param thin keep every `thin`-th sweep.
#' @param keep_draws return the kept W and H.
#' @param wh_thin with `accumulate` and a state that keeps WH's moments:
#'   they take every `wh_thin`-th kept draw (the state's `wh_wait` says how
#'   many kept draws to skip before the next; `n_wh` counts those taken).
#' @param update the blocks to update, among `"W"`, `"H"`, `"tau"` (an
#'   empty vector: only the trace of the state).
#' @param tol ICM, VB, NP: stop once the relative change of the log
#'   posterior (ELBO, minus the loss) is at most `tol` (0: never).
#' @return list(trace = n x 4 matrix (loglik, tau, logpost, sse), W_draws,
#'   H_draws, lambda (n x K ARD rates), converged).
#' @noRd
engine_sweeps <- function(state, data, prior, n, rule = c("gibbs", "icm", "vb", "np"),
                          masked = TRUE, accumulate = FALSE, thin = 1L,
                          keep_draws = FALSE, update = c("W", "H", "tau"), tol = 0,
                          wh_thin = 1L) {
  rule <- match.arg(rule)
  stopifnot(is.character(update), all(update %in% c("W", "H", "tau")))
  ctrl <- list(n = as.integer(n), rule = rule, masked = as.logical(masked),
               accumulate = as.logical(accumulate), thin = as.integer(thin),
               keep_draws = as.logical(keep_draws), update_W = "W" %in% update,
               update_H = "H" %in% update, update_tau = "tau" %in% update,
               tol = as.double(tol), wh_thin = as.integer(wh_thin),
               threads = option_threads())
  .Call(C_nmf_sweeps, state, data, prior, ctrl)
}

#' Advance a state by Lee-Seung updates of the KL divergence (in place)
#'
#' @param state a state made by `new_state()` (its `x` >= 0, zero at the
#'   missing entries); `W`, `H` and `logpost` (minus the loss) are updated.
#' @param data the data (`prepare_data()`).
#' @param n number of sweeps.
#' @param tol stop once the relative change of the loss is at most `tol`.
#' @param update_W update W (FALSE: only H, for new samples).
#' @return list(trace = n x 4 matrix (-loss, 1, -loss, loss), converged).
#' @noRd
engine_kl <- function(state, data, n, tol = 0, update_W = TRUE) {
  ctrl <- list(n = as.integer(n), tol = as.double(tol), update_W = as.logical(update_W))
  .Call(C_nmf_kl, state, data, ctrl)
}

#' One of Chib's reduced Gibbs runs (see marginal_likelihood())
#'
#' @param state a state made by `new_state()` at theta* (missing entries
#'   masked; with `lambda` under ARD); modified in place.
#' @param data,prior as for `engine_sweeps()`.
#' @param target theta*: list(W, H, tau[, lambda]).
#' @param burnin,samples sweeps discarded, then sweeps evaluated.
#' @param block the block whose conditional density is returned: `"W"` (a
#'   column of W), `"tau"` (tau and lambda) or `"H"` (a row of H).
#' @param index the factor (1-based) of a `"W"` or `"H"` block.
#' @param sym average a `"W"` block's density over the free labels.
#' @param orbit average a `"W"` block's density over the factor's scale.
#' @return the log densities: samples x J for an `"H"` block (one column per
#'   entry), samples x 1 otherwise.
#' @noRd
engine_chib <- function(state, data, prior, target, burnin, samples,
                        block = c("W", "tau", "H"), index = 1L, sym = FALSE,
                        orbit = TRUE) {
  block <- match.arg(block)
  ctrl <- list(burnin = as.integer(burnin), samples = as.integer(samples),
               block = block, index = as.integer(index), sym = as.logical(sym),
               orbit = as.logical(orbit))
  .Call(C_chib_run, state, data, prior, target, ctrl)
}

# Run one chain of `method` from a starting point: burn-in, then sampling with
# running moments (and thinned draws with keep = "draws").
# `start` is NULL (draw a random init), a list(W, H, tau) or a previous
# chain's final state (to continue it with `update()`). Gibbs: the moments of
# WH take every `wh_thin`-th kept draw (the first included).
run_chain <- function(X, data, prior, method, iter, burnin, thin, keep, tol,
                      start, progress, masked, label = "bnmf", fix_W = FALSE,
                      loss = "euclidean", wh_thin = 1L) {
  I <- data$dims[1L]; J <- data$dims[2L]; K <- data$dims[3L]
  nmiss <- length(data$miss_pos)
  mean_x <- data$sum_obs / data$n_obs
  ard <- length(prior$ard) == 2L
  warm <- is.null(start)
  if (warm) start <- random_init(I, J, K, mean_x)
  W0 <- start$W
  H0 <- start$H
  tau0 <- start$tau
  if (method == "np") {
    tau0 <- 1
  } else if (is.null(tau0)) {
    # Start tau at its conditional mode given the starting factors. A random
    # start is first improved by a few sweeps of non-negative least squares
    # (conditional modes under a flat prior, which do not depend on tau):
    # otherwise the first sweeps see a tiny tau, the prior dominates, and
    # factors can collapse to zero, a stationary point the posterior mode
    # search never leaves.
    st <- new_state(X, data, W0, H0, 1, numeric(nmiss), FALSE)
    flat <- prior
    flat$ard <- numeric()
    if (warm) {
      flat$lamW <- 0 * prior$lamW
      flat$lamH <- 0 * prior$lamH
    }
    engine_sweeps(st, data, flat, if (warm) 10L else 1L, rule = "icm", masked = TRUE,
                  update = c(if (warm) c("W", "H"), "tau"))
    W0 <- st$W
    H0 <- st$H
    tau0 <- st$tau
  }
  augmented <- nmiss > 0L && !masked
  # Latent entries start at W H: drawn around it (Gibbs), or at it (ICM).
  latent <- if (!nmiss) numeric() else if (!is.null(start$latent)) start$latent else
    if (!augmented) numeric(nmiss) else {
      wh <- wh_entries(W0, H0, data$miss_i, data$miss_j)
      if (method == "gibbs") wh + stats::rnorm(nmiss, sd = 1 / sqrt(tau0)) else wh
    }
  keep_wh <- method == "gibbs"
  lambda <- NULL
  if (ard) {
    # lambda_k starts at its conditional mean given the starting factors.
    rate <- prior$ard[2L] + colSums(matrix(W0, I, K)) + rowSums(matrix(H0, K, J))
    lambda <- start$lambda %||% ((prior$ard[1L] + I + J) / rate)
  }
  vb <- if (method == "vb") {
    list(W_var = start$W_var, H_var = start$H_var, W_ent = start$W_ent,
         H_ent = start$H_ent,
         tau_rate = start$tau_rate %||% ((prior$alpha + data$n_obs / 2) / tau0),
         lambda_rate = if (ard) start$lambda_rate %||% rate)
  }
  state <- new_state(X, data, W0, H0, tau0, latent, keep_wh, lambda = lambda, vb = vb,
                     wh_wait = start$wh_wait %||% 0)
  if (!is.null(start$logpost)) state$logpost[] <- start$logpost
  kl <- method == "np" && loss == "kl"
  update <- c(if (!fix_W) "W", "H", if (!fix_W) "tau")
  sweep <- function(n, accumulate) {
    if (kl) return(engine_kl(state, data, n, tol = tol, update_W = !fix_W))
    engine_sweeps(state, data, prior, n, rule = method, masked = masked,
                  accumulate = accumulate, thin = if (accumulate) thin else 1L,
                  keep_draws = accumulate && keep == "draws", update = update,
                  tol = if (method == "gibbs") 0 else tol, wh_thin = wh_thin)
  }
  ch <- run_chunks(sweep, method, iter, burnin, thin, progress, label,
                   draws = c("W_draws", "H_draws"),
                   lambda_names = if (ard) sprintf("lambda[%d]", seq_len(K)), tol = tol)
  trace <- ch$trace
  converged <- ch$converged
  W_draws <- ch$draws$W_draws
  H_draws <- ch$draws$H_draws
  latent <- if (nmiss) state$x[data$miss_pos + 1L] else numeric()
  # Without the data's values (the latent entries are kept apart) and the
  # scratch: a chain run as a future sends its state back to the main
  # process, and these are 9 of its 25 MB at I = J = 1000, K = 20.
  list(
    state = state[setdiff(names(state), c("x", "work"))],
    trace = trace,
    W_draws = W_draws,
    H_draws = H_draws,
    converged = converged,
    latent = latent
  )
}

# Build a bnmf fit from the chains' results.
new_bnmf_fit <- function(runs, X, data, method, K, rates, noise, settings, call,
                         previous = NULL, n_miss = n_missing(X)) {
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
  fit <- c(fit_header(call, method, "nmf", X, K, settings, n_miss), list(
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
      # q's parameters: q(W_ik) = N(mu, sigma^2) truncated to [0, Inf)
      # (list(mu, sigma), recovered from the mean and variance, tn_params())
      fit$q_W <- q_factor(b$W, b$W_var, c(I, K), list(rn, kn))
      fit$q_H <- q_factor(b$H, b$H_var, c(K, J), list(kn, cn))
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
  validate_vb_q(fit, c("W", "H"), bad)
  fit
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
  if (is_delayed(fit$X)) {
    abort_unsupported(sprintf("`update()` continues a Gaussian fit in memory, and this fit's data (a %s) were read by blocks: fit again with a larger `iter` (or continue a Poisson VB fit, which `update()` continues by blocks).",
                              class(fit$X)[1L]))
  }
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
