# VB (or RULE=icm) sweeps for a profile: NSW sweeps (default 3) at I = J = 1000,
# K = 20 from bnmf's random start, MISS=1 for 20% missing entries; prints the
# ELBO trace. E.g.
#   R_LIBS=LIB bench/openblas.sh valgrind --tool=callgrind --trace-children=yes Rscript bench/prof-vb.R
suppressPackageStartupMessages(library(bnmf))
n_sw <- as.integer(Sys.getenv("NSW", "3")); miss <- Sys.getenv("MISS", "0") == "1"
set.seed(20240601)
I <- 1000L; J <- 1000L; K <- 20L
W0 <- matrix(rexp(I * K), I, K); H0 <- matrix(rexp(K * J), K, J)
X <- W0 %*% H0 + matrix(rnorm(I * J), I, J)
if (miss) X[sample(length(X), round(0.2 * length(X)))] <- NA
method <- Sys.getenv("RULE", "vb")
data <- bnmf:::prepare_data(X, K)
mean_x <- data$sum_obs / data$n_obs
rate <- sqrt(K / mean_x)
prior <- list(lamW = matrix(rate, I, K), lamH = matrix(rate, K, J), alpha = 1, beta = 1, ard = numeric())
init <- bnmf:::random_init(I, J, K, mean_x)
state <- bnmf:::new_state(X, data, init$W, init$H, 1, numeric(length(data$miss_pos)), keep_wh = FALSE,
  lambda = NULL, vb = if (method == "vb") list(tau_rate = 1 + data$n_obs / 2, lambda_rate = rep(1, K)))
r <- bnmf:::engine_sweeps(state, data, prior, n_sw, rule = method, masked = TRUE, accumulate = FALSE)
cat(format(r$trace[, 3], digits = 17), "\n")
