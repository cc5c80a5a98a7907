# Poisson VB by blocks of samples: the data in column blocks, read from
# disk block by block each sweep (a DelayedMatrix, an HDF5Matrix, a
# TENxMatrix) or held by the workers of a `parallel` cluster. A sweep is a
# map over the blocks (each updates its q(H[, b]) from its own columns and
# returns the statistics of W's update) and a reduce (their sums, in block
# order, and q(W)); the C side is in src/pois_vb.c ("VB by blocks of
# samples"). Poisson Gibbs by blocks runs on the same holders
# (R/blocks-pois-gibbs.R).

#' @section Data in blocks, out of memory and on a cluster:
#' With `likelihood = "poisson"` and `method = "vb"` (and Gaussian NMF with
#' methods `"vb"` and `"icm"`, below), every sweep is a map
#' over blocks of samples (columns): given `q(W)`, a block updates `q(H)` of
#' its own columns from those columns of `X` alone and returns the sums
#' that the update of `q(W)` needs (and its part of the ELBO); the update of
#' `q(W)` adds them up, block after block in their order. So the data need
#' not be in memory, nor on one machine:
#'
#' * A `DelayedMatrix` (such as an `HDF5Matrix` or a `TENxMatrix` of the
#'   HDF5Array package), bare or as the `assay` of a
#'   `SummarizedExperiment` / `SingleCellExperiment`, is read block by block
#'   in every sweep and never whole: memory holds the factors and one block.
#'   A `TENxMatrix` (the 10x Genomics HDF5 layout: a group with `data`,
#'   `indices`, `indptr`, `shape`) is read directly with rhdf5, each block's
#'   ranges of `data` and `indices` given by `indptr`; other `DelayedMatrix`
#'   objects through `X[, cols]`. Other methods and likelihoods read a
#'   `DelayedMatrix` into memory.
#' * `cluster`, a cluster of the parallel package
#'   (`parallel::makePSOCKcluster()`, on one or many hosts, with bnmf
#'   installed on each), spreads the blocks over its workers: each worker
#'   reads its blocks once (a `TENxMatrix` or another `DelayedMatrix` from
#'   the file, which must be readable at the same path on the workers;
#'   otherwise the columns are sent to it) and keeps them, and answers one
#'   call per sweep. A worker that stops answering ends the fit with an
#'   error (class `bnmf_error_cluster`) naming it. Make the cluster after
#'   `options(socketOptions = "no-delay")` (see [socketConnection()]):
#'   without it, Nagle's algorithm on the master's sockets can hold each
#'   call for ~50 ms, the whole time of a sweep on small data.
#' * `blocks` sets the number of blocks (of consecutive columns, of about
#'   equal sizes).
#'
#' For a given partition the numbers are the same bit for bit wherever the
#' blocks are read or held. One block gives the `q(W)` and `q(H)` of the fit
#' in memory and its ELBO to rounding: in memory the pass that forms the
#' sums of `q(W)`'s update runs over the counts by rows and adds up the log
#' likelihood in that order.
#'
#' With `likelihood = "poisson"` and `method = "gibbs"`, `blocks` or
#' `cluster` samples by blocks in the same way (dense data with or without
#' `NA`, a `dgCMatrix`, a `DelayedMatrix`, a `TENxMatrix`; Gamma priors or
#' `ard()`): a sweep is one call per block, which draws its `H[, b]` given
#' the current `W` (and `lambda`), splits its counts over the factors given
#' `W` and the new `H[, b]`, keeps its split, and returns the sums of `W`'s
#' next draw; `W` (then, with ARD, `lambda`) is drawn from their sums. Each
#' block draws from its own random number stream, a substream
#' (`parallel::nextRNGSubStream()`) of its chain's L'Ecuyer-CMRG stream, kept
#' with the block (and saved in the fit with the blocks' last split, so that
#' `update()` continues as one longer run would have),
#' and `W` from the chain's stream: so for a given partition the draws do
#' not depend on where the blocks are read or held, but they are not those
#' of the sampler in memory (the same posterior, other random numbers). The
#' running sums and kept draws of `H` stay with the blocks until the end;
#' there are no running sums of `W H` entry by entry, so `fitted()` gives
#' the product of the posterior means (as for a `dgCMatrix` in memory).
#' `update()` continues by the same blocks in this process. A
#' `DelayedMatrix` is read by blocks only when `blocks` or `cluster` is given.
#'
#' Gaussian NMF with methods `"vb"` and `"icm"` (exponential priors) is
#' fitted by blocks in the same way when `blocks` or `cluster` is
#' given: given `W` (VB: `q(W)`) and `tau`, each block updates `H` (`q(H)`)
#' of its own columns and returns `X[, b] H[, b]'`, the (expected) Gram
#' matrix of `H[, b]`, its part of the residual sum of squares and of the
#' objective; the update of `W` uses their sums. A sweep makes two calls per
#' block (the second rescales `H[, b]` after the balance of the factors'
#' scales, which needs sums over all blocks, and returns the products). A
#' `DelayedMatrix` is read by blocks only when `blocks` or `cluster` is
#' given. `prior = ard()` is refused (class `bnmf_error_unsupported`): fit
#' such data in memory. The sum of squares is
#' always taken from its trace identity (in memory, a near-exact fit whose
#' identity cancels sums it entry by entry instead).
#'
#' Missing entries (`NA`; in a dense matrix, a `dgCMatrix` or a file) are
#' masked or imputed by blocks as in memory (`icm_control(missing =)`,
#' `vb_control(missing =)`; `"auto"` chooses on the same shares). Masked,
#' each block returns, for every row with missing entries, its part of the
#' row's Gram matrix (the sum over its missing columns of `E[h_j h_j']`, or
#' over its observed ones for a row missing more than half its entries:
#' `K^2` values a row), which the update of `W` takes from the whole one.
#' Imputed, each block keeps the values of its missing entries, `W H` (VB:
#' `E[W] E[H]`) of the end of the sweep before, and VB's update of `W`
#' corrects each row for them with sums the blocks return (`3 K` values a
#' row). The sweeps of least squares of a random start mask, as in memory.
#' `fit$chains[[c]]$latent` holds the imputed values (zeros when masked),
#' and `update()` continues in memory from them.
#'
#' Gaussian NMF with `method = "gibbs"` (exponential priors) is sampled by
#' blocks in the same way: a sweep draws `W` from the blocks'
#' summed products, each block draws `H` of its own columns given `W` and
#' `tau`, then the exact move along the factors' scales and `tau`'s draw
#' use the blocks' sums, and each block rescales its `H` and returns its
#' products (two calls per block a sweep). Each block draws from its own
#' random stream, a substream of the chain's L'Ecuyer-CMRG stream kept with
#' the block between calls; `W`, the scales and `tau` are drawn from the
#' chain's stream. So for a given partition and seed the draws are the same
#' bit for bit wherever the blocks are read or held, but they are another
#' chain than the sampler in memory (which draws everything from one
#' stream): the same posterior, other draws. The fit is the usual Gibbs fit;
#' missing entries are latent variables, as in memory: each block keeps
#' their current values, draws them anew around `W H` after `tau` in every
#' sweep (from its stream), and `tau` is drawn given the observed entries
#' only. The blocks keep the running moments (and with `keep = "draws"` the
#' draws) of their `H`, gathered at the end, and those of `W H` on the
#' entries the fit in memory keeps them (every entry of a dense matrix, the
#' stored ones of a `dgCMatrix`); a `DelayedMatrix` keeps none (they would
#' take I x J values): its fitted values are the average of `W H` over the
#' kept draws, else the product of the posterior means, and
#' `predict(se.fit = TRUE)` is refused. `update()` continues a Gaussian fit
#' of data in memory without blocks (from its last state and its chain's
#' stream), and refuses one of a `DelayedMatrix` (class
#' `bnmf_error_unsupported`).
#'
#' The fit is the usual VB (or ICM) fit (same class and fields; `fit$X` is
#' the data as given). For a given partition the numbers do not depend on where the
#' blocks are read or held (memory, disk, cluster): they are the same bit for
#' bit. One block gives the numbers of the fit of `X` in memory (complete
#' data; with missing entries, to rounding: a masked row's Gram matrix is
#' the whole one less the blocks' sums, an imputed `W H` is taken before the
#' balance of the scales); another
#' partition adds the blocks' sums in another order and agrees with it to
#' rounding (relative differences of the order of 1e-13 after 100 sweeps).
#' Several `chains` run one after the other on the same blocks.
#' @rdname bnmf
#' @name bnmf
NULL

# Open the holders of a fit's blocks (`make_runner(src, rank, cluster)`:
# this process or the workers of `job$cluster`), which read each block once
# and summarise it; `finish(job, sm)` checks the summaries (one row
# a block) and sets the job's data. The holders are closed if that fails,
# else when bnmf() returns.
open_blocks <- function(job, make_runner, finish) {
  job$blocks <- check_blocks(job$blocks, ncol(job$X))
  src <- block_source(job$X, job$blocks, length(job$cluster))
  runner <- make_runner(src, job$rank, job$cluster)
  ok <- FALSE
  on.exit(if (!ok) runner$close(), add = TRUE)
  # (the runner, for what `finish` asks of the blocks beyond their summaries)
  job$runner_open <- runner
  job <- finish(job, do.call(rbind, runner$summaries))
  job$runner_open <- NULL
  job$dims <- c(nrow(job$X), ncol(job$X))
  job$runner <- runner
  job$settings$blocks <- length(runner$cols) # the partition, for update()
  ok <- TRUE
  job
}

# ---- the partition and the sources of the blocks --------------------------------

# Is M a DelayedArray (read by blocks by the Poisson VB fit)?
is_delayed <- function(M) methods::is(M, "DelayedArray")

# `blocks`: NULL or a whole number of blocks in [1, J].
check_blocks <- function(blocks, J) {
  if (is.null(blocks)) return(NULL)
  if (!is.numeric(blocks) || length(blocks) != 1L || is.na(blocks) || blocks != round(blocks) ||
      blocks < 1 || blocks > J) {
    abort_input(sprintf("`blocks` must be a whole number of column blocks from 1 to ncol(X) = %d.", J))
  }
  as.integer(blocks)
}

# `cluster`: NULL or a cluster of the parallel package.
check_cluster <- function(cluster) {
  if (is.null(cluster)) return(NULL)
  if (!inherits(cluster, "cluster") || length(cluster) < 1L) {
    abort_input("`cluster` must be a cluster of the parallel package (e.g. `parallel::makePSOCKcluster(2)`), or NULL.")
  }
  cluster
}

# The first and last columns of n blocks of consecutive columns of about
# equal sizes.
block_ranges <- function(J, n) {
  b <- round(seq(0, J, length.out = n + 1L))
  lapply(seq_len(n), function(t) c(b[t] + 1, b[t + 1L]))
}

# Is X a TENxMatrix of the 10x HDF5 layout without delayed operations (read
# directly with rhdf5)?
is_tenx <- function(X) {
  methods::is(X, "TENxMatrix") && requireNamespace("rhdf5", quietly = TRUE) &&
    DelayedArray::isPristine(X) && methods::is(X@seed, "TENxMatrixSeed")
}

# Where the blocks of X come from: list(type, I, J, specs = a list of
# serialisable block specifications for read_block()). `n`: the number of
# blocks (NULL: one for a matrix in memory, blocks of about
# DelayedArray::getAutoBlockSize() bytes for a DelayedMatrix; at least one
# per worker of a cluster).
block_source <- function(X, n, n_workers) {
  I <- nrow(X); J <- ncol(X)
  if (is_tenx(X)) {
    file <- X@seed@filepath
    group <- X@seed@group
    indptr <- as.double(rhdf5::h5read(file, paste0(group, "/indptr"), bit64conversion = "double"))
    if (length(indptr) != J + 1L) abort_input("`X`: the 10x file's `indptr` does not match its dimensions.")
    n <- n %||% max(1L, ceiling(12 * indptr[J + 1L] / DelayedArray::getAutoBlockSize()))
    n <- min(J, max(n, n_workers))
    specs <- lapply(block_ranges(J, n), function(r) {
      list(type = "tenx", file = file, group = group, I = I, cols = r,
           indptr = indptr[r[1L]:(r[2L] + 1L)])
    })
    return(list(type = "tenx", I = I, J = J, specs = specs))
  }
  if (is_delayed(X)) {
    n <- n %||% max(1L, ceiling(8 * as.double(I) * J / DelayedArray::getAutoBlockSize()))
    n <- min(J, max(n, n_workers))
    specs <- lapply(block_ranges(J, n), function(r) list(type = "delayed", X = X, cols = r))
    return(list(type = "delayed", I = I, J = J, specs = specs))
  }
  n <- min(J, max(n %||% 1L, n_workers))
  specs <- lapply(block_ranges(J, n), function(r) {
    Xb <- X[, r[1L]:r[2L], drop = FALSE]
    dimnames(Xb) <- list(NULL, NULL)
    list(type = "memory", X = Xb, cols = r)
  })
  list(type = "memory", I = I, J = J, specs = specs)
}

# The columns of a block: a dgCMatrix or a dense double matrix, no dimnames.
read_block <- function(spec) {
  r <- spec$cols
  switch(spec$type,
    memory = spec$X,
    tenx = read_tenx_block(spec),
    delayed = {
      Xb <- spec$X[, r[1L]:r[2L], drop = FALSE]
      out <- if (DelayedArray::is_sparse(Xb)) methods::as(Xb, "dgCMatrix") else as.matrix(Xb)
      dimnames(out) <- list(NULL, NULL)
      out
    })
}

# Columns r of a 10x HDF5 file: the ranges of `data` and `indices` that
# `indptr` gives, read with rhdf5, as a dgCMatrix.
read_tenx_block <- function(spec) {
  p <- spec$indptr
  off <- p[1L]
  nnz <- p[length(p)] - off
  nb <- spec$cols[2L] - spec$cols[1L] + 1
  if (nnz > 0) {
    rd <- function(what) {
      rhdf5::h5read(spec$file, paste0(spec$group, "/", what), start = off + 1, count = nnz,
                    bit64conversion = "double")
    }
    x <- as.double(rd("data"))
    i <- as.integer(rd("indices"))
  } else {
    x <- double()
    i <- integer()
  }
  methods::new("dgCMatrix", i = i, p = as.integer(p - off), x = x,
               Dim = as.integer(c(spec$I, nb)))
}

# A block ready for the sweeps: its data (prepare_data()) and values, and
# (check = TRUE, when it is first read) what the checks of the counts need:
# sum, missing, positive, bad values.
load_block <- function(spec, K, check = TRUE, no_na = FALSE) {
  Xb <- read_block(spec)
  if (!inherits(Xb, "dgCMatrix")) storage.mode(Xb) <- "double"
  vals <- if (inherits(Xb, "dgCMatrix")) Xb@x else Xb
  # read again in a sweep (check = FALSE): the block's sums, used only by
  # the checks and the fit's set-up, are not taken again, nor the positions
  # of its missing entries when its first reading found none (`no_na`)
  data <- prepare_data(Xb, K, sums = check, no_na = no_na)
  list(data = data, x = vals,
       summary = if (check) {
         c(sum = sum(vals, na.rm = TRUE), nmiss = sum(is.na(vals)),
           sumsq = data$sumsq_obs, nonfinite = sum(is.infinite(vals)),
           neg = sum(vals < 0, na.rm = TRUE),
           pos = isTRUE(any(vals > 0, na.rm = TRUE)),
           bad = isTRUE(any(vals < 0, na.rm = TRUE)) ||
             isTRUE(any(vals %% 1 != 0, na.rm = TRUE)))
       })
}

# ---- the holders of blocks: this process, or each worker of a cluster ------------

# Holders of blocks live in this environment, by key, in this process and
# in each worker of a cluster.
block_store <- new.env(parent = emptyenv())

# Set up a holder of the blocks `specs` under `key`; `keep`: read each
# block now and keep it (else read it in every sweep). Returns each block's
# summary (load_block()).
holder_load <- function(key, specs, K, keep) {
  h <- new.env(parent = emptyenv())
  h$specs <- specs
  h$K <- K
  h$keep <- keep
  h$blocks <- vector("list", length(specs))
  h$known <- rep(list(c(NA_real_, NA_real_)), length(specs))
  h$states <- vector("list", length(specs))
  sums <- lapply(seq_along(specs), function(b) {
    blk <- load_block(specs[[b]], K)
    if (keep) {
      h$blocks[[b]] <- blk[c("data", "x")]
      h$specs[[b]]$X <- NULL # the block is held: no second copy
    }
    blk$summary
  })
  h$no_na <- vapply(sums, function(sm) sm[["nmiss"]] == 0, logical(1))
  assign(key, h, envir = block_store)
  sums
}

# Block b of holder h: held, or read again from its source.
holder_block <- function(h, b) {
  h$blocks[[b]] %||% load_block(h$specs[[b]], h$K, check = FALSE, no_na = h$no_na[[b]])
}

# q(H) of the holder's blocks: `states` a list of list(shape_H, rate_H, H),
# one per block (K x J_b values); adds each block's LH = exp(E log H). The
# sweeps update these in place: plain double vectors are kept as given
# (init() cuts them for the holder alone: no second copy of q(H)), others
# copied.
holder_init <- function(key, states) {
  h <- get(key, envir = block_store)
  own <- function(z) if (is.double(z) && is.null(attributes(z))) z else as.double(z) + 0
  h$states <- lapply(states, function(s) {
    s <- lapply(s[c("shape_H", "rate_H", "H")], own)
    s$LH <- .Call(C_pois_vb_logmeans, s$shape_H, s$rate_H,
                  as.double(c(h$K, length(s$H) / h$K)), FALSE)
    s
  })
  invisible(NULL)
}

# The map over the holder's blocks, in their order: each updates its q(H)
# (update = TRUE) and returns its statistics.
holder_step <- function(key, wq, prior_c, update, threads) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    st <- .Call(C_pois_vb_block, h$states[[b]], blk$data, blk$x, prior_c, wq,
                list(update = as.double(update), threads = as.double(threads),
                     known = h$known[[b]]))
    h$known[[b]] <- st$known
    st$known <- NULL
    st
  })
}

# fun(X_b, args, cols_b) on each of the holder's blocks, in their order;
# X_b the block's values as a dgCMatrix or a matrix (NA as read), cols_b
# its first and last column.
holder_map <- function(key, fun, args) {
  h <- get(key, envir = block_store)
  lapply(seq_along(h$specs), function(b) {
    blk <- holder_block(h, b)
    d <- blk$data$dims
    Xb <- if (blk$data$sparse == 1L) {
      methods::new("dgCMatrix", i = blk$data$xi, p = blk$data$xp, x = as.double(blk$x),
                   Dim = d[1:2])
    } else matrix(blk$x, d[1L], d[2L])
    fun(Xb, args, h$specs[[b]]$cols)
  })
}

# The q(H) of the holder's blocks, in their order. `release`: the holder
# lets go of them and of their exp(E log H) (the chain's end: a chain
# after it starts with init()), so that in this process the caller holds
# the only reference and each block's arrays can be freed as they are
# copied out.
holder_states <- function(key, release = FALSE) {
  h <- get(key, envir = block_store)
  out <- lapply(h$states, function(s) s[c("shape_H", "rate_H", "H")])
  if (release) h$states <- vector("list", length(h$states))
  out
}

# ---- the blocks' own streams of random numbers (samplers by blocks) --------------

# The streams of a chain's n blocks: the b-th substream (b = 1..n) of the
# chain's L'Ecuyer-CMRG stream (the session's .Random.seed in the chain's
# task), each 2^76 draws past the one before it, so that a block's draws
# do not depend on where it is held (this process, a worker) nor on the
# other blocks. The chain's own draws (W, tau, the scales) stay on the
# chain's stream, whose first 2^76 draws no block uses.
block_streams <- function(n) {
  s <- task_stream()
  if (length(s) != 7L || s[1L] %% 100L != 7L) {
    stop("bnmf internal error: the draws by blocks need the chain's L'Ecuyer-CMRG stream")
  }
  out <- vector("list", n)
  for (b in seq_len(n)) {
    s <- parallel::nextRNGSubStream(s)
    out[[b]] <- s
  }
  out
}

# fun() with `seed` as R's random number state (.Random.seed swapped in,
# and the session's put back after, also on an error). Returns
# list(value = fun()'s value, seed = the state after fun()).
with_stream <- function(seed, fun) {
  env <- globalenv()
  had <- exists(".Random.seed", envir = env, inherits = FALSE)
  old <- if (had) get(".Random.seed", envir = env, inherits = FALSE)
  on.exit(if (had) assign(".Random.seed", old, envir = env)
          else if (exists(".Random.seed", envir = env, inherits = FALSE))
            rm(".Random.seed", envir = env), add = TRUE)
  assign(".Random.seed", seed, envir = env)
  value <- fun()
  list(value = value, seed = get(".Random.seed", envir = env, inherits = FALSE))
}

holder_drop <- function(key) {
  if (exists(key, envir = block_store, inherits = FALSE)) rm(list = key, envir = block_store)
  invisible(NULL)
}

# ---- the runner: the blocks in this process or on a cluster ---------------------

# The blocks of `src` in holders: this process (cluster NULL; blocks in
# memory kept, those of a file read in every sweep) or the workers of
# `cluster` (consecutive blocks per worker, kept). Returns a list of
# functions: summaries(), init(H0), step(wq, prior_c, update, threads),
# gather(), close(), map(fun, args), call_all(fun, args, per_worker), and
# the blocks' column ranges, the holders' key and which blocks each holds.
block_runner <- function(src, K, cluster = NULL) {
  # a key unique to this fit, made without random numbers (they would move
  # the session's stream, and with it the fit's)
  block_store$.count <- (block_store$.count %||% 0) + 1
  key <- sprintf("bnmf-%s-%d-%.0f", Sys.info()[["nodename"]], Sys.getpid(), block_store$.count)
  n <- length(src$specs)
  cols <- lapply(src$specs, `[[`, "cols")
  if (is.null(cluster)) {
    sums <- holder_load(key, src$specs, K, keep = src$type == "memory")
    owner <- list(seq_len(n))
  } else {
    nw <- length(cluster)
    owner <- lapply(parallel::splitIndices(n, nw), as.integer)
    sums <- unlist(cluster_call(cluster, holder_load, key, list(K = K, keep = TRUE),
                                lapply(owner, function(o) list(specs = src$specs[o]))),
                   recursive = FALSE)
  }
  per_worker_states <- function(states) lapply(owner, function(o) list(states = states[o]))
  # fun(key, <args>, <per_worker[[w]]>) on each holder (this process, or
  # every worker), results in holder order
  call_all <- function(fun, args, per_worker = NULL) {
    if (is.null(cluster)) return(list(do.call(fun, c(list(key), args, per_worker[[1L]]))))
    cluster_call(cluster, fun, key, args, per_worker)
  }
  list(
    key = key,
    owner = owner,
    call_all = call_all,
    cols = cols,
    summaries = sums,
    # fun(X_b, args, cols_b) on every block (its counts as read: a
    # dgCMatrix or a matrix; its first and last column), the results in
    # block order
    map = function(fun, args = list()) {
      unlist(call_all(holder_map, list(fun = fun, args = args)), recursive = FALSE)
    },
    # the blocks' q(H) from K x J arrays: each block's columns cut as a new
    # plain vector (the holders keep it), each array let go of once cut
    init = function(shape_H, rate_H, H) {
      cut <- function(M) lapply(cols, function(r) M[(K * (r[1L] - 1) + 1):(K * r[2L])])
      sh <- cut(shape_H)
      rm(shape_H)
      rh <- cut(rate_H)
      rm(rate_H)
      mh <- cut(H)
      rm(H)
      states <- lapply(seq_len(n), function(b) list(shape_H = sh[[b]], rate_H = rh[[b]], H = mh[[b]]))
      rm(sh, rh, mh)
      call_all(holder_init, list(), per_worker_states(states))
      invisible(NULL)
    },
    step = function(wq, prior_c, update, threads) {
      res <- call_all(holder_step, list(wq = wq, prior_c = prior_c, update = update,
                                        threads = threads))
      # the reduce: the blocks' sums in block order
      acc <- list(NWt = numeric(length(wq$W)), RS = numeric(length(wq$W)),
                  TH = numeric(length(wq$El)), SH = numeric(length(wq$El)),
                  lik = numeric(1), lfact = numeric(1), wh = numeric(1), eH = numeric(1))
      for (w in res) for (st in w) .Call(C_pois_vb_add, acc, st)
      acc
    },
    # the blocks' q(H) as K x J matrices (the holders let go of theirs):
    # each filled in place, block by block, each block's part dropped once
    # copied (no list of K x J_b copies to bind, no second K x J copy)
    gather = function() {
      st <- unlist(call_all(holder_states, list(release = TRUE)), recursive = FALSE)
      J <- cols[[n]][2L]
      out <- list(shape_H = NULL, rate_H = NULL, H = NULL)
      for (nm in names(out)) {
        M <- matrix(0, K, J)
        for (b in seq_len(n)) {
          M[, cols[[b]][1L]:cols[[b]][2L]] <- st[[b]][[nm]]
          st[[b]][nm] <- list(NULL)
        }
        out[[nm]] <- M
        M <- NULL
      }
      out
    },
    close = function() {
      try(call_all(holder_drop, list()), silent = TRUE)
      invisible(NULL)
    })
}

# A worker's side of cluster_call(). Defined here, not in cluster_call():
# a closure made there carries that call's frame to the workers with it,
# which cost 40 ms a call (of 2 ms) on a 2-worker PSOCK cluster.
cluster_worker <- function(w_args, .fun, .key, .args) do.call(.fun, c(list(.key), .args, w_args))

# fun(key, <args>, <per_worker[[w]]>) on every worker of the cluster, in
# parallel; the results in worker order. A worker that does not answer (it
# died, or its connection broke) ends the fit with an error naming it; an
# error on a worker is passed on with the worker's message.
cluster_call <- function(cl, fun, key, args, per_worker = NULL) {
  w_args <- per_worker %||% rep(list(list()), length(cl))
  out <- tryCatch(
    parallel::clusterApply(cl, w_args, cluster_worker, .fun = fun, .key = key, .args = args),
    error = function(e) e)
  if (!inherits(out, "error")) return(out)
  dead <- which(vapply(seq_along(cl), function(w) {
    inherits(tryCatch(parallel::clusterCall(cl[w], function() TRUE), error = function(e) e),
             "error")
  }, logical(1)))
  if (length(dead)) {
    host <- function(w) cl[[w]]$host %||% "?"
    bnmf_abort("cluster", sprintf(
      "bnmf: worker%s %s of `cluster` (host %s) stopped answering (%s); the fit is abandoned: stop the cluster and make a new one.",
      if (length(dead) > 1L) "s" else "", paste(dead, collapse = ", "),
      paste(unique(vapply(dead, host, "")), collapse = ", "), trimws(conditionMessage(out))))
  }
  bnmf_abort("cluster", sprintf("bnmf: an error on a worker of `cluster`: %s", conditionMessage(out)))
}

# ---- the chain ------------------------------------------------------------------

# A VB chain by blocks: q(W) (and q(lambda)) here, q(H) in the blocks'
# holders; the same sweeps, in the same order, as pois_vb() in C.
pois_vb_blocks_chain <- function(task, job) {
  s <- job$settings
  runner <- job$runner
  I <- job$dims[1L]; J <- job$dims[2L]; K <- job$rank
  q <- task$resume
  st <- NULL
  if (is.null(q)) {
    st <- pois_start(task, job)
    q <- pois_vb_state(st$W, st$H, job$model$prior)
  }
  ard <- !is.null(q$shape_lambda)
  elbo0 <- q$elbo
  dims <- as.double(c(I, J, K))
  wq <- list(shape_W = as.double(q$shape_W) + 0, rate_W = as.double(q$rate_W) + 0,
             W = as.double(q$W) + 0, El = numeric(K), TW = numeric(K), SW = numeric(K),
             eW = numeric(1))
  wq$LWt <- .Call(C_pois_vb_logmeans, wq$shape_W, wq$rate_W, as.double(c(I, K)), TRUE)
  if (ard) {
    wq$shape_lambda <- as.double(q$shape_lambda) + 0
    wq$rate_lambda <- as.double(q$rate_lambda) + 0
  }
  runner$init(matrix(q$shape_H, K, J), matrix(q$rate_H, K, J), matrix(q$H, K, J))
  # q(H) lives in the blocks' holders from here on
  q <- st <- NULL
  threads <- option_threads()
  pc <- job$prior_c
  # the statistics of the starting state, for the first update of q(W)
  acc <- runner$step(wq, pc, FALSE, threads)
  prev <- elbo0
  ch <- run_chunks(function(n, accumulate) {
    tr <- numeric()
    conv <- FALSE
    for (i in seq_len(n)) {
      .Call(C_pois_vb_wstep, wq, acc, pc, dims)
      acc <<- runner$step(wq, pc, TRUE, threads)
      cur <- .Call(C_pois_vb_finish, wq, acc, pc, dims)
      tr <- c(tr, cur)
      conv <- s$tol > 0 && is.finite(prev) && abs(cur - prev) <= s$tol * abs(cur)
      prev <<- cur
      if (conv) break
    }
    list(trace = tr, converged = conv)
  }, "vb", s$iter, 0L, 1L, job$chain_progress, task$label, tol = s$tol,
  trace_names = "logpost")
  h <- runner$gather()
  q <- list(shape_W = matrix(wq$shape_W, I, K), rate_W = matrix(wq$rate_W, I, K),
            shape_H = h$shape_H, rate_H = h$rate_H, W = matrix(wq$W, I, K), H = h$H,
            elbo = prev)
  if (ard) {
    q$shape_lambda <- wq$shape_lambda
    q$rate_lambda <- wq$rate_lambda
  }
  list(state = q, converged = ch$converged, seed = task_stream(),
       trace = pois_trace(ch$trace))
}
