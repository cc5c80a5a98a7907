# Variational Bayes: the ELBO never decreases, bounds log p(X) from below,
# equals an independent computation, and VB agrees with Gibbs where the
# posterior is well determined.

# The ELBO may only fall by floating-point rounding of its sums (a few ulps of
# its magnitude times the number of terms).
expect_monotone_elbo <- function(e) {
  expect_true(all(is.finite(e)))
  drops <- -diff(e)
  expect_lte(max(drops), 1e-10 * max(abs(e)))
}

test_that("the ELBO never decreases between sweeps", {
  d <- make_nmf_data(I = 40, J = 30, K = 3, sd = 0.5, seed = 3)
  Xm <- d$X
  set.seed(4)
  Xm[sample(length(Xm), 300)] <- NA
  set.seed(5)
  Xs <- Matrix::rsparsematrix(40, 30, 0.25, rand.x = function(n) rexp(n) * 3)
  for (X in list(d$X, Xm, Xs)) {
    for (pr in list(exponential(), exponential(rate = 3), ard(), ard(2, 0.5))) {
      set.seed(6)
      fit <- bnmf(X, rank = 5, method = "vb", prior = pr, iter = 150, tol = 0,
                  control = vb_control("mask"))
      e <- elbo(fit)
      expect_length(e, 150)
      expect_monotone_elbo(e)
    }
  }
})

test_that("the ELBO is a lower bound on the exact log evidence, close when the posterior factorises", {
  skip_on_cran()
  cases <- list(
    list(x = c(1.2, 0.8), l = 1, a = 2, b = 1),
    list(x = c(2, 3), l = 1, a = 2, b = 1),
    list(x = c(0.3, 1.5), l = 1, a = 2, b = 1),
    # prior-dominated: the posterior nearly factorises, the bound is tight
    list(x = c(0.2, 0.1), l = 3, a = 10, b = 1)
  )
  gaps <- numeric(length(cases))
  for (t in seq_along(cases)) {
    cf <- cases[[t]]
    ex <- exact_tiny_nmf(cf$x, lambda_w = cf$l, lambda_h = cf$l, alpha = cf$a, beta = cf$b)
    set.seed(t)
    fit <- bnmf(matrix(cf$x, 1, 2), rank = 1, method = "vb", prior = exponential(cf$l),
                noise = gamma_prior(cf$a, cf$b), iter = 3000, tol = 1e-14, chains = 5)
    gaps[t] <- ex$log_evidence - fit$elbo
    expect_gt(gaps[t], 0)
    if (t == 4L) {
      # where the posterior nearly factorises, q matches it
      expect_equal(as.vector(fitted(fit)), ex$WH, tolerance = 0.03)
      expect_equal(fit$tau, ex$tau, tolerance = 0.03)
    }
  }
  # With two observations the posterior of (w, h) is a curved ridge that a
  # product of independent factors cannot follow: there the bound is looser
  # (about 0.4 to 1 nat) and E_q[WH] is shrunk by 7 to 15 percent.
  expect_lt(gaps[4], 0.1)
  expect_lt(max(gaps), 1.5)
})

# An independent computation of the ELBO at a fixed point of the coordinate
# ascent: every q(W_ik) is N+(mu, 1/p) with mu, p from the other factors'
# current moments; its entropy and the expected log joint are evaluated here
# in plain R, with the truncated normal's moments by numerical integration.
# With `entropy = "moments"` the entropies come from q's stored moments
# instead (fit$W, fit$W_sd, ...): the truncated normal with that mean and
# variance is found by a root search on its standardised truncation point
# (m^2 / v depends on it alone), then integrated as above; valid at any
# sweep, not only at a fixed point.
vb_elbo_r <- function(fit, X, ard = NULL, entropy = c("fixed_point", "moments")) {
  entropy <- match.arg(entropy)
  W <- unname(fit$W); H <- unname(fit$H)
  Wv <- unname(fit$W_sd)^2; Hv <- unname(fit$H_sd)^2
  M <- !is.na(X)
  X0 <- X; X0[!M] <- 0
  a_tau <- fit$q_tau[["shape"]]; b_tau <- fit$q_tau[["rate"]]
  etau <- a_tau / b_tau
  elogtau <- digamma(a_tau) - log(b_tau)
  K <- ncol(W)
  if (is.null(ard)) {
    lamW <- fit$prior$lamW; lamH <- fit$prior$lamH
    elogW <- log(lamW); elogH <- log(lamH)
  } else {
    a_l <- fit$q_lambda[, "shape"]; b_l <- fit$q_lambda[, "rate"]
    el <- a_l / b_l
    lamW <- matrix(el, nrow(W), K, byrow = TRUE); lamH <- matrix(el, K, ncol(H))
    elogW <- matrix(digamma(a_l) - log(b_l), nrow(W), K, byrow = TRUE)
    elogH <- matrix(digamma(a_l) - log(b_l), K, ncol(H))
  }
  # -int p log p of N(mu, s^2) truncated to [0, inf), in the standardised
  # offset t = (x - mu) / s - a >= 0 from the truncation point a = -mu / s,
  # with log p in closed form.
  tn_entropy <- function(mu, s) {
    a <- -mu / s
    lq <- stats::pnorm(a, lower.tail = FALSE, log.p = TRUE)
    f <- function(t) {
      lp <- -0.5 * (a + t)^2 - 0.5 * log(2 * pi) - lq
      -exp(lp) * lp
    }
    upper <- max(0, -a) + 12 + 40 / max(a, 1)
    log(s) + stats::integrate(f, 0, upper, rel.tol = 1e-11, abs.tol = 0,
                              subdivisions = 1000L)$value
  }
  # mean / s and variance / s^2 of N(-a s, s^2) truncated to [0, inf)
  tn_std <- function(a) {
    lam <- exp(stats::dnorm(a, log = TRUE) - stats::pnorm(a, lower.tail = FALSE, log.p = TRUE))
    c(g = lam - a, h = 1 - lam * (lam - a))
  }
  tn_entropy_moments <- function(m, v) {
    ratio <- function(a) { gh <- tn_std(a); log(gh[["g"]]^2 / gh[["h"]]) - log(m^2 / v) }
    a <- stats::uniroot(ratio, c(-30, 30), tol = 1e-13)$root
    s <- m / tn_std(a)[["g"]]
    tn_entropy(-a * s, s)
  }
  ent <- 0
  if (entropy == "moments") {
    for (t in seq_along(W)) ent <- ent + tn_entropy_moments(W[t], Wv[t])
    for (t in seq_along(H)) ent <- ent + tn_entropy_moments(H[t], Hv[t])
  }
  if (entropy == "fixed_point") for (i in seq_len(nrow(W))) for (k in seq_len(K)) {
    js <- which(M[i, ])
    g <- sum(H[k, js]^2 + Hv[k, js])
    b <- sum(X0[i, js] * H[k, js]) - sum(sapply(js, function(j) sum(W[i, -k] * H[-k, j] * H[k, j])))
    ent <- ent + tn_entropy((b - lamW[i, k] / etau) / g, 1 / sqrt(etau * g))
  }
  if (entropy == "fixed_point") for (j in seq_len(ncol(H))) for (k in seq_len(K)) {
    is <- which(M[, j])
    g <- sum(W[is, k]^2 + Wv[is, k])
    b <- sum(X0[is, j] * W[is, k]) - sum(sapply(is, function(i) sum(W[i, -k] * H[-k, j] * W[i, k])))
    ent <- ent + tn_entropy((b - lamH[k, j] / etau) / g, 1 / sqrt(etau * g))
  }
  EW2 <- W^2 + Wv; EH2 <- H^2 + Hv
  WH <- W %*% H
  esse <- sum(((X0 - WH)^2 + EW2 %*% EH2 - (W^2) %*% (H^2))[M])
  n <- sum(M)
  al <- fit$noise$shape; be <- fit$noise$rate
  out <- n / 2 * (elogtau - log(2 * pi)) - etau / 2 * esse +
    al * log(be) - lgamma(al) + (al - 1) * elogtau - be * etau +
    (a_tau - log(b_tau) + lgamma(a_tau) + (1 - a_tau) * digamma(a_tau)) +
    sum(elogW - lamW * W) + sum(elogH - lamH * H) + ent
  if (!is.null(ard)) {
    elog <- digamma(a_l) - log(b_l)
    out <- out + sum(ard[1] * log(ard[2]) - lgamma(ard[1]) + (ard[1] - 1) * elog - ard[2] * el) +
      sum(a_l - log(b_l) + lgamma(a_l) + (1 - a_l) * digamma(a_l))
  }
  out
}

test_that("the ELBO equals an independent computation at convergence", {
  d <- make_nmf_data(I = 6, J = 5, K = 2, sd = 0.1, seed = 8)
  X <- abs(d$X)
  X[2, 3] <- NA
  X[5, 1] <- NA
  set.seed(9)
  fit <- bnmf(X, rank = 2, method = "vb", prior = exponential(rate = 1.5),
              noise = gamma_prior(2, 1), iter = 5000, tol = 1e-15)
  expect_equal(fit$elbo, vb_elbo_r(fit, X), tolerance = 1e-8)
  set.seed(10)
  fa <- bnmf(X, rank = 2, method = "vb", prior = ard(2, 1), iter = 5000, tol = 1e-15)
  expect_equal(fa$elbo, vb_elbo_r(fa, X, ard = c(2, 1)), tolerance = 1e-8)
  # q(tau) has the shape of the Gibbs conditional, alpha + |Omega| / 2
  expect_equal(fit$q_tau[["shape"]], 2 + 28 / 2)
  # q(lambda_k) is the Gamma conditional with expectations:
  # rate beta0 + sum_i E[W_ik] + sum_j E[H_kj]
  expect_equal(unname(fa$q_lambda[, "rate"]),
               unname(1 + colSums(fa$W) + rowSums(fa$H)), tolerance = 1e-8)
})

test_that("each VB sweep ends at the ELBO's maximum along every factor's scale", {
  # Scaling q(W[, k]) by c and q(H[k, ]) by 1 / c leaves the expected log
  # likelihood alone and changes the ELBO by -A (c - 1) - B (1 / c - 1) +
  # (I - J) log c (A = sum_i lamW_ik E[W_ik], B = sum_j lamH_kj E[H_kj]; the
  # entropies move by +-log c per entry), whose derivative at c = 1 is
  # zero only if A - B = I - J. Coordinate ascent alone meets that only at
  # its fixed points; the sweep's scale step meets it after every sweep.
  # The ELBO reported after 1, 2 and 5 sweeps, far from convergence, is
  # checked against one computed here from q's moments.
  d <- make_nmf_data(I = 6, J = 5, K = 2, sd = 0.1, seed = 8)
  X <- abs(d$X)
  X[2, 3] <- NA
  for (iter in c(1L, 2L, 5L)) {
    set.seed(11)
    fit <- bnmf(X, rank = 2, method = "vb", prior = exponential(rate = 1.5),
                noise = gamma_prior(2, 1), iter = iter, tol = 0)
    A <- colSums(fit$prior$lamW * fit$W)
    B <- rowSums(fit$prior$lamH * fit$H)
    expect_lt(max(abs(A - B - (nrow(X) - ncol(X)))), 1e-10 * max(A + B))
    expect_equal(fit$elbo, vb_elbo_r(fit, X, entropy = "moments"), tolerance = 1e-8)
  }
  # The same on a larger problem with masked rows, sparse input and a
  # rectangular X (I < J), after 3 sweeps
  set.seed(12)
  Xs <- Matrix::rsparsematrix(30, 45, 0.3, rand.x = function(n) rexp(n) * 3)
  Xm <- make_nmf_data(I = 30, J = 45, K = 3, sd = 0.3, seed = 13)$X
  Xm[sample(length(Xm), 200)] <- NA
  for (X in list(Xs, Xm)) {
    set.seed(14)
    fit <- bnmf(X, rank = 4, method = "vb", iter = 3, tol = 0)
    A <- colSums(fit$prior$lamW * fit$W)
    B <- rowSums(fit$prior$lamH * fit$H)
    expect_lt(max(abs(A - B - (nrow(X) - ncol(X)))), 1e-10 * max(A + B))
  }
})

test_that("the ELBO is exact when masked rows skip their own Gram matrix (K >= 10)", {
  # From K = 10 on (VB), a row (column) with at most half its entries missing
  # is updated from the full expected Gram matrix with corrections for its
  # missing entries (bnmf_cond_row_sub), and its terms of the expected SSE
  # are taken from the full matrix too; row 1 (75% missing) still forms its
  # own matrix. K = 12: VB's only (ICM's rows skip it from K = 16 on).
  for (K in c(12L, 16L)) {
    d <- make_nmf_data(I = 24, J = 20, K = K, sd = 0.2, seed = 21)
    X <- abs(d$X)
    set.seed(22)
    X[sample(length(X), 70)] <- NA
    X[1, 1:15] <- NA
    set.seed(23)
    fit <- bnmf(X, rank = K, method = "vb", prior = exponential(rate = 1.5),
                noise = gamma_prior(2, 1), iter = 20000, tol = 1e-15)
    expect_true(fit$converged)
    expect_equal(fit$elbo, vb_elbo_r(fit, X), tolerance = 1e-8)
  }
})
test_that("VB posterior means agree with Gibbs on a well-determined problem", {
  skip_on_cran()
  d <- make_nmf_data(I = 40, J = 30, K = 2, sd = 0.3, seed = 12)
  set.seed(13)
  gb <- bnmf(d$X, rank = 2, method = "gibbs", iter = 3000)
  vb <- bnmf(d$X, rank = 2, method = "vb", tol = 1e-10, iter = 5000)
  # E[WH]: the same to well within the posterior sd of each entry
  z <- abs(fitted(vb) - fitted(gb)) / predict(gb, se.fit = TRUE)$se.fit
  expect_lt(mean(z), 0.25)
  expect_gt(cor(as.vector(fitted(vb)), as.vector(fitted(gb))), 0.9999)
  # the noise precision
  expect_equal(vb$tau, gb$tau, tolerance = 0.05)
  # the factors, after matching and normalising each basis vector
  p <- bnmf:::match_factors(gb$W, vb$W)
  nrm <- function(W) sweep(W, 2, colSums(W), "/")
  expect_lt(max(abs(nrm(vb$W[, p]) - nrm(gb$W))), 0.01)
})

test_that("VB continues exactly with update() and predicts with uncertainty", {
  d <- make_nmf_data(I = 20, J = 15, K = 2, sd = 0.3, seed = 14)
  set.seed(15)
  a <- bnmf(d$X, rank = 2, method = "vb", iter = 60, tol = 0)
  set.seed(15)
  b <- bnmf(d$X, rank = 2, method = "vb", iter = 30, tol = 0)
  b <- update(b, iter = 30)
  expect_equal(b$W, a$W, tolerance = 1e-12)
  expect_equal(elbo(b), elbo(a), tolerance = 1e-12)
  # the sd of (WH)_ij under q, Var = sum_k E[W^2] E[H^2] - E[W]^2 E[H]^2
  p <- predict(a, se.fit = TRUE)
  i <- 3; j <- 7
  ew2 <- a$W[i, ]^2 + a$W_sd[i, ]^2
  eh2 <- a$H[, j]^2 + a$H_sd[, j]^2
  expect_equal(p$se.fit[i, j], sqrt(sum(ew2 * eh2) - sum(a$W[i, ]^2 * a$H[, j]^2)))
  h <- predict(a, newdata = d$X[, 1:4], type = "coef", se.fit = TRUE)
  expect_equal(dim(h$fit), c(2L, 4L))
  expect_true(all(h$se.fit > 0))
  # the coefficients of training columns are recovered by the fixed-W fit
  expect_equal(unname(h$fit), unname(a$H[, 1:4]), tolerance = 0.05)
})

# ---- vb_control(missing = "impute"): the missing entries filled in ----------

# One sweep of `missing` from the last state of `fit` (which ran with the
# other setting): the filled entries start at E[W] E[H] of that state (a
# masked state holds zeros there). Returns the continued chain's state.
vb_one_sweep <- function(fit, X, missing) {
  fit$settings$missing <- missing
  ch <- fit$chains[[1]]
  if (missing == "impute") {
    fit$chains[[1]]$latent <- (ch$W %*% ch$H)[which(is.na(as.matrix(X)))]
  }
  suppressWarnings(update(fit, iter = 1, progress = FALSE))$chains[[1]]
}

vb_state_change <- function(a, b) {
  rel <- function(x, y) max(abs(x - y)) / max(abs(y))
  c(W = rel(a$W, b$W), H = rel(a$H, b$H), W_var = rel(a$W_var, b$W_var),
    H_var = rel(a$H_var, b$H_var), tau = rel(a$tau, b$tau))
}

test_that("VB with the missing entries filled in has the masked sweep's fixed points", {
  # The filled sweep takes each row's right side from X with its missing
  # entries at E[W] E[H], less the row's own terms there, and its
  # precisions from the observed entries alone. A fixed point of the masked
  # sweep (a masked fit run to convergence) must be one of the filled
  # sweep: one sweep from it moves nothing beyond rounding. From a state
  # short of convergence the same sweep moves q (the check has power), as
  # it does from the fixed point when the data are filled with something
  # else than E[W] E[H].
  d <- make_nmf_data(I = 14, J = 10, K = 2, sd = 0.2, seed = 31)
  X <- abs(d$X)
  set.seed(32)
  X[sample(length(X), 28)] <- NA
  Xs <- X
  Xs[!is.na(Xs) & Xs < 0.4] <- 0
  Xs <- Matrix::Matrix(Xs, sparse = TRUE)
  cases <- list(dense = list(X = X, prior = exponential(rate = 1.5)),
                ard = list(X = X, prior = ard()),
                sparse = list(X = Xs, prior = exponential()))
  for (nm in names(cases)) {
    cs <- cases[[nm]]
    set.seed(33)
    fm <- bnmf(cs$X, rank = 2, method = "vb", prior = cs$prior, iter = 20000, tol = 0,
               control = vb_control("mask"), progress = FALSE)
    ch <- fm$chains[[1]]
    expect_lt(max(vb_state_change(vb_one_sweep(fm, cs$X, "mask"), ch)), 1e-12)
    expect_lt(max(vb_state_change(vb_one_sweep(fm, cs$X, "impute"), ch)), 1e-11,
              label = nm)
    # the data filled with zeros instead: the sweep moves
    fz <- fm
    fz$settings$missing <- "impute"
    expect_gt(max(vb_state_change(suppressWarnings(update(fz, iter = 1, progress = FALSE))$chains[[1]],
                                  ch)), 1e-3)
    set.seed(33)
    f5 <- bnmf(cs$X, rank = 2, method = "vb", prior = cs$prior, iter = 5, tol = 0,
               control = vb_control("mask"), progress = FALSE)
    expect_gt(max(vb_state_change(vb_one_sweep(f5, cs$X, "impute"), f5$chains[[1]])), 1e-4)
  }
})

test_that("a filled-in VB fit reports the exact ELBO and stops at the masked fixed point", {
  # After any number of sweeps the ELBO and expected SSE it reports are
  # those of its q over the observed entries (computed here from q's
  # moments); at convergence q satisfies the masked fixed-point equations
  # (vb_elbo_r's entropies come from them; with ARD, see the test above).
  d <- make_nmf_data(I = 6, J = 5, K = 2, sd = 0.1, seed = 8)
  X <- abs(d$X)
  X[cbind(c(1, 2, 4, 5, 6), c(2, 3, 1, 5, 4))] <- NA
  for (iter in c(1L, 2L, 5L)) {
    set.seed(42)
    fit <- bnmf(X, rank = 2, method = "vb", prior = exponential(rate = 1.5),
                noise = gamma_prior(2, 1), iter = iter, tol = 0,
                control = vb_control("impute"))
    expect_identical(fit$settings$missing, "impute")
    expect_equal(fit$elbo, vb_elbo_r(fit, X, entropy = "moments"), tolerance = 1e-8)
    esse <- sum(((X - fit$W %*% fit$H)^2 + (fit$W^2 + fit$W_sd^2) %*% (fit$H^2 + fit$H_sd^2) -
                   fit$W^2 %*% fit$H^2)[!is.na(X)])
    expect_equal(fit$trace$sse[iter], esse, tolerance = 1e-10)
    expect_equal(fit$q_tau[["rate"]], 1 + esse / 2, tolerance = 1e-10)
  }
  set.seed(43)
  fit <- bnmf(X, rank = 2, method = "vb", prior = exponential(rate = 1.5),
              noise = gamma_prior(2, 1), iter = 20000, tol = 1e-15,
              control = vb_control("impute"))
  expect_equal(fit$elbo, vb_elbo_r(fit, X), tolerance = 1e-8)
})

# The imputing W half sweep transcribed from its documentation (fill_sums in
# src/nmf_sweep.c, bnmf_vb_rows_diag in src/gauss_cond.c): row i's
# precisions from the observed entries, its right side from the filled X
# less z_ik s_ik, and the coordinates that moved corrected through
# a_i a_i' * G0 with a_ik = sqrt(s_ik / G0[k, k]).
vb_impute_w_half_r <- function(X, latent, W, H, Hv, lamW, tau, correct = TRUE) {
  K <- nrow(H)
  miss <- is.na(X)
  Xf <- X
  Xf[which(miss)] <- latent
  G <- H %*% t(H) + diag(rowSums(Hv), K)
  gm <- rowSums(H^2)
  B <- Xf %*% t(H)
  Wn <- W
  Wv <- W * 0
  for (i in seq_len(nrow(X))) {
    mi <- which(miss[i, ])
    s <- rowSums(H[, mi, drop = FALSE]^2)
    dg <- diag(G) - (s + rowSums(Hv[, mi, drop = FALSE]))
    if (any(!(dg >= 0.25 * diag(G)))) dg <- rowSums((H^2 + Hv)[, -mi, drop = FALSE])
    a <- if (correct) ifelse(gm > 0, sqrt(s / gm), 0) else numeric(K)
    z <- W[i, ]
    br <- B[i, ] - z * s
    u <- numeric(K)
    for (k in seq_len(K)) {
      num <- br[k] - sum(G[k, ] * z) + G[k, k] * z[k] + a[k] * sum(G[k, ] * u)
      mu <- (num - lamW[i, k] / tau) / dg[k]
      sd <- 1 / sqrt(tau * dg[k])
      al <- -mu / sd
      lam <- exp(dnorm(al, log = TRUE) - pnorm(al, lower.tail = FALSE, log.p = TRUE))
      m1 <- mu + sd * lam
      Wv[i, k] <- sd^2 * (1 + al * lam - lam^2)
      u[k] <- a[k] * (m1 - z[k])
      z[k] <- m1
    }
    Wn[i, ] <- z
  }
  list(W = Wn, W_var = Wv)
}

test_that("one imputing VB half sweep of W is its documented update", {
  # I = 11: two blocks of four rows (the four-lane kernel) and three rows
  # in a block of their own. (Row 2, most of it missing, has its
  # precisions summed over its observed entries in both; that changes only
  # their rounding.) A kernel without the correction of the moved
  # coordinates, in either path, fails the first expectation.
  set.seed(61)
  I <- 11L; J <- 9L; K <- 3L
  W0 <- matrix(rexp(I * K), I, K)
  H0 <- matrix(rexp(K * J), K, J)
  X <- W0 %*% H0 + matrix(rnorm(I * J, sd = 0.3), I, J)
  X[sample(I * J, 25)] <- NA
  X[2, 1:7] <- NA
  X[X > 0 & !is.na(X) & seq_along(X) %% 13 == 0] <- NA
  W <- matrix(runif(I * K, 0.2, 1.5), I, K)
  H <- matrix(runif(K * J, 0.2, 1.5), K, J)
  Hv <- matrix(runif(K * J, 0.01, 0.2), K, J)
  lamW <- matrix(runif(I * K, 0.5, 2), I, K)
  tau <- 2.5
  data <- bnmf:::prepare_data(X, K)
  latent <- bnmf:::wh_entries(W, H, data$miss_i, data$miss_j)
  prior <- list(lamW = lamW, lamH = matrix(1, K, J), alpha = 1, beta = 1, ard = numeric())
  st <- bnmf:::new_state(X, data, W, H, tau, latent, FALSE,
                         vb = list(H_var = Hv, tau_rate = 1 + data$n_obs / 2))
  bnmf:::engine_sweeps(st, data, prior, 1, rule = "vb", masked = FALSE, update = "W")
  ref <- vb_impute_w_half_r(X, latent, W, H, Hv, lamW, tau)
  expect_equal(matrix(st$W, I, K), ref$W, tolerance = 1e-12)
  expect_equal(matrix(st$W_var, I, K), ref$W_var, tolerance = 1e-12)
  expect_equal(as.vector(st$H), as.vector(H))
  # the test has power: without the correction of the moved coordinates
  # the rows end elsewhere
  ref0 <- vb_impute_w_half_r(X, latent, W, H, Hv, lamW, tau, correct = FALSE)
  expect_gt(max(abs(ref0$W - ref$W)), 1e-4)
})

test_that("a filled-in VB fit ends where the masked one does", {
  # Same start, each run to tol = 1e-12: the same local optimum, the same
  # ELBO, means and sds up to the convergence error.
  d <- make_nmf_data(I = 60, J = 40, K = 3, sd = 0.3, seed = 51)
  X <- d$X
  set.seed(52)
  X[sample(length(X), 480)] <- NA
  fits <- lapply(c(mask = "mask", impute = "impute"), function(m) {
    set.seed(53)
    bnmf(X, rank = 3, method = "vb", iter = 20000, tol = 1e-12, control = vb_control(m))
  })
  expect_true(fits$impute$converged)
  expect_equal(fits$impute$elbo, fits$mask$elbo, tolerance = 1e-9)
  expect_equal(fitted(fits$impute), fitted(fits$mask), tolerance = 1e-4)
  expect_equal(fits$impute$W_sd, fits$mask$W_sd, tolerance = 1e-4)
})

test_that("vb_control(): \"auto\" by default, resolved on the data, kept by update(), checked", {
  tm <- third_missing() # a third of every row and every column missing
  X <- tm$X
  Xa <- tm$Xa
  miss <- tm$miss
  expect_identical(vb_control()$missing, "auto")
  fa <- expect_auto_setting(Xa, "vb", "impute", 30)
  # one more entry of the first row: "mask"
  Xm <- Xa
  Xm[1, which(!miss[1, ])[1]] <- NA
  fm <- expect_auto_setting(Xm, "vb", "mask", 30)
  # update() continues with the setting the fit ran
  expect_update_continues(Xa, "vb", "mask", 30)
  expect_update_continues(Xa, "vb", "impute", 30)
  # print() says which ran, when entries are missing
  expect_output(print(fa), "missing entries: filled with E[W] E[H]", fixed = TRUE)
  expect_output(print(fm), "missing entries: left out", fixed = TRUE)
  # complete data: recorded as "mask", not printed
  fx <- missing_fit(X, "vb", 30)
  expect_identical(fx$settings$missing, "mask")
  expect_false(any(grepl("missing entries", capture.output(print(fx)))))
  expect_error(vb_control("none"), "missing", class = "bnmf_error_input")
  expect_error(bnmf(Xa, rank = 2, method = "vb", control = icm_control()),
               "vb_control", class = "bnmf_error_input")
  expect_error(bnmf(Xa, rank = 2, method = "gibbs", control = vb_control()),
               "control", class = "bnmf_error_input")
  expect_error(bnmf(round(abs(X)), rank = 2, method = "vb", likelihood = "poisson",
                    control = vb_control()), "Gaussian likelihood", class = "bnmf_error_input")
  expect_error(bnmf(Xa, rank = c(2, 2), method = "vb", control = vb_control()),
               "tri-factorisation", class = "bnmf_error_input")
  expect_error(bnmf(Xa, rank = c(2, 2), method = "icm", control = icm_control()),
               "tri-factorisation", class = "bnmf_error_input")
})
