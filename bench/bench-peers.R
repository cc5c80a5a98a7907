# bnmf against R peers: RcppML (alternating NNLS) and NMF (Lee-Seung
# multiplicative updates).
#
# Run from the package root with the package installed, e.g.
#   mkdir -p /tmp/bench/lib && R CMD INSTALL -l /tmp/bench/lib .
#   R_LIBS=/tmp/bench/lib Rscript bench/bench-peers.R
#
# The peers are never dependencies of bnmf. If one is missing and we run as
# root, the script installs the Debian package (r-cran-rcppml, r-cran-nmf);
# otherwise that part is skipped with a message.
# Environment variable: BNMF_BENCH_REPS (default 3), repetitions of every
# timed run, interleaved across methods; times are medians over them.

# RcppML is built with OpenMP: even with setRcppMLthreads(1) part of its work
# runs on every core unless OMP_NUM_THREADS is set before R starts, so the
# script re-runs itself with OMP_NUM_THREADS=1 (bnmf is single-threaded; a
# value set by the caller is respected).
if (!nzchar(Sys.getenv("OMP_NUM_THREADS"))) {
  file_arg <- grep("^--file=", commandArgs(FALSE), value = TRUE)
  if (length(file_arg) == 1L) {
    script <- sub("^--file=", "", file_arg)
    st <- system2(file.path(R.home("bin"), "Rscript"), shQuote(script),
                  env = "OMP_NUM_THREADS=1")
    quit(save = "no", status = st)
  }
}

suppressPackageStartupMessages(library(bnmf))

reps <- as.integer(Sys.getenv("BNMF_BENCH_REPS", "3"))
t_start <- proc.time()[["elapsed"]]
gdsc_path <- "/work/shared/data/gdsc/ic50.txt"

ensure_peer <- function(pkg, deb) {
  if (requireNamespace(pkg, quietly = TRUE)) return(TRUE)
  is_root <- identical(unname(Sys.info()[["effective_user"]]), "root")
  if (!is_root || !nzchar(Sys.which("apt-get"))) {
    message(sprintf("Skipping %s: not installed, and not root (or no apt-get) to install %s.",
                    pkg, deb))
    return(FALSE)
  }
  message(sprintf("Installing %s (Debian package %s) ...", pkg, deb))
  env <- "DEBIAN_FRONTEND=noninteractive"
  args <- c("install", "-y", "--no-install-recommends", deb)
  st <- system2("apt-get", args, env = env, stdout = FALSE, stderr = FALSE)
  if (st != 0) {
    system2("apt-get", "update", env = env, stdout = FALSE, stderr = FALSE)
    st <- system2("apt-get", args, env = env, stdout = FALSE, stderr = FALSE)
  }
  ok <- st == 0 && requireNamespace(pkg, quietly = TRUE)
  if (!ok) message(sprintf("Skipping %s: installing %s failed.", pkg, deb))
  ok
}
have_rcppml <- ensure_peer("RcppML", "r-cran-rcppml")
have_nmf <- ensure_peer("NMF", "r-cran-nmf")

elapsed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  force(expr)
  proc.time()[["elapsed"]] - t0
}
fmt <- function(x, d = 2) formatC(x, format = "f", digits = d)
fmt_err <- function(x) formatC(x, format = "f", digits = 6)
rel_err <- function(X, WH) {
  ok <- !is.na(X)
  sqrt(sum((X[ok] - WH[ok])^2) / sum(X[ok]^2))
}
# Relative error per sweep from a bnmf trace: the log likelihood and tau give
# SSE = (n/2 (log tau - log 2 pi) - loglik) * 2 / tau, n = observed entries.
trace_err <- function(fit, X) {
  tr <- fit$trace
  n <- sum(!is.na(X))
  sse <- (n / 2 * (log(tr$tau) - log(2 * pi)) - tr$loglik) * 2 / tr$tau
  sqrt(pmax(sse, 0) / sum(X^2, na.rm = TRUE))
}
icm_flat <- function(X, iter, tol, seed = 1) {
  set.seed(seed)
  bnmf(X, rank = 20, method = "icm", prior = exponential(rate = 0), iter = iter,
       tol = tol, progress = FALSE)
}

# The synthetic data of bench-sweep.R: I = J = 1000, K = 20.
set.seed(20240601)
I <- 1000L
J <- 1000L
K <- 20L
X <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J) +
  matrix(rnorm(I * J), I, J)

cat("## bnmf against R peers (X: 1000 x 1000 = W0 H0 + N(0, 1), K = 20)\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; date: ", format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "; ", parallel::detectCores(),
    " cores; ", R.version.string, "\n", sep = "")
cat("- BLAS: `", sessionInfo()$BLAS, "`\n", sep = "")
cat("- every time is the median of repetitions interleaved across methods ",
    "(shared machine); bnmf is single-threaded; OMP_NUM_THREADS = ",
    Sys.getenv("OMP_NUM_THREADS", "(unset)"), "\n", sep = "")

invisible(icm_flat(X[1:100, 1:100], iter = 5, tol = 0)) # warm-up (future etc.)

# ---------------------------------------------------------------------------
# 1. ICM (flat prior) against RcppML::nmf
# ---------------------------------------------------------------------------
if (have_rcppml) {
  RcppML::setRcppMLthreads(1L) # one thread, like bnmf
  rcppml_tols <- c(1e-5, 1e-8)
  run_rcppml <- function(tol) {
    RcppML::nmf(X, k = K, tol = tol, maxit = 10000, seed = 1, verbose = FALSE)
  }
  rc_fit <- lapply(rcppml_tols, run_rcppml)
  rc_err <- vapply(rc_fit, function(m) rel_err(X, m$w %*% diag(m$d) %*% m$h), 0)
  rc_iter <- vapply(rc_fit, function(m) m$iter, 0)

  # One long bnmf trace (tol = 0, the path does not depend on tol until it
  # stops): the first sweep at which bnmf's error reaches each RcppML error.
  max_sweeps <- 400L
  ref <- icm_flat(X, iter = max_sweeps, tol = 0)
  err_path <- trace_err(ref, X)
  need <- vapply(rc_err, function(e) {
    s <- which(err_path <= e)
    if (length(s)) s[1L] else NA_integer_
  }, 0L)

  # Timed runs, interleaved: RcppML at each tol, bnmf capped at the sweeps it
  # needs to reach that error, and bnmf run to its own convergence
  # (tol = 1e-6, the default).
  t_rc <- matrix(NA_real_, reps, length(rcppml_tols))
  t_bn <- matrix(NA_real_, reps, length(rcppml_tols))
  t_conv <- numeric(reps)
  bn_err <- rep(NA_real_, length(rcppml_tols))
  for (r in seq_len(reps)) {
    for (k in seq_along(rcppml_tols)) {
      t_rc[r, k] <- elapsed(run_rcppml(rcppml_tols[k]))
      if (!is.na(need[k])) {
        t_bn[r, k] <- elapsed(fit <- icm_flat(X, iter = need[k], tol = 0))
        bn_err[k] <- rel_err(X, fit$W %*% fit$H)
      }
    }
    t_conv[r] <- elapsed(conv <- icm_flat(X, iter = 2000, tol = 1e-6))
  }
  conv_err <- rel_err(X, conv$W %*% conv$H)

  cat("\n### ICM, flat prior (`exponential(rate = 0)`), vs `RcppML::nmf` ",
      "(version ", format(utils::packageVersion("RcppML")), ", 1 thread, ",
      "seed = 1, maxit = 10000)\n\n", sep = "")
  cat("| run | iterations | relative error | time (s) | ",
      "bnmf time / RcppML time |\n", sep = "")
  cat("|---|---:|---:|---:|---:|\n")
  for (k in seq_along(rcppml_tols)) {
    cat("| RcppML, tol = ", format(rcppml_tols[k]), " | ", rc_iter[k], " | ",
        fmt_err(rc_err[k]), " | ", fmt(median(t_rc[, k])), " | |\n", sep = "")
    if (is.na(need[k])) {
      cat("| bnmf ICM to reach that error | not within ", max_sweeps,
          " sweeps (best ", fmt_err(min(err_path)), ") | | | |\n", sep = "")
    } else {
      cat("| bnmf ICM to reach that error | ", need[k], " (+ 10 start) | ",
          fmt_err(bn_err[k]), " | ", fmt(median(t_bn[, k])), " | **",
          fmt(median(t_bn[, k]) / median(t_rc[, k])), "** |\n", sep = "")
    }
  }
  cat("| bnmf ICM to its own convergence (tol = 1e-6) | ", nrow(conv$trace),
      " (+ 10 start) | ", fmt_err(conv_err), " | ", fmt(median(t_conv)),
      " | ", paste0(fmt(median(t_conv) / apply(t_rc, 2, median)), " (vs tol = ",
                    format(rcppml_tols), ")", collapse = "; "), " |\n", sep = "")
  cat("\nRelative error = ||X - WH||_F / ||X||_F (RcppML: W diag(d) H). Each ",
      "bnmf time includes its start (random init + 10 NNLS sweeps) and the R ",
      "front end; the sweeps bnmf needs come from the per-sweep errors of one ",
      "long run's `fit$trace` (", max_sweeps, " sweeps, tol = 0), and the ",
      "capped rerun reproduces that path (same seed).\n", sep = "")
} else {
  cat("\n(RcppML not available: ICM vs RcppML skipped)\n")
}

# GDSC IC50 (missing values): bnmf only. RcppML 0.3.7 cannot mask NA entries
# of a dense matrix (its mask_zeros works for sparse zeros only), so no
# like-for-like comparison is possible there.
if (file.exists(gdsc_path)) {
  G <- as.matrix(read.table(gdsc_path, na.strings = "nan"))
  t_g <- numeric(reps)
  for (r in seq_len(reps)) t_g[r] <- elapsed(gfit <- icm_flat(G, iter = 2000, tol = 1e-6))
  g_err <- rel_err(G, gfit$W %*% gfit$H)
  cat("\n### GDSC IC50 (", nrow(G), " x ", ncol(G), ", ", fmt(100 * mean(is.na(G)), 1),
      "% missing), bnmf ICM only, K = 20, flat prior\n\n", sep = "")
  cat("| run | sweeps | rel. error (observed entries) | time (s) |\n")
  cat("|---|---:|---:|---:|\n")
  cat("| bnmf ICM, masked, tol = 1e-6 | ", nrow(gfit$trace), " (+ 10 start) | ",
      fmt_err(g_err), " | ", fmt(median(t_g)), " |\n", sep = "")
  cat("\nRcppML 0.3.7 has no mask for NA entries of a dense matrix (`mask_zeros` ",
      "applies to sparse input only): not run on GDSC.\n", sep = "")
} else {
  cat("\n(", gdsc_path, " not found: GDSC part skipped)\n", sep = "")
}

# ---------------------------------------------------------------------------
# 2. Per-iteration cost: NMF::nmf(method = "lee") vs bnmf sweeps
# ---------------------------------------------------------------------------
# Differential timing (runs of n2 and n1 iterations; (t2 - t1) / (n2 - n1))
# removes set-up costs (seeding, bnmf's start, object construction).
if (have_nmf) {
  suppressPackageStartupMessages(requireNamespace("NMF"))
  n1 <- 10L
  n2 <- 40L
  reps_it <- max(reps, 5L)
  run_lee <- function(n) {
    NMF::nmf(X, K, method = "lee", seed = 1, nrun = 1, .options = "-p",
             .stop = NMF::nmf.stop.iteration(n))
  }
  run_gibbs <- function(n) {
    set.seed(1)
    bnmf(X, rank = K, method = "gibbs", iter = n, burnin = n - 1L, progress = FALSE)
  }
  run_icm <- function(n) icm_flat(X, iter = n, tol = 0)
  Xp <- pmax(X, 0) # the multiplicative updates need X >= 0
  run_brunet <- function(n) {
    NMF::nmf(Xp, K, method = "brunet", seed = 1, nrun = 1, .options = "-p",
             .stop = NMF::nmf.stop.iteration(n))
  }
  run_np <- function(n) {
    set.seed(1)
    bnmf(Xp, rank = K, method = "np", iter = n, tol = 0, progress = FALSE)
  }
  run_np_kl <- function(n) {
    set.seed(1)
    bnmf(Xp, rank = K, method = "np", loss = "kl", iter = n, tol = 0, progress = FALSE)
  }
  run_vb <- function(n) {
    set.seed(1)
    bnmf(X, rank = K, method = "vb", iter = n, tol = 0, progress = FALSE)
  }
  runners <- list(lee = run_lee, brunet = run_brunet, icm = run_icm, gibbs = run_gibbs,
                  vb = run_vb, np = run_np, np_kl = run_np_kl)
  chk <- run_lee(n1)
  stopifnot(NMF::niter(chk) == n1)
  per_it <- matrix(NA_real_, reps_it, length(runners),
                   dimnames = list(NULL, names(runners)))
  for (r in seq_len(reps_it)) {
    for (m in names(runners)) {
      a <- elapsed(runners[[m]](n1))
      b <- elapsed(runners[[m]](n2))
      per_it[r, m] <- (b - a) / (n2 - n1)
    }
  }
  pm <- apply(per_it, 2, median)
  ratio_icm <- per_it[, "icm"] / per_it[, "lee"]
  ratio_gibbs <- per_it[, "gibbs"] / per_it[, "lee"]
  cat("\n### Per-iteration time vs `NMF::nmf(X, 20, method = \"lee\")` (NMF ",
      format(utils::packageVersion("NMF")), ", sequential, ",
      "`.stop = nmf.stop.iteration(n)`)\n\n", sep = "")
  cat("| method | ms / iteration | ratio to NMF lee: median [min, max] over ",
      reps_it, " reps |\n", sep = "")
  cat("|---|---:|---:|\n")
  cat("| NMF lee (multiplicative updates) | ", fmt(1000 * pm[["lee"]], 1), " | 1 |\n", sep = "")
  cat("| bnmf ICM sweep (flat prior) | ", fmt(1000 * pm[["icm"]], 1), " | ",
      fmt(median(ratio_icm)), " [", fmt(min(ratio_icm)), ", ", fmt(max(ratio_icm)),
      "] |\n", sep = "")
  cat("| bnmf Gibbs sweep | ", fmt(1000 * pm[["gibbs"]], 1), " | ",
      fmt(median(ratio_gibbs)), " [", fmt(min(ratio_gibbs)), ", ",
      fmt(max(ratio_gibbs)), "] |\n", sep = "")
  row <- function(label, m, ref) {
    r <- per_it[, m] / per_it[, ref]
    cat("| ", label, " | ", fmt(1000 * pm[[m]], 1), " | ", fmt(median(r)), " [",
        fmt(min(r)), ", ", fmt(max(r)), "] (vs NMF ", ref, ") |\n", sep = "")
  }
  row("bnmf VB sweep", "vb", "lee")
  row("bnmf NP sweep, Euclidean (same updates as NMF lee)", "np", "lee")
  cat("| NMF brunet (multiplicative updates, KL) | ", fmt(1000 * pm[["brunet"]], 1),
      " | 1 (vs NMF brunet) |\n", sep = "")
  row("bnmf NP sweep, KL (same updates as NMF brunet)", "np_kl", "brunet")
  cat("\nPer iteration = (time of ", n2, " - time of ", n1, " iterations) / ",
      n2 - n1, ". NMF's lee iteration is one multiplicative update of W and H; ",
      "a bnmf sweep is an exact block update (ICM) or draw (Gibbs) of W, H and tau.\n",
      sep = "")
} else {
  cat("\n(NMF not available: per-iteration comparison skipped)\n")
}

cat("\nTotal benchmark time: ", fmt(proc.time()[["elapsed"]] - t_start, 0), " s\n",
    sep = "")
