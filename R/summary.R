#' Summarise a fit
#'
#' Per-factor posterior summaries, the noise level, the fit to the observed
#' data, and diagnostics: for Gibbs fits the effective sample size (ESS) and,
#' with several chains, the split R-hat of the log-likelihood and of `tau`;
#' for ICM, VB and NP fits convergence and the log posterior, ELBO or loss.
#'
#' The per-factor table has, for each factor `k`: `share`, its part of the
#' total fitted signal `sum(W[, k]) * sum(H[k, ])) / sum(W %*% H)`;
#' `W_sum` and `H_mean`, the column sum of `W` and the row mean of `H`;
#' `W_zero` and `H_zero`, the fraction of entries that are (numerically) zero
#' at the point estimate; and for Gibbs and VB fits `W_cv`, the average
#' posterior coefficient of variation (sd / mean) of the entries of `W[, k]`.
#'
#' With an [ard()] prior the table also has `lambda`, the posterior mean of
#' the factor's ARD rate; `signal`, the factor's mean contribution to an
#' entry of `W %*% H`, `sum(W[, k]) * sum(H[k, ]) / (I * J)`, in units of the
#' noise standard deviation [sigma()]; and `active`, `signal >= 0.1`. ARD
#' shrinks the factors the data do not support towards zero: their
#' contribution falls far below the noise level (exactly to zero at the ICM
#' mode; to a small multiple of the prior scale under Gibbs and VB), while a
#' supported factor contributes on the order of the signal. See
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
#' chains' posterior means.
#'
#' @param object A `bnmf` fit.
#' @param wad_threshold For Gibbs fits with several chains: the WAD, in
#'   degrees, beyond which two chains count as being in different modes.
#' @param x A `summary.bnmf` object.
#' @param digits Significant digits to print.
#' @param ... Not used.
#' @return An object of class `summary.bnmf`.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:80, ], rank = 3, iter = 400, chains = 2)
#' summary(fit)
#' @export
summary.bnmf <- function(object, wad_threshold = 10, ...) {
  wad_threshold <- check_number(wad_threshold, "wad_threshold", 0)
  W <- object$W
  H <- object$H
  tot <- sum(colSums(W) * rowSums(H))
  eps <- 1e-12 * max(W, H, 1e-300)
  fac <- data.frame(
    factor = factor_names(object$rank),
    share = colSums(W) * rowSums(H) / tot,
    W_sum = colSums(W),
    H_mean = rowMeans(H),
    W_zero = colMeans(W <= eps),
    H_zero = rowMeans(H <= eps)
  )
  if (object$method %in% c("gibbs", "vb")) {
    fac$W_cv <- colMeans(object$W_sd / pmax(W, .Machine$double.xmin))
  }
  if (identical(object$prior$type, "ard")) {
    rel <- ard_relevance(object)
    fac$lambda <- rel$lambda
    fac$signal <- rel$signal
    fac$active <- rel$active
  }
  res <- residuals(object)
  out <- list(
    method = object$method, dims = object$dims, rank = object$rank,
    n_obs = object$n_obs, n_missing = object$n_missing,
    factors = fac,
    rmse = sqrt(mean(res^2, na.rm = TRUE)),
    r_squared = 1 - sum(res^2, na.rm = TRUE) /
      sum((as.matrix(object$X) - mean(as.matrix(object$X), na.rm = TRUE))^2, na.rm = TRUE),
    sigma = if (object$method == "np") NA_real_ else sigma(object)
  )
  if (object$method == "gibbs") {
    kt <- kept_trace(object)
    q <- stats::quantile(kt$tau, c(0.025, 0.975), names = FALSE)
    out$tau <- c(mean = object$tau, sd = object$tau_sd, lower = q[1L], upper = q[2L])
    out$diagnostics <- data.frame(
      quantity = c("loglik", "tau"),
      ess = c(ess_chains(kt$loglik, kt$chain), ess_chains(kt$tau, kt$chain)),
      rhat = c(split_rhat(kt$loglik, kt$chain), split_rhat(kt$tau, kt$chain))
    )
    out$n_draws <- object$n_draws
    out$chains <- object$settings$chains
    out$factor_diagnostics <- factor_draw_diagnostics(object)
    out$modes <- chain_modes(object, wad_threshold)
  } else {
    if (object$method == "vb") {
      a <- object$q_tau[["shape"]]
      b <- object$q_tau[["rate"]]
      q <- stats::qgamma(c(0.025, 0.975), a, b)
      out$tau <- c(mean = object$tau, sd = object$tau_sd, lower = q[1L], upper = q[2L])
      out$elbo <- object$elbo
    } else if (object$method == "icm") {
      out$tau <- c(mode = object$tau)
      out$logpost <- object$logpost
    } else {
      out$loss <- object$loss
      out$loss_name <- object$settings$loss
    }
    out$converged <- object$converged[object$best]
    out$iterations <- object$iterations[object$best]
  }
  structure(out, class = "summary.bnmf")
}

# Relevance of each factor under ARD: its mean contribution to an entry of
# WH in units of the noise sd, and whether that is at least 0.1.
ard_relevance <- function(object) {
  W <- object$W
  H <- object$H
  mass <- colSums(W) * rowSums(H)
  signal <- mass / prod(object$dims) / sigma(object)
  data.frame(factor = factor_names(object$rank), lambda = unname(object$lambda),
             share = mass / sum(mass), signal = signal, active = signal >= 0.1)
}

#' @rdname summary.bnmf
#' @export
print.summary.bnmf <- function(x, digits = 3, ...) {
  digits <- check_count(digits, "digits", min = 1)
  cat(sprintf("Bayesian NMF (%s), rank %d, X %d x %d, %s observed entries (%d missing)\n\n",
              x$method, x$rank, x$dims[1L], x$dims[2L],
              format(x$n_obs, big.mark = ","), x$n_missing))
  cat("Factors:\n")
  f <- x$factors
  num <- vapply(f, is.numeric, logical(1))
  f[num] <- lapply(f[num], signif, digits = digits)
  print(f, row.names = FALSE)
  if (!is.null(x$factors$active)) {
    cat(sprintf("ARD: %d of %d factors active (mean contribution >= 0.1 noise sd)\n",
                sum(x$factors$active), nrow(x$factors)))
  }
  cat(sprintf("\nFit: RMSE %s, R^2 %s%s\n", format(signif(x$rmse, digits)),
              format(signif(x$r_squared, digits)),
              if (is.na(x$sigma)) "" else paste0(", sigma ", format(signif(x$sigma, digits)))))
  if (x$method %in% c("gibbs", "vb")) {
    cat(sprintf("tau: %smean %s, sd %s, 95%% interval [%s, %s]\n",
                if (x$method == "vb") "q(tau) " else "",
                format(signif(x$tau[["mean"]], digits)), format(signif(x$tau[["sd"]], digits)),
                format(signif(x$tau[["lower"]], digits)), format(signif(x$tau[["upper"]], digits))))
  }
  if (x$method == "gibbs") {
    cat(sprintf("\nSampling: %d chain%s, %d draws\n", x$chains,
                if (x$chains > 1) "s" else "", x$n_draws))
    d <- x$diagnostics
    d$ess <- round(d$ess)
    d$rhat <- signif(d$rhat, 4)
    print(d, row.names = FALSE)
    fd <- x$factor_diagnostics
    if (!is.null(fd)) {
      cat(sprintf("Factor-level diagnostics (chains' factors aligned; R-hat and bulk ESS from %s):\n",
                  attr(fd, "engine")))
      fd$ess <- round(fd$ess)
      fd$rhat <- signif(fd$rhat, 4)
      print(fd[c("quantity", "ess", "rhat")], row.names = FALSE)
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
  } else {
    if (x$method == "icm") cat(sprintf("tau (mode): %s\n", format(signif(x$tau[["mode"]], digits))))
    crit <- switch(x$method, icm = sprintf("log posterior %s", format(signif(x$logpost, 8))),
                   vb = sprintf("ELBO %s", format(signif(x$elbo, 8))),
                   np = sprintf("%s loss %s", if (identical(x$loss_name, "kl")) "KL" else "Euclidean",
                                format(signif(x$loss, 8))))
    cat(sprintf("%s %s after %d sweeps; %s\n", toupper(x$method),
                if (x$converged) "converged" else "did not converge", x$iterations, crit))
  }
  invisible(x)
}

# Effective sample size of one chain: Geyer's initial positive sequence
# estimator of the integrated autocorrelation time.
ess_one <- function(x) {
  n <- length(x)
  if (n < 4L || stats::var(x) == 0) return(NA_real_)
  ac <- stats::acf(x, lag.max = n - 1L, plot = FALSE, demean = TRUE)$acf[, 1, 1]
  s <- 0
  for (t in seq(1L, n - 2L, by = 2L)) {
    pair <- ac[t] + ac[t + 1L]
    if (pair <= 0) break
    s <- s + pair
  }
  tau_int <- -1 + 2 * s
  n / max(tau_int, 1 / log10(max(n, 10)))
}

ess_chains <- function(x, chain) sum(vapply(split(x, chain), ess_one, numeric(1)))

# Split R-hat (Gelman et al. 2013): each chain split in halves.
split_rhat <- function(x, chain) {
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
  if (Wv == 0) return(NA_real_)
  sqrt(((n - 1) / n * Wv + B / n) / Wv)
}

# ESS and R-hat of the factor-level quantities of a Gibbs fit that kept its
# draws: per factor the column sum of W and the row sum of H at every draw,
# chains' factors aligned to those of chain 1 (by their posterior-mean
# bases; the fit aligned them already, this makes sure). NULL without draws.
factor_draw_diagnostics <- function(object,
                                    use_posterior = requireNamespace("posterior", quietly = TRUE)) {
  if (is.null(object$draws)) return(NULL)
  I <- object$dims[1L]; J <- object$dims[2L]; K <- object$rank
  C <- length(object$draws)
  n <- min(vapply(object$draws, function(d) ncol(d$W), numeric(1)))
  if (n < 4L) return(NULL)
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
  one <- function(sums, k) {
    m <- vapply(sums, function(s) s[k, ], numeric(n))
    m <- matrix(m, n, C)
    if (use_posterior) {
      suppressMessages(c(ess = posterior::ess_bulk(m), rhat = posterior::rhat(m)))
    } else {
      c(ess = ess_chains(as.vector(m), chain), rhat = split_rhat(as.vector(m), chain))
    }
  }
  kn <- factor_names(K)
  res <- rbind(t(vapply(seq_len(K), function(k) one(wsum, k), numeric(2))),
               t(vapply(seq_len(K), function(k) one(hsum, k), numeric(2))))
  out <- data.frame(quantity = c(sprintf("W_sum[%s]", kn), sprintf("H_sum[%s]", kn)),
                    factor = rep(kn, 2L), ess = res[, "ess"], rhat = res[, "rhat"])
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
