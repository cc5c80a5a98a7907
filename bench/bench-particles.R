# Particle fits: (1) the cost of the Stein kernel matrix and the weights
# against the cost of the M scores, (2) solver iterations from Q-Transform
# starts against random starts. Writes markdown to stdout.
#
#   R_LIBS=/tmp/bench/lib Rscript bench/bench-particles.R
#
# Environment: BNMF_BENCH_ROUNDS (default 3) rounds of the timing;
# BNMF_BENCH_CANDIDATES (default 10) candidates per kind of start at the
# large size.
suppressPackageStartupMessages(library(bnmf))
rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "3"))
n_cand <- as.integer(Sys.getenv("BNMF_BENCH_CANDIDATES", "10"))

synthetic <- function(I, J, R, noise, seed) {
  set.seed(seed)
  W0 <- matrix(rexp(I * R), I, R)
  H0 <- matrix(rexp(R * J), R, J)
  X <- W0 %*% H0
  pmax(X + matrix(rnorm(I * J, sd = noise * sd(X)), I, J), 0)
}

cat("# Particle fits\n\n")
cat(sprintf("R %s, BLAS: %s\n\n", getRversion(), basename(extSoftVersion()[["BLAS"]])))

## (1) kernel matrix + weights vs scores ------------------------------------
I <- 1000; J <- 500; R <- 10; M <- 100
X <- synthetic(I, J, R, 0.1, 1)
set.seed(2)
# The costs do not depend on convergence: the particles are random starts
# moved to the simplex.
parts <- lapply(bnmf:::particle_starts(X, R, M, "random"),
                function(s) bnmf:::to_simplex(s$W, s$H))
lik <- silf()
sumsq <- sum(X^2)
kp <- bnmf:::stein_kernel_par()
res <- matrix(NA_real_, rounds, 2, dimnames = list(NULL, c("scores", "kernel_weights")))
for (r in seq_len(rounds)) {
  t0 <- proc.time()[[3]]
  grads <- lapply(parts, function(p) bnmf:::objective_grad(X, p$W, p$H, "frobenius", sumsq))
  obj <- vapply(grads, function(g) g$f, 1)
  lik$epsilon <- 1.2 * max(obj)
  scores <- lapply(grads, bnmf:::particle_score, likelihood = lik, rate = 1)
  res[r, 1] <- proc.time()[[3]] - t0
  t0 <- proc.time()[[3]]
  K <- bnmf:::particle_kernel_matrix(parts, scores, kp)
  qp <- bnmf:::simplex_weights(K)
  res[r, 2] <- proc.time()[[3]] - t0
}
cat(sprintf("## Stein kernel matrix and weights vs scores (M = %d, I = %d, J = %d, R = %d)\n\n",
            M, I, J, R))
cat("| round | scores (s) | kernel matrix + weights (s) | ratio |\n|---|---|---|---|\n")
for (r in seq_len(rounds)) {
  cat(sprintf("| %d | %.2f | %.2f | %.2f |\n", r, res[r, 1], res[r, 2], res[r, 2] / res[r, 1]))
}
cat(sprintf("\nMedian ratio: %.2f (QP: %d active-set steps, KKT residual %.1e).\n\n",
            median(res[, 2] / res[, 1]), qp$iterations, qp$kkt))

## (2) solver iterations: Q-Transform vs random starts ----------------------
iter_table <- function(X, R, M, label) {
  out <- list()
  for (init in c("qtransform", "random")) {
    set.seed(3)
    starts <- bnmf:::particle_starts(X, R, M, init)
    rel0 <- vapply(starts, function(s) sqrt(sum((X - s$W %*% s$H)^2) / sum(X^2)), 1)
    t0 <- proc.time()[[3]]
    sol <- lapply(starts, function(s) bnmf:::solve_nnls_candidate(X, s$W, s$H, 1e-6, 1000L))
    el <- proc.time()[[3]] - t0
    out[[init]] <- data.frame(
      init = init,
      iterations = vapply(sol, function(s) s$iterations, 1),
      converged = vapply(sol, function(s) s$converged, TRUE),
      rel_error0 = rel0,
      rel_error = vapply(sol, function(s) sqrt(sum((X - s$W %*% s$H)^2) / sum(X^2)), 1),
      seconds = el / M
    )
  }
  q <- out$qtransform; rr <- out$random
  cat(sprintf("### %s (M = %d per kind of start)\n\n", label, M))
  cat("| start | mean iterations | median | converged | start rel. error | final rel. error (median) | s per candidate |\n|---|---|---|---|---|---|---|\n")
  for (d in list(q, rr)) {
    cat(sprintf("| %s | %.1f | %.0f | %d/%d | %.3f | %.6f | %.2f |\n", d$init[1], mean(d$iterations),
                median(d$iterations), sum(d$converged), nrow(d), median(d$rel_error0),
                median(d$rel_error), d$seconds[1]))
  }
  cat(sprintf("\nRatio of mean iterations, Q-Transform / random: **%.2f**\n\n",
              mean(q$iterations) / mean(rr$iterations)))
}
cat("## Solver iterations to convergence (tol = 1e-6): Q-Transform vs random starts\n\n")
iter_table(leukemia, 3, 40, "leukemia, 500 x 128, rank 3 (= the transfer rank: no padding)")
iter_table(leukemia, 5, 40, "leukemia, 500 x 128, rank 5")
iter_table(leukemia, 10, 20, "leukemia, 500 x 128, rank 10")
iter_table(synthetic(I, J, R, 0.01, 4), R, n_cand,
           sprintf("synthetic %d x %d, rank %d, noise sd 1%% of sd(WH)", I, J, R))
iter_table(synthetic(I, J, R, 0.1, 5), R, n_cand,
           sprintf("synthetic %d x %d, rank %d, noise sd 10%% of sd(WH)", I, J, R))
