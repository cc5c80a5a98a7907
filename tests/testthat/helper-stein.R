# Plain-R Stein kernel, written for the tests.

# Plain R: K_p(x, y) for one pair, blocks given as lists of vectors.
stein_pair_plain <- function(x, y, sx, sy, par) {
  kval <- 0
  grad_x <- grad_y <- list()
  tr <- 0
  for (b in seq_along(x)) {
    cc <- par[[b]][1]; bb <- par[[b]][2]; aa <- par[[b]][3]
    r <- x[[b]] - y[[b]]
    u <- cc^2 + sum(r^2)
    kval <- kval + aa * u^bb
    grad_x[[b]] <- aa * bb * u^(bb - 1) * 2 * r
    grad_y[[b]] <- -grad_x[[b]]
    # d^2 k / dx dy' = -2ab [u^(b-1) I + 2 (b-1) u^(b-2) r r']
    Hxy <- -2 * aa * bb * (u^(bb - 1) * diag(length(r)) + 2 * (bb - 1) * u^(bb - 2) * tcrossprod(r))
    tr <- tr + sum(diag(Hxy))
  }
  sum(unlist(sx) * unlist(sy)) * kval + sum(unlist(sy) * unlist(grad_x)) +
    sum(unlist(sx) * unlist(grad_y)) + tr
}

stein_matrix_plain <- function(theta, score, par) {
  M <- ncol(theta[[1]])
  K <- matrix(0, M, M)
  for (m in 1:M) for (n in 1:M) {
    K[m, n] <- stein_pair_plain(lapply(theta, function(t) t[, m]), lapply(theta, function(t) t[, n]),
                                lapply(score, function(s) s[, m]), lapply(score, function(s) s[, n]),
                                par)
  }
  K
}

