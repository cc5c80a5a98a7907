# Whole ICM fits with missing entries by two or more builds of bnmf: sweeps
# and seconds to a common target, for changes that alter the path of a fit
# (how far a sweep moves), not only its cost.
#
#   Rscript bench/icm-builds.R LIB_A LIB_B [LIB_C ...] [rounds = 2]
#                                                   (from the package root)
#
# Each LIB is a library with one build of bnmf installed. Per round and case,
# one process per build (under OpenBLAS, 1 thread, bench/openblas.sh; under
# R's default BLAS with BNMF_BENCH_BLAS=reference), one at a time, in an
# order rotated every round. Each process fits the case with method = "icm"
# (the default, masked) from the same seed, to tol = 1e-9 (at most
# BNMF_BENCH_ITER sweeps, default 3000), and returns its log posterior trace
# and time per sweep. Cases: X = W0 H0 + N(0, 1), 1000 x 1000, K = 20, with
# 20% and 40% of the entries missing at random; GDSC IC50 (707 x 139, 19.3%
# missing, unevenly) at K = 10 and K = 20, when ../shared/data/gdsc is beside
# the repository. Per case and build: ms per sweep, where the fit would stop
# at bnmf's default tol = 1e-6 (sweeps, log posterior), and sweeps and
# seconds to first reach the target, the log posterior at which build A's
# fit of the same round stops at tol = 1e-6. Medians (ranges) over rounds.
child <- Sys.getenv("BNMF_ICMB_CHILD", "")
source(file.path("bench", "icm-fits.R"))
case_names <- c("1000 x 1000, K = 20, 20% missing", "1000 x 1000, K = 20, 40% missing")
gdsc <- file.path("..", "shared", "data", "gdsc", "ic50.txt")
if (file.exists(gdsc)) case_names <- c(case_names, "GDSC IC50, K = 10", "GDSC IC50, K = 20")
if (nzchar(child)) {
  suppressPackageStartupMessages(library(bnmf))
  cs <- Sys.getenv("BNMF_ICMB_CASE")
  X <- switch(cs,
    "1000 x 1000, K = 20, 20% missing" = sim_missing(0.2),
    "1000 x 1000, K = 20, 40% missing" = sim_missing(0.4),
    as.matrix(utils::read.table(gdsc, na.strings = "nan")))
  K <- if (grepl("K = 10", cs)) 10L else 20L
  set.seed(100 + as.integer(Sys.getenv("BNMF_ICMB_ROUND")))
  t <- system.time(fit <- suppressWarnings(
    bnmf(X, K, method = "icm", iter = as.integer(Sys.getenv("BNMF_BENCH_ITER", "3000")),
         tol = 1e-9, progress = FALSE)))[["elapsed"]]
  saveRDS(list(ms = 1000 * t / fit$iterations, lp = fit$trace$logpost,
               blas = extSoftVersion()[["BLAS"]]), child)
  quit(save = "no")
}

args <- commandArgs(TRUE)
rounds <- 2L
if (length(args) >= 3L && grepl("^[0-9]+$", args[length(args)])) {
  rounds <- as.integer(args[length(args)])
  args <- args[-length(args)]
}
if (length(args) < 2L) stop("usage: Rscript bench/icm-builds.R LIB_A LIB_B [LIB_C ...] [rounds]")
libs <- normalizePath(args)
names(libs) <- LETTERS[seq_along(libs)]
openblas <- Sys.getenv("BNMF_BENCH_BLAS", "openblas") != "reference"
self <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
res <- list()
blas <- NA_character_
for (cs in case_names) {
  for (r in seq_len(rounds)) {
    ord <- (seq_along(libs) + r - 2L) %% length(libs) + 1L
    for (v in names(libs)[ord]) {
      f <- tempfile(fileext = ".rds")
      cmd <- c(if (openblas) "bench/openblas.sh", "Rscript", self)
      env <- c(sprintf("R_LIBS=%s", libs[[v]]), sprintf("BNMF_ICMB_CHILD=%s", f),
               sprintf("BNMF_ICMB_CASE=%s", shQuote(cs)), sprintf("BNMF_ICMB_ROUND=%d", r))
      status <- system2(cmd[1], cmd[-1], env = env, stdout = FALSE)
      if (status != 0L) stop("a fit failed: build ", v, ", ", cs)
      res[[cs]][[v]][[r]] <- readRDS(f)
      blas <- res[[cs]][[v]][[r]]$blas
    }
  }
}
cat(sprintf("- %s; BLAS: %s; %d rounds\n", format(Sys.time(), "%Y-%m-%d %H:%M %Z"), blas,
            rounds))
for (v in names(libs)) cat(sprintf("- %s: %s\n", v, libs[[v]]))
cat("\n| case | build | ms / sweep | sweeps at tol 1e-6 | log posterior there | sweeps to target | seconds to target |\n")
cat("|---|---|---:|---:|---:|---:|---:|\n")
for (cs in case_names) {
  target <- vapply(res[[cs]][["A"]], function(z) z$lp[at_tol(z$lp)], 0)
  for (v in names(libs)) {
    z <- res[[cs]][[v]]
    ms <- vapply(z, `[[`, 0, "ms")
    n6 <- vapply(z, function(a) at_tol(a$lp), 0)
    lp6 <- vapply(z, function(a) a$lp[at_tol(a$lp)], 0)
    reach <- sweeps_to(z, target)
    cat(sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", cs, v, fmt_range(ms, 1), fmt_range(n6, 0),
                fmt_range(lp6, 1), fmt_range(reach, 0), fmt_range(reach * ms / 1000, 2)))
  }
}
