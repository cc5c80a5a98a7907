#' Settings of VB (variational Bayes)
#'
#' Passed to [bnmf()] as `control` with `method = "vb"`.
#'
#' VB fits the mean-field approximation q(W) q(H) q(tau) to the posterior
#' given the observed entries of X, one row of W (column of H) at a time.
#' With missing entries, two ways of updating a row have the same fixed
#' points, so both end at the same approximations:
#' - `"mask"`: each row moves to its exact optimum given the observed entries
#'   alone. That needs the row's own products of the other side's means over
#'   its missing entries: `K^2 / 2` multiply-adds per missing entry, or, from
#'   K = 10 on, about `5 K` in a pass that keeps them current. The ELBO
#'   never decreases. With 20% missing at K = 20 these terms cost more than
#'   the rest of a sweep under an optimised BLAS.
#' - `"impute"`: the missing entries hold `E[W] E[H]` of the previous sweep,
#'   and each row takes its data term from the data so filled, less its own
#'   term at its missing entries; its precisions (so the variances of q) and
#'   q(tau) come from the observed entries alone, and the ELBO reported is
#'   the exact one of q given the observed entries. What remains of the
#'   missing entries' cross terms, the change of a row's other coordinates
#'   within the sweep, is approximated; it is zero at a fixed point, so the
#'   fixed points are the masked sweep's. A sweep costs what complete data
#'   cost plus about `3 K` operations per missing entry and half sweep, and
#'   with entries missing at random it moves about as far as a masked
#'   sweep. Unlike the masked sweep it is not an exact coordinate ascent,
#'   so the ELBO is not guaranteed to rise at every sweep (no fall was seen
#'   in the package's benchmarks).
#' - `"auto"` (the default) takes `"impute"` when no row and no column of X
#'   misses more than a third of its entries (the rule of [icm_control()]),
#'   and `"mask"` otherwise (and with complete data, where both are the same
#'   sweep). At 1000 x 1000, K = 20 with 20% missing at random, or up to a
#'   third of some rows, columns or a block, imputing reached the ELBO at
#'   which the masked fit stops 1.03 to 1.12 times as fast under OpenBLAS (a
#'   sweep 0.8 to 0.95 of the masked one's time), and at 600 x 300, K = 10,
#'   1.4 times; on a drug screen whose worst cell line misses 99% of its
#'   entries masking was faster. See `bench/icm-auto.R` and
#'   `bench/README.md` in the package's repository.
#'
#' A fit by blocks of samples (`blocks`, `cluster` of [bnmf()]) masks or
#' imputes in the same way.
#'
#' The setting used (`"mask"` or `"impute"`, after `"auto"` has chosen) is in
#' `fit$settings$missing`; [update.bnmf()] continues a fit with it.
#' A tri-factorisation (`rank = c(K, L)`) always masks.
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
#' # the same approximation, reached by cheaper sweeps
#' rbind(mask = c(fit_mask$elbo, fit_mask$iterations),
#'       impute = c(fit_imp$elbo, fit_imp$iterations))
#' # what the default, "auto", chose here
#' bnmf(X, rank = 3, method = "vb")$settings$missing
#' @export
vb_control <- function(missing = c("auto", "mask", "impute")) {
  structure(list(missing = check_choice(missing, c("auto", "mask", "impute"), "missing")),
            class = "bnmf_vb_control")
}
