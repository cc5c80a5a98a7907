#' Settings of ICM (iterated conditional modes)
#'
#' Passed to [bnmf()] as `control` with `method = "icm"`.
#'
#' ICM climbs to a mode of the posterior p(W, H, tau | observed X) one block
#' at a time. With missing entries, two ways of updating W and H reach the
#' same modes (the same fixed points):
#' - `"mask"` (the default): each row of W (column of H) moves to its exact
#'   conditional mode given the observed entries alone. A row with missing
#'   entries has its own K x K Gram matrix, which costs `K^2 / 2`
#'   multiply-adds per missing entry (or per observed one, when fewer). From
#'   K = 16 on, a row with at most half its entries missing is updated
#'   without forming it, at about `2 K` multiply-adds per missing entry and
#'   coordinate pass. Either way, with 20% missing at K = 20 the masked terms
#'   cost more than the rest of a sweep, and under an optimised BLAS several
#'   times its time.
#' - `"impute"`: the missing entries hold `W H` of the previous sweep, and the
#'   sweep is the complete-data one (an expectation conditional maximisation
#'   iteration, Meng and Rubin 1993). The observed log posterior still never
#'   decreases from one sweep to the next and tau is updated from the
#'   observed entries exactly as by `"mask"`; a sweep costs what complete
#'   data cost. But each row's step is shorter the larger the share of its
#'   entries that are missing, so a fit needs more sweeps and, at the same
#'   `tol`, stops further from the mode. It pays when the missing entries are
#'   spread over all rows and columns (missing at random, at most a few tens
#'   of percent): at I = J = 1000, K = 20 with 20% missing at random it
#'   reaches the same log posterior about twice as fast under OpenBLAS
#'   (1.2 times under R's reference BLAS). Where many rows or columns miss
#'   a large share of their entries (in a drug screen, a quarter to a half
#'   of many cell lines and drugs) it can take several times the sweeps and
#'   be slower overall; see `bench/README.md` in the package's repository.
#'
#' The setting used is in `fit$settings$missing`; [update.bnmf()] continues
#' a fit with it. With complete data both are the same sweep.
#'
#' @param missing `"mask"` (the default) or `"impute"`: how the sweeps treat
#'   missing entries (see Details).
#' @return A list of class `bnmf_icm_control`.
#' @references Meng, X.-L. and Rubin, D. B. (1993). Maximum likelihood
#'   estimation via the ECM algorithm: a general framework. *Biometrika* 80,
#'   267-278.
#' @seealso [bnmf()]
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(150), 50) %*% matrix(rexp(120), 3) + rnorm(2000, sd = 0.1)
#' X[sample(length(X), 400)] <- NA
#' fit_mask <- bnmf(X, rank = 3, method = "icm")
#' fit_imp <- bnmf(X, rank = 3, method = "icm", control = icm_control(missing = "impute"))
#' fit_imp$settings$missing
#' # about the same mode; imputing takes more (but cheaper) sweeps
#' rbind(mask = c(fit_mask$logpost, fit_mask$iterations),
#'       impute = c(fit_imp$logpost, fit_imp$iterations))
#' @export
icm_control <- function(missing = c("mask", "impute")) {
  structure(list(missing = check_choice(missing, c("mask", "impute"), "missing")),
            class = "bnmf_icm_control")
}
