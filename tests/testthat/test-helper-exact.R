# Independent verification of exact_tiny_nmf() (helper-exact.R), the exact
# reference for the I = 1, J = 2, K = 1 Bayesian NMF model, so that other
# tests can trust it.  Three independent routes:
#   1. brute-force 4-D (3-D for fixed tau) tensor Gauss-Legendre quadrature
#      over (log w, log h1, log h2, log tau), with no analytic integration;
#   2. prior-sampling Monte Carlo with proper (delta-method) standard errors;
#   3. the missing-data case against closed-form identities and a direct
#      2-D nested stats::integrate() of the 1 x 1 problem.

# ---- tools ---------------------------------------------------------------

# Gauss-Legendre nodes/weights on [a, b] (Golub-Welsch).
gl_nodes <- function(n, a, b) {
  k <- seq_len(n - 1L)
  off <- k / sqrt(4 * k^2 - 1)
  J <- matrix(0, n, n)
  J[cbind(k, k + 1L)] <- off
  J[cbind(k + 1L, k)] <- off
  e <- eigen(J, symmetric = TRUE)
  o <- order(e$values)
  list(x = (a + b) / 2 + (b - a) / 2 * e$values[o],
       w = (b - a) / 2 * 2 * e$vectors[1, o]^2)
}

# Brute-force tensor-product Gauss-Legendre quadrature of
#   p(x, w, h1, h2, tau) over v = log w, l_j = log h_j, u = log tau
# (Jacobians included).  No analytic integration: every variable is a
# quadrature dimension.  Because the integrand is a product, the 4-D sum is
# evaluated as nested matrix-vector sums (an exact rearrangement of the same
# tensor-product sum).  Returns the log evidence and raw moments.
brute_tiny <- function(x, lw = 1, lh = 1, alpha = 1, beta = 1, tau = NULL,
                       nw = 300L, nh = 300L, nt = 80L) {
  x <- as.numeric(x)
  gv <- gl_nodes(nw, log(1e-12 / lw), log(60 / lw))
  gh <- gl_nodes(nh, log(1e-12 / lh), log(60 / lh))
  w <- exp(gv$x)
  h <- exp(gh$x)
  pw <- gv$w * lw * exp(-lw * w) * w          # weight x prior x Jacobian
  ph <- gh$w * lh * exp(-lh * h) * h
  if (is.null(tau)) {
    gt <- gl_nodes(nt, log(stats::qgamma(1e-15, alpha, beta)),
                   log(stats::qgamma(1e-15, alpha, beta, lower.tail = FALSE)))
    tv <- exp(gt$x)
    pt <- gt$w * stats::dgamma(tv, alpha, beta) * tv
  } else {
    tv <- tau
    pt <- 1
  }
  hk <- cbind(ph, ph * h, ph * h^2)
  acc <- list(Z = 0, w = 0, w2 = 0, t = 0, t2 = 0,
              h = matrix(0, 2, 2), wh = matrix(0, 2, 2))
  for (k in seq_along(tv)) {
    S <- lapply(1:2, function(j) {
      if (is.na(x[j])) {
        return(matrix(colSums(hk), nw, 3, byrow = TRUE))
      }
      A <- stats::dnorm(x[j], outer(w, h), 1 / sqrt(tv[k]))
      A %*% hk                                   # nw x 3: sums of h^0,1,2
    })
    base <- pw * pt[k]
    b0 <- base * S[[1]][, 1] * S[[2]][, 1]
    acc$Z <- acc$Z + sum(b0)
    acc$w <- acc$w + sum(b0 * w)
    acc$w2 <- acc$w2 + sum(b0 * w^2)
    acc$t <- acc$t + sum(b0) * tv[k]
    acc$t2 <- acc$t2 + sum(b0) * tv[k]^2
    for (j in 1:2) {
      o <- S[[3 - j]][, 1]
      acc$h[j, ] <- acc$h[j, ] + c(sum(base * o * S[[j]][, 2]),
                                   sum(base * o * S[[j]][, 3]))
      acc$wh[j, ] <- acc$wh[j, ] + c(sum(base * o * w * S[[j]][, 2]),
                                     sum(base * o * w^2 * S[[j]][, 3]))
    }
  }
  Z <- acc$Z
  list(log_evidence = log(Z),
       m1 = c(W = acc$w, H1 = acc$h[1, 1], H2 = acc$h[2, 1],
              WH1 = acc$wh[1, 1], WH2 = acc$wh[2, 1], tau = acc$t) / Z,
       m2 = c(W = acc$w2, H1 = acc$h[1, 2], H2 = acc$h[2, 2],
              WH1 = acc$wh[1, 2], WH2 = acc$wh[2, 2], tau = acc$t2) / Z)
}

# Raw first and second moments of the exact reference, same layout.
exact_moments <- function(r) {
  m1 <- c(W = r$W, H1 = r$H[1], H2 = r$H[2], WH1 = r$WH[1], WH2 = r$WH[2],
          tau = r$tau)
  sd <- c(r$W_sd, r$H_sd, r$WH_sd, r$tau_sd)
  list(m1 = m1, m2 = sd^2 + m1^2)
}

# Prior-sampling Monte Carlo: evidence = mean likelihood; posterior moments
# by self-normalised importance sampling; delta-method standard errors.
mc_tiny <- function(x, lw = 1, lh = 1, alpha = 1, beta = 1, tau = NULL,
                    n = 1e6, seed = 1) {
  set.seed(seed)
  w <- stats::rexp(n, lw)
  h1 <- stats::rexp(n, lh)
  h2 <- stats::rexp(n, lh)
  tv <- if (is.null(tau)) stats::rgamma(n, alpha, beta) else rep(tau, n)
  L <- rep(1, n)
  if (!is.na(x[1])) L <- L * stats::dnorm(x[1], w * h1, 1 / sqrt(tv))
  if (!is.na(x[2])) L <- L * stats::dnorm(x[2], w * h2, 1 / sqrt(tv))
  mL <- mean(L)
  f <- list(W = w, H1 = h1, H2 = h2, WH1 = w * h1, WH2 = w * h2, tau = tv)
  sn <- function(g) {
    m <- sum(L * g) / sum(L)
    c(est = m, se = sqrt(sum(L^2 * (g - m)^2)) / sum(L))
  }
  list(log_evidence = c(est = log(mL), se = stats::sd(L) / sqrt(n) / mL),
       m1 = sapply(f, sn), m2 = sapply(f, function(g) sn(g^2)))
}

rel <- function(a, b) max(abs(a - b) / abs(b))

settings <- list(
  gamma_a = list(x = c(1.2, 2.5), lw = 1, lh = 1, alpha = 2, beta = 1,
                 tau = NULL),
  gamma_b = list(x = c(0.3, 0.1), lw = 2, lh = 2, alpha = 2, beta = 1,
                 tau = NULL),
  gamma_c = list(x = c(0.8, 3.0), lw = 0.5, lh = 1.5, alpha = 3, beta = 2,
                 tau = NULL),
  fixed = list(x = c(1.2, 2.5), lw = 1, lh = 1, alpha = 1, beta = 1,
               tau = 4)
)
run_exact <- function(s) {
  exact_tiny_nmf(s$x, s$lw, s$lh, s$alpha, s$beta, s$tau)
}

# ---- sanity ----------------------------------------------------------------

test_that("exact_tiny_nmf returns finite fields and a converged quadrature", {
  for (s in settings) {
    r <- expect_silent(run_exact(s))
    expect_named(r, c("log_evidence", "W", "H", "WH", "tau", "W_sd", "H_sd",
                      "WH_sd", "tau_sd"))
    expect_true(all(is.finite(unlist(r))))
    expect_length(r$H, 2)
    expect_length(r$WH_sd, 2)
    q <- attr(r, "quadrature")
    expect_lt(q$rel_diff, 1e-9)
    expect_lt(q$edge_max, -30)
  }
  r <- run_exact(settings$fixed)
  expect_identical(r$tau, 4)
  expect_identical(r$tau_sd, 0)
})

test_that("tail-stable truncated-normal pieces match direct formulas", {
  z <- c(-4, -6, -9, -12)
  a <- .exact_tn(z)
  lp <- pnorm(z, log.p = TRUE)
  g <- z + exp(dnorm(z, log = TRUE) - lp)
  expect_equal(a$lmz, lp + z^2 / 2, tolerance = 1e-12)
  expect_equal(a$g, g, tolerance = 1e-10)
  expect_equal(a$e2, 1 + z * g, tolerance = 1e-8)
  # continuity across the switch at z = -4
  b <- .exact_tn(c(-4 - 1e-12, -4 + 1e-12))
  expect_equal(b$g[1], b$g[2], tolerance = 1e-9)
  expect_equal(b$vu[1], b$vu[2], tolerance = 1e-9)
  # far tail: truncated N(z, 1) on [0, Inf) -> Exp(rate -z)
  a <- .exact_tn(-1e6)
  expect_equal(a$g, 1e-6, tolerance = 1e-9)
  expect_equal(a$vu, 1e-12, tolerance = 1e-9)
  # closed-form h-integral Z_j against integrate() at one (w, tau)
  w <- 0.7; tv <- 3; x1 <- 1.2; lh <- 1.3
  t1 <- .exact_terms(log(w), log(tv), c(x1, NA), 1, lh, 1, 1, NULL, TRUE)
  base <- log(1) - w + log(w) + 0 - 0 + log(tv) - tv
  num <- integrate(function(h) lh * exp(-lh * h) *
                     dnorm(x1, w * h, 1 / sqrt(tv)), 0, Inf,
                   rel.tol = 1e-12)$value
  expect_equal(t1$lf - base, log(num), tolerance = 1e-10)
  m1 <- integrate(function(h) h * lh * exp(-lh * h) *
                    dnorm(x1, w * h, 1 / sqrt(tv)), 0, Inf,
                  rel.tol = 1e-12)$value / num
  m2 <- integrate(function(h) h^2 * lh * exp(-lh * h) *
                    dnorm(x1, w * h, 1 / sqrt(tv)), 0, Inf,
                  rel.tol = 1e-12)$value / num
  expect_equal(t1$h[[1]]$Eh, m1, tolerance = 1e-9)
  expect_equal(t1$h[[1]]$Vh, m2 - m1^2, tolerance = 1e-9)
})

# ---- 1. brute-force quadrature ---------------------------------------------

# (Observed agreement is ~1e-9 relative or better; the brute force itself
# is accurate to ~1e-9 at these node counts.)
for (nm in names(settings)) {
  test_that(paste("exact reference agrees with brute-force quadrature:", nm), {
    s <- settings[[nm]]
    r <- run_exact(s)
    e <- exact_moments(r)
    b <- brute_tiny(s$x, s$lw, s$lh, s$alpha, s$beta, s$tau)
    expect_equal(r$log_evidence, b$log_evidence, tolerance = 1e-8,
                 label = paste(nm, "log_evidence"))
    expect_lt(rel(e$m1, b$m1), 1e-8)
    expect_lt(rel(e$m2, b$m2), 1e-8)
  })
}

# ---- 2. Monte Carlo ----------------------------------------------------------

test_that("exact reference agrees with prior-sampling Monte Carlo (4 SE)", {
  skip_on_cran()
  for (nm in names(settings)) {
    s <- settings[[nm]]
    r <- run_exact(s)
    e <- exact_moments(r)
    mc <- mc_tiny(s$x, s$lw, s$lh, s$alpha, s$beta, s$tau, n = 1e6,
                  seed = 20240 + match(nm, names(settings)))
    # the check must be informative: small relative standard errors
    expect_lt(mc$log_evidence["se"], 0.01)
    expect_lt(max(mc$m1["se", ] / abs(mc$m1["est", ])), 0.02)
    z_ev <- (mc$log_evidence["est"] - r$log_evidence) / mc$log_evidence["se"]
    expect_lt(abs(unname(z_ev)), 4, label = paste(nm, "log_evidence z"))
    keep <- if (is.null(s$tau)) TRUE else names(e$m1) != "tau"
    z1 <- ((mc$m1["est", ] - e$m1) / mc$m1["se", ])[keep]
    z2 <- ((mc$m2["est", ] - e$m2) / mc$m2["se", ])[keep]
    expect_lt(max(abs(z1)), 4, label = paste(nm, "first moments z"))
    expect_lt(max(abs(z2)), 4, label = paste(nm, "second moments z"))
  }
})

# ---- 3. missing data -------------------------------------------------------

# Direct 2-D nested integrate() of the 1 x 1 problem (x1 alone): returns
# log p(x1) and E[w | x1].  With a Gamma prior tau is integrated in closed
# form (a different analytic step from exact_tiny_nmf, which integrates h):
#   int Gamma(tau; a, b) N(x; wh, 1/tau) dtau
#     = b^a Gamma(a + 1/2) / (Gamma(a) sqrt(2 pi)) (b + (x - wh)^2/2)^-(a+1/2).
one_by_one <- function(x1, lw, lh, alpha, beta, tau = NULL) {
  lik <- if (is.null(tau)) {
    function(w, h) exp(alpha * log(beta) + lgamma(alpha + 0.5) -
                         lgamma(alpha) - 0.5 * log(2 * pi) -
                         (alpha + 0.5) * log(beta + (x1 - w * h)^2 / 2))
  } else {
    function(w, h) stats::dnorm(x1, w * h, 1 / sqrt(tau))
  }
  inner <- function(w) {
    vapply(w, function(wi) {
      f <- function(h) lh * exp(-lh * h) * lik(wi, h)
      pk <- max(x1, 0) / wi          # split at the ridge w h = x1
      integrate(f, 0, pk, rel.tol = 1e-11, abs.tol = 0)$value +
        integrate(f, pk, Inf, rel.tol = 1e-11, abs.tol = 0)$value
    }, 0) * lw * exp(-lw * w)
  }
  Z <- integrate(inner, 0, Inf, rel.tol = 1e-10, abs.tol = 0)$value
  Ew <- integrate(function(w) w * inner(w), 0, Inf, rel.tol = 1e-10,
                  abs.tol = 0)$value / Z
  c(log_evidence = log(Z), W = Ew)
}

test_that("missing x2: h2 keeps its prior, WH2 = W / lambda_h exactly", {
  for (s in list(list(x = c(1.2, NA), lw = 1, lh = 1, alpha = 2, beta = 1,
                      tau = NULL),
                 list(x = c(0.3, NA), lw = 2, lh = 0.7, alpha = 2, beta = 1,
                      tau = NULL),
                 list(x = c(1.2, NA), lw = 1.5, lh = 1, alpha = 1, beta = 1,
                      tau = 4))) {
    r <- run_exact(s)
    lh <- s$lh
    expect_equal(r$H[2], 1 / lh, tolerance = 1e-10)
    expect_equal(r$H_sd[2], 1 / lh, tolerance = 1e-10)
    # E[w h2 | x] = E[w E[h2 | w, tau, x] | x] = E[w | x] / lh
    expect_equal(r$WH[2], r$W / lh, tolerance = 1e-10)
    # E[(w h2)^2] = E[w^2] E[h2^2] = (W_sd^2 + W^2) 2 / lh^2
    expect_equal(r$WH_sd[2]^2, (r$W_sd^2 + r$W^2) * 2 / lh^2 - (r$W / lh)^2,
                 tolerance = 1e-10)
    # evidence and E[w] of the 1 x 1 problem by direct 2-D quadrature
    d <- one_by_one(s$x[1], s$lw, s$lh, s$alpha, s$beta, s$tau)
    expect_equal(r$log_evidence, unname(d["log_evidence"]), tolerance = 1e-8)
    expect_equal(r$W, unname(d["W"]), tolerance = 1e-7)
    # mirror image: observing only x2 gives the swapped answer
    m <- exact_tiny_nmf(rev(s$x), s$lw, s$lh, s$alpha, s$beta, s$tau)
    expect_equal(m$log_evidence, r$log_evidence, tolerance = 1e-10)
    expect_equal(m$H, rev(r$H), tolerance = 1e-10)
    expect_equal(m$WH_sd, rev(r$WH_sd), tolerance = 1e-10)
  }
  # with lambda_w = lambda_h and only x1, the posterior is symmetric in
  # (w, h1): E[w] = E[h1], sd(w) = sd(h1)
  r <- exact_tiny_nmf(c(1.2, NA), 1, 1, 2, 1)
  expect_equal(r$W, r$H[1], tolerance = 1e-10)
  expect_equal(r$W_sd, r$H_sd[1], tolerance = 1e-10)
  # and the missing case against the brute-force quadrature and Monte Carlo
  b <- brute_tiny(c(1.2, NA), 1, 1, 2, 1)
  e <- exact_moments(r)
  expect_equal(r$log_evidence, b$log_evidence, tolerance = 1e-8)
  expect_lt(rel(e$m1, b$m1), 1e-8)
  expect_lt(rel(e$m2, b$m2), 1e-8)
})

test_that("no data at all: evidence 1 and prior moments", {
  r <- exact_tiny_nmf(c(NA, NA), lambda_w = 2, lambda_h = 0.5, alpha = 3,
                      beta = 2)
  expect_equal(r$log_evidence, 0, tolerance = 1e-10)
  expect_equal(r$W, 0.5, tolerance = 1e-10)
  expect_equal(r$W_sd, 0.5, tolerance = 1e-10)
  expect_equal(r$H, c(2, 2), tolerance = 1e-10)
  expect_equal(r$tau, 1.5, tolerance = 1e-10)
  expect_equal(r$tau_sd, sqrt(3) / 2, tolerance = 1e-10)
  expect_equal(r$WH, c(1, 1), tolerance = 1e-10)
  # Var(w h) = E[w^2] E[h^2] - 1 = (2 * 0.25) * (2 * 4) - 1 = 3
  expect_equal(r$WH_sd, sqrt(c(3, 3)), tolerance = 1e-10)
})

# ---- 4. stress cases ---------------------------------------------------------

# Fully numerical nested stats::integrate() for the fixed-tau problem
# (outer over v = log w in unit pieces, inner over each h_j split at the
# likelihood ridge and at prior-scale points; no analytic step).  Returns
# log p(x | tau) and the requested posterior means.
integ1 <- function(f, a, b, tol, abs.tol = 0) {
  for (t in c(tol, tol * 100)) {
    r <- tryCatch(stats::integrate(f, a, b, rel.tol = t, abs.tol = abs.tol,
                                   subdivisions = 2000L)$value,
                  error = function(e) NULL)
    if (!is.null(r)) return(r)
  }
  # QUADPACK gave up: accept 0 only if the integrand is negligible there
  if (is.finite(b) && max(f(seq(a, b, length.out = 2001L))) * (b - a) <=
      1e3 * abs.tol) {
    return(0)
  }
  stop("integrate failed on [", a, ", ", b, "]")
}
nested_fixed <- function(x, lw, lh, tau,
                         which = c("W", "H1", "H2", "WH1", "WH2")) {
  sdv <- 1 / sqrt(tau)
  inner <- function(wi, j, k) {  # int h^k lh e^{-lh h} N(x_j; w h, 1/tau) dh
    if (is.na(x[j])) return(if (k == 0) 1 else factorial(k) / lh^k)
    f <- function(h) h^k * lh * exp(-lh * h) * stats::dnorm(x[j], wi * h, sdv)
    pk <- max(x[j] / wi - lh / (tau * wi^2), 0)
    s <- sdv / wi
    br <- sort(unique(c(pmax(0, pk + c(-10, -3, 0, 3, 10) * s),
                        c(1, 5, 40) / lh)))
    br <- c(if (br[1] > 0) 0, br, Inf)
    ic <- max(which(br <= pk))
    cen <- integ1(f, br[ic], br[ic + 1L], 1e-10, 1e-290)
    rest <- vapply(seq_len(length(br) - 1L)[-ic], function(i)
      integ1(f, br[i], br[i + 1L], 1e-10, max(1e-15 * cen, 1e-290)), 0)
    cen + sum(rest)
  }
  outer_f <- function(kw, j1, j2) {
    function(v) vapply(v, function(vi) {
      wi <- exp(vi)
      lw * exp(-lw * wi) * wi * wi^kw * inner(wi, 1, j1) * inner(wi, 2, j2)
    }, 0)
  }
  br <- seq(log(1e-10 / lw), log(60 / lw), by = 1)
  integ <- function(f, at) sum(vapply(seq_len(length(br) - 1L), function(i)
    integ1(f, br[i], br[i + 1L], 1e-10, at), 0))
  Z <- integ(outer_f(0, 0, 0), 0)
  spec <- list(W = c(1, 0, 0), H1 = c(0, 1, 0), H2 = c(0, 0, 1),
               WH1 = c(1, 1, 0), WH2 = c(1, 0, 1))[which]
  c(log_evidence = log(Z), vapply(spec, function(s)
    integ(outer_f(s[1], s[2], s[3]), 1e-14 * Z) / Z, 0))
}

# Gamma-prior answer by mixing the fixed-tau answers over tau:
#   p(x) = int p(x | tau) Gamma(tau) dtau,
#   E[f | x] = int E[f | x, tau] p(x | tau) Gamma(tau) dtau / p(x),
# composite Gauss-Legendre in u = log tau (12 nodes per unit interval).
mix_tau <- function(x, lw, lh, alpha, beta, u_lo, u_hi, n_per = 12L) {
  br <- seq(u_lo, u_hi, by = 1)
  nodes <- do.call(rbind, lapply(seq_len(length(br) - 1L), function(i) {
    g <- gl_nodes(n_per, br[i], br[i + 1L])
    cbind(g$x, g$w)
  }))
  vals <- t(vapply(nodes[, 1], function(u) {
    r <- exact_tiny_nmf(x, lw, lh, tau = exp(u))
    c(r$log_evidence + stats::dgamma(exp(u), alpha, beta, log = TRUE) + u,
      r$W, r$H, r$WH, exp(u))
  }, numeric(7)))
  m <- max(vals[, 1])
  wt <- nodes[, 2] * exp(vals[, 1] - m)
  c(log_evidence = m + log(sum(wt)), colSums(wt * vals[, -1]) / sum(wt))
}

test_that("narrow likelihood (fixed tau = 1e4) matches nested integrate()", {
  skip_on_cran()
  r <- exact_tiny_nmf(c(1.2, 2.5), tau = 1e4)
  n <- nested_fixed(c(1.2, 2.5), 1, 1, 1e4, c("W", "WH1", "WH2"))
  expect_equal(c(r$log_evidence, r$W, r$WH), unname(n), tolerance = 1e-9)
})

test_that("bimodal tau posterior (x = c(50, 100)) is integrated correctly", {
  skip_on_cran()
  # Data far beyond the prior scale: the posterior of tau has a main mode
  # at tau ~ 3e-4 (pure noise) and a small second mode at tau ~ 1 (w h fits
  # x) that prior-sampling Monte Carlo misses; E[tau] depends on it.
  x <- c(50, 100)
  r <- exact_tiny_nmf(x, 1, 1, 1, 1)
  expect_gt(r$tau_sd, 10 * r$tau)
  m <- mix_tau(x, 1, 1, 1, 1, -20, 6)
  expect_equal(c(r$log_evidence, r$W, r$H, r$WH, r$tau), unname(m),
               tolerance = 1e-8)
  # the fixed-tau slice at the second mode, fully numerically
  s <- exact_tiny_nmf(x, tau = 1)
  n <- nested_fixed(x, 1, 1, 1, "W")
  expect_equal(c(s$log_evidence, s$W), unname(n), tolerance = 1e-9)
})
