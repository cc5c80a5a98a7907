# 10-fold cross-validation on the GDSC IC50 drug-sensitivity matrix (707 cell
# lines x 139 drugs, 80.7% observed; the data of Brouwer, Frellsen & Lio,
# section 4.3) for NMTF with ARD (K = L = 10) and NMF with ARD (K = 20), by
# every method (gibbs, vb, icm, np): the mean held-out MSE over the folds.
#
# Run from the package root with the package installed, e.g.
#   mkdir -p /tmp/bench/lib && R CMD INSTALL -l /tmp/bench/lib .
#   R_LIBS=/tmp/bench/lib Rscript bench/nmtf-gdsc-cv.R
# The data are looked for in $BNMF_GDSC, ../shared/data/gdsc and
# ../../shared/data/gdsc (they are not shipped with the package); the script
# skips cleanly (exit status 0, a message) when they are absent.
#
# Settings, those of the reference experiments (BNMTF_ARD,
# experiments/experiments_gdsc/cross_validation/*_ard): rows with fewer than
# 3 observed values dropped; ARD alpha0 = beta0 = 1 on the columns of W and
# H (NMF) and of F and G (NMTF), noise alpha = beta = 1; S of NMTF keeps
# bnmf's automatic rate (K L / mean(X))^(1/3) (the reference fixes it at
# 0.1; bnmf's ARD takes no separate rate for S); Gibbs 200 sweeps, 180
# burn-in (the reference then thins by 2); VB 200 sweeps; ICM 200 sweeps for
# NMF, 500 for NMTF; NP 1000 sweeps (the reference's NP has no ARD and
# chooses K by nested cross-validation; here NP runs at the same K, L as the
# others, so its row shows what the model without a prior does at that size).
# NMTF starts from k-means (the package default), NMF from a random start.
# Folds: select_rank()'s, stratified by row; every method sees the same
# folds (the same seed before each call). Output: markdown to stdout and
# bench/nmtf-gdsc-cv.rds ($BNMF_GDSC_OUT). BNMF_GDSC_MODELS ("nmtf,nmf") and
# BNMF_GDSC_METHODS ("gibbs,vb,icm,np") run a part; BNMF_GDSC_FOLDS (10).
suppressPackageStartupMessages(library(bnmf))

dirs <- c(Sys.getenv("BNMF_GDSC"), "../shared/data/gdsc", "../../shared/data/gdsc")
dirs <- dirs[nzchar(dirs) & file.exists(file.path(dirs, "ic50.txt"))]
if (!length(dirs)) {
  message("nmtf-gdsc-cv.R: GDSC data not found (set BNMF_GDSC); skipped.")
  quit(save = "no", status = 0)
}
X <- as.matrix(utils::read.table(file.path(dirs[1L], "ic50.txt"), na.strings = "nan"))
X <- X[rowSums(!is.na(X)) >= 3L, , drop = FALSE]
folds <- as.integer(Sys.getenv("BNMF_GDSC_FOLDS", "10"))
methods <- strsplit(Sys.getenv("BNMF_GDSC_METHODS", "gibbs,vb,icm,np"), ",")[[1L]]
models <- strsplit(Sys.getenv("BNMF_GDSC_MODELS", "nmtf,nmf"), ",")[[1L]]

iters <- list(
  nmtf = list(gibbs = list(iter = 200, burnin = 180), vb = list(iter = 200, tol = 0),
              icm = list(iter = 500, tol = 0), np = list(iter = 1000, tol = 0)),
  nmf = list(gibbs = list(iter = 200, burnin = 180), vb = list(iter = 200, tol = 0),
             icm = list(iter = 200, tol = 0), np = list(iter = 1000, tol = 0)))
ranks <- list(nmtf = list(c(10, 10)), nmf = 20)
# The reference's mean held-out MSE (results.txt of its *_ard experiments;
# NP: its nested cross-validation without ARD).
paper <- list(nmtf = c(gibbs = 712.3, vb = 714.3, icm = 737.3, np = 726.2),
              nmf = c(gibbs = 708.6, vb = 709.5, icm = 711.8, np = 729.5))

rows <- list()
for (model in models) {
  for (m in methods) {
    args <- c(list(X = X, ranks = ranks[[model]], criterion = "cv", method = m, folds = folds),
              iters[[model]][[m]])
    # NP has neither prior nor noise model.
    if (m != "np") args[c("prior", "noise")] <- list(ard(1, 1), gamma_prior(1, 1))
    if (model == "nmf") args$init <- "random"
    set.seed(2017)
    t0 <- proc.time()[["elapsed"]]
    sel <- suppressWarnings(do.call(select_rank, args))
    el <- proc.time()[["elapsed"]] - t0
    rows[[length(rows) + 1L]] <- data.frame(
      model = model, method = m, rank = if (model == "nmtf") "K = L = 10" else "K = 20",
      mse = mean(sel$fold_mse), se = stats::sd(sel$fold_mse) / sqrt(folds),
      paper = paper[[model]][[m]], seconds = el)
    message(sprintf("%s %s: mean test MSE %.1f (%.0f s)", model, m, mean(sel$fold_mse), el))
  }
}
res <- do.call(rbind, rows)
saveRDS(res, Sys.getenv("BNMF_GDSC_OUT", "bench/nmtf-gdsc-cv.rds"))
cat(sprintf("GDSC IC50, %d x %d, %.1f%% observed; %d-fold cross-validation\n\n",
            nrow(X), ncol(X), 100 * mean(!is.na(X)), folds))
cat("| model | method | rank | mean test MSE (se) | reference code | time (s) |\n")
cat("|---|---|---|---|---|---|\n")
for (r in seq_len(nrow(res))) {
  with(res[r, ], cat(sprintf("| %s | %s | %s | %.1f (%.1f) | %.1f | %.0f |\n", toupper(model),
                             method, rank, mse, se, paper, seconds)))
}
