# Bioconductor in and out: the assay of a SummarizedExperiment (or
# SingleCellExperiment) as the data matrix X of bnmf() and select_rank(), and
# a fit's coefficients as a reducedDim. SummarizedExperiment,
# SingleCellExperiment and DelayedArray are suggested packages, used only when
# the data or the caller ask for them.

#' @section Bioconductor data:
#' `X` may be a `SummarizedExperiment` (for example a
#' `SingleCellExperiment`): its assay `assay` (a name or a number; default the
#' first assay) is the data matrix, features in rows and samples (cells) in
#' columns, with the row and column names of the object. A sparse assay (a
#' `Matrix::dgCMatrix`, or a `DelayedArray` whose seed is sparse) stays sparse
#' (its zeros are observed zeros); another `DelayedArray` is read into memory
#' as a dense matrix (the model's sweeps need the data in memory). `assay` is
#' an error for any other `X`. [as_reduced_dim()] turns the fit back into a
#' samples x factors matrix for `SingleCellExperiment::reducedDim()`.
#' @rdname bnmf
#' @name bnmf
NULL

# The data matrix of `X`: the assay `assay` of a SummarizedExperiment, else
# `X` itself (and then `assay` must be NULL).
assay_matrix <- function(X, assay = NULL, arg = "X") {
  if (!methods::is(X, "SummarizedExperiment")) {
    if (!is.null(assay)) {
      abort_input(sprintf("`assay` applies only when `%s` is a SummarizedExperiment, not an object of class %s.",
                          arg, class(X)[1L]))
    }
    return(X)
  }
  if (!requireNamespace("SummarizedExperiment", quietly = TRUE)) {
    abort_input(sprintf("`%s` is a SummarizedExperiment: install the Bioconductor package SummarizedExperiment to fit it.", arg))
  }
  nms <- SummarizedExperiment::assayNames(X)
  n <- length(SummarizedExperiment::assays(X))
  if (n == 0L) abort_input(sprintf("`%s` has no assay.", arg))
  if (is.null(assay)) assay <- 1L
  ok <- length(assay) == 1L && !is.na(assay) &&
    (is.character(assay) && assay %in% nms ||
       is.numeric(assay) && assay == round(assay) && assay >= 1 && assay <= n)
  if (!ok) {
    abort_input(sprintf("`assay` must be one assay of `%s`: a name among %s or a number from 1 to %d.",
                        arg, if (length(nms)) paste0('"', nms, '"', collapse = ", ") else "(none)", n))
  }
  M <- SummarizedExperiment::assay(X, assay, withDimnames = TRUE)
  if (methods::is(M, "DelayedArray")) M <- realize_delayed(M)
  M
}

# A DelayedArray in memory: a dgCMatrix when its seed is sparse, else dense.
realize_delayed <- function(M) {
  dn <- dimnames(M)
  sparse <- requireNamespace("DelayedArray", quietly = TRUE) && DelayedArray::is_sparse(M)
  out <- if (sparse) methods::as(M, "dgCMatrix") else as.matrix(M)
  dimnames(out) <- dn
  out
}

#' A fit as a reduced dimension of a SingleCellExperiment
#'
#' The coefficients of a fit as a samples x factors matrix, the layout of
#' `SingleCellExperiment::reducedDim()`: row `j` holds the posterior mean (or
#' point estimate) of `H[, j]`. The basis `W` (features x factors) is attached
#' as the attribute `"rotation"` (the convention of `prcomp()` and of
#' `scater::runPCA()`), and, for fits with a posterior (Gibbs, VB), the
#' posterior standard deviations as the attributes `"sd"` (of `t(H)`) and
#' `"rotation_sd"` (of `W`). With `type = "LinearEmbeddingMatrix"` the result
#' is a `SingleCellExperiment::LinearEmbeddingMatrix` whose
#' `featureLoadings` are `W` and whose `factorData` holds each factor's
#' share of the fitted signal.
#'
#' @param fit A `bnmf` fit (of a matrix or of a SummarizedExperiment).
#' @param type `"matrix"` or `"LinearEmbeddingMatrix"` (needs the
#'   Bioconductor package SingleCellExperiment).
#' @return A J x K matrix with attributes, or a `LinearEmbeddingMatrix`.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, 1:20], rank = 2, method = "vb")
#' rd <- as_reduced_dim(fit)
#' dim(rd)
#' dim(attr(rd, "rotation"))
#' \donttest{
#' # (loading SingleCellExperiment takes a few seconds)
#' if (requireNamespace("SingleCellExperiment", quietly = TRUE)) {
#'   sce <- SingleCellExperiment::SingleCellExperiment(
#'     assays = list(logcounts = leukemia[1:60, 1:20]))
#'   fit <- bnmf(sce, rank = 2, assay = "logcounts", method = "vb")
#'   SingleCellExperiment::reducedDim(sce, "bnmf") <- as_reduced_dim(fit)
#'   SingleCellExperiment::reducedDimNames(sce)
#' }
#' }
#' @export
as_reduced_dim <- function(fit, type = c("matrix", "LinearEmbeddingMatrix")) {
  if (!inherits(fit, "bnmf")) abort_not_fit(fit)
  type <- check_choice(type, c("matrix", "LinearEmbeddingMatrix"), "type")
  f <- wh_view(fit)
  W <- f$W
  H <- f$H
  if (is.null(W) || is.null(H)) {
    abort_input("`fit`: `as_reduced_dim()` needs a fit with a basis `W` and coefficients `H`.")
  }
  out <- t(H)
  dimnames(out) <- list(fit$dimnames[[2L]], colnames(W))
  if (type == "LinearEmbeddingMatrix") {
    if (!requireNamespace("SingleCellExperiment", quietly = TRUE)) {
      abort_input("`type = \"LinearEmbeddingMatrix\"` needs the Bioconductor package SingleCellExperiment.")
    }
    fd <- S4Vectors_frame(share = factor_shares(W, H), row.names = colnames(W))
    le <- SingleCellExperiment::LinearEmbeddingMatrix(sampleFactors = out,
                                                      featureLoadings = W, factorData = fd)
    rownames(le) <- rownames(out)
    return(le)
  }
  attr(out, "rotation") <- W
  if (!is.null(fit$H_sd)) attr(out, "sd") <- t(fit$H_sd)
  if (!is.null(fit$W_sd)) attr(out, "rotation_sd") <- fit$W_sd
  out
}

# A DataFrame of S4Vectors (installed with SingleCellExperiment).
S4Vectors_frame <- function(..., row.names) {
  df <- methods::as(data.frame(..., row.names = row.names), "DataFrame")
  df
}

# A vector of ranks in bnmf() (the rank survey of the NMF package): say how
# to compare ranks.
check_rank_survey <- function(rank) {
  if (!is.numeric(rank) || length(rank) < 3L) return(invisible())
  shown <- if (length(rank) > 1L && all(diff(rank) == 1)) sprintf("%g:%g", min(rank), max(rank)) else
    sprintf("c(%s)", paste(format(rank), collapse = ", "))
  abort_input(sprintf("`rank` must be one number of factors K (or two, c(K, L), for a tri-factorisation), not %s. To compare ranks, use `sel <- select_rank(X, ranks = %s)` (criterion \"chib\", \"bic\", \"cv\" or \"ard\"), then `bnmf(X, rank = best(sel))`.",
                      shown, shown))
}

# The rows of new data `Xn` in the order of the fit's features: by row name
# when both have names, by position when neither has; an error otherwise.
match_features <- function(object, Xn, arg = "newdata") {
  fit_rn <- object$dimnames[[1L]]
  new_rn <- rownames(Xn)
  I <- object$dims[1L]
  if (is.null(fit_rn) && is.null(new_rn)) {
    if (nrow(Xn) != I) {
      abort_input(sprintf("`%s` must have %d rows (the features of the fit), not %d.",
                          arg, I, nrow(Xn)))
    }
    return(Xn)
  }
  if (is.null(fit_rn) || is.null(new_rn)) {
    abort_input(sprintf("`%s`: %s has row names and %s has none, so its features cannot be matched; give both row names (matched by name) or neither (matched by position).",
                        arg, if (is.null(fit_rn)) sprintf("`%s`", arg) else "the data of the fit",
                        if (is.null(fit_rn)) "the data of the fit" else sprintf("`%s`", arg)))
  }
  if (anyDuplicated(new_rn)) {
    abort_input(sprintf("`%s` has duplicated row names (%s); features are matched by name.",
                        arg, paste(utils::head(unique(new_rn[duplicated(new_rn)]), 3L), collapse = ", ")))
  }
  idx <- match(fit_rn, new_rn)
  if (anyNA(idx)) {
    miss <- fit_rn[is.na(idx)]
    abort_input(sprintf("`%s` lacks %d of the %d features of the fit (by row name), e.g. %s.",
                        arg, length(miss), I,
                        paste0('"', utils::head(miss, 3L), '"', collapse = ", ")))
  }
  if (identical(idx, seq_len(nrow(Xn)))) return(Xn)
  check_data_matrix(Xn[idx, , drop = FALSE], arg)
}
