# ICM with missing entries: icm_control(missing = "impute") against "mask",
# same data, same start (the same seed before each fit), alternating within
# the process.
#
#   R_LIBS=<lib> Rscript bench/icm-missing.R [rounds]
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/icm-missing.R [rounds]
#
# Cases: 1000 x 1000 = W0 H0 + N(0, 1), K = 20, 20% and 40% of the entries
# missing at random; GDSC IC50 (707 x 139, 19.3% missing, unevenly, K = 10)
# when ../shared/data/gdsc is beside the repository. Each fit runs to
# tol = 1e-9 (at most BNMF_BENCH_ITER sweeps, default 3000); from its trace:
# where it would have stopped at bnmf's default tol = 1e-6 (sweeps, seconds at
# its mean time per sweep, log posterior), and the seconds to first reach
# `target`, the log posterior at which the masked fit of the same round
# stops at tol = 1e-6. Medians (ranges) over rounds.
suppressPackageStartupMessages(library(bnmf))
source(file.path("bench", "icm-fits.R"))
args <- commandArgs(TRUE)
rounds <- if (length(args)) as.integer(args[1]) else 3L
cat_versions()
cases <- list(
  list(name = "1000 x 1000, K = 20, 20% missing", X = sim_missing(0.2), K = 20),
  list(name = "1000 x 1000, K = 20, 40% missing", X = sim_missing(0.4), K = 20)
)
gdsc <- file.path("..", "shared", "data", "gdsc", "ic50.txt")
if (file.exists(gdsc)) {
  G <- as.matrix(utils::read.table(gdsc, na.strings = "nan"))
  cases[[3]] <- list(name = sprintf("GDSC IC50 %d x %d (%.1f%% missing), K = 10",
                                    nrow(G), ncol(G), 100 * mean(is.na(G))), X = G, K = 10)
}

max_iter <- as.integer(Sys.getenv("BNMF_BENCH_ITER", "3000"))
cat("| case | setting | ms / sweep | at tol = 1e-6: sweeps | seconds | log posterior | seconds to reach `target` | final log posterior (tol = 1e-9) |\n")
cat("|---|---|---:|---:|---:|---:|---:|---:|\n")
for (cs in cases) {
  res <- fit_both(cs$X, cs$K, rounds, max_iter)
  target <- vapply(res$mask, function(z) z$lp[at_tol(z$lp)], 0)
  for (m in c("impute", "mask")) {
    z <- res[[m]]
    ms <- vapply(z, `[[`, 0, "ms")
    n6 <- vapply(z, function(a) at_tol(a$lp), 0)
    lp6 <- vapply(z, function(a) a$lp[at_tol(a$lp)], 0)
    reach <- time_to(z, target)
    fin <- vapply(z, function(a) utils::tail(a$lp, 1), 0)
    cat(sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", cs$name, m, fmt_range(ms, 1),
                fmt_range(n6, 0), fmt_range(n6 * ms / 1000), fmt_range(lp6, 1),
                if (anyNA(reach)) sprintf("not within %d sweeps in %d of %d rounds", max_iter,
                                          sum(is.na(reach)), rounds) else fmt_range(reach),
                fmt_range(fin, 1)))
  }
}
