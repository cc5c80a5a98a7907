# Pieces shared by the bench scripts that compare whole ICM (and VB) fits
# with missing entries (icm-missing.R, icm-builds.R, icm-auto.R). Sourced
# from the package root.

# The BLAS and the package's version, the first lines of a script's output.
cat_versions <- function() {
  cat("BLAS:", extSoftVersion()[["BLAS"]], "\n")
  cat("bnmf", format(packageVersion("bnmf")), "\n\n")
}

# X = W0 H0 + N(0, 1), I x J, rank K, unit-mean exponential factors, after
# set.seed(seed), with the entries that hide(X) returns (any index R accepts)
# set missing.
sim_hidden <- function(I, J, K, seed, hide) {
  set.seed(seed)
  X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(rnorm(I * J), I)
  X[hide(X)] <- NA
  X
}

# sim_hidden() with a share `frac` of the entries missing at random (the same
# X for the same arguments).
sim_missing <- function(frac, seed = 1, I = 1000, J = 1000, K = 20) {
  sim_hidden(I, J, K, seed, function(X) sample(length(X), frac * length(X)))
}

# The sweep at which a fit with log posterior trace `lp` stops at relative
# change `tol` (bnmf's rule), or its last sweep.
at_tol <- function(lp, tol = 1e-6) {
  rel <- abs(diff(lp)) / abs(lp[-1])
  k <- which(rel <= tol)[1]
  if (is.na(k)) length(lp) else k + 1L
}

# "median (min-max)" with d decimals; for a target some rounds did not
# reach (NA), how many.
fmt_range <- function(x, d = 2) {
  if (anyNA(x)) return(sprintf("not reached in %d of %d", sum(is.na(x)), length(x)))
  sprintf(paste0("%.", d, "f (%.", d, "f-%.", d, "f)"), stats::median(x), min(x), max(x))
}

# Fits of X (rank K) by `method` ("icm", "vb" or "np") with its control's
# missing = "impute" and "mask", the same start per round (seed 100 +
# round), the order alternating by round, each to tol = 1e-9 or max_iter
# sweeps (impute_iter for "impute"). Returns list(impute, mask), each a
# list over rounds of list(ms = mean ms a sweep, lp = log posterior (VB:
# ELBO; NP: minus the loss) trace).
fit_both <- function(X, K, rounds, max_iter, method = "icm", impute_iter = max_iter) {
  control <- switch(method, icm = icm_control, vb = vb_control, np = np_control)
  res <- list(impute = list(), mask = list())
  for (r in seq_len(rounds)) {
    for (s in if (r %% 2) c("impute", "mask") else c("mask", "impute")) {
      set.seed(100 + r)
      t <- system.time(fit <- suppressWarnings(
        bnmf(X, K, method = method, iter = if (s == "impute") impute_iter else max_iter,
             tol = 1e-9, progress = FALSE,
             control = control(s))))[["elapsed"]]
      res[[s]][[r]] <- list(ms = 1000 * t / fit$iterations, lp = fit$trace$logpost)
    }
  }
  res
}

# The sweep at which each round of `z` (a list over rounds of list(ms, lp),
# as fit_both() gives per setting) first reached target[round] (NA if it
# never did).
sweeps_to <- function(z, target) {
  vapply(seq_along(z), function(r) {
    k <- which(z[[r]]$lp >= target[r])[1]
    if (is.na(k)) NA_real_ else k
  }, 0)
}

# The same in seconds, at each round's mean time a sweep.
time_to <- function(z, target) sweeps_to(z, target) * vapply(z, `[[`, 0, "ms") / 1000
