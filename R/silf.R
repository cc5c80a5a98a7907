# The particle model of Masood & Doshi-Velez (section 5): a soft insensitive
# loss (SILF) likelihood on an NMF objective, Dirichlet(1) columns of W and
# exponential H; its objectives, their gradients and the score.

#' Soft insensitive likelihood on an NMF objective
#'
#' The likelihood of the particle model (`bnmf(method = "particles")`,
#' Masood and Doshi-Velez, section 5.1):
#' \deqn{p(X | W, H) \propto \exp(-C \, SILF_{\epsilon, \beta}(f_X(W, H)))}
#' where \eqn{f_X} is an NMF objective and the soft insensitive loss (Chu,
#' Keerthi and Ong 2004) is 0 for \eqn{y \le (1 - \beta)\epsilon},
#' \eqn{(y - (1 - \beta)\epsilon)^2 / (4 \beta \epsilon)} for
#' \eqn{|y - \epsilon| \le \beta\epsilon} and \eqn{y - \epsilon} above. Every
#' factorisation whose objective is below \eqn{(1 - \beta)\epsilon} is equally
#' likely: the analyst says how good a factorisation must be, not which one
#' is best.
#'
#' @param epsilon The insensitivity threshold, > 0, in the units of the
#'   objective of `X`. `NULL` (the default):
#'   1.2 times the largest objective among the candidate factorisations (the
#'   empirical rule of the paper, section 6.1).
#' @param beta Width of the smooth transition, in (0, 1).
#' @param C Slope of the log likelihood outside the insensitive region, > 0,
#'   per unit of the objective of `X / s` (`s` the root mean square of the
#'   observed entries of `X`): [bnmf()] and [stein_discrepancy()] fit the
#'   data scaled to root mean square 1, so the same `C` gives the same
#'   posterior (with `H` times `c`) for `c X` at any scale. `C = 2 *
#'   mean(X^2)` is `C = 2` on the objective of `X` itself. `"auto"` (the
#'   default): `C = n / (2 f)` with `n` the number of observed entries and
#'   `f = epsilon / 1.2` (with the default `epsilon`, the largest objective
#'   among the candidates): the slope of the exponential-family likelihood
#'   whose noise would give objective `f`, the Gaussian of variance `f / n`
#'   for the Frobenius objective, the Poisson for KL (about 1 on counts) and
#'   the Gamma for Itakura-Saito. The draws then stay some `K (I + J) / n`
#'   of `f` above the smallest objective, as a Gaussian posterior would, at
#'   any scale and size of `X` (a fixed `C` lets them wander `K (I + J) /
#'   (2 C)` above it, which is much for data with little noise). `f` is
#'   taken at least `1e-10 n` on `X / s` (candidates that fit `X` exactly
#'   would give an infinite slope).
#' @param objective `"frobenius"` (\eqn{\|X - WH\|_F^2}), `"kl"` (the
#'   generalised Kullback-Leibler divergence \eqn{\sum X \log(X / WH) - X +
#'   WH}) or `"is"` (Itakura-Saito, \eqn{\sum X / WH - \log(X / WH) - 1}; needs
#'   X > 0). For the last two, `W %*% H` is floored at `1e-12 * max(X)`.
#' @return An object of class `bnmf_likelihood`.
#' @references
#' Masood, M. A. and Doshi-Velez, F. A particle-based variational approach to
#' Bayesian non-negative matrix factorization. In Doshi-Velez, F. (2021),
#' *Generating multiple hypotheses in non-negative matrix factorization and
#' related linear models*, AFRL-AFOSR-VA-TR-2021-0037.
#'
#' Chu, W., Keerthi, S. S. and Ong, C. J. (2004). Bayesian support vector
#' regression using a unified loss function. *IEEE Transactions on Neural
#' Networks* 15(1), 29-44.
#' @examples
#' silf()
#' silf(epsilon = 5e4, objective = "kl")
#' @export
silf <- function(epsilon = NULL, beta = 0.1, C = "auto",
                 objective = c("frobenius", "kl", "is")) {
  if (!is.null(epsilon)) epsilon <- check_number(epsilon, "epsilon", 0, min_open = TRUE)
  beta <- check_number(beta, "beta", 0, min_open = TRUE)
  if (beta >= 1) abort_input("`beta` must be between 0 and 1 (exclusive).")
  if (!identical(C, "auto")) C <- check_number(C, "C", 0, min_open = TRUE)
  objective <- check_choice(objective, c("frobenius", "kl", "is"), "objective")
  structure(list(epsilon = epsilon, beta = beta, C = C, objective = objective),
            class = "bnmf_likelihood")
}

#' @export
print.bnmf_likelihood <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("SILF likelihood on the %s objective: epsilon = %s, beta = %s, C = %s\n",
              objective_label(x$objective),
              if (is.null(x$epsilon)) "1.2 x the largest candidate objective" else format(signif(x$epsilon, 6)),
              format(x$beta),
              if (identical(x$C, "auto")) "auto (n / (2 epsilon / 1.2), n the observed entries)" else format(signif(x$C, 6))))
  invisible(x)
}

# The likelihood with its automatic slope resolved, once epsilon is known:
# C = n / (2 f), f = epsilon / 1.2 (see silf()); `n` the observed entries.
# On X / s (sum of squares n) f is floored at 1e-10 n, a root mean square
# error of 1e-5: candidates that fit X exactly (constant or zero data) would
# otherwise give an infinite slope.
silf_resolve_C <- function(likelihood, n) {
  if (identical(likelihood$C, "auto")) {
    likelihood$C <- n / (2 * max(likelihood$epsilon / 1.2, 1e-10 * n))
  }
  likelihood
}

# The number of observed entries of silf_data().
silf_n_obs <- function(sd) prod(as.double(sd$dims)) - length(sd$miss)

objective_label <- function(objective) {
  c(frobenius = "squared Frobenius", kl = "Kullback-Leibler", is = "Itakura-Saito")[[objective]]
}

check_likelihood <- function(likelihood) {
  if (!inherits(likelihood, "bnmf_likelihood")) abort_input("`likelihood` must be made by `silf()`.")
  likelihood
}

silf_loss <- function(y, epsilon, beta) {
  lo <- (1 - beta) * epsilon
  ifelse(y <= lo, 0, ifelse(y <= (1 + beta) * epsilon, (y - lo)^2 / (4 * beta * epsilon),
                            y - epsilon))
}

silf_deriv <- function(y, epsilon, beta) {
  lo <- (1 - beta) * epsilon
  ifelse(y <= lo, 0, ifelse(y <= (1 + beta) * epsilon, (y - lo) / (2 * beta * epsilon), 1))
}

# Data for the particle model: a non-negative matrix (NA entries are missing)
# or a dgCMatrix (its zeros observed).
check_particle_data <- function(X, arg = "X", method = "particles", complete = FALSE) {
  X <- check_data_matrix(X, arg)
  if (complete && (inherits(X, "Matrix") || anyNA(X))) {
    abort_input(sprintf("`%s` must be a dense complete matrix (no NA); use as.matrix(%s).", arg, arg))
  }
  vals <- if (inherits(X, "Matrix")) X@x else X
  if (isTRUE(min(vals, na.rm = TRUE) < 0)) {
    abort_input(sprintf("`%s`: method \"%s\" needs non-negative data (an NMF objective is the likelihood).",
                        arg, method))
  }
  X
}

# The data of the SILF objective: X with its missing entries set to 0 (a
# dense matrix or a dgCMatrix), the sum of squares and the largest value of
# the observed entries, and the missing entries (1-based rows `mi`, columns
# `mj`; `miss` their positions in X, or in X@x when sparse; `R` a dgCMatrix
# with a stored value at each of them, in the same order, for
# missing_products()).
silf_data <- function(X) {
  if (inherits(X, "bnmf_silf_data")) return(X)
  sparse <- inherits(X, "dgCMatrix")
  vals <- if (sparse) X@x else X
  miss <- if (anyNA(vals)) which(is.na(vals)) else integer()
  if (sparse) {
    mi <- X@i[miss] + 1L
    mj <- rep.int(seq_len(ncol(X)), diff(X@p))[miss]
    X@x[miss] <- 0
  } else {
    mi <- (miss - 1L) %% nrow(X) + 1L
    mj <- (miss - 1L) %/% nrow(X) + 1L
    X[miss] <- 0
  }
  vals <- if (sparse) X@x else X
  R <- if (length(miss)) {
    Matrix::sparseMatrix(i = mi, j = mj, x = rep(1, length(miss)), dims = dim(X))
  }
  structure(list(X = X, sparse = sparse, miss = miss, mi = as.integer(mi), mj = as.integer(mj),
                 R = R, sumsq = sum_squares(vals), max = max(vals), dims = dim(X)),
            class = "bnmf_silf_data")
}

# The objective's needs on the data: KL and IS need W H at every entry (an I x
# J dense matrix, which a sparse X is meant to avoid) and IS needs X > 0.
check_silf_objective <- function(X, objective, method) {
  if (objective == "frobenius") return(invisible(TRUE))
  if (inherits(X, "dgCMatrix")) {
    abort_input(sprintf("`likelihood`: the %s objective of method \"%s\" needs W H at every entry of X, a dense %d x %d matrix that a sparse X is meant to avoid; use `silf(objective = \"frobenius\")` (sparse products only) or `as.matrix(X)`.",
                        objective_label(objective), method, nrow(X), ncol(X)))
  }
  if (objective == "is" && isTRUE(min(X, na.rm = TRUE) <= 0)) {
    abort_input("`likelihood`: the Itakura-Saito objective needs X > 0.")
  }
  invisible(TRUE)
}

# Move a factorisation onto the prior's manifold: every column of W sums to
# one (Dirichlet support), the scale moving into H; W H is unchanged. An
# all-zero column of W becomes uniform, with a zero row of H.
to_simplex <- function(W, H) {
  s <- colSums(W)
  zero <- !(s > 0)
  if (any(zero)) {
    W[, zero] <- 1 / nrow(W)
    H[zero, ] <- 0
    s[zero] <- 1
  }
  list(W = sweep(W, 2L, s, "/"), H = H * s)
}

# The objective f_X(W, H) and its gradients with respect to W and H.
# Frobenius without an I x J temporary:
#   f = |X|^2 - 2 <W, X H'> + <W'W, H H'>,
#   df/dW = 2 (W H H' - X H'),  df/dH = 2 (W'W H - W'X).
# `X` is a dense complete matrix or the data of silf_data() (missing entries,
# sparse X: masked_objective_grad()).
objective_grad <- function(X, W, H, objective, sumsq = NULL) {
  if (inherits(X, "bnmf_silf_data")) {
    if (X$sparse || length(X$miss)) return(masked_objective_grad(X, W, H, objective))
    sumsq <- X$sumsq
    X <- X$X
  }
  if (objective == "frobenius") {
    XHt <- tcrossprod(X, H)
    WtX <- crossprod(W, X)
    HHt <- tcrossprod(H)
    WtW <- crossprod(W)
    sumsq <- sumsq %||% sum_squares(X)
    f <- sumsq - 2 * sum(W * XHt) + sum(WtW * HHt)
    return(list(f = max(f, 0), W = 2 * (W %*% HHt - XHt), H = 2 * (WtW %*% H - WtX)))
  }
  WH <- pmax(W %*% H, 1e-12 * max(X))
  if (objective == "kl") {
    pos <- X > 0
    f <- sum(X[pos] * log(X[pos] / WH[pos])) - sum(X) + sum(WH)
    G <- 1 - X / WH
  } else {
    Q <- X / WH
    f <- sum(Q - log(Q) - 1)
    G <- (1 - Q) / WH
  }
  list(f = f, W = tcrossprod(G, H), H = crossprod(W, G))
}

# The objective over the observed entries O only. Frobenius: with X0 = X
# zero at the missing entries M (a dense matrix or a dgCMatrix) and
# r_ij = (W H)_ij on M,
#   f = |X_O|^2 - 2 <W, X0 H'> + <W'W, H H'> - sum_M r_ij^2,
#   df/dW = 2 (W H H' - X0 H' - R H'),  df/dH = 2 (W'W H - W'X0 - W'R),
# with R the sparse I x J matrix of the r_ij (missing_products()): O(|M| K)
# beyond the products of the complete case, no I x J temporary; R is
# returned too (for silf_hvp()). KL and IS (dense X only): the dense
# formulas with the terms of M set to zero.
masked_objective_grad <- function(d, W, H, objective) {
  mi <- d$mi; mj <- d$mj
  X <- d$X
  if (objective == "frobenius") {
    XHt <- as.matrix(Matrix::tcrossprod(X, H))
    WtX <- as.matrix(Matrix::crossprod(W, X))
    HHt <- tcrossprod(H)
    WtW <- crossprod(W)
    f <- d$sumsq - 2 * sum(W * XHt) + sum(WtW * HHt)
    gW <- W %*% HHt - XHt
    gH <- WtW %*% H - WtX
    R <- NULL
    if (length(mi)) {
      R <- missing_products(d, W, H)
      f <- f - sum(R@x * R@x)
      gW <- gW - as.matrix(R %*% t(H))
      gH <- gH - as.matrix(Matrix::crossprod(W, R))
    }
    return(list(f = max(f, 0), W = 2 * gW, H = 2 * gH, R = R))
  }
  WH <- pmax(W %*% H, 1e-12 * d$max)
  miss <- d$miss
  if (objective == "kl") {
    pos <- X > 0
    f <- sum(X[pos] * log(X[pos] / WH[pos])) - sum(X) + sum(WH) - sum(WH[miss])
    G <- 1 - X / WH
  } else {
    Q <- X / WH
    Q[miss] <- 1
    f <- sum(Q - log(Q) - 1)
    G <- (1 - Q) / WH
  }
  G[miss] <- 0
  list(f = f, W = tcrossprod(G, H), H = crossprod(W, G))
}

na_to_zero <- function(x) {
  if (anyNA(x)) x[is.na(x)] <- 0
  x
}

# d$R (silf_data()) holding (A B)_ij at the missing entries, plus
# (A2 B2)_ij when A2 is given (wh_entries(), in C), a sparse I x J
# matrix for the products R %*% t(H) and crossprod(W, R).
missing_products <- function(d, A, B, A2 = NULL, B2 = NULL) {
  R <- d$R
  R@x <- wh_entries(A, B, d$mi - 1L, d$mj - 1L)
  if (!is.null(A2)) R@x <- R@x + wh_entries(A2, B2, d$mi - 1L, d$mj - 1L)
  R
}

nmf_objective <- function(X, W, H, objective) {
  objective_grad(X, W, H, objective)$f
}

# The score of the particle posterior at (W, H) given the objective's
# gradient: d/dtheta [-C SILF(f)] plus the prior's score (0 for the
# Dirichlet(1) density of W, -rate for the exponential density of H).
particle_score <- function(grad, likelihood, rate) {
  d <- -likelihood$C * silf_deriv(grad$f, likelihood$epsilon, likelihood$beta)
  list(W = d * grad$W, H = d * grad$H - rate)
}

# ---- the data's scale --------------------------------------------------------

# The particle model (particles, HMC, SVGD, DSGD) and RRT are fitted on X / s,
# s the root mean square of the observed entries of X (1 when they are all
# zero), and their results scaled back: the defaults of these methods (the
# prior rate 1, the slope C of the SILF, the Stein kernel's bandwidths, the
# SVGD steps, RRT's steps and variances) are on the scale of data with root
# mean square 1, so that the fit of c X is that of X with W H times c.
data_scale <- function(X) {
  vals <- if (inherits(X, "dgCMatrix")) X@x else X
  n_obs <- prod(as.double(dim(X))) - sum(is.na(vals))
  vals <- vals[!is.na(vals)]
  m <- if (length(vals)) max(abs(vals)) else 0
  if (!(m > 0) || !is.finite(m) || !(n_obs > 0)) return(1)
  # sqrt(mean(X^2)) without overflow or underflow of the squares
  s <- m * sqrt(sum((vals / m)^2) / n_obs)
  if (s > 0 && is.finite(s)) s else 1
}

# The power of the data's scale in an objective: |X - W H|^2 (s^2), the KL
# divergence (s), Itakura-Saito (none).
objective_power <- function(objective) {
  c(frobenius = 2, kl = 1, is = 0)[[objective]]
}

# A job of the particle model on X / s (job$data_scale = s): the data, an
# explicit rate of H (in the units of X: times s), an explicit epsilon (in
# the units of the objective of X: over s^p) and given starts (H over s).
# "auto" is rate 1 on X / s.
silf_scale_job <- function(job) {
  s <- data_scale(job$X)
  job$data_scale <- s
  p <- objective_power(job$likelihood$objective)
  job$rate_auto <- identical(job$prior$rate, "auto")
  job$X <- job$X / s
  if (!job$rate_auto) job$rate <- job$rate * s
  if (!is.null(job$likelihood$epsilon)) job$likelihood$epsilon <- job$likelihood$epsilon / s^p
  job$init <- scale_init_H(job$init, 1 / s)
  job
}

# Given starts (a list with W and H, or a list of them) with H times f.
scale_init_H <- function(init, f) {
  if (!is.list(init) || inherits(init, "bnmf_qtransform")) return(init)
  if (!is.null(init$H)) {
    init$H <- init$H * f
    return(init)
  }
  lapply(init, function(s) {
    if (is.list(s) && !is.null(s$H)) s$H <- s$H * f
    s
  })
}

# A fit of the particle model made on X / s back in the units of X: the data,
# H (of the particles, the draws, their means), W H, the objectives, epsilon
# and the rate of H. The Stein discrepancy, its kernel matrix, the log
# likelihood (the SILF's value is the same: epsilon and the objective scale
# alike) and HMC's step sizes, metric and log posterior stay those of the
# fit on X / s (stein_discrepancy() too evaluates the discrepancy on X / s).
silf_unscale_fit <- function(fit, X, s) {
  fit$data_scale <- s
  if (s == 1) {
    fit$X <- X
    return(fit)
  }
  p <- objective_power(fit$likelihood$objective)
  fit$X <- X
  fit$likelihood$epsilon <- fit$likelihood$epsilon * s^p
  fit$prior$rate <- fit$prior$rate / s
  fit$H <- fit$H * s
  if (!is.null(fit$particles)) {
    fit$particles <- lapply(fit$particles, function(q) {
      q$H <- q$H * s
      q
    })
  }
  if (!is.null(fit$draws)) {
    fit$draws <- lapply(fit$draws, function(d) {
      d$H <- d$H * s
      d
    })
  }
  if (!is.null(fit$WH)) fit$WH <- fit$WH * s
  if (!is.null(fit$objective)) fit$objective <- fit$objective * s^p
  if (!is.null(fit$candidates$objective)) fit$candidates$objective <- fit$candidates$objective * s^p
  if (!is.null(fit$trace$objective)) fit$trace$objective <- fit$trace$objective * s^p
  if (!is.null(fit$warm_start_objective)) fit$warm_start_objective <- fit$warm_start_objective * s^p
  fit
}
