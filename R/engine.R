# The engine: C advances a chain's state by n sweeps; R drives the chunks,
# the progress bar, burn-in, thinning and the pooling of chains.

# Describe the data for the C code: dimensions, sparse structure and the
# missing entries (listed by column and by row, 0-based).
prepare_data <- function(X, K) {
  d <- dim(X)
  I <- d[1L]
  J <- d[2L]
  sparse <- inherits(X, "dgCMatrix")
  if (sparse) {
    vals <- X@x
    miss_pos <- which(is.na(vals))
    cols <- if (length(miss_pos)) rep.int(seq_len(J) - 1L, diff(X@p))[miss_pos] else integer()
    miss_i <- X@i[miss_pos]
    miss_j <- cols
    xi <- X@i
    xp <- X@p
  } else {
    vals <- X
    miss_pos <- if (anyNA(X)) which(is.na(X)) else integer()
    miss_i <- as.integer((miss_pos - 1L) %% I)
    miss_j <- as.integer((miss_pos - 1L) %/% I)
    xi <- xp <- integer()
  }
  nmiss <- length(miss_pos)
  row_order <- order(miss_i, miss_j)
  list(
    dims = c(I, J, as.integer(K)),
    sparse = as.integer(sparse),
    xi = as.integer(xi), xp = as.integer(xp),
    miss_pos = as.integer(miss_pos - 1L),
    miss_i = as.integer(miss_i), miss_j = as.integer(miss_j),
    mcol_ptr = c(0L, cumsum(tabulate(miss_j + 1L, J))),
    mrow_ptr = c(0L, cumsum(tabulate(miss_i + 1L, I))),
    mrow_j = as.integer(miss_j[row_order]),
    # Sums over the observed entries (zeros of a sparse X included), without
    # an I x J temporary when nothing is missing.
    sumsq_obs = if (nmiss) sum(vals^2, na.rm = TRUE) else sum_squares(vals),
    n_obs = as.double(I) * J - nmiss,
    sum_obs = sum(vals, na.rm = TRUE)
  )
}

sum_squares <- function(v) {
  if (is.matrix(v)) norm(v, "F")^2 else sum(v * v)
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

# Random initial factors on the scale of the data: entries are
# sqrt(mean(X) / K) times a unit exponential, so that E[(WH)_ij] = mean(X).
random_init <- function(I, J, K, mean_x) {
  s <- sqrt((if (mean_x > 0) mean_x else .Machine$double.eps) / K)
  list(W = matrix(stats::rexp(I * K) * s, I, K),
       H = matrix(stats::rexp(K * J) * s, K, J))
}

check_init_list <- function(init, I, J, K) {
  if (!is.list(init) || !all(c("W", "H") %in% names(init))) {
    abort_input("`init` must be \"random\" or a list with matrices `W` and `H` (and optionally `tau`).")
  }
  W <- init$W
  H <- init$H
  if (!is.numeric(W) || !identical(dim(W), c(I, K)) || anyNA(W) || any(!is.finite(W)) ||
      any(W < 0)) {
    abort_input(sprintf("`init$W` must be a %d x %d matrix of finite values >= 0.", I, K))
  }
  if (!is.numeric(H) || !identical(dim(H), c(K, J)) || anyNA(H) || any(!is.finite(H)) ||
      any(H < 0)) {
    abort_input(sprintf("`init$H` must be a %d x %d matrix of finite values >= 0.", K, J))
  }
  if (!is.null(init$tau)) check_number(init$tau, "init$tau", 0, min_open = TRUE)
  if (!is.null(init$lambda)) {
    l <- init$lambda
    if (!is.numeric(l) || length(l) != K || anyNA(l) || any(!is.finite(l)) || any(l <= 0)) {
      abort_input(sprintf("`init$lambda` must be %d finite ARD rates > 0.", K))
    }
  }
  init
}

# (WH)_ij for a set of entries given by 0-based row and column indices.
wh_entries <- function(W, H, i, j) {
  storage.mode(W) <- storage.mode(H) <- "double"
  .Call(C_wh_entries, W, H, as.integer(i), as.integer(j))
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

# The chain driver of every model: `sweep(n, accumulate)` advances the
# chain's state by n sweeps (accumulating the running moments in the
# sampling phase of a sampler) and returns the C routine's list (trace, a
# column per name in `trace_names`; lambda; the draws named in `draws`;
# converged). R drives the two phases (burn-in, then sampling: `sampler`, by
# default Gibbs; for an optimiser burnin is 0), thinning, the progress bar
# and convergence; returns the trace (a data frame with `sampling` and the
# ARD rates as `lambda_names`), the kept draws (a matrix per name in `draws`,
# NULL when none) and whether tol stopped the chain. An optimiser (tol > 0)
# that uses all `iter` sweeps warns (bnmf_warning_convergence). A chain
# continued by update() is a run with burnin 0 from its saved state.
run_chunks <- function(sweep, method, iter, burnin, thin, progress, label,
                       draws = character(), lambda_names = NULL, tol = 0,
                       trace_names = c("loglik", "tau", "logpost", "sse"),
                       sampler = method == "gibbs") {
  converged <- FALSE
  pb <- progress_start(progress, iter, label)
  outs <- list()
  done <- 0L
  phase_len <- c(burnin, iter - burnin)
  for (phase in 1:2) {
    accumulate <- phase == 2L && sampler
    run <- chunk_loop(phase_len[phase], function(n) {
      out <- sweep(n, accumulate)
      # The C code says when tol stopped it, so that where the chunks end
      # (they adapt to the machine's speed) never changes the result.
      out$stop <- isTRUE(out$converged)
      out$trace <- cbind(out$trace, phase == 2L)
      out
    }, pb, done, multiple = if (accumulate) thin else 1L)
    outs <- c(outs, run$outs)
    done <- run$done
    if (run$stopped) {
      converged <- TRUE
      break
    }
  }
  traces <- lapply(outs, `[[`, "trace")
  lambdas <- lapply(outs, `[[`, "lambda")
  kept <- lapply(stats::setNames(draws, draws), function(nm) {
    Filter(function(d) length(d) && ncol(d), lapply(outs, `[[`, nm))
  })
  progress_done(pb)
  trace <- do.call(rbind, traces)
  nt <- length(trace_names)
  colnames(trace) <- c(trace_names, "sampling")
  trace <- data.frame(iteration = seq_len(nrow(trace)), trace[, seq_len(nt), drop = FALSE],
                      sampling = trace[, nt + 1L] == 1)
  if (length(lambda_names)) {
    lam <- do.call(rbind, lambdas)
    colnames(lam) <- lambda_names
    trace <- cbind(trace, lam)
  }
  # An optimiser that used every sweep without reaching `tol` says so.
  if (!sampler && !converged && tol > 0 && done >= iter) {
    warn_not_converged(if (identical(label, "bnmf")) sprintf("The %s iteration", toupper(method)) else label,
                       iter, tol, trace)
  }
  list(trace = trace, converged = converged,
       draws = lapply(kept, function(d) if (length(d)) do.call(cbind, d) else NULL))
}

# The chunk loop of every chain: `step(n)` advances the chain by n sweeps
# and returns a list with its `trace` (a row a sweep) and `stop` (TRUE when
# the chain stopped itself, e.g. at `tol`), and whatever else the chain
# keeps. Chunks aim at a quarter of a second each, in multiples of
# `multiple` (the thinning), so that progress and interrupts are timely;
# where they end never changes a result. `done`: sweeps done before (the
# progress bar's count). Returns the chunks' outputs, the count and whether
# the chain stopped itself.
chunk_loop <- function(total, step, pb, done = 0L, multiple = 1L) {
  outs <- list()
  chunk <- multiple
  left <- total
  stopped <- FALSE
  while (left > 0L && !stopped) {
    n <- min(left, chunk)
    if (n %% multiple) n <- max(multiple, n - n %% multiple)
    t0 <- proc.time()[[3L]]
    out <- step(n)
    dt <- proc.time()[[3L]] - t0
    outs[[length(outs) + 1L]] <- out
    nd <- NROW(out$trace)
    left <- left - nd
    done <- done + nd
    progress_update(pb, done)
    stopped <- isTRUE(out$stop)
    chunk <- as.integer(min(max(1, chunk * if (dt > 0) 0.25 / dt else 2), 2 * chunk + 1))
  }
  list(outs = outs, done = done, stopped = stopped)
}

# Pool running moments of several chains (Chan et al.'s parallel update of
# means and sums of squared deviations).
pool_moments <- function(means, m2s, ns) {
  if (length(means) == 1L) return(list(mean = means[[1L]], m2 = m2s[[1L]], n = ns))
  N <- sum(ns)
  mean <- Reduce(`+`, Map(function(m, n) m * (n / N), means, ns))
  m2 <- Reduce(`+`, m2s)
  for (c in seq_along(means)) m2 <- m2 + ns[c] * (means[[c]] - mean)^2
  list(mean = mean, m2 = m2, n = N)
}

moment_sd <- function(m2, n) if (n > 1) sqrt(m2 / (n - 1)) else m2 * NA_real_

# Progress bars: cli when asked, nothing otherwise.
progress_start <- function(progress, total, label) {
  if (!isTRUE(progress)) return(NULL)
  cli::cli_progress_bar(label, total = total, clear = TRUE,
                        .envir = parent.frame(),
                        format = "{cli::pb_name}{cli::pb_bar} {cli::pb_percent} | ETA {cli::pb_eta}")
}

progress_update <- function(pb, done) {
  if (!is.null(pb)) cli::cli_progress_update(id = pb, set = done)
}

progress_done <- function(pb) {
  if (!is.null(pb)) cli::cli_progress_done(id = pb)
}
