# Exact references for the Poisson model, written independently of the
# package's code.
#
#   X_ft ~ Poisson(sum_k W_fk S^W_fk H_kt S^H_kt),  W_fk ~ Gamma(a, b),
#   H_kt ~ Gamma(c, d) (shape, rate).
#
# ---- F = 1, T = 2 (or more), K = 1 by quadrature ------------------------------
#
# Given W = w, the H_t are independent a posteriori and the Poisson-Gamma
# integral over H_t is analytic (a negative binomial):
#
#   p(x_t | w) = Gamma(x_t + c) / (Gamma(c) x_t!) d^c w^x_t / (w + d)^(x_t + c),
#   H_t | w, x  ~ Gamma(c + x_t, d + w),
#
# so p(X) = int Gamma(w; a, b) prod_t p(x_t | w) dw is a 1-D integral and
# every posterior mean is E[g(W) | X] with g analytic: E[H_t | w] =
# (c + x_t) / (d + w), E[W H_t | w] = w (c + x_t) / (d + w). A missing x_t (NA)
# leaves H_t at its prior, Gamma(c, d). The integrals run over u = log w
# (integrand w p(w, X)) scaled by the value at the mode, with
# stats::integrate() at rel.tol = 1e-12; the self-checks of
# test-poisson-exact.R (the quadrature sums to 1 over all data sets, and the
# posterior means average to the prior means) bound its error.
pois_exact_tiny <- function(x, a, b, c, d, rel.tol = 1e-12) {
  obs <- !is.na(x)
  xo <- ifelse(obs, x, 0)
  log_joint <- function(w) {
    out <- stats::dgamma(w, a, b, log = TRUE)
    for (t in which(obs)) {
      out <- out + lgamma(xo[t] + c) - lgamma(c) - lfactorial(xo[t]) + c * log(d) +
        (if (xo[t] > 0) xo[t] * log(w) else 0) - (xo[t] + c) * log(w + d)
    }
    out
  }
  # in u = log w, with the Jacobian w
  lf <- function(u) log_joint(exp(u)) + u
  opt <- stats::optimize(function(u) -lf(u), c(-30, 30), tol = 1e-10)
  u0 <- opt$minimum
  l0 <- lf(u0)
  lo <- max(u0 - 700 / (a + sum(xo)), -700)
  hi <- log(exp(u0) + 800 / b)
  integ <- function(g) {
    f <- function(u) g(exp(u)) * exp(lf(u) - l0)
    # split at the mode so integrate() sees the peak; outside [lo, hi] the
    # integrand is below exp(-700) of its peak (it grows like w^(a + sum x)
    # for small w and falls like exp(-b w) for large w)
    r1 <- stats::integrate(f, lo, u0, rel.tol = rel.tol, subdivisions = 1000L)
    r2 <- stats::integrate(f, u0, hi, rel.tol = rel.tol, subdivisions = 1000L)
    c(value = r1$value + r2$value, error = r1$abs.error + r2$abs.error)
  }
  z <- integ(function(w) 1)
  m <- function(g) integ(g)[["value"]] / z[["value"]]
  shape <- c + xo
  rate <- function(w, t) d + if (obs[t]) w else 0
  H <- vapply(seq_along(x), function(t) m(function(w) shape[t] / rate(w, t)), numeric(1))
  WH <- vapply(seq_along(x), function(t) m(function(w) w * shape[t] / rate(w, t)), numeric(1))
  H2 <- vapply(seq_along(x), function(t) m(function(w) shape[t] * (shape[t] + 1) / rate(w, t)^2),
               numeric(1))
  WH2 <- vapply(seq_along(x), function(t) m(function(w) w^2 * shape[t] * (shape[t] + 1) / rate(w, t)^2),
                numeric(1))
  list(W = m(function(w) w), W2 = m(function(w) w^2), H = H, H2 = H2, WH = WH,
       WH2 = WH2, logpx = l0 + log(z[["value"]]),
       rel_error = z[["error"]] / z[["value"]])
}

# ---- Masks by enumeration --------------------------------------------------
#
# p(S^W, S^H | X, W, H, pi^W, pi^H) is proportional to
#   prod_fk (pi^W_k)^S^W_fk (1 - pi^W_k)^(1 - S^W_fk)
#   prod_kt (pi^H_k)^S^H_kt (1 - pi^H_k)^(1 - S^H_kt)
#   prod_{ft observed} Poisson(X_ft; sum_k W_fk S^W_fk H_kt S^H_kt)
# (a rate of 0 gives probability 1 to X_ft = 0 and 0 to X_ft > 0). A mask is
# coded by the integer sum_i s_i 2^(i - 1) over s = c(S^W, S^H) in
# column-major order. Returns the probabilities of the 2^(FK + KT) codes
# 0, 1, ... in that order.
pois_mask_code <- function(SW, SH) {
  s <- c(as.integer(SW), as.integer(SH))
  sum(s * 2^(seq_along(s) - 1L))
}

pois_mask_enum <- function(X, W, H, piW, piH) {
  Fn <- nrow(W)
  K <- ncol(W)
  Tn <- ncol(H)
  nW <- Fn * K
  n <- nW + K * Tn
  obs <- which(!is.na(X))
  lp <- vapply(0:(2^n - 1), function(code) {
    s <- as.integer(intToBits(code))[seq_len(n)]
    SW <- matrix(s[seq_len(nW)], Fn, K)
    SH <- matrix(s[nW + seq_len(K * Tn)], K, Tn)
    rate <- (W * SW) %*% (H * SH)
    sum(stats::dbinom(SW, 1, matrix(piW, Fn, K, byrow = TRUE), log = TRUE)) +
      sum(stats::dbinom(SH, 1, matrix(piH, K, Tn), log = TRUE)) +
      sum(stats::dpois(X[obs], rate[obs], log = TRUE))
  }, numeric(1))
  p <- exp(lp - max(lp))
  p / sum(p)
}

# ---- The internal hooks of the Poisson model code --------------------------
pois_hook <- function(name) get(name, envir = asNamespace("bnmf"), inherits = FALSE)

# The exact log p(X) of the Poisson NMF model with Gamma(a, b) priors on W
# and Gamma(c, d) on H, for tiny count matrices: the sum over every split Z
# of each count among the K factors of p(X, Z), in which H integrates in
# closed form (a Gamma integral per entry) and each column of W through its
# sum S ~ Gamma(I a, b) and its shares ~ Dirichlet(a, ..., a) (a closed-form
# moment), leaving a 1-D integral over S.
exact_pois_logml <- function(X, K, a, b, c, d) {
  I <- nrow(X)
  J <- ncol(X)
  comps <- function(n, K) {
    if (K == 1) return(matrix(n, 1))
    do.call(rbind, lapply(0:n, function(i) cbind(i, comps(n - i, K - 1))))
  }
  cl <- lapply(as.vector(X), comps, K = K)
  idx <- as.matrix(expand.grid(lapply(cl, function(m) seq_len(nrow(m)))))
  lt <- numeric(nrow(idx))
  for (r in seq_len(nrow(idx))) {
    Z <- array(t(vapply(seq_along(cl), function(e) cl[[e]][idx[r, e], ], numeric(K))),
               c(I, J, K))
    v <- -sum(lfactorial(Z))
    for (k in seq_len(K)) {
      n_i <- rowSums(Z[, , k, drop = FALSE])
      m_j <- colSums(Z[, , k, drop = FALSE])
      N <- sum(n_i)
      v <- v + lgamma(I * a) - lgamma(I * a + N) + sum(lgamma(a + n_i) - lgamma(a))
      f <- function(S) {
        vapply(S, function(s) {
          exp(stats::dgamma(s, I * a, b, log = TRUE) + N * log(s) +
                sum(c * log(d) + lgamma(c + m_j) - lgamma(c) - (c + m_j) * log(d + s)))
        }, numeric(1))
      }
      v <- v + log(stats::integrate(f, 0, Inf, rel.tol = 1e-12)$value)
    }
    lt[r] <- v
  }
  m <- max(lt)
  m + log(sum(exp(lt - m)))
}
