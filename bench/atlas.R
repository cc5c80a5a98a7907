## bench/atlas.R: Poisson VB by blocks from a 10x HDF5 file at atlas scale
## (20,000 genes x 1,000,000 cells, about 1e8 stored counts): the file
## written block by block, the fit's time per sweep, peak memory and
## recovery of the true factors; and a 2-worker cluster against one process,
## beside the machine's ceiling (two independent processes against one).
##
##   R_LIBS=<lib> Rscript bench/atlas.R make                 # the atlas file (2 min)
##   /usr/bin/time -v env R_LIBS=<lib> Rscript bench/atlas.R fit [sweeps] [name] [init]   # 100, atlas, random; 40 s a sweep
##   R_LIBS=<lib> Rscript bench/atlas.R make 5000 100000 small   # the small file for `cluster`
##   R_LIBS=<lib> Rscript bench/atlas.R cluster [rounds] [sweeps]   # default 5 rounds, 10 sweeps
##   R_LIBS=<lib> Rscript bench/atlas.R read [name]   # CPU of a pass of the sweeps' block reads (3 min)
##   R_LIBS=<lib> Rscript bench/atlas.R start [name] [sweeps]   # VB's optimum from random and true starts (6 min)
##   (R_LIBS=<lib> Rscript bench/atlas.R half <sweeps>: the work `cluster` runs
##    alone and as two processes at once, for the ceiling)
##
## Data (`make [genes cells name]`, defaults 20000 1000000 atlas): counts of
## the Poisson NMF model at K = 20, X ~ Poisson(W H). W: Gamma(0.3, 1)
## entries, each gene also given to one of the 20 programmes at random, where
## its entry is multiplied by 10. H: Gamma(0.5, 1) entries times a cell size
## factor exp(N(0, 0.3^2)), all scaled (from 500 cells, by uniroot) so that
## the expected share of non-zeros mean(1 - exp(-W H)) is 0.75%. Drawn by
## blocks of 50,000 cells, never as a dense W H: the count of factor k in
## cell j is Poisson(H[k, j] sum_i W[i, k]), its genes are drawn by
## sample.int(I, n, replace = TRUE, prob = W[, k]) for all cells of the block
## at once, and the (cell, gene) pairs of all factors are counted (radix
## sort of cell * I + gene). Written with rhdf5 to
## $BNMF_ATLAS_DIR/<name>.h5 (default /tmp/bnmf-atlas), group "counts":
## `data` and `indices` (int32, 0-based, sorted within each cell) as
## chunked datasets (chunks of 2^16 values, gzip level 1) extended block by
## block (h5set_extent) and written with h5write(start =, count =);
## `indptr` (doubles, J + 1), `shape` (I, J). The true W and H are saved as
## <name>-truth.rds.
##
## `fit`: bnmf(X ~ nmf(20), likelihood = "poisson", method = "vb", iter =
## sweeps, tol = 0) with X the TENxMatrix of <name>.h5 (default atlas),
## default blocks, one thread (options(bnmf.threads), default 1). The time
## of every sweep is taken from the calls of the blocks' map
## (bnmf:::holder_step, traced: one call before the sweeps for the starting
## statistics, then one a sweep);
## peak memory from /proc/self/status (VmHWM) and /usr/bin/time -v. With
## BNMF_ATLAS_STAGES=1, the resident size at the end of each stage (the
## first reading, the start, the blocks' q(H) set, each map, the gather,
## the fit object) and the peak since the stage before (VmHWM reset after
## each report); BNMF_ATLAS_BLOCKS=n fits by n blocks instead of the
## default (the small file cut as the atlas is: 19).
## Recovery: fitted W columns matched to true W columns (columns normalised
## to sum 1; Hungarian assignment of clue::solve_LSAP on their
## correlations, greedy without clue), the matched correlations of W
## columns and of H rows (H rows on 20,000 random cells).
##
## `cluster` (on small.h5, K = 20): time per sweep of a 2-worker PSOCK
## cluster (each worker reads its block of the 10x file once and keeps it)
## against one process with the same 2 blocks in memory: (fit of 1 + n
## sweeps - fit of 1 sweep) / n, rounds alternating the two (after a
## warm-up fit), medians and ranges. Beside it, the machine's ceiling:
## `half` (a fit of n sweeps on the first half of the cells in memory, one
## block: the work of one worker) run alone and as two processes at once,
## alternating; ceiling = 2 t(alone) / max(t(each of the pair)). The master's peak resident size
## (VmHWM) during a cluster fit, measured first, before anything is loaded
## in the master.

suppressPackageStartupMessages(library(bnmf))
args <- commandArgs(trailingOnly = TRUE)
mode <- if (length(args)) args[1L] else "fit"
dir <- Sys.getenv("BNMF_ATLAS_DIR", "/tmp/bnmf-atlas")
K <- 20L

status_mb <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep(paste0("^", field, ":"), s, value = TRUE))) / 1024
}
mem_start <- function() {
  invisible(gc(full = TRUE))
  writeLines("5", "/proc/self/clear_refs") # resets VmHWM to the resident size
  status_mb("VmRSS")
}
load_avg <- function() paste(readLines("/proc/loadavg"), collapse = " ")

# ---- make ------------------------------------------------------------------------

make_file <- function(I, J, name, density = 0.0075, block = 50000L) {
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  file <- file.path(dir, paste0(name, ".h5"))
  t0 <- proc.time()[["elapsed"]]
  set.seed(1)
  prog <- sample.int(K, I, replace = TRUE)
  W <- matrix(stats::rgamma(I * K, 0.3, 1), I, K)
  W[cbind(seq_len(I), prog)] <- 10 * W[cbind(seq_len(I), prog)]
  H <- matrix(stats::rgamma(K * J, 0.5, 1), K, J) *
    rep(exp(stats::rnorm(J, 0, 0.3)), each = K)
  # the scale of H that puts the expected share of non-zeros at `density`
  L <- W %*% H[, sample.int(J, min(J, 500L))]
  f <- function(s) mean(1 - exp(-s * L)) - density
  s <- stats::uniroot(f, c(1e-6, 1e6), tol = 1e-10)$root
  rm(L)
  H <- s * H
  saveRDS(list(W = W, H = H), file.path(dir, paste0(name, "-truth.rds")), compress = FALSE)
  sW <- colSums(W)

  if (file.exists(file)) unlink(file)
  rhdf5::h5createFile(file)
  rhdf5::h5createGroup(file, "counts")
  for (nm in c("data", "indices")) {
    rhdf5::h5createDataset(file, paste0("counts/", nm), dims = 0, maxdims = rhdf5::H5Sunlimited(),
                           storage.mode = "integer", chunk = 2^16, level = 1)
  }
  indptr <- numeric(J + 1L)
  nnz <- 0
  total <- 0
  for (b0 in seq(0L, J - 1L, by = block)) {
    cols <- (b0 + 1L):min(J, b0 + block)
    nb <- length(cols)
    keys <- vector("list", K)
    for (k in seq_len(K)) {
      n_kj <- stats::rpois(nb, H[k, cols] * sW[k])
      n <- sum(n_kj)
      if (n == 0) next
      g <- sample.int(I, n, replace = TRUE, prob = W[, k]) - 1L
      keys[[k]] <- rep.int(seq_len(nb) - 1L, n_kj) * I + g # cell (0-based) * I + gene
    }
    key <- sort(unlist(keys, use.names = FALSE), method = "radix")
    rm(keys)
    r <- rle(key)
    x <- r$lengths
    cell <- r$values %/% I
    gene <- as.integer(r$values - cell * I)
    rm(key, r)
    m <- length(x)
    indptr[cols + 1L] <- nnz + cumsum(tabulate(cell + 1L, nb))
    for (nm in c("data", "indices")) {
      rhdf5::h5set_extent(file, paste0("counts/", nm), nnz + m)
    }
    rhdf5::h5write(as.integer(x), file, "counts/data", start = nnz + 1, count = m)
    rhdf5::h5write(gene, file, "counts/indices", start = nnz + 1, count = m)
    nnz <- nnz + m
    total <- total + sum(as.double(x))
    cat(sprintf("cells %d-%d: %d stored counts (%.0f s)\n", cols[1L], cols[nb], m,
                proc.time()[["elapsed"]] - t0))
  }
  rhdf5::h5write(indptr, file, "counts/indptr")
  rhdf5::h5write(as.integer(c(I, J)), file, "counts/shape")
  rhdf5::h5closeAll()
  cat(sprintf("wrote %s: %d x %d, K = %d, %.0f stored counts (density %.3f%%), sum of counts %.0f (%.2f per stored count), %.1f MB, %.0f s\n",
              file, I, J, K, nnz, 100 * nnz / I / J, total, total / nnz, file.size(file) / 2^20,
              proc.time()[["elapsed"]] - t0))
}

if (mode == "make") {
  I <- if (length(args) >= 2L) as.integer(args[2L]) else 20000L
  J <- if (length(args) >= 3L) as.integer(args[3L]) else 1000000L
  name <- if (length(args) >= 4L) args[4L] else "atlas"
  make_file(I, J, name)
}

tenx <- function(name) {
  suppressPackageStartupMessages(library(HDF5Array))
  TENxMatrix(file.path(dir, paste0(name, ".h5")), "counts")
}

# ---- recovery --------------------------------------------------------------------

match_factors <- function(W_true, W_fit) {
  nt <- sweep(W_true, 2L, colSums(W_true), "/")
  nf <- sweep(W_fit, 2L, colSums(W_fit), "/")
  C <- stats::cor(nt, nf)
  if (requireNamespace("clue", quietly = TRUE)) {
    p <- as.integer(clue::solve_LSAP(C - min(C), maximum = TRUE))
  } else { # greedy
    p <- integer(ncol(C)); M <- C
    for (s in seq_len(ncol(C))) {
      w <- which(M == max(M), arr.ind = TRUE)[1L, ]
      p[w[1L]] <- w[2L]; M[w[1L], ] <- -Inf; M[, w[2L]] <- -Inf
    }
  }
  list(perm = p, corW = C[cbind(seq_len(ncol(C)), p)])
}

# ---- fit ------------------------------------------------------------------------

if (mode == "fit") {
  iter <- if (length(args) >= 2L) as.integer(args[2L]) else 100L
  name <- if (length(args) >= 3L) args[3L] else "atlas"
  init <- if (length(args) >= 4L) args[4L] else "random"
  X <- tenx(name)
  cat(sprintf("X: TENxMatrix %d x %d, %s; K = %d; %d sweeps, tol = 0, init = \"%s\"; bnmf.threads = %s; DelayedArray auto block size %.0f bytes; load: %s\n",
              nrow(X), ncol(X), file.path(dir, paste0(name, ".h5")), K, iter, init,
              format(getOption("bnmf.threads", 1L)), DelayedArray::getAutoBlockSize(), load_avg()))
  stamps <- numeric()
  trace("holder_step", where = asNamespace("bnmf"), print = FALSE,
        exit = quote({
          assign("stamps", c(get("stamps", envir = globalenv()), proc.time()[["elapsed"]]),
                 envir = globalenv())
          g <- globalenv()
          message(sprintf("map %d done at %.1f s; VmRSS %.0f MB", length(g$stamps),
                          g$stamps[length(g$stamps)] - g$t0[["elapsed"]], g$status_mb("VmRSS")))
          if (isTRUE(g$stage_peaks)) g$stage(sprintf("map %d", length(g$stamps)))
        }))
  if (init == "spectral") {
    trace("spectral_start", where = asNamespace("bnmf"), print = FALSE,
          exit = quote({
            message(sprintf("spectral start done at %.1f s; VmRSS %.0f MB",
                            proc.time()[["elapsed"]] - get("t0", envir = globalenv())[["elapsed"]],
                            get("status_mb", envir = globalenv())("VmRSS")))
            if (isTRUE(get("stage_peaks", envir = globalenv()))) get("stage", envir = globalenv())("spectral_start exit")
          }))
  }
  # BNMF_ATLAS_STAGES=1: the resident size at the end of each stage of the
  # fit and its peak (VmHWM) since the stage before (VmHWM reset after each
  # report), the stages marked by traces on the package's functions
  stage_peaks <- Sys.getenv("BNMF_ATLAS_STAGES") == "1"
  stage_max <- 0
  if (stage_peaks) {
    stage <- function(what) {
      g <- globalenv()
      hwm <- g$status_mb("VmHWM")
      g$stage_max <- max(g$stage_max, hwm)
      message(sprintf("stage %-28s at %6.1f s: VmRSS %5.0f MB, peak since the stage before %5.0f MB",
                      what, proc.time()[["elapsed"]] - g$t0[["elapsed"]], g$status_mb("VmRSS"), hwm))
      writeLines("5", "/proc/self/clear_refs")
    }
    marks <- list(holder_load = "exit", pois_start = "exit", pois_vb_state = "exit", holder_init = "exit",
                  holder_states = "both", pois_vb_parts = "both", new_poisson_fit = "exit",
                  validate_poisson_fit = "exit", poisson_build = "exit")
    marks <- marks[vapply(names(marks), exists, NA, envir = asNamespace("bnmf"), inherits = FALSE)]
    for (f in names(marks)) {
      ent <- if (marks[[f]] == "both") bquote(get("stage", envir = globalenv())(.(paste(f, "entry"))))
      ex <- bquote(get("stage", envir = globalenv())(.(paste(f, "exit"))))
      if (is.null(ent)) {
        trace(f, where = asNamespace("bnmf"), print = FALSE, exit = ex)
      } else {
        trace(f, where = asNamespace("bnmf"), print = FALSE, tracer = ent, exit = ex)
      }
    }
  }
  base <- mem_start()
  set.seed(1)
  t0 <- proc.time()
  # BNMF_ATLAS_BLOCKS=n: n blocks instead of the default (for a small file
  # cut as the atlas is)
  nb <- Sys.getenv("BNMF_ATLAS_BLOCKS")
  fit <- if (nzchar(nb)) {
    bnmf(X ~ nmf(K), likelihood = "poisson", method = "vb", iter = iter, tol = 0, init = init,
         blocks = as.integer(nb))
  } else bnmf(X ~ nmf(K), likelihood = "poisson", method = "vb", iter = iter, tol = 0, init = init)
  t1 <- proc.time()
  if (stage_peaks) stage("bnmf() returned")
  cat(sprintf("resident before the fit %.0f MB; peak (VmHWM) during the fit %.0f MB\n", base,
              max(stage_max, status_mb("VmHWM"))))
  el <- (t1 - t0)[["elapsed"]]
  sw <- diff(stamps)
  cat(sprintf("blocks: %d; fit %.0f s elapsed (CPU %.0f s); set-up and first map (until the first sweep) %.0f s\n",
              fit$settings$blocks, el, sum((t1 - t0)[c(1L, 2L)]), stamps[1L] - t0[["elapsed"]]))
  cat(sprintf("time per sweep (elapsed): median %.1f s, range %.1f-%.1f s, mean %.1f s over %d sweeps\n",
              stats::median(sw), min(sw), max(sw), mean(sw), length(sw)))
  tr <- fit$trace[, "logpost"]
  idx <- unique(pmin(length(tr), c(1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 400)))
  cat("ELBO by sweep:\n")
  print(data.frame(sweep = idx, elbo = sprintf("%.6e", tr[idx]),
                   rel_change_from_prev = c(NA, sprintf("%.2e", abs(diff(tr))[idx[-1L] - 1L] / abs(tr[idx[-1L]])))))
  truth <- readRDS(file.path(dir, paste0(name, "-truth.rds")))
  Wf <- unname(as.matrix(fit$W)); Hf <- unname(as.matrix(fit$H))
  m <- match_factors(truth$W, Wf)
  set.seed(2)
  js <- sort(sample.int(ncol(Hf), 20000L))
  corH <- vapply(seq_len(K), function(k) stats::cor(truth$H[k, js], Hf[m$perm[k], js]), 0)
  cat(sprintf("matched correlation of W columns (normalised): min %.4f, median %.4f, max %.4f\n",
              min(m$corW), stats::median(m$corW), max(m$corW)))
  cat(sprintf("matched correlation of H rows (20,000 cells): min %.4f, median %.4f, max %.4f\n",
              min(corH), stats::median(corH), max(corH)))
  print(round(rbind(W = m$corW, H = corH), 4))
  saveRDS(list(trace = tr, sweeps = sw, perm = m$perm, corW = m$corW, corH = corH),
          file.path(dir, paste0(name, "-fit-", init, "-summary.rds")))
  cat(sprintf("load after the fit: %s\n", load_avg()))
}

# ---- read: the cost of reading the blocks again in a sweep ------------------------

# `read [name]`: one pass over the default blocks of the file as the sweeps
# of a fit in this process read them (load_block(check = FALSE): the rhdf5
# reads, the dgCMatrix, the block's data for the C side), against the reads
# alone (read_tenx_block()); CPU seconds (user + system), the fastest of 3.
if (mode == "read") {
  name <- if (length(args) >= 2L) args[2L] else "atlas"
  X <- tenx(name)
  src <- bnmf:::block_source(X, NULL, 0L)
  cpu <- function(expr) {
    t <- system.time(expr)
    t[["user.self"]] + t[["sys.self"]]
  }
  again <- function(sp) {
    # the sweeps' call: holder_block() where the package has it
    if (exists("holder_block", asNamespace("bnmf"))) {
      bnmf:::load_block(sp, K, check = FALSE, no_na = TRUE)
    } else {
      bnmf:::load_block(sp, K, check = FALSE)
    }
  }
  r_all <- min(replicate(3L, cpu(for (sp in src$specs) again(sp))))
  r_read <- min(replicate(3L, cpu(for (sp in src$specs) bnmf:::read_tenx_block(sp))))
  cat(sprintf("%s: %d blocks; a pass as the sweeps read them %.2f s CPU; the reads alone %.2f s; bnmf %s at %s\n",
              name, length(src$specs), r_all, r_read, format(utils::packageVersion("bnmf")),
              dirname(system.file(package = "bnmf"))))
}

# ---- start: the optimum VB finds from a random start and from the truth ----------

# `start [name] [sweeps]` (default small, 300): the counts of the file in
# memory (a dgCMatrix), Poisson VB at K = 20 with tol = 0 from the default
# random start and from the true W, H; the final ELBO and the matched
# correlations of W columns of each. If the start from the truth ends at a
# higher ELBO, the random start stopped at a worse local optimum.
if (mode == "start") {
  name <- if (length(args) >= 2L) args[2L] else "small"
  iter <- if (length(args) >= 3L) as.integer(args[3L]) else 300L
  file <- file.path(dir, paste0(name, ".h5"))
  p <- as.double(rhdf5::h5read(file, "counts/indptr"))
  sh <- as.integer(rhdf5::h5read(file, "counts/shape"))
  X <- bnmf:::read_tenx_block(list(file = file, group = "counts", I = sh[1L],
                                    cols = c(1, sh[2L]), indptr = p))
  truth <- readRDS(file.path(dir, paste0(name, "-truth.rds")))
  cat(sprintf("%s: %d x %d, %d stored counts; K = %d, %d sweeps, tol = 0; load %s\n", name,
              nrow(X), ncol(X), length(X@x), K, iter, load_avg()))
  for (from in c("random", "truth")) {
    set.seed(1)
    fit <- suppressWarnings(bnmf(X, K, likelihood = "poisson", method = "vb", iter = iter,
                                 tol = 0, progress = FALSE,
                                 init = if (from == "truth") truth[c("W", "H")] else "random"))
    m <- match_factors(truth$W, unname(as.matrix(fit$W)))
    tr <- fit$trace[, "logpost"]
    cat(sprintf("from %-6s: ELBO %.6e (relative change over the last 10 sweeps %.1e); matched correlation of W columns: min %.3f, median %.3f, max %.3f\n",
                from, tr[length(tr)], abs(tr[length(tr)] - tr[length(tr) - 10L]) / abs(tr[length(tr)]),
                min(m$corW), stats::median(m$corW), max(m$corW)))
  }
}

# ---- half: the work of one worker (for the ceiling) -------------------------------

read_cols <- function(name, cols) {
  file <- file.path(dir, paste0(name, ".h5"))
  indptr <- as.double(rhdf5::h5read(file, "counts/indptr"))
  I <- rhdf5::h5read(file, "counts/shape")[1L]
  bnmf:::read_tenx_block(list(file = file, group = "counts", I = I, cols = range(cols),
                              indptr = indptr[cols[1L]:(cols[length(cols)] + 1L)]))
}

if (mode == "half") {
  n <- as.integer(args[2L])
  J <- rhdf5::h5read(file.path(dir, "small.h5"), "counts/shape")[2L]
  Xh <- read_cols("small", seq_len(J %/% 2L))
  set.seed(1)
  t <- system.time(bnmf(Xh, rank = K, likelihood = "poisson", method = "vb", iter = n, tol = 0,
                        blocks = 1))
  cat(sprintf("%.3f\n", t[["elapsed"]]))
}

# ---- cluster --------------------------------------------------------------------

fit_time <- function(X, iter, ...) {
  set.seed(1)
  t <- system.time(suppressWarnings(
    bnmf(X, rank = K, likelihood = "poisson", method = "vb", iter = iter, tol = 0, ...)))
  t[["elapsed"]]
}
sweep_time <- function(X, n, ...) (fit_time(X, 1L + n, ...) - fit_time(X, 1L, ...)) / n

if (mode == "cluster") {
  rounds <- if (length(args) >= 2L) as.integer(args[2L]) else 5L
  n <- if (length(args) >= 3L) as.integer(args[3L]) else 10L
  cat(sprintf("load at the start: %s\n", load_avg()))
  T <- tenx("small")
  cl <- parallel::makePSOCKcluster(2)
  invisible(parallel::clusterEvalQ(cl, suppressPackageStartupMessages(library(bnmf))))
  # the master's peak while the workers hold the data (nothing loaded here)
  base <- mem_start()
  fit_time(T, 1L + n, cluster = cl)
  cat(sprintf("master during a cluster fit (%d x %d, 2 blocks held by the workers): resident before %.0f MB, peak (VmHWM) %.0f MB\n",
              nrow(T), ncol(T), base, status_mb("VmHWM")))
  X <- read_cols("small", seq_len(ncol(T)))
  cat(sprintf("X in memory for the one-process fits: %.0f MB as a dgCMatrix (%d stored counts)\n",
              utils::object.size(X) / 2^20, length(X@x)))
  rscript <- file.path(R.home("bin"), "Rscript")
  half <- function(procs) { # `procs` processes at once; each one's time
    fs <- replicate(procs, tempfile())
    cmd <- paste(sprintf("%s bench/atlas.R half %d > %s 2> /dev/null &", shQuote(rscript), n, fs),
                 collapse = " ")
    system(paste(cmd, "wait"))
    vapply(fs, function(f) as.numeric(readLines(f)[1L]), 0)
  }
  invisible(list(fit_time(X, 2L, blocks = 2), half(1L))) # warm-up, not counted
  res <- list(one = numeric(), clu = numeric(), alone = numeric(), pair = numeric())
  for (r in seq_len(rounds)) {
    res$one[r] <- sweep_time(X, n, blocks = 2)
    res$clu[r] <- sweep_time(T, n, cluster = cl)
    res$alone[r] <- half(1L)
    res$pair[r] <- max(half(2L))
    cat(sprintf("round %d: one process %.3f s/sweep, cluster %.3f s/sweep; half alone %.2f s, two at once %.2f s; load %s\n",
                r, res$one[r], res$clu[r], res$alone[r], res$pair[r], load_avg()))
  }
  parallel::stopCluster(cl)
  md <- function(x) sprintf("%.3f (%.3f-%.3f)", stats::median(x), min(x), max(x))
  cat(sprintf("\n| | median (range) over %d rounds |\n|---|---|\n", rounds))
  cat(sprintf("| one process, 2 blocks in memory: s per sweep | %s |\n", md(res$one)))
  cat(sprintf("| 2-worker cluster, 2 blocks from the 10x file: s per sweep | %s |\n", md(res$clu)))
  cat(sprintf("| cluster speed-up (one process / cluster) | %s |\n", md(res$one / res$clu)))
  cat(sprintf("| half the work (%d sweeps on half the cells), alone: s | %s |\n", n, md(res$alone)))
  cat(sprintf("| the same, two processes at once (the slower): s | %s |\n", md(res$pair)))
  cat(sprintf("| ceiling: 2 x alone / two at once | %s |\n", md(2 * res$alone / res$pair)))
  cat(sprintf("load at the end: %s\n", load_avg()))
}
