#!/usr/bin/env bash
# The AVX2 clones (BNMF_CLONES in src/bnmf.h: the masked-row kernels, used
# by bnmf_cond_row_sub from K = 16 on and the masked Gram matrices below;
# Gibbs's latent entries and running moments; VB's imputing rows) must give
# the same bits as the default build. Builds bnmf twice into temporary libraries, as usual and
# with -DBNMF_NO_CLONES (through a private R_MAKEVARS_USER file), fits the
# same ICM and VB models with missing entries (dense, sparse, ARD; K = 6 to
# 33) and Gibbs fits with missing entries with each, and fails unless every
# fit is identical. On a processor without AVX2 both builds run the default code and
# the check passes trivially (it says so).
# Usage (from anywhere): bash tools/check-clones.sh   (~40 seconds)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pkg" "$work/lib_clones" "$work/lib_plain"
(cd "$root" && tar --exclude=.git --exclude='src/*.o' --exclude='src/*.so' -cf - .) |
  tar -xf - -C "$work/pkg"
echo 'CFLAGS += -DBNMF_NO_CLONES' >"$work/Makevars"
R CMD INSTALL --preclean --no-test-load -l "$work/lib_clones" "$work/pkg" \
  >"$work/install1.log" 2>&1 || { cat "$work/install1.log"; exit 1; }
R_MAKEVARS_USER="$work/Makevars" R CMD INSTALL --preclean --no-test-load \
  -l "$work/lib_plain" "$work/pkg" >"$work/install2.log" 2>&1 ||
  { cat "$work/install2.log"; exit 1; }
grep -q "BNMF_NO_CLONES" "$work/install2.log" ||
  { echo "the -DBNMF_NO_CLONES flag was not used" >&2; exit 1; }
cat >"$work/fits.R" <<'RS'
args <- commandArgs(TRUE)
suppressPackageStartupMessages(library(bnmf, lib.loc = args[1]))
set.seed(11)
Y <- matrix(rexp(150 * 20), 150) %*% matrix(rexp(20 * 130), 20) + matrix(rnorm(150 * 130), 150)
Y[sample(length(Y), 0.3 * length(Y))] <- NA
Y[1:4, 1:100] <- NA # rows with more missing than observed entries
Ys <- Matrix::Matrix(ifelse(is.na(Y) | Y > 5, Y, 0), sparse = TRUE)
out <- list()
for (m in c("icm", "vb")) for (K in c(6L, 10L, 16L, 20L, 33L)) {
  set.seed(1)
  out[[paste(m, K)]] <- bnmf(Y, rank = K, method = m, iter = 25, tol = 0)[c("W", "H", "tau")]
  set.seed(1)
  out[[paste(m, K, "ard")]] <- bnmf(Y, rank = K, method = m, iter = 25, tol = 0,
                                    prior = ard())[c("W", "H", "tau")]
  set.seed(1)
  out[[paste(m, K, "sparse")]] <- bnmf(Ys, rank = K, method = m, iter = 25,
                                       tol = 0)[c("W", "H", "tau")]
}
for (K in c(6L, 10L, 16L, 20L, 33L)) {
  # VB with the missing entries filled in (Y's rows 1:4 make "auto" mask):
  # the blocks of four rows (vb_rows_diag4) and the rows left over
  set.seed(1)
  out[[paste("vb impute", K)]] <- bnmf(Y, rank = K, method = "vb", iter = 25, tol = 0,
                                       control = vb_control("impute"))[c("W", "H", "tau")]
  set.seed(1)
  out[[paste("vb impute", K, "ard")]] <- bnmf(Y[-(1:5), ], rank = K, method = "vb",
                                              iter = 25, tol = 0, prior = ard(),
                                              control = vb_control("impute"))[c("W", "H", "tau")]
}
for (K in c(6L, 10L, 16L, 20L, 33L)) {
  # Gibbs: the latent entries' W H (bnmf_wh_latent) and the running moments
  # (welford_run) of W, H and W H
  set.seed(1)
  out[[paste("gibbs", K)]] <- bnmf(Y, rank = K, method = "gibbs", iter = 30, burnin = 10,
                                   wh_thin = 2)[c("W", "H", "W_sd", "H_sd", "tau", "moments")]
}
# Poisson VB, Gibbs (in memory and by blocks) and SSVI (the ratio pass and the Gibbs split: bnmf_dot4,
# bnmf_axpy4, bnmf_xlog_sum)
# and the I-divergence updates (bnmf_kl_ratio, bnmf_kl_loss)
Yc <- matrix(rpois(length(Y), pmax(replace(Y, is.na(Y), 0), 0)), nrow(Y))
Yc[is.na(Y)] <- NA
for (K in c(6L, 10L, 20L, 33L)) {
  set.seed(1)
  out[[paste("poisson vb", K)]] <- bnmf(Yc, rank = K, likelihood = "poisson", method = "vb",
                                        iter = 25, tol = 0)[c("W", "H", "trace")]
  set.seed(1)
  out[[paste("poisson gibbs", K)]] <- bnmf(Yc, rank = K, likelihood = "poisson",
                                           method = "gibbs", iter = 20)[c("W", "H", "trace")]
  set.seed(1)
  out[[paste("poisson gibbs blocks", K)]] <- bnmf(Yc, rank = K, likelihood = "poisson",
                                                  method = "gibbs", iter = 20,
                                                  blocks = 3)[c("W", "H", "trace")]
  set.seed(1)
  out[[paste("ssvi", K)]] <- bnmf(Yc, rank = K, method = "ssvi", iter = 5)[c("W", "H")]
  set.seed(1)
  out[[paste("np kl", K)]] <- bnmf(pmax(Y, 0), rank = K, method = "np", loss = "kl",
                                   iter = 25, tol = 0)[c("W", "H", "trace")]
}
saveRDS(out, args[2])
RS
Rscript "$work/fits.R" "$work/lib_clones" "$work/clones.rds"
Rscript "$work/fits.R" "$work/lib_plain" "$work/plain.rds"
Rscript - "$work/clones.rds" "$work/plain.rds" <<'RS'
args <- commandArgs(TRUE)
a <- readRDS(args[1]); b <- readRDS(args[2])
same <- vapply(names(a), function(n) identical(a[[n]], b[[n]]), NA)
avx2 <- any(grepl("\\bavx2\\b", readLines("/proc/cpuinfo", warn = FALSE)))
cat(sprintf("AVX2 clones against the default build: %d of %d fits identical (%s)\n",
            sum(same), length(same),
            if (avx2) "this processor runs the AVX2 clones" else
              "no AVX2 here: both builds ran the default code"))
if (!all(same)) {
  cat("differ:", names(a)[!same], "\n")
  quit(status = 1)
}
RS
