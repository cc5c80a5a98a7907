# ICM (or VB) with missing entries: does icm_control(missing = "auto")
# (vb_control()) choose the faster of "impute" and "mask"? Whole fits of
# both on data whose missing entries are spread in different ways, same
# start (the same seed before each fit), alternating within the process.
#
#   R_LIBS=<lib> Rscript bench/icm-auto.R [rounds]
#   R_LIBS=<lib> bench/openblas.sh Rscript bench/icm-auto.R [rounds]
#
# BNMF_BENCH_METHOD: "icm" (the default), "vb" (the ELBO in place of the
# log posterior below) or "np" (minus the Euclidean loss; every X with its
# negative entries set to 0).
# BNMF_BENCH_CASES: a subset of the case names below, separated by ";".
# BNMF_BENCH_ITER: the most sweeps of a fit (default 800);
# BNMF_BENCH_IMPUTE_ITER those of the imputing fits (default the same: the
# multiplicative updates' imputing sweeps move less, and need more of them
# to reach a masked fit that has not converged). Each fit runs to
# tol = 1e-9; the "target" is the log posterior at which the masked fit of
# the same round stops at bnmf's default tol = 1e-6, and each setting's time
# to first reach it is read off its trace (sweeps x its mean ms per sweep).
# The last column says what "auto" chooses for the case: "impute" when no
# row and no column misses more than a third of its entries.
suppressPackageStartupMessages(library(bnmf))
source(file.path("bench", "icm-fits.R"))
args <- commandArgs(TRUE)
rounds <- if (length(args)) as.integer(args[1]) else 2L
cat_versions()

make_case <- function(I, J, K, seed, hide) list(X = sim_hidden(I, J, K, seed, hide), K = K)
rows_missing <- function(X, n_rows, n_each) {
  m <- matrix(FALSE, nrow(X), ncol(X))
  for (i in sample(nrow(X), n_rows)) m[i, sample(ncol(X), n_each)] <- TRUE
  m
}
cases <- list(
  "1000 x 1000, K = 20, 20% missing at random" =
    make_case(1000, 1000, 20, 1, function(X) sample(length(X), 0.2 * length(X))),
  "1000 x 1000, K = 20, 500 rows missing 30%" =
    make_case(1000, 1000, 20, 1, function(X) rows_missing(X, 500, 300)),
  "1000 x 1000, K = 20, 300 columns missing 32%" =
    make_case(1000, 1000, 20, 1, function(X) t(rows_missing(t(X), 300, 320))),
  "1000 x 1000, K = 20, a 330 x 330 block missing" =
    make_case(1000, 1000, 20, 1, function(X) cbind(rep(1:330, 330), rep(1:330, each = 330))),
  "1000 x 1000, K = 20, 30% missing at random" =
    make_case(1000, 1000, 20, 1, function(X) sample(length(X), 0.3 * length(X))),
  "600 x 300, K = 10, 20% missing at random" =
    make_case(600, 300, 10, 3, function(X) sample(length(X), 0.2 * length(X)))
)
gdsc <- file.path("..", "shared", "data", "gdsc", "ic50.txt")
if (file.exists(gdsc)) {
  G <- as.matrix(utils::read.table(gdsc, na.strings = "nan"))
  cases[[sprintf("GDSC IC50 %d x %d (%.1f%% missing), K = 20", nrow(G), ncol(G),
                 100 * mean(is.na(G)))]] <- list(X = G, K = 20)
}
only <- Sys.getenv("BNMF_BENCH_CASES", "")
if (nzchar(only)) {
  pick <- trimws(strsplit(only, ";")[[1]])
  if (!all(pick %in% names(cases))) stop("unknown case: ", setdiff(pick, names(cases))[1])
  cases <- cases[pick]
}
max_iter <- as.integer(Sys.getenv("BNMF_BENCH_ITER", "800"))
impute_iter <- as.integer(Sys.getenv("BNMF_BENCH_IMPUTE_ITER", max_iter))
method <- Sys.getenv("BNMF_BENCH_METHOD", "icm")
stopifnot(method %in% c("icm", "vb", "np"))
if (method == "np") cases <- lapply(cases, function(cs) within(cs, X <- pmax(X, 0)))
cat("method:", method, "\n\n")

cat("| case | worst row, column: share missing | `\"auto\"` takes | `\"impute\"`: ms / sweep | s to target | `\"mask\"`: ms / sweep | s to target | mask / impute (s to target) |\n")
cat("|---|---|---|---:|---:|---:|---:|---:|\n")
for (nm in names(cases)) {
  cs <- cases[[nm]]
  m <- is.na(cs$X)
  worst <- c(max(rowMeans(m)), max(colMeans(m)))
  auto <- bnmf:::missing_setting("auto", bnmf:::prepare_data(cs$X, cs$K)) # the package's rule
  res <- fit_both(cs$X, cs$K, rounds, max_iter, method, impute_iter)
  target <- vapply(res$mask, function(z) z$lp[at_tol(z$lp)], 0)
  reach <- lapply(res, time_to, target)
  ms <- lapply(res, function(z) vapply(z, `[[`, 0, "ms"))
  cat(sprintf("| %s | %.3f, %.3f | %s | %s | %s | %s | %s | %s |\n", nm, worst[1], worst[2],
              auto, fmt_range(ms$impute, 1), fmt_range(reach$impute),
              fmt_range(ms$mask, 1), fmt_range(reach$mask),
              fmt_range(reach$mask / reach$impute)))
}
