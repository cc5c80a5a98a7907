# Time of the ONVI step (onvi_offer()) and of NVI sweeps (nvi_fit()) at the
# AML size (5000 x 38, R = 3) and at 1000 x 1000, R = 5, on synthetic data.
# Run: R_LIBS=<lib> Rscript bench/nvi-timing.R   (prints CPU seconds)
library(bnmf)
ns <- asNamespace("bnmf")
cpu <- function(expr) {
  t <- system.time(expr)
  t[["user.self"]] + t[["sys.self"]]
}
for (sz in list(c(5000, 38, 3), c(1000, 1000, 5))) {
  set.seed(1)
  I <- sz[1]; J <- sz[2]; R <- sz[3]
  W0 <- matrix(rexp(I * R), I, R); H0 <- matrix(rexp(R * J), R, J)
  X <- W0 %*% H0 + matrix(rnorm(I * J, sd = 0.5), I, J)
  t_tg <- cpu(tg <- ns$nvi_target(X, R))
  fit <- ns$nvi_first_fits(X, R, 1)[[1]]
  th <- c(fit$W, fit$H)
  tu <- ns$nvi_target(X, R, "uniform", epsilon = max(abs(X - fit$W %*% fit$H)) * 1.5)
  for (tgt in list(tg, tu)) for (M in c(1, 10, 50)) {
    # M components near theta (a worst case for the dropping step).
    st <- ns$onvi_offer(ns$onvi_new(tgt), th, tgt)$state
    D <- tgt$D
    mu <- pmax(th + matrix(rnorm(D * M, sd = 1e-3), D), 0)
    st$mu <- mu; st$w <- rep(1 / M, M); st$sigma2 <- rep(st$sigma2[1], M)
    st$f <- apply(mu, 2, tgt$logp); st$t <- apply(mu, 2, tgt$hess_trace)
    st$d2 <- ns$nvi_dist2(mu)
    st$elbo <- ns$nvi_elbo_cached(st, D)
    cand <- pmax(th + rnorm(D, sd = 1e-3), 0)
    tt <- cpu(for (k in 1:5) o <- ns$onvi_offer(st, cand, tgt)) / 5
    cat(sprintf("%d x %d, R = %d, %s, M = %d: %.3f s per offer (accepted %s, %d dropped)\n",
                I, J, R, tgt$likelihood, M, tt, o$accepted, o$state$trace$dropped[nrow(o$state$trace)]))
  }
  cat(sprintf("%d x %d: nvi_target() with its first NNLS fit: %.2f s\n", I, J, t_tg))
  cat(sprintf("%d x %d: nvi_fit(M = 4), 5 sweeps: %.2f s\n", I, J, cpu(ns$nvi_fit(tg, 4, NULL, 5))))
}
