# fitted() and residuals(): the posterior mean (or point value) of W H on the
# data's entries, and X minus it. wh_mean() is that mean on every entry
# (dense), shared with predict(); a Gibbs fit reads it from its running
# moments or kept draws.

#' Fitted values, predictions and residuals
#'
#' `fitted()` is the posterior mean of `W %*% H` (Gibbs: the average of the
#' product over the draws, not the product of the averages) or its value at
#' the posterior mode (ICM). For a sparse `X` it is returned on the stored
#' entries of `X`, as a sparse matrix of the same pattern.
#'
#' `predict()` without `newdata` returns the posterior mean of every entry
#' (including the missing ones, which is how missing values are imputed; for
#' a Gibbs fit of a sparse `X`, whose running moments cover the stored entries
#' only, it averages the kept draws with `keep = "draws"` and otherwise uses
#' the product of the posterior means of `W` and `H`), and
#' with `se.fit = TRUE` also its posterior standard deviation (Gibbs fits of a
#' dense `X`). With `newdata` (new samples: a matrix with the same rows as `X`,
#' `NA` allowed) it infers their coefficients `H` given the basis `W`, held
#' at its posterior mean (Gibbs: with `tau` at its posterior mean, by `iter`
#' Gibbs sweeps; ICM: at the mode), and returns them (`type = "coef"`) or the
#' reconstruction `W %*% H` of the new samples (`type = "response"`).
#'
#' @param object A `bnmf` fit.
#' @param newdata `NULL`, or a matrix of new samples (columns) with the same
#'   features (rows) as the data of the fit.
#' @param type `"response"` (reconstructed data) or `"coef"` (coefficients `H`).
#' @param se.fit Also return posterior standard deviations.
#' @param iter Gibbs sweeps used to infer the coefficients of `newdata`.
#' @param ... Not used.
#' @return A matrix, or with `se.fit = TRUE` a list `fit`, `se.fit`.
#' @examples
#' X <- leukemia[1:60, 1:40]
#' X[5, 3] <- NA
#' set.seed(2)
#' fit <- bnmf(X, rank = 2, iter = 300)
#' predict(fit)[5, 3]               # imputed entry
#' dim(fitted(fit))
#' r <- residuals(fit)
#' h_new <- predict(fit, newdata = leukemia[1:60, 41:45], type = "coef")
#' @name predict.bnmf
NULL

#' @rdname predict.bnmf
#' @export
fitted.bnmf <- function(object, ...) {
  if (!object$sparse) return(wh_mean(object))
  X <- object$X
  cols <- rep.int(seq_len(ncol(X)) - 1L, diff(X@p))
  X@x <- wh_entries(object$W, object$H, X@i, cols)
  X
}

#' @rdname predict.bnmf
#' @export
fitted.bnmf_gibbs <- function(object, ...) {
  if (!object$sparse) return(NextMethod())
  X <- object$X
  X@x <- object$moments$WH$mean
  X
}

#' @rdname particles
#' @export
fitted.bnmf_particles <- function(object, ...) {
  w <- object$weights
  out <- matrix(0, object$dims[1L], object$dims[2L])
  for (m in which(w > 0)) {
    out <- out + w[[m]] * (object$particles[[m]]$W %*% object$particles[[m]]$H)
  }
  dimnames(out) <- object$dimnames
  out
}

#' @rdname hmc
#' @export
fitted.bnmf_hmc <- function(object, ...) object$WH

# The posterior mean of W H on every entry, as a dense matrix.
wh_mean <- function(object) UseMethod("wh_mean")

wh_mean.bnmf <- function(object) {
  m <- object$W %*% object$H
  dimnames(m) <- object$dimnames
  m
}

# Dense X: the running mean of W H. Sparse X (moments on the stored entries
# only): the average over the kept draws, else the product of the means.
wh_mean.bnmf_gibbs <- function(object) {
  if (object$sparse && is.null(object$draws)) return(NextMethod())
  m <- if (object$sparse) draws_wh_mean(object) else
    matrix(object$moments$WH$mean, object$dims[1L], object$dims[2L])
  dimnames(m) <- object$dimnames
  m
}

draws_wh_mean <- function(object) {
  I <- object$dims[1L]; J <- object$dims[2L]; K <- object$rank
  acc <- matrix(0, I, J)
  n <- 0
  for (d in object$draws) {
    for (t in seq_len(ncol(d$W))) {
      acc <- acc + matrix(d$W[, t], I, K) %*% matrix(d$H[, t], K, J)
      n <- n + 1
    }
  }
  acc / n
}

#' @rdname predict.bnmf
#' @export
residuals.bnmf <- function(object, ...) {
  X <- object$X
  if (object$sparse) X <- as.matrix(X)
  X - predict(object)
}

# Sum of squared errors over the observed entries at the point estimate.
sse_obs <- function(object) {
  sum(residuals(object)^2, na.rm = TRUE)
}
