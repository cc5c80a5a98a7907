# summary() of fits and print() of the summaries: per-factor tables, the fit
# to the data, the noise, and each class's diagnostics (Gibbs: ESS, R-hat and
# modes; optimisers: convergence; particles: weights, distances, top
# features; HMC: the sampler's acceptance, step size and divergences).

#' Summarise a fit
#'
#' Per-factor posterior summaries, the noise level, the fit to the observed
#' data, and diagnostics: for Gibbs fits the effective sample size (ESS) and,
#' with several chains, the split R-hat of the log-likelihood and of `tau`;
#' for ICM, VB and NP fits convergence and the log posterior, ELBO or loss.
#' Every ESS and R-hat of a summary (of `loglik` and `tau`, and of the
#' factors) is the bulk ESS and rank-normalised split R-hat of the posterior
#' package when it is installed, else bnmf's own split R-hat and Geyer ESS.
#'
#' The per-factor table has, for each factor `k`: `share`, its part of the
#' total fitted signal `sum(W[, k]) * sum(H[k, ])) / sum(W %*% H)`;
#' `W_sum` and `H_mean`, the column sum of `W` and the row mean of `H`;
#' `W_zero` and `H_zero`, the fraction of entries that are (numerically) zero
#' at the point estimate; and for Gibbs and VB fits `W_cv`, the average
#' posterior coefficient of variation (sd / mean) of the entries of `W[, k]`
#' that are not (numerically) zero.
#'
#' Every number is finite or NA, and every NA comes with a reason: the
#' summary's `notes` (printed as `Note:` lines) and the `note` column of the
#' diagnostics tables say why (constant data have no R^2; a constant chain,
#' fewer than 4 draws per chain or non-finite draws have no ESS; ...). RMSE
#' and R^2 are computed on the scale of the data, so they do not overflow or
#' underflow at any scale; an R^2 below -1 (the fit is further from the data
#' than their mean is) prints as `< -1` with a note.
#'
#' With an [ard()] prior the table also has `lambda`, the posterior mean of
#' the factor's ARD rate; `signal`, the factor's mean contribution to an
#' entry of `W %*% H`, `sum(W[, k]) * sum(H[k, ]) / (I * J)`, in units of the
#' noise standard deviation [sigma()]; `gain`, what the factor adds to the
#' fit beyond the factors larger than it, in noise variances; and `active`,
#' `gain > (sqrt(I) + sqrt(J))^2`. The gain takes the factors in decreasing
#' order of their mass `sum(W[, k]) * sum(H[k, ])`: with `A` the larger
#' ones, it is the residual sum of squares of a non-negative least-squares
#' refit of the factors `A` (both `W` and `H`, from their values in the fit)
#' minus that of the same refit with the term `W[, k] H[k, ]` added (its
#' shape as fitted, its scale free), divided by `sigma(fit)^2`. The cut
#' `(sqrt(I) + sqrt(J))^2` is the square of the largest singular value of an
#' `I x J` matrix of unit-variance noise: what a rank-one term fitted to
#' pure noise takes off the residual sum of squares. ARD shrinks the factors
#' the data do not support towards zero (exactly to zero at the ICM mode).
#' The rule also sees through splits: a structure the data support once (a
#' constant mean, say) may be shared by several factors, each contributing
#' far above the noise level (the Gibbs posterior of exponential factors
#' does keep such shares alive, and VB and ICM can stop at a split); a share
#' adds nothing the refit of the larger factors cannot, so only one of them
#' counts. (Before version 0.1.0, `active` was `signal >= 0.1`, which
#' counted every share and every factor fitting noise above a tenth of the
#' noise sd.) Missing entries take the fitted values in the refits. See
#' `plot(fit, type = "ard")`.
#'
#' For Gibbs fits the summary also has factor-level diagnostics and a count
#' of modes. `factor_diagnostics`: the bulk ESS and R-hat of each factor's
#' column sum of `W` (`W_sum[k]`) and row sum of `H` (`H_sum[k]`), computed
#' from the kept draws (fits with `keep = "draws"`; otherwise `NULL`, as the
#' per-draw factors are not stored), after aligning every chain's factors to
#' those of the first chain by [align_factors()] on the chains' posterior
#' mean bases (the labels of an NMF are arbitrary, so chains that found the
#' same factors in another order would otherwise look unconverged). R-hat
#' and ESS are those of the posterior package (`posterior::rhat()`,
#' `posterior::ess_bulk()`) when it is installed, else bnmf's own split R-hat
#' and Geyer ESS (as for `loglik` and `tau`). `modes` (two or more chains):
#' how many distinct modes the chains landed in, the greedy covering number
#' ([covering_number()]) of the chains' bases under the weighted angular
#' distance ([wad()]) at `wad_threshold` degrees: chains whose bases are
#' farther apart than that count as different modes. The bases are the
#' chains' posterior means. `wh_moments`: the draws behind the posterior
#' mean of `W %*% H` (`n`, every `wh_thin`-th kept draw of each chain, see
#' [bnmf()]; `thin`, that setting) and its Monte Carlo standard error
#' `mc_se`, the median over the entries of `sd((WH)_ij) / sqrt(n)`: naive,
#' as if the draws were independent (autocorrelated draws make the error
#' larger); `NA` with a single draw.
#'
#' `membership` ([membership()]): each sample's cluster (its dominant
#' factor) with the posterior probability of that cluster over the fit's
#' draws, chains or restarts (VB: draws from its variational posterior, with
#' the session's random numbers); `print()` gives the cluster sizes and how many
#' samples have a probability below 0.9.
#'
#' @param object A `bnmf` fit.
#' @param wad_threshold For Gibbs fits with several chains: the WAD, in
#'   degrees, beyond which two chains count as being in different modes.
#' @param x A `summary.bnmf` object.
#' @param digits Significant digits to print.
#' @param ... Not used: an argument here is an error.
#' @return An object of class `summary.bnmf`.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:80, ], rank = 3, iter = 400, chains = 2)
#' summary(fit)
#' @export
summary.bnmf <- function(object, wad_threshold = 10, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  wad_threshold <- check_number(wad_threshold, "wad_threshold", 0)
  W <- object$W
  H <- object$H
  eps <- 1e-12 * max(W, H, 1e-300)
  notes <- character()
  share <- factor_shares(W, H)
  if (anyNA(share)) notes <- c(notes, "share is NA: every factor is zero at the estimate")
  fac <- data.frame(
    factor = factor_names(object$rank),
    share = share,
    W_sum = colSums(W),
    H_mean = rowMeans(H),
    W_zero = colMeans(W <= eps),
    H_zero = rowMeans(H <= eps)
  )
  # Fits with a posterior (Gibbs, VB) have posterior sds of W; entries that
  # are (numerically) zero have no coefficient of variation.
  if (!is.null(object$W_sd)) {
    cv <- object$W_sd / W
    cv[!(W > eps)] <- NA
    fac$W_cv <- colMeans(cv, na.rm = TRUE)
    fac$W_cv[is.nan(fac$W_cv)] <- NA
    if (anyNA(fac$W_cv)) notes <- c(notes, "W_cv is NA for a factor whose entries of W are all zero")
  }
  if (identical(object$prior$type, "ard")) {
    rel <- ard_relevance(object)
    fac$lambda <- rel$lambda
    fac$signal <- rel$signal
    fac$gain <- rel$gain
    fac$active <- rel$active
  }
  q <- fit_stats(object)
  out <- list(
    method = object$method, dims = object$dims, rank = object$rank,
    n_obs = object$n_obs, n_missing = object$n_missing,
    factors = fac,
    rmse = q$rmse,
    r_squared = q$r_squared,
    sigma = NA_real_,
    membership = membership(object),
    notes = c(notes, q$notes)
  )
  structure(out, class = "summary.bnmf")
}

# Each factor's part of the total fitted signal, sum(W[, k]) * sum(H[k, ]) /
# sum(W H); where that overflows or underflows, from the sums scaled by their
# largest values; NA when every factor is zero.
factor_shares <- function(W, H) {
  a <- colSums(W)
  b <- rowSums(H)
  mass <- a * b
  tot <- sum(mass)
  if (is.finite(tot) && tot > 0 && all(is.finite(mass))) return(mass / tot)
  a <- a / max(a, .Machine$double.xmin)
  b <- b / max(b, .Machine$double.xmin)
  mass <- a * b
  if (!(sum(mass) > 0) || !all(is.finite(mass))) return(rep(NA_real_, length(mass)))
  mass / sum(mass)
}

# RMSE and R^2 of the residuals `res` of the observed entries of `X` (NA
# entries left out), computed on the scale of X (both divided by max |X|),
# so that squares neither overflow nor underflow at any scale of the data;
# R^2 is NA, with a note, when the observed entries are all equal. `notes`
# explains NAs and a negative R^2.
fit_quality <- function(res, X) {
  X <- as.matrix(X)
  res <- as.matrix(res)
  s <- max(abs(X), na.rm = TRUE)
  if (!is.finite(s) || s == 0) s <- 1
  r <- res / s
  x <- X / s
  quality_from_sums(sum(r^2, na.rm = TRUE), sum((x - mean(x, na.rm = TRUE))^2, na.rm = TRUE),
                    sum(!is.na(r)), s)
}

# RMSE and R^2 (with notes) from the sums of squared residuals `sse` and of
# squared deviations from the mean `sst` over `n` entries, all computed on
# the data divided by `s`.
quality_from_sums <- function(sse, sst, n, s) {
  rmse <- s * sqrt(sse / n)
  notes <- character()
  if (!is.finite(rmse)) {
    notes <- "RMSE and R^2 are NA: the fitted values are not finite"
    return(list(rmse = NA_real_, r_squared = NA_real_, notes = notes))
  }
  if (!(sst > 0)) {
    return(list(rmse = rmse, r_squared = NA_real_,
                notes = "R^2 is NA: the observed entries of X are all equal, there is no variation to explain"))
  }
  r2 <- 1 - sse / sst
  if (r2 < 0) {
    notes <- sprintf("R^2 < 0: W H is further from X than X's mean is (RMSE %s, sd of X %s): the fit failed or is at the wrong scale",
                     format(signif(rmse, 3)), format(signif(s * sqrt(sst / max(n - 1, 1)), 3)))
  }
  list(rmse = rmse, r_squared = r2, notes = notes)
}

# R^2 for print(): below -1 as "< -1" (its value only says how far off the
# fit is, which the note gives), rounding noise around 0 as 0.
format_r_squared <- function(r2, digits) {
  if (is.na(r2)) return("NA")
  if (r2 < -1) return("< -1")
  if (abs(r2) < 1e-10) return("0")
  format(signif(r2, digits))
}

# Notes that explain the NAs (and odd values) of a summary, one line each.
cat_notes <- function(notes) {
  notes <- unique(notes[nzchar(notes)])
  if (length(notes)) cat(sprintf("Note: %s\n", notes), sep = "")
}

#' @export
summary.bnmf_gibbs <- function(object, wad_threshold = 10, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  out <- NextMethod()
  wad_threshold <- check_number(wad_threshold, "wad_threshold", 0)
  kt <- kept_trace(object)
  q <- stats::quantile(kt$tau, c(0.025, 0.975), names = FALSE)
  out <- summary_parts(out, object, sigma = sigma(object),
                       tau = c(mean = object$tau, sd = object$tau_sd, lower = q[1L], upper = q[2L]))
  out$diagnostics <- trace_diagnostics(list(loglik = kt$loglik, tau = kt$tau), kt$chain)
  out$n_draws <- object$n_draws
  out$chains <- object$settings$chains
  out$wh_moments <- wh_moments_mc(object)
  out$factor_diagnostics <- factor_draw_diagnostics(object)
  out$modes <- chain_modes(object, wad_threshold)
  out
}

# The draws behind the mean of W H (every settings$wh_thin-th kept draw) and
# its naive Monte Carlo standard error, sd((WH)_ij) / sqrt(n) as if the draws
# were independent (autocorrelation makes the true error larger), as the
# median over the entries where W H is kept. NA with fewer than 2 draws.
wh_moments_mc <- function(object) {
  m <- object$moments$WH
  if (is.null(m) || !length(m$m2)) return(NULL)
  n <- m$n
  se <- if (n > 1) stats::median(sqrt(m$m2 / (n - 1))) / sqrt(n) else NA_real_
  list(n = n, thin = object$settings$wh_thin %||% 1L, mc_se = se)
}

#' @export
summary.bnmf_vb <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  a <- object$q_tau[["shape"]]
  b <- object$q_tau[["rate"]]
  q <- stats::qgamma(c(0.025, 0.975), a, b)
  optimiser_summary(NextMethod(), object, sigma = sigma(object),
                    tau = c(mean = object$tau, sd = object$tau_sd, lower = q[1L], upper = q[2L]),
                    elbo = object$elbo)
}

#' @export
summary.bnmf_icm <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  optimiser_summary(NextMethod(), object, sigma = sigma(object), tau = c(mode = object$tau),
                    logpost = object$logpost)
}

#' @export
summary.bnmf_np <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  optimiser_summary(NextMethod(), object, loss = object$loss, loss_name = object$settings$loss)
}

# The summary of a fit of class bnmf_<method>, of class
# c("summary.bnmf_<method>", "summary.bnmf"): `out` with the elements `...`
# set (in place if `out` has them, else appended in order).
summary_parts <- function(out, object, ...) {
  parts <- list(...)
  for (nm in names(parts)) out[[nm]] <- parts[[nm]]
  class(out) <- c(paste0("summary.", class(object)[1L]), "summary.bnmf")
  out
}

# An optimiser's summary ends with how its kept restart converged.
optimiser_summary <- function(out, object, ...) {
  summary_parts(out, object, ..., converged = object$converged[object$best],
                iterations = object$iterations[object$best])
}

# Relevance of each factor under ARD: signal, its mean contribution to an
# entry of W H in units of the noise sd; gain, what it adds to the fit
# beyond the factors larger than it (ard_gain(), in noise variances); active
# when the gain exceeds ard_gain_cut(I, J).
ard_relevance <- function(object) {
  W <- object$W
  H <- object$H
  mass <- colSums(W) * rowSums(H)
  sd <- sigma(object)
  signal <- mass / prod(object$dims) / sd
  gain <- ard_gain(object$X, W, H, sd)
  data.frame(factor = factor_names(object$rank), lambda = unname(object$lambda),
             share = mass / sum(mass), signal = signal, gain = gain,
             active = gain > ard_gain_cut(object$dims[1L], object$dims[2L]))
}

# The activity cut of ard_relevance(), in noise variances: (sqrt(I) +
# sqrt(J))^2, the square of the largest singular value of an I x J matrix of
# unit-variance noise (Marchenko-Pastur edge): what a rank-one term fitted to
# pure noise takes off the residual sum of squares.
ard_gain_cut <- function(I, J) (sqrt(I) + sqrt(J))^2

# What each rank-one term W[, k] H[k, ] adds to the fit of X beyond the
# terms larger than it: the factors in decreasing order of their mass
# sum(W[, k]) sum(H[k, ]); with A the larger ones, gain_k = RSS(A) -
# RSS(A, c T_k), where RSS(A) is the residual sum of squares of a
# non-negative refit of the factors A (both sides, by HALS from their
# values in the fit) and RSS(A, c T_k) that of the same refit with the term
# T_k = W[, k] H[k, ] (its shape as fitted, its scale c >= 0 free) added.
# A factor that is a piece of a larger one (a constant split over several
# factors, say) adds nothing the refit of the larger ones cannot; a factor
# that fits noise adds at most what a rank-one term fitted to noise does.
# Missing entries of X take the fitted W H. Returns the gains in units of
# sigma^2 (computed on X / s, W / sqrt(s), H / sqrt(s) with s the largest
# |X|, so that they neither overflow nor underflow at any scale). The refits
# stop when the residual sum of squares moves by less than 1e-3 sigma^2
# or after `iter` sweeps (2 K refits of O(I J K) flops per sweep).
ard_gain <- function(X, W, H, sigma, iter = 25L) {
  W <- unname(as.matrix(W))
  H <- unname(as.matrix(H))
  X <- unname(as.matrix(X))
  storage.mode(X) <- "double"
  s <- max(abs(X), na.rm = TRUE)
  if (!(s > 0) || !is.finite(s)) s <- 1
  X <- X / s
  W <- W / sqrt(s)
  H <- H / sqrt(s)
  miss <- is.na(X)
  if (any(miss)) X[miss] <- (W %*% H)[miss]
  tol <- 1e-3 * (sigma / s)^2
  if (!(tol > 0) || !is.finite(tol)) tol <- 0
  K <- ncol(W)
  ord <- order(colSums(W) * rowSums(H), decreasing = TRUE)
  gain <- numeric(K)
  xx <- sum(X^2)
  cur <- list(W = W[, 0L, drop = FALSE], H = H[0L, , drop = FALSE], rss = xx)
  for (k in ord) {
    w <- W[, k]
    h <- H[k, ]
    tt <- sum(w^2) * sum(h^2)
    r <- if (tt > 0) hals_refit(X, xx, cur$W, cur$H, iter, tol, w, h)$rss else cur$rss
    gain[k] <- cur$rss - r
    cur <- hals_refit(X, xx, cbind(cur$W, w), rbind(cur$H, h), iter, tol)
  }
  gain / (sigma / s)^2
}

# Non-negative least squares refit of X ~ W H (+ c w h', c >= 0, when w and
# h are given) by sweeps of HALS (exact coordinate updates of the rows of H,
# the columns of W, then c), from the W and H given, at most `iter` sweeps,
# until the residual sum of squares moves by less than `tol`. The data enter
# only through X' W and X H' (the term c w h' through its inner products);
# xx = sum(X^2). Returns W, H and the residual sum of squares.
hals_refit <- function(X, xx, W, H, iter, tol, w = NULL, h = NULL) {
  K <- ncol(W)
  fixed <- !is.null(w)
  cc <- if (fixed) 1 else 0
  if (fixed) {
    ww <- sum(w^2)
    hh <- sum(h^2)
    xt <- sum(w * (X %*% h)) # <X, w h'>
  }
  rss_at <- function(BW, GW) {
    # sum((X - c w h' - W H)^2), from Y H' = BW (I x K) and H H' = GW
    yy <- xx - (if (fixed) 2 * cc * xt - cc^2 * ww * hh else 0)
    yy - 2 * sum(W * BW) + sum(W * (W %*% GW))
  }
  rss_old <- Inf
  rss <- xx
  for (it in seq_len(iter)) {
    if (K > 0L) {
      G <- crossprod(W)
      B <- crossprod(W, X)
      if (fixed) B <- B - cc * (as.vector(crossprod(W, w)) %o% h)
      for (k in seq_len(K)) if (G[k, k] > 0) {
        H[k, ] <- pmax(0, H[k, ] + (B[k, ] - G[k, , drop = FALSE] %*% H) / G[k, k])
      }
      G <- tcrossprod(H)
      XH <- tcrossprod(X, H)
      B <- if (fixed) XH - cc * (w %o% as.vector(H %*% h)) else XH
      for (k in seq_len(K)) if (G[k, k] > 0) {
        W[, k] <- pmax(0, W[, k] + (B[, k] - W %*% G[, k]) / G[k, k])
      }
    }
    if (fixed) {
      # c = <X - W H, w h'> / |w h'|^2, at least 0
      cc <- max(0, (xt - sum((crossprod(W, w)) * (H %*% h))) / (ww * hh))
    }
    if (K == 0L) {
      rss <- xx - (if (fixed) 2 * cc * xt - cc^2 * ww * hh else 0)
      break
    }
    # X H' is that of the W step: H has not moved since
    rss <- rss_at(if (fixed) XH - cc * (w %o% as.vector(H %*% h)) else XH, G)
    if (abs(rss_old - rss) <= tol) break
    rss_old <- rss
  }
  list(W = W, H = H, rss = rss)
}

# Relevance of each factor of a Poisson ARD fit: lambda (the posterior mean
# of its rate), share (its part of the fitted counts, sum(W[, k]) *
# sum(H[k, ]) / sum(W H)), signal, the Pearson chi-square of the counts it
# adds, sum over the observed entries of (W_ik H_kj)^2 / (W H)_ij (how much
# the fit would move, in units of the Poisson variance, without it), and
# active = signal > I + J - 1, the number of free parameters of a rank-one
# term: the Pearson chi-square that a term fitted to pure Poisson noise
# reaches on average. Computed by blocks of columns (O(I J K) flops).
pois_ard_relevance <- function(object) {
  W <- unname(object$W)
  H <- unname(object$H)
  K <- ncol(W)
  X <- object$X
  J <- ncol(H)
  W2 <- W^2
  sig <- numeric(K)
  block <- max(1L, min(J, floor(4e6 / max(nrow(W), 1))))
  for (j0 in seq(1L, J, by = block)) {
    jj <- j0:min(J, j0 + block - 1L)
    mu <- W %*% H[, jj, drop = FALSE]
    inv <- 1 / pmax(mu, .Machine$double.xmin)
    if (object$n_missing > 0) inv[is.na(as.matrix(X[, jj, drop = FALSE]))] <- 0
    sig <- sig + rowSums(crossprod(W2, inv) * H[, jj, drop = FALSE]^2)
  }
  mass <- colSums(W) * rowSums(H)
  df <- nrow(W) + J - 1
  data.frame(factor = factor_names(K), lambda = unname(object$lambda),
             share = if (sum(mass) > 0) mass / sum(mass) else NA_real_, signal = sig,
             active = sig > df)
}

#' @rdname summary.bnmf
#' @export
print.summary.bnmf <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  digits <- check_count(digits, "digits", min = 1)
  # NP has no prior: its fits are not Bayesian
  cat(sprintf("%s (%s), rank %d, X %d x %d, %s observed entries (%d missing)\n\n",
              if (identical(x$method, "np")) "NMF by multiplicative updates" else "Bayesian NMF",
              x$method, x$rank, x$dims[1L], x$dims[2L],
              format(x$n_obs, big.mark = ",", scientific = FALSE), x$n_missing))
  cat("Factors:\n")
  f <- finite_table(x$factors)
  num <- vapply(f, is.numeric, logical(1))
  f[num] <- lapply(f[num], signif, digits = digits)
  print(f, row.names = FALSE)
  if (!is.null(x$factors$active)) {
    cat(sprintf("ARD: %d of %d factors active (gain in fit > (sqrt(I) + sqrt(J))^2 = %s noise variances)\n",
                sum(x$factors$active, na.rm = TRUE), nrow(x$factors),
                format(signif(ard_gain_cut(x$dims[1L], x$dims[2L]), 3))))
  }
  cat(sprintf("\nFit: RMSE %s, R^2 %s%s\n", format(signif(x$rmse, digits)),
              format_r_squared(x$r_squared, digits),
              if (is.na(x$sigma)) "" else paste0(", sigma ", format(signif(x$sigma, digits)))))
  cat_membership(x$membership, digits)
  cat_notes(c(x$notes, attr(f, "note")))
  invisible(x)
}

# A table for print(): non-finite numbers (overflow, 0/0) become NA, with
# attribute "note" saying so; NULL note when every number is finite.
finite_table <- function(tab) {
  num <- vapply(tab, is.numeric, logical(1))
  bad <- FALSE
  for (j in which(num)) {
    nf <- !is.finite(tab[[j]]) & !is.na(tab[[j]])
    if (any(nf)) {
      tab[[j]][nf] <- NA
      bad <- TRUE
    }
  }
  if (bad) attr(tab, "note") <- "non-finite values (overflow or 0/0 at the data's scale) are shown as NA"
  tab
}

# A table of ESS and R-hat for print(): ESS rounded, R-hat to 4 digits, the
# note column (why a value is NA) only when some row has one.
print_diagnostics <- function(d) {
  d$ess <- round(d$ess)
  d$rhat <- signif(d$rhat, 4)
  if (!is.null(d$note) && all(!nzchar(d$note))) d$note <- NULL
  print(d, row.names = FALSE, right = is.null(d$note))
}

#' @export
print.summary.bnmf_gibbs <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  NextMethod()
  cat_tau_interval(x, "", digits)
  cat(sprintf("\nSampling: %d chain%s, %d draws (bulk ESS and R-hat from %s)\n", x$chains,
              if (x$chains > 1) "s" else "", x$n_draws,
              attr(x$diagnostics, "engine") %||% "bnmf"))
  wm <- x$wh_moments
  if (!is.null(wm)) {
    cat(sprintf("Mean of W H from %d of the %d draws (wh_thin = %d); its Monte Carlo se, naive (i.i.d. draws), median over entries: %s\n",
                as.integer(wm$n), as.integer(x$n_draws), as.integer(wm$thin),
                format(signif(wm$mc_se, digits))))
  }
  print_diagnostics(x$diagnostics)
  fd <- x$factor_diagnostics
  if (!is.null(fd)) {
    cat(sprintf("Factor-level diagnostics (chains' factors aligned; R-hat and bulk ESS from %s):\n",
                attr(fd, "engine")))
    print_diagnostics(fd[intersect(c("quantity", "ess", "rhat", "note"), names(fd))])
  } else {
    cat("Factor-level R-hat and ESS need the draws: fit with keep = \"draws\".\n")
  }
  m <- x$modes
  if (!is.null(m)) {
    cat(sprintf("Chains in distinct modes: %d of %d (covering number of the chains' %s at WAD %s degrees; largest WAD between chains %s degrees)\n",
                m$n_modes, m$chains, m$basis, format(m$threshold),
                format(signif(max(m$wad), digits))))
    if (m$n_modes > 1L) {
      groups <- split(seq_along(m$mode), m$mode)
      cat(sprintf("  modes: %s\n", paste(vapply(groups, function(g) {
        paste0("chain", if (length(g) > 1L) "s " else " ", paste(g, collapse = ", "))
      }, character(1)), collapse = " | ")))
    }
  }
  invisible(x)
}

#' @export
print.summary.bnmf_vb <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  NextMethod()
  cat_tau_interval(x, "q(tau) ", digits)
  cat_converged(x, sprintf("ELBO %s", format(signif(x$elbo, 8))))
  invisible(x)
}

#' @export
print.summary.bnmf_icm <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  NextMethod()
  cat(sprintf("tau (mode): %s\n", format(signif(x$tau[["mode"]], digits))))
  cat_converged(x, sprintf("log posterior %s", format(signif(x$logpost, 8))))
  invisible(x)
}

#' @export
print.summary.bnmf_np <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  NextMethod()
  cat_converged(x, sprintf("%s loss %s", if (identical(x$loss_name, "kl")) "KL" else "Euclidean",
                           format(signif(x$loss, 8))))
  invisible(x)
}

# tau's posterior (`what`: "" or "q(tau) ") mean, sd and 95% interval.
cat_tau_interval <- function(x, what, digits) {
  cat(sprintf("tau: %smean %s, sd %s, 95%% interval [%s, %s]\n", what,
              format(signif(x$tau[["mean"]], digits)), format(signif(x$tau[["sd"]], digits)),
              format(signif(x$tau[["lower"]], digits)), format(signif(x$tau[["upper"]], digits))))
}

# How an optimiser's kept restart ended, and its criterion `crit`.
cat_converged <- function(x, crit) {
  cat(sprintf("%s %s after %d sweeps; %s\n", toupper(x$method),
              if (x$converged) "converged" else "did not converge", x$iterations, crit))
}

# Why the ESS and R-hat of draws `x` (chains `chain`) cannot be computed,
# or "" when they can: non-finite draws, fewer than 4 draws in a chain,
# constant draws, or a chain stuck at one value (its ESS is undefined; R-hat
# is still computed when the chains differ).
draws_problem <- function(x, chain = rep(1L, length(x))) {
  if (!length(x)) return("no draws")
  if (any(!is.finite(x))) return("non-finite draws")
  parts <- split(x, chain)
  n <- min(lengths(parts))
  if (n < 4L) return(sprintf("too few draws (%d in a chain; 4 needed)", n))
  const <- vapply(parts, function(v) all(v == v[1L]), logical(1))
  if (all(const)) {
    return(if (all(x == x[1L])) "constant draws" else "every chain constant (stuck, or moves below rounding)")
  }
  if (any(const)) return(stuck_chain)
  ""
}

stuck_chain <- "a chain constant (stuck, or moves below rounding)"

# Draws divided by their largest absolute value: ESS and R-hat do not change,
# and squares neither overflow nor underflow at any scale.
unit_scale <- function(x) {
  s <- max(abs(x))
  if (s > 0 && is.finite(s)) x / s else x
}

# Effective sample size of one chain: Geyer's initial positive sequence
# estimator of the integrated autocorrelation time. NA for fewer than 4
# draws, non-finite draws and a constant chain (see draws_problem()).
ess_one <- function(x) {
  n <- length(x)
  if (n < 4L || any(!is.finite(x))) return(NA_real_)
  x <- unit_scale(x)
  if (!(stats::var(x) > 0)) return(NA_real_)
  ac <- stats::acf(x, lag.max = n - 1L, plot = FALSE, demean = TRUE)$acf[, 1, 1]
  if (any(!is.finite(ac))) return(NA_real_)
  s <- 0
  for (t in seq(1L, n - 2L, by = 2L)) {
    pair <- ac[t] + ac[t + 1L]
    if (pair <= 0) break
    s <- s + pair
  }
  tau_int <- -1 + 2 * s
  n / max(tau_int, 1 / log10(max(n, 10)))
}

# The ESS of several chains: the sum of theirs (NA if any is NA, or no draws).
ess_chains <- function(x, chain) {
  if (!length(x)) return(NA_real_)
  sum(vapply(split(x, chain), ess_one, numeric(1)))
}

# Split R-hat (Gelman et al. 2013): each chain split in halves, the halves
# cut to the shortest. NA for non-finite draws, fewer than 2 draws per half,
# or when every half is constant.
split_rhat <- function(x, chain) {
  if (!length(x) || any(!is.finite(x))) return(NA_real_)
  x <- unit_scale(x)
  parts <- unlist(lapply(split(x, chain), function(v) {
    n <- length(v) %/% 2L
    if (n < 2L) return(list())
    list(v[seq_len(n)], v[n + seq_len(n)])
  }), recursive = FALSE)
  if (length(parts) < 2L) return(NA_real_)
  n <- min(lengths(parts))
  parts <- lapply(parts, `[`, seq_len(n))
  means <- vapply(parts, mean, numeric(1))
  vars <- vapply(parts, stats::var, numeric(1))
  B <- n * stats::var(means)
  Wv <- mean(vars)
  if (!(Wv > 0)) return(NA_real_)
  sqrt(((n - 1) / n * Wv + B / n) / Wv)
}

# ESS and split R-hat of each trace in the named list `traces` (chains
# `chain`), with a note saying why a value is NA ("" when none is): the bulk
# ESS and R-hat of the posterior package when it is installed (chains cut to
# the shortest), as for the factor-level diagnostics, else bnmf's own.
trace_diagnostics <- function(traces, chain,
                              use_posterior = requireNamespace("posterior", quietly = TRUE)) {
  out <- data.frame(quantity = names(traces),
                    ess = vapply(traces, ess_chains, numeric(1), chain = chain),
                    rhat = vapply(traces, split_rhat, numeric(1), chain = chain),
                    note = vapply(traces, draws_problem, character(1), chain = chain),
                    row.names = NULL, stringsAsFactors = FALSE)
  if (use_posterior) {
    for (q in which(!nzchar(out$note))) {
      parts <- split(traces[[q]], chain)
      n <- min(lengths(parts))
      d <- posterior_diagnostics(vapply(parts, function(v) v[seq_len(n)], numeric(n)))
      out$ess[q] <- d[["ess"]]
      out$rhat[q] <- d[["rhat"]]
      if (!is.null(attr(d, "note"))) out$note[q] <- attr(d, "note")
    }
  }
  attr(out, "engine") <- if (use_posterior) "posterior" else "bnmf"
  out
}

# posterior's bulk ESS and R-hat of draws m (iterations x chains); posterior
# caps the ESS of short chains with a warning: attribute "note" instead.
posterior_diagnostics <- function(m) {
  m <- unit_scale(m)
  note <- NULL
  d <- withCallingHandlers(
    suppressMessages(c(ess = posterior::ess_bulk(m), rhat = posterior::rhat(m))),
    warning = function(w) {
      if (grepl("capped", conditionMessage(w))) {
        note <<- "ESS capped by posterior (few draws)"
        invokeRestart("muffleWarning")
      }
    })
  attr(d, "note") <- note
  d
}

# ESS and R-hat of the factor-level quantities of a Gibbs fit that kept its
# draws: per factor the column sum of W and the row sum of H at every draw,
# chains' factors aligned to those of chain 1 (by their posterior-mean
# bases; the fit aligned them already, this makes sure); chains of different
# lengths are cut to the shortest. NULL without draws; NA with a note where
# the draws are too few, constant or not finite.
factor_draw_diagnostics <- function(object,
                                    use_posterior = requireNamespace("posterior", quietly = TRUE)) {
  if (is.null(object$draws)) return(NULL)
  I <- object$dims[1L]; J <- object$dims[2L]; K <- object$rank
  C <- length(object$draws)
  n <- min(vapply(object$draws, function(d) ncol(d$W), numeric(1)))
  if (n < 1L) return(NULL)
  # aligned by the means of the draws themselves
  fs <- lapply(object$draws, function(d) matrix(rowMeans(d$W), I, K))
  ref <- unit_columns(fs[[1L]])
  perms <- lapply(fs, function(W) match_factors_unit(ref, W))
  wsum <- lapply(seq_len(C), function(c) {
    m <- matrix(colSums(array(object$draws[[c]]$W[, seq_len(n), drop = FALSE], c(I, K * n))), K, n)
    m[perms[[c]], , drop = FALSE]
  })
  hsum <- lapply(seq_len(C), function(c) {
    a <- array(object$draws[[c]]$H[, seq_len(n), drop = FALSE], c(K, J, n))
    m <- rowSums(aperm(a, c(1L, 3L, 2L)), dims = 2L)
    m[perms[[c]], , drop = FALSE]
  })
  chain <- rep(seq_len(C), each = n)
  notes <- character()
  one <- function(sums, k) {
    m <- vapply(sums, function(s) s[k, ], numeric(n))
    m <- matrix(m, n, C)
    why <- draws_problem(as.vector(m), chain)
    notes <<- c(notes, why)
    if (nzchar(why) && why != stuck_chain) return(c(ess = NA_real_, rhat = NA_real_))
    if (use_posterior && !nzchar(why)) {
      d <- posterior_diagnostics(m)
      if (!is.null(attr(d, "note"))) notes[length(notes)] <<- attr(d, "note")
      d
    } else {
      c(ess = ess_chains(as.vector(m), chain), rhat = split_rhat(as.vector(m), chain))
    }
  }
  kn <- factor_names(K)
  res <- rbind(t(vapply(seq_len(K), function(k) one(wsum, k), numeric(2))),
               t(vapply(seq_len(K), function(k) one(hsum, k), numeric(2))))
  out <- data.frame(quantity = c(sprintf("W_sum[%s]", kn), sprintf("H_sum[%s]", kn)),
                    factor = rep(kn, 2L), ess = res[, "ess"], rhat = res[, "rhat"],
                    note = notes, stringsAsFactors = FALSE)
  attr(out, "engine") <- if (use_posterior) "posterior" else "bnmf"
  attr(out, "perm") <- perms
  out
}

match_factors_unit <- function(ref_unit, W) {
  if (ncol(W) == 1L) return(1L)
  align_core(ref_unit, unit_columns(W))$perm
}

# How many distinct modes the chains of a Gibbs fit are in: the greedy
# covering number of their posterior-mean bases under WAD at `threshold`
# degrees; each chain's mode is
# its nearest centre. NULL with one chain.
chain_modes <- function(object, threshold) {
  C <- length(object$chains)
  if (C < 2L) return(NULL)
  fs <- chain_factorisations(object, "means")
  cv <- covering_number(fs, epsilon = threshold)
  D <- as.matrix(cv$distance)
  centres <- cv$centres[[1L]]
  mode <- apply(D[, centres, drop = FALSE], 1L, which.min)
  list(n_modes = cv$covering, chains = C, threshold = threshold, wad = cv$distance,
       mode = unname(mode),
       basis = if (!is.null(object$chains[[1L]]$W_mean) || !is.null(object$draws))
         "posterior-mean bases" else "last-state bases")
}
#' Summarise a particle fit
#'
#' The weight, objective value, log likelihood (up to a constant) and
#' relative error of each particle, how its solver converged, how different
#' the particles are (the weighted angular distance, [wad()], between every
#' pair, and the Frobenius distances between their bases after matching
#' factors), how many distinct modes they form (the greedy covering number,
#' [covering_number()], at `wad_threshold` degrees), and the top features of each factor in the particles with the largest
#' weights (as in Figure 5 of Masood and Doshi-Velez).
#'
#' @param object A `bnmf_particles` fit.
#' @param n_top Number of top features per factor.
#' @param n_particles Number of particles (by weight) whose top features are
#'   listed.
#' @param wad_threshold The WAD, in degrees, beyond which two particles count
#'   as different modes.
#' @param x A `summary.bnmf_particles` object.
#' @param digits Significant digits to print.
#' @param ... Not used: an argument here is an error.
#' @return A list of class `summary.bnmf_particles`: `particles` (a data
#'   frame), `distance` (the M x M distances between the aligned, simplex
#'   scaled bases, `|W_m - W_n|_F`), `wad` (the M x M weighted angular
#'   distances in degrees), `modes` (the covering number at `wad_threshold`),
#'   `wad_threshold`, `top` (a list with one character matrix
#'   per listed particle, `n_top` x rank), `stein`, `ess` (the effective
#'   number of particles, `1 / sum(w^2)`).
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:100, ], rank = 3, method = "particles", particles = 6)
#' s <- summary(fit, n_top = 5)
#' s
#' s$top[[1]]
#' @export
summary.bnmf_particles <- function(object, n_top = 10, n_particles = 3, wad_threshold = 10,
                                   ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  wad_threshold <- check_number(wad_threshold, "wad_threshold", 0)
  n_top <- min(check_count(n_top, "n_top", min = 1), object$dims[1L])
  n_particles <- check_count(n_particles, "n_particles", min = 1)
  w <- object$weights
  X <- object$X
  ssx <- silf_data(X)$sumsq
  tab <- data.frame(
    particle = seq_along(w), weight = unname(w), objective = object$objective,
    loglik = object$loglik,
    rel_error = if (ssx > 0) sqrt(object$candidates$objective / ssx) else NA_real_,
    iterations = object$candidates$iterations,
    converged = object$candidates$converged
  )
  if (object$likelihood$objective != "frobenius") {
    tab$rel_error <- vapply(object$particles, function(p) {
      if (ssx > 0) sqrt(sum_squares(na_to_zero(X - p$W %*% p$H)) / ssx) else NA_real_
    }, numeric(1))
  }
  notes <- if (!(ssx > 0)) "rel_error is NA: X is all zero"
  D <- particle_distances(object)
  Dw <- wad(object)
  modes <- covering_number(Dw, epsilon = wad_threshold)$covering
  Dw <- as.matrix(Dw)
  ord <- order(-w)
  show <- ord[seq_len(min(n_particles, length(w)))]
  top <- lapply(show, function(m) top_features(object, m, n_top))
  names(top) <- paste0("particle", show)
  structure(list(particles = tab, distance = D, wad = Dw, modes = modes,
                 wad_threshold = wad_threshold, top = top, stein = object$stein,
                 ess = 1 / sum(w^2), likelihood = object$likelihood, rank = object$rank,
                 notes = notes),
            class = "summary.bnmf_particles")
}

# Distances between the bases of the particles after matching their factors
# to those of the largest-weight particle.
particle_distances <- function(object) {
  A <- vapply(seq_along(object$particles), function(m) {
    as.vector(align_particle(object$particles[[m]], object$alignment[[m]])$W)
  }, numeric(object$dims[1L] * object$rank))
  A <- matrix(A, ncol = length(object$particles))
  A <- A - rowMeans(A)
  G <- crossprod(A)
  d <- diag(G)
  D <- sqrt(pmax(outer(d, d, "+") - 2 * G, 0))
  diag(D) <- 0
  dimnames(D) <- list(names(object$weights), names(object$weights))
  D
}

# Top n features (row names of X, or row numbers) of every factor of
# particle m, factors matched to the largest-weight particle.
top_features <- function(object, m, n) {
  W <- align_particle(object$particles[[m]], object$alignment[[m]])$W
  rn <- rownames(W) %||% as.character(seq_len(nrow(W)))
  out <- apply(W, 2L, function(col) rn[order(-col)[seq_len(n)]])
  matrix(out, n, ncol(W), dimnames = list(seq_len(n), colnames(W)))
}

#' @rdname summary.bnmf_particles
#' @export
print.summary.bnmf_particles <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  tab <- x$particles
  cat(sprintf("Particle fit: Stein discrepancy %s, effective number of particles %.3g\n",
              format(signif(x$stein, digits + 1)), x$ess))
  cat("Particles by weight:\n")
  tab <- tab[order(-tab$weight), , drop = FALSE]
  tab$weight <- signif(tab$weight, digits)
  tab$objective <- signif(tab$objective, digits + 3)
  tab$loglik <- signif(tab$loglik, digits)
  tab$rel_error <- signif(tab$rel_error, digits)
  tab <- finite_table(tab)
  print(utils::head(tab, 10L), row.names = FALSE)
  cat_notes(c(x$notes, attr(tab, "note")))
  if (nrow(tab) > 10L) cat(sprintf("  ... and %d more\n", nrow(tab) - 10L))
  D <- x$distance
  if (nrow(D) > 1L) {
    off <- D[upper.tri(D)]
    cat(sprintf("Distances between aligned bases |W_m - W_n|_F: median %s, range %s to %s\n",
                format(signif(stats::median(off), digits)), format(signif(min(off), digits)),
                format(signif(max(off), digits))))
    off <- x$wad[upper.tri(x$wad)]
    cat(sprintf("Weighted angular distances (WAD, degrees): median %s, range %s to %s; %d distinct mode%s at WAD %s\n",
                format(signif(stats::median(off), digits)), format(signif(min(off), digits)),
                format(signif(max(off), digits)), x$modes, if (x$modes == 1L) "" else "s",
                format(x$wad_threshold)))
  }
  cat("Top features per factor (factors matched to the largest-weight particle):\n")
  for (nm in names(x$top)) {
    cat(sprintf("  %s:\n", nm))
    tp <- x$top[[nm]]
    for (k in seq_len(ncol(tp))) {
      cat(sprintf("    %s: %s\n", colnames(tp)[k], paste(tp[, k], collapse = " ")))
    }
  }
  invisible(x)
}


#' Summarise an HMC fit
#'
#' The sampler's diagnostics per chain (mean acceptance probability after
#' warm-up, adapted step size, divergent transitions), the effective sample
#' size and split R-hat of the log posterior and of the objective over the
#' kept draws, and the fit of the posterior mean of `W %*% H`.
#'
#' @param object A `bnmf_hmc` fit.
#' @param x A `summary.bnmf_hmc` object.
#' @param digits Significant digits to print.
#' @param ... Not used: an argument here is an error.
#' @return A list of class `summary.bnmf_hmc`: `chains` (a data frame),
#'   `diagnostics` (mean, ESS and R-hat, and a `note` saying why a value is
#'   NA), `rmse`, `r_squared`, `notes` (why a number is NA or odd),
#'   `n_draws`.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:40, 1:15], rank = 2, method = "hmc", iter = 200, chains = 2)
#' summary(fit)
#' @export
summary.bnmf_hmc <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  kt <- kept_trace(object)
  q <- fit_stats(object)
  diag <- trace_diagnostics(list(logpost = kt$logpost, objective = kt$objective), kt$chain)
  diag$mean <- c(mean(kt$logpost), mean(kt$objective))
  diag$mean[!is.finite(diag$mean)] <- NA
  diag <- diag[c("quantity", "mean", "ess", "rhat", "note")]
  structure(list(
    dims = object$dims, rank = object$rank, likelihood = object$likelihood,
    chains = data.frame(chain = seq_along(object$step_size), acceptance = unname(object$acceptance),
                        step_size = object$step_size, divergences = unname(object$divergences)),
    diagnostics = diag,
    rmse = q$rmse,
    r_squared = q$r_squared,
    notes = q$notes,
    n_draws = object$n_draws, leapfrog = object$control$leapfrog,
    target = object$control$target
  ), class = "summary.bnmf_hmc")
}

#' @rdname summary.bnmf_hmc
#' @export
print.summary.bnmf_hmc <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  digits <- check_count(digits, "digits", min = 1)
  cat(sprintf("Bayesian NMF by HMC, rank %d, X %d x %d, %d draws (%d leapfrog steps per draw)\n",
              x$rank, x$dims[1L], x$dims[2L], x$n_draws, x$leapfrog))
  cat(sprintf("Posterior mean of W H: RMSE %s, R^2 %s\n", format(signif(x$rmse, digits)),
              format_r_squared(x$r_squared, digits)))
  cat(sprintf("\nSampler (target acceptance %s):\n", format(x$target)))
  ch <- x$chains
  ch$acceptance <- signif(ch$acceptance, digits)
  ch$step_size <- signif(ch$step_size, digits)
  ch <- finite_table(ch)
  print(ch, row.names = FALSE)
  cat("\n")
  d <- x$diagnostics
  d$mean <- signif(d$mean, digits + 3)
  print_diagnostics(d)
  cat_notes(c(x$notes, attr(ch, "note")))
  invisible(x)
}


# ---- the tri-factorisation (bnmf_nmtf) ----

#' @rdname summary.bnmf
#' @export
summary.bnmf_nmtf <- function(object, ...) {
  check_dots_empty(list(...), "object", "summary")
  K <- object$rank[[1L]]; L <- object$rank[[2L]]
  n <- object$n_obs
  q <- fit_stats(object)
  out <- list(
    method = object$method, dims = object$dims, rank = object$rank,
    n_obs = n, n_missing = object$n_missing,
    row_clusters = cluster_table(object$F, object$row_prob, object$dimnames[[1L]]),
    col_clusters = cluster_table(object$G, object$col_prob, object$dimnames[[2L]]),
    # posterior cluster probabilities come from a Gibbs fit's sweeps only;
    # elsewhere the clusters are those of one estimate (probability 1)
    posterior_prob = !is.null(object$row_prob),
    S = object$S,
    rmse = q$rmse, r_squared = q$r_squared,
    sigma = if (object$method == "np") NA_real_ else sigma(object),
    lambda = object$lambda,
    notes = q$notes
  )
  if (object$method != "gibbs") {
    out$converged <- object$converged[object$best]
    out$iterations <- object$iterations[object$best]
  }
  structure(out, class = "summary.bnmf_nmtf")
}

#' @rdname summary.bnmf
#' @export
print.summary.bnmf_nmtf <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  digits <- check_count(digits, "digits", min = 1)
  cat(sprintf("%s (%s), K = %d, L = %d, X %d x %d, %s observed entries (%d missing)\n\n",
              if (identical(x$method, "np")) "NMTF by multiplicative updates" else "Bayesian NMTF",
              x$method, x$rank[[1L]], x$rank[[2L]], x$dims[1L], x$dims[2L],
              format(x$n_obs, big.mark = ",", scientific = FALSE), x$n_missing))
  for (side in c("row", "col")) {
    tab <- x[[paste0(side, "_clusters")]]
    # K row clusters (the columns of F, the rows of S), L column clusters
    R <- if (side == "row") nrow(x$S) else ncol(x$S)
    size <- tabulate(tab$cluster, R)
    pm <- vapply(seq_len(R), function(r) if (size[r]) mean(tab$prob[tab$cluster == r]) else NA_real_,
                 numeric(1))
    cat(sprintf("%s clusters (argmax of each row of %s): sizes %s; %s\n",
                if (side == "row") "Row" else "Column", if (side == "row") "F" else "G",
                paste(size, collapse = ", "),
                if (isFALSE(x$posterior_prob)) "one estimate (for posterior cluster probabilities fit method \"gibbs\")"
                else paste("mean probability", paste(format(signif(pm, digits)), collapse = ", "))))
  }
  cat("\nS (block strengths):\n")
  print(signif(x$S, digits))
  if (!is.null(x$lambda)) {
    cat("\nARD rates: lambda_F", format(signif(x$lambda$F, digits)), "\n")
    cat("           lambda_G", format(signif(x$lambda$G, digits)), "\n")
  }
  cat(sprintf("\nFit: RMSE %s, R^2 %s%s\n", format(signif(x$rmse, digits)),
              format_r_squared(x$r_squared, digits),
              if (is.na(x$sigma)) "" else paste0(", sigma ", format(signif(x$sigma, digits)))))
  cat_notes(x$notes)
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

# Per factor: its share of the fitted counts, the posterior means of its
# mask probabilities (NA without that mask) and whether it is switched off
# (SSVI: a mean mask probability below ssvi_control()$cutoff).
#' @export
summary.bnmf_poisson <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  W <- object$W
  H <- object$H
  mass <- colSums(W) * rowSums(H)
  K <- object$rank
  piW <- object$pi$W %||% rep(NA_real_, K)
  piH <- object$pi$H %||% rep(NA_real_, K)
  cutoff <- if (object$method == "ssvi") object$control$cutoff else NA_real_
  off <- if (object$method == "ssvi") {
    pmin(piW, piH, na.rm = TRUE) < cutoff & (!is.na(piW) | !is.na(piH))
  } else rep(FALSE, K)
  fac <- data.frame(factor = factor_names(K),
                    share = if (sum(mass) > 0) mass / sum(mass) else NA_real_,
                    W_sum = colSums(W), H_mean = rowMeans(H), pi_W = piW, pi_H = piH,
                    off = off)
  ard <- identical(object$prior$type, "ard")
  if (ard) {
    rel <- pois_ard_relevance(object)
    fac$pi_W <- fac$pi_H <- fac$off <- NULL
    fac$lambda <- rel$lambda
    fac$signal <- rel$signal
    fac$active <- rel$active
  }
  last <- object$trace[object$trace$chain == (object$best %||% 1L), , drop = FALSE]
  # Gibbs: bulk ESS and R-hat of the kept sweeps' log likelihood and log
  # posterior, as for the Gaussian model
  diagnostics <- if (object$method == "gibbs") {
    kt <- kept_trace(object)
    trace_diagnostics(list(loglik = kt$loglik, logpost = kt$logpost), kt$chain)
  }
  structure(list(method = object$method, sparsity = object$sparsity, rank = K,
                 dims = object$dims, n_obs = object$n_obs, n_missing = object$n_missing,
                 factors = fac, cutoff = cutoff, ard = ard, loglik = as.numeric(logLik(object)),
                 elbo = if (object$method == "vb") last$logpost[nrow(last)],
                 chains = object$settings$chains, n_draws = object$n_draws,
                 diagnostics = diagnostics),
            class = "summary.bnmf_poisson")
}

#' @export
print.summary.bnmf_poisson <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("Poisson NMF (%s, sparsity \"%s\"), rank %d, X %d x %d, %s observed entries (%d missing)\n\n",
              x$method, x$sparsity, x$rank, x$dims[1L], x$dims[2L],
              format(x$n_obs, big.mark = ",", scientific = FALSE), x$n_missing))
  f <- x$factors
  num <- vapply(f, is.numeric, logical(1))
  f[num] <- lapply(f[num], signif, digits = digits)
  print(f, row.names = FALSE)
  if (!is.na(x$cutoff)) {
    cat(sprintf("%d of %d factors switched off (posterior mean of a mask probability below %g)\n",
                sum(x$factors$off), x$rank, x$cutoff))
  }
  if (isTRUE(x$ard)) {
    cat(sprintf("ARD: %d of %d factors active (Poisson signal > I + J - 1 = %d)\n",
                sum(x$factors$active, na.rm = TRUE), x$rank, as.integer(sum(x$dims) - 1)))
  }
  cat(sprintf("log-likelihood at the fitted means: %s\n", format(signif(x$loglik, 8))))
  if (!is.null(x$elbo)) cat(sprintf("ELBO: %s\n", format(signif(x$elbo, 8))))
  if (!is.null(x$diagnostics)) {
    cat(sprintf("\nSampling: %d chain%s, %d draws (bulk ESS and R-hat from %s)\n", x$chains,
                if (x$chains > 1) "s" else "", as.integer(x$n_draws),
                attr(x$diagnostics, "engine") %||% "bnmf"))
    print_diagnostics(x$diagnostics)
  }
  invisible(x)
}

# ---- RRT + online NVI fits (method "rrt") ----------------------------------

#' @rdname rrt_fit
#' @export
summary.bnmf_rrt <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  X <- object$X
  comps <- data.frame(
    component = seq_along(object$weights), weight = unname(object$weights),
    variance = object$variances,
    rmse = vapply(object$components, function(f) sqrt(mean((X - f$W %*% f$H)^2)), numeric(1)),
    wad_to_best = vapply(object$components, function(f) {
      wad(object$components[[object$best]], f)
    }, numeric(1)))
  structure(list(search = object$search, likelihood = rrt_likelihood_label(object),
                 dims = object$dims, rank = object$rank, elbo = object$elbo,
                 components = comps, stats = object$stats,
                 n_accepted = length(object$accepted)),
            class = "summary.bnmf_rrt")
}

#' @export
print.summary.bnmf_rrt <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("%s, X %d x %d, rank %d\n", rrt_search_label(x$search), x$dims[1L], x$dims[2L],
              x$rank))
  cat(sprintf("Likelihood: %s\n", x$likelihood))
  st <- x$stats
  cat(sprintf("Candidates processed: %d (accepted %d)", st$processed, st$accepted))
  if (!is.null(st$expansions)) {
    cat(sprintf("; RRT expansions: %d, tree restarts %d, stopped by %s", st$expansions,
                st$restarts, st$stop))
  }
  cat(sprintf("; %.3g s\n", st$time))
  cat(sprintf("ELBO: %s\n", format(signif(x$elbo, 8))))
  cat("Components (weight, variance, RMSE of W H, WAD to the highest-weight one in degrees):\n")
  print(format(x$components, digits = digits), row.names = FALSE)
  invisible(x)
}
