# ns a uniform of the samplers' L'Ecuyer-CMRG steps (src/rng.c), by fill.
#
#   R_LIBS=<lib> Rscript bench/unif-speed.R [reps = 21]   (from the package root)
#
# Under L'Ecuyer-CMRG: 2e6 uniforms through the package's buffer (the tests'
# entry C_unif: 1e7, one rgamma(), 1e7), filled four at a time with AVX2
# where the processor has it ("default") or one at a time
# (BNMF_MRG_FILL=scalar); and runif(2e6), R's unif_rand() through its
# table of generators. Each includes writing the values to a vector. The
# three in a random order each repetition; median (min-max) ns a uniform.

suppressPackageStartupMessages(library(bnmf))
source(file.path(if (file.exists("bench/machine.R")) "bench" else ".", "machine.R"))
args <- commandArgs(TRUE)
reps <- if (length(args)) as.integer(args[1]) else 21L
n <- 1e6
now <- function() as.numeric(Sys.time())
RNGkind("L'Ecuyer-CMRG")
set.seed(1)
kinds <- list(
  "bnmf, four at a time (AVX2) where available" = function() {
    Sys.setenv(BNMF_MRG_FILL = "")
    invisible(.Call(bnmf:::C_unif, n, 1))
  },
  "bnmf, one at a time (BNMF_MRG_FILL=scalar)" = function() {
    Sys.setenv(BNMF_MRG_FILL = "scalar")
    on.exit(Sys.unsetenv("BNMF_MRG_FILL"))
    invisible(.Call(bnmf:::C_unif, n, 1))
  },
  "R's runif()" = function() invisible(stats::runif(2 * n))
)
ns <- matrix(NA_real_, reps, length(kinds), dimnames = list(NULL, names(kinds)))
for (r in seq_len(reps)) {
  for (k in sample(length(kinds))) {
    invisible(gc())
    t0 <- now()
    kinds[[k]]()
    ns[r, k] <- 1e9 * (now() - t0) / (2 * n)
  }
}
cat("## Uniforms under L'Ecuyer-CMRG\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), "\n", sep = "")
cat("- machine: ", cpu_desc(), "\n", sep = "")
cat("- ", reps, " repetitions of 2e6 uniforms; median (min-max)\n\n", sep = "")
cat("| uniforms | ns each |\n|---|---:|\n")
for (k in names(kinds)) {
  x <- ns[, k]
  cat(sprintf("| %s | %.2f (%.2f-%.2f) |\n", k, stats::median(x), min(x), max(x)))
}
