# Bioconductor in and out, NMF habits, interpretation plots and markers,
# convergence warnings and select_rank()'s notices.

two_mode_data <- function() {
  # two groups of samples, each made of its own block of features
  W <- rbind(cbind(rep(3, 20), 0), cbind(0, rep(3, 20)))
  H <- cbind(rbind(rep(1, 10), 0), rbind(0, rep(1, 10)))
  X <- W %*% H + matrix(abs(rnorm(40 * 20, sd = 0.1)), 40, 20)
  dimnames(X) <- list(sprintf("g%02d", 1:40), sprintf("s%02d", 1:20))
  X
}

test_that("a SummarizedExperiment's assay is fitted; as_reduced_dim() goes back", {
  skip_if_not_installed("SingleCellExperiment")
  withr::local_seed(1)
  X <- two_mode_data()
  sce <- SingleCellExperiment::SingleCellExperiment(
    assays = list(counts = Matrix::Matrix(round(X), sparse = TRUE), logcounts = X))
  withr::local_seed(1)
  fit <- bnmf(sce, rank = 2, assay = "logcounts", method = "icm")
  withr::local_seed(1)
  ref <- bnmf(X, rank = 2, method = "icm")
  expect_equal(fit$W, ref$W)
  expect_equal(fit$H, ref$H)
  by_index <- bnmf(sce, rank = 2, assay = 2L, method = "icm")
  expect_identical(dim(by_index$W), c(40L, 2L))
  sp <- bnmf(sce, rank = 2, assay = "counts", method = "icm")
  expect_true(sp$sparse)
  rd <- as_reduced_dim(fit)
  expect_identical(dim(rd), c(20L, 2L))
  expect_identical(rownames(rd), colnames(X))
  expect_equal(unname(rd), unname(t(fit$H)), ignore_attr = TRUE)
  expect_equal(attr(rd, "rotation"), fit$W)
  SingleCellExperiment::reducedDim(sce, "bnmf") <- rd
  expect_identical(SingleCellExperiment::reducedDimNames(sce), "bnmf")
  vb <- suppressWarnings(bnmf(sce, rank = 2, assay = "logcounts", method = "vb"))
  expect_equal(attr(as_reduced_dim(vb), "sd"), t(vb$H_sd))
  le <- as_reduced_dim(vb, type = "LinearEmbeddingMatrix")
  expect_equal(unname(SingleCellExperiment::featureLoadings(le)), unname(vb$W))
  # a DelayedArray assay
  skip_if_not_installed("DelayedArray")
  sce2 <- SingleCellExperiment::SingleCellExperiment(assays = list(x = DelayedArray::DelayedArray(X)))
  withr::local_seed(1)
  da <- bnmf(sce2, rank = 2, method = "icm")
  expect_equal(da$W, ref$W)
  # select_rank() takes it too
  s <- suppressWarnings(select_rank(sce, ranks = 1:3, criterion = "bic", assay = "logcounts",
                                    progress = FALSE))
  expect_identical(best(s), 2L)
})

test_that("assay errors are classed and name the argument", {
  X <- two_mode_data()
  expect_error(bnmf(X, rank = 2, assay = "counts"), class = "bnmf_error_input", regexp = "`assay`")
  skip_if_not_installed("SummarizedExperiment")
  se <- SummarizedExperiment::SummarizedExperiment(assays = list(a = X))
  expect_error(bnmf(se, rank = 2, assay = "b"), class = "bnmf_error_input", regexp = "\"a\"")
  expect_error(bnmf(se, rank = 2, assay = 3), class = "bnmf_error_input", regexp = "`assay`")
})

test_that("a rank vector points to select_rank()", {
  expect_error(bnmf(two_mode_data(), rank = 2:6), class = "bnmf_error_input",
               regexp = "select_rank\\(X, ranks = 2:6\\)")
})

test_that("predict(newdata) matches features by row name", {
  withr::local_seed(2)
  X <- two_mode_data()
  for (m in c("icm", "vb", "np")) {
    fit <- suppressWarnings(bnmf(X, rank = 2, method = m))
    h1 <- predict(fit, newdata = X[, 1:4], type = "coef")
    p <- sample(nrow(X))
    h2 <- predict(fit, newdata = X[p, 1:4], type = "coef")
    expect_equal(h2, h1, label = m)
    # extra rows are ignored
    extra <- rbind(X[p, 1:4], extra = 5)
    expect_equal(predict(fit, newdata = extra, type = "coef"), h1, label = m)
  }
  expect_error(predict(fit, newdata = unname(X[, 1:4])), class = "bnmf_error_input",
               regexp = "row names")
  expect_error(predict(fit, newdata = X[-1, 1:4]), class = "bnmf_error_input",
               regexp = "lacks 1 of the 40 features")
  Y <- unname(X)
  fit0 <- bnmf(Y, rank = 2, method = "icm")
  expect_equal(predict(fit0, newdata = Y[, 1:3], type = "coef"),
               predict(fit0, newdata = Y[, 1:3] + 0, type = "coef"))
  expect_error(predict(fit0, newdata = X[, 1:3]), class = "bnmf_error_input",
               regexp = "`newdata` has row names and the data of the fit has none")
  expect_error(predict(fit0, newdata = Y[-1, 1:3]), class = "bnmf_error_input",
               regexp = "must have 40 rows")
})

test_that("an optimiser stopped at iter warns with class bnmf_warning_convergence", {
  withr::local_seed(3)
  X <- two_mode_data()
  for (m in c("icm", "vb", "np")) {
    expect_warning(bnmf(X, rank = 2, method = m, iter = 3), class = "bnmf_warning_convergence")
    expect_no_warning(bnmf(X, rank = 2, method = m, iter = 3, tol = 0))
  }
  expect_no_warning(bnmf(X, rank = 2, method = "icm"))
})

test_that("select_rank() warns about Chib under the automatic prior and announces long work", {
  withr::local_seed(4)
  X <- two_mode_data()
  suppressWarnings(
    expect_warning(select_rank(X, ranks = 1:2, criterion = "chib", samples = 50, iter = 40,
                               progress = FALSE),
                   class = "bnmf_warning_prior"),
    classes = c("bnmf_warning_rank_edge", "bnmf_warning_chib_ess"))
  # (rank 2, the largest compared, is chosen, and 50 samples leave a block
  # with few effective draws: those warnings are others)
  expect_no_warning(suppressWarnings(
    select_rank(X, ranks = 1:2, criterion = "chib", samples = 50, iter = 40,
                prior = exponential(rate = 1), progress = FALSE),
    classes = c("bnmf_warning_rank_edge", "bnmf_warning_chib_ess")))
  # the plan of the defaults (Chib, 20,000 samples per block, ranks 1-6) is announced
  expect_message(bnmf:::rank_plan_notice(leukemia, 1:6, "chib", "gibbs",
                                         list(prior = exponential(1)), 20000, 1L),
                 class = "bnmf_message_plan")
  expect_silent(bnmf:::rank_plan_notice(X, 1:2, "bic", "icm", list(), 0, 1L))
})

test_that("consensus of a two-mode example: two blocks; membership recovers them", {
  withr::local_seed(5)
  X <- two_mode_data()
  fit <- bnmf(X, rank = 2, iter = 200, keep = "draws")
  C <- consensus_matrix(fit)
  expect_s3_class(C, "bnmf_consensus")
  expect_identical(attr(C, "n"), 100L)
  g <- rep(1:2, each = 10)
  expect_true(all(C[g == 1, g == 1] > 0.95))
  expect_true(all(C[g == 2, g == 2] > 0.95))
  expect_true(all(C[g == 1, g == 2] < 0.05))
  m <- membership(fit)
  expect_identical(nrow(m), 20L)
  expect_identical(length(unique(m$cluster[g == 1])), 1L)
  expect_identical(length(unique(m$cluster[g == 2])), 1L)
  expect_false(m$cluster[1] == m$cluster[11])
  expect_true(all(m$probability > 0.95))
  s <- summary(fit)
  expect_identical(s$membership, m)
  expect_match(utils::capture.output(print(s)), "Samples by cluster", all = FALSE)
  # a hand-made pair of draws: consensus and membership by enumeration
  f2 <- fit
  f2$draws <- list(list(W = cbind(as.vector(cbind(1, 1 + 0 * X[, 1]))),
                        H = cbind(as.vector(rbind(c(2, 0), c(0, 1))))))
  f2$dims <- c(40L, 2L); f2$dimnames <- list(NULL, NULL)
  f2$draws[[1]]$W <- cbind(rep(1, 80), rep(1, 80))
  f2$draws[[1]]$H <- cbind(c(2, 0, 0, 1), c(0, 2, 0, 1))
  f2$W <- matrix(1, 40, 2); f2$H <- matrix(c(1, 0, 0, 1), 2)
  C2 <- consensus_matrix(f2)
  expect_equal(unclass(C2)[1, 2], 0.5)
  expect_equal(membership(f2)$probability, c(0.5, 1))
})

test_that("markers(): top features with the probability of being among the top n", {
  withr::local_seed(6)
  X <- two_mode_data()
  fit <- bnmf(X, rank = 2, iter = 200, keep = "draws")
  mk <- markers(fit, n = 5)
  expect_identical(nrow(mk), 10L)
  k_a <- which(fit$W[1, ] > fit$W[40, ])
  top_a <- mk$feature[mk$factor == paste0("k", k_a)]
  expect_true(all(top_a %in% sprintf("g%02d", 1:20)))
  # the probability by hand from the draws
  I <- 40; K <- 2
  hits <- vapply(seq_len(ncol(fit$draws[[1]]$W)), function(t) {
    W <- matrix(fit$draws[[1]]$W[, t], I, K)
    mk$feature[1] %in% rownames(X)[order(-W[, as.integer(mk$factor[1])])[1:5]]
  }, logical(1))
  expect_equal(mk$prob_top[1], mean(hits))
  expect_true(all(mk$lower <= mk$W & mk$W <= mk$upper))
  icm <- bnmf(X, rank = 2, method = "icm")
  mi <- markers(icm, n = 3, by = "specificity")
  expect_true(all(is.na(mi$lower)))
  expect_true(all(mi$prob_top == 1))
  expect_error(markers(icm, n = 100), class = "bnmf_error_input", regexp = "`n`")
})

test_that("every plot type draws to PNG", {
  withr::local_seed(7)
  X <- two_mode_data()
  g <- rep(c("a", "b"), each = 10)
  gibbs <- bnmf(X, rank = 2, iter = 100, keep = "draws")
  vb <- suppressWarnings(bnmf(X ~ nmf(3, prior = ard()), method = "vb"))
  icm <- bnmf(X, rank = 2, method = "icm")
  np <- bnmf(X, rank = 2, method = "np")
  dir <- withr::local_tempdir()
  draw <- function(name, expr) {
    f <- file.path(dir, paste0(name, ".png"))
    grDevices::png(f, 700, 500)
    on.exit(grDevices::dev.off())
    expect_no_error(expr)
    f
  }
  files <- c(
    draw("trace", plot(gibbs)),
    draw("basis_gibbs", plot(gibbs, type = "basis", factor = 2, n_top = 10)),
    draw("basis_icm", plot(icm, type = "basis", factor = 1)),
    draw("basis_np", plot(np, type = "basis", factor = 1, by = "specificity")),
    draw("ard", plot(vb, type = "ard")),
    draw("heatmap_coef", plot(gibbs, type = "heatmap", groups = g)),
    draw("heatmap_basis", plot(vb, type = "heatmap", what = "basis", n_top = 5)),
    draw("consensus", plot(gibbs, type = "consensus", groups = g)),
    draw("consensus_icm", plot(consensus_matrix(icm))),
    draw("rank", plot(suppressWarnings(select_rank(X, ranks = 1:3, criterion = "bic",
                                                   progress = FALSE))))
  )
  pa <- bnmf(X, rank = 2, method = "particles", particles = 4)
  hmc <- suppressWarnings(bnmf(X[1:20, 1:8], rank = 2, method = "hmc", iter = 40))
  for (ty in c("weights", "distance", "basis", "features")) {
    files <- c(files, draw(paste0("particles_", ty), plot(pa, type = ty)))
  }
  files <- c(files, draw("hmc", plot(hmc)),
             draw("consensus_particles", plot(consensus_matrix(pa))))
  for (f in files) {
    dev_off_ok <- file.exists(f) && file.size(f) > 1000
    expect_true(dev_off_ok, label = basename(f))
  }
  expect_error(plot(gibbs, type = "heatmap", groups = 1:3), class = "bnmf_error_input")
})

test_that("with NMF attached after bnmf, its generics give bnmf's answers", {
  skip_if_not_installed("NMF")
  withr::local_seed(8)
  X <- two_mode_data()
  fit <- bnmf(X, rank = 2, iter = 60, keep = "draws")
  suppressMessages(requireNamespace("NMF"))
  expect_equal(NMF::basis(fit), bnmf::basis(fit))
  expect_equal(NMF::coef(fit), stats::coef(fit))
  expect_identical(NMF::nbasis(fit), 2L)
  expect_equal(NMF::consensus(fit), unclass(consensus_matrix(fit))[, ], ignore_attr = TRUE)
  expect_identical(NMF::featureNames(fit), rownames(X))
  vb <- suppressWarnings(bnmf(X, rank = 2, method = "vb"))
  expect_equal(NMF::basis(vb), vb$W)
  # attached on the search path after bnmf: basis() is NMF's generic
  suppressMessages(suppressWarnings(library(NMF)))
  withr::defer(detach("package:NMF"))
  expect_equal(basis(fit), fit$W)
  expect_equal(coef(fit), fit$H)
})

test_that("an ExpressionSet and a bare DelayedArray are fitted as their matrix", {
  skip_if_not_installed("Biobase")
  X <- two_mode_data()
  eset <- Biobase::ExpressionSet(assayData = X)
  withr::local_seed(1)
  fit <- bnmf(eset, rank = 2, method = "icm")
  withr::local_seed(1)
  ref <- bnmf(X, rank = 2, method = "icm")
  expect_equal(fit$W, ref$W)
  expect_equal(fit$H, ref$H)
  expect_identical(fit$dimnames, dimnames(X))
  expect_identical(bnmf(eset, rank = 2, method = "icm", assay = "exprs")$dims, dim(X))
  expect_error(bnmf(eset, rank = 2, assay = "counts"), class = "bnmf_error_input",
               regexp = "\"exprs\"")
  s <- suppressWarnings(select_rank(eset, ranks = 1:3, criterion = "bic", progress = FALSE))
  expect_identical(best(s), 2L)
  skip_if_not_installed("DelayedArray")
  withr::local_seed(1)
  da <- bnmf(DelayedArray::DelayedArray(X), rank = 2, method = "icm")
  expect_equal(da$W, ref$W)
  expect_identical(da$dimnames, dimnames(X))
})

test_that("run_bnmf() returns the container with the fit attached", {
  skip_if_not_installed("SingleCellExperiment")
  X <- two_mode_data()
  sce <- SingleCellExperiment::SingleCellExperiment(assays = list(logcounts = X))
  withr::local_seed(1)
  out <- run_bnmf(sce, rank = 2, method = "vb", iter = 50, name = "nmf2")
  withr::local_seed(1)
  ref <- bnmf(X, rank = 2, method = "vb", iter = 50)
  fit <- S4Vectors::metadata(out)$nmf2
  expect_s3_class(fit, "bnmf_vb")
  expect_equal(fit$W, ref$W)
  rd <- SingleCellExperiment::reducedDim(out, "nmf2")
  expect_equal(unname(rd), unname(t(ref$H)), ignore_attr = TRUE)
  expect_identical(rownames(rd), colnames(X))
  rdata <- SummarizedExperiment::rowData(out)
  expect_equal(unname(rdata$nmf2), unname(ref$W))
  expect_equal(unname(rdata$nmf2_sd), unname(ref$W_sd))
  expect_identical(rownames(rdata$nmf2), rownames(X))
  # a SummarizedExperiment: the coefficients go to colData
  se <- SummarizedExperiment::SummarizedExperiment(assays = list(a = X))
  withr::local_seed(1)
  out2 <- run_bnmf(se, rank = 2, method = "vb", iter = 50)
  expect_equal(unname(SummarizedExperiment::colData(out2)$bnmf), unname(t(ref$H)))
  # an NMTF fit is attached as W = F, H = S t(G)
  withr::local_seed(1)
  nt <- suppressWarnings(run_bnmf(sce, rank = c(2, 2), method = "icm"))
  f <- S4Vectors::metadata(nt)$bnmf
  expect_equal(unname(SummarizedExperiment::rowData(nt)$bnmf), unname(f$F))
  expect_error(run_bnmf(X, rank = 2), class = "bnmf_error_input", regexp = "bnmf\\(\\)")
  expect_error(run_bnmf(sce, rank = 2, name = ""), class = "bnmf_error_input", regexp = "`name`")
})
