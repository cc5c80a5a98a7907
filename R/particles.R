# Particle fits (Masood & Doshi-Velez, Algorithm 1): candidate factorisations
# from M starts, each solved to convergence by bnmf's own non-negative least
# squares; then Stein-discrepancy weights (Algorithm 5).

# Fit a particle approximation of the posterior. Called by bnmf().
fit_particles <- function(spec, init, particles, likelihood, tol, iter, progress, call) {
  X <- check_particle_data(spec$X)
  I <- nrow(X); J <- ncol(X); R <- spec$rank
  if (R > min(I, J)) {
    abort_input(sprintf("`rank` must be at most min(nrow(X), ncol(X)) = %d, not %d.",
                        min(I, J), R))
  }
  M <- check_count(particles, "particles", min = 1)
  likelihood <- check_likelihood(likelihood)
  rate <- spec$prior$rate
  if (!inherits(spec$prior, "bnmf_prior") || !(identical(rate, "auto") ||
      is.numeric(rate) && length(rate) == 1L && is.finite(rate) && rate >= 0)) {
    abort_input("`prior`: method \"particles\" takes `exponential(rate)` with a single rate >= 0 for H (\"auto\" means 1).")
  }
  rate <- if (identical(rate, "auto")) 1 else as.numeric(rate)
  if (!inherits(init, "bnmf_qtransform")) {
    init <- check_choice(init, c("qtransform", "random", "nndsvd", "nndsvdar"), "init")
  }
  tol <- check_number(tol, "tol", 0)
  iter <- check_count(iter %||% 1000L, "iter", min = 1)
  progress <- check_flag(progress, "progress")
  if (likelihood$objective == "is" && min(X) <= 0) {
    abort_input("`likelihood`: the Itakura-Saito objective needs X > 0.")
  }

  starts <- particle_starts(X, R, M, init)
  cands <- solve_candidates(X, starts, tol, iter, progress)
  parts <- lapply(cands, function(cd) to_simplex(cd$W, cd$H))
  st <- particle_stein(X, parts, likelihood, rate, stein_kernel_par())

  validate_particles_fit(new_particles_fit(X, R, init, rate, starts, cands, parts, st, tol,
                                             iter, call))
}

# The particle fit (class c("bnmf_particles", "bnmf")) from its pieces: the
# data X, the rank R, the start scheme, the prior rate of H, the starts and
# solved candidates, the particles on the simplex and their Stein weighting
# `st`.
new_particles_fit <- function(X, R, init, rate, starts, cands, parts, st, tol, iter, call) {
  I <- nrow(X); J <- ncol(X)
  M <- length(parts)
  w <- st$weights
  best <- which.max(w)
  rn <- rownames(X); cn <- colnames(X); kn <- factor_names(R)
  parts <- lapply(parts, function(p) {
    dimnames(p$W) <- list(rn, kn)
    dimnames(p$H) <- list(kn, cn)
    p
  })
  # Factors of every particle matched to those of the highest-weight one.
  perms <- lapply(parts, function(p) match_factors(parts[[best]]$W, p$W))
  fit <- list(
    call = call, method = "particles", rank = R, dims = c(I, J),
    dimnames = list(rn, cn), sparse = FALSE, n_obs = as.double(I) * J, n_missing = 0L,
    init = if (is.character(init)) init else "qtransform (given pairs)",
    likelihood = st$likelihood, prior = list(type = "particles", rate = rate),
    kernel = st$kernel,
    particles = parts, weights = w, stein = st$value, K = st$K,
    qp = st$qp[c("status", "iterations", "kkt")],
    objective = st$objective, loglik = st$loglik,
    candidates = data.frame(
      particle = seq_len(M),
      init_time = vapply(starts, function(s) s$time, numeric(1)),
      solve_time = vapply(cands, function(cd) cd$time, numeric(1)),
      iterations = vapply(cands, function(cd) cd$iterations, numeric(1)),
      converged = vapply(cands, function(cd) cd$converged, logical(1)),
      objective = st$objective
    ),
    timing = st$timing,
    alignment = perms,
    best = best,
    W = parts[[best]]$W, H = parts[[best]]$H,
    settings = list(particles = M, tol = tol, iter = iter, chains = 1L),
    X = X
  )
  names(fit$weights) <- paste0("particle", seq_len(M))
  class(fit) <- c("bnmf_particles", "bnmf")
  fit
}

# Values of a particle fit: every particle of the fit's size with W on the
# simplex, weights on the simplex, the best particle's factors as W and H.
validate_particles_fit <- function(fit) {
  bad <- function(what) abort_fit(sprintf("the particle fit has %s", what))
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  M <- length(fit$particles)
  if (M < 1L) bad("no particles")
  for (m in seq_len(M)) {
    check_simplex_factors(fit$particles[[m]]$W, fit$particles[[m]]$H, I, J, K, bad,
                          sprintf("particle %d", m))
  }
  w <- fit$weights
  if (length(w) != M || any(!is.finite(w)) || any(w < 0) || abs(sum(w) - 1) > 1e-8) {
    bad("weights that are not a probability vector over the particles")
  }
  if (!isTRUE(fit$best %in% seq_len(M)) ||
      !identical(fit$W, fit$particles[[fit$best]]$W) ||
      !identical(fit$H, fit$particles[[fit$best]]$H)) {
    bad("W and H that are not those of its best particle")
  }
  if (!isTRUE(all(dim(fit$X) == fit$dims))) bad("X of the wrong size")
  if (!is.finite(fit$stein)) bad("a non-finite Stein discrepancy")
  if (nrow(fit$candidates) != M) bad("a candidate table of the wrong length")
  check_alignment(fit$alignment, M, K, bad)
  fit
}

# Solve every candidate from its start; candidates are independent tasks
# (futures under a non-sequential plan). Their starts were drawn beforehand,
# and the solver uses no random numbers, so the result is the same whatever
# the plan.
solve_candidates <- function(X, starts, tol, iter, progress) {
  one <- function(m) {
    t0 <- proc.time()[[3L]]
    res <- solve_nnls_candidate(X, starts[[m]]$W, starts[[m]]$H, tol, iter)
    res$time <- proc.time()[[3L]] - t0
    res
  }
  if (!inherits(future::plan(), "sequential")) {
    return(future.apply::future_lapply(seq_along(starts), one, future.seed = TRUE,
                                       future.packages = "bnmf"))
  }
  pb <- progress_start(progress, length(starts), "Candidate factorisations")
  out <- vector("list", length(starts))
  for (m in seq_along(starts)) {
    out[[m]] <- one(m)
    progress_update(pb, m)
  }
  progress_done(pb)
  out
}

# Non-negative least squares from a given start: bnmf's ICM with a flat prior
# is exact coordinate descent on |X - W H|_F^2 (the only use of the solver
# in the particle code, through the public interface).
solve_nnls_candidate <- function(X, W, H, tol, maxit) {
  fit <- bnmf(X, rank = ncol(W), method = "icm", prior = exponential(rate = 0),
              init = list(W = W, H = H), tol = tol, iter = maxit, progress = FALSE)
  f <- factors(fit)
  list(W = unname(f$W), H = unname(f$H), iterations = fit$iterations[[1L]],
       converged = fit$converged[[1L]])
}
