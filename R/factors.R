# factors(), basis(), coef() and weights(): the factor matrices of a fit
# (posterior means or point values; a given particle or draw of particle and
# HMC fits) and the weights of a particle fit's factorisations.

#' Factor matrices of a fit
#'
#' `factors()` returns the posterior-mean (Gibbs) or point (ICM) factor
#' matrices as a named list `W`, `H`; `basis()` returns `W` (I x K) and
#' `coef()` returns `H` (K x J).
#'
#' @param object A `bnmf` fit.
#' @param ... Not used: an argument here is an error.
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
factors.bnmf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "factors")
  list(W = object$W, H = object$H)
}

#' @rdname factors
#' @export
factors.default <- function(object, ...) abort_not_fit(object)

#' @rdname factors
#' @export
basis <- function(object, ...) UseMethod("basis")

#' @rdname factors
#' @export
basis.bnmf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "basis")
  object$W
}

#' @rdname factors
#' @export
basis.default <- function(object, ...) abort_not_fit(object)

abort_not_fit <- function(object) {
  abort_input(sprintf("`object` must be a bnmf fit, not an object of class %s.",
                      class(object)[1L]))
}

#' @rdname factors
#' @export
coef.bnmf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "coef")
  object$H
}

#' @importFrom stats weights
NULL

#' Particle fits: weights, factors and predictions
#'
#' A particle fit (`bnmf(method = "particles")`) is a weighted set of
#' factorisations approximating the posterior. `weights()` gives the
#' probability weight of each; `factors(fit, particle = m)` the factors of
#' particle `m` (every column of `W` sums to one; by default the particle
#' with the largest weight, whose factors `basis()` and `coef()` also
#' return); `fitted()` the posterior mean of `W %*% H`, the weighted mean of
#' the particles' products; `residuals()` `X` minus it. `predict()` without
#' `newdata` is `fitted()`; with `newdata` (new samples with the same
#' features) it finds their coefficients for every particle by non-negative
#' least squares with the particle's basis held fixed, and returns the
#' weighted mean reconstruction (`type = "response"`) or the coefficients of
#' one particle (`type = "coef"`).
#'
#' @param object A `bnmf_particles` fit.
#' @param particle A particle number; `NULL` for the one with the largest
#'   weight.
#' @param aligned Reorder the factors of the particle to match those of the
#'   largest-weight particle (minimum total angle, as [align_factors()]).
#' @param newdata `NULL` or a matrix of new samples (columns).
#' @param type `"response"` or `"coef"`.
#' @param ... Not used: an argument here is an error.
#' @return `weights()`: a named vector summing to one. `factors()`: a list
#'   `W`, `H`. `fitted()`, `residuals()`, `predict()`: matrices.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:100, ], rank = 3, method = "particles", particles = 6)
#' weights(fit)
#' str(factors(fit, particle = 2))
#' dim(fitted(fit))
#' h <- predict(fit, newdata = leukemia[1:100, 1:5], type = "coef")
#' @name particles
NULL

#' @rdname particles
#' @export
weights.bnmf_particles <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "weights")
  object$weights
}

#' @rdname particles
#' @export
factors.bnmf_particles <- function(object, particle = NULL, aligned = FALSE, ...) {
  check_dots_empty(list(...), names(formals()), "factors")
  m <- check_particle(object, particle)
  p <- object$particles[[m]]
  if (isTRUE(aligned)) p <- align_particle(p, object$alignment[[m]])
  p
}

check_particle <- function(object, particle) {
  if (is.null(particle)) return(object$best)
  check_count(particle, "particle", min = 1)
  if (particle > length(object$particles)) {
    abort_input(sprintf("`particle` must be between 1 and %d.", length(object$particles)))
  }
  as.integer(particle)
}

align_particle <- function(p, perm) {
  kn <- colnames(p$W)
  W <- p$W[, perm, drop = FALSE]
  H <- p$H[perm, , drop = FALSE]
  colnames(W) <- kn
  rownames(H) <- kn
  list(W = W, H = H)
}

#' HMC fits: draws, factors and predictions
#'
#' A fit of `bnmf(method = "hmc")` holds the thinned draws of every chain
#' (factors matched to those of the first chain). `factors(fit)` gives the
#' posterior means of `W` (every column on the simplex) and `H`, which
#' `basis()` and `coef()` also return; `factors(fit, draw = d)` the `d`-th
#' kept draw (chains one after the other). `fitted()` is the posterior mean
#' of `W %*% H` (not the product of the means), `residuals()` `X` minus it.
#' `predict()` without `newdata` is `fitted()`. `posterior::as_draws()` and
#' `coda::as.mcmc()` give the log posterior (`lp`), the objective and the
#' entries of `W` and `H` for each kept draw. `plot()` draws the trace of the
#' log posterior, one line per chain, warm-up shaded.
#'
#' @param object,x A `bnmf_hmc` fit.
#' @param draw `NULL` (posterior means) or the number of a kept draw.
#' @param newdata Must be `NULL`: HMC fits do not predict new samples.
#' @param type `"response"` or `"coef"` (the posterior mean of `H`).
#' @param ... Not used: an argument here is an error.
#' @return `factors()`: a list `W`, `H`. `fitted()`, `residuals()`,
#'   `predict()`: matrices. `as_draws()`: a `draws_array`.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:40, 1:15], rank = 2, method = "hmc", iter = 200)
#' fit
#' str(factors(fit, draw = 10))
#' dim(fitted(fit))
#' @name hmc
NULL

#' @rdname hmc
#' @export
factors.bnmf_hmc <- function(object, draw = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "factors")
  if (is.null(draw)) return(factors.bnmf(object))
  draw <- check_count(draw, "draw", min = 1)
  if (draw > object$n_draws) abort_input(sprintf("`draw` must be between 1 and %d.", object$n_draws))
  n <- vapply(object$draws, function(d) ncol(d$W), numeric(1))
  c <- findInterval(draw - 1, cumsum(c(0, n)))
  t <- draw - sum(n[seq_len(c - 1L)])
  I <- object$dims[1L]; J <- object$dims[2L]; K <- object$rank
  list(W = matrix(object$draws[[c]]$W[, t], I, K, dimnames = dimnames(object$W)),
       H = matrix(object$draws[[c]]$H[, t], K, J, dimnames = dimnames(object$H)))
}

hmc_draw_list <- function(object) {
  lapply(seq_len(object$n_draws), function(d) factors(object, draw = d))
}

# ---- the tri-factorisation (bnmf_nmtf) ----

#' @rdname factors
#' @export
factors.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), character(), "factors")
  list(F = object$F, S = object$S, G = object$G)
}

#' @rdname factors
#' @export
basis.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "basis")
  object$F
}

#' @rdname factors
#' @export
coef.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "coef")
  object$S %*% t(object$G)
}
# ---- the Poisson model (likelihood = "poisson") -----------------------------

#' Posterior probabilities of the sparsity masks
#'
#' For a fit with `likelihood = "poisson"` (see [bnmf()], section Counts),
#' `masks()` returns the posterior probabilities that each mask entry is on:
#' `W` (I x K), \eqn{P(S^W_{ik} = 1 | X)}, and `H` (K x J),
#' \eqn{P(S^H_{kj} = 1 | X)}, estimated from the mask samples of the final
#' iterations of method `"ssvi"` (see [ssvi_control()]). A mask the model
#' does not have (`sparsity = "none"`, or `W` under `"coef"`) is all 1.
#' [factors()] of such a fit gives the posterior means of the masked factors
#' `W * S^W` and `H * S^H`.
#'
#' @param object A `bnmf` fit with `likelihood = "poisson"`.
#' @param ... Not used: an argument here is an error.
#' @return A list with matrices `W` and `H` of probabilities.
#' @examples
#' set.seed(1)
#' X <- matrix(rpois(40 * 30, 1), 40, 30)
#' fit <- bnmf(X ~ nmf(2, sparsity = "both"), method = "ssvi", iter = 20,
#'             control = ssvi_control(mask_sweeps = 2, mask_samples = 1, final = 5))
#' str(masks(fit))
#' @export
masks <- function(object, ...) UseMethod("masks")

#' @rdname masks
#' @export
masks.bnmf_poisson <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "masks")
  object$masks
}

#' @rdname masks
#' @export
masks.default <- function(object, ...) {
  if (inherits(object, "bnmf")) {
    abort_input("`object`: masks exist for fits with `likelihood = \"poisson\"` only.")
  }
  abort_not_fit(object)
}

# ---- RRT + online NVI fits (method "rrt") ----------------------------------

#' @rdname rrt_fit
#' @export
weights.bnmf_rrt <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "weights")
  object$weights
}

#' @rdname rrt_fit
#' @export
factors.bnmf_rrt <- function(object, component = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "factors")
  object$components[[check_component(object, component)]]
}

check_component <- function(object, component) {
  if (is.null(component)) return(object$best)
  M <- length(object$components)
  component <- check_count(component, "component", min = 1)
  if (component > M) abort_input(sprintf("`component` must be between 1 and %d.", M))
  as.integer(component)
}
