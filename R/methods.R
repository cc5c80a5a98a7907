#' Factor matrices of a fit
#'
#' `factors()` returns the posterior-mean (Gibbs) or point (ICM) factor
#' matrices as a named list `W`, `H`; `basis()` returns `W` (I x K) and
#' `coef()` returns `H` (K x J).
#'
#' @param object A `bnmf` fit.
#' @param ... Not used.
#' @return A list of matrices (`factors()`) or a matrix.
#' @examples
#' fit <- bnmf(leukemia[1:50, ], rank = 2, method = "icm")
#' str(factors(fit))
#' dim(basis(fit))
#' dim(coef(fit))
#' @export
factors <- function(object, ...) UseMethod("factors")

#' @rdname factors
#' @export
factors.bnmf <- function(object, ...) list(W = object$W, H = object$H)

#' @rdname factors
#' @export
factors.default <- function(object, ...) abort_not_fit(object)

#' @rdname factors
#' @export
basis <- function(object, ...) UseMethod("basis")

#' @rdname factors
#' @export
basis.bnmf <- function(object, ...) object$W

#' @rdname factors
#' @export
basis.default <- function(object, ...) abort_not_fit(object)

abort_not_fit <- function(object) {
  abort_input(sprintf("`object` must be a bnmf fit, not an object of class %s.",
                      class(object)[1L]))
}

#' @rdname factors
#' @export
coef.bnmf <- function(object, ...) object$H

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
  X <- object$X
  if (object$sparse) {
    vals <- if (object$method == "gibbs") object$moments$WH$mean else {
      cols <- rep.int(seq_len(ncol(X)) - 1L, diff(X@p))
      wh_entries(object$W, object$H, X@i, cols)
    }
    out <- X
    out@x <- vals
    return(out)
  }
  wh_mean(object)
}

wh_mean <- function(object) {
  m <- if (object$method == "gibbs" && !object$sparse) {
    matrix(object$moments$WH$mean, object$dims[1L], object$dims[2L])
  } else if (object$method == "gibbs" && !is.null(object$draws)) {
    draws_wh_mean(object)
  } else {
    object$W %*% object$H
  }
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
predict.bnmf <- function(object, newdata = NULL, type = c("response", "coef"),
                         se.fit = FALSE, iter = 500, ...) {
  type <- check_choice(type, c("response", "coef"), "type")
  se.fit <- check_flag(se.fit, "se.fit")
  if (is.null(newdata)) {
    if (type == "coef") {
      return(if (se.fit) list(fit = object$H, se.fit = object$H_sd) else object$H)
    }
    m <- wh_mean(object)
    if (!se.fit) return(m)
    if (object$method != "gibbs" || object$sparse) {
      abort_input("`se.fit`: posterior standard deviations need a Gibbs fit of a dense matrix.")
    }
    s <- matrix(moment_sd(object$moments$WH$m2, object$moments$WH$n),
                object$dims[1L], object$dims[2L], dimnames = object$dimnames)
    return(list(fit = m, se.fit = s))
  }
  iter <- check_count(iter, "iter", min = 2)
  Xn <- check_data_matrix(newdata, "newdata")
  if (nrow(Xn) != object$dims[1L]) {
    abort_input(sprintf("`newdata` must have %d rows (the features of the fit), not %d.",
                        object$dims[1L], nrow(Xn)))
  }
  K <- object$rank
  Jn <- ncol(Xn)
  data_c <- prepare_data(Xn, K)
  lamH <- object$prior$lamH
  lam_new <- if (length(unique(as.vector(lamH))) == 1L) {
    matrix(lamH[1L], K, Jn)
  } else {
    abort_input("`newdata` cannot be used with entry-wise prior rates of `H`.")
  }
  prior_c <- list(lamW = object$prior$lamW, lamH = lam_new,
                  alpha = object$noise$shape, beta = object$noise$rate)
  mean_x <- data_c$sum_obs / data_c$n_obs
  s <- sqrt(max(mean_x, .Machine$double.eps) / K)
  start <- list(W = object$W, H = matrix(s, K, Jn), tau = object$tau)
  gibbs <- object$method == "gibbs"
  res <- run_chain(Xn, data_c, prior_c, object$method,
                   iter = if (gibbs) iter else 1000L,
                   burnin = if (gibbs) iter %/% 2L else 0L, thin = 1L,
                   keep = "summary", tol = if (gibbs) 0 else 1e-10, start = start,
                   progress = FALSE, masked = !gibbs, fix_W = TRUE)
  st <- res$state
  kn <- factor_names(K)
  if (gibbs) {
    H <- matrix(st$H_mean, K, Jn, dimnames = list(kn, colnames(Xn)))
    H_sd <- matrix(moment_sd(st$H_m2, st$n_kept), K, Jn, dimnames = dimnames(H))
  } else {
    H <- matrix(st$H, K, Jn, dimnames = list(kn, colnames(Xn)))
    H_sd <- NULL
  }
  if (type == "coef") return(if (se.fit) list(fit = H, se.fit = H_sd) else H)
  if (gibbs && !data_c$sparse) {
    m <- matrix(st$WH_mean, nrow(Xn), Jn, dimnames = list(rownames(Xn), colnames(Xn)))
    if (!se.fit) return(m)
    return(list(fit = m, se.fit = matrix(moment_sd(st$WH_m2, st$n_kept), nrow(Xn), Jn,
                                         dimnames = dimnames(m))))
  }
  m <- object$W %*% H
  dimnames(m) <- list(rownames(Xn), colnames(Xn))
  m
}

#' @rdname predict.bnmf
#' @export
residuals.bnmf <- function(object, ...) {
  X <- object$X
  if (object$sparse) X <- as.matrix(X)
  X - wh_mean(object)
}

# Sum of squared errors over the observed entries at the point estimate.
sse_obs <- function(object) {
  sum(residuals(object)^2, na.rm = TRUE)
}

#' Log-likelihood, noise level and number of observations
#'
#' `logLik()` is the Gaussian log-likelihood of the observed entries at the
#' point estimate: the posterior means of `W %*% H` and `tau` (Gibbs) or the
#' posterior mode (ICM). Its `df` counts the non-zero entries of `W` and `H`
#' plus one for `tau` (for ICM, the effective number of parameters of Schmidt
#' et al. (2009); for Gibbs, every entry). `sigma()` is the posterior mean of
#' the noise standard deviation `1 / sqrt(tau)` (Gibbs, over the kept sweeps)
#' or its value at the mode (ICM). `nobs()` is the number of observed entries.
#'
#' @param object A `bnmf` fit.
#' @param ... Not used.
#' @examples
#' fit <- bnmf(leukemia[1:50, ], rank = 2, method = "icm")
#' logLik(fit)
#' sigma(fit)
#' nobs(fit)
#' @return `logLik()`: an object of class `logLik`; `sigma()`, `nobs()`: numbers.
#' @export
logLik.bnmf <- function(object, ...) {
  n <- object$n_obs
  tau <- object$tau
  val <- 0.5 * n * (log(tau) - log(2 * pi)) - 0.5 * tau * sse_obs(object)
  df <- if (object$method == "icm") sum(object$W > 0) + sum(object$H > 0) + 1 else
    length(object$W) + length(object$H) + 1
  structure(val, df = df, nobs = n, class = "logLik")
}

#' @rdname logLik.bnmf
#' @export
sigma.bnmf <- function(object, ...) {
  if (object$method == "gibbs") {
    tau <- kept_trace(object)$tau
    return(mean(1 / sqrt(tau)))
  }
  1 / sqrt(object$tau)
}

#' @rdname logLik.bnmf
#' @export
nobs.bnmf <- function(object, ...) object$n_obs

# Rows of the trace that correspond to kept (thinned, post burn-in) draws.
kept_trace <- function(object) {
  tr <- object$trace[object$trace$sampling, , drop = FALSE]
  thin <- object$settings$thin
  keep <- stats::ave(seq_len(nrow(tr)), tr$chain, FUN = seq_along) %% thin == 0
  tr[keep, , drop = FALSE]
}

#' @export
print.bnmf <- function(x, ...) {
  I <- x$dims[1L]; J <- x$dims[2L]
  what <- c(gibbs = "Gibbs sampling", icm = "iterated conditional modes (posterior mode)")
  cat(sprintf("Bayesian NMF by %s\n", what[[x$method]]))
  cat(sprintf("  X: %d x %d%s, %s observed (%d missing)\n", I, J,
              if (x$sparse) " (sparse)" else "", format(x$n_obs, big.mark = ","),
              x$n_missing))
  cat(sprintf("  rank: %d\n", x$rank))
  cat(sprintf("  prior: W, H ~ Exp(rate = %s)%s\n", format_rate(x$prior$rate),
              if (isTRUE(x$prior$auto)) "  [auto: sqrt(K / mean(X))]" else ""))
  cat(sprintf("  noise: tau ~ Gamma(shape = %s, rate = %s)\n",
              format(x$noise$shape), format(x$noise$rate)))
  s <- x$settings
  if (x$method == "gibbs") {
    cat(sprintf("  %d chain%s x %d sweeps (burn-in %d, thin %d): %d draws\n",
                s$chains, if (s$chains > 1) "s" else "", s$iter, s$burnin, s$thin,
                x$n_draws))
    cat(sprintf("  tau: %s (sd %s); sigma = %s\n", format(signif(x$tau, 4)),
                format(signif(x$tau_sd, 3)), format(signif(sigma(x), 4))))
  } else {
    cat(sprintf("  %s after %d sweeps%s; log posterior %s\n",
                if (x$converged[x$best]) "converged" else "not converged",
                x$iterations[x$best],
                if (s$chains > 1) sprintf(" (best of %d restarts)", s$chains) else "",
                format(signif(x$logpost, 8))))
    cat(sprintf("  tau: %s; sigma = %s\n", format(signif(x$tau, 4)),
                format(signif(sigma(x), 4))))
  }
  invisible(x)
}
