# Active factors of Poisson ARD fits from K = 10: counts of rank 4 (96 x 60)
# and Poisson noise of a constant rate (5, 50; 40 x 30), three seeds each;
# VB (one start, three restarts), Gibbs (1000 sweeps, from random starts and
# from the VB fit). About 1 min.
library(bnmf)
act <- function(f) sum(summary(f)$factors$active)
sim <- function(I, J, K, seed) {
  set.seed(seed)
  W <- matrix(rgamma(I * K, 1, 1), I, K); H <- matrix(rgamma(K * J, 1, 0.1), K, J)
  matrix(rpois(I * J, W %*% H), I, J)
}
res <- list()
for (seed in 1:3) {
  X <- sim(96, 60, 4, seed)
  set.seed(seed); v1 <- suppressWarnings(bnmf(X, 10, likelihood = "poisson", method = "vb", prior = ard(), iter = 5000))
  set.seed(seed); v3 <- suppressWarnings(bnmf(X, 10, likelihood = "poisson", method = "vb", prior = ard(), iter = 5000, chains = 3))
  set.seed(seed); g <- bnmf(X, 10, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 1000)
  set.seed(seed); gi <- bnmf(X, 10, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 1000, init = list(W = v3$W, H = v3$H))
  res[[length(res) + 1]] <- data.frame(data = "rank 4, 96 x 60", seed = seed, vb = act(v1), vb_3restarts = act(v3), gibbs = act(g), gibbs_from_vb = act(gi))
  for (rate in c(5, 50)) {
    set.seed(100 + seed); N <- matrix(rpois(40 * 30, rate), 40, 30)
    set.seed(seed); v1 <- suppressWarnings(bnmf(N, 10, likelihood = "poisson", method = "vb", prior = ard(), iter = 5000))
    set.seed(seed); v3 <- suppressWarnings(bnmf(N, 10, likelihood = "poisson", method = "vb", prior = ard(), iter = 5000, chains = 3))
    set.seed(seed); g <- bnmf(N, 10, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 1000)
    set.seed(seed); gi <- bnmf(N, 10, likelihood = "poisson", method = "gibbs", prior = ard(), iter = 1000, init = list(W = v3$W, H = v3$H))
    res[[length(res) + 1]] <- data.frame(data = sprintf("Poisson(%d), 40 x 30", rate), seed = seed, vb = act(v1), vb_3restarts = act(v3), gibbs = act(g), gibbs_from_vb = act(gi))
  }
}
print(do.call(rbind, res), row.names = FALSE)
