# What one call of the C sweeps costs besides its sweeps, and what that does
# to a sweep's time when a call makes few sweeps.
#
#   R_LIBS=<lib> Rscript bench/call-cost.R [reps = 3]   (from the package root)
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/call-cost.R
#
# The sweep table's X (I = J = 1000, K = 20), one Gibbs chain after 100
# warm-up sweeps (bench_chain() of chain-setup.R):
#   - a call that makes no sweep (engine_sweeps(n = 0)): reading and checking
#     the arguments, the log prior's constant, the RNG state in and out;
#   - ms a sweep when the same 64 sweeps are made 1, 2 or 16 at a time (a
#     fit makes 60-80 a call under OpenBLAS: chunks of about 0.25 s), plain
#     burn-in sweeps and the default fit's kept draws (wh_thin = 4: a call
#     flushes its batch of WH draws at its end).
# Medians over `reps` repetitions, the kinds in a random order each time;
# wall clock (Sys.time(), microseconds).

suppressPackageStartupMessages(library(bnmf))
here <- if (file.exists("bench/chain-setup.R")) "bench" else "."
source(file.path(here, "chain-setup.R"))
source(file.path(here, "machine.R"))
args <- commandArgs(TRUE)
reps <- if (length(args)) as.integer(args[1]) else 3L
now <- function() as.numeric(Sys.time())

I <- 1000L
J <- 1000L
K <- 20L
X <- bench_table_x(I, J, K)
ch <- bench_chain(X, K, "gibbs", FALSE, keep_wh = TRUE)
run <- function(n, acc) {
  bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = "gibbs", masked = FALSE,
                       accumulate = acc, wh_thin = 4L)
}
invisible(run(100L, FALSE))

per_call <- function() {
  t0 <- now()
  for (i in 1:2000) run(0L, FALSE)
  1000 * (now() - t0) / 2000
}
per_sweep <- function(per, acc) {
  t0 <- now()
  for (i in seq_len(64L %/% per)) run(per, acc)
  1000 * (now() - t0) / 64
}
kinds <- expand.grid(per = c(1L, 2L, 16L), acc = c(FALSE, TRUE))
res <- matrix(NA_real_, reps, nrow(kinds))
call0 <- numeric(reps)
for (r in seq_len(reps)) {
  call0[r] <- per_call()
  for (k in sample(nrow(kinds))) res[r, k] <- per_sweep(kinds$per[k], kinds$acc[k])
}

rng <- function(x) sprintf("%.3f (%.3f-%.3f)", stats::median(x), min(x), max(x))
cat("## The cost of a call of the C sweeps (I = J = 1000, K = 20, Gibbs)\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), "\n", sep = "")
cat("- machine: ", cpu_desc(), "\n", sep = "")
cat("- BLAS: `", extSoftVersion()[["BLAS"]], "`\n", sep = "")
cat("- ", reps, " repetitions; median (min-max), ms\n\n", sep = "")
cat("| | ms |\n|---|---:|\n")
cat("| a call without sweeps (`engine_sweeps(n = 0)`) | ", rng(call0), " |\n", sep = "")
for (k in seq_len(nrow(kinds))) {
  cat("| a sweep, ", kinds$per[k], " a call, ",
      if (kinds$acc[k]) "default fit (WH every 4th kept draw)" else "burn-in", " | ",
      rng(res[, k]), " |\n", sep = "")
}
