# ICM with missing entries: icm_control(missing = "impute") against "mask",
# whole fits to convergence (tol = 1e-6, bnmf's default), same data, same
# start (the same seed before each fit), alternating within the process.
#
#   R_LIBS=<lib> Rscript bench/icm-missing.R [rounds]
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/icm-missing.R [rounds]
#
# Cases: 1000 x 1000 = W0 H0 + N(0, 1), K = 20, 20% and 40% of the entries
# missing at random; GDSC IC50 (707 x 139, 19.3% missing, K = 10) when
# ../shared/data/gdsc is beside the repository. Per case and setting: the
# sweeps and seconds to convergence (median and range over rounds), the final
# log posterior, and the seconds an imputing fit takes to pass the log
# posterior at which the masked fit stopped (from its trace, at its mean time
# per sweep).
suppressPackageStartupMessages(library(bnmf))
args <- commandArgs(TRUE)
rounds <- if (length(args)) as.integer(args[1]) else 3L
cat("BLAS:", extSoftVersion()[["BLAS"]], "\n")
cat("bnmf", format(packageVersion("bnmf")), "\n\n")

sim <- function(frac, seed = 1, I = 1000, J = 1000, K = 20) {
  set.seed(seed)
  X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(rnorm(I * J), I)
  X[sample(length(X), frac * length(X))] <- NA
  X
}
cases <- list(
  list(name = "1000 x 1000, K = 20, 20% missing", X = sim(0.2), K = 20),
  list(name = "1000 x 1000, K = 20, 40% missing", X = sim(0.4), K = 20)
)
gdsc <- file.path("..", "shared", "data", "gdsc", "ic50.txt")
if (file.exists(gdsc)) {
  G <- as.matrix(utils::read.table(gdsc, na.strings = "nan"))
  cases[[3]] <- list(name = sprintf("GDSC IC50 %d x %d (%.1f%% missing), K = 10",
                                    nrow(G), ncol(G), 100 * mean(is.na(G))), X = G, K = 10)
}

fmt <- function(x, d = 2) sprintf(paste0("%.", d, "f (%.", d, "f-%.", d, "f)"),
                                  stats::median(x), min(x), max(x))
cat("| case | setting | sweeps | seconds | ms / sweep | final log posterior | s to pass the masked fit's final value |\n")
cat("|---|---|---:|---:|---:|---:|---:|\n")
for (cs in cases) {
  res <- list(impute = list(), mask = list())
  for (r in seq_len(rounds)) {
    order <- if (r %% 2) c("impute", "mask") else c("mask", "impute")
    for (m in order) {
      set.seed(100 + r)
      t <- system.time(fit <- suppressWarnings(
        bnmf(cs$X, cs$K, method = "icm", iter = 5000, progress = FALSE,
             control = icm_control(m))))[["elapsed"]]
      res[[m]][[r]] <- list(t = t, n = fit$iterations, lp = fit$trace$logpost)
    }
  }
  pass <- vapply(seq_len(rounds), function(r) {
    a <- res$impute[[r]]
    target <- utils::tail(res$mask[[r]]$lp, 1)
    k <- which(a$lp >= target)[1]
    if (is.na(k)) NA else k * a$t / a$n
  }, 0)
  for (m in c("impute", "mask")) {
    n <- vapply(res[[m]], `[[`, 0, "n")
    t <- vapply(res[[m]], `[[`, 0, "t")
    lp <- vapply(res[[m]], function(z) utils::tail(z$lp, 1), 0)
    cat(sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", cs$name, m, fmt(n, 0), fmt(t),
                fmt(1000 * t / n, 1), fmt(lp, 1),
                if (m == "impute") {
                  if (anyNA(pass)) sprintf("not in %d of %d rounds", sum(is.na(pass)), rounds)
                  else fmt(pass)
                } else "-"))
  }
}
