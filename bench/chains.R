## bench/chains.R: two Gibbs chains in this process against two background
## R sessions (future::plan(multisession, workers = 2)).
##
##   R_LIBS=/tmp/bench/lib Rscript bench/chains.R [rounds] [iter]
##
## Data: I = J = 1000, K = 20, X = W0 H0 + N(0, 1) noise. The fit is
## bnmf(X, 20, chains = 2, iter = iter) with the default keep = "summary"
## (iter = 600, two chains, takes about 30 s in this process on a quiet machine with the
## reference BLAS). Rounds alternate the two plans (which goes first swaps
## every round); the multisession workers are started before the first
## round and reused, as in an analysis session, and their start-up is timed
## separately. Every pair of fits has the same seed and is checked to give the
## same posterior means (the chains' streams are drawn in this process
## whatever the plan).
## Needs two idle cores: the speed-up is capped by what else runs.

suppressPackageStartupMessages({
  library(bnmf)
  library(future)
})
args <- as.integer(commandArgs(TRUE))
rounds <- if (length(args) >= 1) args[1] else 3L
iter <- if (length(args) >= 2) args[2] else 600L

set.seed(1)
I <- 1000; J <- 1000; K <- 20
X <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J) + matrix(rnorm(I * J), I, J)

fit_time <- function() {
  set.seed(42)
  t0 <- proc.time()[["elapsed"]]
  fit <- suppressWarnings(bnmf(X, K, chains = 2, iter = iter, progress = FALSE))
  list(sec = proc.time()[["elapsed"]] - t0, W = factors(fit)$W)
}

t0 <- proc.time()[["elapsed"]]
plan(multisession, workers = 2)
invisible(future.apply::future_lapply(1:2, function(i) requireNamespace("bnmf")))
startup <- proc.time()[["elapsed"]] - t0
multi <- plan()
plan(sequential)

seq_t <- par_t <- numeric(rounds)
same <- logical(rounds)
for (r in seq_len(rounds)) {
  order <- if (r %% 2L) c("seq", "par") else c("par", "seq")
  res <- list()
  for (o in order) {
    if (o == "par") plan(multi) else plan(sequential)
    res[[o]] <- fit_time()
  }
  plan(sequential)
  seq_t[r] <- res$seq$sec
  par_t[r] <- res$par$sec
  same[r] <- isTRUE(all.equal(res$seq$W, res$par$W, tolerance = 0))
}
plan(multi)
plan(sequential)

cat(sprintf("bnmf %s; %s; BLAS %s; iter = %d, 2 chains, %d rounds\n",
            utils::packageVersion("bnmf"), R.version.string, extSoftVersion()[["BLAS"]],
            iter, rounds))
cat(sprintf("starting 2 multisession workers (once): %.1f s\n\n", startup))
cat("| plan | seconds: median | min | max |\n|---|---:|---:|---:|\n")
cat(sprintf("| sequential | %.1f | %.1f | %.1f |\n", median(seq_t), min(seq_t), max(seq_t)))
cat(sprintf("| multisession, 2 workers | %.1f | %.1f | %.1f |\n", median(par_t), min(par_t), max(par_t)))
sp <- seq_t / par_t
cat(sprintf("\nspeed-up per round (sequential / multisession): median %.2f (min %.2f, max %.2f); same fits: %s\n",
            median(sp), min(sp), max(sp), all(same)))
