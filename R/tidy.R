# tidy(), glance(), augment() and as.data.frame(): a fit (and a rank
# selection) as data frames in the shape of the broom packages: the factor
# matrices one row per entry with their uncertainty and posterior
# probabilities, the fit as one row, and the data one row per entry with the
# fitted values. The generics come from the `generics` package and are
# re-exported, so that `library(bnmf); tidy(fit)` works.

#' @importFrom generics tidy
#' @export
generics::tidy

#' @importFrom generics glance
#' @export
generics::glance

#' @importFrom generics augment
#' @export
generics::augment

#' A fit's factors as a data frame
#'
#' `tidy()` turns a factor matrix of a fit into a long data frame with one
#' row per entry, in the shape of tidytext's `tidy()` of a topic model
#' (topic, term, beta): `factor`, `feature` (for `W`) or `sample` (for `H`),
#' and `estimate`, with the entry's uncertainty and, for the samples, the
#' posterior probability of each cluster. `as.data.frame()` binds the rows
#' of `W` and `H` with a column `matrix`.
#'
#' The rows follow the entries of the matrix column by column, so that
#' `estimate` is `as.vector(factors(x)$W)` (features within factors) or
#' `as.vector(factors(x)$H)` (factors within samples).
#'
#' @section Estimates and their uncertainty:
#' `estimate` is the matrix that [factors()] returns: the posterior mean
#' (Gibbs, VB, HMC), the mode (ICM), the point estimate (NP), the particle
#' with the largest weight (particles, SVGD, DSGD; as [basis()] and
#' [coef()]) or the component with the largest weight (RRT).
#'
#' `sd` is the posterior standard deviation and `lower`, `upper` the 95%
#' posterior interval of the entry:
#' * Gibbs: `sd` over the kept sweeps (`fit$W_sd`, `fit$H_sd`); the interval
#'   is the 2.5% and 97.5% quantiles of the kept draws when the fit has them
#'   (`keep = "draws"`), else `estimate +/- 1.96 sd` cut at zero (as
#'   `plot(fit, type = "basis")` and [markers()]).
#' * VB: `sd` of the variational posterior q (`fit$W_sd`, `fit$H_sd`); the
#'   interval `estimate +/- 1.96 sd` cut at zero for the Gaussian models
#'   (q is a truncated normal), and the exact quantiles of q's Gamma
#'   distributions for the Poisson model.
#' * HMC: the sd and quantiles of the kept draws.
#' * Particles (and SVGD, DSGD): the weighted sd of the particles (factors
#'   matched to the largest-weight particle) and their weighted 2.5% and
#'   97.5% quantiles (the inverse of their weighted distribution function).
#' * ICM, NP, RRT, and Poisson SSVI (whose estimate is an average of masked
#'   factors over its final iterations): point estimates, `NA`.
#'
#' For a tri-factorisation (`X ~ nmtf(K, L)`) `matrix` is `"F"` (I x K, the
#' default), `"S"` (K x L) or `"G"` (J x L), with the sds of Gibbs and VB
#' fits (`fit$F_sd`, `fit$S_sd`, `fit$G_sd`); `"W"` is `F` and `"H"` is
#' `S t(G)`, the samples' coefficients on the row clusters' factors (as in
#' [membership()]), whose sd is that of q for VB fits (the factors of q are
#' independent), that of the kept draws of `S t(G)` for Gibbs fits with
#' `keep = "draws"`, and `NA` otherwise.
#'
#' @section Probabilities:
#' For `H`, `probability` is the posterior probability that factor `k` is
#' the dominant factor of the sample (its cluster, see [membership()]): the
#' share of the fit's factorisations (kept draws, particles, draws from the
#' q of a VB fit, chains or restarts) in which it is. It sums to one
#' over the factors of each sample; a fit with one chain or restart and no
#' draws gives 0 or 1. For a VB fit (of any model) the factorisations are
#' 100 draws from its q, so that the probabilities depend on the random
#' number state (`set.seed()` first).
#'
#' For `W`, `prob_top` is the posterior probability that the feature is among
#' the `n_top` largest entries of the factor, over the same factorisations
#' (as `prob_top` of [markers()] with `by = "weight"`).
#'
#' For a tri-factorisation, `F` also has `probability`, the posterior
#' probability that factor `k` is the row cluster of the feature (the
#' largest entry of its row of `F`; Gibbs: the share of the kept sweeps,
#' `fit$row_prob`; otherwise 0 or 1 at the estimate), and `G` the same for
#' the column clusters of the samples (`fit$col_prob`).
#'
#' @param x A `bnmf` fit.
#' @param matrix `"W"` (the basis, features by factors) or `"H"` (the
#'   coefficients, factors by samples); for a tri-factorisation also `"F"`,
#'   `"S"` and `"G"` (see the section on it).
#' @param n_top The number of top features of each factor for `prob_top`
#'   (by default 10, or every feature when there are fewer).
#' @param row.names,optional Not used (for [as.data.frame()]'s sake; must be
#'   `NULL` and `FALSE`).
#' @param ... Not used: an argument here is an error.
#' @return `tidy()`: a data frame with columns `factor` (a factor with the
#'   factors' names as levels), `feature` (`W`; the row name of `X`, or its
#'   number) or `sample` (`H`; the column name, or number), `estimate`,
#'   `sd`, `lower`, `upper`, and `prob_top` (`W`) or `probability` (`H`).
#'   `S` of a tri-factorisation has `row_factor` and `col_factor` instead of
#'   `factor`. `as.data.frame()`: the rows of `tidy(x, "W")` and of
#'   `tidy(x, "H")` bound (their probabilities over the same
#'   factorisations), with a first column `matrix` (`"W"` or `"H"`),
#'   `feature` `NA` in the rows of `H` and `sample` `NA` in those of `W`, and
#'   `prob_top` and `probability` `NA` where they do not apply.
#' @seealso [glance.bnmf()], [augment.bnmf()], [factors()], [markers()],
#'   [membership()].
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:40, 1:20], rank = 2, iter = 200, keep = "draws")
#' head(tidy(fit))
#' head(tidy(fit, matrix = "H"))
#' d <- as.data.frame(fit)
#' table(d$matrix)
#' @export
tidy.bnmf <- function(x, matrix = c("W", "H"), n_top = 10, ...) {
  check_dots_empty(list(...), names(formals()), "tidy")
  which <- check_choice(matrix, c("W", "H"), "matrix")
  n_top <- tidy_n_top(x, n_top, missing(n_top))
  tidy_view(x, which, n_top, posterior_factorisations(x))
}

# The rows of tidy() for the W or H of the fit's W H view, over the
# factorisations `pf` (one set for both, so that as.data.frame() takes W and
# H from the same draws).
tidy_view <- function(x, which, n_top, pf) UseMethod("tidy_view")

tidy_view.bnmf <- function(x, which, n_top, pf) {
  tidy_wh(x, which, wh_view(x)[[which]], tidy_spread(x, which, pf), pf, n_top)
}

tidy_view.bnmf_nmtf <- function(x, which, n_top, pf) {
  spread <- if (which == "W") nmtf_spread(x, "F") else nmtf_h_spread(x)
  tidy_wh(x, which, wh_view(x)[[which]], spread, pf, n_top)
}

#' @rdname tidy.bnmf
#' @export
tidy.bnmf_nmtf <- function(x, matrix = c("F", "S", "G", "W", "H"), n_top = 10, ...) {
  check_dots_empty(list(...), names(formals()), "tidy")
  which <- check_choice(matrix, c("F", "S", "G", "W", "H"), "matrix")
  n_top <- tidy_n_top(x, n_top, missing(n_top))
  if (which %in% c("W", "H")) return(tidy_view(x, which, n_top, posterior_factorisations(x)))
  M <- x[[which]]
  spread <- nmtf_spread(x, which)
  out <- tidy_long(M, spread)
  if (which == "S") {
    kn <- rownames(M); ln <- colnames(M)
    return(data.frame(row_factor = factor(kn[row(M)], levels = kn),
                      col_factor = factor(ln[col(M)], levels = ln), out))
  }
  clusters <- function(M, prob) {
    if (!is.null(prob)) return(as.vector(prob))
    P <- matrix(0, nrow(M), ncol(M))
    P[cbind(seq_len(nrow(M)), max.col(M, ties.method = "first"))] <- 1
    as.vector(P)
  }
  side <- if (which == "F") 1L else 2L
  names_of <- x$dimnames[[side]] %||% as.character(seq_len(x$dims[side]))
  lv <- colnames(M)
  what <- data.frame(factor = factor(lv[col(M)], levels = lv),
                     name = names_of[row(M)], stringsAsFactors = FALSE)
  names(what)[2L] <- if (which == "F") "feature" else "sample"
  out <- data.frame(what, out)
  if (which == "F") {
    pf <- posterior_factorisations(x)
    out$prob_top <- as.vector(top_probs(pf, n_top, identity, x$dims[1L], ncol(M)))
    out$probability <- clusters(M, x$row_prob)
  } else {
    out$probability <- clusters(M, x$col_prob)
  }
  out
}

# `n_top` of tidy(): the default 10 clipped to the number of features, a
# given value checked (at most the number of features), as for markers().
tidy_n_top <- function(x, n_top, default) {
  I <- x$dims[1L]
  if (default) return(min(10L, I))
  n_top <- check_count(n_top, "n_top", min = 1)
  if (n_top > I) {
    abort_input(sprintf("`n_top` (%d) must be at most the number of features, %d.", n_top, I))
  }
  n_top
}

# estimate, sd, lower, upper of the entries of M (column by column), from
# `spread` (NULL: NA; else a list sd, lo, hi of matrices, any of them NULL).
tidy_long <- function(M, spread) {
  na <- rep(NA_real_, length(M))
  col_of <- function(v) if (is.null(v)) na else as.vector(v)
  data.frame(estimate = as.vector(M), sd = col_of(spread$sd), lower = col_of(spread$lo),
             upper = col_of(spread$hi))
}

# The rows of tidy() for the W or H of the fit's W H view.
tidy_wh <- function(x, which, M, spread, pf, n_top) {
  K <- if (which == "W") ncol(M) else nrow(M)
  kn <- (if (which == "W") colnames(M) else rownames(M)) %||% factor_names(K)
  I <- x$dims[1L]; J <- x$dims[2L]
  if (which == "W") {
    rn <- x$dimnames[[1L]] %||% as.character(seq_len(I))
    out <- data.frame(factor = factor(kn[col(M)], levels = kn), feature = rn[row(M)],
                      tidy_long(M, spread), stringsAsFactors = FALSE)
    out$prob_top <- as.vector(top_probs(pf, n_top, identity, I, K))
    return(out)
  }
  cn <- x$dimnames[[2L]] %||% as.character(seq_len(J))
  out <- data.frame(factor = factor(kn[row(M)], levels = kn), sample = cn[col(M)],
                    tidy_long(M, spread), stringsAsFactors = FALSE)
  out$probability <- as.vector(cluster_probs(pf, K, J))
  out
}

# The posterior sd and 95% interval (list sd, lo, hi of matrices; NULL for
# point estimates) of the entries of W or H of a fit of the NMF or Poisson
# model. `pf` are its factorisations (posterior_factorisations()).
tidy_spread <- function(x, which, pf) UseMethod("tidy_spread")

# Gaussian NMF Gibbs and VB: the stored sds and factor_band(); ICM, NP, RRT:
# none.
tidy_spread.bnmf <- function(x, which, pf) {
  sd <- x[[paste0(which, "_sd")]]
  if (is.null(sd)) return(NULL)
  b <- factor_band(x, which)
  list(sd = sd, lo = b$lo, hi = b$hi)
}

# HMC and particles: the (weighted) factorisations.
tidy_spread.bnmf_hmc <- function(x, which, pf) parts_spread(pf, which)

tidy_spread.bnmf_particles <- function(x, which, pf) parts_spread(pf, which)

# Poisson: VB the Gamma q; Gibbs the sds over the kept sweeps with the
# quantiles of the kept draws (keep = "draws") or mean +/- 1.96 sd; SSVI
# none.
tidy_spread.bnmf_poisson <- function(x, which, pf) {
  sd <- x[[paste0(which, "_sd")]]
  if (is.null(sd)) return(NULL)
  if (x$method == "vb" && !is.null(x$q)) {
    sh <- x$q[[paste0("shape_", which)]]
    rt <- x$q[[paste0("rate_", which)]]
    dims <- dim(x[[which]])
    lo <- matrix(stats::qgamma(0.025, sh, rt), dims[1L], dims[2L])
    hi <- matrix(stats::qgamma(0.975, sh, rt), dims[1L], dims[2L])
    return(list(sd = sd, lo = lo, hi = hi))
  }
  if (identical(pf$source, "draws")) {
    b <- parts_spread(pf, which)
    return(list(sd = sd, lo = b$lo, hi = b$hi))
  }
  c(list(sd = sd), sd_band(x[[which]], sd))
}

# The weighted sd and 95% interval of every entry of W or H over the
# factorisations `pf`: the quantiles of stats::quantile() when the weights
# are equal (kept draws), else weighted quantiles.
parts_spread <- function(pf, which) {
  dims <- dim(pf$fs[[1L]][[which]])
  A <- matrix(vapply(pf$fs, function(f) as.vector(f[[which]]), numeric(prod(dims))),
              ncol = length(pf$fs))
  w <- pf$weights / sum(pf$weights)
  m <- drop(A %*% w)
  sd <- sqrt(pmax(drop((A * A) %*% w) - m * m, 0))
  band <- if (length(unique(w)) == 1L) draws_band(A, dims) else {
    q <- apply(A, 1L, weighted_quantile, w = w, probs = c(0.025, 0.975))
    list(lo = matrix(q[1L, ], dims[1L], dims[2L]), hi = matrix(q[2L, ], dims[1L], dims[2L]))
  }
  list(sd = matrix(sd, dims[1L], dims[2L]), lo = band$lo, hi = band$hi)
}

# Quantiles of the values v with weights w (summing to one): the smallest
# value whose cumulative weight reaches p.
weighted_quantile <- function(v, w, probs) {
  o <- order(v)
  cw <- cumsum(w[o])
  vapply(probs, function(p) v[o][min(which(cw >= p - 1e-12), length(v))], numeric(1))
}

# NMTF: the sd and band of F, S or G (Gibbs: quantiles of the kept draws,
# else +/- 1.96 sd; VB: +/- 1.96 sd); NULL for the point estimates.
nmtf_spread <- function(x, which) {
  sd <- x[[paste0(which, "_sd")]]
  if (is.null(sd)) return(NULL)
  b <- factor_band(x, which)
  list(sd = sd, lo = b$lo, hi = b$hi)
}

# NMTF: the sd and band of H = S t(G): VB through the independent factors
# of q (q_wh_sd()); Gibbs from the kept draws of S t(G); otherwise NULL.
nmtf_h_spread <- function(x) {
  if (x$method == "vb") {
    sd <- q_wh_sd(unname(x$S), unname(x$S_sd)^2, t(unname(x$G)), t(unname(x$G_sd)^2), NULL)
    H <- unname(x$S %*% t(x$G))
    return(c(list(sd = sd), sd_band(H, sd)))
  }
  if (x$method == "gibbs" && !is.null(x$draws)) {
    S <- gibbs_draws_of(x, "S")
    G <- gibbs_draws_of(x, "G")
    K <- nrow(x$S); L <- ncol(x$S); J <- nrow(x$G)
    fs <- lapply(seq_len(ncol(S)), function(t) {
      list(H = matrix(S[, t], K, L) %*% t(matrix(G[, t], J, L)))
    })
    return(parts_spread(list(fs = fs, weights = rep(1, length(fs))), "H"))
  }
  NULL
}

#' @rdname tidy.bnmf
#' @export
as.data.frame.bnmf <- function(x, row.names = NULL, optional = FALSE, ...) {
  check_dots_empty(list(...), names(formals()), "as.data.frame")
  if (!is.null(row.names) || !isFALSE(optional)) {
    abort_input("`row.names` and `optional` are not used by `as.data.frame()` of a fit: leave them NULL and FALSE.")
  }
  pf <- posterior_factorisations(x)
  n_top <- min(10L, x$dims[1L])
  W <- tidy_view(x, "W", n_top, pf)
  H <- tidy_view(x, "H", n_top, pf)
  W$sample <- NA_character_
  W$probability <- NA_real_
  H$feature <- NA_character_
  H$prob_top <- NA_real_
  cols <- c("factor", "feature", "sample", "estimate", "sd", "lower", "upper", "prob_top",
            "probability")
  out <- rbind(W[cols], H[cols])
  data.frame(matrix = rep(c("W", "H"), c(nrow(W), nrow(H))), out, stringsAsFactors = FALSE)
}

#' A fit in one row
#'
#' `glance()` summarises a fit in a data frame of one row, in the shape of
#' the broom packages, so that the rows of several fits (ranks, methods,
#' models) bind into a table.
#'
#' A number a fit does not have is `NA`: the log-likelihood of methods
#' without one (NP, particles, HMC: [logLik()] refuses them as
#' unsupported), the noise level of the Poisson model, NP and particle fits,
#' the ELBO of fits that are not variational.
#'
#' @param x A `bnmf` fit.
#' @param ... Not used: an argument here is an error.
#' @return A data frame of one row: `method`, `model` (`"nmf"`, `"nmtf"` or
#'   `"poisson"`), `rank` (the number of factors; for a tri-factorisation K,
#'   the row clusters) and `rank_L` (the column clusters of a
#'   tri-factorisation, `NA` for the other models), `n_features`,
#'   `n_samples`, `n_obs` and `n_missing` (observed and missing entries of
#'   `X`), `logLik`, `AIC` and `BIC` (of [logLik.bnmf()]), `sigma` ([sigma()],
#'   the noise sd), `rmse` and `r_squared` (over the observed entries, as in
#'   [summary.bnmf()]), `elbo` (the final ELBO of a VB fit, or of the
#'   variational mixture of an RRT fit), `iterations` (the sweeps of the kept
#'   restart of an optimiser; the iterations of each chain of a sampler;
#'   the iterations setting of particle and RRT searches), `chains` (chains
#'   or restarts) and `draws` (the kept draws of Gibbs and HMC fits, `NA`
#'   otherwise).
#' @seealso [tidy.bnmf()], [augment.bnmf()], [summary.bnmf()].
#' @examples
#' set.seed(1)
#' X <- leukemia[1:40, 1:20]
#' fits <- list(bnmf(X, rank = 2, method = "vb"), bnmf(X, rank = 3, method = "vb"))
#' do.call(rbind, lapply(fits, glance))
#' @export
glance.bnmf <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "glance")
  q <- fit_stats(x)
  nmtf <- inherits(x, "bnmf_nmtf")
  data.frame(
    method = x$method, model = x$model,
    rank = as.integer(x$rank[[1L]]),
    rank_L = if (nmtf) as.integer(x$rank[[2L]]) else NA_integer_,
    n_features = as.integer(x$dims[1L]), n_samples = as.integer(x$dims[2L]),
    n_obs = as.numeric(x$n_obs), n_missing = as.numeric(x$n_missing),
    logLik = unsupported_na(logLik(x)),
    AIC = unsupported_na(stats::AIC(x)),
    BIC = unsupported_na(stats::BIC(x)),
    sigma = unsupported_na(sigma(x)),
    rmse = q$rmse, r_squared = q$r_squared,
    elbo = glance_elbo(x),
    iterations = glance_iterations(x),
    chains = as.integer(x$settings$chains %||% 1L),
    draws = as.numeric(x$n_draws %||% NA_real_),
    stringsAsFactors = FALSE)
}

# The value of `expr`, or NA where the fit refuses it as unsupported (a
# number it does not have by its mathematics); other errors propagate.
unsupported_na <- function(expr) {
  tryCatch(as.numeric(expr), bnmf_error_unsupported = function(e) NA_real_)
}

glance_elbo <- function(x) {
  if (inherits(x, "bnmf_vb")) return(as.numeric(utils::tail(elbo(x), 1L)))
  if (inherits(x, "bnmf_rrt")) return(as.numeric(x$elbo))
  NA_real_
}

# Optimisers: the sweeps of the kept restart (from the trace where the fit
# does not record them); samplers and searches: the setting `iter`.
glance_iterations <- function(x) {
  if (!is.null(x$iterations)) return(as.numeric(x$iterations[[x$best %||% 1L]]))
  if (x$method %in% c("vb", "ssvi") && !is.null(x$trace$chain)) {
    return(as.numeric(sum(x$trace$chain == (x$best %||% 1L))))
  }
  as.numeric(x$settings$iter %||% NA_real_)
}

#' The data with the fitted values, entry by entry
#'
#' `augment()` gives one row per entry of the data `X` of a fit (features
#' within samples, the order of `as.vector(X)`): `feature`, `sample`,
#' `value` (the entry of `X`, `NA` where it is missing), `.fitted` (the
#' fitted value, [fitted()]: the posterior mean of `W %*% H`, or its point
#' estimate), `.resid` (`value - .fitted`) and, for fits with a posterior sd
#' of the fitted values (`predict(se.fit = TRUE)`: Gaussian NMF by Gibbs or
#' VB, particles, HMC, Poisson by VB or Gibbs), `.se.fit`. For a sparse `X`
#' the unstored entries are zeros, and their fitted values those of
#' [predict()]; a Gibbs fit of a sparse `X` has `.se.fit` on the stored
#' entries only (`NA` elsewhere).
#'
#' The table has I x J rows: above `getOption("bnmf.max_dense")` entries (5e7
#' by default) it is refused with an error of class `bnmf_error_dense`; ask
#' [predict()] or [residuals()] for the entries you need (`i`, `j`) instead.
#'
#' @param x A `bnmf` fit.
#' @param data `NULL` (the data of the fit), or a matrix of the same
#'   dimensions (and names, where both have them) whose entries give `value`
#'   and the residuals: for example the complete data of which the fit saw a
#'   part.
#' @param ... Not used: an argument here is an error.
#' @return A data frame with I x J rows and columns `feature`, `sample`,
#'   `value`, `.fitted`, `.resid` and, where the fit has it, `.se.fit`.
#' @seealso [tidy.bnmf()], [glance.bnmf()], [predict.bnmf()].
#' @examples
#' X <- leukemia[1:30, 1:10]
#' X[2, 3] <- NA
#' fit <- bnmf(X, rank = 2, method = "vb")
#' a <- augment(fit)
#' head(a)
#' a[a$feature == rownames(X)[2] & a$sample == colnames(X)[3], ]
#' @export
augment.bnmf <- function(x, data = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "augment")
  I <- x$dims[1L]; J <- x$dims[2L]
  n <- as.double(I) * J
  if (n > max_dense()) {
    abort_dense(sprintf(paste(
      "`augment()` of a %d x %d X would have %s rows, above the limit",
      "getOption(\"bnmf.max_dense\") = %s values. Ask for the entries you need:",
      "`predict(fit, i = , j = )` or `residuals(fit, i = , j = )`; or raise the limit with",
      "`options(bnmf.max_dense = )`."),
      I, J, format(n, big.mark = ",", scientific = FALSE),
      format(max_dense(), big.mark = ",", scientific = FALSE)))
  }
  value <- augment_data(x, data)
  m <- augment_fitted(x)
  rn <- x$dimnames[[1L]] %||% as.character(seq_len(I))
  cn <- x$dimnames[[2L]] %||% as.character(seq_len(J))
  out <- data.frame(feature = rep(rn, J), sample = rep(cn, each = I),
                    value = as.vector(value), .fitted = as.vector(m),
                    .resid = as.vector(value - m), stringsAsFactors = FALSE)
  se <- augment_se(x)
  if (!is.null(se)) out$.se.fit <- as.vector(se)
  out
}

# The data of augment(): the fit's X, or `data` of its dimensions, dense.
augment_data <- function(x, data) {
  if (is.null(data)) return(as.matrix(x$X))
  d <- if (inherits(data, "Matrix")) as.matrix(data) else data
  if (is.data.frame(d)) d <- as.matrix(d)
  if (!is.matrix(d) || !is.numeric(d) || !identical(as.integer(dim(d)), as.integer(x$dims))) {
    abort_input(sprintf("`data` must be NULL or a numeric matrix of the fit's dimensions, %d x %d.",
                        x$dims[1L], x$dims[2L]))
  }
  for (s in 1:2) {
    a <- dimnames(d)[[s]]; b <- x$dimnames[[s]]
    if (!is.null(a) && !is.null(b) && !identical(a, b)) {
      abort_input(sprintf("`data`: its %s names differ from those of the fit's data.",
                          c("row", "column")[s]))
    }
  }
  d
}

# fitted() on every entry: dense X its fitted(); sparse X predict() (every
# entry), with the stored entries those of fitted().
augment_fitted <- function(x) {
  if (!x$sparse) return(as.matrix(fitted(x)))
  m <- as.matrix(predict(x))
  f <- fitted(x)
  m[cbind(f@i + 1L, stored_cols(f))] <- f@x
  m
}

# The posterior sd of the fitted values on every entry, or NULL where the
# fit has none.
augment_se <- function(x) {
  if (inherits(x, "bnmf_poisson") && is.null(x$W_sd)) return(NULL)
  if (inherits(x, "bnmf_gibbs") && inherits(x, "bnmf_nmf") && x$sparse) {
    X <- x$X
    i <- X@i + 1L
    j <- stored_cols(X)
    out <- matrix(NA_real_, x$dims[1L], x$dims[2L])
    out[cbind(i, j)] <- wh_sd_at(x, i, j)
    return(out)
  }
  tryCatch(predict(x, se.fit = TRUE)$se.fit, bnmf_error_unsupported = function(e) NULL)
}

#' Rank selections as data frames
#'
#' `tidy()` of a rank selection ([select_rank()]) is its table of the
#' criterion by rank (as printed: for `"chib"` with `min_ess`), with a
#' column `chosen` marking the chosen rank (for `"ard"`, the table of the
#' factors of the ARD fit, whose column `active` counts toward the chosen
#' rank). `glance()` is one row: the criterion, the method, the chosen rank,
#' the criterion's value there and the ranks compared.
#'
#' @param x A `bnmf_rank` object made by [select_rank()].
#' @param ... Not used: an argument here is an error.
#' @return `tidy()`: a data frame, one row per rank (or (K, L) pair, columns
#'   `K` and `L`; ARD: per factor). `glance()`: a data frame of one row:
#'   `criterion`, `method`, `likelihood`, `rank` (the chosen rank; K for
#'   (K, L) pairs) and `rank_L` (L, or `NA`), `value` (the criterion at the
#'   chosen rank: the log marginal likelihood for `"chib"` and Gibbs
#'   `"evidence"`, the ELBO for VB `"evidence"`, the BIC for `"bic"`, the
#'   mean held-out error for `"cv"`, `NA` for `"ard"`), `n_ranks`, `rank_min`
#'   and `rank_max` (the range of the ranks compared, of K for pairs),
#'   `rank_L_min` and `rank_L_max` (of L, or `NA`), `n_features`, `n_samples`
#'   and `elapsed` (seconds).
#' @seealso [select_rank()], [best()].
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(120), 40, 3) %*% matrix(rexp(45), 3, 15) +
#'   matrix(rnorm(600, sd = 0.3), 40, 15)
#' sel <- suppressWarnings(select_rank(X, ranks = 1:4, criterion = "bic"))
#' tidy(sel)
#' glance(sel)
#' @export
tidy.bnmf_rank <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "tidy")
  tab <- rank_table(x)
  attr(tab, "note") <- NULL
  if (x$criterion != "ard") tab$chosen <- rank_chosen_rows(x, tab)
  rownames(tab) <- NULL
  tab
}

# The rows of a rank table at the chosen rank (or (K, L) pair).
rank_chosen_rows <- function(x, tab) {
  if (!is.null(tab$K) && !is.null(tab$L)) {
    return(tab$K == x$best[[1L]] & tab$L == x$best[[2L]])
  }
  tab$rank == x$best[[1L]]
}

#' @rdname tidy.bnmf_rank
#' @export
glance.bnmf_rank <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "glance")
  pairs <- is.matrix(x$ranks)
  tab <- x$table
  value <- NA_real_
  if (x$criterion != "ard") {
    y <- switch(x$criterion, chib = tab$logml, bic = tab$bic,
                evidence = tab$elbo %||% tab$logml,
                cv = tab$mse %||% tab$deviance)
    hit <- rank_chosen_rows(x, tab)
    if (!is.null(y) && any(hit)) value <- as.numeric(y[which(hit)[1L]])
  }
  K <- if (pairs) x$ranks[, 1L] else x$ranks
  L <- if (pairs) x$ranks[, 2L]
  data.frame(criterion = x$criterion, method = x$method,
             likelihood = x$likelihood %||% "gaussian",
             rank = as.integer(x$best[[1L]]),
             rank_L = if (pairs) as.integer(x$best[[2L]]) else NA_integer_,
             value = value,
             n_ranks = if (pairs) nrow(x$ranks) else length(x$ranks),
             rank_min = as.integer(min(K)), rank_max = as.integer(max(K)),
             rank_L_min = if (pairs) as.integer(min(L)) else NA_integer_,
             rank_L_max = if (pairs) as.integer(max(L)) else NA_integer_,
             n_features = as.integer(x$dims[1L]), n_samples = as.integer(x$dims[2L]),
             elapsed = as.numeric(x$elapsed %||% NA_real_),
             stringsAsFactors = FALSE)
}
