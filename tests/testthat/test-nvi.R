# NVI / ONVI machinery (R/engine-rrt-nvi.R): the entropy bound and the second-order
# expectation against brute Monte Carlo, the derivatives against finite
# differences, the online step on a bimodal target, NVI's monotone ELBO.

nvi_ns <- function(name) get(name, envir = asNamespace("bnmf"))

# Density of N(mu, s I) at the columns of th (D x n).
iso_dens <- function(th, mu, s) {
  D <- length(mu)
  exp(-colSums((th - mu)^2) / (2 * s) - D / 2 * log(2 * pi * s))
}

rmix <- function(n, mu, s, w) {
  comp <- sample.int(ncol(mu), n, replace = TRUE, prob = w)
  mu[, comp, drop = FALSE] + matrix(rnorm(nrow(mu) * n), nrow(mu)) * rep(sqrt(s[comp]), each = nrow(mu))
}

mixtures <- list(
  two_overlap = list(mu = cbind(c(0, 0, 0), c(0.8, -0.3, 0.2)), s = c(1, 0.5), w = c(0.3, 0.7)),
  two_apart = list(mu = cbind(c(0, 0, 0), c(12, 0, 0)), s = c(1, 2), w = c(0.6, 0.4)),
  three_overlap = list(mu = cbind(c(0, 0, 0), c(1, 0, 0), c(0, 1, 0.5)), s = c(0.7, 1, 1.5),
                       w = c(0.2, 0.5, 0.3)),
  three_apart = list(mu = cbind(c(0, 0, 0), c(15, 0, 0), c(0, 15, 0)), s = c(0.5, 1, 2),
                     w = c(0.5, 0.25, 0.25))
)

test_that("the entropy bound matches Monte Carlo of its definition and lies below the entropy", {
  withr::local_seed(11)
  lb <- nvi_ns("mixture_entropy_lb")
  n <- 20000
  for (nm in names(mixtures)) {
    mx <- mixtures[[nm]]
    M <- ncol(mx$mu)
    b <- lb(mx$mu, mx$s, mx$w)
    # The bound's definition: -sum_m w_m log sum_j w_j E_{theta ~ q_m} q_j(theta).
    a <- se <- numeric(M)
    for (m in seq_len(M)) {
      th <- mx$mu[, m] + matrix(rnorm(3 * n), 3) * sqrt(mx$s[m])
      v <- Reduce(`+`, lapply(seq_len(M), function(j) mx$w[j] * iso_dens(th, mx$mu[, j], mx$s[j])))
      a[m] <- mean(v)
      se[m] <- sd(v) / sqrt(n)
    }
    b_mc <- -sum(mx$w * log(a))
    b_se <- sqrt(sum((mx$w * se / a)^2))
    expect_lt(abs(b - b_mc), 5 * b_se, label = nm)
    # The Shannon entropy -E_q[log q] by Monte Carlo: the bound lies below it
    # (by about D/2 log(e/2) = 0.46 here, far beyond the Monte Carlo error).
    th <- rmix(n, mx$mu, mx$s, mx$w)
    lq <- log(Reduce(`+`, lapply(seq_len(M), function(j) mx$w[j] * iso_dens(th, mx$mu[, j], mx$s[j]))))
    h_mc <- -mean(lq)
    h_se <- sd(lq) / sqrt(n)
    expect_lt(b, h_mc - 5 * h_se, label = nm)
  }
})

test_that("the entropy bound of one component is its Renyi-2 entropy, D/2 log(e/2) below Shannon's", {
  lb <- nvi_ns("mixture_entropy_lb")
  D <- 7; s <- 0.3
  b <- lb(matrix(1:7, D), s, 1)
  expect_equal(b, D / 2 * log(4 * pi * s), tolerance = 1e-12)
  expect_equal(b, D / 2 * log(2 * pi * exp(1) * s) - D / 2 * log(exp(1) / 2), tolerance = 1e-12)
  # Far-apart components: the bound tends to sum_m w_m D/2 log(4 pi s_m) - sum_m w_m log w_m.
  mx <- mixtures$three_apart
  expect_equal(lb(mx$mu * 100, mx$s, mx$w),
               sum(mx$w * 3 / 2 * log(4 * pi * mx$s)) - sum(mx$w * log(mx$w)), tolerance = 1e-12)
  expect_error(lb(mx$mu, mx$s[1:2], mx$w), class = "bnmf_error_input")
})

# A small Gaussian-likelihood problem with a missing entry.
nvi_toy <- function(sigma2 = 0.05, rate = 1) {
  W0 <- matrix(c(2, 3, 2.5, 4, 3, 2, 3.5, 2.2), 4, 2)
  H0 <- matrix(c(2, 3, 3, 2, 2.4, 2.8), 2, 3)
  X <- W0 %*% H0 + c(0.1, -0.2, 0.05, 0, 0.15, -0.1, 0.2, -0.05, 0, 0.1, -0.15, 0.05)
  X[2, 3] <- NA
  list(target = nvi_ns("nvi_target")(X, 2, sigma2 = sigma2, rate = rate),
       theta = c(W0, H0))
}

test_that("the second-order expectation plus the exact fourth-order term matches Monte Carlo of E_q[log p]", {
  withr::local_seed(12)
  toy <- nvi_toy(sigma2 = 0.01)
  tg <- toy$target
  D <- tg$D
  W <- matrix(toy$theta[1:8], 4); H <- matrix(toy$theta[9:14], 2)
  # Two components far from theta = 0 (ten standard deviations), so q puts
  # no mass where log p = -Inf at this sample size: the mode and its label switch.
  mu <- cbind(toy$theta, c(W[, 2:1], H[2:1, ]))
  s <- c(0.04, 0.03); w <- c(0.4, 0.6)
  approx <- nvi_ns("nvi_expect2")(mu, s, w, tg)
  # log p is a polynomial of degree 4: its odd central moments vanish and
  # the fourth-order term is -R n_obs s^2 / (2 sigma2) per component.
  quartic <- -sum(w * tg$R * tg$n_obs * s^2 / (2 * tg$sigma2))
  # Brute Monte Carlo, component by component (E_q = sum_m w_m E_{q_m}), with
  # the control variate g'e + e'He/2 - s tr(H)/2 of mean zero (H, the full
  # Hessian, from central differences of the gradient).
  n <- 60000
  mc <- vapply(1:2, function(m) {
    h <- 1e-4
    Hs <- vapply(seq_len(D), function(k) {
      e <- replace(numeric(D), k, h)
      (tg$grad(mu[, m] + e) - tg$grad(mu[, m] - e)) / (2 * h)
    }, numeric(D))
    Hs <- (Hs + t(Hs)) / 2
    e <- matrix(rnorm(D * n), D) * sqrt(s[m])
    f <- apply(mu[, m] + e, 2, tg$logp)
    expect_true(all(is.finite(f)))
    cv <- colSums(e * tg$grad(mu[, m])) + colSums(e * (Hs %*% e)) / 2 - s[m] / 2 * sum(diag(Hs))
    c(mean(f - cv), var(f - cv) / n)
  }, numeric(2))
  e_mc <- sum(w * mc[1, ]); e_se <- sqrt(sum(w^2 * mc[2, ]))
  expect_lt(abs(approx + quartic - e_mc), 5 * e_se)
  # The second-order term alone misses it by more than the Monte Carlo error.
  expect_gt(abs(approx - e_mc), 5 * e_se)
  # And the exact one-component pieces: f(mu) + s / 2 tr Hess f(mu).
  expect_equal(approx, sum(w * c(tg$logp(mu[, 1]) + s[1] / 2 * tg$hess_trace(mu[, 1]),
                                 tg$logp(mu[, 2]) + s[2] / 2 * tg$hess_trace(mu[, 2]))))
})

test_that("the gradient, the Hessian trace and its gradient equal finite differences", {
  toy <- nvi_toy()
  tg <- toy$target
  th <- toy$theta * 0.9 + 0.05 * seq_along(toy$theta) / length(toy$theta)
  D <- tg$D
  # log p is quadratic along each coordinate: central differences are exact
  # up to rounding.
  h <- 1e-4
  e <- function(k) replace(numeric(D), k, 1)
  g_fd <- vapply(seq_len(D), function(k) (tg$logp(th + h * e(k)) - tg$logp(th - h * e(k))) / (2 * h), 0)
  expect_equal(tg$grad(th), g_fd, tolerance = 1e-7)
  h <- 1e-3
  t_fd <- sum(vapply(seq_len(D), function(k) {
    (tg$logp(th + h * e(k)) - 2 * tg$logp(th) + tg$logp(th - h * e(k))) / h^2
  }, 0))
  expect_equal(tg$hess_trace(th), t_fd, tolerance = 1e-6)
  # Without missing entries: -(J tr(W'W) + I tr(HH')) / sigma2 (the paper's form).
  X <- matrix(1:12 / 3, 4, 3)
  tg2 <- nvi_ns("nvi_target")(X, 2, sigma2 = 0.3)
  p <- tg2$split(th)
  expect_equal(tg2$hess_trace(th), -(3 * sum(p$W^2) + 4 * sum(p$H^2)) / 0.3)
  gt_fd <- vapply(seq_len(D), function(k) (tg$hess_trace(th + h * e(k)) - tg$hess_trace(th - h * e(k))) / (2 * h), 0)
  expect_equal(tg$grad_hess_trace(th), gt_fd, tolerance = 1e-7)
  # The log joint itself, from R's densities.
  p <- tg$split(th)
  obs <- !is.na(tg$X)
  expect_equal(tg$logp(th), sum(dnorm(tg$X[obs], (p$W %*% p$H)[obs], sqrt(tg$sigma2), log = TRUE)) +
                 sum(dexp(th, 1, log = TRUE)))
  tg3 <- nvi_ns("nvi_target")(tg$X, 2, sigma2 = 0.2, rate = 2.5)
  expect_equal(tg3$logp(th), sum(dnorm(tg$X[obs], (p$W %*% p$H)[obs], sqrt(0.2), log = TRUE)) +
                 sum(dexp(th, 2.5, log = TRUE)))
  tu3 <- nvi_ns("nvi_target")(tg$X, 2, "uniform", epsilon = 0.4, rate = 2.5)
  res0 <- (tg$X - matrix(toy$theta[1:8], 4) %*% matrix(toy$theta[9:14], 2))[obs]
  expect_equal(tu3$logp(toy$theta), sum(dunif(res0, -0.4, 0.4, log = TRUE)) +
                 sum(dexp(toy$theta, 2.5, log = TRUE)))
  # Support: -Inf below zero; the uniform box.
  expect_identical(tg$logp(replace(th, 3, -1e-9)), -Inf)
  tu <- nvi_ns("nvi_target")(tg$X, 2, "uniform", epsilon = 0.5)
  expect_equal(tu$logp(toy$theta), -sum(toy$theta)) # n_obs log(2 epsilon) = 0
  expect_identical(tu$logp(toy$theta * 1.2), -Inf)
  expect_equal(tu$grad(toy$theta), rep(-1, 14))
  expect_identical(tu$hess_trace(toy$theta), 0)
})

test_that("the ELBO gradient in a mean equals finite differences", {
  toy <- nvi_toy()
  tg <- toy$target
  D <- tg$D
  st <- nvi_ns("onvi_new")(tg)
  st$mu <- cbind(toy$theta, toy$theta + 0.05 * sin(1:D), toy$theta + 0.04 * cos(1:D))
  st$sigma2 <- c(0.002, 0.003, 0.0025); st$w <- c(0.2, 0.3, 0.5)
  st$f <- apply(st$mu, 2, tg$logp); st$t <- apply(st$mu, 2, tg$hess_trace)
  st$d2 <- nvi_ns("nvi_dist2")(st$mu)
  el <- function(x, n) nvi_ns("nvi_elbo_cached")(nvi_ns("nvi_move")(st, n, x, tg), D)
  h <- 1e-6
  for (n in 1:3) {
    g_fd <- vapply(seq_len(D), function(k) {
      e <- replace(numeric(D), k, h)
      (el(st$mu[, n] + e, n) - el(st$mu[, n] - e, n)) / (2 * h)
    }, 0)
    expect_equal(nvi_ns("nvi_grad_mean")(st, n, tg), g_fd, tolerance = 1e-5)
  }
  # The cached ELBO is onvi_elbo() recomputed from scratch.
  expect_equal(nvi_ns("nvi_elbo_cached")(st, D), nvi_ns("onvi_elbo")(st, tg))
})

test_that("onvi_offer() accepts a second separated mode, rejects duplicates and drops a dominated component", {
  toy <- nvi_toy(sigma2 = 0.01)
  tg <- toy$target
  th1 <- toy$theta
  W <- matrix(th1[1:8], 4); H <- matrix(th1[9:14], 2)
  th2 <- c(W[, 2:1], H[2:1, ]) # the label-switched mode: same log joint
  st <- nvi_ns("onvi_new")(tg)
  o <- nvi_ns("onvi_offer")(st, th1, tg)
  expect_true(o$accepted)
  expect_equal(o$state$elbo, nvi_ns("onvi_elbo")(o$state, tg))
  # One component: s = -D / tr Hess f.
  expect_equal(o$state$sigma2, -tg$D / tg$hess_trace(o$state$mu[, 1]))
  o2 <- nvi_ns("onvi_offer")(o$state, th2, tg)
  expect_true(o2$accepted)
  # Two equal, far-apart components: weights 1/2 and an entropy gain of log 2.
  expect_equal(o2$gain, log(2), tolerance = 1e-6)
  expect_equal(o2$state$w, c(0.5, 0.5), tolerance = 1e-4)
  expect_equal(o2$state$elbo, nvi_ns("onvi_elbo")(o2$state, tg))
  o3 <- nvi_ns("onvi_offer")(o2$state, th1, tg)
  expect_false(o3$accepted)
  expect_lt(o3$gain, 1e-3)
  expect_identical(o3$state$mu, o2$state$mu)
  o4 <- nvi_ns("onvi_offer")(o2$state, th1 * (1 + 1e-4), tg)
  expect_false(o4$accepted)
  expect_identical(nrow(o4$state$trace), 3L)
  # A poor component first, then the mode: the poor one is dropped.
  bad <- th1 * 1.08
  o5 <- nvi_ns("onvi_offer")(st, bad, tg)
  o6 <- nvi_ns("onvi_offer")(o5$state, th1, tg)
  expect_true(o6$accepted)
  expect_identical(ncol(o6$state$mu), 1L)
  expect_identical(o6$state$trace$dropped, c(0L, 1L))
  expect_equal(o6$state$mu[, 1], o$state$mu[, 1])
  expect_equal(o6$state$elbo, o$state$elbo)
  expect_error(nvi_ns("onvi_offer")(st, th1[-1], tg), class = "bnmf_error_input")
})

test_that("uniform ONVI: fixed variance from one-component NVI and the entropy threshold", {
  toy <- nvi_toy()
  tu <- nvi_ns("nvi_target")(toy$target$X, 2, "uniform", epsilon = 0.3)
  th1 <- toy$theta
  W <- matrix(th1[1:8], 4); H <- matrix(th1[9:14], 2)
  th2 <- c(W[, 2:1], H[2:1, ])
  st <- nvi_ns("onvi_new")(tu)
  o <- nvi_ns("onvi_offer")(st, th1, tu)
  expect_true(o$accepted)
  # NVI with M = 1 of the moment-matched Gaussian (variance epsilon^2 / 3),
  # at the best scale of the orbit (W_k c_k, H_k / c_k): the largest
  # -D / tr Hess over the orbit, found here by numerical optimisation.
  tg <- nvi_ns("nvi_target")(toy$target$X, 2, sigma2 = 0.3^2 / 3)
  orbit <- function(lc) c(W * rep(exp(lc), each = 4), H / exp(lc))
  best <- optim(c(0, 0), function(lc) -tg$hess_trace(orbit(lc)), method = "BFGS",
                control = list(reltol = 1e-14))
  expect_equal(o$state$sigma2, tg$D / best$value, tolerance = 1e-8)
  expect_gt(o$state$sigma2, -tg$D / tg$hess_trace(th1)) # th1 is not at that scale
  # the same variance whatever the scale the first centre is offered at
  o_sc <- nvi_ns("onvi_offer")(st, orbit(c(0.7, -1.2)), tu)
  expect_equal(o_sc$state$sigma2, o$state$sigma2, tolerance = 1e-12)
  o2 <- nvi_ns("onvi_offer")(o$state, th2, tu)
  expect_true(o2$accepted)
  expect_gt(o2$gain, o2$state$trace$threshold[2])
  expect_identical(o2$state$sigma2[2], o2$state$sigma2[1]) # one fixed variance
  o3 <- nvi_ns("onvi_offer")(o2$state, th1, tu)
  expect_false(o3$accepted)
  expect_gt(o3$state$trace$threshold[3], 0)
  expect_false(nvi_ns("onvi_offer")(o2$state, th1 * 1.3, tu)$accepted) # infeasible
})

test_that("uniform ONVI keeps two separated exact solutions and rejects duplicates of them", {
  withr::local_seed(1)
  lb <- nvi_ns("mixture_entropy_lb")
  # The two exact NMFs of the Laurberg toy (12 x 12, noise 0.01), both inside
  # the box; the first moved along its scale orbit (W H unchanged), so its
  # log joint (the prior's part) is lower.
  toy <- laurberg_toy(12, noise = 0.01)
  tu <- nvi_ns("nvi_target")(toy$X, 3, "uniform", epsilon = 0.05)
  D <- tu$D
  orbit <- function(theta, c) {
    p <- tu$split(theta)
    c(p$W %*% diag(c, 3), diag(1 / c, 3) %*% p$H)
  }
  mode2 <- function(s) nvi_ns("prior_scale")(c(s$W, s$H), 12, 12, 3)
  th1 <- orbit(mode2(toy$solutions[[1]]), c(1.5, 1, 1))
  th2 <- mode2(toy$solutions[[2]])
  f <- c(tu$logp(th1), tu$logp(th2))
  expect_true(all(is.finite(f)))
  expect_gt(f[2] - f[1], 1) # the second is better by more than 1
  st <- nvi_ns("onvi_new")(tu)
  o1 <- nvi_ns("onvi_offer")(st, th1, tu)
  o2 <- nvi_ns("onvi_offer")(o1$state, th2, tu)
  expect_true(o2$accepted)
  # Both kept: the first is not dropped (its removal costs far more than
  # the absolute criterion).
  expect_identical(ncol(o2$state$mu), 2L)
  expect_identical(o2$state$trace$dropped, c(0L, 0L))
  s <- o2$state$sigma2[1]
  expect_identical(o2$state$sigma2, c(s, s))
  # Far apart (|th1 - th2|^2 / (4 s) is in the thousands): the optimal
  # weights are proportional to exp(E_m), E_m = D/2 log(4 pi s) + f_m, and
  # the ELBO is log(exp(E_1) + exp(E_2)).
  expect_gt(sum((th1 - th2)^2) / (4 * s), 1000)
  E <- D / 2 * log(4 * pi * s) + f
  expect_equal(o2$state$w, exp(E - max(E)) / sum(exp(E - max(E))), tolerance = 1e-6)
  expect_equal(o2$state$elbo, max(E) + log(sum(exp(E - max(E)))), tolerance = 1e-10)
  expect_equal(o2$state$elbo, nvi_ns("onvi_elbo")(o2$state, tu))
  # The acceptance threshold: the largest rise of the entropy bound that a
  # copy of the nearest component moved by sqrt(s) in every coordinate
  # brings (over its weight), from the entropy bound itself.
  thr_ref <- function(state, k) {
    dup <- state$mu[, k] + sqrt(s)
    M <- ncol(state$mu)
    h <- function(w) lb(cbind(state$mu, dup), rep(s, M + 1), c((1 - w) * state$w, w))
    stats::optimize(h, c(0, 1), maximum = TRUE, tol = 1e-10)$objective -
      lb(state$mu, rep(s, M), state$w)
  }
  expect_equal(o2$state$trace$threshold[2], thr_ref(o1$state, 1), tolerance = 1e-8)
  # Duplicates are rejected: th2 moved a little along its scale orbit, and
  # th1 itself; the state does not change.
  o3 <- nvi_ns("onvi_offer")(o2$state, orbit(th2, rep(1.001, 3)), tu)
  expect_false(o3$accepted)
  expect_equal(o3$state$trace$threshold[3], thr_ref(o2$state, 2), tolerance = 1e-8)
  expect_lt(o3$gain, o3$state$trace$threshold[3])
  o4 <- nvi_ns("onvi_offer")(o3$state, th1, tu)
  expect_false(o4$accepted)
  expect_identical(o4$state$mu, o2$state$mu)
  expect_identical(o4$state$w, o2$state$w)
})

test_that("nvi_fit(): the ELBO never decreases and is the recomputed ELBO", {
  withr::local_seed(13)
  toy <- nvi_toy(sigma2 = 0.02)
  tg <- toy$target
  fit <- nvi_ns("nvi_fit")(tg, 4, NULL, 15)
  e <- fit$trace$elbo
  expect_true(all(diff(e) >= 0))
  expect_gt(e[length(e)], e[1])
  expect_equal(fit$elbo, nvi_ns("onvi_elbo")(fit, tg))
  # Every mean ends at a KKT point of the recomputed ELBO on theta >= 0 (the
  # others fixed): no slope where mu > 0, none into the orthant where mu = 0
  # (differences one-sided there: log p is -Inf below 0). Here the largest
  # slopes are 3e-3 to 1.4e-2 at the stopping rule; means stopped short
  # (L-BFGS-B limited to 3 steps) leave slopes of 0.24 to 2.7, a gradient
  # without its entropy term slopes of 0.31 and 0.37.
  h <- 1e-5
  for (n in 1:4) {
    g <- vapply(seq_len(tg$D), function(k) {
      up <- fit; up$mu[k, n] <- up$mu[k, n] + h
      dn <- fit; dn$mu[k, n] <- max(dn$mu[k, n] - h, 0)
      (nvi_ns("onvi_elbo")(up, tg) - nvi_ns("onvi_elbo")(dn, tg)) / (up$mu[k, n] - dn$mu[k, n])
    }, 1)
    expect_lt(max(abs(g[fit$mu[, n] > 0]), g[fit$mu[, n] == 0]), 0.1)
  }
  expect_equal(fit$w, rep(0.25, 4))
  # Uniform: means move inside the box, variances stay fixed.
  tu <- nvi_ns("nvi_target")(tg$X, 2, "uniform", epsilon = 0.3)
  fu <- nvi_ns("nvi_fit")(tu, 2, list(toy$theta, toy$theta * 1.002), 5)
  expect_true(all(diff(fu$trace$elbo) >= 0))
  expect_equal(fu$elbo, nvi_ns("onvi_elbo")(fu, tu))
  expect_error(nvi_ns("nvi_fit")(tu, 2, list(toy$theta * 2), 5), class = "bnmf_error_input")
})

test_that("nvi_target() defaults come from first NNLS fits and bad input is refused", {
  withr::local_seed(14)
  X <- make_nmf_data(30, 20, 3, sd = 0.1)$X
  tg <- nvi_ns("nvi_target")(X, 3)
  # Mean squared residual of a least-squares fit: 0.01 times about
  # 1 - (I + J) K / (I J) = 0.75 for the noise of sd 0.1.
  expect_gt(tg$sigma2, 0.005)
  expect_lt(tg$sigma2, 0.01)
  tu <- nvi_ns("nvi_target")(X, 3, "uniform")
  expect_gt(tu$epsilon, 2 * sqrt(tg$sigma2))
  # An integer matrix is the same data: the same first fits (same seed),
  # noise and log joint as its double copy.
  Xi <- matrix(as.integer(round(10 * X)), nrow(X))
  th <- c(rep(0.5, 30 * 3), rep(1, 3 * 20))
  withr::local_seed(15)
  ti <- nvi_ns("nvi_target")(Xi, 3)
  withr::local_seed(15)
  td <- nvi_ns("nvi_target")(Xi + 0, 3)
  expect_identical(typeof(ti$X), "double")
  expect_identical(ti$sigma2, td$sigma2)
  expect_identical(ti$logp(th), td$logp(th))
  expect_equal(ti$logp(th), sum(dnorm(Xi, rep(3 * 0.5, 30 * 20), sqrt(ti$sigma2), log = TRUE)) +
                 sum(dexp(th, 1, log = TRUE)))
  eps <- max(abs(Xi - 1.5)) + 1 # W H = 1.5 everywhere: inside the box
  tu <- nvi_ns("nvi_target")(Xi, 3, "uniform", epsilon = eps)
  expect_equal(tu$logp(th), -length(Xi) * log(2 * eps) - sum(th))
  expect_error(nvi_ns("nvi_target")(X > 1, 3), class = "bnmf_error_input", regexp = "`X`")
  expect_error(nvi_ns("nvi_target")(X, 3, sigma2 = -1), class = "bnmf_error_input")
  expect_error(nvi_ns("nvi_target")(X, 3, "uniform", epsilon = 0), class = "bnmf_error_input")
  expect_error(nvi_ns("nvi_target")(X, 0), class = "bnmf_error_input")
  expect_error(nvi_ns("nvi_target")(X, 3, rate = -1), class = "bnmf_error_input")
})

test_that("the scale optimisation keeps W H, equalises column norms and maximises the Hessian term", {
  toy <- nvi_toy(sigma2 = 0.01, rate = 0.01)
  tg <- toy$target
  p <- tg$split(toy$theta)
  # Unbalanced scales: W large, H small.
  th <- c(p$W %*% diag(c(3, 5)), diag(c(1 / 3, 1 / 5)) %*% p$H)
  new <- nvi_ns("nvi_rescale")(th, tg)
  q <- tg$split(new)
  expect_equal(q$W %*% q$H, p$W %*% p$H)
  expect_equal(sqrt(colSums(q$W^2))[1], sqrt(colSums(q$W^2))[2])
  expect_gt(tg$hess_trace(new), tg$hess_trace(th))
  # beta is the maximiser along (beta W S, S^-1 H / beta).
  at <- function(b) tg$hess_trace(c(q$W * b, q$H / b))
  expect_gt(at(1), at(1.01))
  expect_gt(at(1), at(0.99))
})
