# The variational posterior q of Gaussian VB fits (NMF, NMTF): its truncated
# normals' parameters recovered from the fit's means and variances, and the
# interpretation (membership(), markers(), consensus_matrix()) over draws
# from it.

# z-scores of the draws' means and variances against the given ones, entry
# by entry: `x` is entries x draws; the standard error of the sample
# variance is estimated from the draws (sd of the squared deviations).
moment_z <- function(x, mean, var) {
  N <- ncol(x)
  xbar <- rowMeans(x)
  dev2 <- (x - xbar)^2
  s2 <- rowSums(dev2) / (N - 1)
  list(mean = (xbar - mean) / sqrt(var / N),
       var = (s2 - var) / (apply(dev2, 1L, stats::sd) / sqrt(N)))
}

# Data in two clear clusters of samples (A: 1..8, B: 9..16) and, with
# `mid`, a sample halfway between them (17); the factors' zeros make many
# entries of q truncated normals with most of their mass cut off.
two_cluster_data <- function(mid = FALSE, sd = 0.3) {
  W <- cbind(c(rep(3, 10), rep(0, 10)), c(rep(0, 10), rep(3, 10)))
  H <- cbind(matrix(c(2, 0), 2, 8), matrix(c(0, 2), 2, 8))
  if (mid) H <- cbind(H, c(1, 1))
  X <- pmax(W %*% H + matrix(stats::rnorm(20 * ncol(H), sd = sd), 20), 0)
  dimnames(X) <- list(paste0("g", 1:20), paste0("s", seq_len(ncol(H))))
  X
}

test_that("tn_params() inverts the moments of the truncated normal, from the normal to the exponential", {
  a <- c(-40, -8.3, -8, -7.9, -3, -1, 0, 0.5, 1, 2.9, 3, 3.1, 10, 100, 1e3, 1e4, 1e5)
  for (sc in c(1e-100, 1e-3, 1, 1e5, 1e100)) {
    mo <- bnmf:::tn_moments(-a * sc, sc)
    p <- bnmf:::tn_params(mo$mean, mo$var)
    back <- bnmf:::tn_moments(p$mu, p$sigma)
    expect_equal(back$mean, mo$mean, tolerance = 1e-12)
    expect_equal(back$var, mo$var, tolerance = 1e-12)
    # the parameters themselves where the moments determine them well
    moderate <- a > -8 & a < 100
    expect_equal(-p$mu[moderate] / p$sigma[moderate], a[moderate], tolerance = 1e-9)
    expect_equal(p$sigma[moderate], rep(sc, sum(moderate)), tolerance = 1e-9)
  }
  # the exponential limit (var = mean^2: an entry whose q is its prior), a
  # point (var = 0) and zero
  p <- bnmf:::tn_params(c(2, 1, 0), c(4, 0, 0))
  back <- bnmf:::tn_moments(p$mu[1], p$sigma[1])
  expect_equal(c(back$mean, back$var), c(2, 4), tolerance = 1e-9)
  expect_identical(p$mu[2:3], c(1, 0))
  expect_identical(p$sigma[2:3], c(0, 0))
  # matrices keep their shape and names
  M <- matrix(1:4, 2, dimnames = list(c("a", "b"), c("x", "y")))
  p <- bnmf:::tn_params(M, M / 2)
  expect_identical(dimnames(p$mu), dimnames(M))
  expect_identical(dim(p$sigma), dim(M))
})

test_that("draws from the q of a Gaussian NMF VB fit have its means and variances", {
  withr::local_seed(21)
  X <- two_cluster_data()
  fit <- bnmf(X, rank = 2, method = "vb")
  expect_named(fit$q_W, c("mu", "sigma"))
  expect_identical(dimnames(fit$q_W$mu), dimnames(fit$W))
  expect_identical(dimnames(fit$q_H$sigma), dimnames(fit$H))
  # many entries are far from normal (near the bound, where q is a
  # truncated normal with most of its mass cut off)
  cv2 <- c(fit$W_sd^2 / fit$W^2, fit$H_sd^2 / fit$H^2)
  expect_gt(sum(cv2 > 0.5), 10)
  N <- 4000
  d <- bnmf:::vb_q_draws(fit, N)
  Wd <- vapply(d, function(f) as.vector(f$factors$W), numeric(length(fit$W)))
  Hd <- vapply(d, function(f) as.vector(f$factors$H), numeric(length(fit$H)))
  expect_true(all(Wd >= 0) && all(Hd >= 0))
  zW <- moment_z(Wd, as.vector(fit$W), as.vector(fit$W_sd)^2)
  zH <- moment_z(Hd, as.vector(fit$H), as.vector(fit$H_sd)^2)
  # 76 entries, two moments each: |z| below 4.5 (a correct q exceeds it with
  # probability about 0.001)
  expect_lt(max(abs(c(zW$mean, zH$mean))), 4.5)
  expect_lt(max(abs(c(zW$var, zH$var))), 4.5)
  # the check has power: a normal with the q's mean and sd, truncated, is
  # far off near the bound
  naive <- matrix(rtnorm(length(fit$H) * N, mean = as.vector(fit$H),
                         sd = as.vector(fit$H_sd)), length(fit$H))
  zn <- moment_z(naive, as.vector(fit$H), as.vector(fit$H_sd)^2)
  expect_gt(max(abs(zn$mean)), 10)
  # the draws of W H are the factorisations posterior_factorisations() uses
  pf <- bnmf:::posterior_factorisations(fit)
  expect_identical(pf$source, "q")
  expect_length(pf$fs, 100L)
  expect_equal(sum(pf$weights), 1)
})

test_that("draws from the q of an NMTF VB fit have its means and variances (F, S, G)", {
  withr::local_seed(22)
  X <- two_cluster_data()
  fit <- suppressWarnings(bnmf(X, rank = c(2, 2), method = "vb", iter = 300))
  for (nm in c("F", "S", "G")) {
    expect_identical(dim(fit[[paste0("q_", nm)]]$mu), dim(fit[[nm]]))
  }
  N <- 4000
  d <- bnmf:::vb_q_draws(fit, N)
  z <- lapply(c("F", "S", "G"), function(nm) {
    D <- vapply(d, function(f) as.vector(f$factors[[nm]]), numeric(length(fit[[nm]])))
    moment_z(D, as.vector(fit[[nm]]), as.vector(fit[[paste0(nm, "_sd")]])^2)
  })
  expect_lt(max(abs(unlist(lapply(z, `[[`, "mean")))), 4.5)
  expect_lt(max(abs(unlist(lapply(z, `[[`, "var")))), 4.5)
  # each factorisation is W = F, H = S t(G)
  f1 <- d[[1]]
  expect_equal(f1$W, f1$factors$F)
  expect_equal(f1$H, f1$factors$S %*% t(f1$factors$G))
})

test_that("membership() of a VB fit: near 1 for clear clusters, below 1 midway between them", {
  withr::local_seed(23)
  X <- two_cluster_data(mid = TRUE)
  for (rank in list(2, c(2, 2))) {
    fit <- suppressWarnings(bnmf(X, rank = rank, method = "vb", iter = 500))
    m <- membership(fit)
    expect_identical(attr(m, "n"), 100L)
    expect_identical(attr(m, "source"), "q")
    expect_identical(length(unique(m$cluster[1:8])), 1L)
    expect_identical(length(unique(m$cluster[9:16])), 1L)
    expect_false(m$cluster[1] == m$cluster[9])
    expect_true(all(m$probability[1:16] > 0.97), info = paste(rank, collapse = ","))
    # the sample between the clusters: its dominant factor is uncertain under q
    expect_lt(m$probability[17], 0.9)
    # probabilities are shares of the 100 draws
    expect_equal(m$probability * 100, round(m$probability * 100))
    C <- consensus_matrix(fit)
    expect_identical(attr(C, "source"), "q")
    expect_identical(attr(C, "n"), 100L)
    expect_true(all(C[1:8, 1:8] > 0.97) && all(C[1:8, 9:16] < 0.03))
    expect_true(C[17, 1] < 0.9 && C[17, 9] < 0.9)
    # NMF: summary() prints the probabilities (taken over 100 draws) and
    # the uncertain sample (NMTF's summary gives its row and column clusters)
    if (length(rank) == 1L) {
      out <- capture.output(print(summary(fit)))
      expect_true(any(grepl("Samples by cluster \\(dominant factor\\): .*mean probability", out)))
      expect_true(any(grepl("1 sample with a posterior cluster probability below 0.9", out)))
    }
  }
})

test_that("the draws use the session's random numbers and a fit without q's fields gives the same", {
  withr::local_seed(24)
  X <- two_cluster_data(mid = TRUE)
  fit <- bnmf(X, rank = 2, method = "vb")
  set.seed(5)
  m1 <- membership(fit)
  k1 <- markers(fit, n = 4)
  set.seed(5)
  m2 <- membership(fit)
  expect_identical(m1, m2)
  # a fit saved before q's parameters were kept: the validator accepts it,
  # and q comes from the kept restart's means and variances
  old <- fit
  old$q_W <- NULL
  old$q_H <- NULL
  expect_silent(bnmf:::validate_bnmf_fit(old))
  set.seed(5)
  expect_identical(membership(old), m1)
  expect_identical(markers(old, n = 4), k1)
  expect_true(all(k1$prob_top >= 0 & k1$prob_top <= 1))
  # a q of the wrong size is refused
  bad <- fit
  bad$q_H$sigma <- bad$q_H$sigma[, 1:3]
  expect_error(bnmf:::validate_bnmf_fit(bad), "q_H")
  bad <- fit
  bad$q_W$sigma[1] <- -1
  expect_error(bnmf:::validate_bnmf_fit(bad), "q_W")
  # the same for NMTF
  nt <- suppressWarnings(bnmf(X, rank = c(2, 2), method = "vb", iter = 100))
  old <- nt
  old[c("q_F", "q_S", "q_G")] <- NULL
  expect_silent(bnmf:::validate_bnmf_nmtf_fit(old))
  set.seed(6)
  a <- consensus_matrix(nt)
  set.seed(6)
  expect_identical(consensus_matrix(old), a)
  # the diversity measures compare its restarts (one here), not draws from q
  expect_length(bnmf:::as_factorisation_set(nt, "fit"), length(nt$chains))
  bad <- nt
  bad$q_S$mu <- bad$q_S$mu[1, , drop = FALSE]
  expect_error(bnmf:::validate_bnmf_nmtf_fit(bad), "q_S")
})

test_that("update() keeps q's parameters those of the continued fit", {
  withr::local_seed(25)
  X <- two_cluster_data()
  fit <- suppressWarnings(bnmf(X, rank = 2, method = "vb", iter = 5, tol = 0))
  up <- suppressWarnings(update(fit, iter = 50))
  b <- up$chains[[up$best]]
  expect_equal(up$q_W, bnmf:::q_factor(b$W, b$W_var, dim(up$W), dimnames(up$W)))
  expect_equal(up$q_H, bnmf:::q_factor(b$H, b$H_var, dim(up$H), dimnames(up$H)))
  expect_false(isTRUE(all.equal(up$q_W, fit$q_W)))
  # and its q's moments are the continued fit's
  back <- bnmf:::tn_moments(as.vector(up$q_W$mu), as.vector(up$q_W$sigma))
  expect_equal(back$mean, as.vector(up$W), tolerance = 1e-10)
  expect_equal(sqrt(back$var), as.vector(up$W_sd), tolerance = 1e-10)
  nt <- suppressWarnings(bnmf(X, rank = c(2, 2), method = "vb", iter = 5, tol = 0))
  un <- suppressWarnings(update(nt, iter = 50))
  st <- un$chains[[un$best]]$state
  expect_equal(un$q_S, bnmf:::q_factor(st$S, st$S_var, dim(un$S), dimnames(un$S)))
  back <- bnmf:::tn_moments(as.vector(un$q_G$mu), pmax(as.vector(un$q_G$sigma), 1e-300))
  expect_equal(back$mean, as.vector(un$G), tolerance = 1e-10)
})
