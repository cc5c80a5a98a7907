# One NMTF sweep (Gibbs, ICM, VB) against the two products of X a sweep cannot
# avoid, X G and F' X (both as N,N dgemm), at I = J = 1000, K = L = 10, in
# one process. Run: Rscript bench/nmtf-floor.R (with bnmf installed).
library(bnmf)
set.seed(1)
I <- 1000; J <- 1000; K <- 10; L <- 10
F <- matrix(rexp(I*K), I); S <- matrix(rexp(K*L), K); G <- matrix(rexp(J*L), J)
X <- F %*% S %*% t(G) + matrix(rnorm(I*J), I)
Ft <- t(F)
data <- bnmf:::prepare_data(X, K)
prior <- list(rate = c(1, 1, 1), alpha = 1, beta = 1, ard = numeric())
n <- 20
for (rep in 1:2) {
floor_t <- system.time(for (t in 1:n) { a <- X %*% G; b <- Ft %*% X })[[3]] / n
cat("floor (X %*% G + t(F) %*% X, both N,N dgemm) per sweep:", floor_t, "\n")
for (rule in c("gibbs", "icm", "vb")) {
  vb <- if (rule == "vb") list(tau_rate = 1)
  st <- bnmf:::nmtf_new_state(X, data, F, S, G, 1, vb = vb)
  t <- system.time(bnmf:::engine_nmtf_sweeps(st, data, prior, n, rule = rule))[[3]] / n
  cat(rule, "per sweep", t, "ratio", round(t / floor_t, 2), "\n")
}
}
