# Gaussian NMF (methods "icm", "vb" and "gibbs") by blocks of samples: the blocks'
# sources and holders are those of the Poisson fit (R/blocks.R); the C side
# is in src/nmf_blocks.c. A sweep is W's update from the blocks' sums, a map
# over the blocks (each updates its H[, b] given W and returns its terms of
# the SSE and of the factors' scales), the balance of the scales and tau's
# update, and a second map (each rescales its H[, b] and returns X_b H_b',
# H_b's Gram matrix and its terms of the objective), summed in block order.
# Gibbs draws each block's H[, b] from the block's own random stream (the
# holder keeps its state between calls), W, the scales and tau from the
# chain's; a kept sweep adds H[, b] (and W H on the block's entries) to the
# block's running moments, gathered when the chain ends.
# Missing entries stay with their blocks: each keeps their values (`fill`
# in its state). Gibbs draws them after tau (from the block's stream), ICM
# and VB impute W H (E[W] E[H]) there, as run_chain()'s augmented sweeps;
# or ICM and VB mask them (zeros there), each block returning its part of
# the Gram matrix of every row with missing entries, as the masked sweeps.

# ---- the holders' side ----------------------------------------------------------

# H[, b] of each of the holder's blocks (`states`: list(H, H_var, H_ent) a
# block, the last two for VB) and the blocks' prior rates `lamH` (K x J_b).
# A block with missing entries keeps their current values in its state
# (`fill`, starting at W0 H[, b] there, as run_chain()'s latent entries;
# `wh`: W H there, the sweep's scratch), and a block held in memory its own
# copy of its values, into which the sweeps write the fill. `mask`: NULL,
# or (ICM, VB masking the missing entries) list(rmiss = each row's count of
# missing entries over all columns, J = their number): the fill is then
# zero, and the blocks' steps mask (h$mask_ctrl, added to their controls).
gholder_init <- function(key, states, lamH, W0, mask = NULL) {
  h <- get(key, envir = block_store)
  h$states <- lapply(seq_along(states), function(b) {
    s <- lapply(states[[b]], function(z) as.double(z) + 0)
    # (a block of a file that misses nothing is not read here)
    if (isTRUE(h$no_na[[b]])) return(s)
    blk <- holder_block(h, b)
    nm <- length(blk$data$miss_pos)
    if (nm > 0L) {
      if (!is.null(h$blocks[[b]])) h$blocks[[b]]$x <- h$blocks[[b]]$x + 0
      s$fill <- if (!is.null(mask)) numeric(nm) else
        wh_entries(W0, matrix(s$H, nrow = h$K), blk$data$miss_i, blk$data$miss_j) + 0
      s$wh <- numeric(nm)
    }
    s
  })
  h$lamH <- lapply(lamH, function(l) as.double(l) + 0)
  h$mask_ctrl <- if (!is.null(mask)) {
    list(masked = 1, rmiss = as.double(mask$rmiss), J = as.double(mask$J))
  }
  invisible(NULL)
}

# Each block's count of missing entries by row, and its largest by column
# (NULL for a block that misses nothing).
gholder_miss_counts <- function(key) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    if (isTRUE(h$no_na[[b]])) return(NULL)
    d <- holder_block(h, b)$data
    list(rows = diff(d$mrow_ptr), colmax = max(0L, diff(d$mcol_ptr)))
  })
}

# The map of H's update over the holder's blocks, in their order.
gholder_h <- function(key, wq, ctrl) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    .Call(C_nmf_block_h, h$states[[b]], blk$data, blk$x, h$lamH[[b]], wq, c(ctrl, h$mask_ctrl))
  })
}

# The map of the rescaling and W's products over the holder's blocks.
gholder_w <- function(key, scale, ctrl) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    .Call(C_nmf_block_w, h$states[[b]], blk$data, blk$x, h$lamH[[b]], scale, c(ctrl, h$mask_ctrl))
  })
}

gholder_states <- function(key) get(key, envir = block_store)$states

# Which of the holder's blocks have missing entries (whose fill the W step
# of a Gibbs sweep draws, on the block's stream).
gholder_has_fill <- function(h, b) !is.null(h$states[[b]]$fill)

# Gibbs: each block's random stream (`seeds`, the chain's substreams) and
# whether it keeps its H[, b] draws; the kept draws so far are dropped. A
# block's missing entries start drawn around W0 H[, b] (gholder_init()'s
# fill), with sd 1 / sqrt(tau0), from its stream (run_chain()'s start).
gholder_gibbs_init <- function(key, seeds, keep_draws, tau0) {
  h <- get(key, envir = block_store)
  for (b in seq_along(h$specs)) {
    if (!gholder_has_fill(h, b)) next
    r <- with_stream(seeds[[b]], function() {
      stats::rnorm(length(h$states[[b]]$fill), sd = 1 / sqrt(tau0))
    })
    seeds[[b]] <- r$seed
    h$states[[b]]$fill <- h$states[[b]]$fill + r$value
  }
  h$seeds <- seeds
  h$keep_draws <- keep_draws
  # each block's draws in an environment, by number: appending to a list
  # held here would copy it on every kept sweep
  h$draws <- lapply(h$specs, function(sp) new.env(parent = emptyenv()))
  h$n_draws <- integer(length(h$specs))
  invisible(NULL)
}

# Gibbs: the map of H's draw over the holder's blocks, each on its own
# stream (swapped in as R's state around its call, and kept after it).
gholder_h_gibbs <- function(key, wq, ctrl) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    r <- with_stream(h$seeds[[b]], function() {
      .Call(C_nmf_block_h, h$states[[b]], blk$data, blk$x, h$lamH[[b]], wq, ctrl)
    })
    h$seeds[[b]] <- r$seed
    r$value
  })
}

# Gibbs: the map of the rescaling and W's products, and on a kept sweep
# (`keep`: list(W, ctrl = list(inv_n, inv_wh))) the blocks' running moments
# and kept draws. No draws: the blocks' streams are not needed.
gholder_w_gibbs <- function(key, scale, ctrl, keep) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    wcall <- function() .Call(C_nmf_block_w, h$states[[b]], blk$data, blk$x, h$lamH[[b]], scale, ctrl)
    out <- if (gholder_has_fill(h, b) && ctrl$refill != 0) {
      # the block's missing entries are drawn from its stream
      r <- with_stream(h$seeds[[b]], wcall)
      h$seeds[[b]] <- r$seed
      r$value
    } else {
      wcall()
    }
    if (!is.null(keep)) {
      .Call(C_nmf_block_keep, h$states[[b]], blk$data, blk$x, keep$W, keep$ctrl)
      if (h$keep_draws) {
        h$n_draws[b] <- h$n_draws[b] + 1L
        assign(as.character(h$n_draws[b]), h$states[[b]]$H + 0, envir = h$draws[[b]])
      }
    }
    out
  })
}

# Gibbs: the blocks' states and their kept draws (K J_b x draws each).
gholder_gibbs_states <- function(key) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$states), function(b) {
    n <- h$n_draws[b]
    c(h$states[[b]], list(draws = if (n > 0L) {
      do.call(cbind, mget(as.character(seq_len(n)), envir = h$draws[[b]]))
    }))
  })
}

# ---- the runner -----------------------------------------------------------------

# The Gaussian runner: block_runner()'s holders (this process or the
# workers of `cluster`) with the Gaussian map steps. Returns a list of
# functions: init(H, H_var, H_ent, lamH), h_step(wq, ctrl), w_step(scale,
# ctrl), gather(vb), close(); Gibbs's gibbs_init(states, lamH, seeds,
# keep_draws), h_gibbs(wq, ctrl), w_gibbs(scale, ctrl, keep),
# gibbs_states(); the blocks' column ranges and summaries, the holders' key.
gaussian_block_runner <- function(src, K, cluster = NULL) {
  base <- block_runner(src, K, cluster)
  owner <- base$owner
  cols <- base$cols
  # per_block: lists by block, each holder given its own blocks' elements
  call_all <- function(fun, args, per_block = NULL) {
    base$call_all(fun, args, if (!is.null(per_block)) {
      lapply(owner, function(o) lapply(per_block, function(p) p[o]))
    })
  }
  # the reduces, in block order: of the H steps and of the W products
  reduce_h <- function(res) {
    acc <- list(lin = 0, quad = 0, B = numeric(K), mh = numeric(K), lat = 0, fss = 0)
    for (w in res) for (st in w) {
      acc$lin <- acc$lin + st$lin
      acc$quad <- acc$quad + st$quad
      acc$lat <- acc$lat + st$lat
      acc$fss <- acc$fss + st$fss
      acc$B <- acc$B + st$B
      acc$mh <- pmax(acc$mh, st$mh)
    }
    acc
  }
  reduce_w <- function(res) {
    acc <- list(D = NULL, G = NULL, hterms = c(0, 0), fs = NULL, fo = NULL, gm = NULL)
    add <- function(a, b) if (is.null(a)) 0 + b else a + b
    for (w in res) for (st in w) {
      acc$D <- add(acc$D, st$D)
      acc$G <- add(acc$G, st$G)
      acc$hterms <- acc$hterms + st$hterms
      # VB imputing: the rows' sums of W's update
      if (length(st$gm)) {
        acc$fs <- add(acc$fs, st$fs)
        acc$fo <- add(acc$fo, st$fo)
        acc$gm <- add(acc$gm, st$gm)
      }
      # masked: the blocks' parts of the masked rows' Gram matrices
      if (length(st$Mg)) acc$Mg <- add(acc$Mg, st$Mg)
    }
    acc
  }
  list(
    key = base$key,
    cols = cols,
    summaries = base$summaries,
    init = function(H, H_var, H_ent, lamH, W0 = NULL, mask = NULL) {
      sl <- function(M, j) M[, j, drop = FALSE]
      states <- lapply(cols, function(r) {
        j <- r[1L]:r[2L]
        c(list(H = sl(H, j)), if (!is.null(H_var)) list(H_var = sl(H_var, j), H_ent = sl(H_ent, j)))
      })
      lam <- lapply(cols, function(r) sl(lamH, r[1L]:r[2L]))
      call_all(gholder_init, list(W0 = W0, mask = mask), list(states = states, lamH = lam))
      invisible(NULL)
    },
    miss_counts = function() {
      mc <- Filter(Negate(is.null), unlist(call_all(gholder_miss_counts, list()),
                                           recursive = FALSE))
      list(rows = Reduce(`+`, lapply(mc, `[[`, "rows")),
           colmax = max(vapply(mc, `[[`, numeric(1), "colmax")))
    },
    h_step = function(wq, ctrl) reduce_h(call_all(gholder_h, list(wq = wq, ctrl = ctrl))),
    w_step = function(scale, ctrl) {
      reduce_w(call_all(gholder_w, list(scale = scale, ctrl = ctrl)))
    },
    # Gibbs: the blocks' H[, b] and their running moments (states: list(H,
    # H_mean, H_m2, WH_mean, WH_m2) a block), prior rates, streams and
    # whether they keep their draws
    gibbs_init = function(states, lamH, seeds, keep_draws, W0 = NULL, tau0 = NULL) {
      call_all(gholder_init, list(W0 = W0), list(states = states, lamH = lapply(cols, function(r) {
        lamH[, r[1L]:r[2L], drop = FALSE]
      })))
      call_all(gholder_gibbs_init, list(keep_draws = keep_draws, tau0 = tau0), list(seeds = seeds))
      invisible(NULL)
    },
    h_gibbs = function(wq, ctrl) reduce_h(call_all(gholder_h_gibbs, list(wq = wq, ctrl = ctrl))),
    w_gibbs = function(scale, ctrl, keep) {
      reduce_w(call_all(gholder_w_gibbs, list(scale = scale, ctrl = ctrl, keep = keep)))
    },
    gibbs_states = function() {
      unlist(call_all(gholder_gibbs_states, list()), recursive = FALSE)
    },
    gather = function(vb) {
      st <- unlist(call_all(gholder_states, list()), recursive = FALSE)
      nms <- c("H", if (vb) c("H_var", "H_ent"))
      out <- lapply(stats::setNames(nms, nms), function(nm) {
        do.call(cbind, lapply(st, function(s) matrix(s[[nm]], nrow = K)))
      })
      # the missing entries' values, in X's order (the blocks' columns in order)
      out$latent <- unlist(lapply(st, `[[`, "fill"), use.names = FALSE) %||% numeric()
      out
    },
    close = base$close)
}

# ---- the setup and the chain ----------------------------------------------------

# The blocks of a Gaussian ICM, VB or Gibbs fit: their source and holders, which
# read each block once to check it and sum its values and squares. The
# holders are released when bnmf() returns (or here, when X is refused).
gaussian_blocks_setup <- function(job) {
  if (identical(job$prior$type, "ard")) {
    abort_unsupported("`prior = ard()`: a Gaussian fit by blocks of samples (`blocks`, `cluster`) has exponential priors only; fit the data in memory for ARD.")
  }
  open_blocks(job, gaussian_block_runner, function(job, sm) {
    if (any(sm[, "nonfinite"] > 0)) abort_input("`X` must have finite values (NA for missing).")
    nmiss <- sum(sm[, "nmiss"])
    if (nmiss <= .Machine$integer.max) nmiss <- as.integer(nmiss) # as n_missing()
    I <- nrow(job$X); J <- ncol(job$X); K <- job$rank
    warn_negative(sum(sm[, "neg"]), as.double(I) * J - nmiss)
    job$data <- list(dims = c(I, J, as.integer(K)), sum_obs = sum(sm[, "sum"]),
                     sumsq_obs = sum(sm[, "sumsq"]), n_obs = as.double(I) * J - nmiss,
                     miss_pos = integer(), n_missing = nmiss)
    # (the settings of the fit in memory: ICM and VB record how they treat
    # missing entries, Gibbs does not)
    missing <- "mask"
    if (nmiss > 0) {
      # each row's count of missing entries (masked sweeps, the warm-up's
      # included) and "auto" resolved as missing_setting() in memory
      mc <- job$runner_open$miss_counts()
      job$data$rmiss <- as.double(mc$rows)
      worst <- max(max(mc$rows) / J, mc$colmax / I)
      missing <- job$control$missing %||% "auto"
      if (missing == "auto") missing <- if (worst <= IMPUTE_MAX_SHARE) "impute" else "mask"
    }
    if (job$method != "gibbs") job$settings$missing <- missing
    job
  })
}

# The masking of a chain by blocks: NULL, or the holders' `mask` (gholder_init()).
block_mask <- function(data, masked) {
  if (!masked || !(data$n_missing > 0)) return(NULL)
  list(rmiss = data$rmiss, J = data$dims[2L])
}

# The master's controls of a masked sweep (nmf_blocks_wstep).
mask_ctrl <- function(mask) {
  if (is.null(mask)) list(masked = 0) else list(masked = 1, rmiss = as.double(mask$rmiss))
}

# The controls of a block's W step (nmf_block_w): `refill` the missing
# entries (after an H step) with W H, drawn around it (Gibbs) with tau;
# `fill`: VB imputing, return the rows' sums of W's update.
block_wctrl <- function(rule, refill, tau, fill = 0) {
  list(rule = rule, refill = as.double(refill), tau = as.double(tau), fill = as.double(fill))
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
  # (with missing entries the sum of squares takes the fill's)
  bal <- .Call(C_nmf_blocks_balance, env$wq, hs, prior,
               replace(ctrl, "sumsq", list(ctrl$sumsq + hs$fss)))
  env$acc <- runner$w_step(if (upd_W && upd_H) bal$scale, block_wctrl(ctrl$rule, 1, env$wq$tau, ctrl$fill))
  ctrl$sse <- bal$sse
  ctrl$log_rates <- env$log_rates
  .Call(C_nmf_blocks_objective, env$wq, env$acc$hterms, prior, ctrl)
}

# The start of a chain by blocks as run_chain()'s: the task's start or a
# random one and, without a tau, tau's start (a random start first takes 10
# sweeps of non-negative least squares, ICM under a flat prior, by blocks).
# Returns list(start, W0 (I x K), H0 (K x J), tau0, ctrl0 (the controls of
# the whole data), log_rates (a function of a prior: sum log lam over W's
# and the blocks' proper rates)).
gaussian_blocks_start <- function(task, job) {
  runner <- job$runner
  data <- job$data
  prior <- job$prior_c
  I <- data$dims[1L]; J <- data$dims[2L]; K <- data$dims[3L]
  start <- task$start
  warm <- is.null(start)
  if (warm) start <- random_init(I, J, K, data$sum_obs / data$n_obs)
  W0 <- matrix(as.double(start$W), I, K)
  H0 <- matrix(as.double(start$H), K, J)
  tau0 <- start$tau
  ctrl0 <- list(dims = as.double(c(I, J, K)), n_obs = data$n_obs, sumsq = data$sumsq_obs,
                fill = 0)
  log_rates <- function(pr) {
    .Call(C_nmf_sum_log_rates, as.double(pr$lamW)) +
      Reduce(`+`, lapply(runner$cols, function(r) {
        .Call(C_nmf_sum_log_rates, as.double(pr$lamH[, r[1L]:r[2L]]))
      }))
  }
  if (is.null(tau0)) {
    env <- new.env(parent = emptyenv())
    flat <- prior
    flat$ard <- numeric()
    if (warm) {
      flat$lamW <- 0 * prior$lamW
      flat$lamH <- 0 * prior$lamH
    }
    # (missing entries masked, as run_chain()'s)
    mask <- block_mask(data, TRUE)
    runner$init(H0, NULL, NULL, flat$lamH, W0, mask)
    env$wq <- list(W = W0 + 0, tau = 1 + 0)
    env$log_rates <- log_rates(flat)
    ctrl <- c(ctrl0, list(rule = 1), mask_ctrl(mask))
    env$acc <- runner$w_step(NULL, block_wctrl(1, 0, 1))
    for (i in seq_len(if (warm) 10L else 1L)) {
      gaussian_block_sweep(env, runner, flat, ctrl, warm, warm, TRUE)
    }
    W0 <- matrix(env$wq$W, I, K)
    tau0 <- env$wq$tau
    H0 <- runner$gather(FALSE)$H
  }
  list(start = start, W0 = W0, H0 = H0, tau0 = tau0, ctrl0 = ctrl0, log_rates = log_rates)
}

# A chain of ICM or VB by blocks: W, tau (and q's parts of them) here, H in
# the blocks' holders; the same start and sweeps as run_chain() in memory.
gaussian_blocks_chain <- function(task, job) {
  if (job$method == "gibbs") return(gaussian_gibbs_blocks_chain(task, job))
  s <- job$settings
  runner <- job$runner
  data <- job$data
  prior <- job$prior_c
  method <- job$method
  I <- data$dims[1L]; J <- data$dims[2L]; K <- data$dims[3L]
  vb <- method == "vb"
  st0 <- gaussian_blocks_start(task, job)
  start <- st0$start
  W0 <- st0$W0; H0 <- st0$H0; tau0 <- st0$tau0
  ctrl0 <- st0$ctrl0
  log_rates <- st0$log_rates
  env <- new.env(parent = emptyenv())
  rule <- if (vb) 2 else 1
  ctrl <- c(ctrl0, list(rule = rule))
  # missing entries masked (the master's rows take the blocks' masked Gram
  # matrices), or imputed (VB's W update takes the rows' sums of the fill)
  mask <- block_mask(data, !identical(s$missing, "impute"))
  ctrl <- c(ctrl, mask_ctrl(mask))
  ctrl$fill <- as.double(vb && data$n_missing > 0 && is.null(mask))
  env$wq <- c(list(W = as.double(W0) + 0),
              if (vb) list(W_var = as.double(start$W_var %||% numeric(I * K)) + 0,
                           W_ent = as.double(start$W_ent %||% numeric(I * K)) + 0),
              list(tau = as.double(tau0) + 0),
              if (vb) list(tau_rate = as.double(start$tau_rate %||%
                                                  ((prior$alpha + data$n_obs / 2) / tau0)) + 0))
  # (missing entries start at W0 H0, as run_chain()'s imputed ones, or zero
  # when masked)
  runner$init(H0, if (vb) matrix(start$H_var %||% numeric(K * J), K, J),
              if (vb) matrix(start$H_ent %||% numeric(K * J), K, J), prior$lamH, W0, mask)
  env$log_rates <- log_rates(prior)
  env$acc <- runner$w_step(NULL, block_wctrl(rule, 0, tau0, ctrl$fill))
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
       converged = ch$converged, latent = h$latent, seed = task_stream())
}

# ---- Gibbs by blocks ----------------------------------------------------------

# One Gibbs sweep by blocks, in the order of bnmf_nmf_sweeps (src/nmf_run.c):
# W's draw from `env$acc` (the blocks' X_b H_b' and Gram matrices of the H
# before it), on the chain's stream; H's draw in each block, on the block's
# stream; the scale move (B_k summed over the blocks) and tau's draw on the
# chain's stream; each block's H[, b] rescaled and its products (and on a
# kept sweep its moments: `keep` as gholder_w_gibbs's); the objective.
# Returns the sweep's row of the trace.
gaussian_gibbs_block_sweep <- function(env, runner, prior, ctrl, keep_fun) {
  .Call(C_nmf_blocks_wstep, env$wq, env$acc, prior, ctrl)
  hs <- runner$h_gibbs(env$wq, c(ctrl["rule"], list(update = 1)))
  ctrl$balance <- 1
  ctrl$update_tau <- 1
  bal <- .Call(C_nmf_blocks_balance, env$wq, hs, prior,
               replace(ctrl, "sumsq", list(ctrl$sumsq + hs$fss)))
  env$acc <- runner$w_gibbs(bal$scale, block_wctrl(3, 1, env$wq$tau), keep_fun())
  ctrl$sse <- bal$sse
  ctrl$log_rates <- env$log_rates
  .Call(C_nmf_blocks_objective, env$wq, env$acc$hterms, prior, ctrl)
}

# Welford's update of a running mean and sum of squared deviations (as
# bnmf_keep_sweep in src/nmf_moments.c), in env: the n-th value v.
welford_env <- function(env, mean, m2, v, inv_n) {
  delta <- v - env[[mean]]
  env[[mean]] <- env[[mean]] + delta * inv_n
  env[[m2]] <- env[[m2]] + delta * (v - env[[mean]])
}

# A Gibbs chain by blocks: W, tau and their running moments (and kept W
# draws) here; H[, b], its running moments (and kept draws) and those of W H
# on the block's entries in the blocks' holders, each block drawing from its
# own stream (block_streams(), taken at the chain's start). The same start,
# burn-in, thinning and wh_thin as run_chain() in memory. W H's moments are
# kept on the entries the fit in memory keeps (every entry of a dense
# matrix, the stored ones of a dgCMatrix); none for a DelayedMatrix, whose
# I x J (or nnz) moments would not fit in memory at the scales that read it
# by blocks.
gaussian_gibbs_blocks_chain <- function(task, job) {
  s <- job$settings
  runner <- job$runner
  data <- job$data
  prior <- job$prior_c
  I <- data$dims[1L]; J <- data$dims[2L]; K <- data$dims[3L]
  seeds <- block_streams(length(runner$cols))
  st0 <- gaussian_blocks_start(task, job)
  start <- st0$start
  keep_wh <- !is_delayed(job$X)
  keep_draws <- s$keep == "draws"
  wh_thin <- s$wh_thin %||% 1L
  sparse <- inherits(job$X, "dgCMatrix")
  states <- lapply(runner$cols, function(r) {
    j <- r[1L]:r[2L]
    nwh <- if (!keep_wh) 0 else if (sparse) {
      job$X@p[r[2L] + 1L] - job$X@p[r[1L]]
    } else I * length(j)
    list(H = st0$H0[, j, drop = FALSE], H_mean = numeric(K * length(j)),
         H_m2 = numeric(K * length(j)), WH_mean = numeric(nwh), WH_m2 = numeric(nwh))
  })
  runner$gibbs_init(states, prior$lamH, seeds, keep_draws, st0$W0, st0$tau0)
  ctrl <- c(st0$ctrl0, list(rule = 3))
  env <- new.env(parent = emptyenv())
  env$wq <- list(W = as.double(st0$W0) + 0, tau = as.double(st0$tau0) + 0)
  env$log_rates <- st0$log_rates(prior)
  env$acc <- runner$w_step(NULL, block_wctrl(3, 0, st0$tau0))
  # the master's running moments and counts (bnmf_keep_sweep's)
  mom <- new.env(parent = emptyenv())
  mom$W_mean <- numeric(I * K); mom$W_m2 <- numeric(I * K)
  mom$tau_mean <- 0; mom$tau_m2 <- 0
  n_kept <- 0
  n_wh <- 0
  wh_wait <- as.double(start$wh_wait %||% 0)
  prev <- if (!is.null(start$logpost)) start$logpost else -Inf
  sweep <- function(n, accumulate) {
    tr <- matrix(0, n, 4)
    Wd <- matrix(0, I * K, if (accumulate && keep_draws) n %/% s$thin else 0L)
    for (i in seq_len(n)) {
      kept <- accumulate && i %% s$thin == 0L
      # what the blocks keep of this sweep, once W is final (after the
      # scale move, in gaussian_gibbs_block_sweep)
      keep_fun <- function() {
        if (!kept) return(NULL)
        n_kept <<- n_kept + 1
        inv_wh <- 0
        if (keep_wh) {
          if (wh_wait <= 0) {
            n_wh <<- n_wh + 1
            inv_wh <- 1 / n_wh
            wh_wait <<- wh_thin - 1
          } else {
            wh_wait <<- wh_wait - 1
          }
        }
        list(W = env$wq$W, ctrl = list(inv_n = 1 / n_kept, inv_wh = inv_wh))
      }
      row <- gaussian_gibbs_block_sweep(env, runner, prior, ctrl, keep_fun)
      tr[i, ] <- row
      prev <<- row[3L]
      if (kept) {
        inv_n <- 1 / n_kept
        welford_env(mom, "W_mean", "W_m2", env$wq$W, inv_n)
        welford_env(mom, "tau_mean", "tau_m2", env$wq$tau, inv_n)
        if (keep_draws) Wd[, i %/% s$thin] <- env$wq$W
      }
    }
    list(trace = tr, converged = FALSE, W_draws = Wd)
  }
  ch <- run_chunks(sweep, "gibbs", s$iter, s$burnin, s$thin, job$chain_progress, task$label,
                   draws = "W_draws")
  # the blocks' parts, in block order: H[, b] and its moments are K x J_b
  # (column-major, so their concatenation is H's), W H's follow X's order
  bs <- runner$gibbs_states()
  cat_of <- function(nm) unlist(lapply(bs, `[[`, nm), use.names = FALSE)
  state <- list(W = matrix(env$wq$W, I, K), H = matrix(cat_of("H"), K, J),
                tau = env$wq$tau, logpost = prev, n_kept = n_kept,
                W_mean = mom$W_mean, W_m2 = mom$W_m2,
                H_mean = cat_of("H_mean"), H_m2 = cat_of("H_m2"),
                tau_mean = mom$tau_mean, tau_m2 = mom$tau_m2,
                WH_mean = cat_of("WH_mean"), WH_m2 = cat_of("WH_m2"),
                n_wh = n_wh, wh_wait = wh_wait)
  W_draws <- ch$draws$W_draws
  H_draws <- if (!is.null(W_draws)) do.call(rbind, lapply(bs, `[[`, "draws"))
  list(state = state, trace = ch$trace, W_draws = W_draws, H_draws = H_draws, converged = FALSE,
       latent = cat_of("fill") %||% numeric(), seed = task_stream())
}
