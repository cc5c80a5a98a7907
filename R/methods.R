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
    return(list(fit = m, se.fit = wh_sd(object)))
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
  if (!is.null(object$lambda)) {
    # ARD: the new coefficients get the fitted rates lambda_k (posterior means).
    lam_new <- matrix(object$lambda, K, Jn)
  }
  W <- unname(object$W)
  lamW <- if (!is.null(object$lambda)) matrix(object$lambda, nrow(W), K, byrow = TRUE) else
    object$prior$lamW
  prior_c <- c_prior(object, lamW = lamW, lamH = lam_new, ard = numeric())
  mean_x <- data_c$sum_obs / data_c$n_obs
  s <- sqrt(max(mean_x, .Machine$double.eps) / K)
  start <- list(W = W, H = matrix(s, K, Jn), tau = object$tau %||% 1)
  if (object$method == "vb") {
    b <- object$chains[[object$best]]
    start$W_var <- b$W_var
    start$W_ent <- b$W_ent
    start$tau_rate <- b$tau_rate
  }
  gibbs <- object$method == "gibbs"
  if (object$method == "np" &&
      isTRUE(min(if (data_c$sparse == 1L) Xn@x else Xn, na.rm = TRUE) < 0)) {
    abort_input("`newdata` has negative entries; method \"np\" needs X >= 0.")
  }
  res <- run_chain(Xn, data_c, prior_c, object$method,
                   iter = if (gibbs) iter else 1000L,
                   burnin = if (gibbs) iter %/% 2L else 0L, thin = 1L,
                   keep = "summary", tol = if (gibbs) 0 else 1e-10, start = start,
                   progress = FALSE, masked = !gibbs, fix_W = TRUE,
                   loss = object$settings$loss %||% "euclidean")
  st <- res$state
  kn <- factor_names(K)
  if (gibbs) {
    H <- matrix(st$H_mean, K, Jn, dimnames = list(kn, colnames(Xn)))
    H_sd <- matrix(moment_sd(st$H_m2, st$n_kept), K, Jn, dimnames = dimnames(H))
  } else if (object$method == "vb") {
    H <- matrix(st$H, K, Jn, dimnames = list(kn, colnames(Xn)))
    H_sd <- matrix(sqrt(st$H_var), K, Jn, dimnames = dimnames(H))
  } else {
    H <- matrix(st$H, K, Jn, dimnames = list(kn, colnames(Xn)))
    H_sd <- NULL
  }
  if (type == "coef") {
    if (se.fit && is.null(H_sd)) no_posterior(object, "`se.fit = TRUE`")
    return(if (se.fit) list(fit = H, se.fit = H_sd) else H)
  }
  if (gibbs && !data_c$sparse) {
    m <- matrix(st$WH_mean, nrow(Xn), Jn, dimnames = list(rownames(Xn), colnames(Xn)))
    if (!se.fit) return(m)
    return(list(fit = m, se.fit = matrix(moment_sd(st$WH_m2, st$n_kept), nrow(Xn), Jn,
                                         dimnames = dimnames(m))))
  }
  m <- object$W %*% H
  dimnames(m) <- list(rownames(Xn), colnames(Xn))
  if (!se.fit) return(m)
  if (object$method != "vb") {
    abort_input("`se.fit = TRUE` for `newdata` needs a dense Gibbs fit or a VB fit.")
  }
  list(fit = m, se.fit = q_wh_sd(object$W, object$W_sd^2, H, H_sd^2, dimnames(m)))
}

# Posterior sd of (WH)_ij on every entry.
wh_sd <- function(object) {
  if (object$method == "vb") {
    return(q_wh_sd(object$W, object$W_sd^2, object$H, object$H_sd^2, object$dimnames))
  }
  if (object$method != "gibbs") no_posterior(object, "`se.fit = TRUE`")
  if (object$sparse) abort_input("`se.fit = TRUE` needs a Gibbs fit of a dense matrix, or a VB fit.")
  matrix(moment_sd(object$moments$WH$m2, object$moments$WH$n),
         object$dims[1L], object$dims[2L], dimnames = object$dimnames)
}

# Under mean-field VB, W_ik and H_kj are independent, so
# Var_q((WH)_ij) = sum_k E[W_ik^2] E[H_kj^2] - E[W_ik]^2 E[H_kj]^2
#                = (W^2 Hv + Wv H^2 + Wv Hv)_ij with Wv, Hv the variances.
q_wh_sd <- function(W, Wv, H, Hv, dn) {
  v <- (W^2) %*% Hv + Wv %*% (H^2) + Wv %*% Hv
  m <- sqrt(pmax(v, 0))
  dimnames(m) <- dn
  m
}

# Errors for what a fit without a posterior cannot give.
no_posterior <- function(object, what) {
  desc <- c(icm = "iterated conditional modes (a posterior mode)",
            np = "non-probabilistic multiplicative updates (no posterior)")
  abort_input(sprintf("%s is not available for method \"%s\": it is a point estimate by %s. Refit with method = \"gibbs\" or \"vb\".",
                      what, object$method, desc[[object$method]] %||% object$method))
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
  if (object$method == "np") {
    abort_input("`object`: method \"np\" (multiplicative updates) has no likelihood; its loss is `object$loss`.")
  }
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
  if (object$method == "vb") {
    # E_q[tau^(-1/2)] for q(tau) = Gamma(a, b): sqrt(b) Gamma(a - 1/2) / Gamma(a).
    a <- object$q_tau[["shape"]]
    b <- object$q_tau[["rate"]]
    return(sqrt(b) * exp(lgamma(a - 0.5) - lgamma(a)))
  }
  if (object$method == "np") {
    abort_input("`object`: method \"np\" (multiplicative updates) has no noise model.")
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
  what <- c(gibbs = "Bayesian NMF by Gibbs sampling",
            icm = "Bayesian NMF by iterated conditional modes (posterior mode)",
            vb = "Bayesian NMF by variational Bayes",
            np = sprintf("NMF by multiplicative updates (%s loss)",
                         if (identical(x$settings$loss, "kl")) "Kullback-Leibler" else "Euclidean"))
  cat(what[[x$method]], "\n", sep = "")
  cat(sprintf("  X: %d x %d%s, %s observed (%d missing)\n", I, J,
              if (x$sparse) " (sparse)" else "", format(x$n_obs, big.mark = ","),
              x$n_missing))
  cat(sprintf("  rank: %d\n", x$rank))
  if (identical(x$prior$type, "ard")) {
    act <- ard_relevance(x)
    cat(sprintf("  prior: ARD, W[, k], H[k, ] ~ Exp(lambda_k), lambda_k ~ Gamma(%s, %s)\n  ARD: %d of %d factors active\n",
                format(x$prior$ard[1L]), format(x$prior$ard[2L]), sum(act$active), x$rank))
  } else if (x$method != "np") {
    cat(sprintf("  prior: W, H ~ Exp(rate = %s)%s\n", format_rate(x$prior$rate),
                if (isTRUE(x$prior$auto)) "  [auto: sqrt(K / mean(X))]" else ""))
  }
  if (x$method != "np") {
    cat(sprintf("  noise: tau ~ Gamma(shape = %s, rate = %s)\n",
                format(x$noise$shape), format(x$noise$rate)))
  }
  s <- x$settings
  if (x$method == "gibbs") {
    cat(sprintf("  %d chain%s x %d sweeps (burn-in %d, thin %d): %d draws\n",
                s$chains, if (s$chains > 1) "s" else "", s$iter, s$burnin, s$thin,
                x$n_draws))
    cat(sprintf("  tau: %s (sd %s); sigma = %s\n", format(signif(x$tau, 4)),
                format(signif(x$tau_sd, 3)), format(signif(sigma(x), 4))))
  } else {
    crit <- switch(x$method, icm = sprintf("log posterior %s", format(signif(x$logpost, 8))),
                   vb = sprintf("ELBO %s", format(signif(x$elbo, 8))),
                   np = sprintf("loss %s", format(signif(x$loss, 8))))
    cat(sprintf("  %s after %d sweeps%s; %s\n",
                if (x$converged[x$best]) "converged" else "not converged",
                x$iterations[x$best],
                if (s$chains > 1) sprintf(" (best of %d restarts)", s$chains) else "",
                crit))
    if (x$method == "vb") {
      cat(sprintf("  tau: %s (sd %s); sigma = %s\n", format(signif(x$tau, 4)),
                  format(signif(x$tau_sd, 3)), format(signif(sigma(x), 4))))
    } else if (x$method == "icm") {
      cat(sprintf("  tau: %s; sigma = %s\n", format(signif(x$tau, 4)),
                  format(signif(sigma(x), 4))))
    }
  }
  invisible(x)
}

#' The evidence lower bound of a variational Bayes fit
#'
#' `elbo()` returns the evidence lower bound (ELBO) of a `method = "vb"` fit
#' after each sweep: \eqn{E_q[\log p(X, W, H, \tau)] + H[q]}, computed in closed
#' form (expected log joint density plus the entropies of the truncated
#' normal and Gamma factors of `q`). Coordinate ascent never decreases it,
#' and it is a lower bound on the log marginal likelihood \eqn{\log p(X)}.
#'
#' @param object A `bnmf` fit made with `method = "vb"`.
#' @param ... Not used.
#' @return A numeric vector, one value per sweep (of the kept restart).
#' @examples
#' fit <- bnmf(leukemia[1:50, 1:30], rank = 2, method = "vb")
#' e <- elbo(fit)
#' all(diff(e) >= 0)
#' plot(e, type = "l", xlab = "sweep", ylab = "ELBO")
#' @export
elbo <- function(object, ...) UseMethod("elbo")

#' @rdname elbo
#' @export
elbo.bnmf <- function(object, ...) {
  if (object$method != "vb") {
    abort_input(sprintf("`object`: the ELBO exists for variational Bayes fits (method = \"vb\") only, not method \"%s\".",
                        object$method))
  }
  tr <- object$trace[object$trace$chain == object$best, , drop = FALSE]
  tr$logpost
}
