#' Settings of NP (Lee-Seung multiplicative updates)
#'
#' Passed to [bnmf()] as `control` with `method = "np"`.
#'
#' The multiplicative updates lower the loss over the observed entries of X
#' one factor at a time. With missing entries and the Euclidean loss, two
#' ways of updating W and H have the same fixed points:
#' - `"mask"`: the updates of the observed entries alone,
#'   \eqn{W \leftarrow W \circ ((M \circ X) H') / ((M \circ WH) H')}{W <- W * ((M * X) H') / ((M * WH) H')} (M: 1
#'   where observed, 0 where missing) and likewise for H. Each row with
#'   missing entries needs its own `K x K` Gram matrix of the other side,
#'   `K^2 / 2` multiply-adds per missing entry (or per observed one, when
#'   fewer): with 20% missing at K = 20 these cost nearly twice the rest of a
#'   sweep under an optimised BLAS.
#' - `"impute"`: the missing entries hold `W H` of the previous sweep and the
#'   sweep is the complete-data one. The loss of the data so filled is the
#'   observed loss plus the squared changes of `W H` at the missing entries,
#'   so each step that lowers it lowers the observed loss too (an EM
#'   iteration): the observed loss still never increases, and where W and H
#'   are positive the fixed points are the masked updates'. A sweep costs
#'   what complete data cost, but moves less: the larger the share of a row's
#'   entries that are missing, the shorter its step.
#' - `"auto"` (the default) takes `"impute"` when no row and no column of X
#'   misses more than a third of its entries (the rule of [icm_control()]),
#'   and `"mask"` otherwise (and with complete data, where both are the same
#'   sweep). At 1000 x 1000, K = 20 with 20% missing at random, an imputing
#'   sweep took half the masked one's time under OpenBLAS (1.4 against 2.8
#'   times the two matrix products) and reached the loss of 1000 masked
#'   sweeps in 1.2 to 1.5 times as many sweeps: 1.3 to 1.8 times as fast in
#'   all (also at 600 x 300, K = 10, and with 30% missing). Under R's
#'   reference BLAS, whose products dominate a sweep, the two were about
#'   even (0.9 to 1.05). See `bench/icm-auto.R` and `bench/README.md` in the
#'   package's repository.
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
#' # what the default, "auto", chose here
#' bnmf(X, rank = 3, method = "np", iter = 5000)$settings$missing
#' @export
np_control <- function(missing = c("auto", "mask", "impute")) {
  structure(list(missing = check_choice(missing, c("auto", "mask", "impute"), "missing")),
            class = "bnmf_np_control")
}
