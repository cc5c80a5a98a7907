# The gradient baselines of Masood & Doshi-Velez (section 6.2): M
# factorisations moved jointly on the particle model (SILF likelihood,
# Dirichlet(1) columns of W, exponential H) for a fixed number of steps, by
# Stein variational gradient descent (SVGD, Liu and Wang 2016) with the IMQ
# kernel of equation 7, or by gradient descent on the kernel Stein
# discrepancy w'Kw itself (DSGD, equal weights). After every step the
# particles are projected onto the constraints: negative entries set to 0,
# then every column of W rescaled to sum to one with its scale moved into H
# (W H unchanged). The kernel terms are in src/svgd.c; the Hessian of the
# log posterior that DSGD needs is written out in silf_hvp().

#' @section SVGD and DSGD:
#' `method = "svgd"` and `method = "dsgd"` are the gradient baselines of
#' Masood and Doshi-Velez (section 6.2) on the particle model (SILF
#' likelihood, Dirichlet(1) columns of `W`, Exp(`rate`) entries of `H`):
#' `particles` factorisations (5 by default for these methods) from
#' `init` starts (`"random"`, the default, `"nndsvdar"` or `"qtransform"`,
#' not solved) are moved jointly for `iter` steps (default 1000) by Stein
#' variational gradient descent (Liu and Wang 2016) with the inverse
#' multiquadric kernel of [stein_discrepancy()] (`"svgd"`), or by gradient
#' descent on the kernel Stein discrepancy with equal weights, its gradient
#' in closed form (`"dsgd"`, Frobenius objective only). Each step is scaled
#' per coordinate by AdaGrad with momentum (as in Liu and Wang's code;
#' [stein_control()]) and followed by the projection onto the constraints
#' (negative entries set to 0, every column of `W` rescaled to sum to one,
#' the scale moved into `H`). The Stein discrepancy of the particles with
#' equal weights is recorded with the elapsed time (`fit$trace`). The fit is
#' a particle fit (class `c("bnmf_svgd", "bnmf_particles", "bnmf_nmf", "bnmf")`) whose
#' `weights()` are the optimal Stein weights of the final particles (as for
#' `method = "particles"`); `stein_discrepancy()` is the value at those
#' weights, and `fit$trace` the equal-weight value along the way. With
#' `silf(epsilon = NULL)` the threshold is 1.2 times the objective of one
#' non-negative least-squares solve from a random start (as for HMC).
#' Missing entries (NA) and a `dgCMatrix` are handled as by particles.
#' @rdname bnmf
#' @name bnmf
NULL

#' Settings of SVGD and DSGD
#'
#' Tuning of `bnmf(method = "svgd")` and `bnmf(method = "dsgd")`.
#'
#' @param step_size The step size of AdaGrad: every coordinate moves by
#'   `step_size * g / (1e-6 + sqrt(h))` with `h` the running mean of `g^2`,
#'   on the data scaled to root mean square 1 (`H` moves by `s` times as
#'   much, `s` the root mean square of `X`; see the section Particles of
#'   [bnmf()]), so that the steps follow the data's scale.
#' @param momentum The weight of the past in the running mean `h`, in [0, 1).
#' @param record Record the Stein discrepancy every `record` steps.
#' @return A list of class `bnmf_stein_control`.
#' @examples
#' stein_control(step_size = 0.05)
#' @export
stein_control <- function(step_size = 0.01, momentum = 0.9, record = 10) {
  step_size <- check_number(step_size, "step_size", 0, min_open = TRUE)
  momentum <- check_number(momentum, "momentum", 0)
  if (momentum >= 1) abort_input("`momentum` must be in [0, 1).")
  record <- check_count(record, "record", min = 1)
  structure(list(step_size = step_size, momentum = momentum, record = record),
            class = "bnmf_stein_control")
}

#' @export
print.bnmf_stein_control <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("SVGD/DSGD: AdaGrad step size %s, momentum %s, discrepancy every %d steps\n",
              format(x$step_size), format(x$momentum), x$record))
  invisible(x)
}

svgd_check <- function(job) {
  unused <- job$given[c("noise", "keep", "loss", "burnin", "thin", "chains")]
  if (any(unused)) {
    abort_input(sprintf("%s: not used by method \"%s\".",
                        paste0("`", names(unused)[unused], "`", collapse = ", "), job$method))
  }
  job <- silf_check(job)
  if (job$method == "dsgd" && job$likelihood$objective != "frobenius") {
    abort_input("`likelihood`: method \"dsgd\" needs the Hessian of the log posterior, written out for `silf(objective = \"frobenius\")` only.")
  }
  job$M <- check_particle_count(if (job$given[["particles"]]) job$particles else 5L, job$method)
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, job$M, copies = 6, data = 1, nx = job$M)
  init <- if (job$given[["init"]]) job$init else "random"
  job$init <- check_choice(init, c("random", "nndsvdar", "qtransform"), "init")
  job$iter <- check_count(job$iter %||% 1000L, "iter", min = 1)
  job$tol <- check_number(job$tol, "tol", 0)
  job$control <- check_control(job$control, "stein_control")
  job$progress <- check_flag(job$progress, "progress")
  job
}

# The starts (unsolved) and, for the default epsilon, one solve from a
# random start; one task moves all the particles.
svgd_tasks <- function(job) {
  X <- job$X
  data <- prepare_data(X, job$rank)
  t0 <- proc.time()[[3L]]
  starts <- particle_starts(start_data(X, data, job$rank, job$tol, 1000L), job$rank, job$M,
                            job$init)
  job$sd <- silf_data(X)
  if (is.null(job$model$silf$epsilon)) {
    st <- random_start(nrow(X), ncol(X), job$rank, mean_entries(X))
    sol <- nnls_solve(X, st$W, st$H, job$tol, 1000L, data)
    f0 <- nmf_objective(job$sd, sol$W, sol$H, job$model$silf$objective)
    if (!(f0 > 1e-12 * max(job$sd$sumsq, 1e-300))) {
      abort_input("`likelihood`: the solve fits `X` exactly (objective 0), so the default `epsilon` is 0; give `silf(epsilon = )`.")
    }
    job$model$silf$epsilon <- 1.2 * f0
  }
  job$model$silf <- silf_resolve_C(job$model$silf, silf_n_obs(job$sd))
  job$start_time <- proc.time()[[3L]] - t0
  job$tasks <- list(lapply(starts, function(s) to_simplex(pmax(s$W, 0), pmax(s$H, 0))))
  job
}

# Scores (and objective gradients) of a list of particles.
svgd_scores <- function(parts, sd, lik, rate) {
  lapply(parts, function(p) {
    g <- objective_grad(sd, p$W, p$H, lik$objective)
    list(grad = g, score = particle_score(g, lik, rate))
  })
}

# The SVGD directions v (and with `gradient`, the score-fixed part g of the
# gradient of w'Kw) of particles with scores, as lists of W and H matrices.
stein_directions <- function(parts, scores, kernel, w, gradient = FALSE) {
  I <- nrow(parts[[1L]]$W); K <- ncol(parts[[1L]]$W); J <- ncol(parts[[1L]]$H)
  TW <- vapply(parts, function(p) as.vector(p$W), numeric(I * K))
  TH <- vapply(parts, function(p) as.vector(p$H), numeric(K * J))
  SW <- vapply(scores, function(s) as.vector(s$W), numeric(I * K))
  SH <- vapply(scores, function(s) as.vector(s$H), numeric(K * J))
  dim(TW) <- dim(SW) <- c(I * K, length(parts))
  dim(TH) <- dim(SH) <- c(K * J, length(parts))
  out <- .Call(C_stein_directions, list(TW, TH), list(SW, SH), kernel_par_blocks(kernel),
               as.double(w), gradient)
  split <- function(bl) lapply(seq_along(parts), function(m) {
    list(W = matrix(bl[[1L]][, m], I, K), H = matrix(bl[[2L]][, m], K, J))
  })
  list(v = split(out[[1L]]), g = if (gradient) split(out[[2L]]))
}

# c_b, beta_b, a_b of the two blocks (W, H) of equation 7.
kernel_par_blocks <- function(kernel) {
  c(kernel$c_W, kernel$b_W, 1 / (2 * (kernel$c_W^2)^kernel$b_W),
    kernel$c_H, kernel$b_H, 1 / (2 * (kernel$c_H^2)^kernel$b_H))
}

# The Hessian of the log posterior at (W, H) times the direction (A, B), for
# the Frobenius objective over the observed entries (g: objective_grad()):
#   log p = -C SILF(f) - rate sum(H),
#   Hess log p . v = -C [SILF''(f) <grad f, v> grad f + SILF'(f) Hess f . v],
#   Hess f . v = 2 (D H' + R B',  W'D + A'R),
# with D = (A H + W B) and R = (W H - X) on the observed entries (zero on
# the missing ones), formed without an I x J temporary as in
# masked_objective_grad().
silf_hvp <- function(sd, W, H, A, B, g, lik) {
  X <- sd$X
  HHt <- tcrossprod(H)
  BHt <- tcrossprod(B, H)
  DHt <- A %*% HHt + W %*% BHt
  RBt <- W %*% tcrossprod(H, B) - as.matrix(X %*% t(B))
  WtD <- crossprod(W, A) %*% H + crossprod(W) %*% B
  AtR <- crossprod(A, W) %*% H - as.matrix(Matrix::crossprod(A, X))
  if (length(sd$mi)) {
    Dm <- missing_products(sd, A, H, W, B)       # (A H + W B) at the missing entries
    Rm <- g$R                                    # W H there, from objective_grad()
    DHt <- DHt - as.matrix(Dm %*% t(H))
    RBt <- RBt - as.matrix(Rm %*% t(B))
    WtD <- WtD - as.matrix(Matrix::crossprod(W, Dm))
    AtR <- AtR - as.matrix(Matrix::crossprod(A, Rm))
  }
  eps <- lik$epsilon; beta <- lik$beta
  d1 <- silf_deriv(g$f, eps, beta)
  lo <- (1 - beta) * eps
  d2 <- if (g$f > lo && g$f <= (1 + beta) * eps) 1 / (2 * beta * eps) else 0
  gv <- sum(g$W * A) + sum(g$H * B)
  list(W = -lik$C * (d2 * gv * g$W + d1 * 2 * (DHt + RBt)),
       H = -lik$C * (d2 * gv * g$H + d1 * 2 * (WtD + AtR)))
}

# The gradient of w'Kw (equal weights w = 1/M) with respect to every
# particle: 2 w_m (Hess_m v_m + g_m) (src/svgd.c).
dsgd_gradient <- function(parts, sc, sd, lik, kernel, w) {
  scores <- lapply(sc, `[[`, "score")
  dir <- stein_directions(parts, scores, kernel, w, gradient = TRUE)
  lapply(seq_along(parts), function(m) {
    p <- parts[[m]]
    hv <- silf_hvp(sd, p$W, p$H, dir$v[[m]]$W, dir$v[[m]]$H, sc[[m]]$grad, lik)
    list(W = 2 * w[[m]] * (hv$W + dir$g[[m]]$W), H = 2 * w[[m]] * (hv$H + dir$g[[m]]$H))
  })
}

# Move the particles for `iter` steps. SVGD ascends along v; DSGD descends
# along the gradient of w'Kw. Returns the final particles and the trace.
svgd_run <- function(parts, job) {
  sd <- job$sd
  lik <- job$model$silf
  rate <- job$model$prior$rate
  kernel <- stein_kernel_par()
  ctrl <- job$control
  M <- length(parts)
  w <- rep(1 / M, M)
  hist <- NULL
  rec <- unique(c(seq(0L, job$iter, by = ctrl$record), job$iter))
  trace <- data.frame(step = rec, time = NA_real_, stein = NA_real_, objective = NA_real_)
  pb <- progress_start(job$progress, job$iter, sprintf("%s steps", toupper(job$method)))
  t0 <- proc.time()[[3L]]
  for (it in 0:job$iter) {
    sc <- svgd_scores(parts, sd, lik, rate)
    scores <- lapply(sc, `[[`, "score")
    if (it %in% rec) {
      K <- particle_kernel_matrix(parts, scores, kernel)
      r <- match(it, rec)
      trace$time[r] <- job$start_time + proc.time()[[3L]] - t0
      trace$stein[r] <- sum(K) / M^2
      trace$objective[r] <- mean(vapply(sc, function(s) s$grad$f, numeric(1)))
    }
    if (it == job$iter) break
    step <- if (job$method == "svgd") {
      stein_directions(parts, scores, kernel, w)$v
    } else {
      lapply(dsgd_gradient(parts, sc, sd, lik, kernel, w), function(g) list(W = -g$W, H = -g$H))
    }
    flat <- unlist(lapply(step, function(s) c(s$W, s$H)))
    hist <- if (is.null(hist)) flat^2 else ctrl$momentum * hist + (1 - ctrl$momentum) * flat^2
    adj <- ctrl$step_size * flat / (1e-6 + sqrt(hist))
    n_W <- length(parts[[1L]]$W); n_H <- length(parts[[1L]]$H)
    parts <- lapply(seq_len(M), function(m) {
      off <- (m - 1L) * (n_W + n_H)
      W <- parts[[m]]$W + adj[off + seq_len(n_W)]
      H <- parts[[m]]$H + adj[off + n_W + seq_len(n_H)]
      to_simplex(pmax(W, 0), pmax(H, 0))
    })
    if (it %% 10L == 0L) progress_update(pb, it)
  }
  progress_done(pb)
  list(parts = parts, trace = trace, time = proc.time()[[3L]] - t0)
}

svgd_build <- function(runs, job, call) {
  run <- runs[[1L]]
  X <- job$X
  M <- length(run$parts)
  st <- particle_stein(X, run$parts, job$model$silf, job$model$prior$rate, stein_kernel_par())
  starts <- lapply(seq_len(M), function(m) list(time = job$start_time / M))
  cands <- lapply(seq_len(M), function(m) {
    list(time = run$time / M, iterations = job$iter, converged = NA)
  })
  fit <- new_particles_fit(X, job$rank, job$init, job$model$prior$rate, starts, cands, run$parts,
                           st, job$tol, job$iter, call)
  fit$method <- job$method
  fit$trace <- run$trace
  fit$control <- job$control
  class(fit) <- fit_class(c(job$method, "particles"), "nmf")
  validate_particles_fit(silf_unscale_fit(fit, job$X_data, job$data_scale))
}

svgd_engine <- function() {
  list(check = svgd_check, model = silf_model, tasks = svgd_tasks, run_task = svgd_run,
       seeds = FALSE, build = svgd_build)
}
