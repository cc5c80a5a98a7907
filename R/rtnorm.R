#' Random draws from a truncated normal distribution
#'
#' Draws from \eqn{N(\mu, \sigma^2)} conditioned on
#' \eqn{\mathrm{lower} \le X \le \mathrm{upper}}{lower <= X <= upper}. The
#' default truncation to \eqn{[0, \infty)} is the conditional distribution of a
#' factor entry in the Gibbs sampler of Bayesian non-negative matrix
#' factorisation.
#'
#' The sampler is exact for every interval, however far in the tail or however
#' narrow: with \eqn{a, b} the standardised bounds, it uses rejection in the
#' tails (\eqn{a > 0.66} or \eqn{b < -0.66}): from an exponential proposal
#' (Robert 1995) when the other bound is infinite, from a Rayleigh proposal
#' (Botev 2017) when it is finite; rejection from the normal or half-normal
#' distribution for wide intervals near zero, inversion of the normal CDF for
#' intervals of moderate width and rejection from the uniform distribution for
#' narrow ones. Every branch accepts with probability at least 0.47. In the
#' tails the draw is returned as an offset from the bound, so that, for
#' example,
#' `rtnorm(1, mean = -1e6)` has full relative accuracy (about `1e-6`) rather
#' than being rounded to `0`.
#'
#' All parameters are recycled to length `n`, as in [stats::rnorm()]. The
#' draws use R's random number generator, so [set.seed()] makes them
#' reproducible. Only its uniform generator is used (normal and exponential
#' variates come from exact ziggurats built on it), so
#' `RNGkind(normal.kind =)` does not change them.
#'
#' @param n Number of draws: a single non-negative whole number, or a vector
#'   whose length is taken as the number of draws (as in [stats::rnorm()]).
#' @param mean Mean of the untruncated normal distribution: finite numbers.
#' @param sd Standard deviation of the untruncated normal distribution:
#'   positive finite numbers.
#' @param lower,upper Truncation bounds (may be `-Inf` / `Inf`); each `lower`
#'   must be smaller than the corresponding `upper`.
#'
#' @return A double vector of length `n`, every element in
#'   `[lower, upper]`.
#'
#' @references
#' Robert, C. P. (1995). Simulation of truncated normal variables.
#' *Statistics and Computing*, 5(2), 121--125. \doi{10.1007/BF00143942}
#'
#' Chopin, N. (2011). Fast simulation of truncated Gaussian distributions.
#' *Statistics and Computing*, 21(2), 275--288. \doi{10.1007/s11222-009-9168-1}
#'
#' Botev, Z. I. (2017). The normal law under linear restrictions: simulation
#' and estimation via minimax tilting. *Journal of the Royal Statistical
#' Society: Series B*, 79(1), 125--148. \doi{10.1111/rssb.12162}
#'
#' @examples
#' set.seed(1)
#' # half-normal draws: N(0, 1) truncated to [0, Inf)
#' x <- rtnorm(1000)
#' mean(x) # about sqrt(2 / pi) = 0.798
#'
#' # far in the tail: approximately exponential with rate 1000
#' y <- rtnorm(5, mean = -1000, sd = 1)
#' y * 1000
#'
#' # two-sided truncation, parameters recycled
#' rtnorm(6, mean = c(0, 10), sd = 2, lower = c(-1, 5, 30), upper = c(1, 20, 31))
#'
#' # left tail
#' rtnorm(3, lower = -Inf, upper = -30)
#' @export
rtnorm <- function(n, mean = 0, sd = 1, lower = 0, upper = Inf) {
  if (length(n) > 1L) {
    n <- length(n)
  } else if (!is.numeric(n) || length(n) != 1L || is.na(n) || !is.finite(n) ||
             n < 0 || n != floor(n)) {
    abort_input("`n` must be a single non-negative whole number.")
  }
  mean <- .rtnorm_num(mean, "mean", finite = TRUE)
  sd <- .rtnorm_num(sd, "sd", finite = TRUE)
  lower <- .rtnorm_num(lower, "lower")
  upper <- .rtnorm_num(upper, "upper")
  if (any(sd <= 0)) {
    abort_input(sprintf("`sd` must be positive (element %d is %s).",
                          which(sd <= 0)[1L], format(sd[sd <= 0][1L])))
  }
  # Check the (lower, upper) pairs that are used: when one length divides the
  # other the pairs repeat with period max(length); otherwise up to n.
  nl <- length(lower)
  nu <- length(upper)
  if (nl > 0L && nu > 0L) {
    m <- max(nl, nu)
    if (m %% nl != 0L || m %% nu != 0L) m <- max(m, min(n, nl * nu))
    bad <- which(rep_len(lower, m) >= rep_len(upper, m))
    if (length(bad)) {
      i <- bad[1L]
      abort_input(sprintf(
        "`lower` must be less than `upper` (element %d: lower = %s, upper = %s).",
        i, format(rep_len(lower, m)[i]), format(rep_len(upper, m)[i])))
    }
  }
  lens <- c(mean = length(mean), sd = length(sd), lower = nl, upper = nu)
  if (n > 0 && any(lens == 0L)) {
    abort_input(sprintf("`%s` must have length >= 1.",
                          names(lens)[lens == 0L][1L]))
  }
  .Call(C_rtnorm, as.double(n), mean, sd, lower, upper)
}

#' Moments of the normal distribution truncated to `[0, Inf)`
#'
#' Mean and variance of \eqn{N(\mu, \sigma^2)} truncated to \eqn{[0, \infty)},
#' exact in the far tail (a = -mean / sd >= 3: polynomials by pieces in 3 / a,
#' without cancellation). Vectorised, with recycling.
#'
#' @param mean,sd Mean and standard deviation of the untruncated normal.
#' @return A data frame with columns `mean` and `var`.
#' @noRd
tn_moments <- function(mean, sd) {
  mean <- .rtnorm_num(mean, "mean", finite = TRUE)
  sd <- .rtnorm_num(sd, "sd", finite = TRUE)
  if (any(sd <= 0)) abort_input("`sd` must be positive.")
  res <- .Call(C_tn_moments, mean, sd)
  structure(res, class = "data.frame",
            row.names = .set_row_names(length(res$mean)))
}

#' Log density of the normal distribution truncated to `[0, Inf)`
#'
#' \eqn{\log f(x)} for \eqn{N(\mu, \sigma^2)} truncated to \eqn{[0, \infty)}
#' (`-Inf` for `x < 0`), exact in the tails. Vectorised, with recycling.
#'
#' @param x Points at which to evaluate the log density.
#' @param mean,sd Mean and standard deviation of the untruncated normal.
#' @return A double vector.
#' @noRd
tn_logdens <- function(x, mean, sd) {
  x <- .rtnorm_num(x, "x")
  mean <- .rtnorm_num(mean, "mean", finite = TRUE)
  sd <- .rtnorm_num(sd, "sd", finite = TRUE)
  if (any(sd <= 0)) abort_input("`sd` must be positive.")
  .Call(C_tn_logdens, x, mean, sd)
}

# Argument check shared by the functions of this file.
.rtnorm_num <- function(x, arg, finite = FALSE) {
  if (!is.numeric(x)) {
    abort_input(sprintf("`%s` must be numeric, not %s.", arg, class(x)[1L]))
  }
  x <- as.double(x)
  if (finite) {
    # one pass in C for NA, NaN and +-Inf, which names the first offender
    i <- .Call(C_first_nonfinite, x)
    if (i > 0) {
      abort_input(sprintf(if (is.na(x[i])) "`%s` must not contain NA (element %.0f)."
                          else "`%s` must be finite (element %.0f).", arg, i))
    }
  } else if (anyNA(x)) {
    abort_input(sprintf("`%s` must not contain NA.", arg))
  }
  x
}
