# Bioconductor in and out: the assay of a SummarizedExperiment (or
# SingleCellExperiment) as the data matrix X of bnmf() and select_rank(), and
# a fit's coefficients as a reducedDim. SummarizedExperiment,
# SingleCellExperiment and DelayedArray are suggested packages, used only when
# the data or the caller ask for them.

#' @section Bioconductor data:
#' `X` may be a `SummarizedExperiment` (for example a
#' `SingleCellExperiment`): its assay `assay` (a name or a number; default the
#' first assay) is the data matrix, features in rows and samples (cells) in
#' columns, with the row and column names of the object. An `ExpressionSet`
#' (Biobase) is taken the same way: its assay data element `assay` (default
#' `"exprs"`, [Biobase::exprs()]). A sparse assay (a `Matrix::dgCMatrix`, or
#' a `DelayedArray` whose seed is sparse) stays sparse (its zeros are
#' observed zeros); another `DelayedArray` (inside a container or bare, such
#' as an `HDF5Matrix`) is read into memory as a dense matrix, except by
#' Poisson VB, which reads a `DelayedArray` by blocks of samples in every
#' sweep (see the section Data in blocks). `assay` is an error for any other
#' `X`.
#' [as_reduced_dim()] turns the fit back into a samples x factors matrix for
#' `SingleCellExperiment::reducedDim()`, and [run_bnmf()] fits a container
#' and returns it with the fit attached.
#' @rdname bnmf
#' @name bnmf
NULL

# The data matrix of `X`: the assay `assay` of a SummarizedExperiment, else
# `X` itself (and then `assay` must be NULL).
# A DelayedArray stays one with keep_delayed = TRUE (Poisson VB reads it by
# blocks).
assay_matrix <- function(X, assay = NULL, arg = "X", keep_delayed = FALSE) {
  if (methods::is(X, "ExpressionSet")) return(eset_matrix(X, assay, arg))
  if (!methods::is(X, "SummarizedExperiment")) {
    if (!is.null(assay)) {
      abort_input(sprintf("`assay` applies only when `%s` is a SummarizedExperiment or an ExpressionSet, not an object of class %s.",
                          arg, class(X)[1L]))
    }
    if (methods::is(X, "DelayedArray") && !keep_delayed) return(realize_delayed(X))
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
  if (methods::is(M, "DelayedArray") && !keep_delayed) M <- realize_delayed(M)
  M
}

# The assay data element `assay` of an ExpressionSet (default "exprs").
eset_matrix <- function(X, assay = NULL, arg = "X") {
  if (!requireNamespace("Biobase", quietly = TRUE)) {
    abort_input(sprintf("`%s` is an ExpressionSet: install the Bioconductor package Biobase to fit it.", arg))
  }
  nms <- Biobase::assayDataElementNames(X)
  if (is.null(assay)) assay <- if ("exprs" %in% nms) "exprs" else nms[1L]
  if (is.numeric(assay) && length(assay) == 1L && !is.na(assay) && assay == round(assay) &&
      assay >= 1 && assay <= length(nms)) {
    assay <- nms[assay]
  }
  if (!(is.character(assay) && length(assay) == 1L && assay %in% nms)) {
    abort_input(sprintf("`assay` must be one assay data element of `%s`: a name among %s or a number from 1 to %d.",
                        arg, paste0('"', nms, '"', collapse = ", "), length(nms)))
  }
  M <- Biobase::assayDataElement(X, assay)
  dimnames(M) <- list(Biobase::featureNames(X), Biobase::sampleNames(X))
  if (methods::is(M, "DelayedArray")) M <- realize_delayed(M)
  M
}

# A DelayedArray in memory: a dgCMatrix when its seed is sparse, else dense.
realize_delayed <- function(M) {
  dn <- dimnames(M)
  sparse <- requireNamespace("DelayedArray", quietly = TRUE) && DelayedArray::is_sparse(M)
  out <- if (sparse) methods::as(M, "dgCMatrix") else as.matrix(M)
  if (!is.null(dn)) dimnames(out) <- dn
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

#' Fit a Bioconductor container and attach the fit to it
#'
#' The container workflow of `scater::runPCA()`: fits [bnmf()] to an assay
#' of a `SingleCellExperiment` or `SummarizedExperiment` and returns the
#' container with the result attached, so that the factors travel with the
#' cells and genes:
#'
#' * the samples' coefficients (the J x K matrix of [as_reduced_dim()], with
#'   its attributes) as `reducedDim(x, name)` of a `SingleCellExperiment`,
#'   or as the matrix column `colData(x)[[name]]` of a
#'   `SummarizedExperiment`;
#' * the basis `W` (I x K) as the matrix column `rowData(x)[[name]]` (the
#'   loadings of the features), and its posterior sds, where the fit has
#'   them, as `rowData(x)[[paste0(name, "_sd")]]`;
#' * the fit itself as `metadata(x)[[name]]`, for `summary()`, `membership()`,
#'   `markers()`, `predict()` and the rest.
#'
#' For a tri-factorisation the coefficients are `S t(G)` and the basis `F`,
#' as everywhere the fit is seen as `W H`.
#'
#' @param x A `SingleCellExperiment` or `SummarizedExperiment`.
#' @param rank,... The rank and further arguments of [bnmf()] (`method`,
#'   `likelihood`, `prior`, `iter`, `assay`, ...).
#' @param name The name under which the result is stored (default
#'   `"bnmf"`).
#' @return `x`, with the fit attached as described.
#' @seealso [as_reduced_dim()] for the coefficients alone.
#' @examples
#' \donttest{
#' # (loading SingleCellExperiment takes a few seconds)
#' if (requireNamespace("SingleCellExperiment", quietly = TRUE)) {
#'   sce <- SingleCellExperiment::SingleCellExperiment(
#'     assays = list(logcounts = leukemia[1:60, 1:20]))
#'   set.seed(1)
#'   sce <- run_bnmf(sce, rank = 2, assay = "logcounts", method = "vb")
#'   dim(SingleCellExperiment::reducedDim(sce, "bnmf"))
#'   dim(SummarizedExperiment::rowData(sce)$bnmf)
#'   summary(S4Vectors::metadata(sce)$bnmf)
#' }
#' }
#' @export
run_bnmf <- function(x, rank, ..., name = "bnmf") {
  if (!methods::is(x, "SummarizedExperiment")) {
    abort_input(sprintf("`x` must be a SingleCellExperiment or SummarizedExperiment, not an object of class %s; for a matrix or an ExpressionSet call `bnmf()`.",
                        class(x)[1L]))
  }
  if (!(is.character(name) && length(name) == 1L && !is.na(name) && nzchar(name))) {
    abort_input("`name` must be a single non-empty string.")
  }
  fit <- bnmf(x, rank = rank, ...)
  fit$call <- match.call()
  rd <- as_reduced_dim(fit)
  f <- wh_view(fit)
  W <- f$W
  dimnames(W) <- list(rownames(x), colnames(W))
  rdata <- SummarizedExperiment::rowData(x)
  rdata[[name]] <- W
  sdW <- if (inherits(fit, "bnmf_nmtf")) NULL else fit$W_sd
  if (!is.null(sdW)) rdata[[paste0(name, "_sd")]] <- sdW
  SummarizedExperiment::rowData(x) <- rdata
  if (methods::is(x, "SingleCellExperiment")) {
    SingleCellExperiment::reducedDim(x, name) <- rd
  } else {
    cdata <- SummarizedExperiment::colData(x)
    cdata[[name]] <- matrix(rd, nrow(rd), dimnames = dimnames(rd))
    SummarizedExperiment::colData(x) <- cdata
  }
  S4Vectors_metadata(x, name, fit)
}

# metadata(x)[[name]] <- value, through S4Vectors (installed with
# SummarizedExperiment).
S4Vectors_metadata <- function(x, name, value) {
  md <- S4Vectors::metadata(x)
  md[[name]] <- value
  S4Vectors::metadata(x) <- md
  x
}

# A DataFrame of S4Vectors (installed with SummarizedExperiment).
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
