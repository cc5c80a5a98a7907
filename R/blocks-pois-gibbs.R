# Poisson Gibbs sampling by blocks of samples: the blocks' sources and
# holders are those of Poisson VB (R/blocks.R); the C side is in
# src/pois_gibbs.c ("Gibbs sampling by blocks of samples"). A sweep is W's
# draw here (the chain's stream), then one call per block (each draws its
# H[, b] given W, then splits its counts given W and H[, b], on its own
# stream, and returns the sums of the chain's next steps), then lambda's
# draw (ARD) and the sweep's trace from the blocks' sums in block order.

# ---- the holders' side ----------------------------------------------------------

# The holder's blocks' states (`states`: list(H, H_sum, H_sq, ZH) a block,
# K x J_b), their streams (`seeds`) and, with `draws`, an empty list of kept
# draws of H[, b] a block. ZH_b, the split of the block's counts, is NULL
# at a chain's start (zeros: its first call splits before it draws) and the
# last split of a continued chain.
pgholder_init <- function(key, states, seeds, draws) {
  h <- get(key, envir = block_store)
  h$states <- lapply(states, function(s) {
    s$ZH <- s$ZH %||% numeric(length(s$H))
    lapply(s[c("H", "H_sum", "H_sq", "ZH")], function(z) as.double(z) + 0)
  })
  h$seeds <- seeds
  h$draws <- if (draws) rep(list(list()), length(states))
  invisible(NULL)
}

# The map over the holder's blocks, in their order: each draws H[, b]
# (draw = TRUE; keep = TRUE enters it in the running sums and kept draws)
# and splits its counts, from its own stream (with_stream()), and returns
# its sums.
pgholder_step <- function(key, wq, prior_c, draw, keep) {
  h <- get(key, envir = block_store)
  ctrl <- list(draw = as.double(draw), keep = as.double(keep))
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    ctrl$known <- h$known[[b]]
    r <- with_stream(h$seeds[[b]], function() {
      .Call(C_pois_gibbs_block, h$states[[b]], blk$data, blk$x, prior_c, wq, ctrl)
    })
    h$seeds[[b]] <- r$seed
    st <- r$value
    h$known[[b]] <- st$known
    st$known <- NULL
    if (keep && !is.null(h$draws)) {
      h$draws[[b]][[length(h$draws[[b]]) + 1L]] <- h$states[[b]]$H + 0
    }
    st
  })
}

# The holder's blocks' states, streams and kept draws, in their order.
pgholder_states <- function(key) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$states), function(b) {
    list(state = h$states[[b]], seed = h$seeds[[b]],
         draws = if (!is.null(h$draws)) h$draws[[b]])
  })
}

# ---- the runner -----------------------------------------------------------------

# The Poisson Gibbs runner: block_runner()'s holders (this process or the
# workers of `cluster`) with the steps of the sampler. Returns block_runner()'s
# list with init(H, H_sum, H_sq, ZH, seeds, draws), step(wq, prior_c, draw,
# keep) (the blocks' sums added in block order) and gather() (H, H_sum,
# H_sq, ZH (K x J), H_draws (K J x kept draws, or NULL) and the blocks'
# streams).
pois_gibbs_block_runner <- function(src, K, cluster = NULL) {
  base <- block_runner(src, K, cluster)
  owner <- base$owner
  cols <- base$cols
  I <- src$I
  call_all <- base$call_all
  by_worker <- function(...) {
    parts <- list(...)
    if (is.null(cluster)) return(list(parts))
    lapply(owner, function(o) lapply(parts, function(p) p[o]))
  }
  base$init <- function(H, H_sum, H_sq, ZH, seeds, draws) {
    states <- lapply(cols, function(r) {
      j <- r[1L]:r[2L]
      list(H = H[, j, drop = FALSE], H_sum = H_sum[, j, drop = FALSE],
           H_sq = H_sq[, j, drop = FALSE], ZH = if (!is.null(ZH)) ZH[, j, drop = FALSE])
    })
    call_all(pgholder_init, list(draws = draws), by_worker(states = states, seeds = seeds))
    invisible(NULL)
  }
  base$step <- function(wq, prior_c, draw, keep) {
    res <- call_all(pgholder_step, list(wq = wq, prior_c = prior_c, draw = draw, keep = keep))
    # the reduce: the blocks' sums in block order (0 + x is x: one block
    # gives its own sums)
    acc <- list(ZWt = numeric(I * K), RS = numeric(I * K), SH = numeric(K), LH = numeric(K),
                lik = 0, lfact = 0, wh = 0)
    for (w in res) for (st in w) for (nm in names(acc)) acc[[nm]] <- acc[[nm]] + st[[nm]]
    acc
  }
  base$gather <- function() {
    bl <- unlist(call_all(pgholder_states, list()), recursive = FALSE)
    mats <- function(nm) do.call(cbind, lapply(bl, function(b) matrix(b$state[[nm]], nrow = K)))
    kept <- length(bl[[1L]]$draws)
    list(H = mats("H"), H_sum = mats("H_sum"), H_sq = mats("H_sq"), ZH = mats("ZH"),
         H_draws = if (kept) do.call(rbind, lapply(bl, function(b) do.call(cbind, b$draws))),
         seeds = lapply(bl, `[[`, "seed"))
  }
  base
}

# ---- the chain ------------------------------------------------------------------

# A Gibbs chain by blocks: W (and lambda), their running sums and kept
# draws here, H[, b], its running sums and kept draws and the split of the
# counts in the blocks' holders; the sweeps of pois_gibbs() in C (Z, W, H,
# lambda), each block on its own stream (block_streams()), the chain's
# draws on the chain's. The state keeps the blocks' streams, their last
# split (ZH) and its sums (`split`), so that update() continues the chain as
# one longer run would have. No running sums of W H entry by entry (the
# fit's fitted values are those of the posterior means, as for sparse data
# in one process).
pois_gibbs_blocks_chain <- function(task, job) {
  s <- job$settings
  runner <- job$runner
  I <- job$dims[1L]; J <- job$dims[2L]; K <- job$rank
  st <- task$resume
  # the blocks' streams: the chain's substreams, drawn before anything else
  # (a continued chain keeps its blocks' streams)
  seeds <- st$block_seeds %||% block_streams(length(runner$cols))
  if (is.null(st)) {
    st0 <- pois_start(task, job)
    st <- pois_gibbs_state(st0$W, st0$H, FALSE, job$model$prior)
  }
  ard <- !is.null(st$lambda)
  ws <- lapply(st[c("W", "W_sum", "W_sq", "n_kept", if (ard) c("lambda", "lambda_sum"))],
               function(z) as.double(z) + 0)
  keep_draws <- s$keep == "draws"
  runner$init(matrix(st$H, K, J), matrix(st$H_sum, K, J), matrix(st$H_sq, K, J),
              if (!is.null(st$split)) matrix(st$ZH, K, J), seeds, keep_draws)
  acc <- st$split
  st <- NULL
  dims <- as.double(c(I, J, K))
  pc <- job$prior_c
  wq <- function() if (ard) ws[c("W", "lambda")] else ws["W"]
  # a chain's first call only splits the counts, given the starting W and H
  if (is.null(acc)) acc <- runner$step(wq(), pc, FALSE, FALSE)
  ch <- run_chunks(function(n, accumulate) {
    thin <- if (accumulate) s$thin else 1L
    tr <- matrix(0, n, 2L)
    Wd <- if (accumulate && keep_draws) matrix(0, I * K, n %/% thin)
    for (i in seq_len(n)) {
      keep <- accumulate && i %% thin == 0L
      .Call(C_pois_gibbs_wstep, ws, acc, pc, dims)
      acc <<- runner$step(wq(), pc, TRUE, keep)
      tr[i, ] <- .Call(C_pois_gibbs_finish, ws, acc, pc, dims, list(keep = as.double(keep)))
      if (keep && keep_draws) Wd[, i %/% thin] <- ws$W
    }
    list(trace = tr, W_draws = Wd)
  }, "gibbs", s$iter, s$burnin, s$thin, job$chain_progress, task$label,
  draws = "W_draws", trace_names = c("loglik", "logpost"))
  h <- runner$gather()
  tr <- pois_trace(ch$trace)
  st <- list(W = matrix(ws$W, I, K), H = h$H, logpost = tr$logpost[nrow(tr)] + 0,
             n_kept = ws$n_kept, W_sum = ws$W_sum, W_sq = ws$W_sq, H_sum = as.vector(h$H_sum),
             H_sq = as.vector(h$H_sq), WH_sum = numeric(0))
  if (ard) {
    st$lambda <- ws$lambda
    st$lambda_sum <- ws$lambda_sum
  }
  st$block_seeds <- h$seeds
  st$ZH <- as.vector(h$ZH)
  st$split <- acc
  list(state = st, seed = task_stream(), W_draws = ch$draws$W_draws,
       H_draws = if (keep_draws) h$H_draws, trace = tr)
}
