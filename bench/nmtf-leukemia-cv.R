# NMF against NMTF on the bundled `leukemia` data (500 genes x 128 samples)
# by 5-fold cross-validated MSE, for the vignette "Choosing an inference
# method" (its last section reads the saved table). Gibbs sampling (400
# sweeps, 200 burn-in) with bnmf's default priors; NMF at ranks 1 to 6, NMTF
# at (K, L) = (k, k) for k = 1 to 6 and four unequal pairs. The same folds
# for every candidate (select_rank() draws them first from the same seed).
#
# Run from the package root with the package installed, e.g.
#   mkdir -p /tmp/bench/lib && R CMD INSTALL -l /tmp/bench/lib .
#   R_LIBS=/tmp/bench/lib Rscript bench/nmtf-leukemia-cv.R
# Writes inst/extdata/nmtf-leukemia-cv.rds (a small data frame) and prints
# it as markdown.
suppressPackageStartupMessages(library(bnmf))
folds <- 5L
fit_args <- list(method = "gibbs", iter = 400, burnin = 200)
t0 <- proc.time()[["elapsed"]]
set.seed(2024)
nmf <- do.call(select_rank, c(list(leukemia, ranks = 1:6, criterion = "cv", folds = folds),
                              fit_args))
pairs <- rbind(cbind(1:6, 1:6), c(4, 2), c(2, 4), c(6, 3), c(3, 6))
set.seed(2024)
nmtf <- do.call(select_rank, c(list(leukemia, ranks = pairs, criterion = "cv", folds = folds),
                               fit_args))
el <- proc.time()[["elapsed"]] - t0
I <- nrow(leukemia); J <- ncol(leukemia)
tab <- rbind(
  data.frame(model = "NMF", K = nmf$table$rank, L = NA_integer_,
             params = (I + J) * nmf$table$rank, mse = nmf$table$mse, se = nmf$table$se),
  data.frame(model = "NMTF", K = nmtf$table$K, L = nmtf$table$L,
             params = I * nmtf$table$K + nmtf$table$K * nmtf$table$L + J * nmtf$table$L,
             mse = nmtf$table$mse, se = nmtf$table$se))
attr(tab, "settings") <- list(folds = folds, fit_args = fit_args, seconds = el,
                              best_nmf = best(nmf), best_nmtf = best(nmtf))
saveRDS(tab, "inst/extdata/nmtf-leukemia-cv.rds", version = 2)
cat(sprintf("leukemia %d x %d, %d-fold CV, Gibbs; %.0f s\n\n", I, J, folds, el))
cat("| model | K | L | parameters | mean test MSE | se |\n|---|---|---|---|---|---|\n")
for (r in seq_len(nrow(tab))) {
  with(tab[r, ], cat(sprintf("| %s | %d | %s | %d | %.4g | %.2g |\n", model, K,
                             if (is.na(L)) "" else L, params, mse, se)))
}
