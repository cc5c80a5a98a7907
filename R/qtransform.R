# Initialisations of the candidate factorisations: Q-Transform (Masood &
# Doshi-Velez, Algorithms 2-4), random (the scikit-learn convention) and
# NNDSVD / NNDSVDar (Boutsidis & Gallopoulos 2008).

# The top r singular triplets of X with the sign convention of Bro, Acar and
# Kolda (2008). Their sign statistics use the data with the other components
# removed, Y = X - sum_{l != k} d_l u_l v_l'; for an SVD the projections
# reduce to u_k'Y = d_k v_k' and Y v_k = d_k u_k, so
#   s_left = sum_j sign(v_jk) (d_k v_jk)^2,  s_right = sum_i sign(u_ik) (d_k u_ik)^2;
# when they disagree the larger one in absolute value wins, and u_k, v_k are
# flipped together when the winner is negative (so u d v' is unchanged).
svd_top <- function(X, r) {
  s <- if (inherits(X, "dgCMatrix")) sparse_svd(X, r) else svd(X, nu = r, nv = r)
  svd_signs(list(u = s$u[, seq_len(r), drop = FALSE], d = s$d[seq_len(r)],
                 v = s$v[, seq_len(r), drop = FALSE]))
}

svd_signs <- function(sv) {
  u <- sv$u
  v <- sv$v
  d <- sv$d
  for (k in seq_along(d)) {
    sl <- sum(sign(v[, k]) * v[, k]^2)
    sr <- sum(sign(u[, k]) * u[, k]^2)
    flip <- if (sl * sr < 0) (if (abs(sl) >= abs(sr)) sl < 0 else sr < 0) else sl < 0 || sr < 0
    if (flip) {
      u[, k] <- -u[, k]
      v[, k] <- -v[, k]
    }
  }
  list(u = u, d = d, v = v)
}

# SVD factors split evenly: A_SVD = U D^(1/2) (I x r), W_SVD = D^(1/2) V' (r x J),
# so that transformation pairs are free of the scale of the data.
svd_factors <- function(sv) {
  sq <- sqrt(sv$d)
  list(A = sweep(sv$u, 2L, sq, "*"), W = t(sweep(sv$v, 2L, sq, "*")))
}

#' Q-Transform transformation pairs
#'
#' Learns the transformation pairs \eqn{(Q_A, Q_W)} of the Q-Transform
#' initialisation (Masood and Doshi-Velez, Algorithm 2): for each of
#' `n_data` small synthetic data sets `X_s = A W + noise` (`size` x `size`,
#' rank `rank`, unit exponential factors, each entry drawn from a normal
#' distribution around `(A W)_ij` with sd `noise * mean(A W)` truncated to
#' non-negative values by [rtnorm()]) and each of `restarts` random restarts,
#' it fits a rank-`rank` NMF by bnmf's coordinate-descent non-negative least
#' squares, balances its scale (every column of `A` and the matching row of
#' `W` get the same norm), and relates it to the top `rank` SVD factors of
#' `X_s` (with the sign convention of Bro, Acar and Kolda 2008, and the
#' singular values split evenly between the two sides) by least squares:
#' \eqn{Q_A = \arg\min_Q \|A - A_{SVD} Q\|_F},
#' \eqn{Q_W = \arg\min_Q \|W - Q W_{SVD}\|_F}.
#'
#' The package ships 100 pairs made by `data-raw/qtransform.R` with
#' `set.seed(20180319)` and the defaults below (20 data sets x 5 restarts,
#' as in the paper); `bnmf(init = "qtransform")` uses them. Pass `extend =`
#' those pairs (`qtransform_pairs_default()`) to add more, and give the result
#' as `init` to [bnmf()].
#'
#' @param n_data Number of synthetic data sets.
#' @param restarts Random restarts (pairs) per data set.
#' @param size Rows and columns of each synthetic data set.
#' @param rank Transfer rank (and SVD rank).
#' @param noise Noise sd relative to the mean of `A W`.
#' @param extend `NULL`, or pairs to which the new ones are appended.
#' @return An object of class `bnmf_qtransform`: a list with arrays `Q_A`
#'   (rank x rank x n) and `Q_W` (rank x rank x n) and the settings.
#' @seealso [bnmf()] (`method = "particles"`).
#' @examples
#' set.seed(1)
#' qp <- qtransform_pairs(n_data = 2, restarts = 2)
#' qp
#' more <- qtransform_pairs(n_data = 1, restarts = 2, extend = qp)
#' dim(more$Q_A)
#' @export
qtransform_pairs <- function(n_data = 20, restarts = 5, size = 12, rank = 3,
                             noise = 0.1, extend = NULL) {
  n_data <- check_count(n_data, "n_data", min = 1)
  restarts <- check_count(restarts, "restarts", min = 1)
  size <- check_count(size, "size", min = 2)
  rank <- check_count(rank, "rank", min = 1)
  if (rank > size) abort_input("`rank` must be at most `size`.")
  noise <- check_number(noise, "noise", 0)
  if (!is.null(extend)) {
    if (!inherits(extend, "bnmf_qtransform")) abort_input("`extend` must be made by `qtransform_pairs()`.")
    if (dim(extend$Q_A)[1L] != rank) abort_input(sprintf("`extend` has rank %d, not `rank` = %d.",
                                                         dim(extend$Q_A)[1L], rank))
  }
  n <- n_data * restarts
  QA <- array(0, c(rank, rank, n))
  QW <- array(0, c(rank, rank, n))
  idx <- 0L
  for (s in seq_len(n_data)) {
    A0 <- matrix(stats::rexp(size * rank), size, rank)
    W0 <- matrix(stats::rexp(rank * size), rank, size)
    AW <- A0 %*% W0
    Xs <- matrix(rtnorm(size * size, mean = as.vector(AW), sd = noise * mean(AW)), size, size)
    sf <- svd_factors(svd_top(Xs, rank))
    for (r in seq_len(restarts)) {
      st <- random_start(size, size, rank, mean(Xs))
      nmf <- solve_nnls_candidate(Xs, st$W, st$H, tol = 1e-10, maxit = 5000L)
      bal <- balance_scale(nmf$W, nmf$H)
      idx <- idx + 1L
      QA[, , idx] <- qr.solve(sf$A, bal$W)
      QW[, , idx] <- t(qr.solve(t(sf$W), t(bal$H)))
    }
  }
  if (!is.null(extend)) {
    n0 <- dim(extend$Q_A)[3L]
    QA2 <- array(0, c(rank, rank, n0 + n))
    QW2 <- array(0, c(rank, rank, n0 + n))
    QA2[, , seq_len(n0)] <- extend$Q_A
    QW2[, , seq_len(n0)] <- extend$Q_W
    QA2[, , n0 + seq_len(n)] <- QA
    QW2[, , n0 + seq_len(n)] <- QW
    QA <- QA2
    QW <- QW2
  }
  structure(list(Q_A = QA, Q_W = QW,
                 settings = list(n_data = n_data, restarts = restarts, size = size,
                                 rank = rank, noise = noise)),
            class = "bnmf_qtransform")
}

#' @export
print.bnmf_qtransform <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  d <- dim(x$Q_A)
  cat(sprintf("%d Q-Transform pairs of rank %d (synthetic %d x %d data)\n", d[3L], d[1L],
              x$settings$size, x$settings$size))
  invisible(x)
}

#' @rdname qtransform_pairs
#' @export
qtransform_pairs_default <- function() {
  if (is.null(qtransform_cache$pairs)) {
    path <- system.file("extdata", "qtransform-pairs.rds", package = "bnmf")
    if (!nzchar(path)) stop("bnmf internal error: the shipped Q-Transform pairs are missing.", call. = FALSE)
    qtransform_cache$pairs <- readRDS(path)
  }
  qtransform_cache$pairs
}

qtransform_cache <- new.env(parent = emptyenv())

# Column k of W and row k of H get the same norm (W H is unchanged).
balance_scale <- function(W, H) {
  nw <- sqrt(colSums(W^2))
  nh <- sqrt(rowSums(H^2))
  ok <- nw > 0 & nh > 0
  f <- rep(1, length(nw))
  f[ok] <- sqrt(nh[ok] / nw[ok])
  list(W = sweep(W, 2L, f, "*"), H = H / f)
}

# Random start, the scikit-learn convention: sqrt(mean(X) / R) |N(0, 1)|.
random_start <- function(I, J, R, mean_x) {
  s <- sqrt(max(mean_x, .Machine$double.eps) / R)
  list(W = matrix(abs(stats::rnorm(I * R)) * s, I, R),
       H = matrix(abs(stats::rnorm(R * J)) * s, R, J))
}

# Algorithms 3 and 4: transform the SVD factors, take absolute values, and
# pad with small random entries (R > R_T) or keep the first R factors.
qtransform_start <- function(sf, QA, QW, R, mean_x) {
  A <- abs(sf$A %*% QA)
  W <- abs(QW %*% sf$W)
  RT <- ncol(A)
  if (R > RT) {
    r <- R - RT
    s <- 0.01 * sqrt(max(mean_x, .Machine$double.eps) / R)
    A <- cbind(A, matrix(stats::runif(nrow(A) * r) * s, nrow(A), r))
    W <- rbind(W, matrix(stats::runif(r * ncol(W)) * s, r, ncol(W)))
  } else if (R < RT) {
    A <- A[, seq_len(R), drop = FALSE]
    W <- W[seq_len(R), , drop = FALSE]
  }
  list(W = A, H = W)
}

# NNDSVD of Boutsidis & Gallopoulos (2008): each singular pair beyond the
# first is replaced by the larger (in norm) of its positive and negative
# parts. "nndsvdar" fills the zeros with mean(X) U(0, 1) / 100.
nndsvd_start <- function(sv, R, mean_x, variant = c("nndsvd", "nndsvdar")) {
  variant <- match.arg(variant)
  I <- nrow(sv$u); J <- nrow(sv$v)
  W <- matrix(0, I, R)
  H <- matrix(0, R, J)
  for (k in seq_len(R)) {
    x <- sv$u[, k]
    y <- sv$v[, k]
    if (k == 1L) {
      W[, 1L] <- sqrt(sv$d[1L]) * abs(x)
      H[1L, ] <- sqrt(sv$d[1L]) * abs(y)
      next
    }
    xp <- pmax(x, 0); xn <- pmax(-x, 0)
    yp <- pmax(y, 0); yn <- pmax(-y, 0)
    nxp <- sqrt(sum(xp^2)); nyp <- sqrt(sum(yp^2))
    nxn <- sqrt(sum(xn^2)); nyn <- sqrt(sum(yn^2))
    mp <- nxp * nyp
    mn <- nxn * nyn
    if (mp > mn) {
      u <- if (nxp > 0) xp / nxp else xp; v <- if (nyp > 0) yp / nyp else yp; sig <- mp
    } else {
      u <- if (nxn > 0) xn / nxn else xn; v <- if (nyn > 0) yn / nyn else yn; sig <- mn
    }
    W[, k] <- sqrt(sv$d[k] * sig) * u
    H[k, ] <- sqrt(sv$d[k] * sig) * v
  }
  if (variant == "nndsvdar") {
    avg <- mean_x
    zw <- W == 0
    zh <- H == 0
    W[zw] <- avg * stats::runif(sum(zw)) / 100
    H[zh] <- avg * stats::runif(sum(zh)) / 100
  }
  list(W = W, H = H)
}

# M starting points of the given kind. The SVD (and the Q-Transform pairs)
# are computed once for all of them.
particle_starts <- function(X, R, M, init) {
  I <- nrow(X); J <- ncol(X)
  mean_x <- mean_entries(X)
  if (inherits(init, "bnmf_qtransform")) {
    pairs <- init
    init <- "qtransform"
  } else if (identical(init, "qtransform")) {
    pairs <- qtransform_pairs_default()
  }
  if (init == "random") {
    return(lapply(seq_len(M), function(m) {
      t0 <- proc.time()[[3L]]
      st <- random_start(I, J, R, mean_x)
      st$time <- proc.time()[[3L]] - t0
      st
    }))
  }
  t0 <- proc.time()[[3L]]
  r_svd <- if (init == "qtransform") dim(pairs$Q_A)[1L] else R
  if (r_svd > min(I, J)) {
    abort_input(sprintf("`init`: the Q-Transform pairs have rank %d, more than min(nrow(X), ncol(X)) = %d.",
                        r_svd, min(I, J)))
  }
  sv <- svd_top(X, r_svd)
  t_svd <- (proc.time()[[3L]] - t0) / M
  if (init == "qtransform") {
    sf <- svd_factors(sv)
    n <- dim(pairs$Q_A)[3L]
    if (M > n && R <= r_svd) {
      warning(sprintf("`particles` = %d is more than the %d Q-Transform pairs: pairs are reused, giving identical starts. Make more with `qtransform_pairs(extend = )`.",
                      M, n), call. = FALSE)
    }
    return(lapply(seq_len(M), function(m) {
      t0 <- proc.time()[[3L]]
      q <- (m - 1L) %% n + 1L
      st <- qtransform_start(sf, matrix(pairs$Q_A[, , q], r_svd, r_svd),
                            matrix(pairs$Q_W[, , q], r_svd, r_svd), R, mean_x)
      st$time <- proc.time()[[3L]] - t0 + t_svd
      st
    }))
  }
  if (init == "nndsvd" && M > 1L) {
    warning("`init = \"nndsvd\"` is deterministic: all candidates are the same factorisation; use \"nndsvdar\", \"qtransform\" or \"random\" for distinct ones.",
            call. = FALSE)
  }
  lapply(seq_len(M), function(m) {
    t0 <- proc.time()[[3L]]
    st <- nndsvd_start(sv, R, mean_x, init)
    st$time <- proc.time()[[3L]] - t0 + t_svd
    st
  })
}
