## bench/pois-vb-sweep.R: one Poisson VB sweep alone, elapsed seconds, in a
## process of its own, for A/B runs of two builds alternating (by threads
## too). The sweeps of one .Call of 20 sweeps less one of 2, from a fixed
## random start (W, H Gamma(1, 1), the prior Gamma(1, 1)), as the chains
## make them (the counts' row layout given when the build has it); the
## median of 3. Counts: bench/sim-counts.R's simulate_counts(I, J, 20,
## density), cached in $BNMF_SWEEP_DIR (default tempdir()) between runs.
##
##   R_LIBS=<lib> Rscript bench/pois-vb-sweep.R <density in %> [threads] [I J]
##   for r in 1 2 3; do for l in /tmp/lib-a /tmp/lib-b; do for t in 1 2; do
##     echo "$l $t $(R_LIBS=$l Rscript bench/pois-vb-sweep.R 5 $t)"; done; done; done
##
## (Run from the package's top directory or from bench/: it sources sim-counts.R.)

suppressPackageStartupMessages(library(bnmf))
source(file.path(if (file.exists("bench/sim-counts.R")) "bench" else ".", "sim-counts.R"))
args <- commandArgs(TRUE)
nz <- as.numeric(args[1])
threads <- if (length(args) >= 2) as.numeric(args[2]) else 1
dims <- if (length(args) >= 4) as.numeric(args[3:4]) else c(20000, 5000)
K <- 20
dir <- Sys.getenv("BNMF_SWEEP_DIR", tempdir())
cache <- file.path(dir, sprintf("counts-%g-%g-%g.rds", dims[1], dims[2], nz))
X <- if (file.exists(cache)) readRDS(cache) else {
  X <- simulate_counts(dims[1], dims[2], K, nz / 100)$X
  saveRDS(X, cache)
  X
}
call_time <- function(n) {
  a <- pois_call_args(X, K, n, "vb", threads)
  t0 <- proc.time()[["elapsed"]]
  do.call(.Call, c(list(a$fun), a$args))
  proc.time()[["elapsed"]] - t0
}
s <- replicate(3, (call_time(20) - call_time(2)) / 18)
cat(sprintf("%.4f\n", median(s)))
