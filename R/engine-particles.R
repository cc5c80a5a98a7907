# Particle fits (Masood & Doshi-Velez, Algorithm 1): candidate factorisations
# from M starts, each solved to convergence by bnmf's own non-negative least
# squares; then Stein-discrepancy weights (Algorithm 5).

# The particles engine of bnmf() (see bnmf_engine()).

# The checks shared with HMC, SVGD and DSGD: non-negative data (NA entries
# missing, or a dgCMatrix), the rank, the SILF likelihood and the rate of H
# ("auto" means 1 on X / s, s the root mean square of X).
silf_check <- function(job) {
  job$X <- check_particle_data(job$X, method = job$method)
  check_rank_bound(job$rank, job$X)
  job$likelihood <- check_likelihood(job$likelihood %||% silf())
  check_silf_objective(job$X, job$likelihood$objective, job$method)
  rate <- job$prior$rate
  if (!inherits(job$prior, "bnmf_prior") || !(identical(rate, "auto") ||
      is.numeric(rate) && length(rate) == 1L && is.finite(rate) && rate >= 0)) {
    abort_input(sprintf("`prior`: method \"%s\" takes `exponential(rate)` with a single rate >= 0 for H (\"auto\": 1 on X / s, s the root mean square of X).",
                        job$method))
  }
  job$rate <- if (identical(rate, "auto")) 1 else as.numeric(rate)
  # fitted on X / s, the results scaled back by silf_unscale_fit()
  job$X_data <- job$X
  silf_scale_job(job)
}

# The number of particles: a whole number >= 1 whose M x M Stein kernel
# matrix (of the weights and of every SVGD/DSGD step) fits in one array.
check_particle_count <- function(particles, method) {
  M <- check_count(particles, "particles", min = 1)
  if (as.double(M)^2 > .Machine$integer.max) {
    abort_input(sprintf("`particles`: method \"%s\" with %s particles needs a %s x %s Stein kernel matrix, more than the %s (2^31 - 1) elements a single array can hold; use at most %d particles.",
                        method, format(M, big.mark = ","), format(M, big.mark = ","),
                        format(M, big.mark = ","), format(.Machine$integer.max, big.mark = ","),
                        as.integer(floor(sqrt(.Machine$integer.max)))))
  }
  M
}

particles_check <- function(job) {
  unused <- job$given[c("noise", "burnin", "thin", "chains", "keep", "loss")]
  if (any(unused)) {
    abort_input(sprintf("%s: not used by method \"particles\" (its number of candidate factorisations is `particles`, each solved to `tol` in at most `iter` sweeps; its objective is `likelihood = silf(objective = )`).",
                        paste0("`", names(unused)[unused], "`", collapse = ", ")))
  }
  job <- silf_check(job)
  job$M <- check_particle_count(job$particles, job$method)
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, job$M, copies = 3, data = 1, nx = job$M)
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
# the fit is the same whatever the plan. With missing entries the starts use
# a completion of X (start_data()).
particles_tasks <- function(job) {
  job$data <- prepare_data(job$X, job$rank)
  job$tasks <- particle_starts(start_data(job$X, job$data, job$rank, job$tol, job$iter),
                               job$rank, job$M, job$init)
  # Earlier versions solved each candidate through bnmf(), which drew a random
  # number stream (six uniforms of the session) that the solve never used:
  # drawing them still keeps what set.seed() reproduces after the fit.
  skip_streams(job$M)
  job$flat <- nnls_prior(nrow(job$X), ncol(job$X), job$rank)
  if (job$progress) job$task_progress <- "Candidate factorisations"
  job
}

# The matrix the starts are made from (Masood & Doshi-Velez, section 7.3): X
# itself when nothing is missing; otherwise X with its missing entries filled
# by W H of a rank-K fit of the observed entries by masked Lee-Seung
# multiplicative updates (bnmf's "np" rule) from a random start. A dgCMatrix
# stays sparse (its SVD by sparse_svd()).
start_data <- function(X, data, K, tol, iter) {
  if (!length(data$miss_pos)) return(X)
  mean_x <- data$sum_obs / data$n_obs
  st <- random_start(nrow(X), ncol(X), K, mean_x)
  # Only a completion for the starts: a fill that stops short of `tol` is
  # still a fill, and a warning about an "NP iteration" the user did not ask
  # for would only confuse.
  res <- withCallingHandlers(
    run_chain(X, data, nnls_prior(nrow(X), ncol(X), K), "np", iter, 0L, 1L, "summary",
              tol, st, progress = FALSE, masked = TRUE),
    bnmf_warning_convergence = function(w) invokeRestart("muffleWarning"))
  fill <- wh_entries(res$state$W, res$state$H, data$miss_i, data$miss_j)
  if (inherits(X, "dgCMatrix")) X@x[data$miss_pos + 1L] <- fill else X[data$miss_pos + 1L] <- fill
  X
}

# The top r singular triplets of a dgCMatrix from sparse products only: a
# block power iteration (Halko, Martinsson and Tropp 2011, Algorithm 4.4)
# with r + 10 columns and a fixed (not random) start, then the SVD of the
# small projected matrix.
sparse_svd <- function(X, r, power = 6L) {
  p <- min(r + 10L, min(dim(X)))
  Y <- as.matrix(X %*% matrix(cos(seq_len(ncol(X) * p) * 0.7), ncol(X), p))
  Q <- qr.Q(qr(Y))
  for (i in seq_len(power)) {
    Z <- qr.Q(qr(as.matrix(Matrix::crossprod(X, Q))))
    Q <- qr.Q(qr(as.matrix(X %*% Z)))
  }
  s <- svd(as.matrix(Matrix::crossprod(Q, X)), nu = r, nv = r)
  list(u = Q %*% s$u, d = s$d, v = s$v)
}

particle_candidate <- function(start, job) {
  t0 <- proc.time()[[3L]]
  res <- nnls_solve(job$X, start$W, start$H, job$tol, job$iter, job$data, job$flat)
  res$time <- proc.time()[[3L]] - t0
  res
}

skip_streams <- function(n) invisible(stats::runif(6L * n))

# The mean of the observed entries (without an I x J temporary).
mean_entries <- function(X) {
  if (inherits(X, "dgCMatrix")) return(sum(X@x, na.rm = TRUE) / (length(X) - n_missing(X)))
  if (anyNA(X)) mean(X, na.rm = TRUE) else mean(X)
}

n_missing <- function(X) sum(is.na(if (inherits(X, "dgCMatrix")) X@x else X))

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
  fit <- new_particles_fit(X, R, init, rate, starts, cands, parts, st, tol, iter, call)
  validate_particles_fit(silf_unscale_fit(fit, job$X_data, job$data_scale))
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
  fit <- c(fit_header(call, "particles", "nmf", X, R,
                      list(particles = M, tol = tol, iter = iter, chains = 1L)), list(
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
    W = parts[[best]]$W, H = parts[[best]]$H
  ))
  names(fit$weights) <- paste0("particle", seq_len(M))
  class(fit) <- fit_class("particles", "nmf")
  fit
}

particles_engine <- function() {
  list(check = particles_check, model = silf_model, tasks = particles_tasks,
       run_task = particle_candidate, seeds = FALSE, build = particles_build)
}

# Values of a particle fit: every particle of the fit's size with W on the
# simplex, weights on the simplex, the best particle's factors as W and H.
validate_particles_fit <- function(fit) {
  validate_fit_header(fit)
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

# The weighted mean of W H over factorisations `parts` (lists with W, H) with
# weights `w` on every entry, and with `spread = TRUE` its weighted standard
# deviation across them: sqrt(sum_m w_m (W_m H_m - mean)^2). A sparse fit's
# dense result goes through check_dense().
# The weighted mean (and sd) over factorisations `parts` with weights `w` of
# W H at the entries (i, j): O(length(i) K) a factorisation.
parts_at <- function(parts, w, i, j, spread = FALSE) {
  m1 <- m2 <- numeric(length(i))
  for (m in which(w > 0)) {
    P <- wh_entries(parts[[m]]$W, parts[[m]]$H, i - 1L, j - 1L)
    m1 <- m1 + w[[m]] * P
    if (spread) m2 <- m2 + w[[m]] * P * P
  }
  if (!spread) return(m1)
  list(fit = m1, se.fit = sqrt(pmax(m2 - m1 * m1, 0)))
}

# fitted() of a sparse fit over factorisations: the stored entries of X.
parts_fitted <- function(object, parts, w) {
  X <- object$X
  X@x <- parts_at(parts, w, X@i + 1L, stored_cols(X))
  X
}

wh_over_parts <- function(object, parts, w, spread = FALSE) {
  check_dense(object, "predict()")
  I <- object$dims[1L]; J <- object$dims[2L]
  m1 <- matrix(0, I, J)
  m2 <- if (spread) matrix(0, I, J)
  for (m in which(w > 0)) {
    P <- parts[[m]]$W %*% parts[[m]]$H
    m1 <- m1 + w[[m]] * P
    if (spread) m2 <- m2 + w[[m]] * P * P
  }
  dimnames(m1) <- object$dimnames
  if (!spread) return(m1)
  sd <- sqrt(pmax(m2 - m1 * m1, 0))
  dimnames(sd) <- object$dimnames
  list(fit = m1, se.fit = sd)
}

#' @param se.fit `predict()` without `newdata`: also return the spread of
#'   the prediction across the particles, the weighted standard deviation
#'   \eqn{\sqrt{\sum_m w_m ((W_m H_m)_{ij} - \bar{x}_{ij})^2}} of every entry
#'   (a list `fit`, `se.fit`). Missing entries of `X` are predicted like the
#'   others.
#' @param i,j `predict()`: entries of the data to predict (their rows and
#'   columns, by number or name, or `i` a two-column matrix of pairs): the
#'   weighted mean over the particles there (with `se.fit`, their spread),
#'   without forming a dense I x J matrix (for a large sparse `X`).
#' @rdname particles
#' @name particles
NULL

#' @param se.fit `predict()`: also return the standard deviation of every
#'   entry of `W %*% H` across the kept draws (a list `fit`, `se.fit`).
#'   Missing entries of `X` are predicted like the others, by the mean over
#'   the draws.
#' @param i,j `predict()`: entries of the data to predict (their rows and
#'   columns, by number or name, or `i` a two-column matrix of pairs): the
#'   mean over the kept draws there (with `se.fit`, their sd), without
#'   forming a dense I x J matrix (for a large sparse `X`).
#' @rdname hmc
#' @name hmc
NULL

#' Starting points of particle fits
#'
#' The starts that `bnmf(method = "particles")` solves, before any solve:
#' Q-Transform (Masood and Doshi-Velez, Algorithms 2-4, with the shipped
#' pairs or pairs made by [qtransform_pairs()]), random (the scikit-learn
#' convention \eqn{\sqrt{\bar{x} / K} |N(0, 1)|}), NNDSVD or NNDSVDar
#' (Boutsidis and Gallopoulos 2008). With missing entries (NA) the SVD-based
#' starts use the completion of `X` by masked multiplicative updates, as the
#' fit does.
#'
#' @param X A non-negative matrix (NA entries missing) or a `dgCMatrix`.
#' @param rank The rank K.
#' @param n The number of starts.
#' @param init `"qtransform"`, `"random"`, `"nndsvd"`, `"nndsvdar"`, or pairs
#'   made by [qtransform_pairs()].
#' @return A list of `n` lists with `W` (I x K) and `H` (K x J).
#' @examples
#' set.seed(1)
#' st <- nmf_starts(leukemia, rank = 3, n = 2)
#' sqrt(sum((leukemia - st[[1]]$W %*% st[[1]]$H)^2) / sum(leukemia^2))
#' @export
nmf_starts <- function(X, rank, n = 1, init = "qtransform") {
  X <- check_particle_data(X, method = "particles")
  rank <- check_count(rank, "rank", min = 1)
  check_rank_bound(rank, X)
  n <- check_count(n, "n", min = 1)
  if (!inherits(init, "bnmf_qtransform")) {
    init <- check_choice(init, c("qtransform", "random", "nndsvd", "nndsvdar"), "init")
  }
  data <- prepare_data(X, rank)
  st <- particle_starts(start_data(X, data, rank, 1e-6, 1000L), rank, n, init)
  lapply(st, function(s) list(W = s$W, H = s$H))
}

#' Data with exactly two non-negative factorisations
#'
#' A rank-3 matrix whose exact non-negative factorisations are two, up to
#' the order and scale of the factors (Laurberg et al. 2008; Masood and
#' Doshi-Velez, section 5.1): the rows are the facets of a regular hexagon,
#' the columns points of the inner hexagon cut out by the two triangles of a
#' star of David, whose two triangles are the two solutions. Uniform noise
#' of `noise` times the largest entry is added.
#'
#' @param I,J Rows and columns (at least 6 each).
#' @param noise Noise level, >= 0.
#' @return A list: `X` (I x J, with noise), `X0` (without) and `solutions`,
#'   the two exact factorisations (lists with `W` and `H`).
#' @references Laurberg, H., Christensen, M. G., Plumbley, M. D., Hansen,
#'   L. K. and Jensen, S. H. (2008). Theorems on positive data: on the
#'   uniqueness of NMF. *Computational Intelligence and Neuroscience*.
#' @examples
#' set.seed(1)
#' lb <- laurberg_data(I = 30, J = 30)
#' wad(lb$solutions[[1]], lb$solutions[[2]])
#' @name laurberg_data
#' @export laurberg_data
NULL

#' @section Missing and sparse data for particles and HMC:
#' Methods `"particles"`, `"hmc"`, `"svgd"` and `"dsgd"` take `X` with NA
#' entries (missing, never zero; Masood and Doshi-Velez, section 7.3): the
#' SILF objective, its gradient and the scores run over the observed entries
#' only (for the Frobenius objective from the products of the complete case
#' corrected at the missing entries, without an I x J temporary); candidates
#' are solved by the masked solver; the SVD-based starts (`"qtransform"`,
#' `"nndsvd"`, `"nndsvdar"`) use the completion of `X` by masked Lee-Seung
#' multiplicative updates at the fit's rank. `predict(fit)` is the I x J
#' prediction, missing entries included: the weighted mean of the particles'
#' `W %*% H` (the mean over the draws for HMC), with `se.fit = TRUE` also its
#' spread across the particles (draws). A `Matrix::dgCMatrix` `X` (its zeros
#' observed) is fitted from sparse products and a sparse truncated SVD with
#' the Frobenius objective; the KL and IS objectives need `W %*% H` at every
#' entry, so a sparse `X` is refused for them with an error that says so,
#' and dense predictions of a sparse fit obey `getOption("bnmf.max_dense")`.
#' @rdname bnmf
#' @name bnmf
NULL
