# The cost of one NMTF sweep (Gibbs, ICM, VB) at I = J = 1000, K = L = 10,
# against the BLAS floor of the products a sweep cannot avoid, measured in
# the same process with rounds interleaved; and, when the reference code's
# port is available, one iteration of the reference Python NMTF Gibbs sampler
# on the same data.
#
# Run from the package root with the package installed, e.g.
#   mkdir -p /tmp/bench/lib && R CMD INSTALL -l /tmp/bench/lib .
#   R_LIBS=/tmp/bench/lib Rscript bench/bench-nmtf.R
# Environment: BNMF_BENCH_ROUNDS (default 7); BNMF_NMTF_PYREF, a directory
# holding bnmtf_gibbs_iter.py (a numpy port of the NMTF Gibbs iteration of
# ThomasBrouwer/BNMTF_ARD, code/models/bnmtf_gibbs.py, kept outside the
# package) and BNMF_PYTHON (default /usr/bin/python3) with numpy; without
# them the comparison with the reference is skipped.
#
# The floor. A sweep updates F given (S, G), then S, then G given (F, S),
# then tau. Every product with X is a pass over the I x J entries; a sweep
# needs two of them and no more:
#   X G     (I x J times J x L): the right side of F's rows is X G S' (the
#           I x K product X (S G')' costs the same but X G is also S's);
#   X' F    (J x I times I x K): after F has changed, the right side of G's
#           rows is X' F S, and S's right side F' (X G) reuses X G (S comes
#           after F and before G, so G is unchanged);
# the Gram matrices (F'F, G'G, S G'G S', ...) are O((I + J) K L), and the
# residual sum of squares for tau follows from them and from F'(X G), so
# nothing else touches all I J entries. The floor is therefore the time of
# X %*% G plus crossprod(X, F) (R's BLAS dgemm), with these shapes.
#
# Sweep time: the internal sweep routine (bnmf:::engine_nmtf_sweeps(), as
# bench-sweep.R does for NMF) on states built once by nmtf_new_state(), so
# that nothing but the sweeps is timed; m sweeps per call.
suppressPackageStartupMessages(library(bnmf))
rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "9"))
m <- 4L
set.seed(1000)
I <- 1000; J <- 1000; K <- 10; L <- 10
F0 <- matrix(rexp(I * K), I, K)
S0 <- matrix(rexp(K * L), K, L)
G0 <- matrix(rexp(J * L), J, L)
X <- F0 %*% S0 %*% t(G0) + matrix(rnorm(I * J), I, J)
# A state near the posterior: a few Gibbs sweeps from the truth.
rate <- (K * L / mean(X))^(1 / 3)
prior <- list(rate = c(F = rate, S = rate, G = rate), alpha = 1, beta = 1)
state <- bnmf:::nmtf_sweeps(X, list(F = F0, S = S0, G = G0, tau = 1, lambda = NULL),
                            prior, 5L, rule = "gibbs")
elapsed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  force(expr)
  proc.time()[["elapsed"]] - t0
}
data <- bnmf:::prepare_data(X, K)
cp <- list(rate = rep(rate, 3), alpha = 1, beta = 1, ard = numeric())
states <- lapply(c(gibbs = "gibbs", icm = "icm", vb = "vb"), function(rule) {
  vb <- if (rule == "vb") list(tau_rate = (1 + data$n_obs / 2) / state$tau)
  bnmf:::nmtf_new_state(X, data, state$F, state$S, state$G, state$tau, vb = vb)
})
sweep_time <- function(rule) {
  elapsed(bnmf:::engine_nmtf_sweeps(states[[rule]], data, cp, m, rule = rule)) / m
}
floor_time <- function() {
  elapsed({
    for (r in 1:m) {
      XG <- X %*% state$G
      XtF <- crossprod(X, state$F)
    }
  }) / m
}
res <- t(vapply(seq_len(rounds), function(r) {
  c(floor = floor_time(), gibbs = sweep_time("gibbs"), icm = sweep_time("icm"),
    vb = sweep_time("vb"))
}, numeric(4)))

fmt_range <- function(x) sprintf("%.1f (%.1f-%.1f)", 1000 * stats::median(x),
                                 1000 * min(x), 1000 * max(x))
cat(sprintf("I = J = %d, K = L = %d, dense X; %d rounds interleaved, %d sweeps per round\n\n",
            I, K, rounds, m))
cat("| what | ms per sweep, median (range) | ratio to the floor, median (range) |\n")
cat("|---|---|---|\n")
cat(sprintf("| floor: X G + X' F (dgemm) | %s | 1 |\n", fmt_range(res[, "floor"])))
for (rule in c("gibbs", "icm", "vb")) {
  ratio <- res[, rule] / res[, "floor"]
  cat(sprintf("| %s sweep | %s | %.2f (%.2f-%.2f) |\n", rule, fmt_range(res[, rule]),
              stats::median(ratio), min(ratio), max(ratio)))
}

py_dir <- Sys.getenv("BNMF_NMTF_PYREF")
python <- Sys.getenv("BNMF_PYTHON", "/usr/bin/python3")
if (nzchar(py_dir) && file.exists(file.path(py_dir, "bnmtf_gibbs_iter.py"))) {
  d <- file.path(tempdir(), "nmtf-pyref")
  dir.create(d, showWarnings = FALSE)
  writeBin(as.vector(X), file.path(d, "X.bin"))
  writeBin(as.vector(state$F), file.path(d, "F.bin"))
  writeBin(as.vector(state$S), file.path(d, "S.bin"))
  writeBin(as.vector(state$G), file.path(d, "G.bin"))
  reps <- as.integer(Sys.getenv("BNMF_PYREF_ITER", "2"))
  out <- system2(python, c(file.path(py_dir, "bnmtf_gibbs_iter.py"), d, I, J, K, L, reps),
                 stdout = TRUE)
  py <- as.numeric(out)
  g <- stats::median(res[, "gibbs"])
  cat(sprintf("\nReference Python NMTF Gibbs (numpy port), one iteration: %s s (%d iterations: %s)\n",
              format(signif(stats::median(py), 3)), length(py),
              paste(format(signif(py, 3)), collapse = ", ")))
  cat(sprintf("bnmf Gibbs sweep: %.1f ms; the reference iteration takes %.0f times as long\n",
              1000 * g, stats::median(py) / g))
} else {
  cat("\n(The reference Python comparison is skipped: set BNMF_NMTF_PYREF.)\n")
}
