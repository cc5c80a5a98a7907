# A default Gibbs fit's sweep under L'Ecuyer-CMRG (the generator of bnmf()'s
# chains) against the same sweep under Mersenne-Twister, in one process.
#
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/rng-kinds.R [rounds = 6]
#
# The chain of bench/chain-setup.R on the sweep table's X (I = J = 1000,
# K = 20, dense), 40 warm-up sweeps, then per round 300 sweeps with WH's
# moments every 4th kept draw under each kind (in a random order). Prints
# each kind's ms a sweep and the median of L'Ecuyer-CMRG / Mersenne-Twister
# over rounds: what bnmf()'s generator costs beyond the sweep table's, which
# runs under Mersenne-Twister.

suppressPackageStartupMessages(library(bnmf))
source(file.path(if (file.exists("bench/chain-setup.R")) "bench" else ".", "chain-setup.R"))
args <- commandArgs(trailingOnly = TRUE)
rounds <- if (length(args)) as.integer(args[1L]) else 6L
I <- 1000L
J <- 1000L
K <- 20L
X <- bench_table_x(I, J, K)
ch <- bench_chain(X, K, "gibbs", FALSE, keep_wh = TRUE)
sweeps <- function(n) {
  bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = "gibbs", masked = FALSE,
                       accumulate = TRUE, wh_thin = 4L)
}
invisible(sweeps(40L))
kinds <- c("L'Ecuyer-CMRG", "Mersenne-Twister")
ms <- matrix(NA_real_, rounds, 2L, dimnames = list(NULL, kinds))
for (r in seq_len(rounds)) {
  for (k in sample(kinds)) {
    RNGkind(k)
    set.seed(r)
    ms[r, k] <- system.time(sweeps(300L))[["elapsed"]] / 300 * 1000
  }
}
cat(sprintf("- bnmf %s; BLAS `%s`; %s\n", utils::packageVersion("bnmf"),
            extSoftVersion()[["BLAS"]], format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC")))
for (k in kinds) cat(sprintf("- %s: %s ms a sweep\n", k, paste(sprintf("%.2f", ms[, k]), collapse = ", ")))
ratio <- ms[, 1L] / ms[, 2L]
cat(sprintf("- L'Ecuyer-CMRG / Mersenne-Twister: %.3f (%.3f-%.3f)\n", stats::median(ratio),
            min(ratio), max(ratio)))
