# Exact references for Bayesian NMTF, X ~ F S G' (F: I x K, S: K x L, G: J x L),
# written independently of the package's model code (plain R, no bnmf calls).
#
# Model
#   x_ij | F, S, G, tau ~ N((F S G')_ij, 1/tau)   for the observed (i, j)
#   F_ik ~ Exp(lF), S_kl ~ Exp(lS), G_jl ~ Exp(lG), tau ~ Gamma(alpha, beta);
#   under ARD lF_k, lG_l ~ Gamma(a0, b0) instead of the fixed lF, lG.
#
# 1. tau is integrated analytically. With n observed entries, means m and
#    SS = sum (x - m)^2,
#      p(x | F, S, G) = Gamma(alpha + n/2) / Gamma(alpha) beta^alpha (2 pi)^(-n/2)
#                       (beta + SS/2)^-(alpha + n/2),
#    and given (F, S, G, x) tau ~ Gamma(alpha + n/2, beta + SS/2), so
#      E[tau | F, S, G, x] = (alpha + n/2) / (beta + SS/2).
# 2. Two exact reductions of the factor prior keep the grids small:
#    - c = s g with s ~ Exp(a), g ~ Exp(b) has the density
#        p(c) = int a exp(-a s) b exp(-b c / s) / s ds = 2 a b K0(2 sqrt(a b c))
#      (K0 the modified Bessel function; Gradshteyn-Ryzhik 3.471.9), so when
#      K = L = 1 and J = 1 the likelihood depends on (F, c) only;
#    - under ARD, f ~ Exp(lambda), lambda ~ Gamma(a0, b0) integrate to the
#      Lomax density p(f) = a0 b0^a0 / (b0 + f)^(a0 + 1), one per column; with
#      K = L = 1 and I = J = 1 (one entry per column) f and g are Lomax.
#    Both are checked against a direct grid / Monte Carlo in test-nmtf-exact.R.
# 3. The remaining coordinates are integrated on the log scale (v = log c,
#    Jacobian c), where the integrand is analytic in a strip around the real
#    axis and decays exponentially to the left (like c) and (doubly)
#    exponentially to the right: the trapezoidal rule on a uniform grid then
#    converges geometrically in the step, and the error of the fine grid is
#    far below the difference to the grid of every other node (step doubled),
#    which is returned as `rel_diff` (relative, per quantity). The box must
#    contain everything within exp(-30) of the maximum; `nmtf_quad()` stops
#    if the integrand is not negligible on the boundary of the box.
#    Everything is in log space, rescaled by a running maximum.
#
# nmtf_quad(x, coords, means, h): `x` the observed entries (vector), `coords`
# a list of coordinates, each list(lo, hi, logd) with logd(v) the log density
# of v = log(coordinate) (Jacobian included); `means(V)` maps the matrix of
# coordinate values (nodes x d) to the matrix of means (nodes x n); `funs(V, M,
# Etau)` gives the conditional expectations to average (nodes x q, named).
# Returns list(log_evidence, mean = named vector, rel_diff = named vector).
nmtf_quad <- function(x, coords, means, funs, alpha, beta, h = 0.1) {
  n <- length(x)
  d <- length(coords)
  grids <- lapply(coords, function(cc) seq(cc$lo, cc$hi, by = h))
  ld <- lapply(seq_len(d), function(r) coords[[r]]$logd(grids[[r]]))
  rest <- if (d > 1L) as.matrix(expand.grid(grids[-1L])) else matrix(0, 1L, 0L)
  ld_rest <- if (d > 1L) Reduce(`+`, expand.grid(ld[-1L])) else 0
  even_rest <- if (d > 1L) {
    Reduce(`&`, expand.grid(lapply(grids[-1L], function(g) seq_along(g) %% 2L == 1L)))
  } else TRUE
  edge_rest <- if (d > 1L) {
    Reduce(`|`, expand.grid(lapply(grids[-1L], function(g) {
      seq_along(g) %in% c(1L, length(g))
    })))
  } else FALSE
  lconst <- lgamma(alpha + n / 2) - lgamma(alpha) + alpha * log(beta) - n / 2 * log(2 * pi)
  top <- -Inf
  edge_top <- -Inf
  acc <- list(fine = NULL, coarse = NULL)
  z <- c(fine = 0, coarse = 0)
  for (a in seq_along(grids[[1L]])) {
    V <- exp(cbind(grids[[1L]][a], rest))
    M <- means(V)
    ss <- rowSums((matrix(x, nrow(M), n, byrow = TRUE) - M)^2)
    lf <- ld[[1L]][a] + ld_rest + lconst - (alpha + n / 2) * log(beta + ss / 2)
    Etau <- (alpha + n / 2) / (beta + ss / 2)
    fv <- funs(V, M, Etau)
    mx <- max(lf)
    on_edge <- a %in% c(1L, length(grids[[1L]])) | edge_rest
    edge_top <- max(edge_top, lf[on_edge])
    if (mx > top) {
      z <- z * exp(top - mx)
      if (!is.null(acc$fine)) acc <- lapply(acc, function(s) s * exp(top - mx))
      top <- mx
    }
    w <- exp(lf - top)
    wc <- if (a %% 2L == 1L) w * even_rest else 0 * w
    z <- z + c(sum(w), sum(wc))
    add <- function(s, ww) (if (is.null(s)) 0 else s) + colSums(fv * ww)
    acc <- list(fine = add(acc$fine, w), coarse = add(acc$coarse, wc))
  }
  if (edge_top > top - 30) {
    stop(sprintf("nmtf_quad(): the integrand is not negligible on the box boundary (%.1f)",
                 edge_top - top))
  }
  fine <- acc$fine / z[["fine"]]
  coarse <- acc$coarse / z[["coarse"]]
  le_fine <- top + log(z[["fine"]]) + d * log(h)
  le_coarse <- top + log(z[["coarse"]]) + d * log(2 * h)
  list(log_evidence = le_fine, mean = fine,
       rel_diff = c(abs(fine - coarse) / pmax(abs(fine), 1e-300),
                    log_evidence = abs(le_fine - le_coarse)))
}

# Log densities of v = log(y) (Jacobian y included).
nmtf_ld_exp <- function(rate) function(v) log(rate) - rate * exp(v) + v
nmtf_ld_lomax <- function(a0, b0) {
  function(v) log(a0) + a0 * log(b0) - (a0 + 1) * log(b0 + exp(v)) + v
}
# c = s g, s ~ Exp(a), g ~ Exp(b): p(c) = 2 a b K0(2 sqrt(a b c)).
nmtf_ld_prod_exp <- function(a, b) {
  function(v) {
    z <- 2 * sqrt(a * b * exp(v))
    log(2 * a * b) + log(besselK(z, 0, expon.scaled = TRUE)) - z + v
  }
}
# A box on the log scale for a coordinate with typical scale `s`: 36 units
# below (the integrand decays like y there), `up` units above.
nmtf_box <- function(s, up = 4) c(lo = log(s) - 36, hi = log(s) + up)

# The exact posterior of the tiny problems.
#  "1x1":  I = J = 1, K = L = 1, x scalar: coordinates (f, c = s g); returns
#          the posterior means of F, FSG (= f c), tau and log p(x).
#  "2x1":  I = 2, J = 1, K = L = 1, x = (x1, x2): coordinates (f1, f2, c).
#  "ard":  I = J = 1, K = L = 1 under ARD (f, g Lomax(a0, b0), s ~ Exp(lS)):
#          coordinates (f, s, g).
nmtf_exact_tiny <- function(x, lambda = 1, alpha = 1, beta = 1, ard = NULL, lS = lambda,
                            h = NULL) {
  x <- as.numeric(x)
  f_mean <- function(V, M, Etau) {
    out <- cbind(V[, seq_len(length(x)), drop = FALSE], M, Etau)
    colnames(out) <- c(if (length(x) == 1L) "F" else sprintf("F[%d]", seq_along(x)),
                       if (length(x) == 1L) "FSG" else sprintf("FSG[%d]", seq_along(x)),
                       "tau")
    out
  }
  ex <- function(lam) c(nmtf_box(1 / lam), list(logd = nmtf_ld_exp(lam)))
  if (is.null(ard)) {
    cc <- c(nmtf_box(1 / (lS * lambda), up = 6), list(logd = nmtf_ld_prod_exp(lS, lambda)))
    nf <- length(x)
    coords <- c(rep(list(ex(lambda)), nf), list(cc))
    means <- function(V) V[, seq_len(nf), drop = FALSE] * V[, nf + 1L]
    # Step 0.1 on the 2-D grid, 0.2 on the 3-D one (I = 2): relative errors
    # below 1e-7 and 1e-5 (see `rel_diff`, the difference to the doubled step).
    h <- if (!is.null(h)) h else if (nf == 1L) 0.1 else 0.2
    nmtf_quad(x, coords, means, f_mean, alpha, beta, h = h)
  } else {
    stopifnot(length(x) == 1L)
    lom <- c(lo = log(ard$b0 / ard$a0) - 36, hi = log(ard$b0 / ard$a0) + 40 / ard$a0 + 4,
             list(logd = nmtf_ld_lomax(ard$a0, ard$b0)))
    coords <- list(lom, ex(lS), lom)
    means <- function(V) V[, 1L, drop = FALSE] * V[, 2L] * V[, 3L]
    nmtf_quad(x, coords, means, f_mean, alpha, beta, h = if (is.null(h)) 0.2 else h)
  }
}

# Log joint density log p(F, S, G, tau, x) and its gradient, for the KKT
# check of ICM on the tiny problems (K = L = 1, J = 1): f a vector (I), s, g,
# tau scalars; fixed rates.
nmtf_log_joint <- function(f, s, g, tau, x, lambda, alpha, beta, lS = lambda) {
  sum(stats::dexp(f, lambda, log = TRUE)) + stats::dexp(s, lS, log = TRUE) +
    stats::dexp(g, lambda, log = TRUE) + stats::dgamma(tau, alpha, beta, log = TRUE) +
    sum(stats::dnorm(x, f * s * g, 1 / sqrt(tau), log = TRUE))
}
nmtf_log_joint_grad <- function(f, s, g, tau, x, lambda, alpha, beta, lS = lambda) {
  r <- x - f * s * g
  list(f = tau * r * s * g - lambda,
       s = tau * sum(r * f) * g - lS,
       g = tau * sum(r * f) * s - lambda,
       tau = (alpha - 1 + length(x) / 2) / tau - beta - sum(r^2) / 2)
}

# Draws of an NMTF problem from the prior (for the toy and the joint tests).
nmtf_draw <- function(I, J, K, L, rate = 1, tau = 1) {
  F <- matrix(stats::rexp(I * K, rate), I, K)
  S <- matrix(stats::rexp(K * L, rate), K, L)
  G <- matrix(stats::rexp(J * L, rate), J, L)
  X <- F %*% S %*% t(G) + matrix(stats::rnorm(I * J, sd = 1 / sqrt(tau)), I, J)
  list(X = X, F = F, S = S, G = G)
}

# ---- NMTF joint-distribution model for helper-geweke.R ----------------------
#
# F_ik ~ Exp(lF), S_kl ~ Exp(lS), G_jl ~ Exp(lG), tau ~ Gamma(alpha, beta),
# X_ij ~ N((F S G')_ij, 1/tau) for the observed entries (`miss`: linear
# indices left NA, out of the likelihood). Under ARD (`ard = list(alpha0 =,
# beta0 =)`) lF_k, lG_l ~ Gamma(alpha0, beta0), S keeps the rate lS. One step
# is one Gibbs sweep of bnmf:::nmtf_sweeps() (the internal entry of the
# contract) followed by fresh observed data given the parameters.
#
# `shape_offset`: the sampler is given the noise shape alpha + shape_offset
# while the data and the reference use alpha (a tau conditional whose shape
# is off by shape_offset), to show the test has teeth.
geweke_nmtf_model <- function(I, J, K, L, lF = 1, lS = 1, lG = 1, alpha = 2, beta = 1,
                              miss = integer(), ard = NULL, shape_offset = 0) {
  obs <- setdiff(seq_len(I * J), miss)
  draw_lambda <- function(n) {
    if (is.null(ard)) {
      list(F = matrix(lF, n, K), G = matrix(lG, n, L))
    } else {
      list(F = matrix(stats::rgamma(n * K, ard$alpha0, ard$beta0), n, K),
           G = matrix(stats::rgamma(n * L, ard$alpha0, ard$beta0), n, L))
    }
  }
  prior_c <- if (is.null(ard)) {
    list(rate = c(F = lF, S = lS, G = lG), alpha = alpha + shape_offset, beta = beta)
  } else {
    list(rate = list(alpha0 = ard$alpha0, beta0 = ard$beta0, rate_S = lS),
         alpha = alpha + shape_offset, beta = beta)
  }
  new_data <- function(st, X) {
    M <- st$F %*% st$S %*% t(st$G)
    X[obs] <- M[obs] + stats::rnorm(length(obs), sd = 1 / sqrt(st$tau))
    X
  }
  init <- function() {
    lam <- draw_lambda(1L)
    st <- list(F = matrix(stats::rexp(I * K, rep(lam$F[1L, ], each = I)), I, K),
               S = matrix(stats::rexp(K * L, lS), K, L),
               G = matrix(stats::rexp(J * L, rep(lam$G[1L, ], each = J)), J, L),
               tau = stats::rgamma(1L, alpha, beta),
               lambda = if (is.null(ard)) NULL else list(F = lam$F[1L, ], G = lam$G[1L, ]))
    X <- matrix(NA_real_, I, J)
    list(st = st, X = new_data(st, X))
  }
  step <- function(s) {
    s$st <- bnmf:::nmtf_sweeps(s$X, s$st, prior_c, 1L, rule = "gibbs")
    s$X <- new_data(s$st, s$X)
    s
  }
  stats_of <- function(F, S, G, tau) {
    c(tau = tau, sumF = sum(F), sumS = sum(S), sumG = sum(G), F11 = F[1L, 1L],
      SKL = S[K, L], GJ1 = G[J, 1L], FSG11 = sum(F[1L, ] * (S %*% G[1L, ])))
  }
  # Under ARD the summaries scaled by the rates (sums and entries of F and G,
  # and F S G') are mixtures with polynomial tails, whose higher moments (and
  # so the Monte Carlo error of their second moments) do not exist; they are
  # compared on the log scale, where every moment is finite. Without ARD,
  # F S G' is still a sum of products of three exponentials: its fourth
  # moment is finite but so large (E[(f s g)^4] / E[(f s g)^2]^2 = 24^3 / 8^3 =
  # 27 for one product) that the run means of its square are strongly
  # skewed and their z-scores far from t-distributed: it is compared on the
  # log scale too.
  heavy <- if (is.null(ard)) "FSG11" else c("sumF", "sumG", "F11", "GJ1", "FSG11")
  to_log <- function(out) {
    if (is.matrix(out)) out[, heavy] <- log(out[, heavy]) else out[heavy] <- log(out[heavy])
    out
  }
  stats <- function(s) {
    out <- to_log(stats_of(s$st$F, s$st$S, s$st$G, s$st$tau))
    if (!is.null(ard)) {
      out <- c(out, `lambdaF[1]` = s$st$lambda$F[1L], `lambdaF[K]` = s$st$lambda$F[K],
               `lambdaG[1]` = s$st$lambda$G[1L], `lambdaG[L]` = s$st$lambda$G[L])
    }
    out
  }
  # n independent prior draws of the summaries; given the rates, column sums
  # of F are Gamma(I, lF_k), column sums of G Gamma(J, lG_l).
  prior <- function(n) {
    lam <- draw_lambda(n)
    f1 <- matrix(stats::rexp(n * K, lam$F), n, K)            # F[1, ]
    S <- array(stats::rexp(n * K * L, lS), c(n, K, L))
    g1 <- matrix(stats::rexp(n * L, lam$G), n, L)            # G[1, ]
    sg <- matrix(0, n, K)                                     # S G[1, ]'
    for (k in seq_len(K)) sg[, k] <- rowSums(S[, k, , drop = TRUE] * g1)
    gJ1 <- if (J == 1L) g1[, 1L] else stats::rexp(n, lam$G[, 1L])
    out <- cbind(tau = stats::rgamma(n, alpha, beta),
                 sumF = rowSums(matrix(stats::rgamma(n * K, I, lam$F), n, K)),
                 sumS = rowSums(matrix(S, n)),
                 sumG = rowSums(matrix(stats::rgamma(n * L, J, lam$G), n, L)),
                 F11 = f1[, 1L], SKL = S[, K, L], GJ1 = gJ1, FSG11 = rowSums(f1 * sg))
    out <- to_log(out)
    if (!is.null(ard)) {
      out <- cbind(out, `lambdaF[1]` = lam$F[, 1L], `lambdaF[K]` = lam$F[, K],
                   `lambdaG[1]` = lam$G[, 1L], `lambdaG[L]` = lam$G[, L])
    }
    out
  }
  exact <- list(tau = geweke_gamma(alpha, beta), sumS = geweke_gamma(K * L, lS), SKL = geweke_gamma(1, lS))
  if (is.null(ard)) {
    exact$sumF <- geweke_gamma(I * K, lF)
    exact$sumG <- geweke_gamma(J * L, lG)
    exact$F11 <- geweke_gamma(1, lF)
    exact$GJ1 <- geweke_gamma(1, lG)
  } else {
    for (nm in c("lambdaF[1]", "lambdaF[K]", "lambdaG[1]", "lambdaG[L]")) {
      exact[[nm]] <- geweke_gamma(ard$alpha0, ard$beta0)
    }
  }
  list(init = init, step = step, stats = stats, prior = prior, exact = exact)
}
