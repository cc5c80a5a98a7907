# Gaussian NMF (methods "icm" and "vb") by blocks of samples: the blocks'
# sources and holders are those of the Poisson fit (R/blocks.R); the C side
# is in src/nmf_blocks.c. A sweep is W's update from the blocks' sums, a map
# over the blocks (each updates its H[, b] given W and returns its terms of
# the SSE and of the factors' scales), the balance of the scales and tau's
# update, and a second map (each rescales its H[, b] and returns X_b H_b',
# H_b's Gram matrix and its terms of the objective), summed in block order.

# ---- the holders' side ----------------------------------------------------------

# H[, b] of each of the holder's blocks (`states`: list(H, H_var, H_ent) a
# block, the last two for VB) and the blocks' prior rates `lamH` (K x J_b).
gholder_init <- function(key, states, lamH) {
  h <- get(key, envir = block_store)
  h$states <- lapply(states, function(s) lapply(s, function(z) as.double(z) + 0))
  h$lamH <- lapply(lamH, function(l) as.double(l) + 0)
  invisible(NULL)
}

# The map of H's update over the holder's blocks, in their order.
gholder_h <- function(key, wq, ctrl) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- h$blocks[[b]] %||% load_block(h$specs[[b]], h$K, check = FALSE)
    .Call(C_nmf_block_h, h$states[[b]], blk$data, blk$x, h$lamH[[b]], wq, ctrl)
  })
}

# The map of the rescaling and W's products over the holder's blocks.
gholder_w <- function(key, scale, ctrl) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- h$blocks[[b]] %||% load_block(h$specs[[b]], h$K, check = FALSE)
    .Call(C_nmf_block_w, h$states[[b]], blk$data, blk$x, h$lamH[[b]], scale, ctrl)
  })
}

gholder_states <- function(key) get(key, envir = block_store)$states

# ---- the runner -----------------------------------------------------------------

# The Gaussian runner: block_runner()'s holders (this process or the
# workers of `cluster`) with the Gaussian map steps. Returns a list of
# functions: init(H, H_var, H_ent, lamH), h_step(wq, ctrl), w_step(scale,
# ctrl), gather(vb), close(), the blocks' column ranges and summaries.
gaussian_block_runner <- function(src, K, cluster = NULL) {
  base <- block_runner(src, K, cluster)
  key <- environment(base$step)$key
  owner <- environment(base$step)$owner
  cols <- base$cols
  call_all <- function(fun, args, per_block = NULL) {
    if (is.null(cluster)) {
      return(list(do.call(fun, c(list(key), args, if (!is.null(per_block))
        lapply(per_block, function(p) p)))))
    }
    cluster_call(cluster, fun, key, args, if (!is.null(per_block)) {
      lapply(owner, function(o) lapply(per_block, function(p) p[o]))
    })
  }
  list(
    cols = cols,
    summaries = base$summaries,
    init = function(H, H_var, H_ent, lamH) {
      sl <- function(M, j) M[, j, drop = FALSE]
      states <- lapply(cols, function(r) {
        j <- r[1L]:r[2L]
        c(list(H = sl(H, j)), if (!is.null(H_var)) list(H_var = sl(H_var, j), H_ent = sl(H_ent, j)))
      })
      lam <- lapply(cols, function(r) sl(lamH, r[1L]:r[2L]))
      call_all(gholder_init, list(), list(states = states, lamH = lam))
      invisible(NULL)
    },
    h_step = function(wq, ctrl) {
      res <- call_all(gholder_h, list(wq = wq, ctrl = ctrl))
      acc <- list(lin = 0, quad = 0, B = numeric(K), mh = numeric(K))
      for (w in res) for (st in w) {
        acc$lin <- acc$lin + st$lin
        acc$quad <- acc$quad + st$quad
        acc$B <- acc$B + st$B
        acc$mh <- pmax(acc$mh, st$mh)
      }
      acc
    },
    w_step = function(scale, ctrl) {
      res <- call_all(gholder_w, list(scale = scale, ctrl = ctrl))
      acc <- list(D = NULL, G = NULL, hterms = c(0, 0))
      for (w in res) for (st in w) {
        acc$D <- if (is.null(acc$D)) 0 + st$D else acc$D + st$D
        acc$G <- if (is.null(acc$G)) 0 + st$G else acc$G + st$G
        acc$hterms <- acc$hterms + st$hterms
      }
      acc
    },
    gather = function(vb) {
      st <- unlist(call_all(gholder_states, list()), recursive = FALSE)
      nms <- c("H", if (vb) c("H_var", "H_ent"))
      lapply(stats::setNames(nms, nms), function(nm) {
        do.call(cbind, lapply(st, function(s) matrix(s[[nm]], nrow = K)))
      })
    },
    close = base$close)
}

# ---- the setup and the chain ----------------------------------------------------

# The blocks of a Gaussian ICM or VB fit: their source and holders, which
# read each block once to check it and sum its values and squares. The
# holders are released when bnmf() returns (or here, when X is refused).
gaussian_blocks_setup <- function(job) {
  if (identical(job$prior$type, "ard")) {
    abort_unsupported("`prior = ard()`: a Gaussian fit by blocks of samples (`blocks`, `cluster`) has exponential priors only; fit the data in memory for ARD.")
  }
  open_blocks(job, gaussian_block_runner, function(job, sm) {
    if (any(sm[, "nmiss"] > 0)) {
      abort_unsupported("`X` has missing entries: a Gaussian fit by blocks of samples (`blocks`, `cluster`) needs complete data; fit the data in memory without `blocks` and `cluster` (which masks or imputes them), or use `likelihood = \"poisson\"` with counts.")
    }
    if (any(sm[, "nonfinite"] > 0)) abort_input("`X` must have finite values (NA for missing).")
    I <- nrow(job$X); J <- ncol(job$X); K <- job$rank
    warn_negative(sum(sm[, "neg"]), as.double(I) * J)
    job$data <- list(dims = c(I, J, as.integer(K)), sum_obs = sum(sm[, "sum"]),
                     sumsq_obs = sum(sm[, "sumsq"]), n_obs = as.double(I) * J,
                     miss_pos = integer(), n_missing = 0L)
    job$settings$missing <- "mask"
    job
  })
}

# One sweep by blocks as bnmf_nmf_sweeps (src/nmf_run.c) makes it: W's
# update (from `env$acc`, the blocks' products of the H before it), H's,
# the scales' balance, tau, the objective. `env`: the chain's wq, acc,
# log_rates. Returns the sweep's row of the trace.
gaussian_block_sweep <- function(env, runner, prior, ctrl, upd_W, upd_H, upd_tau) {
  if (upd_W) .Call(C_nmf_blocks_wstep, env$wq, env$acc, prior, ctrl)
  bw <- env$wq[intersect(c("W", "W_var", "tau"), names(env$wq))]
  hs <- runner$h_step(bw, c(ctrl["rule"], list(update = as.double(upd_H))))
  ctrl$balance <- as.double(upd_W && upd_H)
  ctrl$update_tau <- as.double(upd_tau)
  bal <- .Call(C_nmf_blocks_balance, env$wq, hs, prior, ctrl)
  env$acc <- runner$w_step(if (upd_W && upd_H) bal$scale, ctrl["rule"])
  ctrl$sse <- bal$sse
  ctrl$log_rates <- env$log_rates
  .Call(C_nmf_blocks_objective, env$wq, env$acc$hterms, prior, ctrl)
}

# A chain of ICM or VB by blocks: W, tau (and q's parts of them) here, H in
# the blocks' holders; the same start and sweeps as run_chain() in memory.
gaussian_blocks_chain <- function(task, job) {
  s <- job$settings
  runner <- job$runner
  data <- job$data
  prior <- job$prior_c
  method <- job$method
  I <- data$dims[1L]; J <- data$dims[2L]; K <- data$dims[3L]
  vb <- method == "vb"
  start <- task$start
  warm <- is.null(start)
  if (warm) start <- random_init(I, J, K, data$sum_obs / data$n_obs)
  W0 <- matrix(as.double(start$W), I, K)
  H0 <- matrix(as.double(start$H), K, J)
  tau0 <- start$tau
  ctrl0 <- list(dims = as.double(c(I, J, K)), n_obs = data$n_obs, sumsq = data$sumsq_obs)
  log_rates <- function(pr) {
    .Call(C_nmf_sum_log_rates, as.double(pr$lamW)) +
      Reduce(`+`, lapply(runner$cols, function(r) {
        .Call(C_nmf_sum_log_rates, as.double(pr$lamH[, r[1L]:r[2L]]))
      }))
  }
  env <- new.env(parent = emptyenv())
  if (is.null(tau0)) {
    # tau's start as run_chain(): a random start first takes 10 sweeps of
    # non-negative least squares (ICM under a flat prior)
    flat <- prior
    flat$ard <- numeric()
    if (warm) {
      flat$lamW <- 0 * prior$lamW
      flat$lamH <- 0 * prior$lamH
    }
    runner$init(H0, NULL, NULL, flat$lamH)
    env$wq <- list(W = W0 + 0, tau = 1 + 0)
    env$log_rates <- log_rates(flat)
    ctrl <- c(ctrl0, list(rule = 1))
    env$acc <- runner$w_step(NULL, ctrl["rule"])
    for (i in seq_len(if (warm) 10L else 1L)) {
      gaussian_block_sweep(env, runner, flat, ctrl, warm, warm, TRUE)
    }
    W0 <- matrix(env$wq$W, I, K)
    tau0 <- env$wq$tau
    H0 <- runner$gather(FALSE)$H
  }
  rule <- if (vb) 2 else 1
  ctrl <- c(ctrl0, list(rule = rule))
  env$wq <- c(list(W = as.double(W0) + 0),
              if (vb) list(W_var = as.double(start$W_var %||% numeric(I * K)) + 0,
                           W_ent = as.double(start$W_ent %||% numeric(I * K)) + 0),
              list(tau = as.double(tau0) + 0),
              if (vb) list(tau_rate = as.double(start$tau_rate %||%
                                                  ((prior$alpha + data$n_obs / 2) / tau0)) + 0))
  runner$init(H0, if (vb) matrix(start$H_var %||% numeric(K * J), K, J),
              if (vb) matrix(start$H_ent %||% numeric(K * J), K, J), prior$lamH)
  env$log_rates <- log_rates(prior)
  env$acc <- runner$w_step(NULL, ctrl["rule"])
  prev <- if (!is.null(start$logpost)) start$logpost else -Inf
  tol <- s$tol
  sweep <- function(n, accumulate) {
    tr <- matrix(0, n, 4)
    conv <- FALSE
    done <- 0L
    for (i in seq_len(n)) {
      row <- gaussian_block_sweep(env, runner, prior, ctrl, TRUE, TRUE, TRUE)
      tr[i, ] <- row
      done <- i
      conv <- tol > 0 && is.finite(prev) && abs(row[3L] - prev) <= tol * abs(row[3L])
      prev <<- row[3L]
      if (conv) break
    }
    list(trace = tr[seq_len(done), , drop = FALSE], converged = conv)
  }
  ch <- run_chunks(sweep, method, s$iter, s$burnin, s$thin, job$chain_progress, task$label,
                   tol = tol)
  h <- runner$gather(vb)
  wq <- env$wq
  state <- list(W = matrix(wq$W, I, K), H = h$H, tau = wq$tau, logpost = prev)
  if (vb) {
    state$W_var <- wq$W_var
    state$H_var <- as.vector(h$H_var)
    state$W_ent <- wq$W_ent
    state$H_ent <- as.vector(h$H_ent)
    state$tau_rate <- wq$tau_rate
  }
  list(state = state, trace = ch$trace, W_draws = NULL, H_draws = NULL,
       converged = ch$converged, latent = numeric(), seed = task_stream())
}
