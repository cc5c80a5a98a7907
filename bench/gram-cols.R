# W'W for a tall W: bnmf's own kernel (bnmf_gram_cols, every H update's
# Gram matrix) against the BLAS's dsyrk (R's crossprod(W)), interleaved.
#
#   Rscript bench/gram-cols.R [rounds = 5]              (R's default BLAS)
#   bench/openblas.sh Rscript bench/gram-cols.R 5       (OpenBLAS, 1 thread)
#
# Each round times a batch of calls of each, in turn, for each shape; the
# table gives ms a call, median (range) over rounds, and the ratio own /
# dsyrk of each round.
suppressPackageStartupMessages(library(bnmf))
args <- commandArgs(TRUE)
rounds <- if (length(args)) as.integer(args[1]) else 5L
shapes <- list(c(1e5, 10), c(1e5, 20), c(1e5, 40), c(1e5, 64), c(2e4, 100), c(1e4, 100),
               c(1000, 20))
own <- function(W) .Call(bnmf:::C_gram_cols, W)
per_call <- function(f, W, n) 1000 * system.time(for (i in seq_len(n)) f(W))[["elapsed"]] / n
fmt <- function(x, d = 3) sprintf(paste0("%.", d, "f (%.", d, "f-%.", d, "f)"),
                                  stats::median(x), min(x), max(x))
cat("- BLAS:", extSoftVersion()[["BLAS"]], "\n")
cat("- ", format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), "; ", rounds,
    " rounds, the two in turn\n\n", sep = "")
cat("| W | own, ms | dsyrk (crossprod), ms | own / dsyrk |\n|---|---:|---:|---:|\n")
set.seed(1)
for (d in shapes) {
  W <- matrix(runif(d[1] * d[2]), d[1], d[2])
  stopifnot(max(abs(own(W) - crossprod(W))) < 1e-12 * max(crossprod(W)))
  n <- max(5L, as.integer(4e9 / (d[1] * d[2]^2)))  # about 0.2 s a batch
  a <- b <- numeric(rounds)
  for (r in seq_len(rounds)) {
    if (r %% 2) {
      a[r] <- per_call(own, W, n)
      b[r] <- per_call(crossprod, W, n)
    } else {
      b[r] <- per_call(crossprod, W, n)
      a[r] <- per_call(own, W, n)
    }
  }
  cat(sprintf("| %g x %g | %s | %s | %s |\n", d[1], d[2], fmt(a), fmt(b), fmt(a / b, 2)))
}
