# Is the Monte Carlo standard error of marginal_likelihood() calibrated?
# Schmidt, Winther and Hansen's toy data (I = 100, J = 20, true rank 3, as in
# bench/chib-toy.R, data set of replicate 1): one Gibbs fit per rank, then
# `reps` independent runs of marginal_likelihood() on that same fit with
# `samples` draws per block. The spread (sd) of the estimates over the runs is
# what the reported se should match. Besides the reported se the script
# recomputes from every run's per-draw log densities the plain batch-means se
# (the se that bnmf up to 0.1.0 reported), so that both are compared on the
# same runs.
# With mode "refit" every run also refits the Gibbs fit (new seed), so theta*
# changes too (the estimate's expectation does not depend on theta*).
# Usage: R_LIBS=<lib with bnmf> Rscript bench/chib-se.R [reps] [samples] [ranks] [data seed] [mode] [out.rds]
suppressPackageStartupMessages(library(bnmf))
args <- commandArgs(TRUE)
reps <- if (length(args) >= 1) as.integer(args[1]) else 10L
samples <- if (length(args) >= 2) as.integer(args[2]) else 2000L
ranks <- if (length(args) >= 3) eval(parse(text = args[3])) else 3:5
data_seed <- if (length(args) >= 4) as.integer(args[4]) else 1001L
mode <- if (length(args) >= 5) args[5] else "same"
out <- if (length(args) >= 6) args[6] else NULL
I <- 100; J <- 20; N <- 3
set.seed(data_seed)
X <- matrix(rexp(I * N), I) %*% matrix(rexp(N * J), N) + matrix(rnorm(I * J), I)

# the plain batch-means se: 50 batches, delta method, per entry, variances added
batch_se <- function(ml) {
  sqrt(sum(vapply(ml$logdens, function(m) {
    sum(apply(m, 2L, function(v) {
      e <- exp(v - max(v)); size <- length(e) %/% 50L
      bm <- colMeans(matrix(e[seq_len(size * 50L)], size))
      (stats::sd(bm) / sqrt(50) / mean(e))^2
    }))
  }, numeric(1))))
}

rows <- list()
keep <- list()
for (K in ranks) {
  set.seed(10 * K)
  fit <- suppressWarnings(bnmf(X, rank = K, prior = exponential(1), iter = 2000,
                               progress = FALSE))
  est <- se <- se_batch <- ess <- numeric(reps)
  warned <- logical(reps)
  t0 <- proc.time()[["elapsed"]]
  for (r in seq_len(reps)) {
    if (mode == "refit" && r > 1) {
      set.seed(10 * K + 1000 * r)
      fit <- suppressWarnings(bnmf(X, rank = K, prior = exponential(1), iter = 2000,
                                   progress = FALSE))
    }
    set.seed(100 * K + r)
    ml <- withCallingHandlers(marginal_likelihood(fit, samples = samples, progress = FALSE),
                              bnmf_warning_chib_ess = function(w) {
                                warned[r] <<- TRUE
                                invokeRestart("muffleWarning")
                              })
    est[r] <- ml$logml
    se[r] <- ml$se
    se_batch[r] <- batch_se(ml)
    ess[r] <- min(ml$blocks$ess)
    if (!is.null(out)) keep[[sprintf("K%d_r%d", K, r)]] <- ml[c("logml", "se", "blocks", "logdens")]
  }
  secs <- proc.time()[["elapsed"]] - t0
  rows[[length(rows) + 1L]] <- data.frame(
    data = data_seed, mode = mode, rank = K, runs = reps, samples = samples,
    sd_estimates = sd(est), range_estimates = diff(range(est)),
    median_se_batch = median(se_batch), median_se_reported = median(se),
    ratio_batch = sd(est) / median(se_batch), ratio_reported = sd(est) / median(se),
    cover2_reported = mean(abs(est - mean(est)) <= 2 * se),
    warned = sum(warned),
    cover2_unwarned = sum(abs(est - mean(est))[!warned] <= 2 * se[!warned]),
    median_min_ess = median(ess), seconds = round(secs))
  cat(sprintf("rank %d: estimates %s\n         se %s\n   batch se %s\n", K,
              paste(sprintf("%.1f", est), collapse = " "),
              paste(sprintf("%.2f", se), collapse = " "),
              paste(sprintf("%.2f", se_batch), collapse = " ")))
}
tab <- do.call(rbind, rows)
if (!is.null(out)) saveRDS(list(table = tab, runs = keep), out)
cat("\n| data | runs of | rank | runs | samples/block | sd of estimates | range | median se (batch means) | median se (reported) | sd / se (batch) | sd / se (reported) | runs within 2 se of the mean | median smallest block ESS | runs warned (ESS < 10) | unwarned runs within 2 se |\n")
cat("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
for (i in seq_len(nrow(tab))) with(tab[i, ], cat(sprintf(
  "| %d | %s | %d | %d | %d | %.2f | %.1f | %.2f | %.2f | %.1f | %.1f | %d/%d | %.0f | %d/%d | %d/%d |\n", data, mode, rank, runs, samples,
  sd_estimates, range_estimates, median_se_batch, median_se_reported, ratio_batch,
  ratio_reported, round(cover2_reported * runs), runs, median_min_ess, warned, runs,
  cover2_unwarned, runs - warned)))
