# NMTF against exact answers on problems small enough to integrate (the
# references of helper-nmtf.R, plain R quadrature written independently of
# the model code): Gibbs posterior means of F, F S G' and tau within Monte
# Carlo error, the VB ELBO below the exact log evidence, ICM at a KKT point of
# the exact log joint density.

nmtf_tiny <- list(
  one = list(X = matrix(2, 1, 1), lambda = 1, alpha = 2, beta = 1),
  two = list(X = matrix(c(2, 0.5), 2, 1), lambda = 1, alpha = 2, beta = 1),
  # Under ARD, S keeps bnmf's automatic rate (K L / mean(X))^(1/3).
  ard = list(X = matrix(2, 1, 1), lambda = (1 / 2)^(1 / 3), alpha = 2, beta = 1, ard = c(3, 2))
)

# The quadrature of each problem, computed once for this file.
nmtf_exact_cache <- new.env()
nmtf_tiny_exact <- function(p) {
  key <- paste(c(p$X, p$lambda, p$alpha, p$beta, p$ard), collapse = " ")
  if (is.null(nmtf_exact_cache[[key]])) {
    nmtf_exact_cache[[key]] <- nmtf_exact_tiny(
      as.vector(p$X), lambda = p$lambda, alpha = p$alpha, beta = p$beta,
      ard = if (!is.null(p$ard)) list(a0 = p$ard[1L], b0 = p$ard[2L]), lS = p$lambda)
  }
  nmtf_exact_cache[[key]]
}

nmtf_tiny_fit <- function(p, method, ...) {
  model <- if (is.null(p$ard)) quote(X ~ nmtf(1, 1)) else
    bquote(X ~ nmtf(1, 1, prior = ard(.(p$ard[1L]), .(p$ard[2L]))))
  X <- p$X
  if (!is.null(p$ard)) {
    return(eval(bquote(bnmf(.(model), method = method,
                            noise = gamma_prior(.(p$alpha), .(p$beta)), progress = FALSE, ...))))
  }
  eval(bquote(bnmf(.(model), method = method, prior = exponential(.(p$lambda)),
                   noise = gamma_prior(.(p$alpha), .(p$beta)), progress = FALSE, ...)))
}

test_that("the exact references agree with a direct grid and with Monte Carlo", {
  # The product-of-exponentials density (Bessel K0) against the direct grid
  # over (f, s, g): same posterior means and evidence.
  p <- nmtf_tiny$one
  ex <- nmtf_tiny_exact(p)
  ld <- nmtf_ld_exp(p$lambda)
  box <- nmtf_box(1 / p$lambda)
  cc <- c(box, list(logd = ld))
  direct <- nmtf_quad(2, list(cc, cc, cc), function(V) V[, 1L, drop = FALSE] * V[, 2L] * V[, 3L],
                      function(V, M, Etau) cbind(F = V[, 1L], FSG = M[, 1L], tau = Etau),
                      p$alpha, p$beta, h = 0.2)
  expect_equal(direct$mean, ex$mean, tolerance = 1e-5)
  expect_equal(direct$log_evidence, ex$log_evidence, tolerance = 1e-5)
  expect_lt(max(ex$rel_diff), 1e-6)
  # The ARD reference (Lomax marginals) against importance sampling from the
  # prior, within 4.5 Monte Carlo standard errors (delta method).
  p <- nmtf_tiny$ard
  ex <- nmtf_tiny_exact(p)
  withr::local_seed(61)
  n <- 4e5
  f <- stats::rexp(n, stats::rgamma(n, p$ard[1L], p$ard[2L]))
  g <- stats::rexp(n, stats::rgamma(n, p$ard[1L], p$ard[2L]))
  m <- f * stats::rexp(n, p$lambda) * g
  b <- p$beta + (p$X[1L] - m)^2 / 2
  w <- exp(lgamma(p$alpha + 0.5) - lgamma(p$alpha) + p$alpha * log(p$beta) -
             0.5 * log(2 * pi) - (p$alpha + 0.5) * log(b))
  vals <- cbind(F = f, FSG = m, tau = (p$alpha + 0.5) / b)
  est <- colSums(w * vals) / sum(w)
  se <- sqrt(colSums(w^2 * sweep(vals, 2L, est)^2)) / sum(w)
  expect_true(all(abs(est - ex$mean) < 4.5 * se), info = paste(round((est - ex$mean) / se, 2)))
  ev_se <- stats::sd(w) / sqrt(n) / mean(w)
  expect_lt(abs(log(mean(w)) - ex$log_evidence), 4.5 * ev_se)
})

for (problem in names(nmtf_tiny)) {
  test_that(sprintf("NMTF Gibbs posterior means equal the exact ones (%s)", problem), {
    skip_on_cran()
    p <- nmtf_tiny[[problem]]
    ex <- nmtf_tiny_exact(p)
    withr::local_seed(80 + match(problem, names(nmtf_tiny)))
    fit <- nmtf_tiny_fit(p, "gibbs", iter = 41000, burnin = 1000, keep = "draws")
    d <- posterior::as_draws_matrix(posterior::as_draws(fit))
    I <- nrow(p$X)
    f <- as.matrix(unclass(d)[, sprintf("F[%d,1]", seq_len(I)), drop = FALSE])
    sg <- as.vector(unclass(d)[, "S[1,1]"] * unclass(d)[, "G[1,1]"])
    fsg <- f * sg
    tau <- as.vector(unclass(d)[, "tau"])
    est <- c(as.vector(factors(fit)$F), as.vector(fitted(fit)), mean(tau))
    se <- c(apply(f, 2L, batch_se), apply(fsg, 2L, batch_se), batch_se(tau))
    # The fit's posterior means are the means of its draws.
    expect_equal(est, unname(c(colMeans(f), colMeans(fsg), mean(tau))), tolerance = 1e-10)
    z <- (est - unname(ex$mean)) / se
    expect_true(all(abs(z) < 4.5),
                info = paste(names(ex$mean), signif(est, 5), signif(ex$mean, 5), round(z, 2),
                             collapse = "; "))
  })
}

for (problem in names(nmtf_tiny)) {
  test_that(sprintf("the NMTF VB ELBO lies below the exact log evidence (%s)", problem), {
    p <- nmtf_tiny[[problem]]
    ex <- nmtf_tiny_exact(p)
    withr::local_seed(90)
    fit <- nmtf_tiny_fit(p, "vb", iter = 5000, tol = 1e-12)
    el <- elbo(fit)
    # A lower bound (up to the quadrature error, < 1e-4 here), and not a
    # loose one: mean-field q on the posterior of f, s, g, whose product is
    # pinned by the data, loses 0.78 nats (one), 0.94 (two) and 0.82 (ARD).
    expect_lte(max(el), ex$log_evidence + 1e-4)
    expect_gt(max(el), ex$log_evidence - 1.5)
  })
}

# ICM on problems whose log joint density has an interior local maximum above
# the collapsed point F = S = G = 0 (which is always a KKT point: with
# exponential priors the gradient there is -lambda): the interior mode,
# found here by BFGS on the log scale with tau profiled out (plain R).
nmtf_icm_problems <- list(
  one = list(X = matrix(5, 1, 1), lambda = 0.5, alpha = 2, beta = 1),
  two = list(X = matrix(c(5, 2), 2, 1), lambda = 0.2, alpha = 2, beta = 1)
)

nmtf_tiny_mode <- function(p) {
  x <- as.vector(p$X)
  nf <- length(x)
  unpack <- function(q) {
    f <- exp(q[seq_len(nf)]); s <- exp(q[nf + 1L]); g <- exp(q[nf + 2L])
    tau <- (p$alpha - 1 + nf / 2) / (p$beta + sum((x - f * s * g)^2) / 2)
    list(f = f, s = s, g = g, tau = tau)
  }
  neg <- function(q) {
    u <- unpack(q)
    -nmtf_log_joint(u$f, u$s, u$g, u$tau, x, p$lambda, p$alpha, p$beta)
  }
  o <- stats::optim(rep(log(max(x)) / 3, nf + 2L), neg, method = "BFGS",
                    control = list(reltol = 1e-15, maxit = 1000))
  c(unpack(o$par), logjoint = -o$value)
}

test_that("NMTF ICM stops at the interior KKT point of the exact log joint density", {
  for (problem in names(nmtf_icm_problems)) {
    p <- nmtf_icm_problems[[problem]]
    ref <- nmtf_tiny_mode(p)
    x <- as.vector(p$X)
    # The reference is a KKT point with every entry positive.
    gr <- nmtf_log_joint_grad(ref$f, ref$s, ref$g, ref$tau, x, p$lambda, p$alpha, p$beta)
    expect_lt(max(abs(unlist(gr))), 1e-4)
    withr::local_seed(95)
    fit <- nmtf_tiny_fit(p, "icm", iter = 20000, tol = 1e-15)
    fa <- factors(fit)
    f <- as.vector(fa$F); s <- fa$S[1L, 1L]; g <- fa$G[1L, 1L]
    tau <- 1 / sigma(fit)^2
    gr <- nmtf_log_joint_grad(f, s, g, tau, x, p$lambda, p$alpha, p$beta)
    # tau at its conditional mode; every positive factor entry has zero
    # gradient, every zero entry a non-positive one.
    expect_lt(abs(gr$tau) * tau, 1e-6)
    for (nm in c("f", "s", "g")) {
      v <- list(f = f, s = s, g = g)[[nm]]
      expect_true(all(ifelse(v > 0, abs(gr[[nm]]) * pmax(v, 1) < 1e-5, gr[[nm]] <= 1e-8)),
                  info = paste(problem, nm, v, gr[[nm]]))
    }
    # From its start (k-means indicators + 0.2) ICM climbs to the interior mode.
    expect_equal(unname(c(f, s, g, tau)), c(ref$f, ref$s, ref$g, ref$tau), tolerance = 1e-5,
                 info = problem)
    # A local maximum: no feasible perturbation nearby is higher.
    lj <- nmtf_log_joint(f, s, g, tau, x, p$lambda, p$alpha, p$beta)
    for (r in 1:50) {
      e <- 1e-4 * stats::rnorm(length(x) + 3L)
      lj2 <- nmtf_log_joint(pmax(f + e[seq_along(f)], 0), max(s + e[length(f) + 1L], 0),
                            max(g + e[length(f) + 2L], 0), tau * exp(e[length(f) + 3L]),
                            x, p$lambda, p$alpha, p$beta)
      expect_lte(lj2, lj + 1e-9)
    }
  }
})
