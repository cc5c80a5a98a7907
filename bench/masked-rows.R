# Masked ICM and VB sweeps with missing entries: two versions of bnmf side by
# side, under R's default BLAS and under OpenBLAS (1 thread).
#
#   Rscript bench/masked-rows.R LIB_A LIB_B [rounds]      (from the package root)
#
# Per round, four processes of this script (version A and B, installed in the
# libraries LIB_A and LIB_B, each under both BLAS, bench/openblas.sh), in an
# order rotated every round; each process times every case once: `n` sweeps
# (BNMF_BENCH_SWEEPS, default 20) of a chain after 20 warm-up sweeps, through
# the engine's internal wrappers as bench/bench-sweep.R does. Cases: X = W0 H0
# + N(0, 1), 1000 x 1000, K = 20 with 5% and 20% missing at random, K = 50
# with 20%, K = 10 and K = 8 with 20% (below K = 16 ICM, below K = 10 VB, the
# rows' masked Gram matrices; above, the gathered terms); GDSC IC50 (707 x
# 139, 19.3% missing), K = 10, when
# ../shared/data/gdsc is beside the repository. Prints ms per sweep, median
# (min-max) over rounds, and B's median time over A's. BNMF_MASKED_ONLY: a
# regular expression on the cases' names (default all). With 20 sweeps a
# case, runs on a shared machine can differ by half: for small differences
# raise BNMF_BENCH_SWEEPS and select the cases.
child <- Sys.getenv("BNMF_MASKED_CHILD", "")
if (nzchar(child)) {
  suppressPackageStartupMessages(library(bnmf))
  n <- as.integer(Sys.getenv("BNMF_BENCH_SWEEPS", "20"))
  sim <- function(frac, K, I = 1000L, J = 1000L) {
    set.seed(7)
    X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(rnorm(I * J), I)
    X[sample(length(X), round(frac * length(X)))] <- NA
    list(X = X, K = K)
  }
  cases <- list("1000 x 1000, K = 20, 5% missing" = sim(0.05, 20L),
                "1000 x 1000, K = 20, 20% missing" = sim(0.2, 20L),
                "1000 x 1000, K = 50, 20% missing" = sim(0.2, 50L),
                "1000 x 1000, K = 10, 20% missing" = sim(0.2, 10L),
                "1000 x 1000, K = 8, 20% missing" = sim(0.2, 8L))
  gdsc <- file.path("..", "shared", "data", "gdsc", "ic50.txt")
  if (file.exists(gdsc)) {
    cases[["GDSC IC50 707 x 139, K = 10"]] <-
      list(X = as.matrix(utils::read.table(gdsc, na.strings = "nan")), K = 10L)
  }
  only <- Sys.getenv("BNMF_MASKED_ONLY", "")
  if (nzchar(only)) cases <- cases[grepl(only, names(cases))]
  source(file.path("bench", "chain-setup.R"))
  out <- list()
  for (nm in names(cases)) {
    X <- cases[[nm]]$X
    K <- cases[[nm]]$K
    for (method in c("icm", "vb")) {
      set.seed(1)
      ch <- bench_chain(X, K, method, masked = TRUE)
      bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, 20L, rule = method, masked = TRUE)
      t <- system.time(bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = method,
                                            masked = TRUE))[["elapsed"]]
      out[[paste(toupper(method), nm, sep = ", ")]] <- 1000 * t / n
    }
  }
  saveRDS(out, child)
  quit(save = "no")
}

args <- commandArgs(TRUE)
if (length(args) < 2L) stop("usage: Rscript bench/masked-rows.R LIB_A LIB_B [rounds]")
libs <- c(A = normalizePath(args[1]), B = normalizePath(args[2]))
rounds <- if (length(args) >= 3L) as.integer(args[3]) else 5L
self <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
runs <- expand.grid(v = names(libs), blas = c("reference", "openblas"), stringsAsFactors = FALSE)
res <- list()
for (r in seq_len(rounds)) {
  ord <- (seq_len(nrow(runs)) + r - 2L) %% nrow(runs) + 1L
  for (k in ord) {
    f <- tempfile(fileext = ".rds")
    cmd <- c(if (runs$blas[k] == "openblas") "bench/openblas.sh", "Rscript", self)
    env <- c(sprintf("R_LIBS=%s", libs[[runs$v[k]]]), sprintf("BNMF_MASKED_CHILD=%s", f))
    status <- system2(cmd[1], c(cmd[-1]), env = env, stdout = FALSE)
    if (status != 0L) stop("a run failed: ", paste(cmd, collapse = " "))
    res[[length(res) + 1L]] <- list(v = runs$v[k], blas = runs$blas[k], r = r,
                                    t = readRDS(f))
  }
}
cat(sprintf("- A: %s; B: %s; %d rounds; %s\n\n", libs[["A"]], libs[["B"]], rounds,
            format(Sys.time(), "%Y-%m-%d %H:%M %Z")))
cat("| sweep | reference, A ms | reference, B ms | B / A | OpenBLAS, A ms | OpenBLAS, B ms | B / A |\n")
cat("|---|---:|---:|---:|---:|---:|---:|\n")
rows <- names(res[[1]]$t)
fmt <- function(x) sprintf("%.1f (%.1f-%.1f)", stats::median(x), min(x), max(x))
for (row in rows) {
  cells <- character()
  for (b in c("reference", "openblas")) {
    get <- function(v) vapply(Filter(function(z) z$v == v && z$blas == b, res),
                              function(z) z$t[[row]], 0)
    a <- get("A")
    bb <- get("B")
    cells <- c(cells, fmt(a), fmt(bb), sprintf("%.2f", stats::median(bb) / stats::median(a)))
  }
  cat(sprintf("| %s | %s |\n", row, paste(cells, collapse = " | ")))
}
