# Speed of one sweep of bnmf's C core, relative to the BLAS floor.
#
# Run from the package root with the package installed, e.g.
#   mkdir -p /tmp/bench/lib && R CMD INSTALL -l /tmp/bench/lib .
#   R_LIBS=/tmp/bench/lib Rscript bench/bench-sweep.R
#
# Problem: I = J = 1000, K = 20, dense X = W0 H0 + N(0, 1) noise with unit-mean
# exponential factors. The floor is the time of the two products a sweep
# cannot avoid, X %*% t(H) and t(W) %*% X, in this process (same BLAS).
# The machine may be shared: measurements are interleaved (floor, method,
# floor, method, ...), and we report the median, min and max over rounds of
# the ratio of each paired measurement.
# Environment variables: BNMF_BENCH_ROUNDS (default 7), BNMF_BENCH_SWEEPS
# (default 5).

suppressPackageStartupMessages(library(bnmf))

rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "7"))
n_sweeps <- as.integer(Sys.getenv("BNMF_BENCH_SWEEPS", "5"))
t_start <- proc.time()[["elapsed"]]

set.seed(20240601)
I <- 1000L
J <- 1000L
K <- 20L
W0 <- matrix(rexp(I * K), I, K)
H0 <- matrix(rexp(K * J), K, J)
X <- W0 %*% H0 + matrix(rnorm(I * J), I, J)
Xm <- X
Xm[sample(length(Xm), round(0.2 * length(Xm)))] <- NA

elapsed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  force(expr)
  proc.time()[["elapsed"]] - t0
}

# The floor, on factors of the right shape (their values do not matter).
Wf <- matrix(rexp(I * K), I, K)
Hf <- matrix(rexp(K * J), K, J)
floor_once <- function() {
  elapsed({
    a <- X %*% t(Hf)
    b <- t(Wf) %*% X
  })
}
floor_reps <- 3L
floor_time <- function() {
  sum(vapply(seq_len(floor_reps), function(r) floor_once(), 0)) / floor_reps
}

# A sweep configuration: a chain state that the C code advances in place.
# ctrl = c(n_sweeps, rule, masked, accumulate, thin, keep_draws, update_W,
#          update_H, update_tau, tol).
make_chain <- function(Xd, method, masked, accumulate) {
  data <- bnmf:::prepare_data(Xd, K)
  mean_x <- data$sum_obs / data$n_obs
  rate <- sqrt(K / mean_x) # bnmf's automatic rate
  prior <- list(lamW = matrix(rate, I, K), lamH = matrix(rate, K, J),
                alpha = 1, beta = 1)
  init <- bnmf:::random_init(I, J, K, mean_x)
  nmiss <- length(data$miss_pos)
  latent <- if (nmiss && !masked) {
    bnmf:::wh_entries(init$W, init$H, data$miss_i, data$miss_j)
  } else numeric(nmiss)
  state <- bnmf:::new_state(Xd, data, init$W, init$H, 1, latent,
                            keep_wh = accumulate)
  rule <- if (method == "gibbs") 0 else 1
  ctrl <- function(n) c(n, rule, masked, accumulate, 1, 0, 1, 1, 1, 0)
  run <- function(n) invisible(.Call(bnmf:::C_nmf_sweeps, state, data, prior, ctrl(n)))
  run(3L) # warm-up: leave the random start, settle tau
  list(run = run, state = state)
}

configs <- list(
  list(name = "Gibbs, complete data", Xd = X, method = "gibbs", masked = 0,
       accumulate = 0, target = 1.3),
  list(name = "Gibbs, complete, keep = \"summary\" (accumulate WH moments)",
       Xd = X, method = "gibbs", masked = 0, accumulate = 1, target = NA),
  list(name = "ICM, complete data", Xd = X, method = "icm", masked = 1,
       accumulate = 0, target = 1.3),
  list(name = "Gibbs, 20% missing (latent entries)", Xd = Xm, method = "gibbs",
       masked = 0, accumulate = 0, target = 3),
  list(name = "ICM, 20% missing (masked Gram matrices)", Xd = Xm, method = "icm",
       masked = 1, accumulate = 0, target = 3)
)

chains <- lapply(configs, function(cf) make_chain(cf$Xd, cf$method, cf$masked, cf$accumulate))
invisible(floor_time()) # warm-up

# Interleave: in each round, for each method, a floor measurement then the
# method's sweeps, so that a ratio compares two measurements taken seconds
# apart.
ratio <- matrix(NA_real_, rounds, length(configs))
sweep_t <- matrix(NA_real_, rounds, length(configs))
floor_t <- matrix(NA_real_, rounds, length(configs))
for (r in seq_len(rounds)) {
  for (m in seq_along(configs)) {
    f <- floor_time()
    s <- elapsed(chains[[m]]$run(n_sweeps)) / n_sweeps
    floor_t[r, m] <- f
    sweep_t[r, m] <- s
    ratio[r, m] <- s / f
  }
}

# rtnorm against rnorm, interleaved the same way.
n_rt <- 1e6
mu_rt <- rnorm(n_rt)
rt_ratio <- numeric(rounds)
rt_abs <- numeric(rounds)
for (r in seq_len(rounds)) {
  a <- elapsed(rnorm(n_rt))
  b <- elapsed(rtnorm(n_rt, mean = mu_rt))
  rt_ratio[r] <- b / a
  rt_abs[r] <- b
}

fmt <- function(x, d = 2) formatC(x, format = "f", digits = d)
ms <- function(x) fmt(1000 * x, 1)
blas <- sessionInfo()$BLAS
blas_ext <- unname(extSoftVersion()["BLAS"])

cat("## bnmf sweep cost (I = J = 1000, K = 20, dense)\n\n")
cat("- date: ", format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "\n", sep = "")
cat("- machine: ", parallel::detectCores(), " cores (", R.version$platform, "), ",
    R.version.string, "\n", sep = "")
cat("- BLAS: sessionInfo()$BLAS = `", blas, "`; extSoftVersion()[\"BLAS\"] = `",
    blas_ext, "`\n", sep = "")
cat("- floor (X %*% t(H) + t(W) %*% X): median ", ms(median(floor_t)),
    " ms (min ", ms(min(floor_t)), ", max ", ms(max(floor_t)), ")\n", sep = "")
cat("- ", rounds, " rounds x ", n_sweeps, " sweeps per method; each ratio pairs ",
    "a sweep time with the floor measured just before it\n\n", sep = "")

cat("| sweep | ms / sweep (median) | ratio to floor: median | min | max | target | met |\n")
cat("|---|---:|---:|---:|---:|---:|:---:|\n")
for (m in seq_along(configs)) {
  cf <- configs[[m]]
  med <- median(ratio[, m])
  tgt <- if (is.na(cf$target)) "-" else paste0("<= ", fmt(cf$target, 1))
  met <- if (is.na(cf$target)) "-" else if (med <= cf$target) "yes" else "**no**"
  cat("| ", cf$name, " | ", ms(median(sweep_t[, m])), " | ", fmt(med), " | ",
      fmt(min(ratio[, m])), " | ", fmt(max(ratio[, m])), " | ", tgt, " | ", met,
      " |\n", sep = "")
}
cat("| `rtnorm(1e6, mean = rnorm(1e6))` / `rnorm(1e6)` | ", ms(median(rt_abs)),
    " (rtnorm) | ", fmt(median(rt_ratio)), " | ", fmt(min(rt_ratio)), " | ",
    fmt(max(rt_ratio)), " | - | - |\n", sep = "")
cat("\nTotal benchmark time: ", fmt(proc.time()[["elapsed"]] - t_start, 0), " s\n",
    sep = "")
