# A sparse Gibbs sweep under the two uniform generators: Mersenne-Twister
# (the session's default, under which the other sparse scripts time) and
# L'Ecuyer-CMRG (the generator of bnmf()'s chains).
#
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/sparse-rng.R [rounds = 4] [density = 0.01]
#
# X is the 100,000 x 5,000 dgCMatrix of bench/sparse-fixed.R (K = 10): a
# sweep draws 1.05 million truncated normals, whatever the density. One
# chain, 3 warm-up sweeps, then per round 5 burn-in sweeps under each
# generator, in a random order; wall clock. Reported: ms a sweep, median
# (range) over rounds, and the ratio L'Ecuyer-CMRG / Mersenne-Twister of
# each round.

suppressPackageStartupMessages(library(bnmf))
here <- if (file.exists("bench/chain-setup.R")) "bench" else "."
source(file.path(here, "chain-setup.R"))
source(file.path(here, "machine.R"))
args <- commandArgs(TRUE)
rounds <- if (length(args) >= 1) as.integer(args[1]) else 4L
density <- if (length(args) >= 2) as.numeric(args[2]) else 0.01
now <- function() as.numeric(Sys.time())
X <- bench_sparse_case(density)
K <- 10L
ch <- bench_chain(X, K, "gibbs", TRUE)
sweeps <- function(n, kind) {
  old <- RNGkind(kind)[1L]
  on.exit(RNGkind(old))
  t0 <- now()
  bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = "gibbs", masked = TRUE)
  (now() - t0) / n
}
invisible(sweeps(3L, "Mersenne-Twister"))
kinds <- c("Mersenne-Twister", "L'Ecuyer-CMRG")
ms <- matrix(NA_real_, rounds, 2, dimnames = list(NULL, kinds))
for (r in seq_len(rounds)) for (k in sample(kinds)) ms[r, k] <- 1000 * sweeps(5L, k)
rng <- function(x, d = 1) sprintf(paste0("%.", d, "f (%.", d, "f-%.", d, "f)"),
                                  stats::median(x), min(x), max(x))
cat("## A sparse Gibbs sweep under two uniform generators\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), "; ", cpu_desc(), "\n", sep = "")
cat("- BLAS: `", extSoftVersion()[["BLAS"]], "`\n", sep = "")
cat("- X: 100,000 x 5,000, density ", density, ", K = 10; ", rounds, " rounds of 5 sweeps each\n\n",
    sep = "")
cat("| generator | ms a sweep |\n|---|---:|\n")
for (k in kinds) cat("| ", k, " | ", rng(ms[, k]), " |\n", sep = "")
cat("| L'Ecuyer-CMRG / Mersenne-Twister (per round) | ",
    rng(ms[, 2] / ms[, 1], 3), " |\n", sep = "")
