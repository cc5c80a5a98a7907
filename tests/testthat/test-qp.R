# The simplex QP min w'Kw, w >= 0, sum(w) = 1: KKT conditions, exact answers
# and quadprog's answers.

kkt_residual <- function(K, w) {
  g <- drop(K %*% w) / max(abs(diag(K)))
  lam <- sum(w * g)
  max(abs(sum(w) - 1), pmax(-w, 0),
      abs(g[w > 0] - lam), pmax(lam - g[w == 0], 0))
}

random_psd <- function(M, rank = M, shift = 0) {
  A <- matrix(rnorm(M * rank), M, rank)
  K <- tcrossprod(A) + shift * diag(M)
  (K + t(K)) / 2
}

test_that("a diagonal K gives weights proportional to 1 / K_mm", {
  d <- c(2, 5, 0.5, 8, 1)
  out <- bnmf:::simplex_weights(diag(d))
  expect_equal(out$weights, (1 / d) / sum(1 / d), tolerance = 1e-14)
  expect_identical(out$status, 0L)
})

test_that("the weights satisfy the KKT conditions and equal quadprog's", {
  skip_if_not_installed("quadprog")
  withr::local_seed(21)
  for (M in c(3, 10, 25, 60)) {
    for (rep in 1:3) {
      K <- random_psd(M, rank = M + 2, shift = 0.01)
      # Correlated particles: a common component makes many weights zero.
      v <- rnorm(M, 2)
      K <- K + tcrossprod(v) + diag(runif(M, 0, 2))
      out <- bnmf:::simplex_weights(K)
      w <- out$weights
      expect_identical(out$status, 0L)
      expect_lt(out$kkt, 1e-10)
      expect_lt(kkt_residual(K, w), 1e-10)
      qp <- quadprog::solve.QP(Dmat = 2 * K, dvec = rep(0, M),
                               Amat = cbind(rep(1, M), diag(M)), bvec = c(1, rep(0, M)),
                               meq = 1)
      expect_equal(w, pmax(qp$solution, 0), tolerance = 1e-7)
      expect_equal(drop(w %*% K %*% w), qp$value, tolerance = 1e-10)
    }
  }
})

test_that("sparse optima (many zero weights) are found exactly", {
  skip_if_not_installed("quadprog")
  withr::local_seed(22)
  M <- 30
  # Points in the plane: w'Kw is the squared norm of the weighted mean of
  # points; the optimum is the nearest point of their convex hull to 0.
  P <- cbind(rnorm(M, 3), rnorm(M, 1))
  K <- tcrossprod(P) + 1e-6 * diag(M)
  out <- bnmf:::simplex_weights(K)
  expect_lt(out$kkt, 1e-10)
  expect_lt(sum(out$weights > 0), 4)
  qp <- quadprog::solve.QP(2 * K, rep(0, M), cbind(rep(1, M), diag(M)), c(1, rep(0, M)), meq = 1)
  expect_equal(out$weights, pmax(qp$solution, 0), tolerance = 1e-7)
  # quadprog's reported value comes from its slightly infeasible solution
  # (negative entries of order 1e-9 here); projected onto the simplex, its
  # objective is not below the active-set answer.
  wq <- pmax(qp$solution, 0) / sum(pmax(qp$solution, 0))
  ours <- drop(out$weights %*% K %*% out$weights)
  expect_equal(ours, qp$value, tolerance = 1e-7)
  expect_lte(ours, drop(wq %*% K %*% wq) + 1e-14)
})

test_that("singular K (duplicated particles) still gives a KKT point", {
  withr::local_seed(23)
  M <- 8
  K <- random_psd(M, rank = 3)
  dup <- c(1:M, 1, 2, 2)
  Kd <- K[dup, dup]
  out <- bnmf:::simplex_weights(Kd)
  expect_lt(kkt_residual(Kd, out$weights), 1e-9)
  expect_equal(sum(out$weights), 1)
  # Duplicates change nothing: w'Kw is the squared distance to 0 of a point
  # of the convex hull of the 8 distinct points (K = A A', A of rank 3). By
  # brute force over the faces spanned by at most 4 of them: the minimum of
  # w'Kw on each one's affine hull ([K_SS 1; 1' 0] [w; -lam] = [0; 1]),
  # counted when it lies in the face; the smallest is the optimum. Here 0 is
  # inside the hull (optimum 0); points around (1, 1, 1) leave it outside.
  hull_min <- function(K) {
    best <- Inf
    for (k in 1:4) for (S in combn(nrow(K), k, simplify = FALSE)) {
      A <- rbind(cbind(K[S, S, drop = FALSE], 1), c(rep(1, k), 0))
      x <- tryCatch(solve(A, c(rep(0, k), 1)), error = function(e) NULL)
      if (!is.null(x) && all(x[1:k] >= -1e-12)) {
        best <- min(best, drop(x[1:k] %*% K[S, S, drop = FALSE] %*% x[1:k]))
      }
    }
    best
  }
  expect_equal(drop(out$weights %*% Kd %*% out$weights), hull_min(K), tolerance = 1e-9)
  K2 <- tcrossprod(matrix(rnorm(M * 3, 1), M, 3))
  out2 <- bnmf:::simplex_weights(K2[dup, dup])
  expect_equal(drop(out2$weights %*% K2[dup, dup] %*% out2$weights), hull_min(K2),
               tolerance = 1e-9)
  # A matrix of equal entries: every point of the simplex is optimal.
  out1 <- bnmf:::simplex_weights(matrix(3, 4, 4))
  expect_equal(drop(out1$weights %*% matrix(3, 4, 4) %*% out1$weights), 3)
})
