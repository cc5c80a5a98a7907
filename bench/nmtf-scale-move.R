## bench/nmtf-scale-move.R: what NMTF Gibbs's scale moves (F[, k] c,
## S[k, ] / c and G[, l] c, S[, l] / c, after every sweep) do to the mixing
## of the factors' scales: the toy of Brouwer et al. (100 x 80, K = L = 5,
## unit noise), 3000 sweeps from the truth with and without the moves
## (bnmf:::nmtf_sweeps(scale = )), the first 500 dropped; effective sample
## sizes (initial positive sequence) of log sum F[, 1], log S[1, 1] and
## log sum G[, 2].
##
##   R_LIBS=LIB Rscript bench/nmtf-scale-move.R
suppressPackageStartupMessages(library(bnmf))
set.seed(1); I<-100;J<-80;K<-5;L<-5
F <- matrix(rexp(I*K),I,K); S <- matrix(rexp(K*L),K,L); G <- matrix(rexp(J*L),J,L)
X <- F%*%S%*%t(G) + matrix(rnorm(I*J),I,J)
rate <- (K*L/mean(X))^(1/3)
prior <- list(rate = c(F = rate, S = rate, G = rate), alpha = 1, beta = 1e-4*mean(X^2))
ess <- function(x) { n <- length(x); x <- x - mean(x); v <- sum(x^2)/n; if (v == 0) return(NA)
  ac <- sapply(1:200, function(l) sum(x[1:(n-l)]*x[(1+l):n])/n/v); s <- 0
  for (l in seq(1, 199, by = 2)) { p <- ac[l] + ac[l+1]; if (p < 0) break; s <- s + p }
  n / (1 + 2*s) }
for (scale in c(FALSE, TRUE)) {
  set.seed(2); st <- list(F=F, S=S, G=G, tau=1)
  n <- 3000; tr <- matrix(NA, n, 3)
  t0 <- proc.time()[[3]]
  for (i in 1:n) { st <- bnmf:::nmtf_sweeps(X, st, prior, 1, "gibbs", scale = scale)
    tr[i,] <- c(log(sum(st$F[,1])), log(st$S[1,1]), log(sum(st$G[,2]))) }
  el <- proc.time()[[3]] - t0
  tr <- tr[-(1:500),]
  cat(sprintf("scale %s: ESS of log sum F[,1] %.0f, log S[1,1] %.0f, log sum G[,2] %.0f of %d (%.1fs)\n", scale, ess(tr[,1]), ess(tr[,2]), ess(tr[,3]), nrow(tr), el))
}
