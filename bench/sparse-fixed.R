# The fixed part of a sparse Gibbs sweep, several builds side by side.
#
#   Rscript bench/sparse-fixed.R [rounds = 3] [density = 1e-5] LIB...
#
# X is a 100,000 x 5,000 dgCMatrix (K = 10) with a share `density` of
# stored positive values (W0 H0 plus noise at random positions), set up as
# bench/sparse-sweep.R sets it up. At density 1e-5 (5,000 non-zeros) a
# sweep's cost is its fixed part, the intercept of cost against nnz: the
# draws of the 1.05 million coordinates of W and H, whose conditionals sit
# in the truncated normal's exponential tail as at the benchmark's
# densities, and the passes over W. Each build runs in its own R process
# (5 warm-up sweeps, then `ns` sweeps, CPU time of the process) under the
# reference BLAS and under OpenBLAS (bench/openblas.sh), the builds in turn
# within each round. Reported: ms a sweep, median (range) over rounds, and
# each build's ratio to the first build's, round by round.
#
# BNMF_FIXED_SWEEPS: sweeps timed per process (default 20).

args <- commandArgs(trailingOnly = TRUE)

if (length(args) >= 1L && args[1L] == "--child") {
  # one timing: --child LIB DENSITY SWEEPS
  suppressPackageStartupMessages(library(bnmf, lib.loc = args[2L]))
  ns <- as.integer(args[4L])
  me <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])
  source(file.path(dirname(me), "chain-setup.R"))
  X <- bench_sparse_case(as.numeric(args[3L]))
  ch <- bench_chain(X, 10L, "gibbs", masked = FALSE)
  run <- function(m) {
    invisible(bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, m, rule = "gibbs",
                                   masked = FALSE, accumulate = FALSE))
  }
  run(5L)
  invisible(gc())
  t0 <- proc.time()
  run(ns)
  t1 <- proc.time() - t0
  cat(sprintf("%.6f\n", 1000 * (t1[["user.self"]] + t1[["sys.self"]]) / ns))
  quit(save = "no")
}

rounds <- if (length(args) >= 1L) as.integer(args[1L]) else 3L
dens <- if (length(args) >= 2L) as.numeric(args[2L]) else 1e-5
if (length(args) < 3L || is.na(rounds) || is.na(dens)) {
  stop("usage: Rscript bench/sparse-fixed.R [rounds] [density] LIB...")
}
libs <- normalizePath(args[-(1:2)], mustWork = TRUE)
ns <- as.integer(Sys.getenv("BNMF_FIXED_SWEEPS", "20"))

me <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L]))
rscript <- file.path(R.home("bin"), "Rscript")
ob <- file.path(dirname(me), "openblas.sh")
child <- function(lib, openblas) {
  cmd <- c(rscript, me, "--child", lib, format(dens), ns)
  if (openblas) cmd <- c(ob, cmd)
  out <- system2(cmd[1L], cmd[-1L], stdout = TRUE)
  as.numeric(utils::tail(out, 1L))
}
source(file.path(dirname(me), "chain-setup.R"))
blas_ob <- bench_openblas_name(ob)
fmt <- bench_range
ms <- array(NA_real_, c(rounds, length(libs), 2L))
for (r in seq_len(rounds)) {
  for (b in seq_along(libs)) {
    ms[r, b, 1L] <- child(libs[b], FALSE)
    ms[r, b, 2L] <- child(libs[b], TRUE)
  }
}

cat(sprintf("- %s; %s UTC; density %g (%d non-zeros), 100,000 x 5,000, K = 10\n",
            R.version.string, format(Sys.time(), "%Y-%m-%d %H:%M", tz = "UTC"), dens,
            round(dens * 1e5 * 5e3)))
cat(sprintf("- reference: `%s`; OpenBLAS (1 thread): `%s`\n", extSoftVersion()[["BLAS"]],
            blas_ob))
cat(sprintf("- %d rounds, the builds in turn; %d sweeps a process; CPU ms a sweep and the ratio to the first build, median (range)\n\n",
            rounds, ns))
cat("| build | reference, ms | / first | OpenBLAS, ms | / first |\n|---|---:|---:|---:|---:|\n")
for (b in seq_along(libs)) {
  cat(sprintf("| %s | %s | %s | %s | %s |\n", libs[b], fmt(ms[, b, 1L]),
              fmt(ms[, b, 1L] / ms[, 1L, 1L], 3), fmt(ms[, b, 2L]),
              fmt(ms[, b, 2L] / ms[, 1L, 2L], 3)))
}
