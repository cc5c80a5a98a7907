# Two builds of bnmf, one sweep kind at a time, as paired whole processes.
#
#   Rscript bench/sweep-pairs.R LIB_A LIB_B [pairs = 8]    (from the package root)
#
# For each sweep kind below, runs `pairs` pairs of child processes, one with
# the bnmf installed in LIB_A and one with LIB_B (the order swapped every
# pair), each under OpenBLAS with one thread (bench/openblas.sh; set
# BNMF_PAIRS_BLAS=reference for R's default BLAS). A child sets up the chain
# as bench/bench-sweep.R does (I = J = 1000, K = 20), makes 20 warm-up
# sweeps, then times N sweeps of the engine's wrapper and prints the
# milliseconds a sweep: the set-up (R's start, the data) is not timed, and
# the many sweeps average over the machine's short swings. Reported per
# kind: each version's median (range) ms a sweep and the median (range) over
# pairs of the ratio B / A. Smaller differences than the floor-ratio tables
# (bench/both-blas.R, bench/versions-blas.R) can show, since no floor
# measured beside the sweeps enters the ratio.
# BNMF_PAIRS_ONLY: a regular expression on the kinds' names (default all).

args <- commandArgs(trailingOnly = TRUE)

kinds <- list(
  "Gibbs, WH every kept draw" = list(method = "gibbs", miss = 0, acc = TRUE, wh_thin = 1L, n = 800L),
  # the sweeps under L'Ecuyer-CMRG, the uniform generator of bnmf()'s chains
  # (the other kinds run under Mersenne-Twister)
  "Gibbs, default fit, L'Ecuyer-CMRG (as bnmf() runs chains)" =
    list(method = "gibbs", miss = 0, acc = TRUE, wh_thin = 4L, n = 1200L, rng = "L'Ecuyer-CMRG"),
  "Gibbs, complete data" = list(method = "gibbs", miss = 0, acc = FALSE, n = 1500L),
  "Gibbs, default fit (WH moments every 4th kept draw)" =
    list(method = "gibbs", miss = 0, acc = TRUE, wh_thin = 4L, n = 1200L),
  "Gibbs, 20% missing" = list(method = "gibbs", miss = 0.2, acc = FALSE, n = 800L),
  "ICM, complete data" = list(method = "icm", miss = 0, acc = FALSE, n = 1500L),
  "ICM, 20% missing (masked)" = list(method = "icm", miss = 0.2, acc = FALSE, n = 400L),
  "VB, complete data" = list(method = "vb", miss = 0, acc = FALSE, n = 1500L),
  "VB, 20% missing (masked)" = list(method = "vb", miss = 0.2, acc = FALSE, n = 400L),
  "VB, 20% missing (imputed)" = list(method = "vb", miss = 0.2, acc = FALSE, n = 600L,
                                     impute = TRUE),
  "ICM, 20% missing (imputed)" = list(method = "icm", miss = 0.2, acc = FALSE, n = 800L,
                                      impute = TRUE),
  # NP (Euclidean) on max(X, 0)
  "NP, 20% missing (masked)" = list(method = "np", miss = 0.2, acc = FALSE, n = 600L,
                                    nonneg = TRUE),
  "NP, 20% missing (imputed)" = list(method = "np", miss = 0.2, acc = FALSE, n = 800L,
                                     nonneg = TRUE, impute = TRUE),
  # KL (I-divergence) updates on max(X, 0), through engine_kl()
  "NP, KL, complete data" = list(method = "kl", miss = 0, acc = FALSE, n = 300L,
                                 nonneg = TRUE),
  "NP, KL, 20% missing" = list(method = "kl", miss = 0.2, acc = FALSE, n = 300L,
                               nonneg = TRUE),
  # Poisson NMF (likelihood = "poisson") on sparse counts, 5000 x 2000, K = 20,
  # 17.5% non-zero, drawn from the model: whole fits of 5 and 5 + n sweeps
  # (tol = 0), the difference over n
  "Poisson VB, sparse counts" = list(method = "poisson vb", n = 40L),
  "Poisson Gibbs, sparse counts" = list(method = "poisson gibbs", n = 20L),
  # NMTF X ~ F S G', 1000 x 1000, K = L = 10, 20% missing at random: whole
  # fits (tol = 0) of 5 and 5 + n sweeps, the difference over n
  "NMTF Gibbs, 20% missing" = list(method = "nmtf gibbs", n = 40L),
  "NMTF ICM, 20% missing" = list(method = "nmtf icm", n = 40L),
  "NMTF VB, 20% missing" = list(method = "nmtf vb", n = 40L),
  "NMTF NP, 20% missing" = list(method = "nmtf np", n = 40L)
)

# the NMTF kinds' child: ms a sweep
nmtf_child <- function(kd) {
  set.seed(1)
  I <- 1000L
  J <- 1000L
  K <- 10L
  L <- 10L
  X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * L), K) %*% t(matrix(rexp(J * L), J)) +
    matrix(rnorm(I * J), I)
  X[sample(length(X), 0.2 * length(X))] <- NA
  m <- sub("nmtf ", "", kd$method)
  if (m == "np") X <- pmax(X, 0)
  fit_ms(function(n) {
    bnmf(X, rank = c(K, L), method = m, iter = n, tol = 0, burnin = 0L, progress = FALSE)
  }, kd$n)
}

# the Poisson kinds' child: ms a sweep
poisson_child <- function(kd) {
  suppressPackageStartupMessages(library(Matrix))
  set.seed(1)
  I <- 5000L
  J <- 2000L
  K <- 20L
  M <- matrix(rgamma(I * K, 0.5), I, K) %*% matrix(rgamma(K * J, 0.5), K, J)
  X <- as(matrix(rpois(length(M), M * (0.2 / mean(M))), I, J), "CsparseMatrix")
  rm(M)
  fit_ms(function(n) {
    bnmf(X, K, likelihood = "poisson", method = sub("poisson ", "", kd$method), iter = n,
         tol = 0, progress = FALSE)
  }, kd$n)
}

# ms a sweep of fit(n), a whole fit of n sweeps from seed 2: fits of 5 and
# 5 + n sweeps, the difference over n (after one fit of 2 to warm up)
fit_ms <- function(fit, n) {
  t <- function(k) {
    set.seed(2)
    system.time(suppressWarnings(fit(k)))[["elapsed"]]
  }
  invisible(t(2L))
  (t(5L + n) - t(5L)) * 1000 / n
}

if (length(args) >= 1L && args[1L] == "--child") {
  # one timing: --child LIB KIND
  suppressPackageStartupMessages(library(bnmf, lib.loc = args[2L]))
  `%||%` <- function(a, b) if (is.null(a)) b else a
  kd <- kinds[[args[3L]]]
  if (grepl("^poisson", kd$method)) {
    cat(sprintf("%.6f\n", poisson_child(kd)))
    quit(save = "no")
  }
  if (grepl("^nmtf", kd$method)) {
    cat(sprintf("%.6f\n", nmtf_child(kd)))
    quit(save = "no")
  }
  set.seed(20240601)
  I <- 1000L
  J <- 1000L
  K <- 20L
  X <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J) + matrix(rnorm(I * J), I, J)
  if (isTRUE(kd$nonneg)) X <- pmax(X, 0)
  if (kd$miss > 0) X[sample(length(X), round(kd$miss * length(X)))] <- NA
  masked <- kd$method != "gibbs" && kd$miss > 0 && !isTRUE(kd$impute)
  me <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])
  source(file.path(dirname(me), "chain-setup.R"))
  ch <- bench_chain(X, K, kd$method, masked, keep_wh = kd$acc)
  if (!is.null(kd$rng)) {
    RNGkind(kd$rng)
    set.seed(1)
  }
  sweeps <- function(n, acc) {
    if (kd$method == "kl") return(bnmf:::engine_kl(ch$state, ch$data, n))
    bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = kd$method, masked = masked,
                         accumulate = acc, wh_thin = kd$wh_thin %||% 1L)
  }
  invisible(sweeps(20L, FALSE))
  t <- system.time(sweeps(kd$n, kd$acc))[["elapsed"]]
  cat(sprintf("%.6f\n", 1000 * t / kd$n))
  quit(save = "no")
}

if (length(args) < 2L) stop("usage: Rscript bench/sweep-pairs.R LIB_A LIB_B [pairs = 8]")
libs <- normalizePath(args[1:2], mustWork = TRUE)
pairs <- if (length(args) >= 3L) as.integer(args[3L]) else 8L
only <- Sys.getenv("BNMF_PAIRS_ONLY", "")
blas <- Sys.getenv("BNMF_PAIRS_BLAS", "openblas")
if (nzchar(only)) kinds <- kinds[grepl(only, names(kinds))]

me <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L]))
rscript <- file.path(R.home("bin"), "Rscript")
child <- function(lib, kind) {
  cmd <- c(rscript, me, "--child", lib, shQuote(kind))
  if (blas == "openblas") cmd <- c(file.path(dirname(me), "openblas.sh"), cmd)
  out <- system2(cmd[1L], cmd[-1L], stdout = TRUE)
  as.numeric(utils::tail(out, 1L))
}
blas_name <- if (blas == "openblas") {
  system2(file.path(dirname(me), "openblas.sh"),
          c(rscript, "-e", shQuote("cat(extSoftVersion()[['BLAS']])")), stdout = TRUE)
} else {
  extSoftVersion()[["BLAS"]]
}

fmt <- function(x, d = 2) {
  sprintf(paste0("%.", d, "f (%.", d, "f-%.", d, "f)"), stats::median(x), min(x), max(x))
}
cat(sprintf("- A: %s; B: %s; %s; %s UTC\n", libs[1L], libs[2L], R.version.string,
            format(Sys.time(), "%Y-%m-%d %H:%M", tz = "UTC")))
source(file.path(dirname(me), "machine.R"))
cat(sprintf("- machine: %s\n", cpu_desc()))
cat(sprintf("- BLAS: `%s` (one thread)\n", blas_name))
cat(sprintf("- %d pairs per kind, order swapped every pair; ms a sweep and B / A: median (range)\n\n",
            pairs))
cat("| sweep | sweeps timed | A, ms | B, ms | B / A |\n|---|---:|---:|---:|---:|\n")
for (nm in names(kinds)) {
  a <- b <- numeric(pairs)
  for (p in seq_len(pairs)) {
    if (p %% 2L == 1L) {
      a[p] <- child(libs[1L], nm)
      b[p] <- child(libs[2L], nm)
    } else {
      b[p] <- child(libs[2L], nm)
      a[p] <- child(libs[1L], nm)
    }
  }
  cat(sprintf("| %s | %d | %s | %s | %s |\n", nm, kinds[[nm]]$n, fmt(a), fmt(b),
              fmt(b / a, 3)))
}
