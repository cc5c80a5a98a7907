# fitted() and residuals(): the posterior mean (or point value) of W H on the
# data's entries, and X minus it. wh_mean() is that mean on every entry
# (dense), shared with predict(); wh_at() the same on a set of entries. A
# Gibbs fit reads it from its running moments or kept draws. For a sparse X
# everything works on entries and sums (memory O(nnz + (I + J) K)); a dense
# I x J result is refused above getOption("bnmf.max_dense").

#' Fitted values, predictions and residuals
#'
#' `fitted()` is the posterior mean of `W %*% H` (Gibbs: the average of the
#' product over the draws, not the product of the averages) or its value at
#' the posterior mode (ICM). For a sparse `X` it is returned on the stored
#' entries of `X`, as a sparse matrix of the same pattern.
#'
#' `predict()` without `newdata` returns the posterior mean of every entry
#' (including the missing ones, which is how missing values are imputed), and
#' with `se.fit = TRUE` also its posterior standard deviation (Gibbs and VB
#' fits). With `i` and `j` it returns them on those entries only, as vectors:
#' `predict(fit, i = c(1, 5), j = c(2, 2))` is entries (1, 2) and (5, 2);
#' `i` may also be a two-column matrix of (row, column) pairs, and rows and
#' columns may be given by name. With `newdata` (new samples: a matrix with
#' the same rows as `X`, `NA` allowed) it infers their coefficients `H` given
#' the basis `W`, held at its posterior mean (Gibbs: with `tau` at its
#' posterior mean, by `iter` Gibbs sweeps; ICM: at the mode), and returns
#' them (`type = "coef"`) or the reconstruction `W %*% H` of the new samples
#' (`type = "response"`).
#'
#' `residuals()` is `X` minus the posterior mean, on every entry (`NA` where
#' `X` is missing), or with `i` and `j` on those entries.
#'
#' @section Sparse data:
#' For a fit to a `Matrix::dgCMatrix` every method works in memory of order
#' of the stored entries plus the factors: `fitted()` on the stored entries,
#' `predict()` and `residuals()` on the entries asked for (`i`, `j`), and
#' `logLik()`, `summary()` (RMSE, R^2) through sums that never form the
#' I x J matrix (the unstored zeros enter through
#' `sum((W %*% H)^2) = sum(crossprod(W) * tcrossprod(H))`). A Gibbs fit
#' keeps the running moments of `W %*% H` on the stored entries only: there
#' the posterior mean is exact; on the other entries it is the average over
#' the kept draws (`keep = "draws"`), else the product of the posterior means
#' of `W` and `H`. The results that are dense by nature, `predict()` and
#' `residuals()` of every entry and `se.fit` of every entry, are refused with
#' an error of class `bnmf_error_dense` (also a `bnmf_error_input`) when `I *
#' J` is above `getOption("bnmf.max_dense", 5e7)` values (400 MB of doubles);
#' the message gives the size and how to ask for part of it. A dense `X`
#' is held by the fit already, and its dense results are never refused.
#'
#' @param object A `bnmf` fit.
#' @param newdata `NULL`, or a matrix of new samples (columns) with the same
#'   features (rows) as the data of the fit. Features are matched by row
#'   name when the fit's data and `newdata` both have row names (every
#'   feature of the fit must be among the rows of `newdata`, in any order;
#'   other rows are ignored), and by position only when neither has them; a
#'   `bnmf_error_input` otherwise.
#' @param type `"response"` (reconstructed data) or `"coef"` (coefficients `H`).
#' @param se.fit Also return posterior standard deviations.
#' @param iter Gibbs sweeps used to infer the coefficients of `newdata`.
#' @param i,j `NULL` (every entry), or the entries to return: row and column
#'   indices (or names) of equal length (or one of them of length 1), or `i`
#'   a two-column matrix of (row, column) pairs and `j` `NULL`.
#' @param ... Not used: an argument here is an error.
#' @return A matrix (a vector with `i`, `j`), or with `se.fit = TRUE` a list
#'   `fit`, `se.fit`.
#' @examples
#' X <- leukemia[1:60, 1:40]
#' X[5, 3] <- NA
#' set.seed(2)
#' fit <- bnmf(X, rank = 2, iter = 300)
#' predict(fit)[5, 3]               # imputed entry
#' predict(fit, i = 5, j = 3)       # the same, without the dense matrix
#' dim(fitted(fit))
#' r <- residuals(fit)
#' h_new <- predict(fit, newdata = leukemia[1:60, 41:45], type = "coef")
#' @name predict.bnmf
NULL

#' @rdname predict.bnmf
#' @export
fitted.bnmf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  if (!object$sparse) return(wh_mean(object))
  X <- object$X
  X@x <- wh_at(object, X@i + 1L, stored_cols(X))
  X
}

#' @rdname predict.bnmf
#' @export
fitted.bnmf_gibbs <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  if (!object$sparse) return(NextMethod())
  X <- object$X
  X@x <- object$moments$WH$mean
  X
}

#' @rdname particles
#' @export
fitted.bnmf_particles <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  if (object$sparse) return(parts_fitted(object, object$particles, object$weights))
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
fitted.bnmf_hmc <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  if (object$sparse && is.null(object$WH)) {
    return(parts_fitted(object, hmc_draw_list(object), rep(1 / object$n_draws, object$n_draws)))
  }
  object$WH %||% predict(object)
}

# The posterior mean of W H on every entry, as a dense matrix (sparse fits:
# refused above the dense limit, check_dense()).
wh_mean <- function(object) UseMethod("wh_mean")

wh_mean.bnmf <- function(object) {
  check_dense(object, "`predict()`")
  m <- object$W %*% object$H
  dimnames(m) <- object$dimnames
  m
}

# Dense X: the running mean of W H. Sparse X (moments on the stored entries
# only): on the stored entries the running mean, elsewhere the average over
# the kept draws, else the product of the means. A DelayedMatrix fitted by
# blocks (no moments of W H): the latter everywhere.
wh_mean.bnmf_gibbs <- function(object) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  if (!length(object$moments$WH$mean)) {
    # none kept (a fit by blocks of a DelayedMatrix): as elsewhere on a
    # sparse X, the average over the kept draws, else the product of the means
    if (is.null(object$draws)) return(NextMethod())
    check_dense(object, "`predict()`")
    m <- draws_wh_mean(object)
    dimnames(m) <- object$dimnames
    return(m)
  }
  if (!object$sparse) {
    return(matrix(object$moments$WH$mean, object$dims[1L], object$dims[2L],
                  dimnames = object$dimnames))
  }
  m <- if (is.null(object$draws)) NextMethod() else {
    check_dense(object, "`predict()`")
    draws_wh_mean(object)
  }
  X <- object$X
  m[cbind(X@i + 1L, stored_cols(X))] <- object$moments$WH$mean
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
residuals.bnmf <- function(object, i = NULL, j = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "residuals")
  if (!is.null(i) || !is.null(j)) {
    e <- check_entries(object, i, j)
    return(data_at(object$X, e$i, e$j) - wh_at(object, e$i, e$j))
  }
  check_dense(object, "`residuals()`")
  X <- fit_x(object)
  if (!is.matrix(X)) X <- as.matrix(X)
  X - predict(object)
}

# Sum of squared errors over the observed entries at the point estimate.
sse_obs <- function(object) {
  if (object$sparse) return(sparse_fit_sums(object)$sse)
  sum(residuals(object)^2, na.rm = TRUE)
}

# RMSE and R^2 over the observed entries (with notes), for summary() and
# glance(): a dense fit through its residuals, a sparse one through sums
# that never form I x J values.
fit_stats <- function(object) UseMethod("fit_stats")

fit_stats.bnmf <- function(object) {
  if (object$sparse) {
    s <- sparse_fit_sums(object)
    return(quality_from_sums(s$sse, s$tss, s$n, 1))
  }
  fit_quality(residuals(object), fit_x(object))
}

# The data of a fit in memory: X, or a DelayedArray X (a Poisson VB fit by
# blocks from a file) read whole, for the results of I x J values.
fit_x <- function(object) {
  X <- object$X
  if (is_delayed(X)) realize_delayed(X) else X
}

# NMTF: the point estimate F S G' (a sparse X through its sums).
fit_stats.bnmf_nmtf <- function(object) {
  n <- object$n_obs
  sse <- nmtf_sse_point(object)
  vals <- if (object$sparse) object$X@x else object$X
  ss <- sum(vals^2, na.rm = TRUE)
  sst <- ss - sum(vals, na.rm = TRUE)^2 / n
  quality_from_sums(sse, sst, n, 1)
}

# HMC and particle fits: the posterior (weighted) mean of W H through the
# residuals, NA (with a note) where they would be dense above the limit.
fit_stats.bnmf_hmc <- function(object) {
  if (dense_allowed(object)) return(fit_quality(residuals(object), object$X))
  list(rmse = NA_real_, r_squared = NA_real_,
       notes = "RMSE and R^2 are NA: the residuals of this sparse X would be a dense matrix above getOption(\"bnmf.max_dense\")")
}

fit_stats.bnmf_particles <- fit_stats.bnmf_hmc

# RRT: the mean over its components, fitted() (RRT works on a dense X).
fit_stats.bnmf_rrt <- function(object) {
  X <- as.matrix(object$X)
  fit_quality(X - fitted(object), X)
}

# ---- Sparse fits: everything on entries, in memory O(nnz + (I + J) K) ----

# 1-based columns of the stored entries of a dgCMatrix.
stored_cols <- function(X) rep.int(seq_len(ncol(X)), diff(X@p))

# Linear indices (doubles: I J may pass 2^31) of the entries (i, j), 1-based.
linear_index <- function(i, j, I) as.double(i) + (as.double(j) - 1) * I

# For entries (i, j): their positions among the stored entries of the
# dgCMatrix X (in X@x), NA where the entry is not stored.
stored_pos <- function(X, i, j) {
  keys <- linear_index(X@i + 1L, stored_cols(X), nrow(X))
  match(linear_index(i, j, nrow(X)), keys)
}

# The data at entries (i, j): a sparse X's unstored entries are zeros.
data_at <- function(X, i, j) {
  if (is_delayed(X)) {
    # a fit from a file: the columns asked for only
    u <- sort(unique(j))
    return(data_at(realize_delayed(X[, u, drop = FALSE]), i, match(j, u)))
  }
  if (!inherits(X, "dgCMatrix")) return(X[cbind(i, j)])
  pos <- stored_pos(X, i, j)
  out <- numeric(length(pos))
  out[!is.na(pos)] <- X@x[pos[!is.na(pos)]]
  out
}

# The posterior mean (or point value) of (W H)_ij at entries (i, j), 1-based.
wh_at <- function(object, i, j) UseMethod("wh_at")

wh_at.bnmf <- function(object, i, j) {
  tm <- wh_terms(object)
  wh_entries(tm$A, tm$B, i - 1L, j - 1L)
}

# Gibbs: the running moments where the fit keeps them (every entry of a
# dense X, the stored entries of a sparse one); elsewhere wh_terms().
wh_at.bnmf_gibbs <- function(object, i, j) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  moments_at(object, object$moments$WH$mean, i, j)
}

# The running mean `m` of a Gibbs fit's W H at entries (i, j): kept on every
# entry of a dense X, on the stored entries of a sparse one, on none of a
# DelayedMatrix fitted by blocks; elsewhere wh_terms().
moments_at <- function(object, m, i, j) {
  if (!length(m)) return(wh_at.bnmf(object, i, j))
  if (!object$sparse) return(m[linear_index(i, j, object$dims[1L])])
  pos <- stored_pos(object$X, i, j)
  out <- numeric(length(pos))
  st <- !is.na(pos)
  out[st] <- m[pos[st]]
  if (!all(st)) out[!st] <- wh_at.bnmf(object, i[!st], j[!st])
  out
}

# The estimate of W H where no running moments are kept, as a product A B
# (I x L times L x J): the point estimate W H; for Gibbs the product of the
# posterior means, or with kept draws their average, [W_1 .. W_T] / T
# stacked on [H_1; ..; H_T].
wh_terms <- function(object) UseMethod("wh_terms")

wh_terms.bnmf <- function(object) list(A = unname(object$W), B = unname(object$H))

# NMTF: F S times t(G) (the product of the posterior means for Gibbs).
wh_terms.bnmf_nmtf <- function(object) {
  list(A = unname(object$F %*% object$S), B = unname(t(object$G)))
}

# NMTF Gibbs: the running moments of F S t(G) where the fit keeps them (every
# entry of a dense X, the stored entries of a sparse one).
wh_at.bnmf_nmtf <- function(object, i, j) {
  if (object$method != "gibbs") return(NextMethod())
  moments_at(object, object$moments$X$mean, i, j)
}

wh_terms.bnmf_gibbs <- function(object) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  if (is.null(object$draws)) return(NextMethod())
  I <- object$dims[1L]; J <- object$dims[2L]; K <- object$rank
  Ws <- lapply(object$draws, function(d) matrix(d$W, I))
  Hs <- lapply(object$draws, function(d) {
    n <- ncol(d$H)
    matrix(aperm(array(d$H, c(K, J, n)), c(1L, 3L, 2L)), K * n, J)
  })
  A <- do.call(cbind, Ws)
  list(A = A / (ncol(A) / K), B = do.call(rbind, Hs))
}

# sum over all I x J entries of (A B)_ij^2 = sum((A'A) * (B B')), over
# blocks of the inner dimension (L may be draws x K).
gram_sum <- function(A, B, block = 512L) {
  L <- ncol(A)
  blocks <- split(seq_len(L), (seq_len(L) - 1L) %/% block)
  s <- 0
  for (a in blocks) for (b in blocks) {
    s <- s + sum(crossprod(A[, a, drop = FALSE], A[, b, drop = FALSE]) *
                   tcrossprod(B[a, , drop = FALSE], B[b, , drop = FALSE]))
  }
  s
}

# The sums behind logLik() and summary() of a fit to a sparse X: sse, the
# sum of squared errors over the observed entries, tss, their total sum of
# squares around their mean, and n. Stored entries one by one; the unstored
# zeros through sum_(unstored) m^2 = sum_(all) (A B)^2 - sum_(stored) (A B)^2
# with A B = wh_terms().
sparse_fit_sums <- function(object) {
  X <- object$X
  i <- X@i + 1L
  j <- stored_cols(X)
  obs <- !is.na(X@x)
  m <- wh_at(object, i, j)
  tm <- wh_terms(object)
  ab <- wh_entries(tm$A, tm$B, i - 1L, j - 1L)
  sse_zero <- max(gram_sum(tm$A, tm$B) - sum(ab^2), 0)
  x <- X@x[obs]
  n <- object$n_obs
  xbar <- sum(x) / n
  n_zero <- prod(as.double(object$dims)) - length(X@x)
  list(sse = sum((x - m[obs])^2) + sse_zero,
       tss = sum((x - xbar)^2) + n_zero * xbar^2, n = n)
}

# Entries asked of predict() or residuals(): `i` and `j` (1-based indices or
# row and column names, recycled from length 1), or `i` a two-column matrix.
check_entries <- function(object, i, j) {
  I <- object$dims[1L]; J <- object$dims[2L]
  if (is.matrix(i) && ncol(i) == 2L && is.null(j)) {
    j <- i[, 2L]
    i <- i[, 1L]
  }
  if (is.null(i) || is.null(j)) {
    abort_input("`i` and `j`: give both (the rows and the columns of the entries), or `i` as a two-column matrix of (row, column) pairs.")
  }
  i <- one_index(i, I, object$dimnames[[1L]], "i", "row")
  j <- one_index(j, J, object$dimnames[[2L]], "j")
  n <- max(length(i), length(j))
  if (length(i) != length(j) && min(length(i), length(j)) != 1L) {
    abort_input(sprintf("`i` and `j` must have the same length (or one of them length 1), not %d and %d.",
                        length(i), length(j)))
  }
  list(i = rep_len(i, n), j = rep_len(j, n))
}

# Results of I x J values for a sparse X: refused above
# getOption("bnmf.max_dense") entries, with an error of class
# bnmf_error_dense that says how to ask for part of it.
# Indices 1..n of rows (`side` "row") or columns of the fit's data, by
# number or name.
one_index <- function(x, n, names, arg, side = "column") {
  if (is.character(x)) {
    k <- match(x, names)
    if (anyNA(k)) abort_input(sprintf("`%s`: %s not among the %s names of the fit's data.",
                                      arg, format_index(x[is.na(k)]), side))
    return(k)
  }
  if (!is.numeric(x) || anyNA(x) || any(!is.finite(x)) || any(x != round(x)) ||
      any(x < 1) || any(x > n)) {
    abort_input(sprintf("`%s` must be whole numbers from 1 to %d (or %s names).", arg, n, side))
  }
  as.integer(x)
}

dense_allowed <- function(object) {
  !isTRUE(object$sparse) || prod(as.double(object$dims)) <= max_dense()
}

check_dense <- function(object, what) {
  if (!isTRUE(object$sparse)) return(invisible(TRUE))
  limit <- max_dense()
  n <- prod(as.double(object$dims))
  if (n <= limit) return(invisible(TRUE))
  abort_dense(sprintf(paste(
      "%s of a fit to a sparse %d x %d X would be a dense matrix of %s values (%s GB),",
      "above the limit getOption(\"bnmf.max_dense\") = %s values. Ask for the entries you need:",
      "`predict(fit, i = , j = )` or `residuals(fit, i = , j = )` (rows and columns, or `i` a",
      "two-column matrix); `fitted(fit)` is sparse (the stored entries). Or raise the limit with",
      "`options(bnmf.max_dense = )`."),
      what, object$dims[1L], object$dims[2L], format(n, big.mark = ",", scientific = FALSE),
      format(signif(8 * n / 1e9, 3)), format(limit, big.mark = ",", scientific = FALSE)))
}

# The largest number of values of a dense I x J result for a sparse X
# (default 5e7 doubles, 400 MB).
max_dense <- function() {
  limit <- getOption("bnmf.max_dense", 5e7)
  if (!is.numeric(limit) || length(limit) != 1L || is.na(limit) || limit < 0) {
    abort_input("`options(bnmf.max_dense)` must be a single number >= 0 (values of a dense I x J result).")
  }
  limit
}

# ---- the tri-factorisation (bnmf_nmtf) ----

# The fitted F S G' of an NMTF fit on every entry (dense), or on the stored
# entries of a sparse X: for Gibbs the posterior mean (running means over the
# kept draws; elsewhere than the stored entries of a sparse X the product of
# the posterior means), else the product of the point estimates.
#' @rdname predict.bnmf
#' @export
fitted.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  I <- object$dims[1L]; J <- object$dims[2L]
  gibbs <- object$method == "gibbs"
  if (object$sparse) {
    X <- object$X
    X@x <- if (gibbs) object$moments$X$mean else
      fsg_entries(object$F, object$S, object$G, X@i, stored_cols(X) - 1L)
    return(X)
  }
  m <- if (gibbs) matrix(object$moments$X$mean, I, J) else
    object$F %*% object$S %*% t(object$G)
  dimnames(m) <- object$dimnames
  m
}

#' @export
residuals.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "residuals")
  check_dense(object, "`residuals()`")
  as.matrix(object$X) - nmtf_mean(object)
}

# The posterior mean (point estimate) of F S G' on every entry, dense.
nmtf_mean <- function(object) {
  if (!object$sparse) return(fitted(object))
  check_dense(object, "`predict()`")
  m <- object$F %*% object$S %*% t(object$G)
  if (object$method == "gibbs") {
    X <- object$X
    m[cbind(X@i + 1L, stored_cols(X))] <- object$moments$X$mean
  }
  dimnames(m) <- object$dimnames
  m
}

# The sum of squared errors of the point estimate F S G' over the observed
# entries (a sparse X: its zeros included, through ||F S G'||^2).
nmtf_sse_point <- function(object) {
  F <- unname(object$F); S <- unname(object$S); G <- unname(object$G)
  if (!object$sparse) {
    r <- object$X - F %*% S %*% t(G)
    return(sum(r^2, na.rm = TRUE))
  }
  X <- object$X
  y <- fsg_entries(F, S, G, X@i, stored_cols(X) - 1L)
  all_y2 <- sum((crossprod(F) %*% S) * (S %*% crossprod(G)))
  obs <- !is.na(X@x)
  sum((X@x[obs] - y[obs])^2) + all_y2 - sum(y^2)
}
# ---- the Poisson model (likelihood = "poisson") -----------------------------

#' @export
fitted.bnmf_poisson <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  if (!object$sparse) return(pois_wh_mean(object))
  X <- object$X
  X@x <- wh_entries(unname(object$W), unname(object$H), X@i, stored_cols(X) - 1L)
  X
}

# The posterior mean of W H (Gibbs on a dense X: the running mean; else the
# product of the means).
pois_wh_mean <- function(object) {
  if (!is.null(object$WH)) return(object$WH)
  check_dense(object, "`predict()`")
  m <- object$W %*% object$H
  dimnames(m) <- object$dimnames
  m
}

# ---- RRT + online NVI fits (method "rrt") ----------------------------------

# E_q[W H] = sum_m w_m W_m H_m: within a component W and H are independent
# with means W_m, H_m.
#' @rdname rrt_fit
#' @export
fitted.bnmf_rrt <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "fitted")
  parts <- Map(function(f, w) w * (f$W %*% f$H), object$components, object$weights)
  out <- Reduce(`+`, parts)
  dimnames(out) <- object$dimnames
  out
}
