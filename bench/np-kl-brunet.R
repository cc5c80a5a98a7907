# Per-iteration CPU time of bnmf's NP KL sweep against NMF's brunet (the same
# multiplicative updates), interleaved, (time of 60 - time of 10) / 50,
# 7 rounds; 1000 x 300, K = 10.   R_LIBS=<lib> Rscript bench/np-kl-brunet.R
suppressPackageStartupMessages({library(bnmf); library(NMF)})
set.seed(1); I <- 1000; J <- 300; K <- 10
X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(runif(I * J), I)
el <- function(e) { t0 <- sum(proc.time()[1:2]); force(e); sum(proc.time()[1:2]) - t0 }  # CPU time
br <- function(n) NMF::nmf(X, K, method = "brunet", seed = 1, nrun = 1, .options = "-p", .stop = NMF::nmf.stop.iteration(n))
np <- function(n) { set.seed(1); bnmf(X, rank = K, method = "np", loss = "kl", iter = n, tol = 0, progress = FALSE) }
r <- replicate(7, { a <- (el(br(60)) - el(br(10))) / 50; b <- (el(np(60)) - el(np(10))) / 50; c(a, b, b / a) })
print(round(r, 4)); cat("median ratio np/brunet", median(r[3, ]), "\n")
