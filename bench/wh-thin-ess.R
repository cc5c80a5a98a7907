# What the default `wh_thin` costs in Monte Carlo error: the autocorrelation
# of the W H entries over a Gibbs chain's kept draws, and the effective sample
# size (ESS) of fitted()'s mean and of the squared deviations behind its sd
# when the moments take every 1st, 4th or 8th kept draw.
#
#   R_LIBS=/tmp/bench/lib Rscript bench/wh-thin-ess.R     (from the package root)
#
# For each data set: one chain, burn-in 1000, 1000 kept draws (thin 1),
# keep = "draws"; 400 entries (i, j) drawn at random; each entry's series of
# (W H)_ij over the kept draws. Per entry: the integrated autocorrelation time
# (IAT = draws / ESS), and the ESS (coda::effectiveSize) of the series and of
# its squared deviations from their mean, on draws 1, 1 + m, 1 + 2 m, ...
# for m = 1, 4, 8 (what `wh_thin = m` takes). Medians over the entries.
# ESS is capped at the draws used (coda gives more for negatively correlated
# series). GDSC (IC50, 707 x 139 with missing entries) is read from $BNMF_GDSC or
# ../shared/data/gdsc when present (not shipped); skipped otherwise.
# Needs coda. About 3 minutes under the reference BLAS.

suppressPackageStartupMessages({
  library(bnmf)
  library(coda)
})

sets <- list()
sets[["golub, K = 3"]] <- list(X = log2(pmax(bnmf::golub, 20)), K = 3)
sets[["leukemia, K = 5"]] <- list(X = bnmf::leukemia, K = 5)
syn <- function(I, J, K, seed) {
  set.seed(seed)
  W <- matrix(rexp(I * K), I, K)
  H <- matrix(rexp(K * J), K, J)
  pmax(W %*% H + matrix(rnorm(I * J, sd = sqrt(K) / 4), I, J), 0)
}
sets[["synthetic 200 x 150, K = 5"]] <- list(X = syn(200, 150, 5, 1), K = 5)
dirs <- c(Sys.getenv("BNMF_GDSC"), "../shared/data/gdsc", "../../shared/data/gdsc")
dirs <- dirs[nzchar(dirs) & file.exists(file.path(dirs, "ic50.txt"))]
if (length(dirs)) {
  G <- as.matrix(utils::read.table(file.path(dirs[1L], "ic50.txt"), na.strings = "nan"))
  G <- G[rowSums(!is.na(G)) > 0, colSums(!is.na(G)) > 0]
  sets[[sprintf("GDSC IC50 %d x %d, K = 10", nrow(G), ncol(G))]] <- list(X = G, K = 10)
}
sets[["synthetic 1000 x 1000, K = 20"]] <- list(X = syn(1000, 1000, 20, 2), K = 20)

thins <- c(1L, 4L, 8L)
cat(sprintf("- %s; BLAS `%s`; %s\n", R.version.string, extSoftVersion()[["BLAS"]],
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC")))
cat("- one chain, burn-in 1000, 1000 kept draws; 400 random entries; medians over entries\n\n")
cat("| data | median IAT of (W H)_ij | ESS of the mean, wh_thin 1 / 4 / 8 |",
    "ESS of the squared deviations, 1 / 4 / 8 |\n|---|---:|---:|---:|\n")
for (nm in names(sets)) {
  s <- sets[[nm]]
  X <- s$X
  I <- nrow(X); J <- ncol(X); K <- s$K
  set.seed(11)
  fit <- suppressWarnings(bnmf(X, rank = K, method = "gibbs", iter = 2000, burnin = 1000,
                               keep = "draws", wh_thin = 1))
  Wd <- fit$draws[[1L]]$W
  Hd <- fit$draws[[1L]]$H
  n <- ncol(Wd)
  set.seed(12)
  ii <- sample.int(I, 400, replace = TRUE)
  jj <- sample.int(J, 400, replace = TRUE)
  # series[t, e] = sum_k W[i_e, k] H[k, j_e] at kept draw t
  series <- vapply(seq_len(n), function(t) {
    W <- matrix(Wd[, t], I, K)
    H <- matrix(Hd[, t], K, J)
    rowSums(W[ii, , drop = FALSE] * t(H[, jj, drop = FALSE]))
  }, numeric(400))
  series <- t(series)
  ess <- function(m, sq) {
    y <- series[seq(1L, n, by = m), , drop = FALSE]
    if (sq) y <- sweep(y, 2L, colMeans(y))^2
    stats::median(pmin(coda::effectiveSize(y), nrow(y)))
  }
  iat <- stats::median(n / pmin(coda::effectiveSize(series), n))
  cat(sprintf("| %s | %.1f | %s | %s |\n", nm, iat,
              paste(sprintf("%.0f", vapply(thins, ess, 0, sq = FALSE)), collapse = " / "),
              paste(sprintf("%.0f", vapply(thins, ess, 0, sq = TRUE)), collapse = " / ")))
}
