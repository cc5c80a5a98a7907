# Particle fits (Masood & Doshi-Velez, Algorithm 1): candidate factorisations
# from M starts, each solved to convergence by bnmf's own non-negative least
# squares; then Stein-discrepancy weights (Algorithm 5).

# The particles engine of bnmf() (see bnmf_engine()).

# The checks shared with HMC: dense complete non-negative data, the rank, the
# SILF likelihood and the rate of H ("auto" means 1).
silf_check <- function(job) {
  job$X <- check_particle_data(job$X)
  check_rank_bound(job$rank, job$X)
  job$likelihood <- check_likelihood(job$likelihood %||% silf())
  if (job$likelihood$objective == "is" && min(job$X) <= 0) {
    abort_input("`likelihood`: the Itakura-Saito objective needs X > 0.")
  }
  rate <- job$prior$rate
  if (!inherits(job$prior, "bnmf_prior") || !(identical(rate, "auto") ||
      is.numeric(rate) && length(rate) == 1L && is.finite(rate) && rate >= 0)) {
    abort_input(sprintf("`prior`: method \"%s\" takes `exponential(rate)` with a single rate >= 0 for H (\"auto\" means 1).",
                        job$method))
  }
  job$rate <- if (identical(rate, "auto")) 1 else as.numeric(rate)
  job
}

particles_check <- function(job) {
  job <- silf_check(job)
  job$M <- check_count(job$particles, "particles", min = 1)
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, job$M, copies = 3)
  init <- if (job$given[["init"]]) job$init else "qtransform"
  if (!inherits(init, "bnmf_qtransform")) {
    init <- check_choice(init, c("qtransform", "random", "nndsvd", "nndsvdar"), "init")
  }
  job$init <- init
  job$tol <- check_number(job$tol, "tol", 0)
  job$iter <- check_count(job$iter %||% 1000L, "iter", min = 1)
  job$progress <- check_flag(job$progress, "progress")
  job
}

# The candidates' starts, drawn here; their solves use no random numbers, so
# the fit is the same whatever the plan.
particles_tasks <- function(job) {
  job$tasks <- particle_starts(job$X, job$rank, job$M, job$init)
  # Earlier versions solved each candidate through bnmf(), which drew a random
  # number stream (six uniforms of the session) that the solve never used:
  # drawing them still keeps what set.seed() reproduces after the fit.
  skip_streams(job$M)
  job$data <- prepare_data(job$X, job$rank)
  job$flat <- nnls_prior(nrow(job$X), ncol(job$X), job$rank)
  if (job$progress) job$task_progress <- "Candidate factorisations"
  job
}

particle_candidate <- function(start, job) {
  t0 <- proc.time()[[3L]]
  res <- nnls_solve(job$X, start$W, start$H, job$tol, job$iter, job$data, job$flat)
  res$time <- proc.time()[[3L]] - t0
  res
}

skip_streams <- function(n) invisible(stats::runif(6L * n))

# Rescale the candidates onto the simplex, weight them by the Stein
# discrepancy, and build the fit.
particles_build <- function(cands, job, call) {
  X <- job$X
  I <- nrow(X); J <- ncol(X); R <- job$rank; M <- job$M
  starts <- job$tasks
  init <- job$init
  rate <- job$model$prior$rate
  tol <- job$tol
  iter <- job$iter
  parts <- lapply(cands, function(cd) to_simplex(cd$W, cd$H))
  st <- particle_stein(X, parts, job$model$silf, rate, stein_kernel_par())

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

particles_engine <- function() {
  list(check = particles_check, model = silf_model, tasks = particles_tasks,
       run_task = particle_candidate, seeds = FALSE, build = particles_build)
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

# The local solver: non-negative least squares min |X - W H|_F^2 over W, H >= 0
# from the start (W, H), by ICM with a flat prior (exact coordinate descent),
# until the relative change of the objective is at most `tol` or `maxit`
# sweeps. `X` is a dense double matrix; `data` its description for the C code
# and `prior` the flat prior (computed once by callers that solve many times).
# Uses no random numbers.
nnls_solve <- function(X, W, H, tol, maxit, data = prepare_data(X, ncol(W)),
                       prior = nnls_prior(data$dims[1L], data$dims[2L], data$dims[3L])) {
  res <- run_chain(X, data, prior, "icm", maxit, 0L, 1L, "summary", tol, list(W = W, H = H),
                   progress = FALSE, masked = TRUE)
  list(W = res$state$W, H = res$state$H, iterations = nrow(res$trace),
       converged = res$converged)
}

# The C view of the flat prior of nnls_solve() (the noise prior
# gamma_prior(1, 1) sets tau, hence the log posterior whose relative change
# stops the iteration).
nnls_prior <- function(I, J, K) {
  c_prior(nmf_spec(I, J, K, resolve_rates(exponential(0), I, J, K, 1, "icm"),
                   gamma_prior(1, 1)))
}

# nnls_solve() as the public bnmf() ran it for earlier versions, drawing the
# unused random number stream (so that qtransform_pairs() reproduces the
# shipped pairs).
solve_nnls_candidate <- function(X, W, H, tol, maxit) {
  skip_streams(1L)
  nnls_solve(X, W, H, tol, maxit)
}
