#' Settings of ICM (iterated conditional modes)
#'
#' Passed to [bnmf()] as `control` with `method = "icm"`.
#'
#' ICM climbs to a mode of the posterior p(W, H, tau | observed X) one block
#' at a time. With missing entries, two ways of updating W and H reach the
#' same modes (the same fixed points):
#' - `"mask"`: each row of W (column of H) moves to its exact conditional
#'   mode given the observed entries alone. A row with missing entries has
#'   its own K x K Gram matrix, which costs `K^2 / 2` multiply-adds per
#'   missing entry (or per observed one, when fewer). From K = 16 on, a row
#'   with at most half its entries missing is updated without forming it, at
#'   about `2 K` multiply-adds per missing entry and coordinate pass. Either
#'   way, with 20% missing at K = 20 the masked terms cost more than the rest
#'   of a sweep, and under an optimised BLAS about twice its time.
#' - `"impute"`: the missing entries hold `W H` of the previous sweep, and the
#'   sweep is the complete-data one (an expectation conditional maximisation
#'   iteration, Meng and Rubin 1993). The observed log posterior still never
#'   decreases from one sweep to the next and tau is updated from the
#'   observed entries exactly as by `"mask"`; a sweep costs what complete
#'   data cost. But each row's step is shorter the larger the share of its
#'   entries that are missing, so a fit needs more sweeps and, at the same
#'   `tol`, stops a little further from the mode (about `1e-5` of the log
#'   posterior at the default `tol`). Where many rows or columns miss a large
#'   share of their entries (in a drug screen, a quarter to a half of many
#'   cell lines and drugs, and nearly all of a few) it can take several times
#'   the sweeps, be slower overall and stop at a lower mode.
#' - `"auto"` (the default) takes `"impute"` when no row and no column of X
#'   misses more than a third of its entries, and `"mask"` otherwise (and
#'   with complete data, where both are the same sweep). Measured at K = 20
#'   (1000 x 1000) and K = 10, with 10-20% of all entries missing, at random
#'   or in blocks, and up to a third of some or all rows and columns,
#'   imputing reached the log posterior at which the masked fit stops 1.4 to
#'   1.9 times as fast under OpenBLAS and 1.0 to 1.5 times as fast under R's
#'   reference BLAS (medians of two runs). On a drug screen whose worst cell
#'   line misses 99% of its entries masking was faster and reached a higher
#'   mode. See `bench/icm-auto.R` and `bench/README.md` in the package's
#'   repository.
#'
#' A fit by blocks of samples (`blocks`, `cluster` of [bnmf()]) masks or
#' imputes in the same way.
#'
#' The setting used (`"mask"` or `"impute"`, after `"auto"` has chosen) is in
#' `fit$settings$missing`; [update.bnmf()] continues a fit with it.
#'
#' @param missing `"auto"` (the default), `"mask"` or `"impute"`: how the
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
#' fit_mask <- bnmf(X, rank = 3, method = "icm", control = icm_control(missing = "mask"))
#' fit_imp <- bnmf(X, rank = 3, method = "icm", control = icm_control(missing = "impute"))
#' # about the same mode; imputing takes more (but cheaper) sweeps
#' rbind(mask = c(fit_mask$logpost, fit_mask$iterations),
#'       impute = c(fit_imp$logpost, fit_imp$iterations))
#' # what the default, "auto", chose here, and the largest share of missing
#' # entries of any row or column, which decided it
#' bnmf(X, rank = 3, method = "icm")$settings$missing
#' max(rowMeans(is.na(X)), colMeans(is.na(X)))
#' @export
icm_control <- function(missing = c("auto", "mask", "impute")) {
  structure(list(missing = check_choice(missing, c("auto", "mask", "impute"), "missing")),
            class = "bnmf_icm_control")
}

# The largest share of missing entries that icm_control(missing = "auto")
# and vb_control(missing = "auto") leave to "impute", in every row and
# every column.
IMPUTE_MAX_SHARE <- 1 / 3

# The setting an ICM or VB fit runs with: "auto" resolved on the data (its
# prepare_data() description) to "impute" when no row or column misses more
# than IMPUTE_MAX_SHARE of its entries, else (and with nothing missing) to
# "mask".
missing_setting <- function(missing, data) {
  if (missing != "auto") return(missing)
  I <- data$dims[1L]
  J <- data$dims[2L]
  if (length(data$miss_pos) == 0L) return("mask")
  worst <- max(max(diff(data$mrow_ptr)) / J, max(diff(data$mcol_ptr)) / I)
  if (worst <= IMPUTE_MAX_SHARE) "impute" else "mask"
}
