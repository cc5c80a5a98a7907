# Real data: held-out drug sensitivities (GDSC, kept beside the repository,
# skipped when absent) and the bundled leukemia expression data.

test_that("held-out GDSC entries are predicted better than by row means", {
  skip_on_cran()
  path <- gdsc_path()
  skip_if(is.null(path), "GDSC data not available")
  X <- as.matrix(read.table(path, na.strings = "nan"))
  X <- X[rowSums(!is.na(X)) >= 3, ]
  set.seed(1)
  obs <- which(!is.na(X))
  held <- sample(obs, round(0.1 * length(obs)))
  Xtr <- X
  Xtr[held] <- NA
  keep_r <- rowSums(!is.na(Xtr)) > 0
  keep_c <- colSums(!is.na(Xtr)) > 0
  Xtr <- Xtr[keep_r, keep_c]
  truth <- X[keep_r, keep_c]
  held <- which(is.na(Xtr) & !is.na(truth))
  rm_pred <- rowMeans(Xtr, na.rm = TRUE)[row(Xtr)][held]
  rmse_rm <- sqrt(mean((rm_pred - truth[held])^2))
  for (method in c("icm", "gibbs")) {
    set.seed(2)
    fit <- bnmf(Xtr, rank = 5, method = method, iter = if (method == "gibbs") 400 else 500,
                progress = FALSE)
    rmse <- sqrt(mean((predict(fit)[held] - truth[held])^2))
    expect_lt(rmse, 0.85 * rmse_rm, label = paste(method, "held-out RMSE"))
  }
})

test_that("a rank-2 fit of the leukemia data separates B from T cells", {
  set.seed(1)
  fit <- bnmf(leukemia, rank = 2, method = "icm", progress = FALSE)
  H <- coef(fit)
  share <- H / rep(colSums(H), each = 2)
  t_cell <- leukemia_samples$cell_type == "T"
  # One factor's share of each sample's signal splits the two cell types.
  auc <- vapply(1:2, function(k) {
    r <- rank(share[k, ])
    (sum(r[t_cell]) - sum(t_cell) * (sum(t_cell) + 1) / 2) / (sum(t_cell) * sum(!t_cell))
  }, numeric(1))
  expect_gt(max(abs(auc - 0.5)) + 0.5, 0.95)
})
