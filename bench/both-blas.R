# One benchmark under two BLAS libraries, interleaved, side by side.
#
#   Rscript bench/both-blas.R [rounds]        (from the package root, bnmf installed)
#
# Runs bench/bench-sweep.R for one round at a time, alternately under R's
# default BLAS and under OpenBLAS with one thread (through bench/openblas.sh,
# which leaves the machine's BLAS alone), swapping which goes first every
# round, so that both see the same machine. Each round's ratios are the
# script's own (sweep time over the floor measured in the same process with
# the same BLAS); the table gives, per BLAS, the median and the range over
# rounds. Default 7 rounds (BNMF_BENCH_SWEEPS passes through).

args <- commandArgs(TRUE)
rounds <- if (length(args)) as.integer(args[1]) else 7L
if (!file.exists("bench/bench-sweep.R")) stop("run from the package root")
tmp <- tempfile("both-blas")
dir.create(tmp)
run_one <- function(blas, r) {
  out <- file.path(tmp, sprintf("%s-%02d.rds", blas, r))
  cmd <- c(if (blas == "openblas") "bench/openblas.sh", "Rscript", "bench/bench-sweep.R")
  env <- c(BNMF_BENCH_ROUNDS = "1", BNMF_BENCH_RDS = out)
  status <- system2(cmd[1], cmd[-1], stdout = FALSE,
                    env = paste0(names(env), "=", env))
  if (status != 0 || !file.exists(out)) stop("bench-sweep.R failed under ", blas)
  readRDS(out)
}
res <- list(reference = list(), openblas = list())
for (r in seq_len(rounds)) {
  order <- if (r %% 2) c("reference", "openblas") else c("openblas", "reference")
  for (b in order) res[[b]][[r]] <- run_one(b, r)
}

stack <- function(b, field) do.call(rbind, lapply(res[[b]], `[[`, field))
cell <- function(x) sprintf("%.2f (%.2f-%.2f)", median(x), min(x), max(x))
first <- res$reference[[1]]
cat("## Sweep cost under two BLAS libraries (I = J = 1000, K = 20, dense)\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "\n", sep = "")
source(file.path(if (file.exists("bench/machine.R")) "bench" else ".", "machine.R"))
cat("- machine: ", cpu_desc(), "\n", sep = "")
cat("- reference: `", first$blas, "`\n", sep = "")
cat("- OpenBLAS (1 thread): `", res$openblas[[1]]$blas, "`\n", sep = "")
cat("- ", rounds, " rounds, alternating the two BLAS (one process per round and ",
    "BLAS); each cell: median (min-max) over rounds of the ratio to the floor ",
    "X %*% t(H) + t(W) %*% X measured in the same process\n", sep = "")
fl <- function(b) 1000 * median(stack(b, "floor_t"))
cat(sprintf("- floor: %.1f ms (reference), %.1f ms (OpenBLAS)\n\n", fl("reference"),
            fl("openblas")))
# Ratios and, since the floor itself moves between sessions and between
# rows, the sweep's own time (median ms over rounds) beside them.
# "pooled": the sweep's median time over the median of every floor measured
# under that BLAS (all rows, all rounds). Under OpenBLAS the floor measured
# beside the first rows of a process has come out well above the later ones,
# which skews those rows' own ratios; the pooled column does not have that.
ms <- function(b, m) sprintf("%.1f", 1000 * median(stack(b, "sweep_t")[, m]))
pooled <- function(b, m) {
  sprintf("%.2f", median(stack(b, "sweep_t")[, m]) / median(stack(b, "floor_t")))
}
cat("| sweep | reference BLAS | ms | pooled | OpenBLAS, 1 thread | ms | pooled | target |\n",
    "|---|---:|---:|---:|---:|---:|---:|---:|\n", sep = "")
for (m in seq_along(first$names)) {
  tg <- first$target[m]
  cat("| ", first$names[m], " | ", cell(stack("reference", "ratio")[, m]), " | ",
      ms("reference", m), " | ", pooled("reference", m), " | ",
      cell(stack("openblas", "ratio")[, m]), " | ", ms("openblas", m), " | ",
      pooled("openblas", m), " | ", if (is.na(tg)) "-" else sprintf("<= %.1f", tg),
      " |\n", sep = "")
}
cat("| `rtnorm(1e6, mean = rnorm(1e6))` / `rnorm(1e6)` | ",
    cell(unlist(lapply(res$reference, `[[`, "rt_ratio"))), " | - | - | ",
    cell(unlist(lapply(res$openblas, `[[`, "rt_ratio"))), " | - | - | <= 1.5 |\n",
    sep = "")
