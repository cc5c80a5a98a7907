fit_small <- function(method = "gibbs", keep = "summary", chains = 1) {
  dat <- make_nmf_data(I = 12, J = 8, K = 2, seed = 1)
  X <- if (method == "np") abs(dat$X) else dat$X
  dimnames(X) <- list(paste0("g", 1:12), paste0("s", 1:8))
  X[1, 1] <- NA
  set.seed(1)
  muffle_convergence(bnmf(X, rank = 2, method = method, iter = 200, keep = keep,
                          chains = chains, progress = FALSE))
}

test_that("factors, basis and coef return named matrices of the right size", {
  for (m in c("gibbs", "vb", "icm", "np")) {
    fit <- fit_small(m)
    f <- factors(fit)
    expect_named(f, c("W", "H"))
    expect_equal(dim(basis(fit)), c(12, 2))
    expect_equal(dim(coef(fit)), c(2, 8))
    expect_identical(basis(fit), f$W)
    expect_identical(coef(fit), f$H)
    expect_equal(rownames(basis(fit)), paste0("g", 1:12))
    expect_equal(colnames(coef(fit)), paste0("s", 1:8))
    expect_s3_class(fit, c(paste0("bnmf_", m), "bnmf_nmf", "bnmf"), exact = TRUE)
  }
})

test_that("fitted is the posterior mean of WH, not the product of means", {
  fit <- fit_small("gibbs", keep = "draws")
  d <- fit$draws[[1]]
  # By default from every 4th kept draw, the first included (wh_thin).
  idx <- seq(1L, ncol(d$W), by = 4L)
  ref <- Reduce(`+`, lapply(idx, function(t)
    matrix(d$W[, t], 12, 2) %*% matrix(d$H[, t], 2, 8))) / length(idx)
  expect_equal(unname(fitted(fit)), ref, tolerance = 1e-10)
  expect_false(isTRUE(all.equal(unname(fitted(fit)), unname(fit$W %*% fit$H), tolerance = 1e-12)))
  sd_ref <- sqrt(Reduce(`+`, lapply(idx, function(t)
    (matrix(d$W[, t], 12, 2) %*% matrix(d$H[, t], 2, 8) - ref)^2)) / (length(idx) - 1))
  expect_equal(unname(predict(fit, se.fit = TRUE)$se.fit), sd_ref, tolerance = 1e-8)
  expect_equal(unname(fit$W_sd), matrix(apply(d$W, 1, sd), 12, 2), tolerance = 1e-8)
})

test_that("residuals, logLik, sigma and nobs agree with their definitions", {
  for (m in c("gibbs", "icm")) {
    fit <- fit_small(m)
    X <- fit$X
    r <- residuals(fit)
    expect_true(is.na(r[1, 1]))
    expect_equal(r, X - fitted(fit))
    expect_equal(nobs(fit), sum(!is.na(X)))
    ll <- logLik(fit)
    expect_equal(as.numeric(ll),
                 sum(dnorm(X, fitted(fit), 1 / sqrt(fit$tau), log = TRUE), na.rm = TRUE),
                 tolerance = 1e-10)
    expect_equal(attr(ll, "nobs"), nobs(fit))
  }
  fit <- fit_small("gibbs")
  tau <- bnmf:::kept_trace(fit)$tau
  expect_equal(sigma(fit), mean(1 / sqrt(tau)))
  expect_equal(fit$tau, mean(tau), tolerance = 1e-10)
  icm <- fit_small("icm")
  expect_equal(sigma(icm), 1 / sqrt(icm$tau))
})

test_that("predict(type = 'coef') infers the coefficients of new samples", {
  dat <- make_nmf_data(I = 40, J = 30, K = 3, sd = 0.05, seed = 2)
  for (m in c("icm", "gibbs")) {
    set.seed(3)
    fit <- bnmf(dat$X[, 1:25], rank = 3, method = m, iter = 400, progress = FALSE)
    new <- dat$X[, 26:30]
    h <- predict(fit, newdata = new, type = "coef")
    expect_equal(dim(h), c(3, 5))
    rec <- predict(fit, newdata = new)
    # New samples are reconstructed as well as the training samples are.
    expect_lt(sqrt(mean((rec - dat$WH[, 26:30])^2)), 0.1)
    # Refitting a training sample's coefficients recovers them.
    h_train <- predict(fit, newdata = dat$X[, 1:2], type = "coef")
    expect_equal(unname(h_train), unname(coef(fit)[, 1:2]), tolerance = 0.1)
  }
  expect_error(predict(fit, newdata = dat$X[1:5, ]), class = "bnmf_error_input")
})

test_that("print, summary and plot work for every method", {
  for (m in c("gibbs", "vb", "icm", "np")) {
    fit <- fit_small(m, chains = 2)
    expect_output(print(fit), "rank: 2")
    s <- summary(fit)
    expect_s3_class(s, c(paste0("summary.bnmf_", m), "summary.bnmf"), exact = TRUE)
    expect_equal(nrow(s$factors), 2)
    # each factor's part of the total fitted signal, from its rank-one term
    f <- factors(fit)
    terms <- vapply(1:2, function(k) sum(f$W[, k] %o% f$H[k, ]), numeric(1))
    expect_equal(unname(s$factors$share), terms / sum(f$W %*% f$H), tolerance = 1e-12)
    expect_equal(unname(s$factors$W_sum), unname(colSums(f$W)))
    expect_output(print(s), "Factors")
    pdf(NULL)
    expect_silent(plot(fit))
    expect_silent(plot(fit, type = "basis", factor = 2))
    dev.off()
  }
  s <- summary(fit_small("gibbs", chains = 2))
  expect_true(all(s$diagnostics$ess > 0))
  expect_true(all(s$diagnostics$rhat > 0.9 & s$diagnostics$rhat < 1.2))
})

test_that("as_draws and as.mcmc name the draws like Stan", {
  skip_if_not_installed("posterior")
  skip_if_not_installed("coda")
  fit <- fit_small("gibbs", keep = "draws", chains = 2)
  d <- posterior::as_draws(fit)
  expect_s3_class(d, "draws_array")
  expect_equal(posterior::nchains(d), 2)
  expect_equal(posterior::niterations(d), 100)
  v <- posterior::variables(d)
  expect_true(all(c("tau", "loglik", "W[1,1]", "W[12,2]", "H[2,8]") %in% v))
  expect_equal(length(v), 2 + 12 * 2 + 2 * 8)
  # W[3,2] of the draws is what the fit kept.
  expect_equal(as.vector(posterior::extract_variable(d, "W[3,2]")),
               c(fit$draws[[1]]$W[3 + 12, ], fit$draws[[2]]$W[3 + 12, ]))
  m <- coda::as.mcmc(fit)
  expect_s3_class(m, "mcmc.list")
  expect_equal(coda::niter(m), 100)
  expect_error(posterior::as_draws(fit_small("icm")), class = "bnmf_error_unsupported")
  s <- posterior::as_draws(fit_small("gibbs"))
  expect_equal(posterior::variables(s), c("tau", "loglik"))
})

test_that("membership is scale-free: W[, k] times c and H[k, ] over c change no cluster", {
  X <- leukemia[1:40, 1:16]
  set.seed(2)
  fit <- bnmf(X, rank = 2, iter = 100, keep = "draws")
  cc <- c(1e3, 1 / 7)
  sc <- fit
  sc$W <- sweep(fit$W, 2L, cc, "*")
  sc$H <- fit$H / cc
  # the draws: W is I K x draws (column-major, factor by factor), H is K J x draws
  sc$draws[[1]]$W <- fit$draws[[1]]$W * rep(cc, each = 40)
  sc$draws[[1]]$H <- fit$draws[[1]]$H / rep(cc, 16)
  m <- membership(fit)
  expect_identical(membership(sc), m)
  expect_equal(unclass(consensus_matrix(sc)), unclass(consensus_matrix(fit)))
  expect_identical(bnmf:::dominant_factor(sc$W, sc$H), bnmf:::dominant_factor(fit$W, fit$H))
})

test_that("a constant baseline factor with the largest contribution everywhere does not take every sample", {
  # factor 1: the same large coefficient in every sample (a baseline);
  # factors 2 and 3: high in one group of samples each, low in the other
  g <- rep(1:2, c(12, 8))
  W <- cbind(rep(10, 30), rep(c(1, 0.1), each = 15), rep(c(0.1, 1), each = 15))
  H <- rbind(rep(1, 20), ifelse(g == 1, 1, 0.2), ifelse(g == 2, 1, 0.2))
  C <- H * colSums(W)
  # the old rule, the largest contribution, puts every sample in the baseline
  old <- max.col(t(C), ties.method = "first")
  expect_true(all(old == 1L))
  # the rule: the largest excess over the factor's minimum recovers the groups
  expect_identical(bnmf:::dominant_factor(W, H), g + 1L)
  # and is what membership() and consensus_matrix() use: a fit holding this
  # factorisation as its one draw (and its estimate)
  X <- W %*% H
  set.seed(3)
  fit <- bnmf(X, rank = 3, iter = 20, keep = "draws")
  fit$draws <- list(list(W = cbind(as.vector(W)), H = cbind(as.vector(H))))
  fit$W[] <- W
  fit$H[] <- H
  m <- membership(fit)
  expect_identical(as.integer(m$cluster), g + 1L)
  expect_identical(as.integer(m$estimate), g + 1L)
  expect_true(all(m$probability == 1))
  expect_equal(unclass(consensus_matrix(fit))[, ], outer(g, g, "==") + 0, ignore_attr = TRUE)
  # asked for some samples only, the minimum is still over all of them
  expect_identical(bnmf:::dominant_factor(W, H, samples = 13:20), rep(3L, 8))
  # and scale-free here too
  cc <- c(0.01, 50, 3)
  expect_identical(bnmf:::dominant_factor(sweep(W, 2L, cc, "*"), H / cc), g + 1L)
  # where every factor is at its minimum, the largest contribution decides
  H2 <- cbind(H, c(1, 0.2, 0.2))
  expect_identical(bnmf:::dominant_factor(W, H2)[21], 1L)
})

test_that("membership probabilities are printed only when they are over several factorisations", {
  X <- leukemia[1:40, 1:16]
  set.seed(1)
  one <- bnmf(X, rank = 2, iter = 100)
  m <- membership(one)
  expect_identical(attr(m, "n"), 1L)
  expect_true(all(m$probability %in% c(0, 1)))
  out <- capture.output(print(summary(one)))
  expect_false(any(grepl("mean probability", out)))
  expect_true(any(grepl("dominant factor of the one estimate", out)))
  set.seed(1)
  two <- bnmf(X, rank = 2, iter = 100, keep = "draws")
  m2 <- membership(two)
  expect_identical(attr(m2, "n"), 50L)
  expect_true(any(grepl("mean probability", capture.output(print(summary(two))))))
  # VB with one restart: the probabilities are over 100 draws from its q
  set.seed(1)
  vb <- suppressWarnings(bnmf(X, rank = 2, method = "vb"))
  mv <- membership(vb)
  expect_identical(attr(mv, "n"), 100L)
  expect_identical(attr(mv, "source"), "q")
  expect_true(any(grepl("mean probability", capture.output(print(summary(vb))))))
})
