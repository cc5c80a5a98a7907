# The Poisson likelihood: VB (exact ELBO), the auxiliary-variable Gibbs
# sampler, the collapsed mask sampler and SSVI (R/engine-poisson.R, src/pois_*.c).

pois_sim <- function(I, J, K, shape = 2, rate = 1) {
  W <- matrix(stats::rgamma(I * K, shape, rate), I, K)
  H <- matrix(stats::rgamma(K * J, shape, rate), K, J)
  list(X = matrix(stats::rpois(I * J, W %*% H), I, J), W = W, H = H)
}

# Plain-R log p(X | W, H) over the observed entries.
pois_loglik_r <- function(X, M) {
  o <- !is.na(X)
  sum(stats::dpois(X[o], M[o], log = TRUE))
}

test_that("the VB ELBO never decreases, on dense, sparse and incomplete counts", {
  withr::local_seed(1)
  d <- pois_sim(30, 25, 3)
  Xna <- d$X
  Xna[sample(length(Xna), 60)] <- NA
  Xs <- Matrix::Matrix(d$X, sparse = TRUE)
  Xsna <- Xs
  Xsna[cbind(c(1, 5, 9), c(2, 2, 7))] <- NA
  for (X in list(d$X, Xs, Xna, Xsna)) {
    fit <- suppressWarnings(bnmf(X, rank = 3, likelihood = "poisson", method = "vb", iter = 60))
    e <- elbo(fit)
    expect_true(all(is.finite(e)))
    expect_true(all(diff(e) >= -1e-9 * abs(e[-1])))
    # the last ELBO is that of the fit's q, as the reference hook computes it
    q <- fit$q
    pr <- fit$prior[c("a", "b", "c", "d")]
    expect_equal(bnmf:::pois_vb_elbo(as.matrix(X), q, pr), e[length(e)], tolerance = 1e-10)
  }
})

test_that("VB sweeps give the same q however a run is cut into calls", {
  withr::local_seed(9)
  d <- pois_sim(15, 12, 2)
  data <- bnmf:::prepare_data(d$X, 2L)
  pr <- list(a = 1, b = 1, c = 1, d = 1)
  W0 <- matrix(stats::rgamma(30, 1), 15, 2)
  H0 <- matrix(stats::rgamma(24, 1), 2, 12)
  q1 <- bnmf:::pois_vb_state(W0, H0)
  q2 <- bnmf:::pois_vb_state(W0, H0)
  t1 <- .Call(bnmf:::C_pois_vb, q1, data, d$X + 0, pr, list(n = 12, tol = 0, threads = 1, known = c(NA_real_, NA_real_)))$trace
  t2 <- unlist(lapply(1:4, function(r) {
    .Call(bnmf:::C_pois_vb, q2, data, d$X + 0, pr, list(n = 3, tol = 0, threads = 1, known = c(NA_real_, NA_real_)))$trace
  }))
  expect_identical(q1, q2)
  expect_identical(t1, t2)
})

test_that("VB's pass in row order gives q(W)'s sums of the pass in column order, bit for bit", {
  # q(W)'s sums add each row's terms in the order of its columns either way,
  # so q is identical; the log likelihood is summed by row (the ELBO to
  # rounding). The layout made once and kept, or made for each call, and any
  # number of threads give the same bits.
  withr::local_seed(12)
  for (case in list(c(40, 25, 6, 0), c(25, 40, 5, 0), c(30, 30, 6, 1))) {
    I <- case[1]; J <- case[2]; K <- case[3]
    X <- matrix(rpois(I * J, 0.4), I, J)
    if (case[4] == 1) X[sample(I * J, 40)] <- NA
    if (case[4] == 0) X <- Matrix::Matrix(X, sparse = TRUE)
    data <- bnmf:::prepare_data(X, K)
    x <- if (inherits(X, "dgCMatrix")) X@x + 0 else X + 0
    pr <- list(a = 1, b = 1, c = 1, d = 1)
    W0 <- matrix(stats::rgamma(I * K, 1), I, K)
    H0 <- matrix(stats::rgamma(K * J, 1), K, J)
    run <- function(rows, threads = 1, calls = 1) {
      q <- bnmf:::pois_vb_state(W0, H0)
      tr <- unlist(lapply(seq_len(calls), function(r) {
        .Call(bnmf:::C_pois_vb, q, data, x, pr,
              list(n = 12 / calls, tol = 0, threads = threads, known = c(NA_real_, NA_real_),
                   rows = rows))$trace
      }))
      list(q = q, trace = tr)
    }
    cols <- run(NULL)
    by_row <- run(TRUE)
    layout <- .Call(bnmf:::C_pois_rows, data, x)
    expect_identical(layout$rp[I + 1L], sum(x > 0, na.rm = TRUE))
    kept <- run(layout, calls = 4)
    two <- run(layout, threads = 2)
    lab <- sprintf("I = %d, J = %d, K = %d%s", I, J, K, if (case[4]) ", missing entries" else "")
    for (nm in c("shape_W", "rate_W", "shape_H", "rate_H", "W", "H")) {
      expect_identical(by_row$q[[nm]], cols$q[[nm]], label = paste(nm, lab))
      expect_identical(kept$q[[nm]], by_row$q[[nm]], label = paste(nm, lab, "kept"))
      expect_identical(two$q[[nm]], by_row$q[[nm]], label = paste(nm, lab, "2 threads"))
    }
    expect_equal(by_row$trace, cols$trace, tolerance = 1e-13, label = lab)
    expect_identical(kept$trace, by_row$trace, label = lab)
    expect_equal(two$trace, by_row$trace, tolerance = 1e-13, label = lab)
  }
})

# the ELBO of a random q for counts X at rank K: bnmf against plain R
elbo_closed_form <- function(X, K) {
  I <- nrow(X)
  J <- ncol(X)
  q <- list(shape_W = matrix(stats::runif(I * K, 1, 3), I, K),
            rate_W = matrix(stats::runif(I * K, 1, 2), I, K),
            shape_H = matrix(stats::runif(K * J, 1, 3), K, J),
            rate_H = matrix(stats::runif(K * J, 1, 2), K, J))
  pr <- list(a = 1.5, b = 0.7, c = 2, d = 1.3)
  LW <- exp(digamma(q$shape_W)) / q$rate_W
  LH <- exp(digamma(q$shape_H)) / q$rate_H
  EW <- q$shape_W / q$rate_W
  EH <- q$shape_H / q$rate_H
  o <- !is.na(X)
  lik <- sum((X * log(LW %*% LH) - lgamma(X + 1) - EW %*% EH)[o])
  gterm <- function(al, be, a, b) {
    sum(a * log(b) - lgamma(a) + (a - 1) * (digamma(al) - log(be)) - b * al / be +
          al - log(be) + lgamma(al) + (1 - al) * digamma(al))
  }
  want <- lik + gterm(q$shape_W, q$rate_W, pr$a, pr$b) + gterm(q$shape_H, q$rate_H, pr$c, pr$d)
  expect_equal(bnmf:::pois_vb_elbo(X, q, pr), want, tolerance = 1e-12)
}

test_that("the VB ELBO is the closed form, checked term by term in plain R", {
  withr::local_seed(2)
  # a tiny X (every column's logs one at a time) and one whose columns hold
  # 3 to 23 counts (the logs four at a time, and the rest)
  big <- matrix(stats::rpois(24 * 9, 4), 24, 9)
  big[cbind(c(1, 5, 6, 2), c(1, 1, 3, 9))] <- NA
  big[, 4] <- c(2, 7, 1, rep(0, 21))
  for (X in list(matrix(c(3, 0, 1, NA, 2, 5), 2, 3), big)) {
    elbo_closed_form(X, K = if (nrow(X) == 2) 2 else 3)
  }
})

test_that("VB on several threads gives the one-thread fit, reproducibly", {
  withr::local_seed(4)
  # 5000 columns: more than one block of the pass (4096 columns)
  Xs <- Matrix::rsparsematrix(30, 5000, 0.05, rand.x = function(n) rpois(n, 3) + 1)
  Xn <- Xs
  Xn[2, 7] <- NA                              # the copied layout, too
  for (X in list(Xs, Xn)) {
    fit <- function(threads) {
      withr::local_options(bnmf.threads = threads)
      set.seed(5)
      suppressWarnings(bnmf(X, rank = 3, likelihood = "poisson", method = "vb", iter = 15))
    }
    one <- fit(1)
    two <- fit(2)
    expect_equal(two$W, one$W, tolerance = 1e-10)
    expect_equal(two$H, one$H, tolerance = 1e-10)
    expect_equal(two$trace$logpost, one$trace$logpost, tolerance = 1e-12)
    expect_identical(fit(2)$W, two$W)
    expect_equal(fit(3)$H, one$H, tolerance = 1e-10)
  }
  # Later chunks of a sparse fit reuse what the first found about the counts
  # (bnmf_pois_data_known()); the dense fit builds its layout every time.
  set.seed(5)
  dense <- suppressWarnings(bnmf(as.matrix(Xs), rank = 3, likelihood = "poisson",
                                 method = "vb", iter = 15))
  set.seed(5)
  sparse <- suppressWarnings(bnmf(Xs, rank = 3, likelihood = "poisson", method = "vb",
                                  iter = 15))
  expect_identical(sparse$W, dense$W)
  expect_identical(sparse$trace$logpost, dense$trace$logpost)
  withr::local_options(bnmf.threads = 0)
  expect_error(bnmf(Xs, rank = 2, likelihood = "poisson", method = "vb", iter = 2),
               "bnmf.threads", class = "bnmf_error_input")
})

test_that("VB and Gibbs on a sparse X give the dense fit, with the same seed", {
  withr::local_seed(3)
  d <- pois_sim(25, 20, 2)
  X <- d$X
  X[3, 4] <- NA
  Xs <- Matrix::Matrix(d$X, sparse = TRUE)
  Xs[3, 4] <- NA
  for (m in c("vb", "gibbs")) {
    set.seed(7)
    a <- suppressWarnings(bnmf(X, rank = 2, likelihood = "poisson", method = m, iter = 40))
    set.seed(7)
    b <- suppressWarnings(bnmf(Xs, rank = 2, likelihood = "poisson", method = m, iter = 40))
    expect_identical(a$W, b$W)
    expect_identical(a$H, b$H)
    expect_identical(a$trace$logpost, b$trace$logpost)
  }
  expect_s4_class(fitted(b), "dgCMatrix")
  for (sp in c("none", "both")) {
    set.seed(8)
    a <- bnmf(X, rank = 2, method = "ssvi", sparsity = sp, iter = 10,
              control = ssvi_control(mask_sweeps = 2, mask_samples = 1, final = 3))
    set.seed(8)
    b <- bnmf(Xs, rank = 2, method = "ssvi", sparsity = sp, iter = 10,
              control = ssvi_control(mask_sweeps = 2, mask_samples = 1, final = 3))
    expect_identical(a$W, b$W)
    expect_identical(masks(a), masks(b))
  }
})

# One Gibbs sweep in plain R, consuming the random numbers as the C code
# does: the multinomial split of each positive observed count (column
# order; a count <= K unit by unit, a larger one by successive binomials), then W_ik ~ Gamma(a + sum_j Z_ijk,
# b + sum_{j observed in row i} H_kj) (i outer, k inner), then
# H_kj ~ Gamma(c + sum_i Z_ijk, d + sum_{i observed in column j} W_ik).
# A unit of a count takes the factor whose interval holds U (WH)_ij, the
# intervals laid out with the factors in the order of split_order(); the
# Gamma(shape, 1) draws are the package's (the hook C_pois_rgamma, tested
# against the Gamma distribution in test-poisson-exact.R), divided by the rate.
split_order <- function(K) {
  nb <- K %/% 4L
  if (nb == 0L) return(seq_len(K))
  c(as.vector(t(matrix(seq_len(4L * nb), 4L, nb))), seq_len(K)[-seq_len(4L * nb)])
}
rgamma_pkg <- function(a, z, rate) .Call(C_pois_rgamma, 1, a, z) / rate
pois_gibbs_r <- function(X, W, H, pr) {
  I <- nrow(X); J <- ncol(X); K <- ncol(W)
  ZW <- matrix(0, I, K); ZH <- matrix(0, K, J)
  for (j in seq_len(J)) for (i in seq_len(I)) {
    x <- X[i, j]
    if (is.na(x) || x == 0) next
    p <- W[i, ] * H[, j]
    if (x <= K) {
      ord <- split_order(K)
      cs <- cumsum(p[ord])
      for (u in seq_len(x)) {
        v <- stats::runif(1) * sum(p)
        n <- min(sum(cs <= v), K - 1)
        k <- ord[n + 1]
        ZW[i, k] <- ZW[i, k] + 1; ZH[k, j] <- ZH[k, j] + 1
      }
      next
    }
    left <- x; rest <- sum(p)
    for (k in seq_len(K)) {
      if (left <= 0) break
      z <- if (k == K) left else if (p[k] / rest >= 1) left else stats::rbinom(1, left, p[k] / rest)
      ZW[i, k] <- ZW[i, k] + z; ZH[k, j] <- ZH[k, j] + z
      left <- left - z; rest <- rest - p[k]
    }
  }
  o <- !is.na(X)
  for (i in seq_len(I)) for (k in seq_len(K)) {
    W[i, k] <- rgamma_pkg(pr$a, ZW[i, k], pr$b + sum(H[k, o[i, ]]))
  }
  for (j in seq_len(J)) for (k in seq_len(K)) {
    H[k, j] <- rgamma_pkg(pr$c, ZH[k, j], pr$d + sum(W[o[, j], k]))
  }
  list(W = W, H = H)
}

test_that("a Gibbs sweep draws from the exact conditionals (plain-R sweep, same random numbers)", {
  withr::local_seed(4)
  X <- matrix(c(4, 0, 2, 7, NA, 1, 0, 3, 9, 2, 0, 1), 3, 4)
  W <- matrix(stats::rgamma(6, 2), 3, 2)  # K = 2: counts 1, 2 by units, the rest by binomials
  H <- matrix(stats::rgamma(8, 2), 2, 4)
  pr <- list(a = 1.3, b = 0.8, c = 2.1, d = 1.7)
  set.seed(99)
  got <- bnmf:::pois_gibbs_sweeps(X, list(W = W, H = H), pr, 1)
  set.seed(99)
  want <- pois_gibbs_r(X, W, H, pr)
  expect_equal(got$W, want$W, tolerance = 1e-12)
  expect_equal(got$H, want$H, tolerance = 1e-12)
  # a wrong rate (the missing entry counted in its row's sum) is detected
  set.seed(99)
  wrong <- pois_gibbs_r(replace(X, is.na(X), 0), W, H, pr)
  expect_false(isTRUE(all.equal(got$W, wrong$W)))
})

test_that("with K >= 4 a Gibbs sweep splits the counts over the factors' intervals in their order", {
  withr::local_seed(6)
  K <- 6  # the four lanes (factors 1-4) and the rest (5, 6); counts above K by binomials
  X <- matrix(c(1, 0, 3, 7, NA, 1, 0, 2, 9, 6, 0, 1, 4, 5, 1), 3, 5)
  W <- matrix(stats::rgamma(3 * K, 0.7), 3, K)
  H <- matrix(stats::rgamma(K * 5, 0.7), K, 5)
  pr <- list(a = 0.6, b = 0.8, c = 1, d = 1.7)  # shapes below 1 and 1 (Exp(1))
  set.seed(98)
  got <- bnmf:::pois_gibbs_sweeps(X, list(W = W, H = H), pr, 1)
  set.seed(98)
  want <- pois_gibbs_r(X, W, H, pr)
  expect_equal(got$W, want$W, tolerance = 1e-12)
  expect_equal(got$H, want$H, tolerance = 1e-12)
  expect_equal(split_order(9), c(1, 5, 2, 6, 3, 7, 4, 8, 9))
})

# One sweep of the mask sampler in plain R: each mask's conditional from the
# full Poisson log-likelihood of the observed entries with the mask at 1 and
# at 0 (no collapsed formula), a uniform drawn unless the mask is forced.
pois_masks_r <- function(X, W, H, SW, SH, piW, piH) {
  o <- !is.na(X)
  flip <- function(S1, S0, lp1, lp0) {
    l1 <- pois_loglik_r(X, S1) + lp1
    l0 <- pois_loglik_r(X, S0) + lp0
    if (!is.finite(l0)) return(1L)
    as.integer(stats::runif(1) < stats::plogis(l1 - l0))
  }
  for (i in seq_len(nrow(W))) for (k in seq_len(ncol(W))) {
    A1 <- SW; A1[i, k] <- 1L; A0 <- SW; A0[i, k] <- 0L
    SW[i, k] <- flip((W * A1) %*% (H * SH), (W * A0) %*% (H * SH), log(piW[k]), log1p(-piW[k]))
  }
  for (j in seq_len(ncol(H))) for (k in seq_len(nrow(H))) {
    B1 <- SH; B1[k, j] <- 1L; B0 <- SH; B0[k, j] <- 0L
    SH[k, j] <- flip((W * SW) %*% (H * B1), (W * SW) %*% (H * B0), log(piH[k]), log1p(-piH[k]))
  }
  list(SW = SW, SH = SH)
}

test_that("a sweep of the collapsed mask sampler draws from the exact conditionals", {
  withr::local_seed(5)
  X <- matrix(c(4, 0, 2, 7, NA, 1, 0, 3, 9, 2, 0, 1, 5, 0, 0), 3, 5)
  K <- 3
  W <- matrix(stats::rgamma(3 * K, 2), 3, K)
  H <- matrix(stats::rgamma(K * 5, 2), K, 5)
  piW <- c(0.3, 0.6, 0.8)
  piH <- c(0.5, 0.2, 0.9)
  SW <- matrix(stats::rbinom(3 * K, 1, 0.7), 3, K)
  SH <- matrix(1L, K, 5)
  for (s in 1:5) {
    set.seed(100 + s)
    got <- bnmf:::pois_mask_sweeps(X, W, H, SW, SH, piW, piH, 1)
    set.seed(100 + s)
    want <- pois_masks_r(X, W, H, SW, SH, piW, piH)
    expect_identical(got$SW, want$SW)
    expect_identical(got$SH, want$SH)
    SW <- got$SW
    SH <- got$SH
  }
})

test_that("VB and Gibbs recover planted factors", {
  withr::local_seed(6)
  d <- pois_sim(60, 50, 3, shape = 1, rate = 0.25)
  truth <- list(W = d$W, H = d$H)
  vb <- bnmf(d$X, rank = 3, likelihood = "poisson", method = "vb", iter = 2000, tol = 1e-5)
  gi <- bnmf(d$X, rank = 3, likelihood = "poisson", method = "gibbs", iter = 300)
  for (fit in list(vb, gi)) {
    al <- align_factors(truth, fit)
    expect_true(all(diag(al$cosine[, al$perm]) > 0.95))
  }
  expect_true(is.na(sigma(vb)))
  expect_s3_class(logLik(gi), "logLik")
  expect_equal(dim(fitted(gi)), dim(d$X))
  expect_equal(unname(predict(vb)), unname(vb$W %*% vb$H))
  expect_error(elbo(gi), class = "bnmf_error_unsupported")
  expect_identical(masks(vb)$W, matrix(1, 60, 3, dimnames = dimnames(vb$W)))
})

test_that("Gibbs with burnin = 0 keeps every sweep", {
  withr::local_seed(8)
  X <- matrix(rpois(400, 3), 20)
  fit <- bnmf(X, 2, likelihood = "poisson", method = "gibbs", iter = 6, burnin = 0L,
              keep = "draws", progress = FALSE)
  expect_equal(nrow(fit$trace), 6L)
  expect_true(all(fit$trace$sampling))
  expect_equal(fit$n_draws, 6)
  expect_equal(ncol(fit$draws[[1L]]$W_draws), 6L)
})

test_that("SSVI recovers doubly sparse masks better than chance and switches spare factors off", {
  withr::local_seed(7)
  I <- 60; J <- 50
  W <- matrix(stats::rgamma(I * 2, 5, 1), I, 2)
  H <- matrix(stats::rgamma(2 * J, 5, 1), 2, J)
  SW <- matrix(stats::rbinom(I * 2, 1, 0.5), I, 2)
  SH <- matrix(stats::rbinom(2 * J, 1, 0.5), 2, J)
  X <- matrix(stats::rpois(I * J, (W * SW) %*% (H * SH)), I, J)
  fit <- bnmf(X ~ nmf(2, sparsity = "both"), method = "ssvi", iter = 60,
              prior = gamma_prior(5, 1),
              control = ssvi_control(mask_sweeps = 4, mask_samples = 2, final = 10))
  al <- align_factors(list(W = W * SW, H = H * SH), fit)
  p <- al$perm
  accW <- mean(round(masks(fit)$W[, p]) == SW)
  accH <- mean(round(masks(fit)$H[p, ]) == SH)
  # chance (masks drawn independently of the data) is 0.5 for both
  expect_gt(accW, 0.8)
  expect_gt(accH, 0.8)
  expect_equal(factors(fit)$W, fit$W)
  s <- summary(fit)
  expect_identical(s$factors$off, c(FALSE, FALSE))
  # a spare third factor, started small with every mask on: the mask sampler
  # turns its masks off and E[pi] falls below the cut-off, for both sparsities
  init <- list(W = cbind(W * SW + 0.1, 0.1), H = rbind(H * SH + 0.1, 0.1))
  for (sp in c("coef", "both")) {
    f3 <- bnmf(X ~ nmf(3, sparsity = sp), method = "ssvi", iter = 60, init = init,
               prior = gamma_prior(5, 1),
               control = ssvi_control(mask_sweeps = 4, mask_samples = 2, final = 10))
    s3 <- summary(f3)
    expect_identical(s3$factors$off, c(FALSE, FALSE, TRUE))
    expect_lt(min(f3$pi$H[3], f3$pi$W[3]), f3$control$cutoff)
    expect_gt(min(f3$pi$H[1:2]), 0.3)
  }
})

test_that("the Poisson likelihood refuses bad input with errors naming the argument", {
  X <- matrix(1:12, 3, 4)
  err <- function(expr, what) {
    e <- expect_error(expr, class = "bnmf_error_input")
    expect_match(conditionMessage(e), what, fixed = TRUE)
  }
  err(bnmf(X + 0.5, rank = 2, likelihood = "poisson", method = "vb"), "`X`")
  err(bnmf(-X, rank = 2, likelihood = "poisson", method = "vb"), "`X`")
  err(bnmf(X, rank = 2, likelihood = "poisson", method = "icm"), "`likelihood`")
  err(bnmf(X, rank = 2, likelihood = "poisson", method = "vb", sparsity = "both"), "`sparsity`")
  err(bnmf(X ~ nmf(2, sparsity = "coef"), likelihood = "poisson", method = "gibbs"), "`sparsity`")
  err(bnmf(X, rank = 2, method = "vb", sparsity = "both"), "`sparsity`")
  err(bnmf(X, rank = 2, method = "ssvi", likelihood = silf()), "`likelihood`")
  err(bnmf(X, rank = 2, method = "ssvi", control = hmc_control()), "`control`")
  err(bnmf(X, rank = 2, method = "ssvi", sparsity = "lots"), "`sparsity`")
  err(bnmf(X, rank = 2, likelihood = "poisson", method = "vb", mask_prior = beta_process()),
      "`mask_prior`")
  err(bnmf(X, rank = 2, method = "ssvi", sparsity = "both", mask_prior = 1), "`mask_prior`")
  err(bnmf(X, rank = 2, likelihood = "poisson", method = "vb",
           prior = list(W = gamma_prior(), H = gamma_prior(), lambda = 2)), "`prior`")
  err(bnmf(X, rank = 2, likelihood = "poisson", method = "vb", noise = gamma_prior()), "`noise`")
  err(beta_process(a0 = 0), "`a0`")
  err(ssvi_control(kappa = 2), "`kappa`")
  err(ssvi_control(mask_sweeps = 2, mask_samples = 3), "`mask_samples`")
  err(masks(suppressWarnings(bnmf(X, rank = 2, method = "icm"))), "`object`")
})

test_that("update() continues Poisson Gibbs and VB fits exactly as one longer run", {
  set.seed(2)
  X <- matrix(rpois(20 * 15, 4), 20)
  for (Y in list(X, Matrix::Matrix(X, sparse = TRUE))) {
    set.seed(5)
    a <- bnmf(Y, rank = 2, likelihood = "poisson", method = "gibbs", iter = 100, burnin = 50,
              chains = 2, keep = "draws", thin = 2)
    b <- update(a, iter = 60, progress = FALSE)
    set.seed(5)
    l <- bnmf(Y, rank = 2, likelihood = "poisson", method = "gibbs", iter = 160, burnin = 50,
              chains = 2, keep = "draws", thin = 2)
    for (nm in c("W", "H", "W_sd", "H_sd", "WH", "n_draws", "trace", "draws")) {
      expect_identical(b[[nm]], l[[nm]], info = nm)
    }
    expect_identical(dim(posterior::as_draws_array(b)), c(55L, 2L, 2L + 20L * 2L + 2L * 15L))
    set.seed(5)
    a <- suppressWarnings(bnmf(Y, rank = 2, likelihood = "poisson", method = "vb", iter = 30,
                               tol = 0, chains = 2))
    b <- update(a, iter = 30, progress = FALSE)
    set.seed(5)
    l <- suppressWarnings(bnmf(Y, rank = 2, likelihood = "poisson", method = "vb", iter = 60,
                               tol = 0, chains = 2))
    expect_identical(b$W, l$W)
    expect_identical(b$H_sd, l$H_sd)
    expect_identical(b$trace$logpost, l$trace$logpost[l$trace$chain == l$best])
  }
  s <- suppressWarnings(bnmf(X, rank = 2, likelihood = "poisson", method = "ssvi", iter = 10))
  expect_error(update(s, iter = 5), class = "bnmf_error_unsupported")
})

test_that("summary() of a Poisson Gibbs fit reports posterior's bulk ESS and R-hat", {
  skip_if_not_installed("posterior")
  set.seed(1)
  X <- matrix(rpois(300, 5), 20)
  f <- bnmf(X, rank = 2, likelihood = "poisson", method = "gibbs", iter = 400, chains = 2)
  d <- summary(f)$diagnostics
  kt <- f$trace[f$trace$sampling, ]
  m <- cbind(kt$loglik[kt$chain == 1], kt$loglik[kt$chain == 2])
  expect_equal(d$ess[d$quantity == "loglik"], posterior::ess_bulk(m), tolerance = 1e-8)
  expect_equal(d$rhat[d$quantity == "loglik"], posterior::rhat(m), tolerance = 1e-8)
  expect_output(print(summary(f)), "bulk ESS and R-hat")
  expect_null(summary(bnmf(X, rank = 2, likelihood = "poisson", method = "vb", iter = 20,
                           tol = 0))$diagnostics)
})

test_that("membership() and markers() of a Poisson VB fit draw from its q", {
  set.seed(4)
  W <- cbind(c(rep(5, 10), rep(0.2, 10)), c(rep(0.2, 10), rep(5, 10)))
  H <- cbind(matrix(c(4, 0.3), 2, 8), matrix(c(0.3, 4), 2, 8))
  X <- matrix(rpois(20 * 16, W %*% H), 20)
  fit <- bnmf(X, rank = 2, likelihood = "poisson", method = "vb", iter = 300)
  set.seed(9)
  m <- membership(fit)
  # the same factorisations drawn by hand from the fitted Gammas
  set.seed(9)
  q <- fit$q
  hits <- matrix(0, 2, 16)
  for (t in 1:100) {
    Wt <- matrix(rgamma(40, q$shape_W, q$rate_W), 20, 2)
    Ht <- matrix(rgamma(32, q$shape_H, q$rate_H), 2, 16)
    # the dominant factor: the largest excess contribution over the
    # factor's minimum (the largest contribution where every excess is 0)
    Ct <- Ht * colSums(Wt)
    E <- Ct - apply(Ct, 1L, min)
    d <- max.col(t(E), ties.method = "first")
    flat <- colSums(E > 0) == 0
    d[flat] <- max.col(t(Ct[, flat, drop = FALSE]), ties.method = "first")
    hits[cbind(d, 1:16)] <- hits[cbind(d, 1:16)] + 1 / 100
  }
  best <- max.col(t(hits), ties.method = "first")
  expect_equal(m$probability, hits[cbind(best, 1:16)])
  expect_false(anyNA(m$probability))
  # the two groups of samples are two clusters, with certainty
  expect_identical(length(unique(m$cluster[1:8])), 1L)
  expect_identical(length(unique(m$cluster[9:16])), 1L)
  expect_false(m$cluster[1] == m$cluster[9])
  expect_true(all(m$probability > 0.95))
  mk <- markers(fit, n = 5)
  expect_false(anyNA(mk$lower))
  expect_true(all(mk$lower <= mk$upper))
  expect_true(all(mk$prob_top >= 0 & mk$prob_top <= 1))
})
