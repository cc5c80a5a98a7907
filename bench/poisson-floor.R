## bench/poisson-floor.R: the Poisson model's VB and Gibbs sweeps against the
## O(nnz K) floor of one K-term dot product per stored count.
##
## On simulated sparse counts (I x J, default 20,000 x 5,000, K = 20; the
## model's counts of bench/sim-counts.R, at the densities
## given, default 0.5, 1, 2, 5, 10% non-zeros) this times, in one process
## and interleaved over `rounds` rounds (default 5), in CPU seconds (user +
## system; one thread, options(bnmf.threads = 1)):
##
##   floor  for every stored count X_ij, s_ij = sum_k W_ik H_kj with W
##          stored transposed (K x I) and H (K x J), so that both operands
##          are contiguous K-vectors; the sum of all s_ij is returned so
##          that nothing is optimised away. A small C file (below), built
##          with `R CMD SHLIB` into a temporary directory with R's own
##          CFLAGS, four partial sums on GCC's 4-double vectors and an
##          AVX2 clone chosen at load (as the package's own kernels are
##          built); the pass is repeated until it has taken at least 0.2 s
##          and the time divided by the repetitions;
##   VB     one sweep of bnmf(method = "vb", tol = 0): the difference of
##          fits of n + m and n sweeps, over m;
##   Gibbs  one sweep of bnmf(method = "gibbs"), likewise (default burnin,
##          iter / 2).
##
## Prints, per density, the medians (and ranges over the rounds) of the
## three times and of the ratios sweep / floor (each ratio formed within a
## round).
##
##   R_LIBS=<lib> Rscript bench/poisson-floor.R [rounds] [densities in %] [I J]
##   R_LIBS=/tmp/lib Rscript bench/poisson-floor.R 5
##   R_LIBS=/tmp/lib Rscript bench/poisson-floor.R 3 1,5
##   R_LIBS=/tmp/lib Rscript bench/poisson-floor.R 3 1,5 5000 5000
## Environment: BNMF_FLOOR_N (n, default 2), BNMF_FLOOR_M (m, default 6),
## BNMF_FLOOR_ONLY ("vb" or "gibbs": time only that sampler besides the floor),
## BNMF_FLOOR_MODE ("fit", the default, as above; or "call": the difference
## of single .Call()s of the sampler of n + m and n sweeps from a fixed
## random start, as the chains make them. A fit cuts its sweeps into calls
## of about a quarter of a second, each with a closing pass over the counts
## for the trace, so the number of calls of a short fit, and its time, move
## with the machine's load; "call" has one call on each side, and measures
## the sweeps alone), BNMF_FLOOR_ROWS ("1", the default: the VB calls of
## "call" mode get the counts' row layout, as bnmf() makes it once a chain;
## "0" for none, and for builds before it, which have no C_pois_rows).

suppressPackageStartupMessages({
  library(Matrix)
  library(bnmf)
})
options(bnmf.threads = 1)
args <- commandArgs(TRUE)
rounds <- if (length(args) >= 1) as.integer(args[1]) else 5L
dens <- if (length(args) >= 2) as.numeric(strsplit(args[2], ",")[[1]]) / 100 else c(0.005, 0.01, 0.02, 0.05, 0.10)
dims <- if (length(args) >= 4) as.numeric(args[3:4]) else c(20000, 5000)
K <- 20L
n0 <- as.integer(Sys.getenv("BNMF_FLOOR_N", "2"))
m <- as.integer(Sys.getenv("BNMF_FLOOR_M", "6"))
only <- Sys.getenv("BNMF_FLOOR_ONLY", "")
mode <- Sys.getenv("BNMF_FLOOR_MODE", "fit")
if (!mode %in% c("fit", "call")) stop("BNMF_FLOOR_MODE must be \"fit\" or \"call\"")

floor_src <- '
#include <R.h>
#include <Rinternals.h>
typedef double v4 __attribute__((vector_size(32), aligned(8)));
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8 && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
static double floor_pass(int J, int K, const int *cp, const int *ri, const double *Wt,
                         const double *H)
{
    double tot = 0.0;
    for (int j = 0; j < J; j++) {
        const double *hj = H + (size_t) j * K;
        for (int q = cp[j]; q < cp[j + 1]; q++) {
            const double *wi = Wt + (size_t) ri[q] * K;
            v4 S = {0.0, 0.0, 0.0, 0.0};
            int l = 0;
            for (; l + 4 <= K; l += 4) S += *(const v4 *) (wi + l) * *(const v4 *) (hj + l);
            double s = (S[0] + S[1]) + (S[2] + S[3]);
            for (; l < K; l++) s += wi[l] * hj[l];
            tot += s;
        }
    }
    return tot;
}
SEXP floor_call(SEXP p, SEXP i, SEXP Wt, SEXP H, SEXP Ks, SEXP reps)
{
    const int K = asInteger(Ks), J = LENGTH(p) - 1, R = asInteger(reps);
    double tot = 0.0;
    for (int r = 0; r < R; r++) tot += floor_pass(J, K, INTEGER(p), INTEGER(i), REAL(Wt), REAL(H));
    return ScalarReal(tot);
}
'
dir <- tempfile("poisson-floor")
dir.create(dir)
writeLines(floor_src, file.path(dir, "floor.c"))
out <- system2(file.path(R.home("bin"), "R"), c("CMD", "SHLIB", "-o", file.path(dir, "floor.so"),
                                                  file.path(dir, "floor.c")), stdout = TRUE, stderr = TRUE)
if (!file.exists(file.path(dir, "floor.so"))) stop(paste(out, collapse = "\n"))
dyn.load(file.path(dir, "floor.so"))

source(file.path(if (file.exists("bench/sim-counts.R")) "bench" else ".", "sim-counts.R"))

cpu <- function() sum(proc.time()[c("user.self", "sys.self")])
fit_time <- function(X, method, n) {
  set.seed(1)
  t0 <- cpu()
  if (method == "vb") {
    suppressWarnings(bnmf(X, rank = K, likelihood = "poisson", method = "vb", iter = n, tol = 0,
                          progress = FALSE))
  } else {
    suppressWarnings(bnmf(X, rank = K, likelihood = "poisson", method = "gibbs", iter = n,
                          progress = FALSE))
  }
  cpu() - t0
}
# One .Call of n sweeps from a fixed random start (a Gamma(1, 1) W and H,
# the prior Gamma(1, 1)), as the chains make it: the sampler's own work and
# one call's set-up and closing pass, with no R between the sweeps.
call_time <- function(X, method, n) {
  a <- pois_call_args(X, K, n, method, rows = Sys.getenv("BNMF_FLOOR_ROWS", "1") == "1")
  t0 <- cpu()
  do.call(.Call, c(list(a$fun), a$args))
  cpu() - t0
}
sweep_time <- if (mode == "call") {
  function(X, method) (call_time(X, method, n0 + m) - call_time(X, method, n0)) / m
} else {
  function(X, method) (fit_time(X, method, n0 + m) - fit_time(X, method, n0)) / m
}
floor_time <- function(d) {
  reps <- 1L
  repeat {
    t0 <- cpu()
    .Call("floor_call", d$p, d$i, d$Wt, d$H, K, reps)
    el <- cpu() - t0
    if (el >= 0.2) return(el / reps)
    reps <- reps * max(2L, as.integer(ceiling(0.25 / max(el, 0.01))))
  }
}

load0 <- paste(scan("/proc/loadavg", what = "", n = 3, quiet = TRUE), collapse = " ")
cat(sprintf("%g x %g, K = %d, densities %s%%; %d rounds; sweeps from %s of %d and %d; load average %s; %s\n",
            dims[1], dims[2], K, paste(100 * dens, collapse = ", "), rounds,
            if (mode == "call") "calls" else "fits", n0, n0 + m, load0,
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC")))
data <- lapply(seq_along(dens), function(t) {
  sim <- simulate_counts(dims[1], dims[2], K, nz = dens[t], seed = 2)
  X <- sim$X
  list(X = X, p = X@p, i = X@i, Wt = t(sim$W) + 0, H = sim$H + 0, nnz = length(X@x),
       mean = mean(X@x), ones = mean(X@x == 1))
})
for (d in data) cat(sprintf("nnz %d: mean count %.2f, %.0f%% ones\n", d$nnz, d$mean, 100 * d$ones))
methods <- if (nzchar(only)) only else c("vb", "gibbs")
res <- array(NA_real_, c(rounds, length(dens), 1 + length(methods)),
             list(NULL, NULL, c("floor", methods)))
for (r in seq_len(rounds)) {
  for (t in seq_along(dens)) {
    res[r, t, "floor"] <- floor_time(data[[t]])
    for (mt in methods) res[r, t, mt] <- sweep_time(data[[t]]$X, mt)
  }
  cat(sprintf("round %d done, load average %s\n", r,
              paste(scan("/proc/loadavg", what = "", n = 3, quiet = TRUE), collapse = " ")))
}
mr <- function(v, f = "%.3f") sprintf(paste0(f, " (", f, "-", f, ")"), median(v), min(v), max(v))
cat("\nCPU seconds per sweep or floor pass; ratio = sweep / floor within each round; median (range)\n\n")
hdr <- c("density", "nnz", "floor (s)", "ns per count",
         unlist(lapply(methods, function(mt) c(paste(mt, "sweep (s)"), paste(mt, "/ floor")))))
cat("|", paste(hdr, collapse = " | "), "|\n|", paste(rep("---", length(hdr)), collapse = " | "), "|\n")
for (t in seq_along(dens)) {
  fl <- res[, t, "floor"]
  cells <- c(sprintf("%g%%", 100 * dens[t]), data[[t]]$nnz, mr(fl, "%.4f"),
             sprintf("%.2f", 1e9 * median(fl) / data[[t]]$nnz))
  for (mt in methods) cells <- c(cells, mr(res[, t, mt]), mr(res[, t, mt] / fl, "%.2f"))
  cat("|", paste(cells, collapse = " | "), "|\n")
}
cat(sprintf("\nload average at the end %s\n",
            paste(scan("/proc/loadavg", what = "", n = 3, quiet = TRUE), collapse = " ")))
saveRDS(list(res = res, dens = dens, nnz = sapply(data, `[[`, "nnz"), dims = dims),
        Sys.getenv("BNMF_FLOOR_OUT", tempfile("poisson-floor", fileext = ".rds")))
