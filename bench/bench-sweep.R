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
# Environment variables: BNMF_BENCH_ROUNDS (default 11), BNMF_BENCH_SWEEPS
# (default 64: 16 per call of the C sweeps, see below), BNMF_BENCH_ONLY (a
# regular expression: only the sweeps whose names match it; default all),
# BNMF_BENCH_WARMUP (sweeps each chain makes
# before the timings, default 3: early sweeps, far from convergence; a fit
# spends most of its sweeps later, where ICM's rows stop moving sooner and
# most of VB's coordinates are far from their bound, e.g. 100).
# Rows with `options(bnmf.threads = 2)` run the masked rows (VB's imputed
# rows) on two threads (the package's OpenMP loop); the BLAS keeps its own setting
# (OPENBLAS_NUM_THREADS under bench/openblas.sh).

suppressPackageStartupMessages(library(bnmf))
source(file.path(if (file.exists("bench/machine.R")) "bench" else ".", "machine.R"))

rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "11"))
# A fit calls the C sweeps in chunks of about a quarter of a second (60-80
# sweeps under OpenBLAS at this size), and each call pays once for reading
# its arguments and, in a default Gibbs fit, for flushing the WH moments'
# batch of draws it holds. With 2 sweeps a call (the default up to
# 2026-12-06) both were charged to every sweep: the default fit's rows read
# about 0.1 floor above what a fit pays. 16 sweeps a call hold one whole
# batch (4 draws of WH at wh_thin = 4).
n_sweeps <- as.integer(Sys.getenv("BNMF_BENCH_SWEEPS", "64"))
warmup <- as.integer(Sys.getenv("BNMF_BENCH_WARMUP", "3"))
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
# no row or column of Xm misses more than a third, so the defaults of ICM
# and VB impute
stopifnot(bnmf:::missing_setting("auto", bnmf:::prepare_data(Xm, K)) == "impute")

# Wall time by Sys.time() (microseconds): proc.time() counts milliseconds,
# a sixth of the floor under OpenBLAS (3.5 ms), and its rounding alone moved
# a round's ratio by several per cent.
elapsed <- function(expr) {
  t0 <- as.numeric(Sys.time())
  force(expr)
  as.numeric(Sys.time()) - t0
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

# A sweep configuration: a chain state that the C code advances in place,
# through the engine's internal wrappers (engine_sweeps(), engine_kl()): the
# named controls are parsed once per call, not per sweep.
make_chain <- function(Xd, method, masked, accumulate, ard = FALSE, wh_thin = 1L,
                       threads = 1L, rng = NULL) {
  data <- bnmf:::prepare_data(Xd, K)
  mean_x <- data$sum_obs / data$n_obs
  rate <- sqrt(K / mean_x) # bnmf's automatic rate
  if (method %in% c("np", "kl")) rate <- 0
  prior <- list(lamW = matrix(rate, I, K), lamH = matrix(rate, K, J),
                alpha = 1, beta = 1, ard = if (ard) c(1, 1) else numeric())
  init <- bnmf:::random_init(I, J, K, mean_x)
  nmiss <- length(data$miss_pos)
  latent <- if (nmiss && !masked) {
    bnmf:::wh_entries(init$W, init$H, data$miss_i, data$miss_j)
  } else numeric(nmiss)
  state <- bnmf:::new_state(Xd, data, init$W, init$H, 1, latent,
                            keep_wh = accumulate,
                            lambda = if (ard) rep(1, K),
                            vb = if (method == "vb") {
                              list(tau_rate = 1 + data$n_obs / 2, lambda_rate = rep(1, K))
                            })
  run <- if (method == "kl") {
    function(n) invisible(bnmf:::engine_kl(state, data, n))
  } else {
    function(n) {
      op <- options(bnmf.threads = threads)
      on.exit(options(op))
      if (!is.null(rng)) {
        # the sweeps under another uniform generator (the rest of the
        # script keeps the session's)
        kind <- RNGkind(rng)[1L]
        on.exit(RNGkind(kind), add = TRUE)
      }
      invisible(bnmf:::engine_sweeps(state, data, prior, n, rule = method,
                                     masked = masked == 1, accumulate = accumulate == 1,
                                     wh_thin = wh_thin))
    }
  }
  run(warmup) # warm-up: leave the random start, settle tau
  list(run = run, state = state)
}

configs <- list(
  list(name = "Gibbs, complete data", Xd = X, method = "gibbs", masked = 0,
       accumulate = 0, target = 1.3),
  list(name = "Gibbs, complete, keep = \"summary\" (accumulate WH moments)",
       Xd = X, method = "gibbs", masked = 0, accumulate = 1, target = NA),
  list(name = "Gibbs, complete, default fit (WH moments every 4th kept draw, wh_thin = 4)",
       Xd = X, method = "gibbs", masked = 0, accumulate = 1, target = 1.3, wh_thin = 4L),
  list(name = "Gibbs, complete, default fit under L'Ecuyer-CMRG (the generator of bnmf()'s chains; the other rows: Mersenne-Twister)",
       Xd = X, method = "gibbs", masked = 0, accumulate = 1, target = 1.3, wh_thin = 4L,
       rng = "L'Ecuyer-CMRG"),
  list(name = "ICM, complete data", Xd = X, method = "icm", masked = 1,
       accumulate = 0, target = 1.3),
  list(name = "Gibbs, 20% missing (latent entries)", Xd = Xm, method = "gibbs",
       masked = 0, accumulate = 0, target = 2),
  list(name = "ICM, 20% missing, masked (icm_control(missing = \"mask\"))", Xd = Xm, method = "icm",
       masked = 1, accumulate = 0, target = 2),
  list(name = "ICM, 20% missing, masked, options(bnmf.threads = 2)", Xd = Xm, method = "icm",
       masked = 1, accumulate = 0, target = NA, threads = 2L),
  list(name = "ICM, 20% missing, imputed (ECM; the default, \"auto\", takes it on this X)", Xd = Xm,
       method = "icm", masked = 0, accumulate = 0, target = 2),
  list(name = "VB, complete data", Xd = X, method = "vb", masked = 1,
       accumulate = 0, target = 1.3),
  list(name = "VB with ARD, complete data", Xd = X, method = "vb", masked = 1,
       accumulate = 0, target = NA, ard = TRUE),
  list(name = "VB, 20% missing, masked (vb_control(missing = \"mask\"))", Xd = Xm, method = "vb",
       masked = 1, accumulate = 0, target = 2),
  list(name = "VB, 20% missing, masked, options(bnmf.threads = 2)", Xd = Xm, method = "vb",
       masked = 1, accumulate = 0, target = NA, threads = 2L),
  list(name = "VB, 20% missing, imputed (the default, \"auto\", takes it on this X)", Xd = Xm,
       method = "vb", masked = 0, accumulate = 0, target = 2),
  list(name = "VB, 20% missing, imputed, options(bnmf.threads = 2)", Xd = Xm,
       method = "vb", masked = 0, accumulate = 0, target = NA, threads = 2L),
  list(name = "NP (Lee-Seung), Euclidean, complete data", Xd = pmax(X, 0), method = "np",
       masked = 1, accumulate = 0, target = 1.3),
  list(name = "NP (Lee-Seung), Euclidean, 20% missing, masked (the default, \"auto\", masks)",
       Xd = pmax(Xm, 0), method = "np", masked = 1, accumulate = 0, target = 2),
  list(name = "NP (Lee-Seung), Euclidean, 20% missing, imputed (EM; np_control(missing = \"impute\"))",
       Xd = pmax(Xm, 0), method = "np", masked = 0, accumulate = 0, target = 2),
  list(name = "NP (Lee-Seung), KL, complete data", Xd = pmax(X, 0), method = "kl",
       masked = 1, accumulate = 0, target = NA)
)

only <- Sys.getenv("BNMF_BENCH_ONLY", "")
if (nzchar(only)) {
  configs <- configs[grepl(only, vapply(configs, `[[`, "", "name"))]
  if (!length(configs)) stop("BNMF_BENCH_ONLY matches no sweep")
}
chains <- lapply(configs, function(cf) make_chain(cf$Xd, cf$method, cf$masked, cf$accumulate,
                                                  isTRUE(cf$ard), if (is.null(cf$wh_thin)) 1L else cf$wh_thin,
                                                  if (is.null(cf$threads)) 1L else cf$threads,
                                                  cf$rng))
invisible(replicate(3, floor_once())) # warm-up

# Interleave: in each round, for each method, `n_alt` alternations of one
# floor measurement (the two products, once) and `n_sweeps / n_alt` sweeps, so
# that a ratio compares measurements taken a fraction of a second apart. The
# round's ratio is (time per sweep) / (time per floor), both summed over the
# round's alternations.
n_alt <- 4L
per_alt <- max(1L, n_sweeps %/% n_alt)
ratio <- matrix(NA_real_, rounds, length(configs))
sweep_t <- matrix(NA_real_, rounds, length(configs))
floor_t <- matrix(NA_real_, rounds, length(configs))
# Reference row: the same two products in the transposition forms the C code
# hands to dgemm (X H' as "N","T" and W'X as "T","N"), i.e. tcrossprod() and
# crossprod(); on the reference BLAS these are slower than the floor's forms.
xprod_once <- function() {
  elapsed({
    a <- tcrossprod(X, Hf)
    b <- crossprod(Wf, X)
  })
}
xprod_ratio <- numeric(rounds)
for (r in seq_len(rounds)) {
  for (m in seq_along(configs)) {
    # the garbage of the set-up and of the rows before, collected outside
    # the timings (a full collection inside a row's first floor once made
    # that floor several times its usual time)
    invisible(gc())
    f <- s <- 0
    for (a in seq_len(n_alt)) {
      f <- f + floor_once()
      s <- s + elapsed(chains[[m]]$run(per_alt))
    }
    floor_t[r, m] <- f / n_alt
    sweep_t[r, m] <- s / (n_alt * per_alt)
    ratio[r, m] <- sweep_t[r, m] / floor_t[r, m]
  }
  f <- s <- 0
  for (a in seq_len(n_alt)) {
    f <- f + floor_once()
    s <- s + xprod_once()
  }
  xprod_ratio[r] <- s / f
}

# rtnorm against rnorm, interleaved the same way.
n_rt <- 1e6
mu_rt <- rnorm(n_rt)
rt_ratio <- numeric(rounds)
rt_abs <- numeric(rounds)
invisible(rnorm(n_rt)); invisible(rtnorm(n_rt, mean = mu_rt)) # warm-up
# Per round, 5 alternations, each after a gc() so that no collection of the
# previous draws lands inside a timing.
for (r in seq_len(rounds)) {
  a <- b <- 0
  for (k in 1:5) {
    invisible(gc())
    a <- a + elapsed(rnorm(n_rt))
    invisible(gc())
    b <- b + elapsed(rtnorm(n_rt, mean = mu_rt))
  }
  rt_ratio[r] <- b / a
  rt_abs[r] <- b / 5
}

# Raw results for bench/both-blas.R, which alternates this script between two
# BLAS libraries and tabulates them side by side.
rds <- Sys.getenv("BNMF_BENCH_RDS", "")
if (nzchar(rds)) {
  saveRDS(list(names = vapply(configs, `[[`, "", "name"),
               target = vapply(configs, function(cf) cf$target, 0),
               ratio = ratio, sweep_t = sweep_t, floor_t = floor_t,
               xprod_ratio = xprod_ratio, rt_ratio = rt_ratio,
               blas = unname(extSoftVersion()["BLAS"])), rds)
}

fmt <- function(x, d = 2) formatC(x, format = "f", digits = d)
ms <- function(x) fmt(1000 * x, 1)
blas <- sessionInfo()$BLAS
blas_ext <- unname(extSoftVersion()["BLAS"])

cat("## bnmf sweep cost (I = J = 1000, K = 20, dense)\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; date: ", format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "\n", sep = "")
cat("- machine: ", cpu_desc(), "; ", R.version.string, "\n", sep = "")
cat("- BLAS: sessionInfo()$BLAS = `", blas, "`; extSoftVersion()[\"BLAS\"] = `",
    blas_ext, "`\n", sep = "")
cat("- floor (X %*% t(H) + t(W) %*% X): median ", ms(median(floor_t)),
    " ms (min ", ms(min(floor_t)), ", max ", ms(max(floor_t)), ")\n", sep = "")
cat("- ", rounds, " rounds; per round and method, ", n_alt, " alternations of ",
    "(floor, ", per_alt, " sweeps); ratios are per round, then median / min / max ",
    "over rounds\n", sep = "")
cat("- sweeps start from bnmf's random initialisation after ", warmup, " warm-up sweeps ",
    "(ICM: tol = 0, so it never stops; prior: bnmf's automatic rate ",
    "sqrt(K / mean(X)))\n\n", sep = "")

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
cat("| (reference) the floor's products as the C code calls dgemm: ",
    "`tcrossprod(X, H)` + `crossprod(W, X)` | - | ", fmt(median(xprod_ratio)),
    " | ", fmt(min(xprod_ratio)), " | ", fmt(max(xprod_ratio)), " | - | - |\n",
    sep = "")
cat("| `rtnorm(1e6, mean = rnorm(1e6))` / `rnorm(1e6)` | ", ms(median(rt_abs)),
    " (rtnorm) | ", fmt(median(rt_ratio)), " | ", fmt(min(rt_ratio)), " | ",
    fmt(max(rt_ratio)), " | - | - |\n", sep = "")
cat("\nTotal benchmark time: ", fmt(proc.time()[["elapsed"]] - t_start, 0), " s\n",
    sep = "")
