# Joint-distribution ("getting it right") tests (Geweke 2004) of the Gibbs
# sampler on problems with K = 2, so that the cross terms of the conditionals
# and the scale move with I != J are exercised: alternating one Gibbs sweep
# given X with a fresh draw of X given the parameters leaves the prior
# invariant, so the parameter draws must follow the prior.

geweke_run <- function(I, J, K, lambda, alpha, beta, n, miss = integer(),
                       masked = FALSE, seed = 1) {
  set.seed(seed)
  W <- matrix(rexp(I * K, lambda), I, K)
  H <- matrix(rexp(K * J, lambda), K, J)
  tau <- rgamma(1, alpha, beta)
  X <- W %*% H + matrix(rnorm(I * J, sd = 1 / sqrt(tau)), I, J)
  X[miss] <- NA
  d <- bnmf:::prepare_data(X, K)
  pr <- list(lamW = matrix(lambda, I, K), lamH = matrix(lambda, K, J),
             alpha = alpha, beta = beta)
  latent <- if (!length(miss)) numeric() else if (masked) numeric(length(miss)) else
    (W %*% H)[miss] + rnorm(length(miss), sd = 1 / sqrt(tau))
  st <- bnmf:::new_state(X, d, W, H, tau, latent, FALSE)
  ctrl <- c(1, 0, as.numeric(masked), 0, 1, 0, 1, 1, 1, 0)
  obs <- setdiff(seq_len(I * J), miss)
  out <- matrix(NA_real_, n, 4, dimnames = list(NULL, c("tau", "W11", "sumW", "HKJ")))
  for (t in seq_len(n)) {
    .Call(bnmf:::C_nmf_sweeps, st, d, pr, ctrl)
    x_new <- (st$W %*% st$H)[obs] + rnorm(length(obs), sd = 1 / sqrt(st$tau))
    x <- st$x + 0
    x[obs] <- x_new
    st$x <- x
    d$sumsq_obs <- sum(x_new^2)
    st$sumsq <- d$sumsq_obs + if (length(miss) && !masked) sum(x[miss]^2) else 0
    out[t, ] <- c(st$tau, st$W[1, 1], sum(st$W), st$H[K, J])
  }
  out
}

geweke_z <- function(out, I, K, lambda, alpha, beta) {
  tau <- out[, "tau"]
  med_tau <- qgamma(0.5, alpha, beta)
  stats <- list(
    tau = tau, tau2 = tau^2, W11 = out[, "W11"], sumW = out[, "sumW"],
    HKJ = out[, "HKJ"], tau_below_median = as.numeric(tau < med_tau),
    W11_below_median = as.numeric(out[, "W11"] < qexp(0.5, lambda))
  )
  exact <- c(tau = alpha / beta, tau2 = alpha * (alpha + 1) / beta^2, W11 = 1 / lambda,
             sumW = I * K / lambda, HKJ = 1 / lambda, tau_below_median = 0.5,
             W11_below_median = 0.5)
  est <- vapply(stats, mean, numeric(1))
  se <- vapply(stats, batch_se, numeric(1))
  (est - exact[names(est)]) / se
}

test_that("the Gibbs sampler gets the joint distribution right (complete data)", {
  skip_on_cran()
  out <- geweke_run(I = 4, J = 3, K = 2, lambda = 1, alpha = 3, beta = 2, n = 40000, seed = 31)
  z <- geweke_z(out, I = 4, K = 2, lambda = 1, alpha = 3, beta = 2)
  expect_true(all(abs(z) < 4.5), info = paste(names(z), round(z, 2), collapse = " "))
})

test_that("the Gibbs sampler gets the joint distribution right with missing entries", {
  skip_on_cran()
  for (masked in c(FALSE, TRUE)) {
    out <- geweke_run(I = 3, J = 5, K = 2, lambda = 1.5, alpha = 2, beta = 1, n = 40000,
                      miss = c(2, 7), masked = masked, seed = 32 + masked)
    z <- geweke_z(out, I = 3, K = 2, lambda = 1.5, alpha = 2, beta = 1)
    expect_true(all(abs(z) < 4.5),
                info = paste("masked", masked, paste(names(z), round(z, 2), collapse = " ")))
  }
})
