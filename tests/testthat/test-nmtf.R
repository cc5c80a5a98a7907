# The NMTF model code X ~ F S G': conditionals against plain-R brute force,
# monotone objectives, the KKT point of ICM, VB's expected squared error,
# sparse = dense, input errors and the S3 methods.

nmtf_toy <- function(I = 12, J = 10, K = 3, L = 2, sd = 0.3, seed = 1, na = 0) {
  set.seed(seed)
  F <- matrix(rexp(I * K), I, K)
  S <- matrix(rexp(K * L), K, L)
  G <- matrix(rexp(J * L), J, L)
  X <- F %*% S %*% t(G) + matrix(rnorm(I * J, sd = sd), I, J)
  if (na) X[sample(I * J, na)] <- NA
  list(X = X, F = F, S = S, G = G)
}

# One sweep of `rule` updating only `update`, from a given state.
nmtf_step <- function(X, F, S, G, tau, rate, rule, update, vb = NULL) {
  data <- bnmf:::prepare_data(X, ncol(F))
  st <- bnmf:::nmtf_new_state(X, data, F, S, G, tau, vb = vb)
  prior <- list(rate = rep(rate, 3), alpha = 1, beta = 1, ard = numeric())
  bnmf:::engine_nmtf_sweeps(st, data, prior, 1L, rule = rule, update = update)
  st
}

# The conditional of S_kl in plain R: precision tau * sum_Omega (F_ik G_jl)^2
# and mean (sum_Omega F_ik G_jl R_ij - rate / tau) / sum_Omega (F_ik G_jl)^2
# with R the residual without the term of S_kl.
s_conditional <- function(X, F, S, G, tau, rate, k, l) {
  O <- !is.na(X)
  a <- outer(F[, k], G[, l])
  R <- X - F %*% S %*% t(G) + S[k, l] * a
  p <- sum(a[O]^2)
  list(mean = (sum(a[O] * R[O]) - rate / tau) / p, prec = tau * p)
}

tn_moments <- function(mu, sd) {
  a <- -mu / sd
  lam <- dnorm(a) / pnorm(a, lower.tail = FALSE)
  c(mean = mu + sd * lam, var = sd^2 * (1 - lam * (lam - a)))
}

test_that("the S update is the exact conditional (mean and precision, with NA)", {
  d <- nmtf_toy(I = 7, J = 6, K = 3, L = 2, na = 5, seed = 2)
  tau <- 2; rate <- 0.7
  # VB from a state with no variance in F and G: q(S_kl) is the truncated
  # normal of the Gibbs conditional; its moments give mean and precision.
  vb <- list(tau_rate = (1 + sum(!is.na(d$X)) / 2) / tau)
  st <- nmtf_step(d$X, d$F, d$S, d$G, tau, rate, "vb", "S", vb = vb)
  Sr <- d$S
  for (l in 1:2) for (k in 1:3) {
    cc <- s_conditional(d$X, d$F, Sr, d$G, tau, rate, k, l)
    m <- tn_moments(cc$mean, 1 / sqrt(cc$prec))
    expect_equal(st$S[k, l], m[["mean"]], tolerance = 1e-10)
    expect_equal(st$S_var[k + 3 * (l - 1)], m[["var"]], tolerance = 1e-10)
    Sr[k, l] <- m[["mean"]]
  }
  # ICM: the modes max(mean, 0), entry by entry
  st <- nmtf_step(d$X, d$F, d$S, d$G, tau, rate, "icm", "S")
  Sr <- d$S
  for (l in 1:2) for (k in 1:3) {
    Sr[k, l] <- max(s_conditional(d$X, d$F, Sr, d$G, tau, rate, k, l)$mean, 0)
  }
  expect_equal(st$S, Sr, tolerance = 1e-12)
})

# VB's conditional of S_kl given q(F), q(G) with variances VF, VG: the
# expected precision tau * sum_Omega E[F_ik^2] E[G_jl^2] and mean from
# sum_Omega E[F_ik] E[G_jl] X_ij less sum_Omega sum_{(k', l') != (k, l)}
# E[F_ik F_ik'] E[G_jl G_jl'] S_k'l', in plain R.
s_conditional_vb <- function(X, F, S, G, VF, VG, tau, rate, k, l) {
  O <- !is.na(X)
  X0 <- replace(X, !O, 0)
  I <- nrow(X)
  J <- ncol(X)
  p <- sum(outer(F[, k]^2 + VF[, k], G[, l]^2 + VG[, l])[O])
  # M1[i, l'] = sum_k' E[F_ik F_ik'] S_k'l'
  M1 <- F[, k] * (F %*% S) + VF[, k] * matrix(S[k, ], I, ncol(S), byrow = TRUE)
  cross <- sum((M1 %*% t(G) * matrix(G[, l], I, J, byrow = TRUE))[O]) +
    sum(outer(M1[, l], VG[, l])[O]) - S[k, l] * p
  num <- sum((outer(F[, k], G[, l]) * X0)[O]) - cross
  list(mean = (num - rate / tau) / p, prec = tau * p)
}

test_that("the S update with missing entries is the exact conditional, VB with variances too", {
  # Many missing entries take update_S's per-row matrix of their terms, few
  # the entry-by-entry sums (s_by_matrix); both against plain R. VB with
  # variances in F and G exercises every block of that matrix.
  tau <- 1.7; rate <- 0.3
  for (na in c(5, 40)) {
    d <- nmtf_toy(I = 12, J = 10, K = 3, L = 2, na = na, seed = 21)
    if (na > 5) d$X[3, 2:9] <- NA
    withr::local_seed(22)
    VF <- matrix(runif(12 * 3, 0, 0.4), 12, 3)
    VG <- matrix(runif(10 * 2, 0, 0.4), 10, 2)
    vb <- list(tau_rate = (1 + sum(!is.na(d$X)) / 2) / tau, F_var = VF, G_var = VG)
    st <- nmtf_step(d$X, d$F, d$S, d$G, tau, rate, "vb", "S", vb = vb)
    Sr <- d$S
    for (l in 1:2) for (k in 1:3) {
      cc <- s_conditional_vb(d$X, d$F, Sr, d$G, VF, VG, tau, rate, k, l)
      m <- tn_moments(cc$mean, 1 / sqrt(cc$prec))
      expect_equal(st$S[k, l], m[["mean"]], tolerance = 1e-10, info = na)
      expect_equal(st$S_var[k + 3 * (l - 1)], m[["var"]], tolerance = 1e-10, info = na)
      Sr[k, l] <- m[["mean"]]
    }
    for (rule in c("icm", "np")) {
      st <- nmtf_step(pmax(d$X, 0), d$F, d$S, d$G, tau, rate, rule, "S")
      Sr <- d$S
      if (rule == "icm") {
        for (l in 1:2) for (k in 1:3) {
          Sr[k, l] <- max(s_conditional(pmax(d$X, 0), d$F, Sr, d$G, tau, rate, k, l)$mean, 0)
        }
      } else {
        # all of S at once: S * (F' X G) / (F' [M o (F S G')] G)
        O <- !is.na(d$X)
        X0 <- replace(pmax(d$X, 0), !O, 0)
        Sr <- Sr * (t(d$F) %*% X0 %*% d$G) / (t(d$F) %*% ((d$F %*% Sr %*% t(d$G)) * O) %*% d$G)
      }
      expect_equal(st$S, Sr, tolerance = 1e-12, info = paste(rule, na))
    }
    # the SSE over the observed entries of the state (ICM: no variances)
    data <- bnmf:::prepare_data(d$X, 3)
    st <- bnmf:::nmtf_new_state(d$X, data, d$F, d$S, d$G, tau)
    prior <- list(rate = rep(rate, 3), alpha = 1, beta = 1, ard = numeric())
    out <- bnmf:::engine_nmtf_sweeps(st, data, prior, 1L, rule = "icm", update = character())
    O <- !is.na(d$X)
    expect_equal(out$trace[1, 4], sum(((d$X - d$F %*% d$S %*% t(d$G))[O])^2),
                 tolerance = 1e-12, info = na)
  }
})

test_that("Gibbs draws of S follow the truncated normal conditional (KS)", {
  withr::local_seed(11)
  d <- nmtf_toy(I = 5, J = 4, K = 1, L = 1, na = 2, seed = 3)
  tau <- 1.5; rate <- 2
  cc <- s_conditional(d$X, d$F, d$S, d$G, tau, rate, 1, 1)
  draws <- vapply(1:2000, function(t) {
    nmtf_step(d$X, d$F, d$S, d$G, tau, rate, "gibbs", "S")$S[1, 1]
  }, numeric(1))
  sd <- 1 / sqrt(cc$prec)
  cdf <- function(x) {
    (pnorm(x, cc$mean, sd) - pnorm(0, cc$mean, sd)) / pnorm(0, cc$mean, sd, lower.tail = FALSE)
  }
  expect_gt(suppressWarnings(ks.test(draws, cdf))$p.value, 1e-3)
})

test_that("the rows of F and G are the NMF conditionals given H = S G' and W = F S", {
  d <- nmtf_toy(I = 7, J = 6, K = 3, L = 2, na = 5, seed = 4)
  tau <- 2; rate <- 0.4
  O <- !is.na(d$X)
  X0 <- d$X
  X0[!O] <- 0
  # VB with no variances elsewhere: q(F_ik) is the conditional's truncated normal
  vb <- list(tau_rate = (1 + sum(O) / 2) / tau)
  st <- nmtf_step(d$X, d$F, d$S, d$G, tau, rate, "vb", "F", vb = vb)
  H <- d$S %*% t(d$G)
  Fr <- d$F
  for (i in 1:7) {
    Hi <- H[, O[i, ], drop = FALSE]
    C <- Hi %*% t(Hi)
    b <- Hi %*% X0[i, O[i, ]]
    for (k in 1:3) {
      mu <- (b[k] - sum(C[k, -k] * Fr[i, -k]) - rate / tau) / C[k, k]
      m <- tn_moments(mu, 1 / sqrt(tau * C[k, k]))
      expect_equal(st$F[i, k], m[["mean"]], tolerance = 1e-10)
      Fr[i, k] <- m[["mean"]]
    }
  }
  st <- nmtf_step(d$X, d$F, d$S, d$G, tau, rate, "vb", "G", vb = vb)
  W <- d$F %*% d$S
  Gr <- d$G
  for (j in 1:6) {
    Wj <- W[O[, j], , drop = FALSE]
    C <- t(Wj) %*% Wj
    b <- t(Wj) %*% X0[O[, j], j]
    for (l in 1:2) {
      mu <- (b[l] - sum(C[l, -l] * Gr[j, -l]) - rate / tau) / C[l, l]
      Gr[j, l] <- tn_moments(mu, 1 / sqrt(tau * C[l, l]))[["mean"]]
    }
  }
  expect_equal(st$G, Gr, tolerance = 1e-10)
})

test_that("VB's expected squared error equals Monte Carlo over q (with NA)", {
  withr::local_seed(5)
  d <- nmtf_toy(I = 6, J = 5, K = 2, L = 2, na = 4, seed = 5)
  fit <- bnmf(d$X ~ nmtf(2, 2), method = "vb", iter = 3, tol = 0, init = "random",
              progress = FALSE)
  esse <- tail(fit$trace$sse, 1)
  # E[(X_ij - F_i S G_j')^2] under a product distribution depends only on the
  # means and variances of the entries: draw every entry independently from a
  # Gamma with the moments of q.
  draw <- function(m, s) {
    v <- s^2
    out <- m
    pos <- v > 0
    out[pos] <- rgamma(sum(pos), shape = m[pos]^2 / v[pos], rate = m[pos] / v[pos])
    out
  }
  O <- !is.na(d$X)
  n <- 20000
  sse <- vapply(seq_len(n), function(t) {
    Fd <- draw(fit$F, fit$F_sd); Sd <- draw(fit$S, fit$S_sd); Gd <- draw(fit$G, fit$G_sd)
    sum(((d$X - Fd %*% Sd %*% t(Gd))[O])^2)
  }, numeric(1))
  expect_lt(abs(mean(sse) - esse), 4 * sd(sse) / sqrt(n))
  # and the mean residual alone falls short of it by the variance terms
  expect_gt(esse, sum(((d$X - fit$F %*% fit$S %*% t(fit$G))[O])^2))
})

test_that("ELBO, log posterior and loss never decrease (increase) with NA and ARD", {
  d <- nmtf_toy(I = 25, J = 20, K = 3, L = 3, na = 60, seed = 6)
  Xp <- pmax(d$X, 0)
  Xp[is.na(d$X)] <- NA
  mono <- function(v) all(diff(v) >= -1e-9 * pmax(abs(v[-1]), 1))
  for (prior in list(exponential(), ard())) {
    for (m in c("vb", "icm")) {
      withr::local_seed(7)
      fit <- bnmf(d$X ~ nmtf(3, 3, prior = prior), method = m, iter = 150, tol = 0,
                  progress = FALSE, init = if (m == "vb") "random" else "kmeans")
      expect_true(mono(fit$trace$logpost), info = paste(m, prior$type))
      expect_true(all(is.finite(fit$trace$logpost)))
    }
  }
  for (loss in c("euclidean", "kl")) {
    withr::local_seed(8)
    fit <- bnmf(Xp ~ nmtf(3, 3), method = "np", loss = loss, iter = 150, tol = 0,
                progress = FALSE)
    expect_true(mono(fit$trace$logpost), info = loss)
  }
})

test_that("the ICM fixed point is a KKT point of the MAP problem", {
  # (K, L) = (2, 1): with K = L = 2 the posterior has near-flat ridges
  # (F A, A^-1 S for 2 x 2 matrices A) along which coordinate ascent creeps
  d <- nmtf_toy(I = 10, J = 8, K = 2, L = 1, na = 6, seed = 9)
  withr::local_seed(9)
  fit <- bnmf(d$X ~ nmtf(2, 1, prior = exponential(0.5)), method = "icm", iter = 2000,
              tol = 1e-14, progress = FALSE)
  expect_true(fit$converged)
  F <- fit$F; S <- fit$S; G <- fit$G; tau <- fit$tau
  R <- F %*% S %*% t(G) - d$X
  R[is.na(R)] <- 0
  gF <- tau * R %*% G %*% t(S) + 0.5
  gS <- tau * t(F) %*% R %*% G + 0.5
  gG <- tau * t(R) %*% F %*% S + 0.5
  for (p in list(list(F, gF), list(S, gS), list(G, gG))) {
    z <- p[[1]]; g <- p[[2]]
    scale <- max(abs(tau * R)) * max(1, max(z))
    expect_lt(max(abs(g[z > 1e-8])), 1e-5 * scale)
    expect_true(all(g[z <= 1e-8] >= -1e-5 * scale))
  }
})

test_that("a dgCMatrix fit equals the dense fit from the same start", {
  d <- nmtf_toy(I = 15, J = 12, K = 2, L = 2, sd = 0.1, seed = 10)
  X <- pmax(d$X, 0)
  X[X < 0.3] <- 0
  Xs <- Matrix::Matrix(X, sparse = TRUE)
  init <- list(F = d$F, S = d$S, G = d$G, tau = 5)
  for (m in c("gibbs", "icm", "vb", "np")) {
    withr::local_seed(12)
    a <- bnmf(X, rank = c(2, 2), method = m, iter = 20, tol = 0, init = init, progress = FALSE)
    withr::local_seed(12)
    b <- bnmf(Xs, rank = c(2, 2), method = m, iter = 20, tol = 0, init = init, progress = FALSE)
    expect_equal(b$F, a$F, tolerance = 1e-8, info = m)
    expect_equal(b$S, a$S, tolerance = 1e-8, info = m)
    expect_equal(b$trace$logpost, a$trace$logpost, tolerance = 1e-8, info = m)
    expect_equal(as.matrix(fitted(b)) * (X != 0), fitted(a) * (X != 0), tolerance = 1e-8,
                 ignore_attr = TRUE)
  }
})

test_that("input errors name the argument", {
  X <- nmtf_toy()$X
  expect_error(bnmf(X, rank = c(2, 3, 4), method = "icm"), class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(0, 2), method = "icm"), "rank\\[1\\]", class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(13, 2), method = "icm"), "K <= nrow", class = "bnmf_error_input")
  expect_error(bnmf(X ~ nmtf(2), method = "icm"))
  expect_error(bnmf(X ~ nmtf(2, 2), method = "particles"), "tri-factorisation",
               class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(2, 2), method = "icm", init = list(F = matrix(1, 12, 3),
               S = matrix(1, 2, 2), G = matrix(1, 10, 2))), "init\\$F", class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(2, 2), method = "icm", init = list(F = matrix(1, 12, 2),
               S = matrix(1, 2, 3), G = matrix(1, 10, 2))), "init\\$S", class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(2, 2), method = "icm", init = "nndsvd"), "init",
               class = "bnmf_error_input")
  expect_error(bnmf(X, rank = c(2, 2), method = "icm", init = list(F = matrix(1, 12, 2),
               S = matrix(1, 2, 2), G = matrix(1, 10, 2), lambda = list(F = 1))), "lambda",
               class = "bnmf_error_input")
  expect_error(bnmf(X ~ nmtf(2, 2, prior = ard()), method = "np"), "prior",
               class = "bnmf_error_input")
  expect_error(bnmf(X ~ nmtf(2, 2), rank = c(2, 3)), "once", class = "bnmf_error_input")
})

test_that("every S3 method of an NMTF fit runs", {
  d <- nmtf_toy(na = 4)
  rownames(d$X) <- paste0("r", 1:12)
  withr::local_seed(13)
  for (m in c("gibbs", "icm", "vb", "np")) {
    X <- if (m == "np") abs(d$X) else d$X
    fit <- muffle_convergence(
      bnmf(X ~ nmtf(3, 2, prior = if (m %in% c("gibbs", "vb")) ard()), method = m,
           iter = 60, keep = if (m == "gibbs") "draws" else "summary", progress = FALSE))
    expect_s3_class(fit, c("bnmf_nmtf", "bnmf"))
    expect_equal(fit$method, m)
    f <- factors(fit)
    expect_named(f, c("F", "S", "G"))
    expect_identical(basis(fit), f$F)
    expect_equal(coef(fit), f$S %*% t(f$G))
    expect_equal(dim(fitted(fit)), c(12L, 10L))
    expect_false(anyNA(predict(fit)))
    expect_equal(nobs(fit), sum(!is.na(X)))
    expect_output(print(fit), "NMTF")
    s <- summary(fit)
    expect_equal(rownames(s$row_clusters), rownames(X))
    expect_true(all(s$row_clusters$prob > 0 & s$row_clusters$prob <= 1))
    expect_equal(nrow(s$col_clusters), 10L)
    expect_output(print(s), "Row clusters")
    # the printed sizes are the K row clusters' and the L column clusters'
    out <- capture.output(print(s))
    sizes <- function(side) {
      line <- grep(paste0("^", side, " clusters"), out, value = TRUE)
      as.integer(strsplit(sub(".*sizes ([0-9, ]+);.*", "\\1", line), ", ")[[1]])
    }
    expect_identical(sizes("Row"), tabulate(s$row_clusters$cluster, 3L))
    expect_identical(sizes("Column"), tabulate(s$col_clusters$cluster, 2L))
    # a probability is printed only where it is a posterior probability
    # (Gibbs sweeps); one estimate says so instead
    expect_identical(any(grepl("mean probability", out)), m == "gibbs")
    expect_identical(any(grepl("one estimate", out)), m != "gibbs")
    if (m == "np") {
      expect_error(sigma(fit), class = "bnmf_error_unsupported")
      expect_error(logLik(fit), class = "bnmf_error_unsupported")
    } else {
      expect_true(is.finite(sigma(fit)))
      expect_true(is.finite(logLik(fit)))
    }
    if (m == "vb") expect_true(all(diff(elbo(fit)) >= -1e-8 * abs(elbo(fit)[-1])))
    else expect_error(elbo(fit), class = "bnmf_error_unsupported")
    up <- muffle_convergence(update(fit, iter = 20, progress = FALSE))
    expect_equal(nrow(up$trace), nrow(fit$trace) + if (m == "gibbs" || !fit$converged) 20 else
      sum(up$trace$iteration > max(fit$trace$iteration)))
    if (m == "gibbs") {
      expect_equal(up$n_draws, fit$n_draws + 20)
      dr <- posterior::as_draws(fit)
      expect_true(all(c("tau", "loglik", "lambda_F[1]", "lambda_G[2]", "F[12,3]", "S[3,2]",
                        "G[10,2]") %in% posterior::variables(dr)))
      expect_equal(posterior::ndraws(dr), fit$n_draws)
    } else {
      expect_error(posterior::as_draws(fit), class = "bnmf_error_unsupported")
    }
  }
})

# E_q[sum_Omega (X_ij - F_i S G_j')^2] by enumerating every pair of terms
# F_ik S_kl G_jl, F_ik' S_k'l' G_jl' (E[a a'] = m m' + [same entry] v).
esse_brute <- function(X, m, v) {
  K <- ncol(m$F); L <- ncol(m$G)
  kl <- expand.grid(k = seq_len(K), l = seq_len(L))
  e2 <- function(M, V, a, b, r, c2) M[a, b] * M[r, c2] + (a == r && b == c2) * V[a, b]
  tot <- 0
  for (i in seq_len(nrow(X))) for (j in seq_len(ncol(X))) {
    if (is.na(X[i, j])) next
    mean_t <- sum(m$F[i, kl$k] * m$S[cbind(kl$k, kl$l)] * m$G[j, kl$l])
    sq <- 0
    for (p in seq_len(nrow(kl))) for (q in seq_len(nrow(kl))) {
      k <- kl$k[p]; l <- kl$l[p]; k2 <- kl$k[q]; l2 <- kl$l[q]
      sq <- sq + e2(m$F, v$F, i, k, i, k2) * e2(m$S, v$S, k, l, k2, l2) *
        e2(m$G, v$G, j, l, j, l2)
    }
    tot <- tot + X[i, j]^2 - 2 * X[i, j] * mean_t + sq
  }
  tot
}

test_that("VB's coordinate updates are the exact optima with every variance in play", {
  withr::local_seed(21)
  d <- nmtf_toy(I = 5, J = 4, K = 2, L = 2, na = 3, seed = 21)
  X <- d$X
  m <- list(F = d$F, S = d$S, G = d$G)
  v <- list(F = matrix(runif(10, 0.01, 0.3), 5), S = matrix(runif(4, 0.01, 0.3), 2),
            G = matrix(runif(8, 0.01, 0.3), 4))
  tau <- 1.7; rate <- 0.6
  # the optimum of one entry: -tau/2 ESSE(theta) - rate theta is quadratic
  # in a point theta (the others under q): q* is that truncated normal
  update <- function(m, v, blk, a, b) {
    at <- function(th) {
      mm <- m; vv <- v
      mm[[blk]][a, b] <- th
      vv[[blk]][a, b] <- 0
      esse_brute(X, mm, vv)
    }
    e0 <- at(0); e1 <- at(1); e2 <- at(2)
    c2 <- (e2 - 2 * e1 + e0) / 2
    c1 <- e1 - e0 - c2
    mom <- tn_moments(-(tau * c1 / 2 + rate) / (tau * c2), 1 / sqrt(tau * c2))
    m[[blk]][a, b] <- mom[["mean"]]
    v[[blk]][a, b] <- mom[["var"]]
    list(m = m, v = v)
  }
  data <- bnmf:::prepare_data(X, 2)
  prior <- list(rate = rep(rate, 3), alpha = 1, beta = 1, ard = numeric())
  order <- list(F = as.matrix(expand.grid(k = 1:2, i = 1:5)[, 2:1]),
                S = as.matrix(expand.grid(k = 1:2, l = 1:2)),
                G = as.matrix(expand.grid(l = 1:2, j = 1:4)[, 2:1]))
  for (blk in c("F", "S", "G")) {
    st <- bnmf:::nmtf_new_state(X, data, m$F, m$S, m$G, tau,
                                vb = list(tau_rate = 1, F_var = v$F, S_var = v$S, G_var = v$G))
    bnmf:::engine_nmtf_sweeps(st, data, prior, 1L, rule = "vb", update = blk)
    r <- list(m = m, v = v)
    for (t in seq_len(nrow(order[[blk]]))) {
      r <- update(r$m, r$v, blk, order[[blk]][t, 1], order[[blk]][t, 2])
    }
    expect_equal(st[[blk]], r$m[[blk]], tolerance = 1e-8, ignore_attr = TRUE, info = blk)
    expect_equal(st[[paste0(blk, "_var")]], as.vector(r$v[[blk]]), tolerance = 1e-8, info = blk)
  }
  # and the expected SSE of the sweep's end state, in closed form
  st <- bnmf:::nmtf_new_state(X, data, m$F, m$S, m$G, tau,
                              vb = list(tau_rate = 1, F_var = v$F, S_var = v$S, G_var = v$G))
  out <- bnmf:::engine_nmtf_sweeps(st, data, prior, 1L, rule = "vb", update = character())
  expect_equal(out$trace[1, 4], esse_brute(X, m, v), tolerance = 1e-10)
})

test_that("each NMTF VB sweep ends at the ELBO's maximum along the scales of G's columns", {
  # Scaling q(G[, l]) by c and q(S[, l]) by 1 / c leaves every expectation
  # of the expected SSE alone and moves the ELBO by -a (c - 1) - b (1 / c - 1)
  # + (J - K) log c (a = rate sum_j E[G_jl], b = rate sum_k E[S_kl]): zero
  # slope at c = 1 only if a - b = J - K. The sweep's last scale steps are
  # G's, so that holds after every sweep (F's balance is then moved by G's
  # steps through S). The expected SSE of the end state, computed here from
  # q's moments, checks that the sweep's cached products were rescaled too.
  withr::local_seed(31)
  d <- nmtf_toy(I = 7, J = 5, K = 2, L = 3, na = 4, seed = 31)
  X <- d$X
  rate <- 0.8
  data <- bnmf:::prepare_data(X, 2)
  prior <- list(rate = rep(rate, 3), alpha = 1, beta = 1, ard = numeric())
  v0 <- list(F = matrix(0.05, 7, 2), S = matrix(0.05, 2, 3), G = matrix(0.05, 5, 3))
  for (n in c(1L, 2L, 4L)) {
    st <- bnmf:::nmtf_new_state(X, data, d$F, d$S, d$G, 1.3,
                                vb = list(tau_rate = 1, F_var = v0$F, S_var = v0$S,
                                          G_var = v0$G))
    out <- bnmf:::engine_nmtf_sweeps(st, data, prior, n, rule = "vb")
    G <- matrix(st$G, 5, 3)
    S <- matrix(st$S, 2, 3)
    a <- rate * colSums(G)
    b <- rate * colSums(S)
    expect_lt(max(abs(a - b - (5 - 2))), 1e-10 * max(a + b), label = paste(n, "sweeps"))
    m <- list(F = matrix(st$F, 7, 2), S = S, G = G)
    v <- list(F = matrix(st$F_var, 7, 2), S = matrix(st$S_var, 2, 3),
              G = matrix(st$G_var, 5, 3))
    expect_equal(out$trace[n, 4], esse_brute(X, m, v), tolerance = 1e-10,
                 label = paste(n, "sweeps"))
  }
})

test_that("NMTF Gibbs's scale moves keep the cached products and mix the columns' scales", {
  # Each Gibbs sweep ends with a draw of log c along F[, k] c, S[k, ] / c and
  # G[, l] c, S[, l] / c (scale_steps in src/nmtf_run.c); its stationarity
  # is the joint-distribution test's (test-nmtf-geweke.R). Here: (1) the
  # SSE the sweep reports, from the rescaled caches F'F, G'G, F'XG, is that
  # of its end state (with NA); (2) the moves are made: the log column sums
  # of F, which coordinate updates move only slowly along the nearly flat
  # paths (lag-1 autocorrelations 0.84-0.99 without the moves on this
  # problem), decorrelate (measured 0.02-0.10 with them over 400 sweeps; the
  # standard error of a lag-1 autocorrelation of 400 independent draws is
  # 0.05, so 0.5 is far from either).
  d <- nmtf_toy(I = 30, J = 20, K = 3, L = 2, na = 20, seed = 41)
  X <- d$X
  data <- bnmf:::prepare_data(X, 3)
  prior <- list(rate = rep(1, 3), alpha = 1, beta = 1, ard = numeric())
  obs <- !is.na(X)
  for (n in c(1L, 3L)) {
    withr::local_seed(42)
    st <- bnmf:::nmtf_new_state(X, data, d$F, d$S, d$G, 2)
    out <- bnmf:::engine_nmtf_sweeps(st, data, prior, n, rule = "gibbs")
    fit <- matrix(st$F, 30, 3) %*% matrix(st$S, 3, 2) %*% t(matrix(st$G, 20, 2))
    expect_equal(out$trace[n, 4], sum((X - fit)[obs]^2), tolerance = 1e-10)
  }
  lag1 <- function(scale) {
    withr::local_seed(43)
    st <- list(F = d$F, S = d$S, G = d$G, tau = 2)
    v <- matrix(0, 400, 3)
    for (t in 1:400) {
      st <- bnmf:::nmtf_sweeps(X, st, list(rate = c(1, 1, 1), alpha = 1, beta = 1), 1,
                               scale = scale)
      v[t, ] <- log(colSums(st$F))
    }
    apply(v, 2, function(x) stats::acf(x, lag.max = 1, plot = FALSE)$acf[2])
  }
  expect_gt(min(lag1(FALSE)), 0.5)
  expect_lt(max(lag1(TRUE)), 0.5)
})

test_that("a sparse Gibbs fit's moments of F S G' on the stored entries are those of its draws", {
  # They go through bnmf_sparse_visit() with the rows in blocks of about
  # 128 KB of (F S)': 20,000 x 25 at L = 2 makes 3 blocks. Reference:
  # F S G' of every kept draw, formed in R.
  set.seed(44)
  I <- 20000; J <- 25; K <- 3; L <- 2
  X <- Matrix::rsparsematrix(I, J, 0.06, rand.x = function(n) rexp(n))
  X[, 2] <- 0
  X[I, 3] <- 1.5
  X <- Matrix::drop0(X)
  f <- bnmf(X, rank = c(K, L), iter = 8, burnin = 2, keep = "draws", progress = FALSE)
  ii <- X@i + 1L
  jj <- rep(seq_len(J), diff(X@p))
  d <- f$draws[[1]]
  fs <- sapply(seq_len(ncol(d$F)), function(t) {
    FS <- matrix(d$F[, t], I, K) %*% matrix(d$S[, t], K, L)
    G <- matrix(d$G[, t], J, L)
    rowSums(FS[ii, , drop = FALSE] * G[jj, , drop = FALSE])
  })
  m <- f$moments$X
  expect_equal(m$n, ncol(fs))
  expect_equal(m$mean, rowMeans(fs), tolerance = 1e-12)
  v <- apply(fs, 1, var)
  expect_lt(max(abs(m$m2 / (m$n - 1) - v)), 1e-10 * max(v))
})

test_that("KL updates with missing entries are the plain-R updates (rows and a column mostly missing)", {
  # F <- F * (Z G S') / (M G S'), G <- G * (Z' F S) / (M' F S),
  # S <- S * (F' Z G) / (F' M G), with Z = X / (F S G') on the observed
  # entries (0 elsewhere) and M the mask of observed entries, each update
  # with the factors as the ones before it left them
  kl_sweep_r <- function(X, F, S, G) {
    M <- !is.na(X) * 1
    X0 <- replace(X, is.na(X), 0)
    Z <- function() (X0 / (F %*% S %*% t(G))) * M
    step <- function(z, num, den) z * ifelse(den > 0, num / den, 1)
    F <- step(F, Z() %*% G %*% t(S), M %*% G %*% t(S))
    G <- step(G, t(Z()) %*% F %*% S, t(M) %*% F %*% S)
    S <- step(S, t(F) %*% Z() %*% G, t(F) %*% M %*% G)
    list(F = F, S = S, G = G)
  }
  withr::local_seed(47)
  I <- 30; J <- 24; K <- 3; L <- 2
  X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * L), K) %*% t(matrix(rexp(J * L), J)) +
    matrix(runif(I * J), I)
  X[sample(length(X), 0.2 * length(X))] <- NA
  X[2, 1:20] <- NA   # rows and a column missing more than half their entries
  X[7, 3:24] <- NA
  X[1:25, 5] <- NA
  init <- list(F = matrix(runif(I * K), I, K), S = matrix(runif(K * L), K, L),
               G = matrix(runif(J * L), J, L))
  want <- init
  for (n in 1:3) want <- kl_sweep_r(X, want$F, want$S, want$G)
  Xs <- Matrix::Matrix(replace(X, is.na(X), 0), sparse = TRUE)
  Xs[is.na(X)] <- NA
  for (Y in list(X, Xs)) {
    fit <- bnmf(Y, rank = c(K, L), method = "np", loss = "kl", iter = 3, tol = 0,
                init = init, progress = FALSE)
    for (m in c("F", "S", "G"))
      expect_equal(unname(fit[[m]]), want[[m]], tolerance = 1e-12, info = m)
  }
})

test_that("KL updates of a tall sparse X (several row blocks) equal the dense ones", {
  # X / (F S G') at the stored values goes through bnmf_sparse_visit(), the
  # rows of (F S)' in blocks: 20,000 x 25 at L = 2 makes 3 of them. Stored
  # NAs are missing; the dense fit of the same X from the same start is the
  # reference.
  set.seed(46)
  I <- 20000; J <- 25; K <- 3; L <- 2
  Xs <- Matrix::rsparsematrix(I, J, 0.06, rand.x = function(n) rexp(n) + 0.1)
  Xs[I, 3] <- 1.5
  Xs@x[c(4, 900, 5000)] <- NA
  X <- as.matrix(Xs)
  init <- list(F = matrix(runif(I * K), I, K), S = matrix(runif(K * L), K, L),
               G = matrix(runif(J * L), J, L))
  a <- bnmf(X, rank = c(K, L), method = "np", loss = "kl", iter = 5, tol = 0, init = init,
            progress = FALSE)
  b <- bnmf(Xs, rank = c(K, L), method = "np", loss = "kl", iter = 5, tol = 0, init = init,
            progress = FALSE)
  expect_equal(b$F, a$F, tolerance = 1e-10)
  expect_equal(b$S, a$S, tolerance = 1e-10)
  expect_equal(b$G, a$G, tolerance = 1e-10)
  expect_equal(b$trace$sse, a$trace$sse, tolerance = 1e-10)
})

test_that("the k-means start is Lloyd's algorithm (dense and sparse, ties and empty clusters)", {
  # Plain-R Lloyd iterations written for this test: squared distances in
  # full, the first nearest centre, centres the means of their rows (an
  # empty cluster keeps its centre), stop when no row moves.
  lloyd <- function(X, k, iter = 30L) {
    X <- as.matrix(X)
    n <- nrow(X)
    centres <- X[sample.int(n, k), , drop = FALSE]
    cl <- integer(n)
    for (it in seq_len(iter)) {
      d <- outer(seq_len(n), seq_len(k), function(i, c) rowSums((X[i, , drop = FALSE] -
                                                                   centres[c, , drop = FALSE])^2))
      new <- apply(d, 1L, which.min)
      if (identical(new, cl)) break
      cl <- new
      for (c in seq_len(k)) {
        if (any(cl == c)) centres[c, ] <- colMeans(X[cl == c, , drop = FALSE])
      }
    }
    cl
  }
  withr::local_seed(11)
  # three well-separated groups of rows, so that rounding cannot move a row
  # from one centre to the next, and the rows of each group in random order
  centre <- matrix(c(10, 0, 0, 0, 10, 0, 0, 0, 10, 5, 5, 5), 4, 3, byrow = TRUE)
  grp <- sample(rep(1:3, c(30, 25, 20)))
  X <- centre[grp, ] + matrix(stats::rexp(75 * 3, 2), 75, 3)
  X[sample(length(X), 40)] <- 0
  Xs <- Matrix::Matrix(X, sparse = TRUE)
  for (k in c(2L, 3L, 5L)) {
    for (seed in 1:3) {
      ref <- withr::with_seed(seed, lloyd(X, k))
      expect_identical(withr::with_seed(seed, bnmf:::kmeans_rows(X, k)), ref)
      expect_identical(withr::with_seed(seed, bnmf:::kmeans_rows(Xs, k)), ref)
      expect_identical(withr::with_seed(seed, bnmf:::kmeans_rows(X, k, iter = 1L)),
                       withr::with_seed(seed, lloyd(X, k, iter = 1L)))
    }
  }
  # Duplicate rows: two starts at the same point tie, the first takes the
  # rows and the second cluster stays empty.
  D <- rbind(matrix(1, 6, 3), matrix(2, 6, 3))
  cl <- withr::with_seed(1, bnmf:::kmeans_rows(D, 3L))
  expect_identical(cl, withr::with_seed(1, lloyd(D, 3L)))
  expect_lte(length(unique(cl)), 2L)
  expect_identical(bnmf:::kmeans_rows(D[1:2, ], 3L), 1:2)
})
