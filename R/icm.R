#' Settings of ICM (iterated conditional modes)
#'
#' Passed to [bnmf()] as `control` with `method = "icm"`.
#'
#' ICM climbs to a mode of the posterior p(W, H, tau | observed X) one block
#' at a time. With missing entries, two ways of updating W and H reach the
#' same modes (the same fixed points):
#' - `"mask"`: each row of W (column of H) moves to its exact conditional mode
#'   given the observed entries alone. Each row with missing entries needs its
#'   own K x K Gram matrix, which costs `K^2 / 2` multiply-adds per missing
#'   entry (or per observed one, when fewer): with 20% missing that is about
#'   twice the rest of a sweep.
#' - `"impute"`: the missing entries hold `W H` of the previous sweep, and the
#'   sweep is the complete-data one (an expectation conditional maximisation
#'   step, Meng and Rubin 1993). The observed log joint still never decreases
#'   from one sweep to the next, and a sweep costs what complete data cost,
#'   but more sweeps are needed, the more so the more entries are missing
#'   (about 1 / (1 - f) times as many, f the fraction missing). Its steps
#'   being shorter, it also stops a little further from the mode at the same
#'   `tol`. tau is updated from the observed entries exactly as by `"mask"`.
#'
#' `"auto"` imputes when f is at most min(1/2, 1 - 4 / K) (K the rank) and
#' masks otherwise: a masked sweep costs about 1 + min(f, 1 - f) K / 4
#' complete-data sweeps when its Gram matrices run as fast as the products
#' (under an optimised BLAS the products run faster, which favours
#' imputing more). The setting used is in `fit$settings$missing`;
#' [update.bnmf()] continues a fit with it. With complete data both are the
#' same sweep.
#'
#' @param missing `"auto"` (the default), `"impute"` or `"mask"`: how the
#'   sweeps treat missing entries (see Details).
#' @return A list of class `bnmf_icm_control`.
#' @references Meng, X.-L. and Rubin, D. B. (1993). Maximum likelihood
#'   estimation via the ECM algorithm: a general framework. *Biometrika* 80,
#'   267-278.
#' @seealso [bnmf()]
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(150), 50) %*% matrix(rexp(120), 3) + rnorm(2000, sd = 0.1)
#' X[sample(length(X), 400)] <- NA
#' fit <- bnmf(X, rank = 3, method = "icm", control = icm_control(missing = "impute"))
#' fit_mask <- bnmf(X, rank = 3, method = "icm", control = icm_control(missing = "mask"))
#' # the same mode; imputing takes more (but cheaper) sweeps
#' rbind(impute = c(fit$logpost, fit$iterations),
#'       mask = c(fit_mask$logpost, fit_mask$iterations))
#' bnmf(X, rank = 3, method = "icm")$settings$missing   # "auto" at K = 3
#' @export
icm_control <- function(missing = c("auto", "impute", "mask")) {
  structure(list(missing = check_choice(missing, c("auto", "impute", "mask"), "missing")),
            class = "bnmf_icm_control")
}
