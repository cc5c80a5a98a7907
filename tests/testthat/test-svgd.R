# SVGD and DSGD: the closed-form gradient of the kernel Stein discrepancy
# against finite differences, SVGD on targets with a known score, and the
# fits of methods "svgd" and "dsgd".

# w'Kw of NMF particles on the particle model, scores recomputed.
ksd_nmf <- function(parts, sd, lik, kernel, w) {
  sc <- bnmf:::svgd_scores(parts, sd, lik, 1)
  K <- bnmf:::particle_kernel_matrix(parts, lapply(sc, `[[`, "score"), kernel)
  drop(crossprod(w, K %*% w))
}

test_that("the closed-form gradient of w'Kw equals finite differences (DSGD)", {
  withr::local_seed(21)
  I <- 4; J <- 3; R <- 2; M <- 3
  X <- matrix(rexp(I * J) + 0.2, I, J)
  kernel <- bnmf:::stein_kernel_par(c_W = 0.7, c_H = 1.5)
  w <- c(0.2, 0.3, 0.5)
  for (miss in c(FALSE, TRUE)) {
    Xd <- X
    if (miss) Xd[c(2, 9)] <- NA
    sd <- bnmf:::silf_data(Xd)
    parts <- lapply(1:M, function(m) bnmf:::to_simplex(matrix(rexp(I * R), I, R),
                                                       matrix(rexp(R * J), R, J)))
    f <- vapply(parts, function(p) objective_plain(Xd, p$W, p$H, "frobenius"), 1)
    # epsilon puts the objectives in the quadratic transition of the SILF
    lik <- silf(epsilon = max(f) / 1.5, beta = 0.9, C = 2)
    expect_true(all(f > 0.1 * max(f) / 1.5 & f < 1.9 * max(f) / 1.5))
    sc <- bnmf:::svgd_scores(parts, sd, lik, 1)
    grad <- bnmf:::dsgd_gradient(parts, sc, sd, lik, kernel, w)
    h <- 1e-5
    for (m in 1:M) for (blk in c("W", "H")) {
      A <- parts[[m]][[blk]]
      num <- A * 0
      for (i in seq_along(A)) {
        pp <- parts; pp[[m]][[blk]][i] <- A[i] + h
        pm <- parts; pm[[m]][[blk]][i] <- A[i] - h
        num[i] <- (ksd_nmf(pp, sd, lik, kernel, w) - ksd_nmf(pm, sd, lik, kernel, w)) / (2 * h)
      }
      expect_equal(grad[[m]][[blk]], num, tolerance = 1e-6)
    }
  }
})

test_that("the SVGD and DSGD terms of a Gaussian target equal plain R", {
  withr::local_seed(22)
  d <- 3; M <- 5
  theta <- matrix(rnorm(d * M), d, M)
  score <- -theta                       # N(0, I): Hessian -I
  par <- c(1.3, -0.5, 0.8)
  w <- rep(1 / M, M)
  out <- .Call(bnmf:::C_stein_directions, list(theta), list(score), par, w, TRUE)
  k <- function(x, y) par[3] * (par[1]^2 + sum((x - y)^2))^par[2]
  gk <- function(x, y) 2 * par[3] * par[2] * (par[1]^2 + sum((x - y)^2))^(par[2] - 1) * (x - y)
  v <- sapply(1:M, function(m) rowSums(sapply(1:M, function(n) {
    w[n] * (k(theta[, n], theta[, m]) * score[, n] + gk(theta[, n], theta[, m]))
  })))
  expect_equal(out[[1]][[1]], v, tolerance = 1e-12)
  # gradient of w'Kw for the Gaussian target, by finite differences
  ksd_gauss <- function(th) {
    drop(crossprod(w, bnmf:::stein_kernel(list(th), list(-th), list(par)) %*% w))
  }
  grad <- sapply(1:M, function(m) 2 * w[m] * (-out[[1]][[1]][, m] + out[[2]][[1]][, m]))
  h <- 1e-5
  num <- theta * 0
  for (i in seq_along(theta)) {
    tp <- theta; tp[i] <- tp[i] + h
    tm <- theta; tm[i] <- tm[i] - h
    num[i] <- (ksd_gauss(tp) - ksd_gauss(tm)) / (2 * h)
  }
  expect_equal(grad, num, tolerance = 1e-6)
})
