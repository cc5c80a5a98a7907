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
  # Fits with a posterior (Gibbs, VB) have posterior sds of W.
  if (!is.null(object$W_sd)) {
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
    sigma = NA_real_
  )
  structure(out, class = "summary.bnmf")
}

#' @export
summary.bnmf_gibbs <- function(object, wad_threshold = 10, ...) {
  out <- NextMethod()
  wad_threshold <- check_number(wad_threshold, "wad_threshold", 0)
  kt <- kept_trace(object)
  q <- stats::quantile(kt$tau, c(0.025, 0.975), names = FALSE)
  out <- summary_parts(out, object, sigma = sigma(object),
                       tau = c(mean = object$tau, sd = object$tau_sd, lower = q[1L], upper = q[2L]))
  out$diagnostics <- data.frame(
    quantity = c("loglik", "tau"),
    ess = c(ess_chains(kt$loglik, kt$chain), ess_chains(kt$tau, kt$chain)),
    rhat = c(split_rhat(kt$loglik, kt$chain), split_rhat(kt$tau, kt$chain))
  )
  out$n_draws <- object$n_draws
  out$chains <- object$settings$chains
  out$factor_diagnostics <- factor_draw_diagnostics(object)
  out$modes <- chain_modes(object, wad_threshold)
  out
}

#' @export
summary.bnmf_vb <- function(object, ...) {
  a <- object$q_tau[["shape"]]
  b <- object$q_tau[["rate"]]
  q <- stats::qgamma(c(0.025, 0.975), a, b)
  optimiser_summary(NextMethod(), object, sigma = sigma(object),
                    tau = c(mean = object$tau, sd = object$tau_sd, lower = q[1L], upper = q[2L]),
                    elbo = object$elbo)
}

#' @export
summary.bnmf_icm <- function(object, ...) {
  optimiser_summary(NextMethod(), object, sigma = sigma(object), tau = c(mode = object$tau),
                    logpost = object$logpost)
}

#' @export
summary.bnmf_np <- function(object, ...) {
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
  invisible(x)
}

#' @export
print.summary.bnmf_gibbs <- function(x, digits = 3, ...) {
  NextMethod()
  cat_tau_interval(x, "", digits)
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
  invisible(x)
}

#' @export
print.summary.bnmf_vb <- function(x, digits = 3, ...) {
  NextMethod()
  cat_tau_interval(x, "q(tau) ", digits)
  cat_converged(x, sprintf("ELBO %s", format(signif(x$elbo, 8))))
  invisible(x)
}

#' @export
print.summary.bnmf_icm <- function(x, digits = 3, ...) {
  NextMethod()
  cat(sprintf("tau (mode): %s\n", format(signif(x$tau[["mode"]], digits))))
  cat_converged(x, sprintf("log posterior %s", format(signif(x$logpost, 8))))
  invisible(x)
}

#' @export
print.summary.bnmf_np <- function(x, digits = 3, ...) {
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

# Effective sample size of one chain: Geyer's initial positive sequence
# estimator of the integrated autocorrelation time.
ess_one <- function(x) {
  n <- length(x)
  if (n >= 4L && !is.finite(stats::var(x))) x <- x / max(abs(x)) # e.g. tau near 1e200
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
#' @param ... Not used.
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
  wad_threshold <- check_number(wad_threshold, "wad_threshold", 0)
  n_top <- min(check_count(n_top, "n_top", min = 1), object$dims[1L])
  n_particles <- check_count(n_particles, "n_particles", min = 1)
  w <- object$weights
  X <- object$X
  tab <- data.frame(
    particle = seq_along(w), weight = unname(w), objective = object$objective,
    loglik = object$loglik,
    rel_error = sqrt(object$candidates$objective / sum_squares(X)),
    iterations = object$candidates$iterations,
    converged = object$candidates$converged
  )
  if (object$likelihood$objective != "frobenius") {
    tab$rel_error <- vapply(object$particles, function(p) {
      sqrt(sum_squares(X - p$W %*% p$H) / sum_squares(X))
    }, numeric(1))
  }
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
                 ess = 1 / sum(w^2), likelihood = object$likelihood, rank = object$rank),
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
  tab <- x$particles
  cat(sprintf("Particle fit: Stein discrepancy %s, effective number of particles %.3g\n",
              format(signif(x$stein, digits + 1)), x$ess))
  cat("Particles by weight:\n")
  tab <- tab[order(-tab$weight), , drop = FALSE]
  tab$weight <- signif(tab$weight, digits)
  tab$objective <- signif(tab$objective, digits + 3)
  tab$loglik <- signif(tab$loglik, digits)
  tab$rel_error <- signif(tab$rel_error, digits)
  print(utils::head(tab, 10L), row.names = FALSE)
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
#' @param ... Not used.
#' @return A list of class `summary.bnmf_hmc`: `chains` (a data frame),
#'   `diagnostics` (ESS and R-hat), `rmse`, `r_squared`, `n_draws`.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:40, 1:15], rank = 2, method = "hmc", iter = 200, chains = 2)
#' summary(fit)
#' @export
summary.bnmf_hmc <- function(object, ...) {
  kt <- kept_trace(object)
  res <- residuals(object)
  X <- object$X
  structure(list(
    dims = object$dims, rank = object$rank, likelihood = object$likelihood,
    chains = data.frame(chain = seq_along(object$step_size), acceptance = unname(object$acceptance),
                        step_size = object$step_size, divergences = unname(object$divergences)),
    diagnostics = data.frame(
      quantity = c("logpost", "objective"),
      mean = c(mean(kt$logpost), mean(kt$objective)),
      ess = c(ess_chains(kt$logpost, kt$chain), ess_chains(kt$objective, kt$chain)),
      rhat = c(split_rhat(kt$logpost, kt$chain), split_rhat(kt$objective, kt$chain))),
    rmse = sqrt(mean(res^2)),
    r_squared = 1 - sum(res^2) / sum((X - mean(X))^2),
    n_draws = object$n_draws, leapfrog = object$control$leapfrog,
    target = object$control$target
  ), class = "summary.bnmf_hmc")
}

#' @rdname summary.bnmf_hmc
#' @export
print.summary.bnmf_hmc <- function(x, digits = 3, ...) {
  digits <- check_count(digits, "digits", min = 1)
  cat(sprintf("Bayesian NMF by HMC, rank %d, X %d x %d, %d draws (%d leapfrog steps per draw)\n",
              x$rank, x$dims[1L], x$dims[2L], x$n_draws, x$leapfrog))
  cat(sprintf("Posterior mean of W H: RMSE %s, R^2 %s\n", format(signif(x$rmse, digits)),
              format(signif(x$r_squared, digits))))
  cat(sprintf("\nSampler (target acceptance %s):\n", format(x$target)))
  ch <- x$chains
  ch$acceptance <- signif(ch$acceptance, digits)
  ch$step_size <- signif(ch$step_size, digits)
  print(ch, row.names = FALSE)
  cat("\n")
  d <- x$diagnostics
  d$mean <- signif(d$mean, digits + 3)
  d$ess <- round(d$ess)
  d$rhat <- signif(d$rhat, 4)
  print(d, row.names = FALSE)
  invisible(x)
}

