# Rapid posterior exploration (Masood and Doshi-Velez, "Rapid posterior
# exploration in Bayesian non-negative matrix factorization", sections 3-4):
# a rapidly-exploring random tree (RRT) on the oblique manifold proposes
# factorisations, and online nonparametric variational inference (ONVI,
# R/engine-rrt-nvi.R) decides which become components of the variational mixture
#   q(theta) = sum_m w_m N(theta; mu_m, sigma2_m I),  theta = c(W, H).
#
# Configuration space. With the top-R SVD X ~ U D V', A_SVD = U (I x R,
# orthonormal columns) and W_SVD = D V' (R x J), a node is a change of basis
# Q on the oblique manifold OB(R) = {Q : diag(Q'Q) = 1, det(Q) != 0} and
# its factorisation is
#   W = floor(A_SVD Q),  H = floor(Q^-1 W_SVD)   (negative entries set to 0),
# exact (no flooring needed) when X has an exact NMF of rank R. As A_SVD has
# orthonormal columns, the angle between columns k of W = A_SVD Q and
# W' = A_SVD Q' (before flooring) is the angle between the columns of Q and
# Q': node angles are measured on Q.
#
# Tangent space and retraction (Absil, Mahony and Sepulchre 2008): at Q the
# tangent space is {Z : diag(Q'Z) = 0}, the projection
#   P_Q(Z) = Z - Q diag(diag(Q'Z)),
# and the retraction R_Q(Z) = (Q + Z) with every column scaled to unit norm.
# A step from Q towards Q* moves by s along P_Q(Q* - Q) / |P_Q(Q* - Q)|_F
# and retracts (RRT-Extend, Kuffner and LaValle 2000: repeated while the
# node is feasible, s growing by 10% per feasible step, at most 50 steps).

# ---- settings ---------------------------------------------------------------

#' Settings of RRT + online nonparametric variational inference
#'
#' Tuning of `bnmf(method = "rrt")` (see the section RRT of [bnmf()]). The
#' defaults are those of Masood and Doshi-Velez (section 4.3), except
#' `adapt_step` and `slack`, which let a tree grown from one start leave it
#' (`adapt_step = FALSE, slack = 0`: the paper's tree); `NULL` means the
#' default of the likelihood.
#'
#' @param search Where the candidate components offered to the online NVI
#'   come from: `"rrt"` (the tree on the oblique manifold); or the baselines
#'   of the paper (section 4.2): `"nvi4"`, `"nvi10"` (nonparametric
#'   variational inference of Gershman et al. with 4 or 10 components, no
#'   online step), `"gibbs"` (every draw of bnmf's Gibbs sampler at the
#'   fixed noise variance `sigma2`; Gaussian likelihood only) or `"hmc"`
#'   (every draw of Hamiltonian Monte Carlo on the same posterior).
#' @param sigma2 Gaussian likelihood: the noise variance \eqn{\sigma_X^2}, in
#'   the units of `X`; `NULL`: the empirical noise of a first non-negative
#'   least squares fit.
#' @param epsilon Uniform likelihood: the half-width of the Uniform(-epsilon,
#'   epsilon) distribution of every residual; `NULL`: from the absolute
#'   deviations of a first fit.
#' @param starts Number of random restarts that give the first nodes
#'   (Gaussian: 50; Uniform: 10 base nodes), when `init = "random"`.
#' @param temporary Maximum number of temporary nodes (Gaussian: 100;
#'   Uniform: 90).
#' @param step,growth,max_steps The first step size `s0` of an extension on
#'   the oblique manifold, its relative growth after every feasible step and
#'   the maximum number of steps of one extension. (The search, and so
#'   these settings and the ONVI's variances, work on `X / s`, `s` the root
#'   mean square of `X`; `sigma2` and `epsilon` are converted: see the
#'   section RRT of [bnmf()].)
#' @param adapt_step Whether the first step adapts to the posterior's width:
#'   after 10 extensions in a row whose first step is infeasible it is
#'   halved (down to `step * 2^-20`), and after an extension whose first
#'   step is feasible it is doubled (up to `step`). Near an exact or almost
#'   exact NMF the log joint can fall by thousands of nats within `step`
#'   (0.01) of a node, and a fixed first step would never leave it. `FALSE`:
#'   the paper's fixed first step.
#' @param slack Gaussian likelihood: a node is feasible when its log joint is
#'   at least the tree's feasibility threshold, which starts at the poorest
#'   node's log joint (the paper) but never higher than `slack` nats below
#'   the best node's, so that a tree grown from a single start (or from
#'   starts of equal quality) can leave it. `NULL`: `D / 2`, `D = (I + J) R`
#'   the number of entries of `W` and `H` (a Gaussian posterior's typical
#'   draws lie about `D / 2` nats below its mode). Once the tree holds
#'   `temporary` nodes the threshold rises to the best node's (the paper).
#'   `0`: the paper's threshold from the start.
#' @param min_angle,angle_increment A new node must be at least `min_angle`
#'   degrees (mean angle of the columns of Q) from every node; under the
#'   Uniform likelihood it grows by `angle_increment` at every restart of
#'   the tree.
#' @param max_failures Stop after this many extensions in a row that found
#'   no feasible node.
#' @param time_limit Stop after this many seconds of search.
#' @param solver_iter,tol Maximum sweeps and relative tolerance of the
#'   non-negative least squares solves of the restarts.
#' @param leapfrog,warmup `search = "hmc"`: leapfrog steps per transition,
#'   and the share of the draws (at the start) that adapt the step size
#'   (they are offered too).
#' @param optimise_iter Gaussian likelihood, `search = "rrt"`: before the
#'   search, the start with the smallest squared error (of the restarts or
#'   of `init`) is optimised under the ELBO of one component with the
#'   second-order expectation (the paper's equation 3; nonparametric VI with
#'   M = 1, mean and variance, from the start at its best scale), for at
#'   most this many sweeps, and replaces that start as the first candidate
#'   and node (section 4.3: "We also pick one of these and optimize it under
#'   the ELBO approximation of equation 3"); 0: no optimisation.
#' @return A list of class `bnmf_rrt_control`.
#' @examples
#' rrt_control(temporary = 20, max_failures = 500)
#' rrt_control(search = "nvi4")
#' @export
rrt_control <- function(search = c("rrt", "nvi4", "nvi10", "gibbs", "hmc"), sigma2 = NULL,
                        epsilon = NULL, starts = NULL, temporary = NULL, step = 0.01,
                        growth = 0.1, max_steps = 50, adapt_step = TRUE, slack = NULL,
                        min_angle = 0.01, angle_increment = 0.5,
                        max_failures = 10000, time_limit = Inf, solver_iter = 500,
                        tol = 1e-6, leapfrog = 10, warmup = 0.1, optimise_iter = 100) {
  search <- check_choice(search, c("rrt", "nvi4", "nvi10", "gibbs", "hmc"), "search")
  if (!is.null(sigma2)) sigma2 <- check_number(sigma2, "sigma2", 0, min_open = TRUE)
  if (!is.null(epsilon)) epsilon <- check_number(epsilon, "epsilon", 0, min_open = TRUE)
  if (!is.null(starts)) starts <- check_count(starts, "starts", min = 1)
  if (!is.null(temporary)) temporary <- check_count(temporary, "temporary", min = 1)
  step <- check_number(step, "step", 0, min_open = TRUE)
  growth <- check_number(growth, "growth", 0)
  max_steps <- check_count(max_steps, "max_steps", min = 1)
  adapt_step <- check_flag(adapt_step, "adapt_step")
  if (!is.null(slack)) slack <- check_number(slack, "slack", 0)
  min_angle <- check_number(min_angle, "min_angle", 0)
  angle_increment <- check_number(angle_increment, "angle_increment", 0)
  max_failures <- check_count(max_failures, "max_failures", min = 1)
  if (!(is.numeric(time_limit) && length(time_limit) == 1L && !is.na(time_limit) &&
        time_limit > 0)) {
    abort_input("`time_limit` must be a single number of seconds > 0 (Inf: no limit).")
  }
  solver_iter <- check_count(solver_iter, "solver_iter", min = 1)
  tol <- check_number(tol, "tol", 0)
  leapfrog <- check_count(leapfrog, "leapfrog", min = 1)
  warmup <- check_number(warmup, "warmup", 0)
  if (warmup >= 1) abort_input("`warmup` must be in [0, 1).")
  optimise_iter <- check_count(optimise_iter, "optimise_iter", min = 0)
  structure(list(search = search, sigma2 = sigma2, epsilon = epsilon, starts = starts,
                 temporary = temporary, step = step, growth = growth, max_steps = max_steps,
                 adapt_step = adapt_step, slack = slack, min_angle = min_angle, angle_increment = angle_increment,
                 max_failures = max_failures, time_limit = as.numeric(time_limit),
                 solver_iter = solver_iter, tol = tol, leapfrog = leapfrog, warmup = warmup,
                 optimise_iter = optimise_iter),
            class = "bnmf_rrt_control")
}

#' @export
print.bnmf_rrt_control <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("RRT + online NVI settings: search \"%s\", first step %s (+%s%% per step, at most %d steps), minimum angle %s degrees\n",
              x$search, format(x$step), format(100 * x$growth), x$max_steps,
              format(x$min_angle)))
  invisible(x)
}

# ---- the oblique manifold ---------------------------------------------------

# Columns of Q scaled to unit Euclidean norm.
oblique_normalise <- function(Q) {
  Q / rep(sqrt(colSums(Q^2)), each = nrow(Q))
}

# Projection of Z onto the tangent space of the oblique manifold at Q.
oblique_project <- function(Q, Z) Z - Q * rep(colSums(Q * Z), each = nrow(Q))

# Retraction of the tangent vector Z at Q onto the manifold.
oblique_retract <- function(Q, Z) oblique_normalise(Q + Z)

# One step of size s from Q towards Qt along the tangent space; Qt itself
# when it is within s.
oblique_step <- function(Q, Qt, s) {
  if (sqrt(sum((Qt - Q)^2)) <= s) return(Qt)
  Z <- oblique_project(Q, Qt - Q)
  n <- sqrt(sum(Z^2))
  if (!(n > 0)) return(Q)
  oblique_retract(Q, Z * (s / n))
}

# A uniform draw on the oblique manifold (every column uniform on the unit
# sphere; singular with probability 0).
oblique_sample <- function(R) oblique_normalise(matrix(stats::rnorm(R * R), R, R))

# Whether Q is numerically invertible.
oblique_invertible <- function(Q) {
  rc <- tryCatch(rcond(Q), error = function(e) 0)
  is.finite(rc) && rc > 1e-10
}

# The configuration space of X at rank R: A_SVD = U, W_SVD = D V' (signs of
# svd_top()).
rrt_space <- function(X, R) {
  sv <- svd_top(X, R)
  list(A = sv$u, B = sv$d * t(sv$v), I = nrow(X), J = ncol(X), R = R)
}

# The factorisation of the node Q: W = floor(A Q), H = floor(Q^-1 B).
rrt_factors <- function(Q, sp) {
  list(W = pmax(sp$A %*% Q, 0), H = pmax(solve(Q, sp$B), 0))
}

rrt_theta <- function(Q, sp) {
  f <- rrt_factors(Q, sp)
  c(f$W, f$H)
}

# theta = c(W, H) moved along its scale orbit (W D, D^-1 H: the likelihood
# does not change) to the mode of the exponential prior on it: factor k
# scaled by sqrt(sum(H[k, ]) / sum(W[, k])), so that sum(W[, k]) =
# sum(H[k, ]). The nodes of the tree have unit-norm columns of A_SVD Q, a
# scale the data do not choose; their candidates are offered at this scale.
prior_scale <- function(theta, I, J, R) {
  nW <- I * R
  W <- matrix(theta[seq_len(nW)], I, R)
  H <- matrix(theta[nW + seq_len(R * J)], R, J)
  sw <- colSums(W)
  sh <- rowSums(H)
  c_k <- ifelse(sw > 0 & sh > 0, sqrt(sh / sw), 1)
  c(W * rep(c_k, each = I), H / c_k)
}

# The node of a factorisation: Q = argmin |W - A Q| (= A'W, A having
# orthonormal columns), its columns normalised.
rrt_node <- function(W, sp) oblique_normalise(crossprod(sp$A, W))

# Distances (Frobenius) and mean column angles (degrees) from Q to every
# node; `nodes` holds one node per column (as.vector(Q)).
node_distances <- function(Q, nodes) {
  R <- nrow(Q)
  diff <- nodes - as.vector(Q)
  col_d <- sqrt(rowsum(diff^2, rep(seq_len(R), each = R), reorder = FALSE))
  list(dist = sqrt(colSums(diff^2)),
       angle = colMeans(2 * asin(pmin(col_d / 2, 1))) * 180 / pi)
}

# ---- the search -------------------------------------------------------------

# The schedule of the likelihood (section 4.3).
rrt_schedule <- function(control, likelihood) {
  gauss <- likelihood == "gaussian"
  list(starts = control$starts %||% if (gauss) 50L else 10L,
       temporary = control$temporary %||% if (gauss) 100L else 90L)
}

# Random restarts solved by non-negative least squares (the package's local
# solver, never the public bnmf()).
rrt_restarts <- function(X, R, n, control, data, flat) {
  lapply(seq_len(n), function(m) {
    st <- random_start(nrow(X), ncol(X), R, mean(X))
    sol <- nnls_solve(X, st$W, st$H, control$tol, control$solver_iter, data, flat)
    list(W = sol$W, H = sol$H)
  })
}

# NVI (and HMC) under the Uniform likelihood start at one feasible solution
# (section 4.2: the likelihood has no gradient to find one): the first of up
# to 10 restarts inside the Uniform box.
feasible_start <- function(X, R, control, data, flat, target, tries = 10L) {
  for (k in seq_len(tries)) {
    s <- rrt_restarts(X, R, 1L, control, data, flat)
    if (is.finite(target$logp(c(s[[1L]]$W, s[[1L]]$H)))) return(s)
  }
  abort_input(sprintf("`control`: none of %d restarts is inside the Uniform(-epsilon, epsilon) box (epsilon = %s); give a larger `epsilon` in `rrt_control()` or a feasible `init`.",
                      tries, format(signif(target$epsilon, 4))))
}

# The Gaussian schedule's optimised start (section 4.3): of the starts
# (lists W, H), the one with the smallest squared error, at the prior's mode
# on its scale orbit and then at the scale of the Hessian term
# (nvi_rescale(), as rrt_offer() and onvi_offer() would offer it), moved by
# NVI with M = 1 (nvi_fit(): L-BFGS-B on the mean, optimize() on the
# variance, at most `iter` sweeps) to a maximum of the one-component ELBO
# D/2 log(4 pi s) + f(mu) + s / 2 tr Hess f(mu). Returns its index, the
# optimised start (flagged `optimised`, so that it is offered as it is) and
# the one-component ELBO before and after.
rrt_optimise_start <- function(starts, target, iter) {
  # |X - W H|^2 = |X|^2 - 2 tr(W' X H') + tr(W'W H H'): no I x J residual.
  xx <- sum(target$X^2)
  rss <- vapply(starts, function(s) {
    xx - 2 * sum(crossprod(s$W, target$X) * s$H) + sum(crossprod(s$W) * tcrossprod(s$H))
  }, numeric(1))
  k <- which.min(rss)
  theta <- prior_scale(c(starts[[k]]$W, starts[[k]]$H), target$I, target$J, target$R)
  theta <- nvi_rescale(theta, target)
  if (!(target$hess_trace(theta) < 0)) return(NULL) # W or H zero: nothing to optimise
  fit <- nvi_fit(target, 1L, list(theta), iter)
  p <- target$split(fit$mu[, 1L])
  list(index = k, start = list(W = p$W, H = p$H, optimised = TRUE),
       elbo = c(fit$trace$elbo[1L], fit$elbo), sweeps = fit$steps)
}

# Offer one candidate to the online NVI, counting time and acceptances
# (`scale`: at the prior's mode on its scale orbit, prior_scale()).
rrt_offer <- function(run, theta, target, scale = TRUE) {
  t0 <- proc.time()[[3L]]
  if (scale) theta <- prior_scale(theta, target$I, target$J, target$R)
  res <- onvi_offer(run$state, theta, target)
  run$state <- res$state
  if (isTRUE(res$accepted) && length(run$kept) < 500L) {
    # The accepted candidate as the ONVI stored it (it may rescale it).
    st <- res$state
    run$kept[[length(run$kept) + 1L]] <- st$mu[, ncol(st$mu)]
    run$kept_step <- c(run$kept_step, run$processed + 1L)
  }
  run$processed <- run$processed + 1L
  run$accepted <- run$accepted + isTRUE(res$accepted)
  run$time_offer <- run$time_offer + proc.time()[[3L]] - t0
  run$last_accepted <- isTRUE(res$accepted)
  run
}

# The RRT of section 3.2 with the schedules of section 4.3. `starts` are the
# factorisations of the first nodes (restarts or given), each offered to the
# ONVI first (Gaussian: the optimised one, rrt_optimise_start(), first of
# all). Stops after `iter` processed components, `max_failures`
# extensions in a row without a feasible node, or `time_limit` seconds.
rrt_search <- function(target, sp, starts, control, iter, pb) {
  gauss <- target$likelihood == "gaussian"
  sched <- rrt_schedule(control, target$likelihood)
  R <- sp$R
  t_start <- proc.time()[[3L]]
  run <- list(state = onvi_new(target), processed = 0L, accepted = 0L, time_offer = 0,
              last_accepted = FALSE, kept = list(), kept_step = integer())
  # Gaussian: one start optimised under equation 3 goes first.
  opt <- if (gauss && control$optimise_iter > 0L) {
    rrt_optimise_start(starts, target, control$optimise_iter)
  }
  if (!is.null(opt)) starts <- c(list(opt$start), starts[-opt$index])
  time_optimise <- proc.time()[[3L]] - t_start
  # Nodes: as.vector(Q) in the columns of `nodes`, their log joint in `lp`;
  # the first `n_base` are base nodes (Uniform only).
  nodes <- matrix(0, R * R, 0)
  lp <- numeric()
  for (s in starts) {
    if (run$processed >= iter) break
    run <- rrt_offer(run, c(s$W, s$H), target, scale = !isTRUE(s$optimised))
    Q <- rrt_node(s$W, sp)
    if (!oblique_invertible(Q)) next
    nodes <- cbind(nodes, as.vector(Q))
    lp <- c(lp, target$logp(rrt_theta(Q, sp)))
  }
  if (!ncol(nodes)) abort_input("`init`: no start gives an invertible change of basis of the SVD factors.")
  n_base <- if (gauss) 0L else ncol(nodes)
  cap <- ncol(nodes) + sched$temporary
  min_angle <- control$min_angle
  # Gaussian: the poorest node's log joint, but at least `slack` (D / 2)
  # below the best node's, so that a single start is not its own bound.
  slack <- control$slack %||% (target$D / 2)
  threshold <- if (gauss) min(lp[is.finite(lp)], max(lp) - slack, Inf) else -Inf
  # The first step of an extension (adapt_step: halved after 10 extensions
  # in a row with an infeasible first step, doubled back towards `step`
  # after a feasible one).
  s_first <- control$step
  s_min <- control$step * 2^-20
  first_fails <- 0L
  full <- FALSE
  expansions <- failures <- restarts <- 0L
  time_eval <- 0
  log <- list()
  repeat {
    if (run$processed >= iter || failures >= control$max_failures ||
        proc.time()[[3L]] - t_start > control$time_limit) break
    expansions <- expansions + 1L
    Qs <- oblique_sample(R)
    nd <- node_distances(Qs, nodes)
    Q <- matrix(nodes[, which.min(nd$dist)], R, R)
    s <- s_first
    grew <- FALSE
    first_ok <- TRUE
    for (k in seq_len(control$max_steps)) {
      Qn <- oblique_step(Q, Qs, s)
      t0 <- proc.time()[[3L]]
      # Feasible: invertible, and the log joint of its factorisation above
      # the threshold; the extension goes on while its steps are feasible.
      # A feasible step becomes a node (and a candidate) when it is at least
      # min_angle from every node.
      ok <- oblique_invertible(Qn)
      if (ok) {
        theta <- rrt_theta(Qn, sp)
        l <- target$logp(theta)
        ok <- is.finite(l) && l >= threshold
      }
      far <- ok && min(node_distances(Qn, nodes)$angle) >= min_angle
      time_eval <- time_eval + proc.time()[[3L]] - t0
      if (k == 1L) first_ok <- ok
      if (!ok) break
      Q <- Qn
      s <- s * (1 + control$growth)
      if (!far) {
        if (identical(Qn, Qs)) break
        next
      }
      grew <- TRUE
      run <- rrt_offer(run, theta, target)
      if (gauss && full) {
        # Full tree: the new node replaces the lowest-quality node and the
        # threshold rises to the best node.
        worst <- which.min(lp)
        nodes[, worst] <- as.vector(Qn)
        lp[worst] <- l
        threshold <- max(lp)
      } else {
        nodes <- cbind(nodes, as.vector(Qn))
        lp <- c(lp, l)
        if (!gauss && run$last_accepted) {
          # A node accepted by the ONVI becomes a base node.
          n <- ncol(nodes)
          ord <- c(seq_len(n_base), n, setdiff(seq_len(n - 1L), seq_len(n_base)))
          nodes <- nodes[, ord, drop = FALSE]
          lp <- lp[ord]
          n_base <- n_base + 1L
          cap <- cap + 1L
        }
      }
      if (ncol(nodes) >= cap) {
        if (gauss) {
          full <- TRUE
          threshold <- max(lp)
        } else {
          # Restart the tree from its base nodes with a larger minimum angle.
          nodes <- nodes[, seq_len(n_base), drop = FALSE]
          lp <- lp[seq_len(n_base)]
          min_angle <- min_angle + control$angle_increment
          restarts <- restarts + 1L
        }
      }
      if (run$processed %% 10L == 0L) progress_update(pb, run$processed)
      if (run$processed >= iter || identical(Qn, Qs)) break
    }
    failures <- if (grew) 0L else failures + 1L
    if (control$adapt_step) {
      if (first_ok) {
        first_fails <- 0L
        s_first <- min(2 * s_first, control$step)
      } else if ((first_fails <- first_fails + 1L) >= 10L) {
        first_fails <- 0L
        s_first <- max(s_first / 2, s_min)
      }
    }
  }
  time <- proc.time()[[3L]] - t_start
  stop <- if (run$processed >= iter) "iter" else if (failures >= control$max_failures)
    "failures" else "time"
  list(state = run$state, kept = run$kept, kept_step = run$kept_step,
       search = list(processed = run$processed, accepted = run$accepted,
                     expansions = expansions, failures = failures, restarts = restarts,
                     nodes = ncol(nodes), base_nodes = n_base, threshold = threshold,
                     min_angle = min_angle, first_step = s_first, stop = stop, time = time,
                     time_offer = run$time_offer, time_eval = time_eval,
                     optimised = opt$index, optimised_elbo = opt$elbo,
                     time_optimise = time_optimise),
       nodes = nodes, node_logp = lp)
}

# ---- baselines --------------------------------------------------------------

# ONVI fed by a sequence of draws: `draw(n)` returns the next n draws as a
# list of theta (NULL when done).
onvi_stream <- function(target, draw, iter, control, pb) {
  t_start <- proc.time()[[3L]]
  run <- list(state = onvi_new(target), processed = 0L, accepted = 0L, time_offer = 0,
              last_accepted = FALSE, kept = list(), kept_step = integer())
  while (run$processed < iter && proc.time()[[3L]] - t_start <= control$time_limit) {
    thetas <- draw(min(100L, iter - run$processed))
    for (th in thetas) run <- rrt_offer(run, th, target, scale = FALSE)
    progress_update(pb, run$processed)
  }
  list(state = run$state, kept = run$kept, kept_step = run$kept_step,
       search = list(processed = run$processed, accepted = run$accepted,
                     time = proc.time()[[3L]] - t_start, time_offer = run$time_offer))
}

# Draws of bnmf's Gibbs sampler (Schmidt et al.) at the fixed noise variance
# sigma2 (the precision's prior concentrated at 1 / sigma2: Gamma with
# shape and rate 1e12 times (1, sigma2)), in chunks, from `start`.
gibbs_draws <- function(X, start, target) {
  I <- target$I; J <- target$J; K <- target$R
  data <- prepare_data(X, K)
  prior <- list(lamW = matrix(target$rate, I, K), lamH = matrix(target$rate, K, J),
                alpha = 1e12, beta = 1e12 * target$sigma2, ard = numeric())
  state <- list(W = start$W, H = start$H, tau = 1 / target$sigma2)
  function(n) {
    res <- run_chain(X, data, prior, "gibbs", n, 0L, 1L, "draws", 0, state,
                     progress = FALSE, masked = FALSE)
    state <<- list(W = res$state$W, H = res$state$H, tau = res$state$tau)
    lapply(seq_len(ncol(res$W_draws)), function(s) c(res$W_draws[, s], res$H_draws[, s]))
  }
}

# Draws of Hamiltonian Monte Carlo on the target (log joint and gradient of
# nvi_target()) by the package's reflecting leapfrog and Metropolis step
# (hmc_transition() of R/engine-hmc.R: positivity kept by reflecting at 0, Neal
# 2011, section 5.5.1; a trajectory that leaves the support, the Uniform
# box, is rejected), unit mass, no energy cap. The step size adapts towards
# acceptance 0.8 during the first `warmup` share of the draws (Robbins-Monro
# on log step), then stays fixed.
hmc_draws <- function(start, target, control, iter) {
  q <- c(start$W, start$H)
  ev <- nvi_hmc_eval(q, target)
  eps <- 0.1 / sqrt(mean(ev$grad^2) + 1)
  minv <- rep(1, length(q))
  n_warm <- floor(control$warmup * iter)
  t <- 0L
  function(n) {
    out <- vector("list", n)
    for (d in seq_len(n)) {
      t <<- t + 1L
      st <- hmc_transition(q, ev, target, eps, control$leapfrog, minv, Inf, nvi_hmc_eval)
      q <<- st$q
      ev <<- st$ev
      if (t <= n_warm) eps <<- eps * exp((st$accept - 0.8) / sqrt(t))
      out[[d]] <- q
    }
    out
  }
}

# The potential of an nvi_target() for hmc_leapfrog(): U = -log joint and its
# gradient (not computed outside the support, where U = Inf).
nvi_hmc_eval <- function(q, target) {
  lp <- target$logp(q)
  list(U = -lp, grad = if (is.finite(lp)) -target$grad(q) else rep(NA_real_, length(q)))
}

# ---- the engine -------------------------------------------------------------

rrt_check <- function(job) {
  unused <- job$given[c("noise", "keep", "loss", "particles", "burnin", "thin", "chains")]
  if (any(unused)) {
    abort_input(sprintf("%s: not used by method \"rrt\".",
                        paste0("`", names(unused)[unused], "`", collapse = ", ")))
  }
  X <- check_data_matrix(job$X)
  # The search works on dense matrices (their SVD, every residual): a
  # sparse X is made dense where the limit of dense results allows.
  if (inherits(X, "Matrix")) {
    check_dense(list(sparse = TRUE, dims = dim(X)), "The dense copy of `X` that method \"rrt\" works on")
    X <- as.matrix(X)
  }
  if (anyNA(X)) abort_input("`X`: method \"rrt\" needs a complete matrix (no NA).")
  if (min(X) < 0) abort_input("`X`: method \"rrt\" needs non-negative data.")
  job$X <- unclass_matrix(X)
  check_rank_bound(job$rank, job$X)
  job$likelihood <- check_choice(job$likelihood %||% "gaussian", c("gaussian", "uniform"),
                                 "likelihood")
  job$control <- check_control(job$control, "rrt_control")
  if (job$control$search == "gibbs" && job$likelihood != "gaussian") {
    abort_input("`control`: search \"gibbs\" needs `likelihood = \"gaussian\"` (there is no conjugate Gibbs sampler for the Uniform likelihood).")
  }
  rate <- job$prior$rate
  if (!inherits(job$prior, "bnmf_prior") || !(identical(rate, "auto") ||
      is.numeric(rate) && length(rate) == 1L && is.finite(rate) && rate > 0)) {
    abort_input("`prior`: method \"rrt\" takes `exponential(rate)` with a single rate > 0 for W and H (\"auto\": set from the data, see ?bnmf, section RRT).")
  }
  job$rate <- if (identical(rate, "auto")) NA_real_ else as.numeric(rate) # "auto": rrt_scale_job()
  search <- job$control$search
  job$iter <- check_count(job$iter %||% switch(search, rrt = 5000L, gibbs = , hmc = 10000L, 100L),
                          "iter", min = 1)
  job$starts <- rrt_init(job$init, nrow(job$X), ncol(job$X), job$rank)
  job$progress <- check_flag(job$progress, "progress")
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, 1L, copies = 4, nx = length(job$X))
  rrt_scale_job(job)
}

# The automatic rate of the exponential prior on W and H, for the scaled
# data X (root mean square 1): the rate whose prior mean of W H is the mean
# of X (each of the R terms W_ik H_kj has mean 1 / rate^2), sqrt(R / mean(X)),
# divided by sqrt(D), D = (I + J) R the entries of W and H:
# 1 / sqrt((I + J) mean(X)). At a factorisation of the data's size its log
# density, -rate sum(W, H), is then about sqrt(D) nats over all D entries
# (the spread of the prior's own log density), not about D: the prior
# hardly weighs between factorisations that explain the data equally.
rrt_auto_rate <- function(X) {
  m <- mean(X)
  if (!(is.finite(m) && m > 0)) return(1)
  1 / sqrt((nrow(X) + ncol(X)) * m)
}

# The search runs on X / s, s the root mean square of X (data_scale()), where
# the defaults hold (the first step, the variances of the ONVI):
# W, H and every start are divided by sqrt(s), an explicit rate multiplied by
# it (the automatic rate, rrt_auto_rate(), is set on X / s), an explicit
# sigma2 divided by s^2 and epsilon by s. rrt_unscale_fit()
# scales the fit back.
rrt_scale_job <- function(job) {
  s <- data_scale(job$X)
  job$data_scale <- s
  job$X_data <- job$X
  if (identical(job$prior$rate, "auto")) job$rate <- rrt_auto_rate(job$X / s)
  if (s == 1) return(job)
  r <- sqrt(s)
  job$X <- job$X / s
  if (!identical(job$prior$rate, "auto")) job$rate <- job$rate * r
  if (!is.null(job$control$sigma2)) job$control$sigma2 <- job$control$sigma2 / s^2
  if (!is.null(job$control$epsilon)) job$control$epsilon <- job$control$epsilon / s
  if (!is.null(job$starts)) {
    job$starts <- lapply(job$starts, function(st) list(W = st$W / r, H = st$H / r))
  }
  job
}

# An RRT fit made on X / s in the units of X: W and H (of the fit, its
# components and accepted candidates) times sqrt(s), the variances times s,
# sigma2 times s^2, epsilon times s, the rate over sqrt(s); the ELBO (its
# trace, the optimised start's) and the log joint of the nodes (and the
# tree's threshold) move by the Jacobian of X, -n log s, and the log joint
# also by that of (W, H), -(I + J) R log(s) / 2.
rrt_unscale_fit <- function(fit, X, s) {
  fit$data_scale <- s
  fit$X <- X
  if (s == 1) return(fit)
  r <- sqrt(s)
  n <- length(X)
  D <- (nrow(X) + ncol(X)) * fit$rank
  wh <- function(f) {
    f$W <- f$W * r
    f$H <- f$H * r
    f
  }
  fit$components <- lapply(fit$components, wh)
  fit$accepted <- lapply(fit$accepted, wh)
  fit$W <- fit$W * r
  fit$H <- fit$H * r
  fit$variances <- fit$variances * s
  if (!is.null(fit$sigma2)) fit$sigma2 <- fit$sigma2 * s^2
  if (!is.null(fit$epsilon)) fit$epsilon <- fit$epsilon * s
  fit$prior$rate <- fit$prior$rate / r
  fit$elbo <- fit$elbo - n * log(s)
  if (!is.null(fit$trace$elbo)) fit$trace$elbo <- fit$trace$elbo - n * log(s)
  if (!is.null(fit$stats$optimised_elbo)) {
    fit$stats$optimised_elbo <- fit$stats$optimised_elbo - n * log(s)
  }
  jac <- n * log(s) + D / 2 * log(s)
  if (!is.null(fit$node_logp)) fit$node_logp <- fit$node_logp - jac
  if (!is.null(fit$stats$threshold)) fit$stats$threshold <- fit$stats$threshold - jac
  fit
}

# `init`: "random" (NULL: restarts) or a list W, H, or a list of them.
rrt_init <- function(init, I, J, K) {
  if (is.character(init)) {
    check_choice(init, "random", "init")
    return(NULL)
  }
  if (is.list(init) && !is.null(init$W)) return(list(check_init_list(init, I, J, K)[c("W", "H")]))
  if (is.list(init) && length(init) >= 1L && all(vapply(init, is.list, logical(1)))) {
    return(lapply(init, function(s) check_init_list(s, I, J, K)[c("W", "H")]))
  }
  abort_input("`init` must be \"random\", a list with matrices `W` and `H`, or a list of such lists.")
}

rrt_model <- function(job) {
  nmf_spec(nrow(job$X), ncol(job$X), job$rank,
           prior = list(type = "exponential", rate = job$rate), likelihood = job$likelihood)
}

rrt_tasks <- function(job) {
  job$tasks <- list(list(search = job$control$search))
  job
}

# The whole search is one task (on its own random number stream): the
# target's defaults (a first NNLS fit), the restarts, the search.
rrt_run <- function(task, job) {
  X <- job$X
  R <- job$rank
  ctl <- job$control
  t0 <- proc.time()[[3L]]
  target <- nvi_target(X, R, job$likelihood, sigma2 = ctl$sigma2, epsilon = ctl$epsilon,
                       rate = job$rate)
  data <- prepare_data(X, R)
  flat <- nnls_prior(nrow(X), ncol(X), R)
  sched <- rrt_schedule(ctl, job$likelihood)
  search <- ctl$search
  n_starts <- switch(search, rrt = sched$starts, nvi4 = 4L, nvi10 = 10L, 1L)
  # Under the Uniform likelihood NVI and HMC start at a feasible restart.
  uniform_nvi <- job$likelihood == "uniform" && search != "rrt"
  starts <- job$starts %||% if (uniform_nvi) feasible_start(X, R, ctl, data, flat, target) else
    rrt_restarts(X, R, n_starts, ctl, data, flat)
  time_starts <- proc.time()[[3L]] - t0
  label <- c(rrt = "RRT + online NVI", nvi4 = "NVI (M = 4)", nvi10 = "NVI (M = 10)",
             gibbs = "Gibbs + online NVI", hmc = "HMC + online NVI")[[search]]
  pb <- progress_start(job$progress && tasks_in_process() && !search %in% c("nvi4", "nvi10"),
                       job$iter, label)
  out <- switch(search,
    rrt = rrt_search(target, rrt_space(X, R), starts, ctl, job$iter, pb),
    gibbs = onvi_stream(target, gibbs_draws(X, starts[[1L]], target), job$iter, ctl, pb),
    hmc = onvi_stream(target, hmc_draws(starts[[1L]], target, ctl, job$iter), job$iter, ctl, pb),
    {
      M <- if (search == "nvi4") 4L else 10L
      thetas <- lapply(rep_len(starts, M), function(s) c(s$W, s$H))
      t1 <- proc.time()[[3L]]
      st <- nvi_fit(target, M, thetas, job$iter)
      list(state = st, search = list(processed = M, accepted = length(st$w),
                                     time = proc.time()[[3L]] - t1))
    })
  progress_done(pb)
  out$search$time_starts <- time_starts
  out$elbo <- onvi_elbo(out$state, target)
  out$sigma2 <- target$sigma2
  out$epsilon <- target$epsilon
  out
}

rrt_build <- function(runs, job, call) {
  if (!ncol(runs[[1L]]$state$mu)) {
    abort_input(sprintf("`likelihood`: the online NVI accepted no candidate (none had a finite log joint%s); give feasible factors in `init`%s.",
                        if (job$likelihood == "uniform") ", i.e. none was inside the Uniform(-epsilon, epsilon) box" else "",
                        if (job$likelihood == "uniform") " or a larger `epsilon` in `rrt_control()`" else ""))
  }
  validate_rrt_fit(rrt_unscale_fit(new_rrt_fit(runs[[1L]], job, call), job$X_data,
                                   job$data_scale))
}

rrt_engine <- function() {
  list(check = rrt_check, model = rrt_model, tasks = rrt_tasks, run_task = rrt_run,
       seeds = TRUE, build = rrt_build)
}

# ---- the fit ----------------------------------------------------------------

# The RRT fit (class c("bnmf_rrt", "bnmf")) from the run of the search: the
# mixture's components (W, H of every centre), weights, variances and ELBO;
# W and H of the fit are those of the highest-weight component.
new_rrt_fit <- function(run, job, call) {
  X <- job$X
  I <- nrow(X); J <- ncol(X); R <- job$rank
  st <- run$state
  rn <- rownames(X); cn <- colnames(X); kn <- factor_names(R)
  nW <- I * R
  as_wh <- function(theta) {
    list(W = matrix(theta[seq_len(nW)], I, R, dimnames = list(rn, kn)),
         H = matrix(theta[nW + seq_len(R * J)], R, J, dimnames = list(kn, cn)))
  }
  comps <- lapply(seq_len(ncol(st$mu)), function(m) as_wh(st$mu[, m]))
  kept <- lapply(run$kept, as_wh)
  names(kept) <- if (length(kept)) paste0("step", run$kept_step)
  if (is.null(run$kept)) kept <- comps # NVI: no online step
  M <- length(comps)
  names(comps) <- paste0("component", seq_len(M))
  w <- as.numeric(st$w)
  names(w) <- names(comps)
  best <- if (M) which.max(w) else NA_integer_
  structure(c(fit_header(call, "rrt", "nmf", X, R, list(iter = job$iter, chains = 1L)), list(
    likelihood = job$likelihood, sigma2 = run$sigma2, epsilon = run$epsilon,
    prior = list(type = "exponential", rate = job$rate),
    search = job$control$search, control = job$control,
    components = comps, accepted = kept, weights = w, variances = as.numeric(st$sigma2),
    elbo = run$elbo, trace = st$trace, stats = run$search,
    nodes = run$nodes, node_logp = run$node_logp,
    best = best,
    W = if (M) comps[[best]]$W, H = if (M) comps[[best]]$H
  )), class = fit_class("rrt", "nmf"))
}

# Values of an RRT fit: at least one component, each of the fit's size and
# non-negative; weights a probability vector; positive variances; W and H
# those of the highest-weight component.
validate_rrt_fit <- function(fit) {
  validate_fit_header(fit)
  bad <- function(what) abort_fit(sprintf("the RRT fit has %s", what))
  M <- length(fit$components)
  if (M < 1L) bad("no components (the online NVI accepted none)")
  dW <- c(fit$dims[1L], fit$rank)
  dH <- c(fit$rank, fit$dims[2L])
  ok <- vapply(fit$components, function(f) {
    identical(dim(f$W), dW) && identical(dim(f$H), dH) && all(is.finite(f$W)) &&
      all(is.finite(f$H))
  }, logical(1))
  if (!all(ok)) bad(sprintf("component %d of the wrong size or with non-finite entries", which(!ok)[1L]))
  w <- fit$weights
  if (length(w) != M || any(!is.finite(w)) || any(w < 0) || abs(sum(w) - 1) > 1e-8) {
    bad("weights that are not a probability vector over the components")
  }
  if (length(fit$variances) != M || any(!(is.finite(fit$variances) & fit$variances > 0))) {
    bad("variances that are not positive numbers, one per component")
  }
  if (!identical(fit$W, fit$components[[fit$best]]$W)) bad("W and H that are not those of its highest-weight component")
  if (!is.finite(fit$elbo)) bad("a non-finite ELBO")
  fit
}

#' @section RRT:
#' `method = "rrt"` approximates the posterior of the Bayesian NMF of
#' Masood and Doshi-Velez (exponential priors of rate `rate` on `W` and `H`
#' from `prior = exponential(rate)`, `"auto"` a weak rate set from the
#' data, below; a Gaussian
#' likelihood with noise variance `sigma2`, `likelihood = "gaussian"`, or a
#' Uniform(-epsilon, epsilon) distribution of every residual,
#' `likelihood = "uniform"`) by a mixture of isotropic Gaussians
#' \eqn{q(\theta) = \sum_m w_m N(\theta; \mu_m, \sigma_m^2 I)} over
#' \eqn{\theta = (W, H)}, built online: a rapidly-exploring random tree on
#' the oblique manifold of changes of basis `Q` of the top SVD factors
#' (`W = floor(A_SVD Q)`, `H = floor(Q^-1 W_SVD)`) proposes candidate
#' centres, and online nonparametric variational inference accepts a
#' candidate (with its optimal variance and weight) when the evidence lower
#' bound rises by more than a threshold, dropping earlier components whose
#' removal costs less. The tree starts from `init`: `"random"` (restarts
#' solved by non-negative least squares: 50 under the Gaussian likelihood,
#' 10 base nodes under the Uniform one) or given factors (`list(W =, H =)` or
#' a list of them); under the Gaussian likelihood the start of smallest
#' squared error is first optimised under the one-component ELBO
#' (`optimise_iter` of [rrt_control()]). Under the Gaussian likelihood a node
#' is feasible when its log joint is above the poorest start's but never
#' required above the best node's minus `D / 2` (`slack` of
#' [rrt_control()]), and the first step of an extension adapts to the
#' posterior's width (`adapt_step`), so that a tree grown from one given
#' (exact or nearly exact) solution leaves it. `iter` is the number of candidate components processed
#' (default 5000); the search also stops after `max_failures` extensions in a
#' row without a feasible node or after `time_limit` seconds
#' ([rrt_control()]). `sigma2` and `epsilon` default to the empirical noise
#' and the largest absolute deviation of a first non-negative least squares
#' fit. The baselines of the paper are searches of [rrt_control()]: NVI with
#' 4 or 10 components, and the online NVI fed by the draws of bnmf's Gibbs
#' sampler or of HMC on the same posterior; for them `iter` is the number of
#' draws offered (default 10000) or of NVI iterations (default 100). HMC here
#' is a plain leapfrog sampler on the log joint of this model (reflected at
#' 0, step size adapted during the first `warmup` share of the draws), not
#' `method = "hmc"` (whose model is the particle model of [silf()]); Gibbs is
#' bnmf's sampler with the noise precision held at `1 / sigma2`. `X` must be
#' dense, complete and non-negative. See [summary.bnmf_rrt()], [plot.bnmf_rrt()],
#' [factors.bnmf_rrt()].
#'
#' The search runs on `X / s`, `s` the root mean square of `X`
#' (`fit$data_scale`), and the fit is scaled back: `W`, `H` of every
#' component times `sqrt(s)`, the variances times `s`, `sigma2` times
#' `s^2`, `epsilon` times `s`, the ELBO (and its trace) minus `n log(s)`.
#' The automatic rate, the tree's first step and the ONVI's variances thus
#' apply to data of root mean square 1, and the fit of `c X` is that of `X`
#' with `W H` times `c` at any scale (the automatic rate on the `W` and `H`
#' of `X` is the one on `X / s` over `sqrt(s)`: `fit$prior$rate`). An
#' explicit rate, `sigma2` and `epsilon` are in the units of `X`.
#'
#' The prior's rate matters more here than elsewhere. A component's weight
#' is proportional to the exponential of its expected log joint, and under
#' the Uniform likelihood the log joint of a factorisation inside the box is
#' the prior's alone, `-rate * sum(W, H)` plus a constant. Between
#' factorisations that all explain the data, `sum(W, H)` (over
#' `D = (I + J) R` entries) can differ by tens of units, so at a rate near
#' 1 (on the scaled data) the mixture keeps only the candidates of smallest
#' `sum(W, H)`, often a single component, however many distinct modes the
#' tree reaches. The automatic rate is therefore weak: on `X / s` it is
#' `1 / sqrt((I + J) mean(X / s))`, the rate whose prior mean of `W H` is
#' the data's mean, `sqrt(R / mean(X / s))`, divided by `sqrt(D)`. At a
#' factorisation of the data's size the prior's log density is then about
#' `sqrt(D)` nats over all `D` entries (its own spread under the prior)
#' instead of about `D`, and factorisations that explain the data equally
#' well differ in it by about a nat: on the 500 x 500 Laurberg toy of
#' the paper, started at one exact solution, the mixture keeps components
#' near both solutions (rate 0.032 on `X / s`; at rate 1 it kept the first
#' only; `vignette("exploration")`). The trade: the prior hardly shrinks
#' `W` and `H` (its mean entry is `sqrt(D)` times that of a prior matched
#' to the data's mean) nor pins their scale (`W D`, `D^-1 H`), so the
#' mixture weighs factorisations by the likelihood and the entropy alone,
#' keeps more components (each offer then costs more) and may keep some of
#' larger `sum(W, H)` that a stronger prior would rule out; ELBOs at
#' different rates are not comparable (the prior's normalising constant,
#' `D log(rate)`, differs). The former default, rate 1 on `X / s`, is
#' `prior = exponential(1 / sqrt(s))` with `s = sqrt(mean(X^2))`.
#' @rdname bnmf
#' @name bnmf
NULL

# ---- the Laurberg toy (tests, bench, vignette) -------------------------------

# The toy data of Laurberg et al. (2008) as Masood and Doshi-Velez use it
# (section 5.1): a rank-3 matrix with exactly two NMFs, embedded in a larger
# matrix. In the plane z = 1 of R^3 the cone of the rows (the orthant of the
# factorisation) cuts a regular hexagon O (vertices o_1..o_6 at radius 1);
# its edges are the rows of A (A p >= 0 iff p in cone(O)). The data columns
# are the vertices of the inner hexagon of the star of David (the
# intersection of the triangles o_1 o_3 o_5 and o_2 o_4 o_6). An NMF X = W H
# with W = A T, H = T^-1 P needs the triangle T between the inner hexagon and
# O: exactly the two triangles T1 = (o_1, o_3, o_5) and T2 = (o_2, o_4, o_6).
# Rows and columns are embedded by non-negative mixtures B (n x 6) and
# C (6 x n) holding the identity (so the facets and the vertices stay), then
# Uniform(-noise, noise) noise is added (the entries stay positive).
laurberg_toy <- function(n = 60, noise = 0.01) {
  ang <- (0:5) * pi / 3
  O <- rbind(cos(ang), sin(ang), 1)                    # outer hexagon, 3 x 6
  # Edge i joins o_i and o_{i+1}: a_i(p) = 1 - (n_i . (x, y)) / cos(30 deg).
  nrm <- rbind(cos(ang + pi / 6), sin(ang + pi / 6))
  A <- cbind(-t(nrm) / cos(pi / 6), 1)                # 6 x 3, rows >= 0 on cone(O)
  r_in <- 0.5 / cos(pi / 6)                           # inner hexagon: circumradius 1/sqrt(3)
  P <- rbind(r_in * cos(ang + pi / 6), r_in * sin(ang + pi / 6), 1)
  X0 <- A %*% P
  mix <- function(k) {
    M <- matrix(stats::rexp(6 * (k - 6)), k - 6, 6)
    M <- M * (matrix(stats::runif(6 * (k - 6)), k - 6, 6) < 0.5)
    M[rowSums(M) == 0, 1] <- 1
    rbind(diag(6), M / rowSums(M))
  }
  B <- mix(n)
  C <- t(mix(n))
  T1 <- O[, c(1, 3, 5)]
  T2 <- O[, c(2, 4, 6)]
  sol <- function(T) list(W = pmax(B %*% A %*% T, 0), H = pmax(solve(T, P) %*% C, 0))
  X <- B %*% X0 %*% C
  X <- X + matrix(stats::runif(length(X), -noise, noise), nrow(X))
  list(X = pmax(X, 0), solutions = list(sol(T1), sol(T2)))
}

#' RRT fits: components, weights, summaries and plots
#'
#' A fit of `bnmf(method = "rrt")` is a mixture of isotropic Gaussians over
#' factorisations, \eqn{q(W, H) = \sum_m w_m N((W, H); \mu_m, \sigma_m^2 I)}.
#' `factors(fit, component = m)` gives the centre of component `m` (by
#' default the one with the largest weight, which is also `fit$W`, `fit$H`),
#' `weights(fit)` the weights \eqn{w_m}, `fitted(fit)` the mean of `W H`
#' under q, \eqn{\sum_m w_m W_m H_m}, and `summary(fit)` a table of the
#' components (weight, variance \eqn{\sigma_m^2}, RMSE of the reconstruction
#' and WAD to the highest-weight component) with the ELBO and the search's
#' counts. [wad()], [align_factors()] and [covering_number()] accept the fit
#' (the components; `covering_number(fit, use = "draws")`: every candidate
#' accepted during the search). `fit$accepted` holds the accepted
#' candidates, `fit$trace` the ELBO after every candidate, `fit$stats` the
#' counts and times of the search.
#'
#' @param object A `bnmf_rrt` fit.
#' @param component Which component (default: the largest weight).
#' @param ... Not used: an argument here is an error (`plot()`: graphical
#'   parameters, passed to the base graphics function).
#' @return `factors()`: a list with `W` and `H`; `weights()`: the weights;
#'   `fitted()`: an I x J matrix; `summary()`: an object with a print
#'   method; `plot()`: `x`, invisibly.
#' @examples
#' set.seed(1)
#' X <- leukemia[1:60, 1:20]
#' fit <- bnmf(X, rank = 2, method = "rrt", iter = 40,
#'             control = rrt_control(starts = 3, temporary = 10, max_failures = 50))
#' fit
#' summary(fit)
#' weights(fit)
#' str(factors(fit, component = 1))
#' plot(fit)
#' plot(fit, type = "persistence")
#' plot(fit, type = "projection")
#' @name rrt_fit
NULL
