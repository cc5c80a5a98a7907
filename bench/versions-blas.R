# Two versions of bnmf under two BLAS libraries, interleaved.
#
#   Rscript bench/versions-blas.R LIB_A LIB_B [rounds]     (from the package root)
#
# Per round, four processes of bench/bench-sweep.R (one round each): version A
# and version B (installed in the libraries LIB_A and LIB_B), each under R's
# default BLAS and under OpenBLAS with one thread (bench/openblas.sh); the
# order of the four is rotated every round, so that all see the same machine.
# Each ratio is the script's own (sweep time over the floor measured in the
# same process with the same BLAS); each cell gives the median (min-max) over
# rounds. Default 7 rounds; BNMF_BENCH_ONLY and BNMF_BENCH_SWEEPS pass through
# (e.g. BNMF_BENCH_ONLY="^VB|^ICM" for the VB and ICM rows only).
args <- commandArgs(TRUE)
if (length(args) < 2L) stop("usage: versions-blas.R LIB_A LIB_B [rounds]")
libs <- c(A = args[1], B = args[2])
rounds <- if (length(args) >= 3L) as.integer(args[3]) else 7L
if (!file.exists("bench/bench-sweep.R")) stop("run from the package root")
tmp <- tempfile("versions-blas")
dir.create(tmp)
runs <- expand.grid(v = names(libs), blas = c("reference", "openblas"),
                    stringsAsFactors = FALSE)
run_one <- function(v, blas, r) {
  out <- file.path(tmp, sprintf("%s-%s-%02d.rds", v, blas, r))
  cmd <- c(if (blas == "openblas") "bench/openblas.sh", "Rscript", "bench/bench-sweep.R")
  env <- c(R_LIBS = unname(libs[v]), BNMF_BENCH_ROUNDS = "1", BNMF_BENCH_RDS = out)
  status <- system2(cmd[1], cmd[-1], stdout = FALSE, env = paste0(names(env), "=", env))
  if (status != 0 || !file.exists(out)) stop("bench-sweep.R failed: ", v, " ", blas)
  readRDS(out)
}
res <- list()
for (r in seq_len(rounds)) {
  ord <- (seq_len(nrow(runs)) + r - 2L) %% nrow(runs) + 1L
  for (i in ord) {
    key <- paste(runs$v[i], runs$blas[i])
    res[[key]][[r]] <- run_one(runs$v[i], runs$blas[i], r)
  }
}
stack <- function(key, field) do.call(rbind, lapply(res[[key]], `[[`, field))
cell <- function(x) sprintf("%.2f (%.2f-%.2f)", median(x), min(x), max(x))
first <- res[[1]][[1]]
cat("- A: ", libs["A"], "; B: ", libs["B"], "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "\n", sep = "")
cat("- reference: `", res[["A reference"]][[1]]$blas, "`; OpenBLAS (1 thread): `",
    res[["A openblas"]][[1]]$blas, "`\n", sep = "")
cat("- ", rounds, " rounds of 4 processes (A and B under each BLAS, order rotated); ",
    "median (min-max) over rounds of the ratio to the floor\n", sep = "")
for (b in c("reference", "openblas"))
  cat(sprintf("- floor, %s: %.1f ms (A), %.1f ms (B)\n", b,
              1000 * median(stack(paste("A", b), "floor_t")),
              1000 * median(stack(paste("B", b), "floor_t"))))
cat("- warm-up sweeps per chain: ", Sys.getenv("BNMF_BENCH_WARMUP", "3"),
    " (BNMF_BENCH_WARMUP)\n", sep = "")
# Beside the ratios, each sweep's median time in ms under OpenBLAS: the
# floor measured beside a row moves between rows and processes, the sweep's
# own time less so.
ms <- function(key, m) sprintf("%.2f", 1000 * median(stack(key, "sweep_t")[, m]))
cat("\n| sweep | A, reference | B, reference | A, OpenBLAS | B, OpenBLAS |",
    " A, OpenBLAS ms | B, OpenBLAS ms |\n",
    "|---|---:|---:|---:|---:|---:|---:|\n", sep = "")
for (m in seq_along(first$names)) {
  cat("| ", first$names[m], sep = "")
  for (key in c("A reference", "B reference", "A openblas", "B openblas"))
    cat(" | ", cell(stack(key, "ratio")[, m]), sep = "")
  cat(" | ", ms("A openblas", m), " | ", ms("B openblas", m), " |\n", sep = "")
}
