# Hamiltonian Monte Carlo on the posterior of the particle model (Masood &
# Doshi-Velez, section 6.2: the HMC baseline): SILF likelihood, Dirichlet(1)
# columns of W, exponential H.
#
# Reparametrisation. Every column of W is W[, k] = V[, k] / s_k with
# s_k = sum(V[, k]) and V_ik ~ Exp(1) independently. The map V[, k] ->
# (W[, k] on the simplex, s_k) has Jacobian s_k^(I - 1), so the density of
# (W[, k], s_k) is s_k^(I - 1) exp(-s_k): W[, k] ~ Dirichlet(1) (uniform on
# the simplex), independent of s_k ~ Gamma(I, 1). The likelihood depends on
# V only through W, so the posterior of (V, H) has exactly the posterior of
# (W, H) as its W-marginal, and s | W, H, X is Gamma(I, 1) for every column:
# HMC runs on (V, H) in the positive orthant, with potential
#   U(V, H) = sum(V) + C SILF(f_X(W, H)) + rate sum(H),
# and after every transition the scales s_k are redrawn exactly from
# Gamma(I, 1) (a Gibbs step for the auxiliary variable, W unchanged).
#
# Positivity by reflection (Neal 2011, section 5.5.1; the mirroring of
# Patterson and Teh 2013): when a position update leaves the orthant, the
# coordinate is reflected at 0 and its momentum flipped. Each leapfrog step
# stays volume-preserving and reversible, so the Metropolis correction with
# the usual Hamiltonian is exact.

#' Settings of Hamiltonian Monte Carlo
#'
#' Tuning of `bnmf(method = "hmc")`.
#'
#' @param leapfrog Number of leapfrog steps per transition.
#' @param step_size `NULL` (the default): adapted during warm-up (the
#'   `burnin` iterations) by the dual averaging of Hoffman and Gelman (2014,
#'   section 3.2) towards `target` acceptance, from a first guess found by
#'   halving or doubling, then frozen; or a fixed step size > 0 (no
#'   adaptation).
#' @param target Target mean acceptance probability of the adaptation, in
#'   (0, 1).
#' @param metric `"diag"`: a diagonal mass matrix, estimated from the draws of
#'   two windows of the warm-up (the inverse mass is the regularised variance
#'   of each coordinate, as in Stan); `"unit"`: the identity.
#' @param jitter The step size of every transition is multiplied by a uniform
#'   number in `[1 - jitter, 1 + jitter]` (0: no jitter), which avoids
#'   periodic trajectories.
#' @param solver_iter Maximum number of sweeps of the non-negative least
#'   squares solver of the warm start.
#' @param max_energy A transition whose energy error exceeds this is counted
#'   as divergent (and rejected).
#' @return A list of class `bnmf_hmc_control`.
#' @examples
#' hmc_control(leapfrog = 20, target = 0.9)
#' @export
hmc_control <- function(leapfrog = 15, step_size = NULL, target = 0.8,
                        metric = c("diag", "unit"), jitter = 0.1, solver_iter = 500,
                        max_energy = 1000) {
  leapfrog <- check_count(leapfrog, "leapfrog", min = 1)
  if (!is.null(step_size)) step_size <- check_number(step_size, "step_size", 0, min_open = TRUE)
  target <- check_number(target, "target", 0, min_open = TRUE)
  if (target >= 1) abort_input("`target` must be between 0 and 1 (exclusive).")
  metric <- check_choice(metric, c("diag", "unit"), "metric")
  jitter <- check_number(jitter, "jitter", 0)
  if (jitter >= 1) abort_input("`jitter` must be in [0, 1).")
  solver_iter <- check_count(solver_iter, "solver_iter", min = 1)
  max_energy <- check_number(max_energy, "max_energy", 0, min_open = TRUE)
  structure(list(leapfrog = leapfrog, step_size = step_size, target = target,
                 metric = metric, jitter = jitter, solver_iter = solver_iter,
                 max_energy = max_energy),
            class = "bnmf_hmc_control")
}

#' @export
print.bnmf_hmc_control <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("HMC: %d leapfrog steps, step size %s, %s metric, jitter %s\n",
              x$leapfrog,
              if (is.null(x$step_size)) sprintf("adapted to acceptance %s", format(x$target)) else
                format(x$step_size),
              x$metric, format(x$jitter)))
  invisible(x)
}

# ---- the target -------------------------------------------------------------

# The model of a chain: data (silf_data()), likelihood (epsilon resolved),
# rate, sizes.
hmc_model <- function(X, K, likelihood, rate) {
  X <- silf_data(X)
  I <- X$dims[1L]; J <- X$dims[2L]
  list(X = X, I = I, J = J, K = K, lik = likelihood, rate = rate,
       sumsq = X$sumsq, iv = seq_len(I * K), ih = I * K + seq_len(K * J))
}

# Potential energy U(q) and its gradient at q = c(V, H); also the objective
# f, the log posterior of (W, H) (up to a constant) and W.
hmc_eval <- function(q, m) {
  I <- m$I; K <- m$K; lik <- m$lik
  V <- matrix(q[m$iv], I, K)
  H <- matrix(q[m$ih], K, m$J)
  s <- colSums(V)
  W <- V * rep(1 / s, each = I)
  g <- objective_grad(m$X, W, H, lik$objective, m$sumsq)
  d <- lik$C * silf_deriv(g$f, lik$epsilon, lik$beta)
  loglik <- -lik$C * silf_loss(g$f, lik$epsilon, lik$beta)
  gW <- d * g$W
  # dW_ik / dV_i'k = (delta_ii' - W_ik) / s_k
  gV <- (gW - rep(colSums(gW * W), each = I)) * rep(1 / s, each = I) + 1
  gH <- d * g$H + m$rate
  lp <- loglik - m$rate * sum(H)
  list(U = sum(V) - lp, grad = c(gV, gH), f = g$f, lp = lp, W = W, H = H)
}

# `L` leapfrog steps of size `eps` from (q, p) with reflection at 0: a
# coordinate that leaves the orthant is mirrored (q -> -q) and its momentum
# flipped (p -> -p). `minv` is the inverse mass (diagonal), `ev` the
# evaluation at q. `eval(q, m)` gives the potential `U` and its gradient
# `grad` (and whatever else the caller keeps); by default the particle
# model's hmc_eval(). Returns the end point, its momentum and evaluation, the
# number of reflections, and whether U or its gradient stopped being finite.
hmc_leapfrog <- function(q, p, ev, m, eps, L, minv, eval = hmc_eval) {
  p <- p - 0.5 * eps * ev$grad
  reflections <- 0L
  for (l in seq_len(L)) {
    q <- q + eps * minv * p
    neg <- q < 0
    if (any(neg)) {
      q[neg] <- -q[neg]
      p[neg] <- -p[neg]
      reflections <- reflections + sum(neg)
    }
    ev <- eval(q, m)
    if (!is.finite(ev$U) || any(!is.finite(ev$grad))) {
      return(list(q = q, p = p, ev = ev, reflections = reflections, finite = FALSE))
    }
    p <- p - (if (l == L) 0.5 else 1) * eps * ev$grad
  }
  list(q = q, p = p, ev = ev, reflections = reflections, finite = TRUE)
}

# One HMC transition from q (with its evaluation ev): fresh momentum, the
# leapfrog trajectory, Metropolis correction. Returns the new q, its
# evaluation, the acceptance probability and whether the trajectory diverged
# (non-finite, or an energy error above `max_energy`; then rejected).
# `eval` as for hmc_leapfrog().
hmc_transition <- function(q, ev, m, eps, L, minv, max_energy = 1000, eval = hmc_eval) {
  p <- stats::rnorm(length(q)) / sqrt(minv)
  H0 <- ev$U + 0.5 * sum(minv * p^2)
  lf <- hmc_leapfrog(q, p, ev, m, eps, L, minv, eval)
  dH <- if (lf$finite) lf$ev$U + 0.5 * sum(minv * lf$p^2) - H0 else Inf
  divergent <- !is.finite(dH) || dH > max_energy
  a <- if (divergent) 0 else min(1, exp(-dH))
  if (stats::runif(1) < a) {
    q <- lf$q
    ev <- lf$ev
  }
  list(q = q, ev = ev, accept = a, divergent = divergent)
}

# The Gibbs step of the auxiliary scales: s_k ~ Gamma(I, 1), W unchanged.
hmc_rescale <- function(q, ev, m) {
  s_old <- colSums(matrix(q[m$iv], m$I, m$K))
  s <- stats::rgamma(m$K, m$I, 1)
  V <- ev$W * rep(s, each = m$I)
  q[m$iv] <- V
  ev$U <- sum(V) - ev$lp
  # W, f and dU/dW are unchanged; dU/dV = (gW - colSums(gW * W)) / s + 1,
  # so its first part scales by s_old / s.
  ev$grad[m$iv] <- (ev$grad[m$iv] - 1) * rep(s_old / s, each = m$I) + 1
  list(q = q, ev = ev)
}

# A first step size (Hoffman and Gelman 2014, Algorithm 4): double or halve
# until the acceptance probability of one leapfrog step crosses 1/2.
hmc_initial_step <- function(q, ev, m, minv) {
  eps <- 1 / sqrt(mean(ev$grad^2 * minv) + 1e-12)
  acc <- function(e) {
    st <- hmc_transition(q, ev, m, e, 1L, minv, Inf)
    st$accept
  }
  a <- acc(eps)
  dir <- if (a > 0.5) 1 else -1
  for (i in seq_len(60L)) {
    e2 <- eps * 2^dir
    a2 <- acc(e2)
    if ((dir == 1 && a2 < 0.5) || (dir == -1 && a2 > 0.5)) {
      return(if (dir == 1) eps else e2)
    }
    eps <- e2
  }
  eps
}

# Warm-up schedule of the diagonal metric: windows (iterations) whose draws
# estimate the inverse mass; the step size restarts after each.
hmc_windows <- function(burnin) {
  if (burnin < 50L) return(list())
  b <- floor(burnin * c(0.15, 0.35, 0.7))
  list(c(b[1L] + 1L, b[2L]), c(b[2L] + 1L, b[3L]))
}

# Run one chain. Returns the thinned draws, the trace and the adapted
# settings.
hmc_chain <- function(q, m, settings, control, pb = NULL, pb_offset = 0L) {
  iter <- settings$iter; burnin <- settings$burnin; thin <- settings$thin
  L <- control$leapfrog
  n <- length(q)
  minv <- rep(1, n)
  ev <- hmc_eval(q, m)
  adapt <- is.null(control$step_size) && burnin > 0L
  eps <- control$step_size %||% hmc_initial_step(q, ev, m, minv)
  # Dual averaging (Hoffman and Gelman 2014, Algorithm 5).
  da_reset <- function(eps) list(mu = log(10 * eps), hbar = 0, lbar = 0, t = 0)
  da <- da_reset(eps)
  windows <- if (control$metric == "diag" && adapt) hmc_windows(burnin) else list()
  w_sum <- w_sq <- numeric(n); w_n <- 0
  n_keep <- (iter - burnin) %/% thin
  I <- m$I; J <- m$J; K <- m$K
  dW <- matrix(0, I * K, n_keep)
  dH <- matrix(0, K * J, n_keep)
  # The mean of W H over the draws (not for a sparse X: see hmc_wh()).
  WH <- if (!m$X$sparse) matrix(0, I, J)
  tr_lp <- tr_f <- tr_acc <- tr_eps <- numeric(iter)
  tr_div <- logical(iter)
  kept <- 0L
  for (it in seq_len(iter)) {
    e <- eps * (if (control$jitter > 0) stats::runif(1, 1 - control$jitter, 1 + control$jitter) else 1)
    st <- hmc_transition(q, ev, m, e, L, minv, control$max_energy)
    r <- hmc_rescale(st$q, st$ev, m)
    q <- r$q; ev <- r$ev
    tr_lp[it] <- ev$lp; tr_f[it] <- ev$f; tr_acc[it] <- st$accept
    tr_eps[it] <- e; tr_div[it] <- st$divergent
    if (it <= burnin && adapt) {
      da$t <- da$t + 1
      t0 <- 10; gam <- 0.05; kap <- 0.75
      da$hbar <- (1 - 1 / (da$t + t0)) * da$hbar + (control$target - st$accept) / (da$t + t0)
      leps <- da$mu - sqrt(da$t) / gam * da$hbar
      wt <- da$t^(-kap)
      da$lbar <- wt * leps + (1 - wt) * da$lbar
      eps <- exp(leps)
      for (w in windows) {
        if (it >= w[1L] && it <= w[2L]) {
          w_n <- w_n + 1; w_sum <- w_sum + q; w_sq <- w_sq + q^2
        }
        if (it == w[2L] && w_n > 2) {
          v <- pmax(w_sq / w_n - (w_sum / w_n)^2, 0) * w_n / (w_n - 1)
          minv <- (w_n / (w_n + 5)) * v + 1e-3 * (5 / (w_n + 5))
          w_sum <- w_sq <- numeric(n); w_n <- 0
          eps <- hmc_initial_step(q, ev, m, minv)
          da <- da_reset(eps)
        }
      }
      if (it == burnin) eps <- exp(da$lbar)
    }
    if (it > burnin && (it - burnin) %% thin == 0L) {
      kept <- kept + 1L
      dW[, kept] <- ev$W
      dH[, kept] <- ev$H
      if (!is.null(WH)) WH <- WH + ev$W %*% ev$H
    }
    if (!is.null(pb) && it %% 10L == 0L) progress_update(pb, pb_offset + it)
  }
  list(W = dW, H = dH, WH = if (!is.null(WH)) WH / max(kept, 1L), step_size = eps, inv_metric = minv,
       trace = data.frame(iteration = seq_len(iter), logpost = tr_lp, objective = tr_f,
                          accept = tr_acc, step_size = tr_eps, divergent = tr_div,
                          sampling = seq_len(iter) > burnin))
}

# ---- the fit ----------------------------------------------------------------

# The HMC engine of bnmf() (see bnmf_engine()): the particle model, one task
# per chain, each chain on its own random number stream.

hmc_check <- function(job) {
  unused <- job$given[c("noise", "keep", "loss", "particles")]
  if (any(unused)) {
    abort_input(sprintf("%s: not used by method \"hmc\".",
                        paste0("`", names(unused)[unused], "`", collapse = ", ")))
  }
  job <- silf_check(job)
  if (!inherits(job$X, "dgCMatrix")) job$X <- unclass_matrix(job$X)
  job$control <- check_control(job$control, "hmc_control")
  job$settings <- check_settings("gibbs", job$iter, job$burnin, job$thin, job$chains, job$tol,
                                 "summary", job$progress)
  s <- job$settings
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, s$chains,
                 draws = (s$iter - s$burnin) %/% s$thin, copies = 4, data = 2,
                 nx = length(job$X))
  job
}

# The warm starts, in this process (they fix the default epsilon of the
# likelihood); then one task per chain.
hmc_tasks <- function(job) {
  X <- job$X
  s <- job$settings
  starts <- hmc_starts(X, job$rank, job$init, s$chains, s$tol, job$control$solver_iter)
  sd <- silf_data(X)
  job$f0 <- vapply(starts, function(st) nmf_objective(sd, st$W, st$H, job$model$silf$objective),
                   numeric(1))
  if (is.null(job$model$silf$epsilon)) {
    if (!(max(job$f0) > 1e-12 * max(sd$sumsq, 1e-300))) {
      abort_input("`likelihood`: the warm start fits `X` exactly (objective 0), so the default `epsilon` (1.2 times its objective) is 0; give `silf(epsilon = )`.")
    }
    job$model$silf$epsilon <- 1.2 * max(job$f0)
  }
  job$model$silf <- silf_resolve_C(job$model$silf, silf_n_obs(sd))
  job$target <- hmc_model(X, job$rank, job$model$silf, job$model$prior$rate)
  job$tasks <- lapply(seq_along(starts), function(c) list(chain = c, start = starts[[c]]))
  job$chain_progress <- s$progress && tasks_in_process()
  job
}

# One chain from its warm start, the scale of V drawn from its Gamma(I, 1)
# prior.
hmc_run_chain <- function(task, job) {
  s <- task$start
  I <- nrow(job$X); K <- job$rank
  q <- c(s$W * rep(stats::rgamma(K, I, 1), each = I), s$H)
  label <- if (job$settings$chains > 1L) sprintf("HMC, chain %d", task$chain) else "HMC"
  pb <- progress_start(job$chain_progress, job$settings$iter, label)
  run <- hmc_chain(q, job$target, job$settings, job$control, pb)
  progress_done(pb)
  run
}

hmc_build <- function(runs, job, call) {
  fit <- new_hmc_fit(runs, job$X, job$rank, job$model$silf, job$model$prior$rate, job$settings,
                     job$control, job$f0, call)
  X <- job$X_data
  if (!inherits(X, "dgCMatrix")) X <- unclass_matrix(X)
  validate_hmc_fit(silf_unscale_fit(fit, X, job$data_scale))
}

hmc_engine <- function() {
  list(check = hmc_check, model = silf_model, tasks = hmc_tasks, run_task = hmc_run_chain,
       seeds = TRUE, build = hmc_build)
}

unclass_matrix <- function(X) {
  X <- as.matrix(X)
  storage.mode(X) <- "double"
  X
}

# Warm starts: "random" (entries sqrt(mean(X) / K) |N(0, 1)|) solved by
# non-negative least squares; or given factors, used as they are. Every
# start is moved onto the simplex (W H unchanged).
hmc_starts <- function(X, K, init, chains, tol, solver_iter) {
  I <- nrow(X); J <- ncol(X)
  if (is.character(init)) {
    init <- check_choice(init, "random", "init")
    return(lapply(seq_len(chains), function(c) {
      st <- random_start(I, J, K, mean_entries(X))
      sol <- nnls_solve(X, st$W, st$H, tol, solver_iter)
      hmc_check_start(to_simplex(sol$W, sol$H), c)
    }))
  }
  if (!is.list(init)) abort_input("`init` must be \"random\", a list with `W` and `H`, or a list of such lists (one per chain).")
  if (!is.null(init$W) || !is.null(init$H)) init <- rep(list(init), chains)
  if (length(init) != chains) {
    abort_input(sprintf("`init` must hold one start per chain (%d), not %d.", chains, length(init)))
  }
  lapply(seq_len(chains), function(c) {
    s <- init[[c]]
    ok <- is.list(s) && is.numeric(s$W) && is.numeric(s$H) &&
      identical(dim(as.matrix(s$W)), c(I, K)) && identical(dim(as.matrix(s$H)), c(K, J)) &&
      all(is.finite(s$W)) && all(is.finite(s$H)) && min(s$W) >= 0 && min(s$H) >= 0
    if (!ok) {
      abort_input(sprintf("`init`: start %d must be a list with `W` (%d x %d) and `H` (%d x %d), finite and >= 0.",
                          c, I, K, K, J))
    }
    hmc_check_start(to_simplex(unclass_matrix(s$W), unclass_matrix(s$H)), c)
  })
}

# HMC needs V > 0 in the interior: push exact zeros of W off the boundary by
# a tiny amount (then renormalise).
hmc_check_start <- function(s, c) {
  W <- pmax(s$W, 1e-8 / nrow(s$W))
  H <- pmax(s$H, 1e-12 * max(s$H, 1e-300))
  to_simplex(W, H)
}

new_hmc_fit <- function(runs, X, K, likelihood, rate, settings, control, f0, call) {
  I <- nrow(X); J <- ncol(X)
  kn <- factor_names(K)
  # Match the factors of every chain to those of the first.
  ref <- matrix(rowMeans(runs[[1L]]$W), I, K)
  perms <- lapply(runs, function(r) match_factors(ref, matrix(rowMeans(r$W), I, K)))
  iW <- matrix(seq_len(I * K), I, K)
  iH <- matrix(seq_len(K * J), K, J)
  for (c in seq_along(runs)) {
    p <- perms[[c]]
    runs[[c]]$W <- runs[[c]]$W[as.vector(iW[, p]), , drop = FALSE]
    runs[[c]]$H <- runs[[c]]$H[as.vector(iH[p, ]), , drop = FALSE]
  }
  trace <- do.call(rbind, lapply(seq_along(runs), function(c) {
    cbind(chain = c, runs[[c]]$trace)
  }))
  Wm <- matrix(rowMeans(do.call(cbind, lapply(runs, `[[`, "W"))), I, K,
               dimnames = list(rownames(X), kn))
  Hm <- matrix(rowMeans(do.call(cbind, lapply(runs, `[[`, "H"))), K, J,
               dimnames = list(kn, colnames(X)))
  WH <- if (!inherits(X, "dgCMatrix")) Reduce(`+`, lapply(runs, `[[`, "WH")) / length(runs)
  if (!is.null(WH)) dimnames(WH) <- dimnames(X)
  samp <- trace[trace$sampling, , drop = FALSE]
  by_chain <- function(v, f) vapply(split(v, samp$chain), f, numeric(1))
  fit <- c(fit_header(call, "hmc", "nmf", X, K, settings), list(
    likelihood = likelihood, prior = list(type = "hmc", rate = rate), control = control,
    draws = lapply(runs, function(r) list(W = r$W, H = r$H)),
    n_draws = sum(vapply(runs, function(r) ncol(r$W), numeric(1))),
    trace = trace,
    acceptance = by_chain(samp$accept, mean),
    step_size = vapply(runs, `[[`, numeric(1), "step_size"),
    divergences = by_chain(samp$divergent, sum),
    inv_metric = lapply(runs, `[[`, "inv_metric"),
    warm_start_objective = f0,
    alignment = perms,
    W = Wm, H = Hm, WH = WH
  ))
  class(fit) <- fit_class("hmc", "nmf")
  fit
}

# Values of an HMC fit: the draws of every chain and their means of the fit's
# size (every column of W on the simplex), acceptance rates in [0, 1],
# positive step sizes, the trace's chains those of the draws.
validate_hmc_fit <- function(fit) {
  validate_fit_header(fit)
  bad <- function(what) abort_fit(sprintf("the HMC fit has %s", what))
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  C <- length(fit$draws)
  if (C < 1L) bad("no chains")
  check_simplex_factors(fit$W, fit$H, I, J, K, bad, "posterior means")
  if (!(fit$sparse && is.null(fit$WH)) && (!identical(dim(fit$WH), c(I, J)) || any(!is.finite(fit$WH)))) {
    bad("a posterior mean of W H that is not a finite I x J matrix")
  }
  n <- vapply(fit$draws, function(d) {
    if (nrow(d$W) != I * K || nrow(d$H) != K * J || ncol(d$W) != ncol(d$H)) {
      bad("draws of the wrong size")
    }
    ncol(d$W)
  }, numeric(1))
  if (sum(n) != fit$n_draws) bad("a draw count that is not that of its draws")
  if (length(fit$acceptance) != C || any(!(fit$acceptance >= 0 & fit$acceptance <= 1))) {
    bad("acceptance rates outside [0, 1]")
  }
  if (length(fit$step_size) != C || any(!(is.finite(fit$step_size) & fit$step_size > 0))) {
    bad("non-positive or non-finite step sizes")
  }
  if (!setequal(unique(fit$trace$chain), seq_len(C))) bad("a trace whose chains are not its draws'")
  check_alignment(fit$alignment, C, K, bad)
  fit
}
