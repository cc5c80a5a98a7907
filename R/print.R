# print() of fits: each class prints its title, print.bnmf() the data, rank,
# prior and noise every Gaussian fit shares, then the class its sampler or
# optimiser run. Particle and HMC fits print their SILF model.

#' @export
print.bnmf <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("  X: %d x %d%s, %s observed (%d missing)\n", x$dims[1L], x$dims[2L],
              if (x$sparse) " (sparse)" else "", format(x$n_obs, big.mark = ",", scientific = FALSE),
              x$n_missing))
  cat(sprintf("  rank: %d\n", x$rank))
  if (identical(x$prior$type, "ard")) {
    act <- ard_relevance(x)
    cat(sprintf("  prior: ARD, W[, k], H[k, ] ~ Exp(lambda_k), lambda_k ~ Gamma(%s, %s)%s\n  ARD: %d of %d factors active\n",
                format(x$prior$ard[1L]), format(signif(x$prior$ard[2L], 4)),
                if (isTRUE(x$prior$beta0_auto)) "  [beta0 auto: alpha0 sqrt(mean(X) / K)]" else "",
                sum(act$active), x$rank))
  } else if (!identical(x$prior$type, "none")) {
    cat(sprintf("  prior: W, H ~ Exp(rate = %s)%s\n", format_rate(x$prior$rate),
                if (isTRUE(x$prior$auto)) "  [auto: sqrt(K / mean(X))]" else ""))
  }
  if (!identical(x$prior$type, "none")) {
    cat(sprintf("  noise: tau ~ Gamma(shape = %s, rate = %s)\n",
                format(x$noise$shape), format(x$noise$rate)))
  }
  invisible(x)
}

#' @export
print.bnmf_gibbs <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  cat("Bayesian NMF by Gibbs sampling\n")
  NextMethod()
  s <- x$settings
  cat(sprintf("  %d chain%s x %d sweeps (burn-in %d, thin %d): %d draws\n",
              s$chains, if (s$chains > 1) "s" else "", s$iter, s$burnin, s$thin,
              x$n_draws))
  cat_tau(x)
  invisible(x)
}

#' @export
print.bnmf_icm <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  cat("Bayesian NMF by iterated conditional modes (posterior mode)\n")
  NextMethod()
  cat_optimiser(x, sprintf("log posterior %s", format(signif(x$logpost, 8))))
  cat(sprintf("  tau: %s; sigma = %s\n", format(signif(x$tau, 4)),
              format(signif(sigma(x), 4))))
  cat_missing(x, "icm_control", "filled with W H of the previous sweep (ECM",
              "left out of every conditional")
  invisible(x)
}

# How the sweeps of an ICM, VB or NP fit treated its missing entries (`maker`:
# the control's maker; `impute`, `mask`: what each setting does).
cat_missing <- function(x, maker, impute, mask) {
  if (x$n_missing > 0 && !is.null(x$settings$missing)) {
    cat(sprintf("  missing entries: %s\n",
                if (identical(x$settings$missing, "impute")) {
                  sprintf("%s; %s(missing = \"impute\"))", impute, maker)
                } else {
                  sprintf("%s (%s(missing = \"mask\"))", mask, maker)
                }))
  }
}

#' @export
print.bnmf_vb <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  cat("Bayesian NMF by variational Bayes\n")
  NextMethod()
  cat_optimiser(x, sprintf("ELBO %s", format(signif(x$elbo, 8))))
  cat_tau(x)
  cat_missing(x, "vb_control", "filled with E[W] E[H] of the previous sweep (observed precisions",
              "left out of every update")
  invisible(x)
}

#' @export
print.bnmf_np <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  cat(sprintf("NMF by multiplicative updates (%s loss)\n",
              if (identical(x$settings$loss, "kl")) "Kullback-Leibler" else "Euclidean"))
  NextMethod()
  cat_optimiser(x, sprintf("loss %s", format(signif(x$loss, 8))))
  cat_missing(x, "np_control", "filled with W H of the previous sweep (EM",
              "left out of every update")
  invisible(x)
}

# How the kept restart of an optimiser ended, and its criterion `crit`.
cat_optimiser <- function(x, crit) {
  cat(sprintf("  %s after %d sweeps%s; %s\n",
              if (x$converged[x$best]) "converged" else "not converged",
              x$iterations[x$best],
              if (x$settings$chains > 1) sprintf(" (best of %d restarts)", x$settings$chains) else "",
              crit))
}

# The posterior mean and sd of tau, and sigma().
cat_tau <- function(x) {
  cat(sprintf("  tau: %s (sd %s); sigma = %s\n", format(signif(x$tau, 4)),
              format(signif(x$tau_sd, 3)), format(signif(sigma(x), 4))))
}

#' @export
print.bnmf_particles <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat("Bayesian NMF by Stein-weighted particles\n")
  cat_silf_model(x, sprintf("  %d particles from %s starts, each solved by non-negative least squares\n",
                            length(x$weights), x$init))
  cat(sprintf("  Stein discrepancy %s; effective number of particles %.3g; %d with weight > 0\n",
              format(signif(x$stein, 4)), 1 / sum(x$weights^2), sum(x$weights > 0)))
  invisible(x)
}

#' @export
print.bnmf_hmc <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat("Bayesian NMF by Hamiltonian Monte Carlo\n")
  cat_silf_model(x)
  s <- x$settings
  cat(sprintf("  %d chain%s x %d iterations (%d warm-up, thin %d): %d draws; %d leapfrog steps\n",
              s$chains, if (s$chains > 1) "s" else "", s$iter, s$burnin, s$thin, x$n_draws,
              x$control$leapfrog))
  cat(sprintf("  acceptance %s; step size %s; %d divergent transitions\n",
              paste(format(round(x$acceptance, 2)), collapse = ", "),
              paste(format(signif(x$step_size, 3)), collapse = ", "), sum(x$divergences)))
  invisible(x)
}

# The data, SILF likelihood and simplex prior of a particle or HMC fit, with
# the line `how` (how the fit was made) after the data.
cat_silf_model <- function(x, how = NULL) {
  cat(sprintf("  X: %d x %d; rank: %d\n", x$dims[1L], x$dims[2L], x$rank))
  cat(how)
  cat("  likelihood: ")
  print(x$likelihood)
  cat(sprintf("  prior: columns of W ~ Dirichlet(1), H ~ Exp(rate = %s)\n", format(signif(x$prior$rate, 4))))
}

# ---- SVGD and DSGD fits (R/engine-svgd.R) ---------------------------------------------

#' @export
print.bnmf_svgd <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  label <- c(svgd = "Stein variational gradient descent (SVGD)",
             dsgd = "gradient descent on the kernel Stein discrepancy (DSGD)")[[x$method]]
  cat(sprintf("Bayesian NMF by %s\n", label))
  cat_silf_model(x, sprintf("  %d particles from %s starts moved jointly for %d steps\n",
                            length(x$weights), x$init, x$settings$iter))
  tr <- x$trace
  cat(sprintf("  Stein discrepancy (equal weights) %s at the start, %s after %d steps (%.3g s)\n",
              format(signif(tr$stein[1L], 4)), format(signif(tr$stein[nrow(tr)], 4)),
              tr$step[nrow(tr)], tr$time[nrow(tr)]))
  cat(sprintf("  Stein discrepancy at the Stein weights %s; effective number of particles %.3g\n",
              format(signif(x$stein, 4)), 1 / sum(x$weights^2)))
  invisible(x)
}

#' @export
print.bnmf_dsgd <- print.bnmf_svgd
# ---- the tri-factorisation (bnmf_nmtf) ----

#' @export
print.bnmf_nmtf <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  how <- c(gibbs = "Gibbs sampling", icm = "iterated conditional modes (posterior mode)",
           vb = "variational Bayes",
           np = sprintf("multiplicative updates (%s loss)",
                        if (identical(x$settings$loss, "kl")) "Kullback-Leibler" else "Euclidean"))
  cat(sprintf("%s NMTF X ~ F S t(G) by %s\n", if (x$method == "np") "Non-negative" else "Bayesian",
              how[[x$method]]))
  cat(sprintf("  X: %d x %d%s, %s observed (%d missing)\n", x$dims[1L], x$dims[2L],
              if (x$sparse) " (sparse)" else "",
              format(x$n_obs, big.mark = ",", scientific = FALSE), x$n_missing))
  cat(sprintf("  rank: K = %d row factors, L = %d column factors\n", x$rank[[1L]], x$rank[[2L]]))
  if (identical(x$prior$type, "ard")) {
    cat(sprintf("  prior: ARD, F[, k] ~ Exp(lambda_F[k]), G[, l] ~ Exp(lambda_G[l]), Gamma(%s, %s); S ~ Exp(%s)\n",
                format(x$prior$ard[1L]), format(x$prior$ard[2L]),
                format(signif(x$prior$rate[["S"]], 4))))
  } else if (!identical(x$prior$type, "none")) {
    cat(sprintf("  prior: F, S, G ~ Exp(rate = %s)%s\n", format(signif(x$prior$rate[["F"]], 4)),
                if (isTRUE(x$prior$auto)) "  [auto: (K L / mean(X))^(1/3)]" else ""))
  }
  if (x$method != "np") {
    cat(sprintf("  noise: tau ~ Gamma(shape = %s, rate = %s)\n", format(x$noise$shape),
                format(x$noise$rate)))
  }
  if (x$method == "gibbs") {
    s <- x$settings
    cat(sprintf("  %d chain%s x %d sweeps (burn-in %d, thin %d): %d draws\n", s$chains,
                if (s$chains > 1) "s" else "", s$iter, s$burnin, s$thin, x$n_draws))
    cat_tau(x)
  } else if (x$method == "np") {
    cat_optimiser(x, sprintf("loss %s", format(signif(x$loss, 8))))
  } else {
    cat_optimiser(x, if (x$method == "vb") sprintf("ELBO %s", format(signif(x$elbo, 8))) else
      sprintf("log posterior %s", format(signif(x$logpost, 8))))
    if (x$method == "vb") cat_tau(x) else
      cat(sprintf("  tau: %s; sigma = %s\n", format(signif(x$tau, 4)), format(signif(sigma(x), 4))))
  }
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

#' @export
print.bnmf_poisson <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  how <- switch(x$method, vb = "variational Bayes", gibbs = "Gibbs sampling",
                ssvi = "structured stochastic VI")
  cat(sprintf("<bnmf fit> Poisson NMF by %s, rank %d, X %d x %d%s\n", how, x$rank,
              x$dims[1L], x$dims[2L], if (x$sparse) " (sparse)" else ""))
  if (identical(x$prior$type, "ard")) {
    act <- pois_ard_relevance(x)
    cat(sprintf("  prior: ARD, W[, k] ~ Gamma(%s, lambda_k), H[k, ] ~ Gamma(%s, lambda_k), lambda_k ~ Gamma(%s, %s)%s\n  ARD: %d of %d factors active\n",
                format(signif(x$prior$a, 4)), format(signif(x$prior$c, 4)),
                format(signif(x$prior$ard[1L], 4)), format(signif(x$prior$ard[2L], 4)),
                if (isTRUE(x$prior$beta0_auto)) "  [beta0 auto: alpha0 sqrt(mean(X) / (a c K))]" else "",
                sum(act$active), x$rank))
  } else {
    cat(sprintf("  sparsity: \"%s\"; prior: W ~ Gamma(%s, %s), H ~ Gamma(%s, %s)\n", x$sparsity,
                format(signif(x$prior$a, 4)), format(signif(x$prior$b, 4)),
                format(signif(x$prior$c, 4)), format(signif(x$prior$d, 4))))
  }
  if (x$sparsity != "none") {
    cat(sprintf("  mask prior: beta_process(a0 = %s, b0 = %s) (W), (a0 = %s, b0 = %s) (H)\n",
                format(x$mask_prior$W$a0), format(x$mask_prior$W$b0),
                format(x$mask_prior$H$a0), format(x$mask_prior$H$b0)))
  }
  s <- x$settings
  cat(sprintf("  %d iterations, %d chain%s\n", s$iter, s$chains, if (s$chains > 1) "s" else ""))
  invisible(x)
}
# ---- RRT + online NVI fits (method "rrt") ----------------------------------

#' @export
print.bnmf_rrt <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("Bayesian NMF by %s\n", rrt_search_label(x$search)))
  cat(sprintf("  X: %d x %d; rank: %d\n", x$dims[1L], x$dims[2L], x$rank))
  cat(sprintf("  likelihood: %s; exponential priors of rate %s on W and H\n",
              rrt_likelihood_label(x), format(signif(x$prior$rate, 4))))
  st <- x$stats
  cat(sprintf("  %d candidates processed, %d accepted; %d components kept (largest weight %.3g); ELBO %s\n",
              st$processed, st$accepted, length(x$weights), max(x$weights),
              format(signif(x$elbo, 7))))
  invisible(x)
}

rrt_search_label <- function(search) {
  c(rrt = "RRT + online nonparametric VI", nvi4 = "nonparametric VI (M = 4)",
    nvi10 = "nonparametric VI (M = 10)", gibbs = "Gibbs + online nonparametric VI",
    hmc = "HMC + online nonparametric VI")[[search]]
}

rrt_likelihood_label <- function(x) {
  if (x$likelihood == "gaussian") {
    sprintf("Gaussian, noise variance %s", format(signif(x$sigma2, 4)))
  } else {
    sprintf("Uniform(-epsilon, epsilon), epsilon = %s", format(signif(x$epsilon, 4)))
  }
}
