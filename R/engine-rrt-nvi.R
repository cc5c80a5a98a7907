# Nonparametric variational inference (NVI, Gershman, Hoffman & Blei 2012)
# and its online version (ONVI, Masood & Doshi-Velez, section 3.1) for the
# NMF posterior p(W, H | X).
#
# Parameters. theta = c(as.vector(W), as.vector(H)), W I x R, H R x J,
# D = (I + J) R. O is the mask of observed entries (n_obs of them), n_i the
# observed count of row i, m_j that of column j, E = O * (X - W H).
#
# Log joint f(theta) = log p(X | W, H) + log p(W) + log p(H), with
#   priors    log p(W) + log p(H) = D log(rate) - rate sum(theta), theta >= 0
#             (-Inf elsewhere; rate = 0: the flat prior, constant 0);
#   Gaussian  log p(X | W, H) = -n_obs/2 log(2 pi sigma2) - ||E||^2 / (2 sigma2);
#   Uniform   log p(X | W, H) = -n_obs log(2 epsilon) if every observed
#             |X - W H|_ij <= epsilon, -Inf otherwise.
# Gradient (Gaussian): d f / d W = E H' / sigma2 - rate,
#                      d f / d H = W' E / sigma2 - rate;
#   (Uniform: -rate inside the box; the smooth extension outside).
# Hessian trace (Gaussian; exact, Lin 2007 / the paper's "Scale Optimization"):
#   d2 f / d W_ir^2 = -sum_j O_ij H_rj^2 / sigma2, d2 f / d H_rj^2 =
#   -sum_i O_ij W_ir^2 / sigma2, so
#   tr Hess f = -(sum_i n_i ||W_i.||^2 + sum_j m_j ||H_.j||^2) / sigma2
#             = -(J tr(W'W) + I tr(H H')) / sigma2 without missing entries;
#   its gradient: d tr / d W_ir = -2 n_i W_ir / sigma2, d tr / d H_rj =
#   -2 m_j H_rj / sigma2. (Uniform: tr Hess f = 0.)
#
# Variational family q(theta) = sum_m w_m N(theta; mu_m, s_m I), s_m = sigma2_m.
# Entropy lower bound (Jensen, Gershman et al. eq. 2 with weights):
#   H[q] >= H_lb = -sum_m w_m log sum_j w_j N(mu_m; mu_j, (s_m + s_j) I),
#   log N(mu_m; mu_j, s I) = -D/2 log(2 pi s) - ||mu_m - mu_j||^2 / (2 s).
#   The bound is minus the log of E_q[q(theta)] taken per component: it is the
#   Renyi-2 entropy for M = 1 (D/2 log(4 pi s)), below the Shannon entropy
#   D/2 log(2 pi e s) by D/2 log(e / 2).
# Second-order expectation (eq. 3):
#   E_q[f] ~ sum_m w_m (f(mu_m) + s_m / 2 tr Hess f(mu_m)).
#   For the Gaussian likelihood f is a polynomial of degree 4 in theta, the
#   odd central moments of q vanish, and the Taylor remainder in expectation
#   is exactly the fourth-order term -sum_m w_m R n_obs s_m^2 / (2 sigma2)
#   (from E[(sum_r e_ir e_rj)^2] = R s^2); the approximation ignores that q
#   puts mass on theta < 0, where f = -Inf (as Gershman et al.).
# ELBO = H_lb + the second-order expectation (onvi_elbo()).
#
# One component (M = 1, Gaussian): ELBO(s) = D/2 log(4 pi s) + f + s t / 2,
#   t = tr Hess f(mu) < 0, is maximised at s = -D / t.
# Scale optimisation (the paper's beta): the likelihood is invariant to
#   (W, H) -> (W C, C^-1 H) for a diagonal C, t is not. With C = beta S,
#   S = diag(1 / ||W_.r||) (equal column norms, as the paper), and
#   a_r = sum_i n_i W_ir^2, b_r = sum_j m_j H_rj^2,
#   -sigma2 t(beta) = beta^2 sum_r a_r / ||W_.r||^2 + beta^-2 sum_r b_r ||W_.r||^2,
#   maximised at beta^4 = sum_r b_r ||W_.r||^2 / sum_r a_r / ||W_.r||^2
#   (closed form; the paper used Newton-CG). nvi_rescale() keeps the
#   rescaled centre only when it raises the one-component ELBO at s = -D / t
#   (the prior term also moves with the scale).
#
# ONVI step (onvi_offer()) for a candidate mu_new with f_new, t_new: the old
# components keep mu_m, s_m, their weights scale by (1 - w):
#   ELBO(s, w) = -(1 - w) sum_m w_m log((1 - w) A_m + w K_m(s))
#                - w log((1 - w) B(s) + w (4 pi s)^(-D/2))
#                + (1 - w) Q + w (f_new + s t_new / 2),
#   A_m = sum_j w_j N(mu_m; mu_j, (s_m + s_j) I), K_m(s) = N(mu_m; mu_new,
#   (s_m + s) I), B(s) = sum_j w_j K_j(s), Q = sum_m w_m (f_m + s_m t_m / 2);
#   all in log space. Gaussian: maximise over (s, w) (w by optimize() on
#   (0, 1), s by optimize() on log s for each w); accept when the ELBO rises by
#   more than tol = 10e-4 = 1e-3 (the absolute criterion of Gershman et al.
#   the paper quotes); then drop, one at a time, the earlier component whose
#   removal (weights renormalised) lowers the ELBO least, while that loss is
#   below the same threshold.
# Uniform likelihood: t = 0, so the second-order ELBO grows without bound in
#   s. The paper fixes the variance to that of NVI with M = 1; here that NVI
#   is the one of the moment-matched Gaussian likelihood (variance
#   epsilon^2 / 3 of Uniform(-epsilon, epsilon)) at the first centre theta_1
#   offered (or the first start of nvi_fit()), in closed form:
#   s = D (epsilon^2 / 3) / (sum_i n_i ||W_i.||^2 + sum_j m_j ||H_.j||^2),
#   taken at the scale of the orbit (W_k c_k, H_k / c_k) where it is largest
#   (nvi_uniform_var()), one value for every component (onvi_new(sigma2_fixed =) sets it
#   instead). Only w is optimised. The acceptance threshold (section 4.3,
#   "the increase in entropy by a prospective component perturbed by
#   sigma_m in every dimension from an existing component") is the largest
#   rise of the entropy bound that a copy of the existing component k
#   nearest to the candidate, moved by sqrt(s) in every coordinate, brings
#   (over its weight; same s). It is the ELBO rise of that copy with the
#   mixture's own expectation Q = sum_m w_m f_m as its log joint, so that
#   only the entropy moves. (With large D that copy barely overlaps the
#   mixture and the threshold is about log(1 + exp(-H_w)), H_w the entropy
#   of the weights: a candidate is accepted when its log joint beats Q by
#   about what it loses in overlap.) Removal keeps the absolute criterion
#   of section 3.1 / 4.3 for both likelihoods: an earlier component goes when
#   removing it lowers the ELBO by less than tol. (Dropping at the entropy
#   threshold instead would drop, of two separated components, the one of
#   lower one-component ELBO: removing it costs log(1 + exp(E_1 - E_2)) <
#   log 2, so at most one component would stay.)
#
# NVI (nvi_fit()): M components, equal weights 1/M; each iteration moves each
# mean in turn (the others fixed): Gaussian likelihood by L-BFGS-B on
# theta >= 0 (at most 25 steps), Uniform by projected gradient ascent with
# backtracking (Armijo; the box makes the objective non-smooth), each move
# kept only if the ELBO rises; then (Gaussian) each s_m by optimize() on
# log s_m, kept only if the ELBO rises. So the ELBO never decreases; the
# loop stops after `iter` sweeps or when a sweep gains less than 1e-3. The gradient in mu_n:
#   w_n sum_j w_j N_nj (1 / A_n + 1 / A_j) (mu_n - mu_j) / (s_n + s_j)
#   + w_n (grad f(mu_n) + s_n / 2 grad t(mu_n)),
#   N_nj = N(mu_n; mu_j, (s_n + s_j) I).

# --- The target ---------------------------------------------------------------

#' Log joint of an NMF for NVI / ONVI
#'
#' @param X data matrix (NA = missing).
#' @param rank R.
#' @param likelihood "gaussian" or "uniform".
#' @param sigma2,epsilon noise variance / half-width; NULL: from first NNLS
#'   fits (mean squared residual of one fit; largest absolute residual over ten
#'   random restarts, as the paper's section 6).
#' @param rate rate of the exponential priors on W and H.
#' @return class "bnmf_nvi_target".
#' @keywords internal
#' @noRd
nvi_target <- function(X, rank, likelihood = c("gaussian", "uniform"), sigma2 = NULL,
                       epsilon = NULL, rate = 1) {
  likelihood <- match.arg(likelihood)
  if (inherits(X, "Matrix")) X <- as.matrix(X)
  if (!is.matrix(X) || !is.numeric(X) || length(X) == 0L) {
    abort_input("`X` must be a numeric matrix.")
  }
  if (any(is.infinite(X))) abort_input("`X` must have finite entries (NA means missing).")
  storage.mode(X) <- "double" # an integer matrix reaches the C solvers of the first fits
  I <- nrow(X); J <- ncol(X)
  R <- check_count(rank, "rank", min = 1)
  if (!is.numeric(rate) || length(rate) != 1L || !is.finite(rate) || rate < 0) {
    abort_input("`rate` must be a single number >= 0.")
  }
  O <- !is.na(X)
  X0 <- X
  X0[!O] <- 0
  ni <- rowSums(O); mj <- colSums(O); n_obs <- sum(O)
  D <- (I + J) * R
  if (likelihood == "gaussian" && is.null(sigma2)) {
    fit <- nvi_first_fits(X, R, 1L)[[1L]]
    sigma2 <- sum((O * (X0 - fit$W %*% fit$H))^2) / n_obs
  }
  if (likelihood == "uniform" && is.null(epsilon)) {
    fits <- nvi_first_fits(X, R, 10L)
    epsilon <- max(vapply(fits, function(f) max(abs(O * (X0 - f$W %*% f$H))), 0))
  }
  if (likelihood == "gaussian" && (!is.numeric(sigma2) || length(sigma2) != 1L ||
                                   !is.finite(sigma2) || sigma2 <= 0)) {
    abort_input("`sigma2` must be a single number > 0.")
  }
  if (likelihood == "uniform" && (!is.numeric(epsilon) || length(epsilon) != 1L ||
                                  !is.finite(epsilon) || epsilon <= 0)) {
    abort_input("`epsilon` must be a single number > 0.")
  }
  lprior0 <- if (rate > 0) D * log(rate) else 0
  split <- function(theta) {
    list(W = matrix(theta[seq_len(I * R)], I, R),
         H = matrix(theta[I * R + seq_len(R * J)], R, J))
  }
  complete <- all(O)
  # The residual of the last theta is kept: optim() asks for the log joint
  # and the gradient at the same point.
  memo <- new.env(parent = emptyenv())
  resid <- function(p) {
    key <- c(p$W, p$H)
    if (!identical(key, memo$key)) {
      memo$E <- if (complete) X0 - p$W %*% p$H else O * (X0 - p$W %*% p$H)
      memo$key <- key
    }
    memo$E
  }
  lik0 <- if (likelihood == "gaussian") -n_obs / 2 * log(2 * pi * sigma2) else -n_obs * log(2 * epsilon)
  logp <- function(theta) {
    if (length(theta) != D || anyNA(theta)) abort_input(sprintf("`theta` must have length %d.", D))
    if (any(theta < 0)) return(-Inf)
    E <- resid(split(theta))
    lp <- lprior0 - rate * sum(theta)
    if (likelihood == "gaussian") return(lik0 - sum(E^2) / (2 * sigma2) + lp)
    if (max(abs(E)) > epsilon) -Inf else lik0 + lp
  }
  grad <- function(theta) {
    if (likelihood == "uniform") return(rep(-rate, D))
    p <- split(theta)
    E <- resid(p)
    c(as.vector(E %*% t(p$H)), as.vector(crossprod(p$W, E))) / sigma2 - rate
  }
  hess_trace <- function(theta) {
    if (likelihood == "uniform") return(0)
    p <- split(theta)
    -(sum(ni * rowSums(p$W^2)) + sum(mj * colSums(p$H^2))) / sigma2
  }
  grad_hess_trace <- function(theta) {
    if (likelihood == "uniform") return(numeric(D))
    p <- split(theta)
    -2 * c(as.vector(ni * p$W), as.vector(t(mj * t(p$H)))) / sigma2
  }
  structure(list(X = X, I = I, J = J, R = R, D = D, likelihood = likelihood,
                 sigma2 = if (likelihood == "gaussian") sigma2 else NULL,
                 epsilon = if (likelihood == "uniform") epsilon else NULL,
                 rate = rate, n_obs = n_obs, ni = ni, mj = mj,
                 logp = logp, grad = grad, hess_trace = hess_trace,
                 grad_hess_trace = grad_hess_trace, split = split),
            class = "bnmf_nvi_target")
}

# `n` NNLS fits (bnmf's own solver, internal) from random starts: the paper's
# first fits that set sigma2 and epsilon.
nvi_first_fits <- function(X, R, n) {
  mean_x <- mean(X, na.rm = TRUE)
  lapply(seq_len(n), function(k) {
    st <- random_start(nrow(X), ncol(X), R, mean_x)
    nnls_solve(X, st$W, st$H, 1e-6, 1000L)
  })
}

# The one-component variance of the Uniform likelihood: NVI with M = 1 of the
# moment-matched Gaussian likelihood (sigma2 = epsilon^2 / 3) at theta, at
# the best scale of theta's orbit (W_k c_k, H_k / c_k: the same likelihood).
# Factor k adds c_k^2 a_k + b_k / c_k^2 to the curvature, with
# a_k = sum_i n_i W_ik^2 and b_k = sum_j m_j H_kj^2, least at 2 sqrt(a_k b_k):
# so the variance does not depend on the scale a centre is offered at (a
# factor with a_k or b_k zero keeps a_k + b_k, its curvature as given).
nvi_uniform_var <- function(theta, target) {
  p <- target$split(theta)
  a <- colSums(target$ni * p$W^2)
  b <- colSums(target$mj * t(p$H^2))
  curv <- sum(ifelse(a > 0 & b > 0, 2 * sqrt(a * b), a + b))
  if (!(curv > 0)) return(NA_real_)
  target$D * target$epsilon^2 / 3 / curv
}

# The per-centre quantities: f and tr Hess f.
nvi_centre <- function(theta, target) {
  list(f = target$logp(theta), t = target$hess_trace(theta))
}

#' The paper's scale optimisation of a centre (Gaussian likelihood)
#' @keywords internal
#' @noRd
nvi_rescale <- function(theta, target) {
  if (target$likelihood != "gaussian") return(theta)
  p <- target$split(theta)
  nw <- sqrt(colSums(p$W^2))
  ok <- nw > 0 & rowSums(p$H^2) > 0
  if (!any(ok)) return(theta)
  a <- colSums(target$ni * p$W^2)
  b <- rowSums(t(target$mj * t(p$H^2)))
  beta <- (sum(b[ok] * nw[ok]^2) / sum(a[ok] / nw[ok]^2))^0.25
  cc <- rep(1, target$R)
  cc[ok] <- beta / nw[ok]
  new <- c(as.vector(t(t(p$W) * cc)), as.vector(p$H / cc))
  one <- function(th) {
    t <- target$hess_trace(th)
    if (!(t < 0)) return(-Inf)
    s <- -target$D / t
    target$D / 2 * log(4 * pi * s) + target$logp(th) + s * t / 2
  }
  if (one(new) > one(theta)) new else theta
}

# --- The mixture ELBO ------------------------------------------------------------

logsumexp <- function(x) {
  m <- max(x)
  if (!is.finite(m)) return(m)
  m + log(sum(exp(x - m)))
}

# Squared distances between the columns of mu (exact differences, not the
# cancellation-prone |a|^2 + |b|^2 - 2 a'b).
nvi_dist2 <- function(mu) {
  M <- ncol(mu)
  d2 <- matrix(0, M, M)
  for (m in seq_len(M)) d2[, m] <- colSums((mu - mu[, m])^2)
  d2
}

# log sum_j w_j N(mu_m; mu_j, (s_m + s_j) I) for every m, from the distances.
nvi_log_overlap <- function(d2, s, w, D) {
  ss <- outer(s, s, "+")
  L <- -D / 2 * log(2 * pi * ss) - d2 / (2 * ss) + rep(log(w), each = length(s))
  mx <- L[cbind(seq_along(s), max.col(L, ties.method = "first"))]
  mx + log(rowSums(exp(L - mx)))
}

# log(exp(a) + exp(b)), elementwise.
logaddexp <- function(a, b) {
  m <- pmax(a, b)
  ifelse(is.finite(m), m + log(exp(a - m) + exp(b - m)), m)
}

# The entropy bound from the distances.
nvi_entropy_d2 <- function(d2, s, w, D) {
  keep <- w > 0
  if (!any(keep)) return(-Inf)
  la <- nvi_log_overlap(d2[keep, keep, drop = FALSE], s[keep], w[keep], D)
  -sum(w[keep] * la)
}

#' Jensen lower bound on the entropy of sum_m w_m N(mu_m, sigma2_m I)
#' @param mu D x M matrix of means; sigma2 variances; w weights (sum 1;
#'   default equal).
#' @keywords internal
#' @noRd
mixture_entropy_lb <- function(mu, sigma2, w = rep(1 / ncol(mu), ncol(mu))) {
  mu <- as.matrix(mu)
  M <- ncol(mu)
  if (length(sigma2) != M || length(w) != M || any(!(sigma2 > 0)) || any(!(w >= 0))) {
    abort_input("`sigma2` (> 0) and `w` (>= 0) must have one entry per column of `mu`.")
  }
  nvi_entropy_d2(nvi_dist2(mu), sigma2, w / sum(w), nrow(mu))
}

#' Second-order expectation sum_m w_m (f(mu_m) + sigma2_m / 2 tr Hess f(mu_m))
#' @keywords internal
#' @noRd
nvi_expect2 <- function(mu, sigma2, w, target) {
  mu <- as.matrix(mu)
  keep <- which(w > 0)
  sum(vapply(keep, function(m) {
    w[m] * (target$logp(mu[, m]) + sigma2[m] / 2 * target$hess_trace(mu[, m]))
  }, 0))
}

#' The ELBO of an ONVI / NVI state: entropy bound + second-order expectation
#' @keywords internal
#' @noRd
onvi_elbo <- function(state, target) {
  if (ncol(state$mu) == 0L) return(-Inf)
  mixture_entropy_lb(state$mu, state$sigma2, state$w) +
    nvi_expect2(state$mu, state$sigma2, state$w, target)
}

# The ELBO from the cached pieces of a state.
nvi_elbo_cached <- function(st, D, keep = seq_along(st$w)) {
  w <- st$w[keep] / sum(st$w[keep])
  nvi_entropy_d2(st$d2[keep, keep, drop = FALSE], st$sigma2[keep], w, D) +
    sum(w * (st$f[keep] + st$sigma2[keep] / 2 * st$t[keep]))
}

# --- ONVI ---------------------------------------------------------------------

#' An empty ONVI state
#' @param sigma2_fixed Uniform likelihood: the variance of every component;
#'   NULL: NVI with M = 1 at the first centre offered (see the header).
#' @keywords internal
#' @noRd
onvi_new <- function(target, sigma2_fixed = NULL) {
  stopifnot(inherits(target, "bnmf_nvi_target"))
  if (!is.null(sigma2_fixed) && (!is.numeric(sigma2_fixed) || length(sigma2_fixed) != 1L ||
                                 !is.finite(sigma2_fixed) || sigma2_fixed <= 0)) {
    abort_input("`sigma2_fixed` must be a single number > 0.")
  }
  structure(list(mu = matrix(0, target$D, 0L), sigma2 = numeric(), w = numeric(),
                 elbo = -Inf,
                 trace = data.frame(step = integer(), elbo = numeric(), M = integer(),
                                    accepted = logical(), gain = numeric(),
                                    threshold = numeric(), dropped = integer()),
                 f = numeric(), t = numeric(), d2 = matrix(0, 0L, 0L),
                 likelihood = target$likelihood, tol = 1e-3, steps = 0L,
                 sigma2_fixed = if (target$likelihood == "uniform") sigma2_fixed else NULL),
            class = "bnmf_onvi")
}

# The ELBO of the state with a candidate (d2n: squared distances to the
# centres; f, t its log joint and Hessian trace) at variance s and weight w.
onvi_elbo_with <- function(st, lA, Q, d2n, f, t, s, w, D) {
  if (w <= 0) return(st$elbo)
  lkn <- -D / 2 * log(2 * pi * (st$sigma2 + s)) - d2n / (2 * (st$sigma2 + s))
  lw <- log(st$w)
  l1w <- log1p(-w)
  old <- if (w < 1) -(1 - w) * sum(st$w * logaddexp(l1w + lA, log(w) + lkn)) else 0
  lnn <- -D / 2 * log(4 * pi * s)
  new <- -w * logsumexp(c(l1w + lw + lkn, log(w) + lnn))
  old + new + (1 - w) * Q + w * (f + s * t / 2)
}

# Maximise onvi_elbo_with() over w (and s unless s_fix is given).
onvi_optimise <- function(st, d2n, f, t, D, s_fix = NA_real_) {
  lA <- nvi_log_overlap(st$d2, st$sigma2, st$w, D)
  Q <- sum(st$w * (st$f + st$sigma2 / 2 * st$t))
  s0 <- if (is.finite(s_fix)) s_fix else -D / t
  best_s <- function(w) {
    if (is.finite(s_fix)) return(list(s = s_fix, val = onvi_elbo_with(st, lA, Q, d2n, f, t, s_fix, w, D)))
    o <- stats::optimize(function(ls) onvi_elbo_with(st, lA, Q, d2n, f, t, exp(ls), w, D),
                         log(s0) + c(-15, 5), maximum = TRUE, tol = 1e-6)
    list(s = exp(o$maximum), val = o$objective)
  }
  o <- stats::optimize(function(w) best_s(w)$val, c(0, 1), maximum = TRUE, tol = 1e-8)
  bs <- best_s(o$maximum)
  list(s = bs$s, w = o$maximum, elbo = bs$val)
}

#' Offer one candidate centre to ONVI
#' @param state a "bnmf_onvi" state; theta the candidate; target the target.
#' @param rescale apply the paper's scale optimisation (Gaussian) first.
#' @return list(state, accepted, gain).
#' @keywords internal
#' @noRd
onvi_offer <- function(state, theta, target, rescale = target$likelihood == "gaussian") {
  stopifnot(inherits(state, "bnmf_onvi"), inherits(target, "bnmf_nvi_target"))
  D <- target$D
  if (!is.numeric(theta) || length(theta) != D || anyNA(theta)) {
    abort_input(sprintf("`theta` must be a numeric vector of length %d.", D))
  }
  theta <- as.vector(theta)
  if (rescale) theta <- nvi_rescale(theta, target)
  cen <- nvi_centre(theta, target)
  if (target$likelihood == "uniform" && is.null(state$sigma2_fixed) && is.finite(cen$f)) {
    state$sigma2_fixed <- nvi_uniform_var(theta, target)
  }
  cen$s_fix <- if (target$likelihood == "uniform") state$sigma2_fixed %||% NA_real_ else NA_real_
  M <- length(state$w)
  state$steps <- state$steps + 1L
  res <- list(accepted = FALSE, gain = -Inf, threshold = state$tol, s = NA_real_, w = 0)
  usable <- is.finite(cen$f) && (if (target$likelihood == "gaussian") cen$t < 0 else is.finite(cen$s_fix))
  d2n <- if (M) colSums((state$mu - theta)^2) else numeric()
  if (usable && M == 0L) {
    s <- if (target$likelihood == "gaussian") -D / cen$t else cen$s_fix
    res <- list(accepted = TRUE, gain = Inf, threshold = state$tol, s = s, w = 1,
                elbo = D / 2 * log(4 * pi * s) + cen$f + s * cen$t / 2)
  } else if (usable) {
    opt <- onvi_optimise(state, d2n, cen$f, cen$t, D, cen$s_fix)
    thr <- state$tol
    if (target$likelihood == "uniform") {
      # The entropy rise of a near-duplicate: the nearest centre k moved by
      # sqrt(s_k) in every coordinate, same variance, the mixture's mean log
      # joint (so the expectation term does not move).
      k <- which.min(d2n)
      dup <- state$mu[, k] + sqrt(state$sigma2[k])
      Q <- sum(state$w * (state$f + state$sigma2 / 2 * state$t))
      thr <- onvi_optimise(state, colSums((state$mu - dup)^2), Q, 0, D,
                           state$sigma2[k])$elbo - state$elbo
    }
    res <- list(accepted = opt$elbo - state$elbo > thr, gain = opt$elbo - state$elbo,
                threshold = thr, s = opt$s, w = opt$w, elbo = opt$elbo)
  }
  dropped <- 0L
  if (res$accepted) {
    state$mu <- cbind(state$mu, theta)
    colnames(state$mu) <- NULL
    state$sigma2 <- c(state$sigma2, res$s)
    state$w <- c((1 - res$w) * state$w, res$w)
    state$f <- c(state$f, cen$f)
    state$t <- c(state$t, cen$t)
    state$d2 <- rbind(cbind(state$d2, d2n), c(d2n, 0))
    dimnames(state$d2) <- NULL
    state$elbo <- nvi_elbo_cached(state, D)
    # Drop earlier components whose removal costs less than the absolute
    # criterion (sections 3.1, 4.3), one at a time, the cheapest first.
    repeat {
      M1 <- length(state$w)
      if (M1 < 2L) break
      loss <- vapply(seq_len(M1 - 1L), function(m) {
        state$elbo - nvi_elbo_cached(state, D, keep = seq_len(M1)[-m])
      }, 0)
      m <- which.min(loss)
      if (!(loss[m] < state$tol)) break
      keep <- seq_len(M1)[-m]
      state <- onvi_subset(state, keep)
      state$elbo <- nvi_elbo_cached(state, D)
      dropped <- dropped + 1L
    }
  }
  state$trace[nrow(state$trace) + 1L, ] <- list(state$steps, state$elbo, length(state$w),
                                                res$accepted, res$gain, res$threshold, dropped)
  list(state = state, accepted = res$accepted, gain = res$gain)
}

onvi_subset <- function(state, keep) {
  state$mu <- state$mu[, keep, drop = FALSE]
  state$sigma2 <- state$sigma2[keep]
  state$w <- state$w[keep] / sum(state$w[keep])
  state$f <- state$f[keep]
  state$t <- state$t[keep]
  state$d2 <- state$d2[keep, keep, drop = FALSE]
  state
}

# --- NVI ----------------------------------------------------------------------

# Gradient of the ELBO in mu_n (see the header).
nvi_grad_mean <- function(st, n, target) {
  D <- target$D
  ss <- st$sigma2[n] + st$sigma2
  lk <- -D / 2 * log(2 * pi * ss) - st$d2[n, ] / (2 * ss)
  lA <- nvi_log_overlap(st$d2, st$sigma2, st$w, D)
  coef <- st$w * (exp(lk - lA[n]) + exp(lk - lA)) / ss
  coef[n] <- 0
  mu_n <- st$mu[, n]
  ent <- st$w[n] * (sum(coef) * mu_n - as.vector(st$mu %*% coef))
  ent + st$w[n] * (target$grad(mu_n) + st$sigma2[n] / 2 * target$grad_hess_trace(mu_n))
}

# Gaussian likelihood: the mean of component n by L-BFGS-B on theta >= 0
# (the others fixed), kept only when the ELBO rises.
nvi_mean_lbfgs <- function(st, n, target, maxit = 25L) {
  D <- target$D
  # (L-BFGS-B can return -1e-18 for a bound of 0: clamp.)
  fn <- function(x) -nvi_elbo_cached(nvi_move(st, n, pmax(x, 0), target), D)
  gr <- function(x) -nvi_grad_mean(nvi_move(st, n, pmax(x, 0), target, f = FALSE), n, target)
  o <- stats::optim(st$mu[, n], fn, gr, method = "L-BFGS-B", lower = 0,
                    control = list(maxit = maxit))
  if (-o$value > st$elbo) {
    st <- nvi_move(st, n, pmax(o$par, 0), target)
    st$elbo <- nvi_elbo_cached(st, D)
  }
  st
}

# Move centre n of the state to theta (updating the caches).
nvi_move <- function(st, n, theta, target, f = TRUE) {
  st$mu[, n] <- theta
  d <- colSums((st$mu - theta)^2)
  st$d2[n, ] <- d
  st$d2[, n] <- d
  if (f) st$f[n] <- target$logp(theta)
  st$t[n] <- target$hess_trace(theta)
  st
}

#' NVI of Gershman et al. with M components
#' @param target a "bnmf_nvi_target"; M components; starts a list of theta
#'   (recycled to M; NULL: random starts); iter iterations.
#' @return a "bnmf_onvi" state whose trace holds the ELBO per iteration.
#' @keywords internal
#' @noRd
nvi_fit <- function(target, M, starts = NULL, iter = 100L) {
  stopifnot(inherits(target, "bnmf_nvi_target"))
  M <- check_count(M, "M", min = 1)
  iter <- check_count(iter, "iter", min = 0)
  D <- target$D
  if (is.null(starts)) {
    mean_x <- mean(target$X, na.rm = TRUE)
    starts <- lapply(seq_len(M), function(m) {
      st <- random_start(target$I, target$J, target$R, mean_x)
      c(as.vector(st$W), as.vector(st$H))
    })
  }
  if (is.numeric(starts)) starts <- list(starts)
  if (!is.list(starts) || length(starts) == 0L ||
      !all(vapply(starts, function(s) is.numeric(s) && length(s) == D && !anyNA(s) && all(s >= 0), TRUE))) {
    abort_input(sprintf("`starts` must be a list of non-negative numeric vectors of length %d.", D))
  }
  mu <- matrix(unlist(starts[rep_len(seq_along(starts), M)]), D, M)
  st <- onvi_new(target)
  st$mu <- mu
  st$w <- rep(1 / M, M)
  st$f <- apply(mu, 2L, target$logp)
  if (any(!is.finite(st$f))) abort_input("`starts`: every start must have a finite log joint (feasible).")
  st$t <- apply(mu, 2L, target$hess_trace)
  st$sigma2 <- if (target$likelihood == "gaussian") -D / st$t else rep(nvi_uniform_var(mu[, 1L], target), M)
  if (any(!is.finite(st$sigma2) | st$sigma2 <= 0)) {
    abort_input("`starts`: every start needs a non-zero W and H.")
  }
  st$d2 <- nvi_dist2(mu)
  st$elbo <- nvi_elbo_cached(st, D)
  step <- rep(NA_real_, M)
  trace <- data.frame(step = 0L, elbo = st$elbo, M = M, accepted = TRUE, gain = NA_real_,
                      threshold = NA_real_, dropped = 0L)
  for (it in seq_len(iter)) {
    old <- st$elbo
    for (n in seq_len(M)) {
      if (target$likelihood == "gaussian") {
        st <- nvi_mean_lbfgs(st, n, target)
        next
      }
      g <- nvi_grad_mean(st, n, target)
      if (!any(g != 0)) next
      if (is.na(step[n])) step[n] <- 1e-3 * max(mean(st$mu[, n]), 1e-8) / max(abs(g))
      for (k in 1:40) {
        cand <- pmax(st$mu[, n] + step[n] * g, 0)
        tr <- nvi_move(st, n, cand, target)
        e <- if (is.finite(tr$f[n])) nvi_elbo_cached(tr, D) else -Inf
        if (e >= st$elbo + 1e-4 * sum(g * (cand - st$mu[, n]))) break
        step[n] <- step[n] / 2
      }
      if (e > st$elbo) {
        st <- tr
        st$elbo <- e
        step[n] <- step[n] * 2
      }
    }
    if (target$likelihood == "gaussian") {
      for (n in seq_len(M)) {
        cur <- st$sigma2[n]
        fn <- function(ls) {
          st$sigma2[n] <- exp(ls)
          nvi_elbo_cached(st, D)
        }
        o <- stats::optimize(fn, log(cur) + c(-5, 5), maximum = TRUE, tol = 1e-8)
        if (o$objective > st$elbo) {
          st$sigma2[n] <- exp(o$maximum)
          st$elbo <- o$objective
        }
      }
    }
    trace[nrow(trace) + 1L, ] <- list(it, st$elbo, M, TRUE, st$elbo - old, NA_real_, 0L)
    if (abs(st$elbo - old) < st$tol) break
  }
  st$trace <- trace
  st$steps <- nrow(trace) - 1L
  st
}
