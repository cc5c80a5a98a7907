# ARD for the Poisson model: W_ik ~ Gamma(a, lambda_k), H_kj ~ Gamma(c,
# lambda_k), lambda_k ~ Gamma(alpha0, beta0); methods "vb" and "gibbs".

# Counts from a rank-K Poisson NMF with Gamma factors.
pois_ard_sim <- function(I, J, K, seed) {
  withr::local_seed(seed)
  W <- matrix(stats::rgamma(I * K, 1, 1), I, K)
  H <- matrix(stats::rgamma(K * J, 1, 0.1), K, J)
  matrix(stats::rpois(I * J, W %*% H), I, J)
}

n_active <- function(fit) sum(summary(fit)$factors$active)

test_that("one Gibbs sweep draws lambda from its conjugate Gamma conditional", {
  withr::local_seed(71)
  I <- 3; J <- 4; K <- 2
  a <- 1.5; c <- 0.7; alpha0 <- 2; beta0 <- 0.5
  X <- matrix(stats::rpois(I * J, 3), I, J)
  X[2, 3] <- NA
  W <- matrix(stats::rgamma(I * K, 2, 1), I, K)
  H <- matrix(stats::rgamma(K * J, 2, 1), K, J)
  sweeps <- pois_hook("pois_gibbs_sweeps")
  prior <- list(a = a, c = c, ard = c(alpha0, beta0))
  shape <- alpha0 + I * a + J * c
  # probability integral transform of each new lambda_k under
  # Gamma(alpha0 + I a + J c, beta0 + sum_i W_ik + sum_j H_kj) of the new W, H
  u <- replicate(1500, {
    st <- sweeps(X, list(W = W, H = H, lambda = c(0.7, 1.3)), prior, 1)
    stats::pgamma(st$lambda, shape, beta0 + colSums(st$W) + rowSums(st$H))
  })
  for (k in seq_len(K)) {
    expect_gt(suppressWarnings(stats::ks.test(u[k, ], "punif"))$p.value, 1e-3)
  }
  # the test has teeth: the same draws against a conditional without alpha0
  wrong <- replicate(300, {
    st <- sweeps(X, list(W = W, H = H, lambda = c(0.7, 1.3)), prior, 1)
    stats::pgamma(st$lambda[1], I * a + J * c, beta0 + sum(st$W[, 1]) + sum(st$H[1, ]))
  })
  expect_lt(suppressWarnings(stats::ks.test(wrong, "punif"))$p.value, 1e-3)
})

# One VB sweep of the ARD model written out in R: q(W) with rates
# E[lambda_k], q(H) likewise (q(Z) recomputed between them), then q(lambda);
# and the ELBO of the result.
ref_vb_ard_sweep <- function(X, q, a, c, alpha0, beta0) {
  O <- !is.na(X)
  X0 <- X
  X0[!O] <- 0
  I <- nrow(X); J <- ncol(X); K <- ncol(q$shape_W)
  El <- q$shape_lambda / q$rate_lambda
  L <- function(al, be) exp(digamma(al)) / be
  LW <- L(q$shape_W, q$rate_W)
  LH <- L(q$shape_H, q$rate_H)
  EH <- q$shape_H / q$rate_H
  R <- X0 / (LW %*% LH)
  alW <- a + LW * (R %*% t(LH))
  beW <- matrix(El, I, K, byrow = TRUE) + (O * 1) %*% t(EH)
  LW <- L(alW, beW)
  EW <- alW / beW
  R <- X0 / (LW %*% LH)
  alH <- c + LH * (t(LW) %*% R)
  beH <- El + t(EW) %*% (O * 1)
  EH <- alH / beH
  alL <- rep(alpha0 + I * a + J * c, K)
  beL <- beta0 + colSums(EW) + rowSums(EH)
  list(shape_W = alW, rate_W = beW, shape_H = alH, rate_H = beH, shape_lambda = alL,
       rate_lambda = beL)
}

ref_vb_ard_elbo <- function(X, q, a, c, alpha0, beta0) {
  O <- !is.na(X)
  L <- function(al, be) exp(digamma(al)) / be
  LW <- L(q$shape_W, q$rate_W); LH <- L(q$shape_H, q$rate_H)
  EW <- q$shape_W / q$rate_W; EH <- q$shape_H / q$rate_H
  ElogW <- digamma(q$shape_W) - log(q$rate_W)
  ElogH <- digamma(q$shape_H) - log(q$rate_H)
  El <- q$shape_lambda / q$rate_lambda
  Ell <- digamma(q$shape_lambda) - log(q$rate_lambda)
  ent <- function(s, r) sum(s - log(r) + lgamma(s) + (1 - s) * digamma(s))
  I <- nrow(X); J <- ncol(X); K <- ncol(EW)
  lik <- sum(X[O] * log((LW %*% LH)[O]) - lfactorial(X[O])) - sum((EW %*% EH)[O])
  pW <- sum(a * matrix(Ell, I, K, byrow = TRUE) - lgamma(a) + (a - 1) * ElogW -
              matrix(El, I, K, byrow = TRUE) * EW)
  pH <- sum(c * Ell - lgamma(c) + (c - 1) * ElogH - El * EH)
  pL <- sum(alpha0 * log(beta0) - lgamma(alpha0) + (alpha0 - 1) * Ell - beta0 * El)
  lik + pW + pH + pL + ent(q$shape_W, q$rate_W) + ent(q$shape_H, q$rate_H) +
    ent(q$shape_lambda, q$rate_lambda)
}

test_that("a VB sweep of the ARD model and its ELBO equal the plain-R update", {
  withr::local_seed(72)
  I <- 6; J <- 5; K <- 3
  a <- 1.3; c <- 0.8; alpha0 <- 1.5; beta0 <- 0.4
  X <- matrix(stats::rpois(I * J, 4), I, J)
  X[c(2, 9, 17)] <- NA
  q <- list(shape_W = matrix(stats::runif(I * K, 0.5, 3), I, K),
            rate_W = matrix(stats::runif(I * K, 0.5, 3), I, K),
            shape_H = matrix(stats::runif(K * J, 0.5, 3), K, J),
            rate_H = matrix(stats::runif(K * J, 0.5, 3), K, J),
            shape_lambda = stats::runif(K, 2, 20), rate_lambda = stats::runif(K, 2, 20))
  prior <- list(a = a, c = c, ard = c(alpha0, beta0))
  out <- pois_hook("pois_vb_sweeps")(X, q, prior, 1)
  ref <- ref_vb_ard_sweep(X, q, a, c, alpha0, beta0)
  for (nm in names(ref)) {
    expect_equal(as.vector(out[[nm]]), as.vector(ref[[nm]]), tolerance = 1e-12, info = nm)
  }
  expect_equal(out$trace, ref_vb_ard_elbo(X, ref, a, c, alpha0, beta0), tolerance = 1e-12)
  # the ELBO of any q, as the sweeps compute it
  expect_equal(pois_hook("pois_vb_elbo")(X, q, prior), ref_vb_ard_elbo(X, q, a, c, alpha0, beta0),
               tolerance = 1e-12)
})

test_that("the ARD VB ELBO never decreases", {
  X <- pois_ard_sim(30, 20, 3, 73)
  X[c(5, 50, 222)] <- NA
  withr::local_seed(74)
  fit <- suppressWarnings(bnmf(X, 8, likelihood = "poisson", method = "vb", iter = 300,
                               tol = 0, prior = list(W = gamma_prior(0.8), H = gamma_prior(1.2),
                                                     lambda = ard(2))))
  tr <- fit$trace$logpost
  expect_length(tr, 300)
  expect_true(all(diff(tr) >= -1e-10 * abs(tr[-1])))
  expect_gt(tr[300] - tr[1], 1)
  # from an arbitrary q too (the hook's sweeps from random shapes and rates)
  withr::local_seed(75)
  q <- list(shape_W = matrix(stats::runif(30 * 4, 0.5, 3), 30, 4),
            rate_W = matrix(stats::runif(30 * 4, 0.5, 3), 30, 4),
            shape_H = matrix(stats::runif(4 * 20, 0.5, 3), 4, 20),
            rate_H = matrix(stats::runif(4 * 20, 0.5, 3), 4, 20),
            shape_lambda = stats::runif(4, 2, 20), rate_lambda = stats::runif(4, 2, 20))
  prior <- list(a = 1, c = 1, ard = c(1, 3))
  e0 <- pois_hook("pois_vb_elbo")(X, q, prior)
  tr <- pois_hook("pois_vb_sweeps")(X, q, prior, 50)$trace
  expect_true(all(diff(c(e0, tr)) >= -1e-10 * abs(tr)))
})

test_that("ARD VB keeps the rank of simulated counts and one factor of constant-rate noise", {
  X <- pois_ard_sim(96, 60, 4, 1)
  withr::local_seed(1)
  fit <- suppressWarnings(bnmf(X, 10, likelihood = "poisson", method = "vb", prior = ard(),
                               iter = 3000))
  tab <- summary(fit)$factors
  expect_identical(sum(tab$active), 4L)
  # the active factors carry the counts, the others essentially none
  expect_gt(sum(tab$share[tab$active]), 0.999)
  expect_true(all(tab$lambda[!tab$active] > 10 * max(tab$lambda[tab$active])))
  for (rate in c(5, 50)) {
    withr::local_seed(2)
    N <- matrix(stats::rpois(40 * 30, rate), 40, 30)
    # restarts: a local optimum that splits the one factor in two has a
    # lower ELBO, and the restart with the highest ELBO is kept
    f <- suppressWarnings(bnmf(N, 10, likelihood = "poisson", method = "vb", prior = ard(),
                               iter = 3000, chains = 3))
    expect_identical(n_active(f), 1L, info = rate)
  }
})

test_that("select_rank(criterion = \"ard\") counts the active factors of a Poisson VB fit", {
  X <- pois_ard_sim(96, 60, 4, 1)
  withr::local_seed(1)
  s <- suppressWarnings(select_rank(X, 1:8, criterion = "ard", likelihood = "poisson"))
  expect_identical(s$method, "vb")
  expect_identical(as.integer(s$best), 4L)
  expect_identical(nrow(s$table), 8L)
  expect_true(all(c("share", "lambda", "signal", "active") %in% names(s$table)))
  expect_error(select_rank(X, 1:8, criterion = "ard", likelihood = "poisson", method = "gibbs"),
               class = "bnmf_error_unsupported")
})

test_that("the automatic beta0 follows the scale of the counts", {
  X <- pois_ard_sim(20, 15, 2, 76)
  f <- suppressWarnings(bnmf(X, 3, likelihood = "poisson", method = "vb", prior = ard(),
                             iter = 5))
  expect_equal(f$prior$ard, c(1, sqrt(mean(X) / 3)))
  expect_true(f$prior$beta0_auto)
  f <- suppressWarnings(bnmf(X, 3, likelihood = "poisson", method = "vb", iter = 5,
                             prior = list(W = gamma_prior(2), H = gamma_prior(0.5),
                                          lambda = ard(3))))
  expect_equal(f$prior$ard, c(3, 3 * sqrt(mean(X) / (2 * 0.5 * 3))))
  expect_equal(c(f$prior$a, f$prior$c), c(2, 0.5))
  f <- suppressWarnings(bnmf(X, 3, likelihood = "poisson", method = "vb", iter = 5,
                             prior = ard(2, 0.1)))
  expect_equal(f$prior$ard, c(2, 0.1))
  expect_false(f$prior$beta0_auto)
  # the Gaussian models keep beta0 = 1 by default
  expect_identical(ard()$beta0, 1)
  # counts 100 times larger (means about 1.4 and 140): the same number of
  # active factors
  withr::local_seed(3)
  W <- matrix(stats::rgamma(96 * 3, 1, 1), 96, 3)
  H <- matrix(stats::rgamma(3 * 60, 1, 1), 3, 60)
  for (s in c(0.5, 50)) {
    Z <- matrix(stats::rpois(96 * 60, s * W %*% H), 96, 60)
    f <- suppressWarnings(bnmf(Z, 8, likelihood = "poisson", method = "vb", prior = ard(),
                               iter = 3000, chains = 2))
    expect_identical(n_active(f), 3L, info = s)
  }
})

test_that("update() continues Poisson ARD fits exactly as one longer run", {
  X <- pois_ard_sim(20, 15, 2, 77)
  withr::local_seed(5)
  a <- bnmf(X, 4, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 60,
            burnin = 20, chains = 2)
  b <- update(a, iter = 40, progress = FALSE)
  withr::local_seed(5)
  l <- bnmf(X, 4, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 100,
            burnin = 20, chains = 2)
  for (nm in c("W", "H", "W_sd", "lambda", "trace")) expect_identical(b[[nm]], l[[nm]], info = nm)
  expect_identical(b$state[[2]]$lambda, l$state[[2]]$lambda)
  withr::local_seed(5)
  a <- suppressWarnings(bnmf(X, 4, likelihood = "poisson", method = "vb", prior = ard(),
                             iter = 30, tol = 0, chains = 2))
  b <- update(a, iter = 30, progress = FALSE)
  withr::local_seed(5)
  l <- suppressWarnings(bnmf(X, 4, likelihood = "poisson", method = "vb", prior = ard(),
                             iter = 60, tol = 0, chains = 2))
  for (nm in c("W", "H_sd", "lambda", "q")) expect_identical(b[[nm]], l[[nm]], info = nm)
  expect_identical(b$trace$logpost, l$trace$logpost[l$trace$chain == l$best])
})

test_that("Gibbs ARD fits keep lambda's posterior mean, report relevance and work with the generics", {
  X <- pois_ard_sim(20, 15, 2, 78)
  withr::local_seed(6)
  f <- bnmf(X, 4, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 100,
            chains = 2, keep = "draws")
  expect_length(f$lambda, 4)
  expect_true(all(f$lambda > 0))
  # the pooled mean of the kept draws: the chains' running sums, aligned
  N <- f$n_draws
  expect_equal(unname(f$lambda),
               (f$state[[1]]$lambda_sum[f$alignment[[1]]] +
                  f$state[[2]]$lambda_sum[f$alignment[[2]]]) / N)
  tab <- summary(f)$factors
  expect_true(all(c("lambda", "share", "signal", "active") %in% names(tab)))
  expect_output(print(f), "ARD: [0-9]+ of 4 factors active")
  expect_output(print(summary(f)), "Poisson signal > I \\+ J - 1 = 34")
  expect_identical(dim(predict(f, newdata = X[, 1:3])), c(20L, 3L))
  expect_error(marginal_likelihood(f, samples = 10), class = "bnmf_error_unsupported")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_silent(plot(f, type = "ard"))
  g <- bnmf(X, 2, likelihood = "poisson", method = "gibbs", iter = 20)
  expect_error(plot(g, type = "ard"), class = "bnmf_error_input")
})

test_that("the Poisson signal is the Pearson chi-square each factor adds", {
  X <- pois_ard_sim(12, 9, 2, 79)
  X[3, 4] <- NA
  withr::local_seed(7)
  f <- suppressWarnings(bnmf(X, 3, likelihood = "poisson", method = "vb", prior = ard(),
                             iter = 50))
  W <- unname(f$W); H <- unname(f$H)
  mu <- W %*% H
  O <- !is.na(X)
  ref <- vapply(1:3, function(k) sum((outer(W[, k], H[k, ])^2 / mu)[O]), numeric(1))
  rel <- summary(f)$factors
  expect_equal(rel$signal, ref)
  expect_identical(rel$active, ref > 12 + 9 - 1)
})

test_that("ARD combinations that do not apply are refused", {
  X <- pois_ard_sim(12, 9, 2, 80)
  expect_error(bnmf(X, 3, likelihood = "poisson", method = "ssvi", prior = ard()),
               class = "bnmf_error_unsupported")
  expect_error(bnmf(X ~ nmf(3, sparsity = "both"), method = "ssvi", prior = ard()),
               class = "bnmf_error_unsupported")
  expect_error(bnmf(X, 3, likelihood = "poisson", method = "vb",
                    prior = list(W = gamma_prior(1, 2), H = gamma_prior(1), lambda = ard())),
               class = "bnmf_error_input")
  expect_error(bnmf(X, 3, likelihood = "poisson", method = "vb",
                    prior = list(W = gamma_prior(1), H = gamma_prior(1), lambda = ard(), tau = 1)),
               class = "bnmf_error_input")
  expect_error(bnmf(X, 3, likelihood = "poisson", method = "vb",
                    prior = list(W = gamma_prior(1), H = gamma_prior(1), lambda = 2)),
               class = "bnmf_error_input")
})

test_that("dense and sparse counts give the same ARD fits", {
  X <- pois_ard_sim(20, 15, 2, 81)
  S <- Matrix::Matrix(X, sparse = TRUE)
  for (m in c("vb", "gibbs")) {
    fits <- lapply(list(X, S), function(Y) {
      withr::local_seed(8)
      suppressWarnings(bnmf(Y, 4, likelihood = "poisson", method = m, prior = ard(),
                            iter = 40))
    })
    expect_identical(fits[[1]]$W, fits[[2]]$W, info = m)
    expect_identical(fits[[1]]$lambda, fits[[2]]$lambda, info = m)
    expect_identical(summary(fits[[1]])$factors, summary(fits[[2]])$factors, info = m)
  }
})
