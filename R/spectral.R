# The spectral start of a count fit (`init = "spectral"`): the samples
# clustered in the leading singular subspace of their normalised counts, the
# basis W the clusters' gene profiles, H each sample's total on its cluster.
#
# With y_ij = sqrt(x_ij / n_j) (n_j = sample j's total, at least 1; a
# missing count as 0), the leading r = min(K + 10, I, J) left singular
# vectors of Y are found by a randomised range finder run from the gene
# side, Q <- orth(Y Y' Q) twice from a Gaussian I x r matrix (Halko,
# Martinsson and Tropp 2011), so that every product is a sum over blocks of
# samples of Y_b (Y_b' Q) and only I x r and r x r matrices are formed
# besides the samples' embedding. Each sample's embedding is row j of
# Y' Q U (U the eigenvectors of Q' Y Y' Q, its leading K), scaled to unit
# length (the samples' mixtures matter, not their depth); k-means with K
# centres (5 starts; on 50,000 samples drawn at random when there are more,
# the others then given their nearest centre). W[, k] is the gene profile
# of cluster k (its counts summed, scaled to sum 1, plus 1e-3 / I), and
# H[k, j] = n_j when sample j is in cluster k, plus 0.1 mean(n) / K
# everywhere, so that W H is on the scale of the counts.
#
# `map(fun, args)` applies fun(X_b, args, cols_b) to every block of samples
# (X_b as read: a dgCMatrix or a matrix; cols_b its first and last column)
# and returns the results in block order: the same start for the counts in
# memory, in a file or on a cluster, for a given partition. The random
# numbers (the Gaussian matrix, the sample, k-means' starts) are the
# chain's. Where the samples cannot give K clusters (fewer distinct
# embeddings than K + 1) the start is the random one.

spectral_start <- function(map, I, J, K) {
  r <- as.integer(min(K + 10L, I, J))
  ortho <- function(Y) qr.Q(qr(Y))
  Q <- ortho(matrix(stats::rnorm(as.double(I) * r), I, r))
  for (pass in 1:2) {
    Q <- ortho(Reduce(`+`, map(spectral_block_power, list(Q = Q))))
  }
  parts <- map(spectral_block_embed, list(Q = Q))
  n <- unlist(lapply(parts, `[[`, "n"), use.names = FALSE)
  e <- eigen(Reduce(`+`, lapply(parts, function(p) crossprod(p$T))), symmetric = TRUE)
  U <- e$vectors[, seq_len(min(K, r)), drop = FALSE]
  # the blocks' embeddings, each block's T_b dropped as its rows are made
  # (at a million samples T is 240 MB)
  for (b in seq_along(parts)) {
    Eb <- parts[[b]]$T %*% U
    len <- sqrt(rowSums(Eb * Eb))
    parts[[b]] <- Eb / ifelse(len > 0, len, 1)
  }
  E <- do.call(rbind, parts)
  parts <- NULL
  cl <- spectral_clusters(E, K)
  if (is.null(cl)) return(NULL)
  Wsum <- Reduce(`+`, map(spectral_block_w, list(cl = cl, K = K)))
  W <- sweep(Wsum, 2L, pmax(colSums(Wsum), .Machine$double.xmin), "/") + 1e-3 / I
  H <- matrix(0.1 * mean(n) / K, K, J)
  H[cbind(cl, seq_len(J))] <- H[cbind(cl, seq_len(J))] + n
  list(W = W, H = H)
}

# K clusters of the rows of E (unit length) by k-means, or NULL when the
# rows cannot give them.
spectral_clusters <- function(E, K, sample_max = 50000L) {
  J <- nrow(E)
  if (!all(is.finite(E))) return(NULL)
  idx <- if (J > sample_max) sort(sample.int(J, sample_max)) else seq_len(J)
  Es <- E[idx, , drop = FALSE]
  if (nrow(unique(Es)) <= K) return(NULL)
  km <- tryCatch(suppressWarnings(stats::kmeans(Es, K, nstart = 5L, iter.max = 50L)),
                 error = function(e) NULL)
  if (is.null(km)) return(NULL)
  C <- km$centers
  c2 <- rowSums(C * C)
  # the nearest centre of every sample: largest 2 e'c - |c|^2 (by chunks
  # of rows: no J x K temporaries)
  cl <- integer(J)
  for (s in seq(1L, J, by = 65536L)) {
    i <- s:min(J, s + 65535L)
    cl[i] <- max.col(2 * E[i, , drop = FALSE] %*% t(C) - rep(c2, each = length(i)),
                     ties.method = "first")
  }
  cl
}

# A block's normalised square roots sqrt(x_ij / n_j) (missing as 0) and its
# sample totals n_j.
spectral_block_y <- function(Xb) {
  if (inherits(Xb, "dgCMatrix")) {
    x <- Xb@x
    x[is.na(x)] <- 0
    Xb@x <- x
    n <- Matrix::colSums(Xb)
    Xb@x <- sqrt(x / rep.int(pmax(n, 1), diff(Xb@p)))
  } else {
    Xb[is.na(Xb)] <- 0
    n <- colSums(Xb)
    Xb <- sqrt(Xb / rep(pmax(n, 1), each = nrow(Xb)))
  }
  list(Y = Xb, n = n)
}

# Y_b (Y_b' Q), I x r: a block's part of Y Y' Q.
spectral_block_power <- function(Xb, args, cols) {
  Y <- spectral_block_y(Xb)$Y
  as.matrix(Y %*% as.matrix(Matrix::crossprod(Y, args$Q)))
}

# T_b = Y_b' Q (J_b x r) and the block's sample totals.
spectral_block_embed <- function(Xb, args, cols) {
  y <- spectral_block_y(Xb)
  list(T = as.matrix(Matrix::crossprod(y$Y, args$Q)), n = y$n)
}

# The block's counts summed by cluster: X_b Z_b', I x K (missing as 0).
spectral_block_w <- function(Xb, args, cols) {
  cl <- args$cl[cols[1L]:cols[2L]]
  Z <- matrix(0, length(cl), args$K)
  Z[cbind(seq_along(cl), cl)] <- 1
  if (inherits(Xb, "dgCMatrix")) {
    Xb@x[is.na(Xb@x)] <- 0
  } else Xb[is.na(Xb)] <- 0
  as.matrix(Xb %*% Z)
}
