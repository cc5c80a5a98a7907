# Gaussian ICM and VB by blocks of samples with missing entries: the time a
# sweep takes in memory and by blocks (this process), complete data beside
# the same data with 20% of the entries missing at random, masked and
# imputed; and how far the fits by blocks are from those in memory.
#   Rscript bench/blocks-missing.R [I J K blocks reps]
library(bnmf)
a <- as.numeric(commandArgs(TRUE))
I <- if (length(a) >= 1) a[1] else 400
J <- if (length(a) >= 2) a[2] else 600
K <- if (length(a) >= 3) a[3] else 10
nb <- if (length(a) >= 4) a[4] else 4
reps <- if (length(a) >= 5) a[5] else 3
iter <- 100
set.seed(1)
X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(rnorm(I * J), I)
Xna <- X
Xna[sample(length(X), round(0.2 * length(X)))] <- NA
init <- list(W = matrix(rexp(I * K), I), H = matrix(rexp(K * J), K), tau = 1)
fit <- function(X, method, missing, blocks) {
  ctl <- if (method == "icm") icm_control(missing = missing) else vb_control(missing = missing)
  set.seed(2)
  suppressWarnings(bnmf(X, K, method = method, init = init, control = ctl, iter = iter,
                        tol = 0, blocks = blocks, progress = FALSE))
}
ms <- function(X, method, missing, blocks) {
  t <- vapply(seq_len(reps), function(r) {
    system.time(fit(X, method, missing, blocks))[["elapsed"]]
  }, numeric(1))
  1000 * median(t) / iter
}
rows <- list()
for (method in c("icm", "vb")) for (missing in c("mask", "impute")) {
  for (data in c("complete", "missing")) {
    if (data == "complete" && missing == "impute") next
    Z <- if (data == "complete") X else Xna
    mem <- ms(Z, method, missing, NULL)
    blk <- ms(Z, method, missing, nb)
    d <- if (data == "missing") {
      f0 <- fit(Z, method, missing, NULL)
      f1 <- fit(Z, method, missing, nb)
      max(abs(f1$W - f0$W)) / max(f0$W)
    } else NA
    rows[[length(rows) + 1L]] <- data.frame(method, data,
      missing = if (data == "complete") "-" else missing, memory_ms = round(mem, 1),
      blocks_ms = round(blk, 1), ratio = round(blk / mem, 2), W_rel_diff = signif(d, 2))
  }
}
cat(sprintf("%d x %d, K = %d, %d blocks, %d sweeps, median of %d\n", I, J, K, nb, iter, reps))
print(do.call(rbind, rows), row.names = FALSE)
