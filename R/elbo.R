# elbo(): the evidence lower bound of a variational Bayes fit after each sweep.

#' The evidence lower bound of a variational Bayes fit
#'
#' `elbo()` returns the evidence lower bound (ELBO) of a `method = "vb"` fit
#' after each sweep: \eqn{E_q[\log p(X, W, H, \tau)] + H[q]}, computed in closed
#' form (expected log joint density plus the entropies of the truncated
#' normal and Gamma factors of `q`). Coordinate ascent never decreases it,
#' and it is a lower bound on the log marginal likelihood \eqn{\log p(X)}.
#'
#' @param object A `bnmf` fit made with `method = "vb"`.
#' @param ... Not used: an argument here is an error.
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
  check_dots_empty(list(...), names(formals()), "elbo")
  abort_unsupported(sprintf("`elbo()`: the ELBO exists for variational Bayes fits (method = \"vb\") only, not method \"%s\"; its trace is in `object$trace`.",
                            object$method))
}

#' @rdname elbo
#' @export
elbo.bnmf_vb <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "elbo")
  tr <- object$trace[object$trace$chain == object$best, , drop = FALSE]
  tr$logpost
}
