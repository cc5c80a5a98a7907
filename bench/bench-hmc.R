# HMC fits (bnmf(method = "hmc")): the cost of one leapfrog step and of one
# whole transition (L leapfrog steps, Metropolis correction, redraw of the
# column scales) as ratios to the cost of one evaluation of the potential
# and its gradient, all measured in one run. Also the share of the gradient
# that is the objective's own gradient (objective_grad()). Writes markdown to
# stdout.
#
#   R_LIBS=/tmp/bench/lib Rscript bench/bench-hmc.R
#
# Environment: BNMF_BENCH_ROUNDS (default 3) rounds of the timing (the
# fastest is reported).
suppressPackageStartupMessages(library(bnmf))
rounds <- as.integer(Sys.getenv("BNMF_BENCH_ROUNDS", "3"))

synthetic <- function(I, J, R, noise, seed) {
  set.seed(seed)
  W0 <- matrix(rexp(I * R), I, R)
  H0 <- matrix(rexp(R * J), R, J)
  X <- W0 %*% H0
  pmax(X + matrix(rnorm(I * J, sd = noise * sd(X)), I, J), 0)
}

# Seconds per call of each function in `fs` (called n[i] times per round);
# the rounds interleave the functions, so that a change of the machine's
# load hits all of them alike; the fastest round of each is reported.
per_call <- function(fs, n) {
  t <- matrix(NA_real_, rounds, length(fs))
  for (r in seq_len(rounds)) {
    for (i in seq_along(fs)) {
      t0 <- proc.time()[[3L]]
      for (k in seq_len(n[i])) fs[[i]]()
      t[r, i] <- (proc.time()[[3L]] - t0) / n[i]
    }
  }
  apply(t, 2L, min)
}

cat("# HMC: cost of a leapfrog step\n\n")
cat(sprintf("R %s, BLAS: %s\n\n", getRversion(), basename(extSoftVersion()[["BLAS"]])))
cat("| I x J, rank | objective | gradient (ms) | objective_grad share | leapfrog step / gradient | transition (L = 15) / gradient |\n")
cat("|---|---|---|---|---|---|\n")

sizes <- list(c(40, 15, 2), c(200, 50, 5), c(1000, 500, 10), c(nrow(leukemia), ncol(leukemia), 3))
for (sz in sizes) {
  I <- sz[1]; J <- sz[2]; R <- sz[3]
  X <- if (I == nrow(leukemia) && J == ncol(leukemia)) leukemia else synthetic(I, J, R, 0.1, 1)
  for (obj in c("frobenius", "kl")) {
    set.seed(2)
    W <- matrix(rexp(I * R), I, R)
    H <- matrix(rexp(R * J), R, J)
    s <- bnmf:::to_simplex(W, H)
    f0 <- bnmf:::nmf_objective(X, s$W, s$H, obj)
    m <- bnmf:::hmc_model(X, R, silf(epsilon = 1.2 * f0, objective = obj), rate = 1)
    q <- c(s$W * I, s$H)
    ev <- bnmf:::hmc_eval(q, m)
    minv <- rep(1, length(q))
    p <- rnorm(length(q)) * 1e-3
    n <- max(3L, round(0.25 / max(1e-5, system.time(bnmf:::hmc_eval(q, m))[[3L]])))
    n <- min(n, 2000L)
    tt <- per_call(list(
      grad = function() bnmf:::hmc_eval(q, m),
      obj = function() bnmf:::objective_grad(X, s$W, s$H, obj, m$sumsq),
      leapfrog = function() bnmf:::hmc_leapfrog(q, p, ev, m, 1e-4, 10L, minv),
      transition = function() {
        st <- bnmf:::hmc_transition(q, ev, m, 1e-4, 15L, minv)
        bnmf:::hmc_rescale(st$q, st$ev, m)
      }), c(n, n, max(1L, n %/% 10L), max(1L, n %/% 15L)))
    t_grad <- tt[1L]; t_obj <- tt[2L]; t_lf <- tt[3L] / 10; t_tr <- tt[4L]
    cat(sprintf("| %d x %d, %d | %s | %.3g | %.2f | %.2f | %.1f |\n", I, J, R, obj,
                1e3 * t_grad, t_obj / t_grad, t_lf / t_grad, t_tr / t_grad))
  }
}
