## bench/chains.R: two Gibbs chains in one R process against two background
## R sessions (future::plan(multisession, workers = 2)).
##
##   R_LIBS=/tmp/bench/lib Rscript bench/chains.R [rounds] [iter]
##
## Data: I = J = 1000, K = 20, X = W0 H0 + N(0, 1) noise. The fit is
## bnmf(X, 20, chains = 2, iter = iter) with the default keep = "summary"
## (iter = 800, two chains: about 30 s in one process on a quiet machine with
## the reference BLAS). Each round runs two child R processes one after the
## other (which goes first swaps every round): one fits under the sequential
## plan; the other sets plan(multisession, workers = 2), starts its workers
## (timed apart, as an analysis session starts them once) and then times the
## fit, checking that the fit ran on those same workers. (Switching one
## process's plan from sequential back to multisession would start new
## workers, and their start-up would land inside the timed fit.) Every pair
## of fits has the same seed and is checked to give the same posterior
## means (the chains' streams are drawn in the main process whatever the
## plan). Needs two idle cores: the speed-up is capped by what else runs.
##
## Beside it, each round measures the machine's ceiling at that moment: one
## child fitting one chain alone, then two such children at once (the same
## data, seed and work, no communication); ceiling = 2 x (time alone) /
## (the slower of the two at once), the speed-up two independent processes
## got. Two chains in two workers cannot beat it by more than the noise.

args <- commandArgs(TRUE)

make_data <- function() {
  set.seed(1)
  I <- 1000; J <- 1000; K <- 20
  list(X = matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J) +
         matrix(rnorm(I * J), I, J), K = K)
}

if (length(args) >= 1L && args[1] == "--child") {
  suppressPackageStartupMessages({
    library(bnmf)
    library(future)
  })
  plan_name <- args[2]
  iter <- as.integer(args[3])
  d <- make_data()
  pids <- function() sort(unlist(future.apply::future_lapply(1:2, function(i) Sys.getpid())))
  startup <- NA_real_
  before <- after <- integer()
  if (plan_name == "par") {
    t0 <- proc.time()[["elapsed"]]
    plan(multisession, workers = 2)
    invisible(future.apply::future_lapply(1:2, function(i) requireNamespace("bnmf")))
    startup <- proc.time()[["elapsed"]] - t0
    before <- pids()
  } else {
    plan(sequential)
  }
  set.seed(42)
  t0 <- proc.time()[["elapsed"]]
  fit <- suppressWarnings(bnmf(d$X, d$K, chains = if (plan_name == "one") 1 else 2,
                               iter = iter, progress = FALSE))
  sec <- proc.time()[["elapsed"]] - t0
  if (plan_name == "par") after <- pids()
  # written whole under another name first: the parent polls for args[4]
  saveRDS(list(sec = sec, W = factors(fit)$W, startup = startup,
               same_workers = identical(before, after)), paste0(args[4], ".part"))
  file.rename(paste0(args[4], ".part"), args[4])
  plan(sequential)
  quit(save = "no")
}

rounds <- if (length(args) >= 1) as.integer(args[1]) else 3L
iter <- if (length(args) >= 2) as.integer(args[2]) else 800L
script <- if (file.exists("bench/chains.R")) "bench/chains.R" else stop("run from the package root")
tmp <- tempfile("chains")
dir.create(tmp)
child <- function(p, r) {
  out <- file.path(tmp, sprintf("%s-%02d.rds", p, r))
  status <- system2(file.path(R.home("bin"), "Rscript"),
                    c(script, "--child", p, iter, out))
  if (status != 0 || !file.exists(out)) stop("child process failed: ", p)
  readRDS(out)
}
# two children fitting one chain each, started together; the slower's fit time
two_at_once <- function(r) {
  outs <- file.path(tmp, sprintf("two-%02d-%d.rds", r, 1:2))
  for (o in outs) system2(file.path(R.home("bin"), "Rscript"),
                          c(script, "--child", "one", iter, o), wait = FALSE)
  while (!all(file.exists(outs))) Sys.sleep(0.2)
  max(vapply(outs, function(o) readRDS(o)$sec, 0))
}
seq_t <- par_t <- startup <- one_t <- two_t <- numeric(rounds)
same <- reused <- logical(rounds)
for (r in seq_len(rounds)) {
  order <- if (r %% 2L) c("seq", "par") else c("par", "seq")
  res <- list()
  for (o in order) res[[o]] <- child(o, r)
  one_t[r] <- child("one", r)$sec
  two_t[r] <- two_at_once(r)
  seq_t[r] <- res$seq$sec
  par_t[r] <- res$par$sec
  startup[r] <- res$par$startup
  reused[r] <- res$par$same_workers
  same[r] <- isTRUE(all.equal(res$seq$W, res$par$W, tolerance = 0))
}

suppressPackageStartupMessages(library(bnmf))
# the BLAS's threads in a fresh process (NA: no thread control, e.g. R's
# reference BLAS; "-": a bnmf without blas_threads())
threads <- if (exists("blas_threads", asNamespace("bnmf"))) bnmf:::blas_threads() else "-"
cat(sprintf("bnmf %s; %s; BLAS %s, %s threads; iter = %d, 2 chains, %d rounds; %s\n",
            utils::packageVersion("bnmf"), R.version.string, extSoftVersion()[["BLAS"]],
            threads, iter, rounds, format(Sys.time(), "%Y-%m-%d %H:%M %Z")))
cat(sprintf("starting the 2 multisession workers (once per process, not timed): median %.1f s\n",
            median(startup)))
cat(sprintf("the fit ran on the workers started before it: %s\n\n", all(reused)))
cat("| plan | seconds: median | min | max |\n|---|---:|---:|---:|\n")
cat(sprintf("| sequential | %.1f | %.1f | %.1f |\n", median(seq_t), min(seq_t), max(seq_t)))
cat(sprintf("| multisession, 2 workers | %.1f | %.1f | %.1f |\n", median(par_t), min(par_t), max(par_t)))
sp <- seq_t / par_t
cat(sprintf("\nspeed-up per round (sequential / multisession): median %.2f (min %.2f, max %.2f); same fits: %s\n",
            median(sp), min(sp), max(sp), all(same)))
ce <- 2 * one_t / two_t
cat(sprintf("the machine's ceiling per round (2 x one chain alone / two one-chain processes at once): median %.2f (min %.2f, max %.2f)\n",
            median(ce), min(ce), max(ce)))
cat(sprintf("one chain alone %.1f s (%.1f-%.1f), two at once %.1f s (%.1f-%.1f); load average at the end: %s\n",
            median(one_t), min(one_t), max(one_t), median(two_t), min(two_t), max(two_t),
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = " ")))
