# Exact (quadrature) reference for the tiny Bayesian NMF problem
# I = 1, J = 2, K = 1, used to validate the samplers / fitting code.
#
# Model
#   x_j | w, h, tau ~ N(w h_j, 1/tau)   for the observed j (x_j not NA)
#   w   ~ Exp(rate lambda_w),  h_j ~ Exp(rate lambda_h)  (independent)
#   tau ~ Gamma(shape alpha, rate beta), or tau fixed (known) if `tau` given.
#
# Derivation
# ----------
# 1. Integrate each h_j analytically given (w, tau).  For an observed j
#      Z_j(w, tau) = int_0^Inf lh exp(-lh h) sqrt(tau / 2pi)
#                              exp(-tau (x - w h)^2 / 2) dh.
#    The exponent is -tau x^2/2 + B h - P h^2/2 with P = tau w^2,
#    B = tau w x - lh; completing the square with m = B / P gives
#      -tau x^2/2 + B^2/(2P) - P (h - m)^2 / 2,
#    and int_0^Inf exp(-P (h - m)^2 / 2) dh = sqrt(2pi/P) Phi(m sqrt(P)).
#    With s = sqrt(P) = sqrt(tau) w and z = m s = B / s
#      = sqrt(tau) x - lh / (sqrt(tau) w),  the prefactor
#    lh sqrt(tau/2pi) sqrt(2pi/P) is lh / w, so
#      log Z_j = log lh - log w - tau x^2/2 + z^2/2 + log Phi(z)
#              = log lh - log w - x lh / w + lh^2 / (2 tau w^2) + log Phi(z)
#    (the second form avoids the cancellation of tau x^2/2 with z^2/2).
#    For an unobserved j, Z_j = 1 (the prior integrates to one).
#
#    Given (w, tau, x), h_j is N(m, 1/P) truncated to [0, Inf), i.e.
#    u = s h_j is N(z, 1) truncated to [0, Inf).  With lambda(z) =
#    phi(z) / Phi(z) and g = z + lambda(z):
#      E[u] = g,   E[u^2] = 1 + z g,   Var[u] = 1 + z g - g^2,
#    so E[h_j] = g / s, E[h_j^2] = (1 + z g) / P, and
#    E[w h_j] = g / sqrt(tau), E[(w h_j)^2] = (1 + z g) / tau.
#    For an unobserved j: E[h_j] = 1/lh, Var[h_j] = 1/lh^2.
#
#    Tail stability.  For z <= -4 (t = -z >= 4) everything is taken from
#    Laplace's continued fraction for the Mills ratio
#      R(t) = (1 - Phi(t)) / phi(t) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))).
#    Let r_k = k / (t + r_{k+1}) (evaluated backwards from r_{N+1} = 0).
#    Then 1/R(t) = t + r_1, hence
#      lambda(z) = t + r_1,       g = z + lambda(z) = r_1,
#      log Phi(z) + z^2/2 = log(R(t) phi(t)) + t^2/2
#                         = -log(t + r_1) - log(2pi)/2,
#      1 + z g = 1 - t r_1 = r_2 / (t + r_2) = r_1 r_2,
#      Var[u]  = r_1 (r_2 - r_1),
#    all free of cancellation.  For z > -4 the direct formulas with
#    pnorm(log.p = TRUE) / dnorm(log = TRUE) are used.
#
# 2. What remains is the joint density of (x, w, tau) (or (x, w) when tau is
#    fixed):
#      p(x, w, tau) = lw exp(-lw w) Gamma(tau; alpha, beta) prod_j Z_j(w, tau).
#    It is integrated over v = log w and u = log tau (Jacobian w tau), where
#    the integrand is smooth (analytic) and decays exponentially (to the
#    left) or doubly exponentially (to the right) in every direction.  For
#    such integrands the plain trapezoidal rule on the real line converges
#    geometrically fast in the step size, so a uniform grid over a box that
#    contains everything within exp(-60) of the maximum is used; the step
#    is at most 0.1 and at most one fifth of the conditional posterior
#    width at the mode (from the Hessian of the log integrand), so it also
#    copes with narrow posteriors.  The box is found on a coarse grid plus
#    optim().  Everything is in log space; the maximum is subtracted before
#    exponentiating.  As a built-in error estimate the result is recomputed
#    on the sub-grid of every other node (step doubled): for a geometrically
#    convergent rule the fine result is far more accurate than that
#    difference, which is returned (relative) in
#    attr(result, "quadrature")$rel_diff.  The step comes from the curvature
#    at the global mode; a narrower secondary mode (e.g. a bimodal tau
#    posterior) shows up in this difference, so while it exceeds 1e-10 the
#    step is halved (at most 3 times); a warning is given if it stays above
#    1e-7 or if the integrand is not negligible on the box boundary.
#
# 3. Posterior moments.  For a function f of (w, h, tau) we average the
#    conditional moments E[f | w, tau, x] (closed form, step 1) over the
#    (v, u) grid weights.  Variances are computed as
#      Var f = E[Var(f | w, tau)] + Var(E[f | w, tau])
#    with the second term centred at the posterior mean (no cancellation).
#
# log_evidence includes all normalising constants:
#   log p(x) = log int int p(x, w, tau) dw dtau.

# log Phi(z) + z^2/2, g = z + phi(z)/Phi(z), e2 = 1 + z g and vu = Var(u)
# for a standard normal N(z, 1) truncated to [0, Inf); vectorised in z.
.exact_tn <- function(z, n_cf = 200L) {
  lmz <- g <- e2 <- vu <- numeric(length(z))
  lo <- z <= -4
  if (any(!lo)) {
    zz <- z[!lo]
    lp <- stats::pnorm(zz, log.p = TRUE)
    lam <- exp(stats::dnorm(zz, log = TRUE) - lp)
    gg <- zz + lam
    lmz[!lo] <- lp + zz^2 / 2
    g[!lo] <- gg
    e2[!lo] <- 1 + zz * gg
    vu[!lo] <- 1 + zz * gg - gg^2
  }
  if (any(lo)) {
    t <- -z[lo]
    r <- numeric(length(t))
    r2 <- r
    for (k in n_cf:1L) {
      r2 <- r
      r <- k / (t + r)
    }
    # now r = r_1, r2 = r_2
    lmz[lo] <- -log(t + r) - 0.5 * log(2 * pi)
    g[lo] <- r
    e2[lo] <- r * r2
    vu[lo] <- r * (r2 - r)
  }
  list(lmz = lmz, g = g, e2 = e2, vu = vu)
}

# Log integrand (in v = log w, u = log tau, Jacobian included) and the
# conditional moments given (w, tau), for vectors v, u of equal length.
.exact_terms <- function(v, u, x, lw, lh, alpha, beta, tau_fixed, moments) {
  w <- exp(v)
  tau <- if (is.null(tau_fixed)) exp(u) else rep(tau_fixed, length(v))
  lf <- log(lw) - lw * w + v
  if (is.null(tau_fixed)) {
    lf <- lf + alpha * log(beta) - lgamma(alpha) + alpha * u - beta * tau
  }
  out <- list()
  for (j in 1:2) {
    if (is.na(x[j])) {
      if (moments) {
        out[[j]] <- list(Eh = rep(1 / lh, length(v)),
                         Vh = rep(1 / lh^2, length(v)),
                         Ewh = w / lh, Vwh = w^2 / lh^2)
      }
      next
    }
    xj <- x[j]
    st <- sqrt(tau)
    z <- st * xj - lh / (st * w)
    tn <- .exact_tn(z)
    lo <- z <= -4
    lz <- numeric(length(z))
    # log Z_j, two algebraically equal forms (see header)
    hi <- !lo
    lz[hi] <- log(lh) - v[hi] - xj * lh / w[hi] +
      lh^2 / (2 * tau[hi] * w[hi]^2) + stats::pnorm(z[hi], log.p = TRUE)
    lz[lo] <- log(lh) - v[lo] - tau[lo] * xj^2 / 2 + tn$lmz[lo]
    lf <- lf + lz
    if (moments) {
      s <- st * w
      out[[j]] <- list(Eh = tn$g / s, Vh = tn$vu / s^2,
                       Ewh = tn$g / st, Vwh = tn$vu / tau)
    }
  }
  list(lf = lf, w = w, tau = tau, h = out)
}

exact_tiny_nmf <- function(x, lambda_w = 1, lambda_h = 1, alpha = 1,
                           beta = 1, tau = NULL) {
  x <- as.numeric(x)
  stopifnot(length(x) == 2L, all(is.finite(x[!is.na(x)])),
            length(lambda_w) == 1L, lambda_w > 0,
            length(lambda_h) == 1L, lambda_h > 0)
  fixed <- !is.null(tau)
  if (fixed) {
    stopifnot(length(tau) == 1L, is.finite(tau), tau > 0)
  } else {
    stopifnot(length(alpha) == 1L, alpha > 0, length(beta) == 1L, beta > 0)
  }
  lw <- lambda_w
  lh <- lambda_h
  obs <- !is.na(x)
  n <- sum(obs)
  xo <- x[obs]
  lf_fun <- function(v, u) {
    .exact_terms(v, u, x, lw, lh, alpha, beta, tau, moments = FALSE)$lf
  }

  ## ---- locate the posterior mass in (v, u) -------------------------------
  xs <- if (n > 0) max(abs(xo), 1e-8) else 1
  vc <- log(max(1 / lw, sqrt(lh * xs / lw)))
  v_rng <- vc + c(-45, 6)
  if (fixed) {
    u_rng <- c(0, 0)
  } else {
    sh <- alpha + n / 2
    u_hi <- log(stats::qgamma(1e-15, sh, beta, lower.tail = FALSE)) + 1
    u_lo <- log(stats::qgamma(1e-20, sh, beta + sum(xo^2) / 2)) - 3
    if (!is.finite(u_lo) || u_lo < u_hi - 300) u_lo <- u_hi - 300
    u_rng <- c(u_lo, u_hi)
  }
  nc <- 241L
  vg <- seq(v_rng[1], v_rng[2], length.out = nc)
  ug <- if (fixed) 0 else seq(u_rng[1], u_rng[2], length.out = nc)
  dv_c <- vg[2] - vg[1]
  du_c <- if (fixed) 0 else ug[2] - ug[1]
  VV <- rep(vg, times = length(ug))
  UU <- rep(ug, each = length(vg))
  lfc <- lf_fun(VV, UU)
  ib <- which.max(lfc)
  if (fixed) {
    negf <- function(p) -lf_fun(p[1], 0)
    opt <- stats::optim(VV[ib], negf, method = "BFGS")
    hes <- stats::optimHess(opt$par, negf)
  } else {
    negf <- function(p) -lf_fun(p[1], p[2])
    opt <- stats::optim(c(VV[ib], UU[ib]), negf, method = "BFGS")
    hes <- stats::optimHess(opt$par, negf)
  }
  M <- max(lfc[ib], -opt$value)
  keep <- lfc > M - 60
  vb <- range(VV[keep]) + c(-1, 1) * dv_c
  ub <- range(UU[keep]) + c(-1, 1) * du_c
  dh <- diag(hes)
  # conditional sd along each axis at the mode (smaller than marginal)
  csd <- ifelse(is.finite(dh) & dh > 0, 1 / sqrt(pmax(dh, 1e-300)), 1)
  vb <- range(vb, opt$par[1] + c(-12, 12) * csd[1])
  step_v <- min(0.1, csd[1] / 5)
  if (!fixed) {
    ub <- range(ub, opt$par[2] + c(-12, 12) * csd[2])
    step_u <- min(0.1, csd[2] / 5)
  }

  ## ---- fine trapezoidal grid ---------------------------------------------
  mk <- function(r, st) {
    nn <- 2L * ceiling((r[2] - r[1]) / st / 2) + 1L
    seq(r[1], r[2], length.out = min(nn, 8001L))
  }
  run_grid <- function(step_v, step_u) {
    vf <- mk(vb, step_v)
    uf <- if (fixed) 0 else mk(ub, step_u)
    V <- rep(vf, times = length(uf))
    U <- rep(uf, each = length(vf))
    tr <- .exact_terms(V, U, x, lw, lh, alpha, beta, tau, moments = TRUE)
    lf <- tr$lf
    mx <- max(lf)
    dA <- (vf[2] - vf[1]) * (if (fixed) 1 else uf[2] - uf[1])
    ee <- exp(lf - mx)
    # sub-grid (every other node, step doubled) for the error estimate
    iv <- rep(seq_along(vf) %% 2L == 1L, times = length(uf))
    iu <- if (fixed) TRUE else rep(seq_along(uf) %% 2L == 1L, each = length(vf))
    sub <- iv & iu
    Zf <- sum(ee) * dA
    Zs <- sum(ee[sub]) * dA * (if (fixed) 2 else 4)
    wt <- ee / sum(ee)
    wts <- ee[sub] / sum(ee[sub])
    # edge check: integrand on the box boundary must be negligible
    edge <- V == vf[1] | V == vf[length(vf)]
    if (!fixed) edge <- edge | U == uf[1] | U == uf[length(uf)]
    edge_max <- max(lf[edge]) - mx

    mom <- function(cm, cv, wt) {
      m <- sum(wt * cm)
      c(mean = m, sd = sqrt(sum(wt * cv) + sum(wt * (cm - m)^2)))
    }
    both <- function(cm, cv = 0) {
      if (length(cv) == 1L) cv <- rep(cv, length(cm))
      list(f = mom(cm, cv, wt), s = mom(cm[sub], cv[sub], wts))
    }
    res_W <- both(tr$w)
    res_H <- lapply(1:2, function(j) both(tr$h[[j]]$Eh, tr$h[[j]]$Vh))
    res_WH <- lapply(1:2, function(j) both(tr$h[[j]]$Ewh, tr$h[[j]]$Vwh))
    res_T <- if (fixed) NULL else both(tr$tau)
    fine <- c(res_W$f, unlist(lapply(res_H, `[[`, "f")),
              unlist(lapply(res_WH, `[[`, "f")), if (!fixed) res_T$f)
    coarse <- c(res_W$s, unlist(lapply(res_H, `[[`, "s")),
                unlist(lapply(res_WH, `[[`, "s")), if (!fixed) res_T$s)
    rel_diff <- max(abs(log(Zs) - log(Zf)),
                    abs(coarse - fine) / pmax(abs(fine), 1e-300))
    list(vf = vf, uf = uf, log_ev = mx + log(Zf), res_W = res_W,
         res_H = res_H, res_WH = res_WH, res_T = res_T, rel_diff = rel_diff,
         edge_max = edge_max, n_tot = length(V))
  }
  # The step comes from the curvature at the global mode; a secondary mode
  # may be narrower, which the step-doubling check detects: then refine.
  su <- if (fixed) NA else step_u
  for (it in 0:3) {
    g <- run_grid(step_v, su)
    if (g$rel_diff <= 1e-10 || g$n_tot * 4 > 4e6) break
    step_v <- step_v / 2
    su <- su / 2
  }
  if (g$edge_max > -30) {
    warning("exact_tiny_nmf: integrand not negligible on the grid boundary")
  }
  if (g$rel_diff > 1e-7) {
    warning("exact_tiny_nmf: quadrature self-check difference ",
            signif(g$rel_diff, 3))
  }
  vf <- g$vf
  uf <- g$uf
  res_W <- g$res_W
  res_H <- g$res_H
  res_WH <- g$res_WH
  res_T <- g$res_T
  log_ev <- g$log_ev
  rel_diff <- g$rel_diff
  edge_max <- g$edge_max

  out <- list(
    log_evidence = log_ev,
    W = unname(res_W$f["mean"]),
    H = unname(sapply(res_H, function(r) r$f["mean"])),
    WH = unname(sapply(res_WH, function(r) r$f["mean"])),
    tau = if (fixed) tau else unname(res_T$f["mean"]),
    W_sd = unname(res_W$f["sd"]),
    H_sd = unname(sapply(res_H, function(r) r$f["sd"])),
    WH_sd = unname(sapply(res_WH, function(r) r$f["sd"])),
    tau_sd = if (fixed) 0 else unname(res_T$f["sd"])
  )
  attr(out, "quadrature") <- list(
    nodes = c(v = length(vf), u = length(uf)), step = c(vf[2] - vf[1],
    if (fixed) NA else uf[2] - uf[1]), box_v = range(vf),
    box_u = if (fixed) NA else range(uf), edge_max = edge_max,
    rel_diff = rel_diff)
  out
}

# ---- Every method's headline output against the same exact reference ------
#
# exact_check(method, problem) fits the tiny problem (I = 1, J = 2, K = 1)
# with bnmf(method = ) and compares what the method reports with the exact
# answer:
#   gibbs  posterior means of W, H, WH (fitted()) and tau, and the second
#          moments implied by the reported posterior sds, against the
#          quadrature of exact_tiny_nmf(); |z| < 4.5 with batch-means
#          Monte Carlo standard errors of the kept draws;
#   icm    the posterior mode (W, H, tau and the log posterior) against the
#          local modes of exact_tiny_modes(); relative error < 1e-6.
# To add a method, add a branch to exact_check() (e.g. VB: the ELBO below
# exact_tiny_nmf()$log_evidence, and its posterior means against the
# quadrature, with the tolerance the method's approximation warrants).

exact_tiny_problems <- list(
  moderate = list(x = c(1.2, 2.5), lambda = 1, alpha = 2, beta = 1),
  small_strong_prior = list(x = c(0.3, 0.1), lambda = 2, alpha = 1, beta = 1),
  large_values = list(x = c(40, 25), lambda = 0.2, alpha = 3, beta = 2)
)

# The local modes of the joint posterior of the tiny problem, by an
# independent route: h_j given (w, tau) has the closed-form mode
# max(0, (tau w x_j - lambda_h) / (tau w^2)) and tau given (w, h) the mode
# (alpha - 1 + n / 2) / (beta + SSE / 2), so the log density profiled over h
# and tau is a function of v = log w alone. Its local maxima on a fine grid
# are polished with optim() in (log w, log tau); the boundary w = 0 (h = 0,
# the prior mode) is a local mode as well. Returns the modes, highest log
# density first, as a data frame (W, H1, H2, tau, logpost, interior).
exact_tiny_modes <- function(x, lambda_w = 1, lambda_h = 1, alpha = 1, beta = 1) {
  x <- as.numeric(x)
  stopifnot(length(x) == 2L, !anyNA(x), alpha + length(x) / 2 > 1)
  log_joint <- function(w, h, tau) {
    sum(stats::dnorm(x, w * h, 1 / sqrt(tau), log = TRUE)) +
      stats::dexp(w, lambda_w, log = TRUE) + sum(stats::dexp(h, lambda_h, log = TRUE)) +
      stats::dgamma(tau, alpha, rate = beta, log = TRUE)
  }
  h_mode <- function(w, tau) pmax(0, (tau * w * x - lambda_h) / (tau * w^2))
  negf <- function(p) {
    w <- exp(p[1L])
    tau <- exp(p[2L])
    -log_joint(w, h_mode(w, tau), tau)
  }
  v <- seq(-10, 8, by = 0.02)
  prof <- lapply(v, function(vv) stats::optimize(function(u) negf(c(vv, u)), c(-20, 20)))
  lp <- -vapply(prof, `[[`, 0, "objective")
  u <- vapply(prof, `[[`, 0, "minimum")
  n <- length(v)
  peaks <- which(lp[2:(n - 1)] > lp[1:(n - 2)] & lp[2:(n - 1)] >= lp[3:n]) + 1L
  modes <- list()
  for (i in peaks) {
    opt <- stats::optim(c(v[i], u[i]), negf, method = "Nelder-Mead",
                        control = list(reltol = 1e-15, maxit = 5000))
    opt <- stats::optim(opt$par, negf, method = "BFGS", control = list(reltol = 1e-16))
    w <- exp(opt$par[1L])
    tau <- exp(opt$par[2L])
    h <- h_mode(w, tau)
    modes[[length(modes) + 1L]] <- data.frame(W = w, H1 = h[1L], H2 = h[2L], tau = tau,
                                              logpost = log_joint(w, h, tau), interior = TRUE)
  }
  tau0 <- (alpha - 1 + length(x) / 2) / (beta + sum(x^2) / 2)
  modes[[length(modes) + 1L]] <- data.frame(W = 0, H1 = 0, H2 = 0, tau = tau0,
                                            logpost = log_joint(0, c(0, 0), tau0),
                                            interior = FALSE)
  m <- do.call(rbind, modes)
  m[order(-m$logpost), , drop = FALSE]
}

exact_check <- function(method, problem, seed = 1) {
  p <- problem
  X <- matrix(p$x, 1, 2)
  withr::local_seed(seed)
  switch(method,
    gibbs = {
      fit <- bnmf(X, rank = 1, method = "gibbs", prior = exponential(p$lambda),
                  noise = gamma_prior(p$alpha, p$beta), iter = 61000, burnin = 1000,
                  keep = "draws", progress = FALSE)
      ex <- exact_tiny_nmf(p$x, p$lambda, p$lambda, p$alpha, p$beta)
      w <- fit$draws[[1L]]$W[1L, ]
      h <- t(fit$draws[[1L]]$H)
      tau <- bnmf:::kept_trace(fit)$tau
      n <- fit$n_draws
      second <- function(m, s, n) s^2 * (n - 1) / n + m^2
      wh <- fitted(fit)[1L, ]
      wh_sd <- predict(fit, se.fit = TRUE)$se.fit[1L, ]
      # The moments of WH come from every wh_thin-th kept draw (the first
      # included): their Monte Carlo error is that of those draws.
      iw <- seq(1L, n, by = fit$settings$wh_thin)
      stopifnot(fit$moments$WH$n == length(iw))
      wh1 <- w[iw] * h[iw, 1L]
      wh2 <- w[iw] * h[iw, 2L]
      res <- data.frame(
        quantity = c("W", "H1", "H2", "WH1", "WH2", "tau", "W^2", "WH1^2", "WH2^2", "tau^2"),
        estimate = c(fit$W[1L, 1L], fit$H[1L, ], wh, fit$tau,
                     second(fit$W[1L, 1L], fit$W_sd[1L, 1L], n),
                     second(wh, wh_sd, length(iw)), second(fit$tau, fit$tau_sd, n)),
        reference = c(ex$W, ex$H, ex$WH, ex$tau, ex$W_sd^2 + ex$W^2, ex$WH_sd^2 + ex$WH^2,
                      ex$tau_sd^2 + ex$tau^2),
        scale = c(batch_se(w), batch_se(h[, 1L]), batch_se(h[, 2L]), batch_se(wh1),
                  batch_se(wh2), batch_se(tau), batch_se(w^2),
                  batch_se(wh1^2), batch_se(wh2^2), batch_se(tau^2)))
      res$stat <- abs(res$estimate - res$reference) / res$scale
      res$limit <- 4.5
      res
    },
    icm = {
      fit <- bnmf(X, rank = 1, method = "icm", prior = exponential(p$lambda),
                  noise = gamma_prior(p$alpha, p$beta), chains = 5, tol = 1e-14,
                  iter = 50000, progress = FALSE)
      # ICM climbs to a local mode from a warm start (non-negative least
      # squares), so it must stop at the highest interior mode when there is
      # one (the collapsed point w = 0 may be higher: the MAP problem of
      # NMF has that degenerate mode), and at w = 0 otherwise.
      modes <- exact_tiny_modes(p$x, p$lambda, p$lambda, p$alpha, p$beta)
      ref <- if (any(modes$interior)) modes[modes$interior, ][1L, ] else modes[1L, ]
      res <- data.frame(
        quantity = c("W", "H1", "H2", "tau", "logpost"),
        estimate = c(fit$W[1L, 1L], fit$H[1L, ], fit$tau, fit$logpost),
        reference = c(ref$W, ref$H1, ref$H2, ref$tau, ref$logpost))
      res$scale <- pmax(abs(res$reference), 1e-3)
      res$stat <- abs(res$estimate - res$reference) / res$scale
      res$limit <- 1e-6
      res
    },
    stop("exact_check(): no exact check for method \"", method, "\" yet")
  )
}

expect_exact <- function(res, label = "") {
  bad <- !(res$stat < res$limit)
  expect(!any(bad), sprintf("%s: %s", label, paste(
    sprintf("%s = %.6g, exact %.6g (stat %.3g, limit %g)", res$quantity[bad],
            res$estimate[bad], res$reference[bad], res$stat[bad], res$limit[bad]),
    collapse = "; ")))
  invisible(res)
}

# The tiny problem (I = 1, J = 2, K = 1) with an ARD rate lambda ~
# Gamma(a0, b0) shared by w, h1 and h2: given lambda exact_tiny_nmf() applies,
# and lambda is integrated on the log grid u (trapezoidal rule, which
# converges geometrically for this smooth integrand). Returns the grid
# (lambda, u, step), the exact results given each lambda (`given`), the log
# joint density of (x, u) on the grid (`lp`: its posterior is exp(lp)
# normalised) and the log evidence log p(x).
exact_tiny_ard <- function(x, a0, b0, alpha, beta, u = seq(-6, 4, by = 0.5)) {
  lam <- exp(u)
  given <- lapply(lam, function(l) exact_tiny_nmf(x, lambda_w = l, lambda_h = l,
                                                  alpha = alpha, beta = beta))
  lp <- vapply(given, function(e) e$log_evidence, 0) + dgamma(lam, a0, b0, log = TRUE) + u
  m <- max(lp)
  list(lambda = lam, u = u, given = given, lp = lp,
       log_evidence = m + log(sum(exp(lp - m)) * (u[2L] - u[1L])))
}
