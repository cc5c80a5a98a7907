# bnmf(method = "hmc"): Hamiltonian Monte Carlo on the particle model (SILF
# likelihood, Dirichlet(1) columns of W, exponential H).

# ---- joint-distribution test (Geweke 2004) ----------------------------------
#
# The test alternates an HMC transition of (W, H) given X with a fresh draw of
# X given (W, H). That needs p(X | W, H) to be a proper density in X whose
# normalising constant does not depend on (W, H): otherwise the posterior the
# sampler targets, prior x exp(-C SILF(f_X(W, H))), is not the conditional of
# the joint distribution we simulate. With the Frobenius objective and X
# ranging over all of R^(I x J) (negative entries allowed, which the internal
# kernel accepts; bnmf() itself refuses them) it is:
#   exp(-C SILF(|X - WH|^2))
# depends on X only through the radius r = |X - WH|, and SILF(t) >= t - eps
# gives Gaussian tails, so it integrates to a constant Z(eps, beta, C, IJ)
# free of (W, H). Drawing from it: X = WH + r U with U uniform on the unit
# sphere of R^(IJ) and t = r^2 of density t^(IJ/2 - 1) exp(-C SILF(t)),
# sampled exactly by rejection from Gamma(IJ/2, rate C) with acceptance
# probability exp(C (t - SILF(t) - eps)) <= 1. So the test checks the
# sampler on the very likelihood of the package, not a stand-in. (With
# X >= 0 the normaliser would depend on WH.)
#
# Summaries: W[1, 1] and W[I, K] (Beta(1, I - 1), the margins of
# Dirichlet(1)), sum(H) (Gamma(KJ, rate)), H[1, 1] (Exp(rate)); the harness
# of helper-geweke.R compares means, second moments and three quantile
# probabilities with batch-means standard errors. The kernel is the one of
# the fit after warm-up: a fixed (jittered) step size, unit metric, the
# leapfrog with reflection, then the exact redraw of the column scales.

rsilf_radius2 <- function(n, lik, C = lik$C) {
  repeat {
    t <- stats::rgamma(1, n / 2, C)
    if (stats::runif(1) < exp(C * (t - bnmf:::silf_loss(t, lik$epsilon, lik$beta) - lik$epsilon))) {
      return(t)
    }
  }
}

# `C_data`: the slope of the likelihood the data are drawn from (the sampler
# always uses lik$C); a different value must make the test fail.
geweke_hmc_model <- function(I, J, K, rate = 1, lik = silf(1, beta = 0.3, C = 2),
                             eps = 0.2, L = 8, C_data = lik$C) {
  draw_x <- function(W, H) {
    u <- stats::rnorm(I * J)
    W %*% H + sqrt(rsilf_radius2(I * J, lik, C_data)) * matrix(u / sqrt(sum(u^2)), I, J)
  }
  state <- function(q, X) {
    m <- bnmf:::hmc_model(X, K, lik, rate)
    list(q = q, m = m, ev = bnmf:::hmc_eval(q, m))
  }
  init <- function() {
    V <- matrix(stats::rexp(I * K), I, K)
    H <- matrix(stats::rexp(K * J, rate), K, J)
    state(c(V, H), draw_x(V / rep(colSums(V), each = I), H))
  }
  step <- function(s) {
    st <- bnmf:::hmc_transition(s$q, s$ev, s$m, eps * stats::runif(1, 0.8, 1.2), L,
                                rep(1, length(s$q)))
    r <- bnmf:::hmc_rescale(st$q, st$ev, s$m)
    state(r$q, draw_x(r$ev$W, r$ev$H))
  }
  stats <- function(s) {
    c(W11 = s$ev$W[1, 1], WIK = s$ev$W[I, K], sumH = sum(s$ev$H), H11 = s$ev$H[1, 1])
  }
  bet <- function(a, b) {
    list(mean = a / (a + b), var = a * b / ((a + b)^2 * (a + b + 1)),
         q = function(p) stats::qbeta(p, a, b))
  }
  list(init = init, step = step, stats = stats, prior = NULL,
       exact = list(W11 = bet(1, I - 1), WIK = bet(1, I - 1), sumH = geweke_gamma(K * J, rate),
                    H11 = geweke_gamma(1, rate)))
}

test_that("the rejection sampler of the SILF radius matches its density", {
  lik <- silf(1, beta = 0.3, C = 2)
  n <- 6
  withr::local_seed(61)
  t <- replicate(20000, rsilf_radius2(n, lik))
  dens <- function(t) t^(n / 2 - 1) * exp(-lik$C * bnmf:::silf_loss(t, lik$epsilon, lik$beta))
  Z <- stats::integrate(dens, 0, Inf)$value
  m1 <- stats::integrate(function(t) t * dens(t), 0, Inf)$value / Z
  p1 <- stats::integrate(dens, 0, 1)$value / Z
  expect_lt(abs(mean(t) - m1) / (stats::sd(t) / sqrt(length(t))), 4.5)
  expect_lt(abs(mean(t <= 1) - p1) / sqrt(p1 * (1 - p1) / length(t)), 4.5)
})

test_that("HMC gets the joint distribution right (SILF likelihood, Frobenius)", {
  skip_on_cran()
  model <- geweke_hmc_model(I = 3, J = 2, K = 2, rate = 1.5)
  expect_geweke(geweke_run(model, n = 12000, seed = 62), label = "HMC")
})

test_that("the joint-distribution test detects data drawn from another likelihood", {
  skip_on_cran()
  # Data from slope C = 1 while the sampler assumes C = 2: the posterior of H
  # is then wrong, and sum(H) must fail.
  model <- geweke_hmc_model(I = 3, J = 2, K = 2, rate = 1.5, C_data = 1)
  res <- geweke_run(model, n = 4000, seed = 63)
  expect_gt(max(abs(res$z[res$stat == "sumH"])), 4.5)
})

# ---- exact quadrature -------------------------------------------------------
#
# I = 2, J = 2, K = 1: W = (w, 1 - w) with w ~ U(0, 1) (Dirichlet(1)), H =
# (h1, h2). The posterior of (w, h1, h2) is integrated on a 3-d midpoint grid
# (h up to 6, where the density is below 1e-5 of its peak).

test_that("HMC matches the quadrature of its posterior on a tiny problem", {
  skip_on_cran()
  X <- matrix(c(1, 0.6, 0.8, 0.3), 2, 2)
  lik <- silf(epsilon = 0.3, beta = 0.5, C = 3)
  rate <- 1
  n <- 160
  w <- (seq_len(n) - 0.5) / n
  h <- (seq_len(n) - 0.5) / n * 6
  g <- expand.grid(w = w, h1 = h, h2 = h)
  f <- (X[1, 1] - g$w * g$h1)^2 + (X[2, 1] - (1 - g$w) * g$h1)^2 +
    (X[1, 2] - g$w * g$h2)^2 + (X[2, 2] - (1 - g$w) * g$h2)^2
  # bnmf() fits X / s (s the root mean square of X): the SILF of the
  # objective f / s^2 at epsilon / s^2, which is SILF(f; epsilon) / s^2
  s2 <- mean(X^2)
  lp <- -lik$C / s2 * bnmf:::silf_loss(f, lik$epsilon, lik$beta) - rate * (g$h1 + g$h2)
  p <- exp(lp - max(lp))
  p <- p / sum(p)
  exact <- function(v) c(mean = sum(p * v), sd = sqrt(sum(p * v^2) - sum(p * v)^2))
  ref <- list(W = exact(g$w), H = exact(g$h1), sumH = exact(g$h1 + g$h2))

  withr::local_seed(64)
  fit <- bnmf(X, rank = 1, method = "hmc", likelihood = lik, prior = exponential(rate),
              iter = 4000, chains = 2)
  d <- lapply(seq_len(fit$n_draws), function(t) factors(fit, draw = t))
  est <- list(W = vapply(d, function(x) x$W[1, 1], 1), H = vapply(d, function(x) x$H[1, 1], 1),
              sumH = vapply(d, function(x) sum(x$H), 1))
  for (nm in names(ref)) {
    x <- est[[nm]]
    # Batch means within each chain (the chains are independent).
    ch <- rep(1:2, each = length(x) / 2)
    se_mean <- sqrt(sum(vapply(split(x, ch), batch_se, 1, batches = 25)^2)) / 2
    sq <- (x - mean(x))^2
    se_sd <- sqrt(sum(vapply(split(sq, ch), batch_se, 1, batches = 25)^2)) / 2 /
      (2 * stats::sd(x))
    expect_lt(abs(mean(x) - ref[[nm]][["mean"]]) / se_mean, 4.5, label = paste(nm, "mean z"))
    expect_lt(abs(stats::sd(x) - ref[[nm]][["sd"]]) / se_sd, 4.5, label = paste(nm, "sd z"))
  }
})

# ---- the kernel -------------------------------------------------------------

test_that("the leapfrog with reflection keeps positivity and is reversible", {
  withr::local_seed(65)
  I <- 4; J <- 3; K <- 2
  X <- matrix(stats::rexp(I * J), I, J)
  m <- bnmf:::hmc_model(X, K, silf(1, beta = 0.2, C = 1), rate = 1)
  q <- c(stats::runif(I * K, 0.01, 0.1), stats::runif(K * J, 0.01, 0.1))
  ev <- bnmf:::hmc_eval(q, m)
  p <- -abs(stats::rnorm(length(q))) * 2     # heading out of the orthant
  lf <- bnmf:::hmc_leapfrog(q, p, ev, m, 0.05, 20L, rep(1, length(q)))
  expect_true(lf$finite)
  expect_gt(lf$reflections, 0)
  back <- bnmf:::hmc_leapfrog(lf$q, -lf$p, lf$ev, m, 0.05, 20L, rep(1, length(q)))
  expect_equal(back$q, q, tolerance = 1e-8)
  expect_equal(-back$p, p, tolerance = 1e-8)
  # Without forces every coordinate moves on a line mirrored at 0: after L
  # steps it is at |q + L eps minv p|, its momentum flipped if it crossed 0
  # (once, one reflection).
  free <- function(q, m) list(U = 0, grad = numeric(length(q)))
  mv <- rep(c(0.5, 2), length.out = length(q))
  pf <- p * rep(c(1, 1, -1), length.out = length(q))
  lf0 <- bnmf:::hmc_leapfrog(q, pf, free(q, m), m, 0.05, 20L, mv, eval = free)
  line <- q + 20 * 0.05 * mv * pf
  expect_equal(lf0$q, abs(line), tolerance = 1e-12)
  expect_equal(lf0$p, ifelse(line < 0, -pf, pf), tolerance = 1e-12)
  expect_identical(lf0$reflections, sum(line < 0))

  # In the interior the energy error of the leapfrog is of second order in
  # the step size (over a fixed trajectory length).
  q2 <- stats::runif(length(q), 0.5, 1.5)
  ev2 <- bnmf:::hmc_eval(q2, m)
  err <- function(eps) {
    lf <- bnmf:::hmc_leapfrog(q2, p / 10, ev2, m, eps, round(0.1 / eps), rep(1, length(q)))
    abs(lf$ev$U + sum(lf$p^2) / 2 - ev2$U - sum((p / 10)^2) / 2)
  }
  e <- c(err(0.01), err(0.005))
  expect_lt(e[1], 1e-3)
  expect_gt(e[1] / e[2], 3)

  # Every kept draw of a fit is in the support: W >= 0 with unit column
  # sums, H >= 0.
  fit <- bnmf(X, rank = K, method = "hmc", likelihood = silf(1), iter = 200, chains = 1)
  for (d in fit$draws) {
    expect_true(all(d$W >= 0) && all(d$H >= 0))
    sums <- apply(d$W, 2L, function(w) colSums(matrix(w, I, K)))
    expect_equal(sums, matrix(1, K, ncol(d$W)))
  }
})

test_that("the gradient of the potential matches finite differences", {
  withr::local_seed(66)
  I <- 3; J <- 4; K <- 2
  X <- matrix(stats::rexp(I * J), I, J)
  for (obj in c("frobenius", "kl")) {
    # epsilon in the quadratic part of SILF, so every piece is exercised
    m <- bnmf:::hmc_model(X, K, silf(1, beta = 0.9, C = 2, objective = obj), rate = 0.7)
    q <- stats::runif(I * K + K * J, 0.3, 1.5)
    ev <- bnmf:::hmc_eval(q, m)
    num <- vapply(seq_along(q), function(i) {
      e <- replace(numeric(length(q)), i, 1e-6)
      (bnmf:::hmc_eval(q + e, m)$U - bnmf:::hmc_eval(q - e, m)$U) / 2e-6
    }, 1)
    expect_equal(ev$grad, num, tolerance = 1e-5, label = obj)
  }
})

test_that("the step size adaptation reaches the target acceptance", {
  skip_on_cran()
  X <- leukemia[1:60, 1:20]
  for (target in c(0.65, 0.9)) {
    withr::local_seed(67)
    fit <- bnmf(X, rank = 3, method = "hmc", iter = 700,
                control = hmc_control(target = target, leapfrog = 10))
    expect_lt(abs(fit$acceptance[[1]] - target), 0.12, label = sprintf("target %s", target))
    expect_equal(sum(fit$divergences), 0)
  }
})

# ---- interface --------------------------------------------------------------

test_that("HMC fits have their methods, reproducibly", {
  X <- leukemia[1:30, 1:12]
  withr::local_seed(68)
  fit <- bnmf(X, rank = 2, method = "hmc", iter = 160, thin = 2, chains = 2)
  withr::local_seed(68)
  again <- bnmf(X, rank = 2, method = "hmc", iter = 160, thin = 2, chains = 2)
  expect_identical(fit$draws, again$draws)
  expect_s3_class(fit, c("bnmf_hmc", "bnmf"))
  expect_equal(fit$n_draws, 80)
  expect_output(print(fit), "Hamiltonian Monte Carlo")
  s <- summary(fit)
  expect_s3_class(s, "summary.bnmf_hmc")
  expect_output(print(s), "split|rhat")
  expect_true(all(is.finite(s$diagnostics$ess)))
  expect_named(fit$acceptance)
  f <- factors(fit, draw = 80)
  expect_equal(dim(f$W), c(30, 2))
  expect_equal(unname(colSums(f$W)), c(1, 1))
  expect_equal(factors(fit), list(W = basis(fit), H = coef(fit)))
  # fitted(): the mean of the products of the draws
  wh <- Reduce(`+`, lapply(seq_len(80), function(d) {
    x <- factors(fit, draw = d)
    x$W %*% x$H
  })) / 80
  expect_equal(unname(fitted(fit)), unname(wh))
  expect_equal(residuals(fit), fit$X - fitted(fit))
  expect_equal(predict(fit), fitted(fit))
  expect_equal(nobs(fit), 360)
  expect_error(predict(fit, newdata = X), "newdata", class = "bnmf_error_unsupported")
  expect_error(logLik(fit), "logLik", class = "bnmf_error_unsupported")
  expect_error(sigma(fit), "sigma", class = "bnmf_error_unsupported")
  expect_error(update(fit), "update", class = "bnmf_error_unsupported")
  expect_error(elbo(fit), "ELBO", class = "bnmf_error_unsupported")
  expect_error(factors(fit, draw = 81), "draw", class = "bnmf_error_input")
  pdf(NULL)
  expect_identical(plot(fit), fit)
  dev.off()
  skip_if_not_installed("posterior")
  a <- posterior::as_draws(fit)
  expect_equal(posterior::ndraws(a), 80)
  expect_equal(posterior::nchains(a), 2)
  expect_equal(as.numeric(a[40, 2, "W[3,2]"]), factors(fit, draw = 80)$W[3, 2])
  skip_if_not_installed("coda")
  expect_s3_class(coda::as.mcmc(fit), "mcmc.list")
})

test_that("stein_discrepancy() of an HMC fit is that of its draws with equal weights", {
  X <- leukemia[1:30, 1:12]
  withr::local_seed(69)
  fit <- bnmf(X, rank = 2, method = "hmc", iter = 100, thin = 5)
  parts <- lapply(1:10, function(d) factors(fit, draw = d))
  v <- stein_discrepancy(fit)
  expect_equal(as.numeric(v),
               as.numeric(stein_discrepancy(parts, X, likelihood = fit$likelihood,
                                            weights = "equal")))
  expect_equal(attr(v, "weights"), rep(0.1, 10))
  expect_length(attr(stein_discrepancy(fit, draws = 4), "weights"), 4)
  expect_error(stein_discrepancy(fit, draws = 11), "draws", class = "bnmf_error_input")
})

test_that("the default epsilon is 1.2 times the warm start's objective", {
  X <- leukemia[1:30, 1:12]
  withr::local_seed(70)
  fit <- bnmf(X, rank = 2, method = "hmc", iter = 20, chains = 2)
  expect_equal(fit$likelihood$epsilon, 1.2 * max(fit$warm_start_objective))
  # A warm start that fits exactly leaves no default
  Xe <- matrix(c(1, 2, 3, 2, 4, 6), 3, 2)
  expect_error(bnmf(Xe, rank = 1, method = "hmc", iter = 20), "epsilon",
               class = "bnmf_error_input")
})

test_that("bad arguments of method \"hmc\" give errors naming them", {
  X <- leukemia[1:20, 1:8]
  err <- function(expr, arg) expect_error(expr, arg, fixed = TRUE, class = "bnmf_error_input")
  err(hmc_control(leapfrog = 0), "`leapfrog`")
  err(hmc_control(step_size = -1), "`step_size`")
  err(hmc_control(target = 1), "`target`")
  err(hmc_control(metric = "dense"), "`metric`")
  err(hmc_control(jitter = 1), "`jitter`")
  err(hmc_control(solver_iter = 1.5), "`solver_iter`")
  err(hmc_control(max_energy = 0), "`max_energy`")
  err(bnmf(X, 2, method = "hmc", control = list(leapfrog = 3)), "`control`")
  err(bnmf(X, 2, method = "gibbs", control = hmc_control()), "`control`")
  err(bnmf(X, 2, method = "hmc", noise = gamma_prior()), "`noise`")
  err(bnmf(X, 2, method = "hmc", keep = "draws"), "`keep`")
  err(bnmf(X, 2, method = "hmc", prior = ard()), "`prior`")
  err(bnmf(X, 2, method = "hmc", likelihood = "silf"), "`likelihood`")
  err(bnmf(X, 2, method = "hmc", iter = 10, burnin = 10), "`burnin`")
  err(bnmf(X, 2, method = "hmc", thin = 0), "`thin`")
  err(bnmf(X, 2, method = "hmc", chains = 0), "`chains`")
  err(bnmf(X, 2, method = "hmc", init = "nndsvd"), "`init`")
  err(bnmf(X, 2, method = "hmc", init = list(W = matrix(1, 3, 2), H = matrix(1, 2, 8))), "`init`")
  err(bnmf(-X, 2, method = "hmc"), "`X`")
  err(bnmf(X, 9, method = "hmc"), "`rank`")
})

test_that("HMC's default slope C is n / (2 f) and keeps the draws at the data's noise level", {
  skip_on_cran()
  set.seed(11)
  I <- 40; J <- 30; K <- 3
  WH <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K)
  X <- pmax(WH + matrix(rnorm(I * J, sd = 0.05 * sqrt(mean(WH^2))), I), 0)
  X[3, 4] <- NA
  set.seed(1)
  h <- bnmf(X, rank = K, method = "hmc", iter = 100, progress = FALSE)
  # C acts on the objective of X / s; epsilon is kept in the units of X
  s <- h$data_scale
  n <- sum(!is.na(X))
  expect_equal(h$likelihood$C, n / (2 * h$likelihood$epsilon / s^2 / 1.2), tolerance = 1e-12)
  rel <- function(f) sqrt(sum((X - fitted(f))^2, na.rm = TRUE) / sum(X^2, na.rm = TRUE))
  icm <- bnmf(X, rank = K, method = "icm", prior = exponential(0), iter = 500, progress = FALSE)
  # the posterior mean sits about as close to the data as the best fit (a
  # Gaussian posterior adds K (I + J) / n = 17% to the residual sum of
  # squares, 8% to its root); a fixed C = 2 on X / s gave 0.238 against 0.044
  expect_lt(rel(h), 1.25 * rel(icm))
})
