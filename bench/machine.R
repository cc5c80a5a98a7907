# The processor a benchmark ran on, for the header lines of its table:
# sourced by bench-sweep.R, both-blas.R and sweep-pairs.R (run from the
# package root, or from bench/). Machines of one name ("AMD EPYC") differ by
# generation, which moves every ratio, so the family and model are printed
# too (from /proc/cpuinfo on Linux; elsewhere only R's platform string).
cpu_desc <- function() {
  n <- parallel::detectCores()
  f <- "/proc/cpuinfo"
  if (!file.exists(f)) return(sprintf("%d cores (%s)", n, R.version$platform))
  info <- readLines(f, warn = FALSE)
  field <- function(key) {
    hit <- grep(paste0("^", key, "[[:space:]]*:"), info, value = TRUE)[1L]
    if (is.na(hit)) "?" else trimws(sub("^[^:]*:", "", hit))
  }
  sprintf("%s (cpu family %s, model %s), %d cores (%s)", field("model name"),
          field("cpu family"), field("model"), n, R.version$platform)
}
