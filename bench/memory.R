## bench/memory.R: peak memory of a default fit, above the baseline of the
## process that holds X, in units of the size of X.
##
## Each case runs in a fresh R process (so one fit's garbage cannot hide
## another's peak): the process loads bnmf, makes X, runs gc(), resets the
## kernel's peak-RSS counter (writing 5 to /proc/self/clear_refs, Linux only),
## reads its resident size (the baseline), fits, and reads the peak resident
## size (VmHWM). The ratio (peak - baseline) / object.size(X) is what the
## fit itself needed.
##
##   R_LIBS=/tmp/bench/lib Rscript bench/memory.R            # every case
##   R_LIBS=/tmp/bench/lib Rscript bench/memory.R gibbs-dense  # one case
##
## Cases: dense 4000 x 2500 (80 MB), complete; sparse 40,000 x 5,000 with 2%
## non-zeros (4e6 stored values, 46 MB as a dgCMatrix); K = 10; Gibbs with
## the defaults of bnmf() except iter = 200 (memory does not grow with iter
## under keep = "summary"), VB with iter = 100.

status_kb <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep(paste0("^", field, ":"), s, value = TRUE)))
}

one_case <- function(case) {
  suppressPackageStartupMessages({
    library(Matrix)
    library(bnmf)
  })
  set.seed(1)
  K <- 10L
  sparse <- grepl("sparse", case)
  X <- if (sparse) {
    rsparsematrix(40000, 5000, density = 0.02, rand.x = function(n) rexp(n))
  } else {
    matrix(rexp(4000 * 10), 4000, 10) %*% matrix(rexp(10 * 2500), 10, 2500) +
      matrix(rnorm(4000 * 2500, sd = 0.5), 4000, 2500)
  }
  X <- abs(X)
  method <- sub("-.*", "", case)
  iter <- if (method == "gibbs") 200L else 100L
  invisible(gc(full = TRUE))
  writeLines("5", "/proc/self/clear_refs")
  base <- status_kb("VmRSS")
  fit <- suppressWarnings(bnmf(X, rank = K, method = method, iter = iter, progress = FALSE))
  peak <- status_kb("VmHWM")
  size <- as.numeric(object.size(X)) / 1024
  data.frame(case = case, X_MB = size / 1024, baseline_MB = base / 1024,
             peak_above_MB = (peak - base) / 1024, ratio = (peak - base) / size)
}

cases <- c("gibbs-dense", "vb-dense", "gibbs-sparse", "vb-sparse")
arg <- commandArgs(TRUE)
if (length(arg) && arg[1] %in% cases) {
  r <- one_case(arg[1])
  cat(sprintf("%s\t%.1f\t%.1f\t%.1f\t%.2f\n", r$case, r$X_MB, r$baseline_MB, r$peak_above_MB,
              r$ratio))
} else {
  cat(R.version.string, "\n")
  cat("| fit | size of X (MB) | baseline (MB) | peak above baseline (MB) | peak / size of X |\n")
  cat("|---|---:|---:|---:|---:|\n")
  rscript <- file.path(R.home("bin"), "Rscript")
  self <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  for (case in cases) {
    out <- system2(rscript, c(self, case), stdout = TRUE)
    f <- strsplit(out[length(out)], "\t")[[1]]
    cat(sprintf("| %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], f[5]))
  }
}
