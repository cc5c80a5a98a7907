# One 2-worker socket cluster for the whole test run, started on first use
# and stopped when the run ends: each start, and each worker's loading of
# bnmf (and of HDF5Array to read a file), costs seconds. A fit by blocks
# leaves nothing on the workers (the tests check it), so later tests see
# the workers as new. A test that breaks a worker makes its own cluster.
# TCP_NODELAY on the master's sockets ("no-delay"): without it, a message
# that serialize() writes in more than one piece waits for the worker's
# delayed acknowledgement (about 40 ms) before its last piece goes out, in
# every call of every sweep.
test_cluster_env <- new.env(parent = emptyenv())

test_cluster <- function() {
  cl <- test_cluster_env$cl
  alive <- !is.null(cl) && isTRUE(tryCatch(
    all(unlist(parallel::clusterCall(cl, function() TRUE))), error = function(e) FALSE))
  if (alive) return(cl)
  cl <- withr::with_options(list(socketOptions = "no-delay"), parallel::makePSOCKcluster(2))
  test_cluster_env$cl <- cl
  withr::defer(try(parallel::stopCluster(cl), silent = TRUE), envir = testthat::teardown_env())
  cl
}
