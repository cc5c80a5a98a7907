# Data and files of the fits by blocks of samples (test-blocks.R,
# test-blocks-gibbs.R, test-blocks-pois-gibbs.R): counts, Gaussian data, a
# 10x HDF5 file of the counts made once a session.

blocks_counts <- function(I = 30, J = 45, na = 20, sparse = FALSE) {
  set.seed(21)
  W <- matrix(rgamma(I * 3, 2, 1), I, 3)
  H <- matrix(rgamma(3 * J, 1, 1), 3, J)
  X <- matrix(rpois(I * J, W %*% H / 2), I, J,
              dimnames = list(paste0("g", seq_len(I)), paste0("c", seq_len(J))))
  if (na) X[sample(length(X), na)] <- NA
  if (sparse) X <- Matrix::Matrix(X, sparse = TRUE)
  X
}

blocks_gaussian <- function(I = 30, J = 45, sparse = FALSE) {
  set.seed(22)
  W <- matrix(rexp(I * 3), I, 3)
  H <- matrix(rexp(3 * J), 3, J)
  X <- W %*% H + matrix(rnorm(I * J, sd = 0.2), I, J)
  dimnames(X) <- list(paste0("g", seq_len(I)), paste0("c", seq_len(J)))
  if (sparse) {
    X[X < 1] <- 0
    X <- Matrix::Matrix(X, sparse = TRUE)
  }
  X
}

# A 10x HDF5 file (group with data, indices, indptr, shape) of the counts
# of X, written with rhdf5; the TENxMatrix that reads it.
write_tenx <- function(X, dir) {
  S <- methods::as(unname(X), "CsparseMatrix")
  f <- file.path(dir, "tenx.h5")
  rhdf5::h5createFile(f)
  rhdf5::h5createGroup(f, "counts")
  rhdf5::h5write(as.integer(S@x), f, "counts/data")
  rhdf5::h5write(S@i, f, "counts/indices")
  rhdf5::h5write(S@p, f, "counts/indptr")
  rhdf5::h5write(dim(S), f, "counts/shape")
  HDF5Array::TENxMatrix(f, "counts")
}

# The TENxMatrix of blocks_counts(na = 0), made once: with rhdf5 2.42,
# HDF5Array 1.26's TENxMatrix() fails after its first call in a session (its
# check that the group is not a dataset gets no error from rhdf5 the second
# time).
tenx_cache <- new.env()
tenx_counts <- function() {
  if (is.null(tenx_cache$T)) {
    dir <- tempfile("bnmf-tenx-")
    dir.create(dir)
    tenx_cache$T <- write_tenx(blocks_counts(na = 0), dir)
  }
  tenx_cache$T
}

skip_if_no_hdf5 <- function() {
  skip_if_not_installed("rhdf5")
  skip_if_not_installed("HDF5Array")
}
