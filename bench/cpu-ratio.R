# CPU time of VB and ICM sweeps over the BLAS floor, on a shared machine.
#
#   R_LIBS=LIB Rscript bench/cpu-ratio.R            (any BLAS; bench/openblas.sh for OpenBLAS)
#
# bench-sweep.R's problem (I = J = 1000, K = 20, dense, and 20% missing), but
# timed in CPU time of this process (user + system, proc.time()) instead of
# elapsed time, so that time slices given to other processes on a loaded
# machine do not count. The clock ticks in 1-10 ms, so each measurement is 8
# sweeps against 8 floors (X %*% t(H) + t(W) %*% X), 4 alternations per
# round; the ratio per round is (CPU per sweep) / (CPU per floor), reported
# as median (min-max) over BNMF_BENCH_ROUNDS rounds (default 5).
suppressPackageStartupMessages(library(bnmf))
rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "5"))
set.seed(20240601)
I <- 1000L; J <- 1000L; K <- 20L
W0 <- matrix(rexp(I * K), I, K); H0 <- matrix(rexp(K * J), K, J)
X <- W0 %*% H0 + matrix(rnorm(I * J), I, J)
Xm <- X
Xm[sample(length(X), round(0.2 * length(X)))] <- NA
source(file.path("bench", "chain-setup.R"))
make_chain <- function(X, method) {
  ch <- bench_chain(X, K, method, masked = TRUE)
  run <- function(n) invisible(bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = method,
                                                    masked = TRUE, accumulate = FALSE))
  run(3L)
  run
}
cpu <- function(expr) {
  t0 <- proc.time()
  force(expr)
  t <- proc.time() - t0
  t[["user.self"]] + t[["sys.self"]]
}
Wf <- matrix(rexp(I * K), I, K); Hf <- matrix(rexp(K * J), K, J)
floor_once <- function() cpu({a <- X %*% t(Hf); b <- t(Wf) %*% X})
chains <- list("VB, complete data" = make_chain(X, "vb"),
               "VB, 20% missing" = make_chain(Xm, "vb"),
               "ICM, 20% missing" = make_chain(Xm, "icm"))
cat("BLAS: ", extSoftVersion()[["BLAS"]], "\n", sep = "")
for (nm in names(chains)) {
  r <- numeric(rounds)
  for (i in seq_len(rounds)) {
    f <- s <- 0
    for (a in 1:4) {
      for (q in 1:8) f <- f + floor_once()
      s <- s + cpu(chains[[nm]](8L))
    }
    r[i] <- s / f
  }
  cat(sprintf("%s: CPU ratio to the floor %.2f (%.2f-%.2f)\n", nm, median(r), min(r), max(r)))
}
