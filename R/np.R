#' Settings of NP (Lee-Seung multiplicative updates)
#'
#' Passed to [bnmf()] as `control` with `method = "np"`.
#'
#' The multiplicative updates lower the loss over the observed entries of X
#' one factor at a time. With missing entries and the Euclidean loss, two
#' ways of updating W and H have the same fixed points:
#' - `"mask"`: the updates of the observed entries alone,
#'   \eqn{W \leftarrow W \circ ((M \circ X) H') / ((M \circ WH) H')}{W <- W * ((M * X) H') / ((M * WH) H')} (M: 1
#'   where observed, 0 where missing) and likewise for H. A row with missing
#'   entries takes its part of `(M * WH) H'` as `w (H H')` less the terms of
#'   its missing entries (or as the sum over its observed ones, when fewer):
#'   `2 K` multiply-adds per entry (`3 K` for a column of H, whose terms of
#'   the loss need them again), no `K x K` matrix of its own.
#' - `"impute"`: the missing entries hold `W H` of the previous sweep and the
#'   sweep is the complete-data one. The loss of the data so filled is the
#'   observed loss plus the squared changes of `W H` at the missing entries,
#'   so each step that lowers it lowers the observed loss too (an EM
#'   iteration): the observed loss still never increases, and where W and H
#'   are positive the fixed points are the masked updates'. A sweep costs
#'   what complete data cost, but moves less: the larger the share of a row's
#'   entries that are missing, the shorter its step.
#' - `"auto"` (the default) masks. At 1000 x 1000, K = 20 with 20% missing
#'   at random, a masked sweep costs 1.35 times an imputing one under
#'   OpenBLAS (one thread) and 1.07 times under R's reference BLAS, and
#'   needs fewer sweeps: whole fits reached a given loss in 0.93 to 1.08
#'   times the imputing fits' time under OpenBLAS and in 0.73 to 0.86 times
#'   under the reference BLAS (20% and 30% missing at random, 500 rows
#'   missing 30%, 600 x 300 at K = 10), and far sooner where rows miss
#'   nearly all their entries. See `bench/icm-auto.R` and `bench/README.md`
#'   in the package's repository.
#'
#' The Kullback-Leibler loss (`loss = "kl"`) always masks.
#' The setting used (`"mask"` or `"impute"`, after `"auto"` has chosen) is in
#' `fit$settings$missing`; [update.bnmf()] continues a fit with it.
#'
#' @param missing `"auto"` (the default), `"mask"` or `"impute"`: how the
#'   sweeps treat missing entries (see Details).
#' @return A list of class `bnmf_np_control`.
#' @references Lee, D. D. and Seung, H. S. (2001). Algorithms for
#'   non-negative matrix factorization. *Advances in Neural Information
#'   Processing Systems* 13, 556-562.
#' @seealso [bnmf()], [icm_control()], [vb_control()]
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(150), 50) %*% matrix(rexp(120), 3) + abs(rnorm(2000, sd = 0.1))
#' X[sample(length(X), 400)] <- NA
#' set.seed(2)
#' fit_mask <- bnmf(X, rank = 3, method = "np", iter = 5000,
#'                  control = np_control(missing = "mask"))
#' set.seed(2)
#' fit_imp <- bnmf(X, rank = 3, method = "np", iter = 5000,
#'                 control = np_control(missing = "impute"))
#' # the same start, about the same loss (imputing's steps are shorter, so at
#' # the same tol it stops a little short of the masked fit's loss)
#' rbind(mask = c(fit_mask$loss, fit_mask$iterations),
#'       impute = c(fit_imp$loss, fit_imp$iterations))
#' # the default, "auto", masks
#' bnmf(X, rank = 3, method = "np", iter = 5000)$settings$missing
#' @export
np_control <- function(missing = c("auto", "mask", "impute")) {
  structure(list(missing = check_choice(missing, c("auto", "mask", "impute"), "missing")),
            class = "bnmf_np_control")
}

# The setting of an NP fit: "auto" masks (see np_control()'s Details).
np_missing_setting <- function(missing) if (missing == "auto") "mask" else missing
