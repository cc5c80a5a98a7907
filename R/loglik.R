# logLik(), sigma() and nobs(): the Gaussian log-likelihood of the observed
# entries at the point estimate, the noise sd 1 / sqrt(tau), the number of
# observed entries. Fits without a noise model (NP, particles, HMC) say why
# they have none.

#' Log-likelihood, noise level and number of observations
#'
#' `logLik()` is the Gaussian log-likelihood of the observed entries at the
#' point estimate: the posterior means of `W %*% H` and `tau` (Gibbs) or the
#' posterior mode (ICM). Its `df` counts the non-zero entries of `W` and `H`
#' plus one for `tau` (for ICM, the effective number of parameters of Schmidt
#' et al. (2009); for Gibbs, every entry). `sigma()` is the posterior mean of
#' the noise standard deviation `1 / sqrt(tau)` (Gibbs, over the kept sweeps)
#' or its value at the mode (ICM). `nobs()` is the number of observed entries.
#' For a sparse `X` the sum of squared errors runs over the stored entries
#' one by one and over the unstored zeros through the factors, never forming
#' the I x J matrix (see the section Sparse data of [predict.bnmf()]).
#'
#' @param object A `bnmf` fit.
#' @param ... Not used: an argument here is an error.
#' @examples
#' fit <- bnmf(leukemia[1:50, ], rank = 2, method = "icm")
#' logLik(fit)
#' sigma(fit)
#' nobs(fit)
#' @return `logLik()`: an object of class `logLik`; `sigma()`, `nobs()`: numbers.
#' @export
logLik.bnmf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  n <- object$n_obs
  tau <- object$tau
  val <- 0.5 * n * (log(tau) - log(2 * pi)) - 0.5 * tau * sse_obs(object)
  structure(val, df = length(object$W) + length(object$H) + 1, nobs = n, class = "logLik")
}

# ICM: the effective number of parameters, the non-zero entries at the mode.
#' @export
logLik.bnmf_icm <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  ll <- NextMethod()
  attr(ll, "df") <- sum(object$W > 0) + sum(object$H > 0) + 1
  ll
}

#' @export
logLik.bnmf_np <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  abort_unsupported("`object`: method \"np\" (multiplicative updates) has no likelihood; its loss is `object$loss`.")
}

#' @export
logLik.bnmf_particles <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  abort_unsupported("`logLik()` is not defined for a particle fit: its SILF likelihood has no normalising constant; see `summary(fit)` for the log likelihood of each particle up to that constant.")
}

#' @export
logLik.bnmf_hmc <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  abort_unsupported("`logLik()` is not defined for an HMC fit: its SILF likelihood has no normalising constant; see `summary(fit)` and `fit$trace$logpost` for the log posterior up to a constant.")
}

#' @rdname logLik.bnmf
#' @export
sigma.bnmf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  1 / sqrt(object$tau)
}

#' @export
sigma.bnmf_gibbs <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  if (inherits(object, "bnmf_poisson")) return(NextMethod())
  tau <- kept_trace(object)$tau
  mean(1 / sqrt(tau))
}

#' @export
sigma.bnmf_np <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  if (inherits(object, "bnmf_poisson")) return(NextMethod())
  abort_unsupported("`object`: method \"np\" (multiplicative updates) has no noise model.")
}

# E_q[tau^(-1/2)] for q(tau) = Gamma(a, b): sqrt(b) Gamma(a - 1/2) / Gamma(a).
#' @export
sigma.bnmf_vb <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  if (inherits(object, "bnmf_poisson")) return(NextMethod())
  a <- object$q_tau[["shape"]]
  b <- object$q_tau[["rate"]]
  sqrt(b) * exp(lgamma(a - 0.5) - lgamma(a))
}

#' @export
sigma.bnmf_particles <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  abort_unsupported("`sigma()` is not defined for a particle fit: the SILF likelihood has no noise precision.")
}

#' @export
sigma.bnmf_hmc <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  abort_unsupported("`sigma()` is not defined for an HMC fit: the SILF likelihood has no noise precision.")
}

#' @rdname logLik.bnmf
#' @export
nobs.bnmf <- function(object, ...) {
  # stats asks nobs(object, use.fallback = ) where it may not be known; it
  # always is here.
  dots <- list(...)
  dots$use.fallback <- NULL
  check_dots_empty(dots, names(formals()), "nobs")
  object$n_obs
}

# Rows of the trace that correspond to kept (thinned, post burn-in) draws of
# a Gibbs or HMC fit.
kept_trace <- function(object) {
  tr <- object$trace[object$trace$sampling, , drop = FALSE]
  thin <- object$settings$thin
  keep <- stats::ave(seq_len(nrow(tr)), tr$chain, FUN = seq_along) %% thin == 0
  tr[keep, , drop = FALSE]
}

# ---- the tri-factorisation (bnmf_nmtf) ----

#' @export
logLik.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  n <- object$n_obs
  tau <- object$tau
  val <- 0.5 * n * (log(tau) - log(2 * pi)) - 0.5 * tau * nmtf_sse_point(object)
  df <- if (object$method == "icm") sum(object$F > 0) + sum(object$S > 0) + sum(object$G > 0) + 1 else
    length(object$F) + length(object$S) + length(object$G) + 1
  structure(val, df = df, nobs = n, class = "logLik")
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

# The Poisson log-likelihood of the observed entries at the fitted means
# (sparse X: the positive counts one by one, the rest through the factors).
#' @export
logLik.bnmf_poisson <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  W <- unname(object$W)
  H <- unname(object$H)
  X <- object$X
  val <- if (is_delayed(X)) {
    # a fit from a file: its blocks of columns, one at a time
    src <- block_source(X, object$settings$blocks, 0L)
    sum(vapply(src$specs, function(sp) {
      j <- sp$cols[1L]:sp$cols[2L]
      pois_loglik_at(read_block(sp), W, H[, j, drop = FALSE], object$rank)
    }, numeric(1)))
  } else {
    pois_loglik_at(X, W, H, object$rank)
  }
  structure(val, df = length(W) + length(H), nobs = object$n_obs, class = "logLik")
}

# The Poisson log-likelihood of the observed entries of X (a matrix or a
# dgCMatrix) at the means W H.
pois_loglik_at <- function(X, W, H, K) {
  if (inherits(X, "dgCMatrix")) {
    i <- X@i
    j <- stored_cols(X) - 1L
    x <- X@x
  } else {
    pos <- which(!is.na(X) & X > 0)
    i <- (pos - 1L) %% nrow(X)
    j <- (pos - 1L) %/% nrow(X)
    x <- X[pos]
  }
  miss <- is.na(x)
  lam <- wh_entries(W, H, i[!miss & x > 0], j[!miss & x > 0])
  xp <- x[!miss & x > 0]
  d <- prepare_data(X, K)
  total <- sum(colSums(W) * rowSums(H)) -
    sum(wh_entries(W, H, d$miss_i, d$miss_j))
  sum(xp * log(lam)) - sum(lgamma(xp + 1)) - total
}

# A Poisson model has no noise level: sigma() is NA.
#' @export
sigma.bnmf_poisson <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  NA_real_
}

# ---- RRT (method = "rrt") ---------------------------------------------------

# The likelihood of the highest-weight component: Gaussian with the search's
# noise variance sigma2, or Uniform(-epsilon, epsilon) on every residual.
#' @export
logLik.bnmf_rrt <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "logLik")
  n <- object$n_obs
  R <- object$X - object$W %*% object$H
  val <- if (identical(object$likelihood, "uniform")) {
    if (all(abs(R) <= object$epsilon)) -n * log(2 * object$epsilon) else -Inf
  } else {
    -0.5 * n * log(2 * pi * object$sigma2) - 0.5 * sum(R^2) / object$sigma2
  }
  structure(val, df = length(object$W) + length(object$H), nobs = n, class = "logLik")
}

#' @export
sigma.bnmf_rrt <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "sigma")
  if (identical(object$likelihood, "uniform")) {
    abort_unsupported("`sigma()`: an RRT fit with the Uniform likelihood has no noise sd; its residuals lie in (-epsilon, epsilon), `object$epsilon`.")
  }
  sqrt(object$sigma2)
}
