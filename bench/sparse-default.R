# The default Gibbs fit on sparse input, several builds side by side: what a
# kept sweep of `bnmf(X, 10)` costs (the moments of W H at the stored values
# from every 4th kept draw, wh_thin = 4) against a burn-in sweep and the
# sparse floor.
#
#   Rscript bench/sparse-default.R [rounds = 3] [density = 0.01] LIB...
#
# X is the 100,000 x 5,000 dgCMatrix of bench/sparse-fixed.R (K = 10). Each
# build runs in its own R process under OpenBLAS (bench/openblas.sh; the
# sparse products are the package's own and Matrix's, the BLAS only takes
# W'W), the builds in turn within each round. In a process, after 5 warm-up
# sweeps, 4 alternations of: the floor (Matrix's X %*% t(H) plus
# crossprod(W, X)) once, 2 burn-in sweeps, 4 kept sweeps (WH's moments from
# one of the 4); CPU time (user + system). Reported: ms of each, median
# (range) over rounds, and the kept and burn-in sweeps over the floor.

args <- commandArgs(trailingOnly = TRUE)

if (length(args) >= 1L && args[1L] == "--child") {
  # one process: --child LIB DENSITY
  suppressPackageStartupMessages(library(bnmf, lib.loc = args[2L]))
  me <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])
  source(file.path(dirname(me), "chain-setup.R"))
  X <- bench_sparse_case(as.numeric(args[3L]))
  ch <- bench_chain(X, 10L, "gibbs", masked = FALSE, keep_wh = TRUE)
  sweeps <- function(m, keep) {
    invisible(bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, m, rule = "gibbs",
                                   masked = FALSE, accumulate = keep, wh_thin = 4L))
  }
  cpu <- function(expr) {
    t0 <- proc.time()
    force(expr)
    t1 <- proc.time() - t0
    1000 * (t1[["user.self"]] + t1[["sys.self"]])
  }
  sweeps(5L, FALSE)
  tm <- c(floor = 0, burnin = 0, kept = 0)
  for (a in 1:4) {
    invisible(gc())
    W <- ch$state$W
    H <- ch$state$H
    tm[["floor"]] <- tm[["floor"]] + cpu({
      X %*% t(H)
      Matrix::crossprod(W, X)
    })
    tm[["burnin"]] <- tm[["burnin"]] + cpu(sweeps(2L, FALSE)) / 2
    tm[["kept"]] <- tm[["kept"]] + cpu(sweeps(4L, TRUE)) / 4
  }
  cat(sprintf("%.6f %.6f %.6f\n", tm[["floor"]] / 4, tm[["burnin"]] / 4, tm[["kept"]] / 4))
  quit(save = "no")
}

rounds <- if (length(args) >= 1L) as.integer(args[1L]) else 3L
dens <- if (length(args) >= 2L) as.numeric(args[2L]) else 0.01
if (length(args) < 3L || is.na(rounds) || is.na(dens)) {
  stop("usage: Rscript bench/sparse-default.R [rounds] [density] LIB...")
}
libs <- normalizePath(args[-(1:2)], mustWork = TRUE)

me <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L]))
rscript <- file.path(R.home("bin"), "Rscript")
ob <- file.path(dirname(me), "openblas.sh")
child <- function(lib) {
  out <- system2(ob, c(rscript, me, "--child", lib, format(dens)), stdout = TRUE)
  as.numeric(strsplit(utils::tail(out, 1L), " ")[[1L]])
}
source(file.path(dirname(me), "chain-setup.R"))
blas_ob <- bench_openblas_name(ob)
fmt <- bench_range
ms <- array(NA_real_, c(rounds, length(libs), 3L))
for (r in seq_len(rounds)) {
  for (b in seq_along(libs)) ms[r, b, ] <- child(libs[b])
}

cat(sprintf("- %s; %s UTC; density %g (%d non-zeros), 100,000 x 5,000, K = 10\n",
            R.version.string, format(Sys.time(), "%Y-%m-%d %H:%M", tz = "UTC"), dens,
            round(dens * 1e5 * 5e3)))
cat(sprintf("- OpenBLAS (1 thread): `%s`\n", blas_ob))
cat(sprintf("- %d rounds, the builds in turn; CPU ms, median (range) over rounds\n\n", rounds))
cat("| build | floor, ms | burn-in sweep, ms | kept sweep, ms | burn-in / floor | kept / floor |\n")
cat("|---|---:|---:|---:|---:|---:|\n")
for (b in seq_along(libs)) {
  cat(sprintf("| %s | %s | %s | %s | %s | %s |\n", libs[b], fmt(ms[, b, 1L]),
              fmt(ms[, b, 2L]), fmt(ms[, b, 3L]), fmt(ms[, b, 2L] / ms[, b, 1L], 2),
              fmt(ms[, b, 3L] / ms[, b, 1L], 2)))
}
