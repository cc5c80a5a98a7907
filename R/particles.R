# Particle fits (Masood & Doshi-Velez, Algorithm 1): candidate factorisations
# from M starts, each solved to convergence by bnmf's own non-negative least
# squares; then Stein-discrepancy weights (Algorithm 5).

# The particles engine of bnmf() (see bnmf_engine()).

# The checks shared with HMC: dense complete non-negative data, the rank, the
# SILF likelihood and the rate of H ("auto" means 1).
silf_check <- function(job) {
  job$X <- check_particle_data(job$X)
  check_rank_bound(job$rank, job$X)
  job$likelihood <- check_likelihood(job$likelihood)
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

# The C view of the flat prior of nnls_solve() (the noise prior is the
# default gamma_prior(): it sets tau, hence the log posterior whose relative
# change stops the iteration).
nnls_prior <- function(I, J, K) {
  c_prior(nmf_spec(I, J, K, resolve_rates(exponential(0), I, J, K, 1, "icm"),
                   gamma_prior()))
}

# nnls_solve() as the public bnmf() ran it for earlier versions, drawing the
# unused random number stream (so that qtransform_pairs() reproduces the
# shipped pairs).
solve_nnls_candidate <- function(X, W, H, tol, maxit) {
  skip_streams(1L)
  nnls_solve(X, W, H, tol, maxit)
}

# ---- methods ----------------------------------------------------------------

#' @importFrom stats weights
NULL

#' Particle fits: weights, factors and predictions
#'
#' A particle fit (`bnmf(method = "particles")`) is a weighted set of
#' factorisations approximating the posterior. `weights()` gives the
#' probability weight of each; `factors(fit, particle = m)` the factors of
#' particle `m` (every column of `W` sums to one; by default the particle
#' with the largest weight, whose factors `basis()` and `coef()` also
#' return); `fitted()` the posterior mean of `W %*% H`, the weighted mean of
#' the particles' products; `residuals()` `X` minus it. `predict()` without
#' `newdata` is `fitted()`; with `newdata` (new samples with the same
#' features) it finds their coefficients for every particle by non-negative
#' least squares with the particle's basis held fixed, and returns the
#' weighted mean reconstruction (`type = "response"`) or the coefficients of
#' one particle (`type = "coef"`).
#'
#' @param object A `bnmf_particles` fit.
#' @param particle A particle number; `NULL` for the one with the largest
#'   weight.
#' @param aligned Reorder the factors of the particle to match those of the
#'   largest-weight particle (minimum total angle, as [align_factors()]).
#' @param newdata `NULL` or a matrix of new samples (columns).
#' @param type `"response"` or `"coef"`.
#' @param ... Not used.
#' @return `weights()`: a named vector summing to one. `factors()`: a list
#'   `W`, `H`. `fitted()`, `residuals()`, `predict()`: matrices.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:100, ], rank = 3, method = "particles", particles = 6)
#' weights(fit)
#' str(factors(fit, particle = 2))
#' dim(fitted(fit))
#' h <- predict(fit, newdata = leukemia[1:100, 1:5], type = "coef")
#' @name particles
NULL

#' @rdname particles
#' @export
weights.bnmf_particles <- function(object, ...) object$weights

#' @rdname particles
#' @export
factors.bnmf_particles <- function(object, particle = NULL, aligned = FALSE, ...) {
  m <- check_particle(object, particle)
  p <- object$particles[[m]]
  if (isTRUE(aligned)) p <- align_particle(p, object$alignment[[m]])
  p
}

check_particle <- function(object, particle) {
  if (is.null(particle)) return(object$best)
  check_count(particle, "particle", min = 1)
  if (particle > length(object$particles)) {
    abort_input(sprintf("`particle` must be between 1 and %d.", length(object$particles)))
  }
  as.integer(particle)
}

align_particle <- function(p, perm) {
  kn <- colnames(p$W)
  W <- p$W[, perm, drop = FALSE]
  H <- p$H[perm, , drop = FALSE]
  colnames(W) <- kn
  rownames(H) <- kn
  list(W = W, H = H)
}

#' @rdname particles
#' @export
fitted.bnmf_particles <- function(object, ...) {
  w <- object$weights
  out <- matrix(0, object$dims[1L], object$dims[2L])
  for (m in which(w > 0)) {
    out <- out + w[[m]] * (object$particles[[m]]$W %*% object$particles[[m]]$H)
  }
  dimnames(out) <- object$dimnames
  out
}

#' @rdname particles
#' @export
residuals.bnmf_particles <- function(object, ...) object$X - fitted(object)

#' @rdname particles
#' @export
predict.bnmf_particles <- function(object, newdata = NULL, type = c("response", "coef"),
                                   particle = NULL, ...) {
  type <- check_choice(type, c("response", "coef"), "type")
  if (is.null(newdata)) {
    if (type == "coef") return(factors(object, particle)$H)
    return(fitted(object))
  }
  Xn <- check_particle_data(newdata, "newdata")
  if (nrow(Xn) != object$dims[1L]) {
    abort_input(sprintf("`newdata` must have %d rows (the features of the fit), not %d.",
                        object$dims[1L], nrow(Xn)))
  }
  if (type == "coef") {
    m <- check_particle(object, particle)
    H <- nnls_coef(object$particles[[m]]$W, Xn)
    dimnames(H) <- list(factor_names(object$rank), colnames(Xn))
    return(H)
  }
  w <- object$weights
  out <- matrix(0, nrow(Xn), ncol(Xn))
  for (m in which(w > 0)) {
    W <- object$particles[[m]]$W
    out <- out + w[[m]] * (W %*% nnls_coef(W, Xn))
  }
  dimnames(out) <- list(rownames(Xn), colnames(Xn))
  out
}

# min |X - W H|_F over H >= 0 with W fixed: coordinate descent (HALS) over
# the rows of H, vectorised over the columns, until the largest change of H
# is below 1e-10 of its scale.
nnls_coef <- function(W, X, maxit = 1000L) {
  R <- ncol(W)
  G <- crossprod(W)
  B <- crossprod(W, X)
  H <- matrix(pmax(qr.solve(G, B), 0), R, ncol(X))
  for (it in seq_len(maxit)) {
    change <- 0
    for (k in seq_len(R)) {
      if (!(G[k, k] > 0)) next
      new <- pmax(H[k, ] + (B[k, ] - drop(G[k, , drop = FALSE] %*% H)) / G[k, k], 0)
      change <- max(change, abs(new - H[k, ]))
      H[k, ] <- new
    }
    if (change <= 1e-10 * max(H, 1e-300)) break
  }
  H
}

#' @export
logLik.bnmf_particles <- function(object, ...) {
  abort_input("`logLik()` is not defined for a particle fit: its SILF likelihood has no normalising constant; see `summary(fit)` for the log likelihood of each particle up to that constant.")
}

#' @export
sigma.bnmf_particles <- function(object, ...) {
  abort_input("`sigma()` is not defined for a particle fit: the SILF likelihood has no noise precision.")
}

#' @export
update.bnmf_particles <- function(object, ...) {
  abort_input("`update()` does not apply to a particle fit: fit again with more `particles`.")
}

#' @export
print.bnmf_particles <- function(x, ...) {
  M <- length(x$weights)
  cat("Bayesian NMF by Stein-weighted particles\n")
  cat(sprintf("  X: %d x %d; rank: %d\n", x$dims[1L], x$dims[2L], x$rank))
  cat(sprintf("  %d particles from %s starts, each solved by non-negative least squares\n",
              M, x$init))
  cat("  likelihood: ")
  print(x$likelihood)
  cat(sprintf("  prior: columns of W ~ Dirichlet(1), H ~ Exp(rate = %s)\n", format(x$prior$rate)))
  cat(sprintf("  Stein discrepancy %s; effective number of particles %.3g; %d with weight > 0\n",
              format(signif(x$stein, 4)), 1 / sum(x$weights^2), sum(x$weights > 0)))
  invisible(x)
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

#' Plot a particle fit
#'
#' `type = "weights"`: the weight of every particle. `"distance"`: a heatmap
#' of the weighted angular distances ([wad()], in degrees) between the
#' particles, in order of weight. `"basis"`: one factor
#' (column of `W`) of several particles side by side, matched. `"features"`:
#' the top features of one factor in several particles (Figure 5 of Masood
#' and Doshi-Velez).
#'
#' @param x A `bnmf_particles` fit.
#' @param type `"weights"`, `"distance"`, `"basis"` or `"features"`.
#' @param factor The factor shown by `"basis"` and `"features"`.
#' @param particles The particles shown by `"basis"` and `"features"`
#'   (default: the 4 with the largest weights).
#' @param n_top Number of top features (`"features"`).
#' @param ... Passed to the base graphics function.
#' @return `x`, invisibly.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:100, ], rank = 3, method = "particles", particles = 6)
#' plot(fit)
#' plot(fit, type = "distance")
#' plot(fit, type = "basis", factor = 2)
#' plot(fit, type = "features", factor = 1)
#' @export
plot.bnmf_particles <- function(x, type = c("weights", "distance", "basis", "features"),
                                factor = 1, particles = NULL, n_top = 10, ...) {
  type <- check_choice(type, c("weights", "distance", "basis", "features"), "type")
  w <- x$weights
  if (is.null(particles)) particles <- order(-w)[seq_len(min(4L, length(w)))]
  particles <- vapply(particles, function(m) check_particle(x, m), integer(1))
  factor <- check_count(factor, "factor", min = 1)
  if (factor > x$rank) abort_input(sprintf("`factor` must be between 1 and %d.", x$rank))
  n_top <- check_count(n_top, "n_top", min = 1)
  switch(type,
    weights = {
      graphics::barplot(unname(w), names.arg = seq_along(w), xlab = "particle",
                        ylab = "weight", main = "Stein weights of the particles", ...)
    },
    distance = {
      ord <- order(-w)
      D <- as.matrix(wad(x))[ord, ord, drop = FALSE]
      M <- nrow(D)
      graphics::image(seq_len(M), seq_len(M), D, col = grDevices::hcl.colors(32, "viridis"),
                      xlab = "particle (by weight)", ylab = "particle (by weight)",
                      main = "Weighted angular distances (degrees)", axes = FALSE, ...)
      at <- unique(round(seq(1, M, length.out = min(M, 10))))
      graphics::axis(1, at = at, labels = ord[at])
      graphics::axis(2, at = at, labels = ord[at])
      graphics::box()
    },
    basis = {
      P <- length(particles)
      op <- graphics::par(mfrow = c(1, P), mar = c(4, 4, 3, 1))
      on.exit(graphics::par(op))
      ylim <- c(0, max(vapply(particles, function(m) {
        max(align_particle(x$particles[[m]], x$alignment[[m]])$W[, factor])
      }, numeric(1))))
      for (m in particles) {
        Wm <- align_particle(x$particles[[m]], x$alignment[[m]])$W
        graphics::plot(Wm[, factor], type = "h", ylim = ylim, xlab = "feature",
                       ylab = sprintf("W[, %d]", factor),
                       main = sprintf("particle %d (w = %.2g)", m, w[[m]]), ...)
      }
    },
    features = {
      P <- length(particles)
      op <- graphics::par(mar = c(1, 1, 3, 1))
      on.exit(graphics::par(op))
      graphics::plot.new()
      graphics::plot.window(xlim = c(0, P), ylim = c(n_top + 1, 0))
      graphics::title(main = sprintf("Top %d features of factor %d", n_top, factor))
      for (i in seq_along(particles)) {
        m <- particles[i]
        tf <- top_features(x, m, n_top)[, factor]
        graphics::text(i - 0.5, 0.2, sprintf("particle %d (w = %.2g)", m, w[[m]]), font = 2,
                       cex = 0.8)
        graphics::text(i - 0.5, seq_len(n_top) + 0.2, tf, cex = 0.75, ...)
      }
    }
  )
  invisible(x)
}
