# The variational posterior q of a Gaussian VB fit (NMF and NMTF): every
# factor entry is a normal N(mu, sigma^2) truncated to [0, Inf) (Brouwer,
# Frellsen and Lio 2017). The engine keeps each entry's mean and variance,
# which are those of the truncated normal of the entry's last update; its
# parameters (mu, sigma) are recovered from them here (tn_params()), kept in
# the fit (q_W, q_H; q_F, q_S, q_G), and drawn from by
# posterior_factorisations().

#' The truncated normal with a given mean and variance
#'
#' Inverts the moments of N(mu, sigma^2) truncated to `[0, Inf)`: with
#' `a = -mu / sigma`, mean = sigma f(a) and variance = sigma^2 g(a) (f, g the
#' moments of the standard normal truncated to `[a, Inf)`, less `a`), so the
#' squared coefficient of variation t = var / mean^2 = g(a) / f(a)^2 depends
#' on a alone, increasing from 0 (a -> -Inf, the untruncated normal) to 1
#' (a -> Inf, the exponential limit). a solves g / f^2 = t by Newton's method
#' kept inside a bracket (bisection when a step leaves it), with the moments
#' from `C_tn_moments` (exact in the tail); then sigma = mean / f(a) and
#' mu = -a sigma. Where t <= 1/64 (a <= -8: the truncation moves the moments
#' by less than 1e-13 of them) mu = mean and sigma = sqrt(var); where
#' 1 - t < 1e-10 (an exponential to within 1e-10, as for an entry whose q
#' is its prior) a = 1.5e5, which keeps the mean and gives the variance to
#' within 1e-10 of it. A variance of zero (or a mean of zero), or one that
#' is not finite (beyond the range of the doubles), is a point at the mean:
#' sigma = 0.
#'
#' @param mean,var The means and variances (same length; means >= 0).
#' @return list(mu, sigma), each of the length of `mean` (the dimensions of
#'   `mean` kept).
#' @noRd
tn_params <- function(mean, var) {
  m <- as.double(mean)
  v <- as.double(var)
  n <- length(m)
  mu <- m
  sigma <- numeric(n)
  pos <- which(m > 0 & v > 0 & is.finite(m) & is.finite(v))
  t <- (sqrt(v[pos]) / m[pos])^2
  a <- rep(NA_real_, length(t))
  normal <- t <= 1 / 64
  a[!normal & 1 - t < 1e-10] <- 1.5e5
  todo <- which(is.na(a) & !normal)
  if (length(todo)) a[todo] <- tn_solve_a(t[todo])
  s <- sqrt(v[pos])
  r <- mu[pos]
  tail <- !normal
  if (any(tail)) {
    f <- .Call(C_tn_moments, -a[tail], 1)$mean
    s[tail] <- m[pos][tail] / f
    r[tail] <- -a[tail] * s[tail]
  }
  # (a scale beyond the doubles, mean > 1e303: a point at the mean)
  fin <- is.finite(r) & is.finite(s)
  mu[pos[fin]] <- r[fin]
  sigma[pos[fin]] <- s[fin]
  if (!is.null(dim(mean))) {
    dim(mu) <- dim(sigma) <- dim(mean)
    dimnames(mu) <- dimnames(sigma) <- dimnames(mean)
  }
  list(mu = mu, sigma = sigma)
}

# a with g(a) / f(a)^2 = t for every t in (1/64, 1 - 1e-10): Newton steps in
# a bracket [lo, hi] (r(lo) < t < r(hi)), bisection where a step leaves it.
# With lambda = f + a (the inverse Mills ratio), f' = -g and
# g' = lambda (g - f^2), so r' = lambda (g - f^2) / f^2 + 2 g^2 / f^3.
tn_solve_a <- function(t) {
  rfun <- function(a) {
    mo <- .Call(C_tn_moments, -a, 1)
    list(f = mo$mean, g = mo$var)
  }
  lo <- rep(-8.5, length(t))
  hi <- 2 * sqrt(2 / (1 - t)) + 3
  # widen any bracket whose top is still below t (not expected: r(a) > 1 - 2 / a^2)
  for (i in 1:60) {
    e <- rfun(hi)
    low <- e$g / e$f^2 < t
    if (!any(low)) break
    lo[low] <- hi[low]
    hi[low] <- 2 * hi[low]
  }
  a <- (lo + hi) / 2
  live <- seq_along(t)
  for (it in 1:200) {
    e <- rfun(a[live])
    f <- e$f; g <- e$g
    r <- g / f^2
    d <- r - t[live]
    at <- a[live]
    hi[live][d > 0] <- at[d > 0]
    lo[live][d < 0] <- at[d < 0]
    # r is computed to a few ulps of 1: closer than 4 of them is the root
    close <- abs(d) <= 4 * .Machine$double.eps
    lam <- f + at
    dr <- lam * (g - f^2) / f^2 + 2 * g^2 / f^3
    step <- at - d / dr
    out <- !is.finite(step) | step < lo[live] | step > hi[live]
    step[out] <- (lo[live][out] + hi[live][out]) / 2
    step[close] <- at[close]
    a[live] <- step
    done <- close | abs(step - at) <= 1e-15 * pmax(1, abs(step)) |
      hi[live] - lo[live] <= 4 * .Machine$double.eps * pmax(1, abs(step))
    live <- live[!done]
    if (!length(live)) break
  }
  a
}

# q of a Gaussian VB fit's factor: list(mu, sigma), matrices of the factor's
# size and names, from its means and variances (vectors or matrices).
q_factor <- function(mean, var, dims, dn) {
  tn_params(matrix(as.double(mean), dims[1L], dims[2L], dimnames = dn),
            matrix(as.double(var), dims[1L], dims[2L]))
}

# The q of the factors of a Gaussian VB fit: its own fields (q_W, q_H or
# q_F, q_S, q_G), or, for a fit saved before it kept them, recovered from
# the kept restart's means and variances.
vb_factor_q <- function(fit) {
  nm <- if (inherits(fit, "bnmf_nmtf")) c("F", "S", "G") else c("W", "H")
  have <- paste0("q_", nm)
  if (all(have %in% names(fit))) return(stats::setNames(fit[have], nm))
  st <- fit$chains[[fit$best %||% 1L]]
  if (!is.null(st$state)) st <- st$state
  stats::setNames(lapply(nm, function(x) {
    q_factor(st[[x]], st[[paste0(x, "_var")]], dim(fit[[x]]), NULL)
  }), nm)
}

# n factorisations drawn from the q of a Gaussian VB fit (the session's
# random numbers), each list(W, H) (NMTF: W = F, H = S t(G)), with the drawn
# factors themselves in `factors`.
vb_q_draws <- function(fit, n) {
  q <- vb_factor_q(fit)
  draw <- function(p) {
    x <- unname(p$mu)
    x[] <- pmax(x, 0)
    ok <- p$sigma > 0
    if (any(ok)) x[ok] <- rtnorm(sum(ok), mean = p$mu[ok], sd = p$sigma[ok])
    x
  }
  lapply(seq_len(n), function(s) {
    d <- lapply(q, draw)
    if (inherits(fit, "bnmf_nmtf")) list(W = d$F, H = d$S %*% t(d$G), factors = d)
    else list(W = d$W, H = d$H, factors = d)
  })
}

# Checks of the q fields of a Gaussian VB fit (absent in fits saved before
# they were kept): each list(mu, sigma) of its factor's size, mu finite,
# sigma finite and non-negative.
validate_vb_q <- function(fit, nm, bad) {
  for (x in nm) {
    q <- fit[[paste0("q_", x)]]
    if (is.null(q)) next
    ok <- is.list(q) && identical(dim(q$mu), dim(fit[[x]])) &&
      identical(dim(q$sigma), dim(fit[[x]])) && all(is.finite(q$mu)) &&
      all(is.finite(q$sigma)) && all(q$sigma >= 0)
    if (!ok) bad(sprintf("a q_%s that is not the q of %s (mu and sigma of its size)", x, x))
  }
}
