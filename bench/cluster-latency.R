## bench/cluster-latency.R: the time of a call to the workers of a socket
## cluster, with and without TCP_NODELAY on the master's sockets
## (options(socketOptions = "no-delay") before makePSOCKcluster()).
##
##   R_LIBS=<lib> Rscript bench/cluster-latency.R [rounds]
##
## A fit by blocks makes one (Poisson VB) or two (Gaussian) calls to every
## worker a sweep. On small data the calls are all of its time, so a small
## Gaussian VB fit (30 x 45, K = 3, 3 blocks, 60 sweeps: 120 calls) on two
## 2-worker clusters, one made each way, shows their cost; rounds
## alternate the two, medians (ranges). The CPU time of the master and of
## the workers is a few hundredths of a second: the rest is waiting.

args <- commandArgs(TRUE)
rounds <- if (length(args)) as.integer(args[1]) else 5L
suppressPackageStartupMessages(library(bnmf))
set.seed(22)
I <- 30; J <- 45
X <- matrix(rexp(I * 3), I, 3) %*% matrix(rexp(3 * J), 3, J) + matrix(rnorm(I * J, sd = 0.2), I, J)
plain <- parallel::makePSOCKcluster(2)
old <- options(socketOptions = "no-delay")
nodelay <- parallel::makePSOCKcluster(2)
options(old)
fit_time <- function(cl) {
  set.seed(5)
  t0 <- proc.time()[["elapsed"]]
  suppressWarnings(bnmf(X, 3, method = "vb", iter = 60, tol = 0, blocks = 3, cluster = cl,
                        progress = FALSE))
  proc.time()[["elapsed"]] - t0
}
fit_time(plain); fit_time(nodelay) # the workers load bnmf
res <- matrix(NA_real_, rounds, 2, dimnames = list(NULL, c("default", "no-delay")))
for (r in seq_len(rounds)) {
  res[r, 1] <- fit_time(plain)
  res[r, 2] <- fit_time(nodelay)
}
parallel::stopCluster(plain)
parallel::stopCluster(nodelay)
q <- function(v) sprintf("%.2f (%.2f-%.2f)", median(v), min(v), max(v))
cat(sprintf("%s; %d rounds; load average %s\n", format(Sys.time(), "%Y-%m-%d %H:%M %Z"), rounds,
            paste(scan("/proc/loadavg", what = "", n = 3, quiet = TRUE), collapse = " ")))
cat("| master's sockets | s per fit (120 calls) | ms per call |\n|---|---:|---:|\n")
for (nm in colnames(res)) cat(sprintf("| %s | %s | %.1f |\n", nm, q(res[, nm]), 1000 * median(res[, nm]) / 120))
cat(sprintf("ratio default / no-delay per round: %s\n", q(res[, 1] / res[, 2])))
