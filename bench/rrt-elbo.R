# ELBO of RRT + ONVI beside NVI-4, NVI-10, Gibbs + ONVI and HMC + ONVI under
# both likelihoods (Masood and Doshi-Velez, Tables 1 and 3): AML/ALL (Golub,
# NMF::esGolub, 5000 x 38, rank 3) and the bundled `leukemia` (500 x 128,
# rank 3); `reps` repetitions, mean and quartiles, number of components kept.
# sigma2 and epsilon are set once per data set from first NNLS fits (as the
# paper: "before any additional experiments"); every search runs under a
# time limit (the paper's budgets, 5000 components or 10000 draws, take
# hours in R on this machine); RRT starts from `starts` restarts.
# Run: R_LIBS=<lib> Rscript bench/rrt-elbo.R [reps = 10] [seconds = 5] [starts = 10]
#        [data = "leukemia,AML"] [NVI iterations = 10] [output = elbo]
#        [skip = "likelihood:search,..." runs left out, e.g. "gaussian:nvi4"]
#        [rate = 1: the exponential prior's rate on W and H]
# Results: bench/rrt-results/elbo.rds (saved after every run) and the table
# printed by bench/rrt-elbo-table.R.
suppressMessages({
  library(bnmf)
  library(Biobase)
})
args <- as.numeric(commandArgs(TRUE))
reps <- if (length(args) >= 1 && !is.na(args[1])) args[1] else 10
secs <- if (length(args) >= 2 && !is.na(args[2])) args[2] else 5
starts <- if (length(args) >= 3 && !is.na(args[3])) args[3] else 10
targs <- commandArgs(TRUE)
which_sets <- if (length(targs) >= 4) strsplit(targs[4], ",")[[1]] else c("leukemia", "AML")
nvi_iter <- if (length(args) >= 5 && !is.na(args[5])) args[5] else 10
out_name <- if (length(targs) >= 6) targs[6] else "elbo"
skip <- if (length(targs) >= 7) strsplit(targs[7], ",")[[1]] else character()
rate <- if (length(args) >= 8 && !is.na(args[8])) args[8] else 1
data(esGolub, package = "NMF")
sets <- list(AML = exprs(esGolub), leukemia = bnmf::leukemia)[which_sets]
out_file <- sprintf("bench/rrt-results/%s.rds", out_name)
dir.create("bench/rrt-results", showWarnings = FALSE)
rows <- list()
for (nm in names(sets)) {
  X <- sets[[nm]]
  storage.mode(X) <- "double"
  set.seed(100)
  tg_g <- bnmf:::nvi_target(X, 3, "gaussian")
  tg_u <- bnmf:::nvi_target(X, 3, "uniform")
  for (lik in c("gaussian", "uniform")) {
    for (search in c("nvi4", "nvi10", "gibbs", "hmc", "rrt")) {
      if (search == "gibbs" && lik == "uniform") next
      if (paste(lik, search, sep = ":") %in% skip) next
      for (r in seq_len(reps)) {
        set.seed(1000 * r + 7)
        t0 <- proc.time()[[3]]
        fit <- bnmf(X, rank = 3, method = "rrt", likelihood = lik, prior = exponential(rate),
                    iter = switch(search, rrt = 5000, gibbs = , hmc = 10000, nvi_iter),
                    control = rrt_control(search = search, sigma2 = tg_g$sigma2,
                                          epsilon = tg_u$epsilon, starts = starts,
                                          time_limit = secs))
        rows[[length(rows) + 1]] <- data.frame(
          data = nm, likelihood = lik, search = search, rate = rate, rep = r, elbo = fit$elbo,
          kept = length(fit$weights), processed = fit$stats$processed,
          accepted = fit$stats$accepted, time = proc.time()[[3]] - t0)
        cat(sprintf("%s %s %s rep %d: ELBO %.6g, %d kept, %d processed, %.1fs\n", nm, lik,
                    search, r, fit$elbo, length(fit$weights), fit$stats$processed,
                    proc.time()[[3]] - t0))
        saveRDS(list(results = do.call(rbind, rows), reps = reps, secs = secs, starts = starts,
                     nvi_iter = nvi_iter, rate = rate), out_file)
      }
    }
  }
}
