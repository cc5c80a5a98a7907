# One build, two code paths, one chain: an A/B test of a change inside the
# sweeps that is too small for whole processes (bench/sweep-pairs.R) to see.
#
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/switch-ab.R [rounds = 15]
#
# For a scratch build (never a commit) whose C code reads an environment
# variable at the start of every call of the Gaussian NMF sweeps, e.g. in
# bnmf_nmf_sweeps()
#     const char *e = getenv("BNMF_AB"); ab_switch = e && e[0] == '1';
# and takes the changed path when it is 1. The script sets up one chain (the
# sweep table's X, I = J = 1000, K = 20, bench/chain-setup.R), makes
# BNMF_AB_WARMUP sweeps (default 100: the table's `BNMF_BENCH_WARMUP`), then
# in each round times BNMF_AB_SWEEPS sweeps (default 40) with the switch off
# and as many with it on, in an order drawn at random each round. The two
# paths share the process, the data, the caches' state and the chain (each
# block of sweeps goes on from where the last one stopped), so the machine's
# swings between processes, which in whole-process pairs reach 10-30% here,
# cancel in each round's ratio; a change whose two paths give the same bits
# also runs both on the same sweeps' states in turn. Prints the median
# (range, quartiles) over rounds of the ratio on / off.
#
# Environment: BNMF_AB_METHOD (vb, icm, gibbs or np; default vb),
# BNMF_AB_MISS (share of entries missing, default 0.2), BNMF_AB_MASKED
# (1: the masked sweep; default 0, the missing entries filled in).
args <- commandArgs(trailingOnly = TRUE)
rounds <- if (length(args) >= 1L) as.integer(args[1L]) else 15L
env_num <- function(name, default) as.numeric(Sys.getenv(name, default))
method <- Sys.getenv("BNMF_AB_METHOD", "vb")
miss <- env_num("BNMF_AB_MISS", "0.2")
masked <- miss > 0 && Sys.getenv("BNMF_AB_MASKED", "0") == "1"
warmup <- as.integer(env_num("BNMF_AB_WARMUP", "100"))
n_sw <- as.integer(env_num("BNMF_AB_SWEEPS", "40"))

suppressPackageStartupMessages(library(bnmf))
me <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])
source(file.path(dirname(me), "chain-setup.R"))
source(file.path(dirname(me), "machine.R"))
K <- 20L
X <- bench_table_x(K = K)
if (method == "np") X <- pmax(X, 0)
if (miss > 0) X[sample(length(X), round(miss * length(X)))] <- NA
ch <- bench_chain(X, K, method, masked)
sweeps <- function(n) {
  bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = method, masked = masked,
                       accumulate = FALSE)
}
Sys.setenv(BNMF_AB = "0")
invisible(sweeps(warmup))
ms <- matrix(NA_real_, rounds, 2L, dimnames = list(NULL, c("off", "on")))
for (r in seq_len(rounds)) {
  for (on in sample(0:1)) {
    Sys.setenv(BNMF_AB = on)
    t0 <- Sys.time()
    sweeps(n_sw)
    ms[r, on + 1L] <- as.double(Sys.time() - t0, units = "secs") * 1000 / n_sw
  }
}
Sys.unsetenv("BNMF_AB")
ratio <- ms[, "on"] / ms[, "off"]
q <- quantile(ratio, c(0.25, 0.75), names = FALSE)
cat(sprintf("- %s; BLAS `%s`\n", cpu_desc(), extSoftVersion()[["BLAS"]]))
cat(sprintf("- %s, %g%% missing%s, %d warm-up sweeps, %d rounds of %d + %d sweeps\n",
            method, 100 * miss, if (masked) " (masked)" else if (miss > 0) " (filled in)" else "",
            warmup, rounds, n_sw, n_sw))
cat(sprintf("- ms a sweep, median: off %.3f, on %.3f; on / off %.3f (%.3f-%.3f; quartiles %.3f-%.3f)\n",
            median(ms[, "off"]), median(ms[, "on"]), median(ratio), min(ratio), max(ratio),
            q[1L], q[2L]))
