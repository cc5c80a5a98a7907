# Is Chib's estimate for counts reliable, and its standard error honest?
# Counts simulated from rank 3 (30 x 20, Gamma factors); one Gibbs fit at
# each rank; `reps` independent runs of marginal_likelihood() on each fit
# (different seeds). Reports per rank: the mean estimate, the spread (sd)
# of the repeated estimates, the median reported se, the share of runs
# within 2 reported se of the mean of the others, and the smallest block ESS.
#   R_LIBS=<lib> Rscript bench/chib-poisson.R [reps] [samples] [ranks] [orbit]
library(bnmf)
args <- commandArgs(trailingOnly = TRUE)
reps <- if (length(args) >= 1) as.integer(args[1]) else 8L
samples <- if (length(args) >= 2) as.integer(args[2]) else 5000L
ranks <- if (length(args) >= 3) eval(parse(text = args[3])) else 2:4
orbit <- if (length(args) >= 4) as.logical(args[4]) else TRUE
set.seed(11)
I <- 30; J <- 20; K0 <- 3
W <- matrix(rgamma(I * K0, 1, 0.5), I)
H <- matrix(rgamma(K0 * J, 1, 0.5), K0)
X <- matrix(rpois(I * J, W %*% H), I)
cat(sprintf("counts 30 x 20 from rank %d (total %d); %d runs of %d samples; orbit %s\n",
            K0, sum(X), reps, samples, orbit))
rows <- list()
for (K in ranks) {
  set.seed(100 + K)
  fit <- bnmf(X, rank = K, likelihood = "poisson", method = "gibbs",
              prior = gamma_prior(1, 1), iter = 3000)
  est <- se <- ess <- numeric(reps)
  t0 <- proc.time()[[3]]
  for (r in seq_len(reps)) {
    set.seed(1000 * K + r)
    m <- suppressWarnings(marginal_likelihood(fit, samples = samples, progress = FALSE,
                                              orbit = orbit))
    est[r] <- m$logml; se[r] <- m$se; ess[r] <- min(m$blocks$ess)
  }
  secs <- (proc.time()[[3]] - t0) / reps
  loo <- vapply(seq_len(reps), function(r) abs(est[r] - mean(est[-r])) <= 2 * se[r], logical(1))
  rows[[length(rows) + 1L]] <- data.frame(rank = K, mean = mean(est), sd = sd(est),
    median_se = median(se), within_2se = mean(loo), min_ess = min(ess), secs_per_run = secs)
  print(rows[[length(rows)]], row.names = FALSE)
}
print(do.call(rbind, rows), row.names = FALSE, digits = 4)
