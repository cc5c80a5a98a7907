# What the chains of every model share: the data's description for the C
# code (prepare_data()), random starts, the chain driver (run_chunks(), its
# chunk loop chunk_loop()) and the pooling of chains' running moments. C
# advances a chain's state by n sweeps; R drives the chunks, the progress
# bar, burn-in, thinning and convergence. Each model's engine
# (R/engine-<model>.R) hands run_chunks() its sweep.

# Describe the data for the C code: dimensions, sparse structure and the
# missing entries (listed by column and by row, 0-based).
prepare_data <- function(X, K, sums = TRUE, no_na = FALSE) {
  d <- dim(X)
  I <- d[1L]
  J <- d[2L]
  sparse <- inherits(X, "dgCMatrix")
  if (sparse) {
    vals <- X@x
    miss_pos <- if (no_na) integer() else which(is.na(vals))
    cols <- if (length(miss_pos)) rep.int(seq_len(J) - 1L, diff(X@p))[miss_pos] else integer()
    miss_i <- X@i[miss_pos]
    miss_j <- cols
    xi <- X@i
    xp <- X@p
  } else {
    vals <- X
    miss_pos <- if (!no_na && anyNA(X)) which(is.na(X)) else integer()
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
    sumsq_obs = if (!sums) NA_real_ else if (nmiss) sum(vals^2, na.rm = TRUE) else sum_squares(vals),
    n_obs = as.double(I) * J - nmiss,
    sum_obs = if (!sums) NA_real_ else sum(vals, na.rm = TRUE)
  )
}

sum_squares <- function(v) {
  if (is.matrix(v)) norm(v, "F")^2 else sum(v * v)
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
                       sampler = method == "gibbs", min_chunk = 1L) {
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
    }, pb, done, multiple = if (accumulate) thin else 1L, min_chunk = min_chunk)
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
# the chain stopped itself. `min_chunk`: the fewest sweeps a call (but the
# last) makes, for chains whose calls cost a pass over the data on top of
# their sweeps (Poisson VB: the ELBO of the state a call ends with).
chunk_loop <- function(total, step, pb, done = 0L, multiple = 1L, min_chunk = 1L) {
  outs <- list()
  lo <- multiple * ((max(min_chunk, 1L) + multiple - 1L) %/% multiple)
  chunk <- lo
  left <- total
  stopped <- FALSE
  while (left > 0L && !stopped) {
    n <- min(left, chunk)
    if (n %% multiple) n <- max(if (left >= lo) lo else multiple, n - n %% multiple)
    t0 <- proc.time()[[3L]]
    out <- step(n)
    dt <- proc.time()[[3L]] - t0
    outs[[length(outs) + 1L]] <- out
    nd <- NROW(out$trace)
    left <- left - nd
    done <- done + nd
    progress_update(pb, done)
    stopped <- isTRUE(out$stop)
    chunk <- as.integer(min(max(lo, chunk * if (dt > 0) 0.25 / dt else 2), 2 * chunk + 1))
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
