# Schmidt, Winther and Hansen (2009), section 4 / Figure 2: rank selection on
# their toy data (I = 100, J = 20, N = 3 unit-mean exponential factors, unit
# noise) by Chib's marginal likelihood, BIC (non-zeros of the MAP as the
# number of parameters) and ARD, over independent replicates.
# Usage: R_LIBS=<lib with bnmf> Rscript bench/chib-toy.R [replicates] [samples]
suppressPackageStartupMessages(library(bnmf))
args <- commandArgs(TRUE)
reps <- if (length(args) >= 1) as.integer(args[1]) else 10L
samples <- if (length(args) >= 2) as.integer(args[2]) else 20000L
ranks <- 1:5
I <- 100; J <- 20; N <- 3
res <- list()
for (r in seq_len(reps)) {
  set.seed(1000 + r)
  X <- matrix(rexp(I * N), I) %*% matrix(rexp(N * J), N) + matrix(rnorm(I * J), I)
  chib <- se <- bic <- secs <- numeric(length(ranks))
  for (K in ranks) {
    fit <- suppressWarnings(bnmf(X, rank = K, prior = exponential(1), noise = gamma_prior(1, 1),
                                 iter = 2000, progress = FALSE))
    t0 <- proc.time()[["elapsed"]]
    ml <- marginal_likelihood(fit, samples = samples)
    secs[K] <- proc.time()[["elapsed"]] - t0
    chib[K] <- ml$logml
    se[K] <- ml$se
    icm <- suppressWarnings(bnmf(X, rank = K, method = "icm", prior = exponential(1),
                                 noise = gamma_prior(1, 1), chains = 3, progress = FALSE))
    ll <- logLik(icm)
    bic[K] <- as.numeric(ll) - attr(ll, "df") / 2 * log(nobs(icm))
  }
  ard_fit <- suppressWarnings(bnmf(X, rank = 6, method = "vb", prior = ard(),
                                   noise = gamma_prior(1, 1), progress = FALSE))
  ard_k <- sum(summary(ard_fit)$factors$active)
  res[[r]] <- data.frame(replicate = r, rank = ranks, chib = chib, se = se, bic = bic,
                         seconds = secs, ard_vb = ard_k)
  cat(sprintf("replicate %2d: Chib picks %d, BIC picks %d, ARD (VB, rank 6) keeps %d | Chib %s | se %s | s %s\n",
              r, which.max(chib), which.max(bic), ard_k,
              paste(sprintf("%.1f", chib), collapse = " "),
              paste(sprintf("%.2f", se), collapse = " "),
              paste(sprintf("%.1f", secs), collapse = " ")))
}
res <- do.call(rbind, res)
picks <- function(v) table(factor(tapply(v, res$replicate, which.max), levels = ranks))
cat("\nChib picks:\n"); print(picks(res$chib))
cat("BIC picks:\n"); print(picks(res$bic))
cat("ARD (VB at rank 6) active factors:\n"); print(table(res$ard_vb[res$rank == 1]))
cat(sprintf("Chib seconds at rank 3 (%d samples per block): median %.1f\n", samples,
            median(res$seconds[res$rank == 3])))
