# Speed of marginal_likelihood() (Chib's method) on Schmidt et al.'s toy data
# (I = 100, J = 20, N = 3, unit-mean exponential factors, unit noise) at rank
# 3 with 20,000 samples per block, the paper's setting.
#
# Run from the package root with the package installed, e.g.
#   mkdir -p /tmp/bench/lib && R CMD INSTALL -l /tmp/bench/lib .
#   R_LIBS=/tmp/bench/lib Rscript bench/bench-chib.R
#
# Reports the time of one estimate and, measured in the same run (rounds
# interleaved), its ratio to the Gibbs sweeps it makes (the same number of
# sweeps of bnmf(method = "gibbs")) and to the estimate without the scale
# average (orbit = FALSE). Environment: BNMF_BENCH_ROUNDS (default 3).

suppressPackageStartupMessages(library(bnmf))
rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "3"))
samples <- 20000L
set.seed(1001)
I <- 100; J <- 20; K <- 3
X <- matrix(rexp(I * 3), I) %*% matrix(rexp(3 * J), 3) + matrix(rnorm(I * J), I)
fit <- suppressWarnings(bnmf(X, rank = K, prior = exponential(1), iter = 1000,
                             progress = FALSE))
elapsed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  force(expr)
  proc.time()[["elapsed"]] - t0
}
burnin <- samples %/% 10L
n_sweeps <- (2L * K + 1L) * (samples + burnin)
res <- t(vapply(seq_len(rounds), function(r) {
  t_chib <- elapsed(marginal_likelihood(fit, samples = samples))
  t_plain <- elapsed(marginal_likelihood(fit, samples = samples, orbit = FALSE))
  t_gibbs <- elapsed(suppressWarnings(bnmf(X, rank = K, prior = exponential(1),
                                           iter = n_sweeps, burnin = 1L,
                                           progress = FALSE)))
  c(chib = t_chib, plain = t_plain, gibbs = t_gibbs)
}, numeric(3)))
cat(sprintf("marginal_likelihood(), rank 3, %d samples per block (%d reduced runs, %d sweeps in all)\n",
            samples, 2L * K + 1L, n_sweeps))
cat(sprintf("  time: median %.2f s (min %.2f, max %.2f over %d rounds)\n",
            median(res[, "chib"]), min(res[, "chib"]), max(res[, "chib"]), rounds))
cat(sprintf("  ratio to the same number of Gibbs sweeps of bnmf(): median %.2f (min %.2f, max %.2f)\n",
            median(res[, "chib"] / res[, "gibbs"]), min(res[, "chib"] / res[, "gibbs"]),
            max(res[, "chib"] / res[, "gibbs"])))
cat(sprintf("  ratio to the estimate without the scale average: median %.2f (min %.2f, max %.2f)\n",
            median(res[, "chib"] / res[, "plain"]), min(res[, "chib"] / res[, "plain"]),
            max(res[, "chib"] / res[, "plain"])))
