#' Settings of VB (variational Bayes)
#'
#' Passed to [bnmf()] as `control` with `method = "vb"`.
#'
#' VB fits the mean-field approximation q(W) q(H) q(tau) to the posterior
#' given the observed entries of X, one row of W (column of H) at a time.
#' With missing entries, two ways of updating a row have the same fixed
#' points, so both end at the same approximations:
#' - `"mask"`: each row moves to its exact optimum given the observed entries
#'   alone, which needs that row's sums over its missing entries of the
#'   other side's products, `K^2 / 2` multiply-adds per missing entry (from
#'   K = 10 on, about `5 K` in a pass that keeps them current). With 20%
#'   missing at K = 20 these cost more than the rest of a sweep under an
#'   optimised BLAS.
#' - `"impute"`: the missing entries hold `E[W] E[H]` of the previous sweep
#'   and each row takes its right side from the data so filled, less its own
#'   term at the missing entries; the precisions of q (and so its variances)
#'   and q(tau) come from the observed entries alone. The only approximation
#'   is that the other coordinates of a row enter its missing entries with
#'   their values of the previous sweep; at a fixed point these are the
#'   current ones, so the fixed points are the masked sweep's. A sweep costs
#'   what complete data cost plus about `3 K` operations per missing entry.
#'   Unlike the masked sweep, a sweep is not an exact coordinate ascent, so
#'   the ELBO (computed exactly, over the observed entries) can dip.
#' - `"auto"` (the default) takes `"impute"` when no row and no column of X
#'   misses more than a third of its entries (the rule of [icm_control()]),
#'   and `"mask"` otherwise (and with complete data, where both are the same
#'   sweep).
#'
#' The setting used (`"mask"` or `"impute"`, after `"auto"` has chosen) is in
#' `fit$settings$missing`; [update.bnmf()] continues a fit with it.
#'
#' @param missing `"auto"` (the default), `"mask"` or `"impute"`: how the
#'   sweeps treat missing entries (see Details).
#' @return A list of class `bnmf_vb_control`.
#' @seealso [bnmf()], [icm_control()]
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(150), 50) %*% matrix(rexp(120), 3) + rnorm(2000, sd = 0.1)
#' X[sample(length(X), 400)] <- NA
#' fit_mask <- bnmf(X, rank = 3, method = "vb", control = vb_control(missing = "mask"))
#' fit_imp <- bnmf(X, rank = 3, method = "vb", control = vb_control(missing = "impute"))
#' # the same approximation, reached by other (and cheaper) sweeps
#' rbind(mask = c(fit_mask$elbo, fit_mask$iterations),
#'       impute = c(fit_imp$elbo, fit_imp$iterations))
#' fit_imp$settings$missing
#' @export
vb_control <- function(missing = c("auto", "mask", "impute")) {
  structure(list(missing = check_choice(missing, c("auto", "mask", "impute"), "missing")),
            class = "bnmf_vb_control")
}
