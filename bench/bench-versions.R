# Two versions of bnmf side by side: the sweep benchmark (bench-sweep.R) of
# version A and of version B, each installed in its own library, run in
# alternating processes (A, B, A, B, ...), one round each. Each process
# measures its sweeps against the BLAS floor in that process, so every ratio is
# self-normalised; the pair's ratio of ratios (B / A) says how much faster or
# slower B's sweeps are, and the median over pairs (with min and max) is
# reported for every sweep configuration.
#
#   Rscript bench/bench-versions.R LIB_A SCRIPT_A LIB_B SCRIPT_B [PAIRS]
#
# SCRIPT_A and SCRIPT_B are the bench-sweep.R of each version (the script calls
# internal routines whose interface may differ between versions), e.g. for the
# previous commit: git show HEAD~1:bench/bench-sweep.R > /tmp/bench-sweep-old.R
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 4L) {
  stop("usage: bench-versions.R LIB_A SCRIPT_A LIB_B SCRIPT_B [PAIRS]")
}
pairs <- if (length(args) >= 5L) as.integer(args[5L]) else 7L

# One process of one version: the per-configuration ratio to the floor.
run_one <- function(lib, script) {
  out <- system2(file.path(R.home("bin"), "Rscript"), script, stdout = TRUE,
                 env = c(paste0("R_LIBS=", lib), "BNMF_BENCH_ROUNDS=1"))
  rows <- grep("^\\| [^-|].* \\| [0-9.]+ \\| [0-9.]+ \\|", out, value = TRUE)
  cells <- strsplit(rows, " \\| ")
  stats::setNames(vapply(cells, function(x) as.numeric(x[3L]), numeric(1)),
                  vapply(cells, function(x) sub("^\\| ", "", x[1L]), character(1)))
}

a <- b <- NULL
for (p in seq_len(pairs)) {
  a <- rbind(a, run_one(args[1L], args[2L]))
  b <- rbind(b, run_one(args[3L], args[4L]))
}
common <- intersect(colnames(a), colnames(b))
fmt <- function(x) formatC(x, format = "f", digits = 2)
cat(sprintf("## Sweep cost of two versions, %d alternating pairs of processes\n\n", pairs))
cat("- A: ", args[1L], "\n- B: ", args[3L], "\n", sep = "")
cat("- BLAS: `", unname(extSoftVersion()["BLAS"]), "`\n\n", sep = "")
cat("| sweep | A: ratio to floor (median) | B: ratio to floor (median) | B / A: median | min | max |\n")
cat("|---|---:|---:|---:|---:|---:|\n")
for (nm in common) {
  r <- b[, nm] / a[, nm]
  cat("| ", nm, " | ", fmt(stats::median(a[, nm])), " | ", fmt(stats::median(b[, nm])),
      " | ", fmt(stats::median(r)), " | ", fmt(min(r)), " | ", fmt(max(r)), " |\n", sep = "")
}
