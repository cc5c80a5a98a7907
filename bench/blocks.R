## bench/blocks.R: Poisson VB by blocks of samples: the same fit from memory,
## from a 10x HDF5 file and on a 2-worker cluster; time per sweep and peak
## memory of each.
##
##   R_LIBS=<lib> Rscript bench/blocks.R make      # write the file (once, 30 s)
##   R_LIBS=<lib> Rscript bench/blocks.R same      # identical fits, small data (2 min)
##   R_LIBS=<lib> Rscript bench/blocks.R speed     # time per sweep: memory vs file (8 min)
##   R_LIBS=<lib> Rscript bench/blocks.R cluster   # time per sweep: 2 workers vs one process
##   R_LIBS=<lib> Rscript bench/blocks.R gsame     # Gaussian VB and ICM: identical fits (1 min)
##   R_LIBS=<lib> Rscript bench/blocks.R gspeed [vb|icm]   # Gaussian: memory vs file vs cluster
##   R_LIBS=<lib> Rscript bench/blocks.R pgibbs    # Poisson Gibbs: identical fits (10 min)
##   R_LIBS=<lib> Rscript bench/blocks.R pgibbs speed   # Poisson Gibbs: memory vs blocks vs file vs cluster
##   R_LIBS=<lib> Rscript bench/blocks.R ggibbs [same|speed]   # Gaussian Gibbs: identical
##                                                 # fits (2 min); time per sweep (3 min)
##   /usr/bin/time -v env R_LIBS=<lib> Rscript bench/blocks.R sce [blocks]   # an HDF5-backed SCE
##   for w in memory blocks tenx; do
##     /usr/bin/time -v env R_LIBS=<lib> Rscript bench/blocks.R peak $w; done   # peak memory
##
## Data: counts 5,000 x 100,000 with 1% non-zeros (5e6 stored values; Poisson
## counts of a rank-10 gamma model, zeros dropped at random to reach 1%),
## written to $BNMF_BENCH_DIR (default /tmp/bnmf-blocks-bench) in the 10x
## layout (group "counts": data, indices, indptr, shape; gzip level 4, chunks
## of 2^16 values) with rhdf5. K = 10, tol = 0. Time per sweep: (time of a
## fit with 1 + n sweeps - time of a fit with 1 sweep) / n, n = 10, median of
## 5 rounds that run the configurations in turn (the fit with 1 sweep carries
## the set-up: the reading of the counts to check them, the blocks' set-up).
## Peak memory: a fit of 1 + n sweeps alone in a process, the peak resident
## size (VmHWM) above the resident size before the fit (with X loaded for
## the fits from memory), and the maximum resident set size that
## /usr/bin/time -v reports for the whole process.

suppressPackageStartupMessages(library(bnmf))
args <- commandArgs(trailingOnly = TRUE)
mode <- if (length(args)) args[1L] else "same"
dir <- Sys.getenv("BNMF_BENCH_DIR", "/tmp/bnmf-blocks-bench")
file <- file.path(dir, "counts.h5")
I <- 5000; J <- 1e5; K <- 10; n_blocks <- 10L; n_sweeps <- 10L

make_file <- function() {
  suppressPackageStartupMessages(library(Matrix))
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  set.seed(1)
  # 1% of the entries, column by column, with counts of a rank-10 model
  nnz_col <- stats::rbinom(J, I, 0.01)
  p <- c(0, cumsum(nnz_col))
  i <- unlist(lapply(nnz_col, function(n) sort(sample.int(I, n)) - 1L))
  W <- matrix(stats::rgamma(I * K, 0.5, 1), I, K)
  H <- matrix(stats::rgamma(K * J, 0.5, 1), K, J)
  j <- rep.int(seq_len(J), nnz_col)
  rate <- rowSums(W[i + 1L, ] * t(H)[j, ])
  x <- 1L + stats::rpois(length(i), rate) # stored values are positive counts
  if (file.exists(file)) unlink(file)
  rhdf5::h5createFile(file)
  rhdf5::h5createGroup(file, "counts")
  for (nm in c("data", "indices")) {
    rhdf5::h5createDataset(file, paste0("counts/", nm), length(x), storage.mode = "integer",
                           chunk = 2^16, level = 4)
  }
  rhdf5::h5write(x, file, "counts/data")
  rhdf5::h5write(as.integer(i), file, "counts/indices")
  rhdf5::h5write(p, file, "counts/indptr")
  rhdf5::h5write(c(I, J), file, "counts/shape")
  cat(sprintf("wrote %s: %d x %d, %d stored counts (%.2f%%), %.1f MB\n", file, I, J,
              length(x), 100 * length(x) / I / J, file.size(file) / 2^20))
}

tenx <- function() {
  suppressPackageStartupMessages(library(HDF5Array))
  TENxMatrix(file, "counts")
}

# the fit timed: Poisson VB, or (modes gsame, gspeed) Gaussian VB or ICM,
# or (mode pgibbs) Poisson Gibbs
gauss <- if (mode %in% c("gsame", "gspeed")) (if (length(args) >= 2L) args[2L] else "vb")
pmethod <- if (mode == "pgibbs") "gibbs" else "vb"
pextra <- list() # pgibbs: the prior
ginit <- "random" # gspeed: a start with tau (no initial sweeps of least squares)
fit_time <- function(X, iter, ...) {
  set.seed(1)
  t <- system.time(f <- suppressWarnings(
    if (pmethod == "gibbs") do.call(bnmf, c(list(X, rank = K, likelihood = "poisson",
                                                  method = "gibbs", iter = iter,
                                                  burnin = iter %/% 2, progress = FALSE),
                                             pextra, list(...)))
    else if (is.null(gauss)) bnmf(X, rank = K, likelihood = "poisson", method = "vb", iter = iter,
                                  tol = 0, ...)
    else bnmf(X, rank = K, method = gauss, iter = iter, tol = 0, init = ginit, ...)))
  list(fit = f, time = c(elapsed = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]]))
}

# Seconds per sweep, elapsed and CPU of this process: (fit with 1 + n sweeps
# - fit with 1 sweep) / n; and the fit with 1 sweep (the set-up).
sweep_time <- function(X, ...) {
  t1 <- fit_time(X, 1L, ...)$time
  tn <- fit_time(X, 1L + n_sweeps, ...)$time
  c(setup = t1[["elapsed"]], sweep = (tn[["elapsed"]] - t1[["elapsed"]]) / n_sweeps,
    sweep_cpu = (tn[["cpu"]] - t1[["cpu"]]) / n_sweeps)
}

# A 10x file of the dgCMatrix S (group "g") in directory d; its TENxMatrix.
write_tenx_g <- function(S, d) {
  f <- file.path(d, "tenx.h5")
  rhdf5::h5createFile(f)
  rhdf5::h5createGroup(f, "g")
  rhdf5::h5write(as.integer(S@x), f, "g/data")
  rhdf5::h5write(S@i, f, "g/indices")
  rhdf5::h5write(S@p, f, "g/indptr")
  rhdf5::h5write(dim(S), f, "g/shape")
  HDF5Array::TENxMatrix(f, "g")
}

# The small counts of the modes that compare fits (300 x 2000, rank 5,
# seed 5): the matrix, as a dgCMatrix, in a 10x file and in a dense
# HDF5Matrix (files in a new directory named after `tag`).
small_counts <- function(tag) {
  set.seed(5)
  Is <- 300; Js <- 2000
  W <- matrix(stats::rgamma(Is * 5, 0.5, 1), Is, 5)
  H <- matrix(stats::rgamma(5 * Js, 0.5, 1), 5, Js)
  X <- matrix(stats::rpois(Is * Js, W %*% H), Is, Js)
  S <- methods::as(X, "CsparseMatrix")
  d <- tempfile(paste0("bnmf-", tag, "-"))
  dir.create(d)
  list(X = X, S = S, T = write_tenx_g(S, d),
       D = HDF5Array::writeHDF5Array(X, file.path(d, "dense.h5"), "x"))
}

# The configurations of the modes that time a sweep: X in memory without
# and with blocks, its 10x file T by blocks, and the 2-worker cluster cl
# holding 2 blocks (from memory and from the file).
speed_configs <- function(X, T, cl) {
  list(
    "in memory, no blocks" = function() sweep_time(X),
    "in memory, 10 blocks" = function() sweep_time(X, blocks = n_blocks),
    "10x file, 10 blocks read each sweep" = function() sweep_time(T, blocks = n_blocks),
    "one process, 2 blocks in memory" = function() sweep_time(X, blocks = 2),
    "2-worker cluster, 2 blocks from memory" = function() sweep_time(X, cluster = cl),
    "2-worker cluster, 2 blocks from the 10x file" = function() sweep_time(T, cluster = cl))
}

# Configurations timed in turn (round r runs each once), medians over rounds.
interleave <- function(configs, rounds = 5L) {
  res <- lapply(configs, function(c) list())
  for (r in seq_len(rounds)) {
    for (nm in names(configs)) res[[nm]][[r]] <- configs[[nm]]()
  }
  cat("| configuration | fit with 1 sweep (s) | s per sweep (elapsed) | s per sweep (CPU of this process) |\n|---|---:|---:|---:|\n")
  for (nm in names(configs)) {
    m <- apply(do.call(cbind, res[[nm]]), 1L, stats::median)
    cat(sprintf("| %s | %.2f | %.3f | %.3f |\n", nm, m[["setup"]], m[["sweep"]], m[["sweep_cpu"]]))
  }
}

# Peak resident memory of what runs after mem_start(), above the resident
# size then (Linux: /proc/self/clear_refs resets the peak).
status_mb <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep(paste0("^", field, ":"), s, value = TRUE))) / 1024
}
mem_start <- function() {
  invisible(gc(full = TRUE))
  writeLines("5", "/proc/self/clear_refs")
  status_mb("VmRSS")
}
mem_report <- function(label, base) {
  cat(sprintf("%s: resident before the fit %.0f MB; peak of the fit above it %.0f MB\n", label,
              base, status_mb("VmHWM") - base))
}

# the counts in memory, read whole with rhdf5
read_whole <- function() {
  indptr <- as.double(rhdf5::h5read(file, "counts/indptr"))
  bnmf:::read_tenx_block(list(file = file, group = "counts", I = I, cols = c(1, J),
                              indptr = indptr))
}

if (mode == "make") make_file()

if (mode == "speed") {
  X <- read_whole()
  T <- tenx()
  cat(sprintf("X in memory: %.1f MB as a dgCMatrix; the file %.1f MB\n\n",
              utils::object.size(X) / 2^20, file.size(file) / 2^20))
  interleave(list(
    "in memory, no blocks" = function() sweep_time(X),
    "in memory, 10 blocks" = function() sweep_time(X, blocks = n_blocks),
    "10x file, 10 blocks read each sweep" = function() sweep_time(T, blocks = n_blocks)))
}

if (mode == "cluster") {
  X <- read_whole()
  T <- tenx()
  cl <- parallel::makePSOCKcluster(2)
  # the same with TCP_NODELAY on the master's sockets: without it a message
  # that serialize() writes in pieces can wait ~40 ms for the worker's
  # delayed acknowledgement
  cn <- withr::with_options(list(socketOptions = "no-delay"), parallel::makePSOCKcluster(2))
  interleave(list(
    "one process, 2 blocks in memory" = function() sweep_time(X, blocks = 2),
    "2-worker cluster, 2 blocks from memory" = function() sweep_time(X, cluster = cl),
    "2-worker cluster (no-delay), 2 blocks from memory" = function() sweep_time(X, cluster = cn),
    "2-worker cluster, 2 blocks from the 10x file" = function() sweep_time(T, cluster = cl)))
  parallel::stopCluster(cl)
  parallel::stopCluster(cn)
}

if (mode == "sce") {
  # an HDF5-backed SingleCellExperiment (its "counts" assay the 10x file),
  # fitted by blocks: the peak memory against the assay's size as a dense
  # matrix and as a dgCMatrix
  suppressPackageStartupMessages(library(SingleCellExperiment))
  sce <- SingleCellExperiment(assays = list(counts = tenx()))
  base <- mem_start()
  nb <- if (length(args) >= 2L) as.integer(args[2L]) # NULL: the default blocks
  r <- fit_time(sce, 1L + n_sweeps, assay = "counts", blocks = nb)
  mem_report("SingleCellExperiment, HDF5 assay", base)
  cat(sprintf("the assay: %d x %d; %.0f MB as a dense double matrix, %.0f MB as a dgCMatrix; %d blocks; %.1f s\n",
              I, J, 8 * I * J / 2^20, (12 * 5e6 + 4 * (J + 1)) / 2^20,
              r$fit$settings$blocks, r$time[["elapsed"]]))
}

if (mode == "peak") {
  # one fit (1 + n sweeps) in a fresh process: args[2] = memory, blocks or tenx
  what <- args[2L]
  X <- if (what == "tenx") tenx() else read_whole()
  base <- mem_start()
  fit_time(X, 1L + n_sweeps, blocks = if (what != "memory") n_blocks)
  mem_report(what, base)
}

if (mode == "same") {
  # the same fit from memory, from the 10x file, from a dense HDF5Matrix and
  # on a 2-worker cluster, for a given partition (3 blocks), and one block
  # against the fit in memory without blocks
  suppressPackageStartupMessages({library(Matrix); library(HDF5Array)})
  sc <- small_counts("same")
  X <- sc$X; S <- sc$S; T <- sc$T; D <- sc$D
  Is <- nrow(X); Js <- ncol(X)
  cl <- parallel::makePSOCKcluster(2)
  fits <- list(
    "memory (no blocks)" = fit_time(X, 100L)$fit,
    "memory, 1 block" = fit_time(X, 100L, blocks = 1)$fit,
    "memory, 3 blocks" = fit_time(X, 100L, blocks = 3)$fit,
    "dgCMatrix, 3 blocks" = fit_time(S, 100L, blocks = 3)$fit,
    "10x file, 3 blocks" = fit_time(T, 100L, blocks = 3)$fit,
    "HDF5Matrix, 3 blocks" = fit_time(D, 100L, blocks = 3)$fit,
    "cluster (2 workers), 3 blocks" = fit_time(X, 100L, blocks = 3, cluster = cl)$fit,
    "cluster, 10x file, 3 blocks" = fit_time(T, 100L, blocks = 3, cluster = cl)$fit)
  parallel::stopCluster(cl)
  diffs <- function(a, b) {
    c(W = max(abs(unname(a$W) - unname(b$W))), H = max(abs(unname(a$H) - unname(b$H))),
      ELBO = max(abs(elbo(a) - elbo(b))))
  }
  cat(sprintf("X: %d x %d counts (%.0f%% zeros), K = %d, 100 sweeps, tol = 0\n\n", Is, Js,
              100 * mean(X == 0), K))
  cat("| fit | reference | max abs diff W | max abs diff H | max abs diff ELBO |\n|---|---|---|---|---|\n")
  row <- function(a, b) {
    dd <- diffs(fits[[a]], fits[[b]])
    cat(sprintf("| %s | %s | %.3g | %.3g | %.3g |\n", a, b, dd[["W"]], dd[["H"]], dd[["ELBO"]]))
  }
  row("memory, 1 block", "memory (no blocks)")
  row("memory, 3 blocks", "memory (no blocks)")
  for (a in c("dgCMatrix, 3 blocks", "10x file, 3 blocks", "HDF5Matrix, 3 blocks",
              "cluster (2 workers), 3 blocks", "cluster, 10x file, 3 blocks")) {
    row(a, "memory, 3 blocks")
  }
  cat(sprintf("\nfinal ELBO %.10g; W entries up to %.3g\n", utils::tail(elbo(fits[[1]]), 1),
              max(fits[[1]]$W)))
}

if (mode == "gspeed") {
  # Gaussian VB or ICM (args[2]) on the counts of the file (as numbers): the
  # time per sweep in memory without blocks, by 10 blocks in memory and from
  # the file, and on a 2-worker cluster (2 blocks, from memory and from the
  # file); from a given start with tau (no initial least squares sweeps),
  # (fit of 6 sweeps - fit of 1) / 5, median of 2 rounds
  X <- read_whole()
  T <- tenx()
  set.seed(2)
  ginit <- list(W = matrix(stats::rexp(I * K), I, K), H = matrix(stats::rexp(K * J), K, J),
                tau = 1)
  n_sweeps <- 5L
  cl <- parallel::makePSOCKcluster(2)
  cat(sprintf("Gaussian %s, X %d x %d (dgCMatrix, %.0f MB), K = %d\n\n", toupper(gauss), I, J,
              utils::object.size(X) / 2^20, K))
  interleave(speed_configs(X, T, cl), rounds = 2L)
  parallel::stopCluster(cl)
}

if (mode == "gsame") {
  # Gaussian VB and ICM: the same fit from memory (dense, dgCMatrix), a 10x
  # file, a dense HDF5Matrix and a 2-worker cluster for a partition in 3
  # blocks; 1 block against the fit in memory without blocks
  suppressPackageStartupMessages({library(Matrix); library(HDF5Array)})
  sc <- small_counts("gsame")
  X <- sc$X + 0; S <- sc$S; T <- sc$T; D <- sc$D
  Is <- nrow(X); Js <- ncol(X); Kg <- 5
  cl <- parallel::makePSOCKcluster(2)
  K <- Kg
  obj <- function(f) f$trace$logpost
  cat(sprintf("X: %d x %d Poisson counts as Gaussian data (%.0f%% zeros), K = %d, 100 sweeps, tol = 0\n\n",
              Is, Js, 100 * mean(X == 0), K))
  cat("| method | fit | reference | max abs diff W | max abs diff H | max abs diff objective |\n|---|---|---|---|---|---|\n")
  for (g in c("vb", "icm")) {
    gauss <- g
    fits <- list(
      "memory (no blocks)" = fit_time(X, 100L)$fit,
      "memory, 1 block" = fit_time(X, 100L, blocks = 1)$fit,
      "memory, 3 blocks" = fit_time(X, 100L, blocks = 3)$fit,
      "dgCMatrix (no blocks)" = fit_time(S, 100L)$fit,
      "dgCMatrix, 1 block" = fit_time(S, 100L, blocks = 1)$fit,
      "dgCMatrix, 3 blocks" = fit_time(S, 100L, blocks = 3)$fit,
      "10x file, 3 blocks" = fit_time(T, 100L, blocks = 3)$fit,
      "HDF5Matrix, 3 blocks" = fit_time(D, 100L, blocks = 3)$fit,
      "cluster (2 workers), 3 blocks" = fit_time(X, 100L, blocks = 3, cluster = cl)$fit,
      "cluster, 10x file, 3 blocks" = fit_time(T, 100L, blocks = 3, cluster = cl)$fit)
    row <- function(a, b) {
      x <- fits[[a]]; y <- fits[[b]]
      cat(sprintf("| %s | %s | %s | %.3g | %.3g | %.3g |\n", g, a, b,
                  max(abs(unname(x$W) - unname(y$W))), max(abs(unname(x$H) - unname(y$H))),
                  max(abs(obj(x) - obj(y)))))
    }
    row("memory, 1 block", "memory (no blocks)")
    row("memory, 3 blocks", "memory (no blocks)")
    row("dgCMatrix, 1 block", "dgCMatrix (no blocks)")
    row("HDF5Matrix, 3 blocks", "memory, 3 blocks")
    row("cluster (2 workers), 3 blocks", "memory, 3 blocks")
    for (a in c("10x file, 3 blocks", "cluster, 10x file, 3 blocks")) row(a, "dgCMatrix, 3 blocks")
    cat(sprintf("| %s | final objective %.10g | | | | |\n", g, utils::tail(obj(fits[[1]]), 1)))
  }
  parallel::stopCluster(cl)
}

if (mode == "pgibbs" && length(args) < 2L) {
  # Poisson Gibbs by blocks: the same draws from memory (dense, dgCMatrix),
  # a 10x file, a dense HDF5Matrix and a 2-worker cluster for a partition in
  # 3 blocks (gamma priors and ARD); beside them the sampler in memory
  # without blocks (other random numbers: its posterior means of the
  # log-likelihood and of sum(W H) against those of the blocks)
  suppressPackageStartupMessages({library(Matrix); library(HDF5Array)})
  sc <- small_counts("pgibbs")
  X <- sc$X; S <- sc$S; T <- sc$T; D <- sc$D
  Is <- nrow(X); Js <- ncol(X); K <- 5
  cl <- parallel::makePSOCKcluster(2)
  num <- function(f) lapply(f[c("W", "H", "W_sd", "H_sd", "lambda", "trace", "state")], function(z) {
    if (is.matrix(z)) unname(z) else z
  })
  cat(sprintf("X: %d x %d counts (%.0f%% zeros), K = %d, 200 sweeps (100 kept)\n\n", Is, Js,
              100 * mean(X == 0), K))
  cat("| prior | fit | reference | identical() | max abs diff W | mean loglik (kept) | sum(E[W] E[H]) |\n|---|---|---|---|---|---|---|\n")
  for (pr in c("gamma", "ard")) {
    pextra <- if (pr == "ard") list(prior = ard()) else list()
    fits <- list(
      "memory (no blocks)" = fit_time(X, 200L)$fit,
      "memory, 3 blocks" = fit_time(X, 200L, blocks = 3)$fit,
      "dgCMatrix, 3 blocks" = fit_time(S, 200L, blocks = 3)$fit,
      "10x file, 3 blocks" = fit_time(T, 200L, blocks = 3)$fit,
      "HDF5Matrix, 3 blocks" = fit_time(D, 200L, blocks = 3)$fit,
      "cluster (2 workers), 3 blocks" = fit_time(X, 200L, blocks = 3, cluster = cl)$fit,
      "cluster, 10x file, 3 blocks" = fit_time(T, 200L, blocks = 3, cluster = cl)$fit)
    ref <- fits[["memory, 3 blocks"]]
    for (a in names(fits)) {
      x <- fits[[a]]
      same <- if (a == "memory (no blocks)") "(other draws)" else identical(num(x), num(ref))
      cat(sprintf("| %s | %s | memory, 3 blocks | %s | %.3g | %.2f | %.1f |\n", pr, a, same,
                  max(abs(unname(x$W) - unname(ref$W))), mean(x$trace$loglik[x$trace$sampling]),
                  sum(x$W %*% x$H)))
    }
  }
  parallel::stopCluster(cl)
}

if (mode == "pgibbs" && length(args) >= 2L && args[2L] == "speed") {
  # Poisson Gibbs on the file's counts: the time per sweep in memory without
  # blocks, by 10 blocks in memory and from the 10x file (read every sweep),
  # one process with 2 blocks, and a 2-worker cluster (2 blocks, from memory
  # and from the file); (fit of 1 + 10 sweeps - fit of 1) / 10, median of
  # 2 rounds
  X <- read_whole()
  T <- tenx()
  cl <- parallel::makePSOCKcluster(2)
  cat(sprintf("Poisson Gibbs, X %d x %d (dgCMatrix, %.0f MB), K = %d\n\n", I, J,
              utils::object.size(X) / 2^20, K))
  interleave(speed_configs(X, T, cl), rounds = 2L)
  parallel::stopCluster(cl)
}


if (mode == "ggibbs") {
  # Gaussian Gibbs by blocks. (1) The same fit (posterior means, draws'
  # trace) from memory (dense, dgCMatrix), a dense HDF5Matrix, a 10x file
  # and a 2-worker cluster for a partition in 3 blocks (300 x 2000, K = 5,
  # 100 sweeps, 50 kept); the fit in memory without blocks draws from one
  # stream, so it is another chain: its difference is Monte Carlo error.
  # (2) Time per sweep, 2000 x 20000 counts with 2% non-zeros (dgCMatrix),
  # K = 10: in memory without blocks, by 10 blocks in memory and from a 10x
  # file (gzip level 6, rhdf5's default), on a 2-worker cluster (2 blocks,
  # from memory and from the file); from a start with tau, (fit of 21
  # sweeps - fit of 1) / 20, median of 3 rounds.
  # (one of them a process: HDF5Array 1.26's TENxMatrix() fails after its
  # first call in a session with rhdf5 2.42)
  suppressPackageStartupMessages({library(Matrix); library(HDF5Array)})
  part <- if (length(args) >= 2L) args[2L] else "same"
  gibbs_fit <- function(X, iter, ...) {
    set.seed(1)
    t <- system.time(f <- bnmf(X, rank = K, method = "gibbs", iter = iter,
                               burnin = iter %/% 2, init = ginit, ...))
    list(fit = f, time = c(elapsed = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]]))
  }
  fit_time <- gibbs_fit
  cl <- parallel::makePSOCKcluster(2)
}

if (mode == "ggibbs" && part == "same") {
  set.seed(5)
  Is <- 300; Js <- 2000; K <- 5
  W <- matrix(stats::rgamma(Is * K, 0.5, 1), Is, K)
  H <- matrix(stats::rgamma(K * Js, 0.5, 1), K, Js)
  X <- matrix(stats::rpois(Is * Js, W %*% H), Is, Js) + 0
  S <- methods::as(X, "CsparseMatrix")
  d <- tempfile("bnmf-ggibbs-")
  dir.create(d)
  T <- write_tenx_g(S, d)
  D <- writeHDF5Array(X, file.path(d, "dense.h5"), "x")
  fits <- list(
    "memory (no blocks)" = gibbs_fit(X, 100L)$fit,
    "memory, 3 blocks" = gibbs_fit(X, 100L, blocks = 3)$fit,
    "HDF5Matrix, 3 blocks" = gibbs_fit(D, 100L, blocks = 3)$fit,
    "cluster (2 workers), 3 blocks" = gibbs_fit(X, 100L, blocks = 3, cluster = cl)$fit,
    "dgCMatrix, 3 blocks" = gibbs_fit(S, 100L, blocks = 3)$fit,
    "10x file, 3 blocks" = gibbs_fit(T, 100L, blocks = 3)$fit,
    "cluster, 10x file, 3 blocks" = gibbs_fit(T, 100L, blocks = 3, cluster = cl)$fit)
  cat(sprintf("X: %d x %d Poisson counts as Gaussian data (%.0f%% zeros), K = %d, 100 sweeps (50 kept)\n\n",
              Is, Js, 100 * mean(X == 0), K))
  cat("| fit | reference | max abs diff W mean | H mean | tau mean | trace (logpost) |\n|---|---|---|---|---|---|\n")
  row <- function(a, b) {
    x <- fits[[a]]; y <- fits[[b]]
    cat(sprintf("| %s | %s | %.3g | %.3g | %.3g | %.3g |\n", a, b,
                max(abs(unname(x$W) - unname(y$W))), max(abs(unname(x$H) - unname(y$H))),
                abs(x$tau - y$tau), max(abs(x$trace$logpost - y$trace$logpost))))
  }
  for (a in c("HDF5Matrix, 3 blocks", "cluster (2 workers), 3 blocks", "dgCMatrix, 3 blocks")) {
    row(a, "memory, 3 blocks")
  }
  for (a in c("10x file, 3 blocks", "cluster, 10x file, 3 blocks")) row(a, "dgCMatrix, 3 blocks")
  a <- fits[["memory, 3 blocks"]]; b <- fits[["memory (no blocks)"]]
  cat(sprintf("\nanother chain, in memory without blocks: tau mean %.5g (sd %.3g) against %.5g (sd %.3g) by blocks\n\n",
              b$tau, b$tau_sd, a$tau, a$tau_sd))
}

if (mode == "ggibbs" && part == "speed") {
  set.seed(2)
  I <- 2000; J <- 20000; K <- 10
  S <- Matrix::rsparsematrix(I, J, 0.02, rand.x = function(n) stats::rpois(n, 3) + 1)
  S <- methods::as(S, "CsparseMatrix")
  T <- write_tenx_g(S, (function() { d <- tempfile("bnmf-ggibbs-"); dir.create(d); d })())
  ginit <- list(W = matrix(stats::rexp(I * K), I, K), H = matrix(stats::rexp(K * J), K, J),
                tau = 1)
  n_sweeps <- 20L
  cat(sprintf("Gaussian Gibbs, X %d x %d (dgCMatrix, %d stored values, %.0f MB), K = %d\n\n", I, J,
              length(S@x), utils::object.size(S) / 2^20, K))
  interleave(speed_configs(S, T, cl), rounds = 3L)
}
if (mode == "ggibbs") parallel::stopCluster(cl)
