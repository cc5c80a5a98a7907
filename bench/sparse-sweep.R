# Cost of a Gibbs sweep on sparse input against the sparse floor, and its
# cost against the number of non-zeros.
#
#   R_LIBS=<lib> Rscript bench/sparse-sweep.R [rounds = 5] [I = 100000] [J = 5000] [K = 10]
#
# X is a dgCMatrix of I x J with a share `density` of stored positive
# values (W0 H0 plus noise at random positions), at densities 0.0025, 0.005,
# 0.01 and 0.02. The floor is the two products a sweep cannot avoid on
# sparse X, X %*% t(H) and crossprod(W, X) (Matrix's sparse-dense
# products), in this process. Per round and density: 4 alternations of
# (floor once, 2 Gibbs sweeps), CPU time (user + system of this process, so
# that other work on the machine does not count). The sweeps go through
# the engine's internal wrapper (engine_sweeps()) on a chain state, as
# bench/bench-sweep.R does; keep = "summary" moments are not accumulated
# (burn-in sweeps). Reported: per density, the median (range) over rounds
# of the sweep's time, the floor's and their ratio; then the least-squares
# line of the sweep's median time against nnz (intercept and slope).
suppressPackageStartupMessages({
  library(bnmf)
  library(Matrix)
})
args <- as.numeric(commandArgs(TRUE))
rounds <- if (length(args) >= 1 && !is.na(args[1])) args[1] else 5
I <- if (length(args) >= 2 && !is.na(args[2])) args[2] else 100000
J <- if (length(args) >= 3 && !is.na(args[3])) args[3] else 5000
K <- if (length(args) >= 4 && !is.na(args[4])) args[4] else 10
densities <- c(0.0025, 0.005, 0.01, 0.02)
cpu <- function(expr) {
  t0 <- proc.time()
  force(expr)
  t1 <- proc.time() - t0
  t1[["user.self"]] + t1[["sys.self"]]
}
set.seed(1)
W0 <- matrix(rexp(I * K), I, K)
H0 <- matrix(rexp(K * J), K, J)
me <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1L])
source(file.path(dirname(me), "chain-setup.R"))
make_chain <- function(X) {
  ch <- bench_chain(X, K, "gibbs", masked = FALSE)
  run <- function(n) {
    invisible(bnmf:::engine_sweeps(ch$state, ch$data, ch$prior, n, rule = "gibbs",
                                   masked = FALSE, accumulate = FALSE))
  }
  run(2L)
  run
}
Wf <- matrix(rexp(I * K), I, K)
Hf <- matrix(rexp(K * J), K, J)
res <- list()
for (dens in densities) {
  X <- bench_sparse_x(W0, H0, dens)
  run <- make_chain(X)
  floor_once <- function() cpu({
    a <- X %*% t(Hf)
    b <- crossprod(Wf, X)
  })
  invisible(floor_once())
  fl <- sw <- numeric(rounds)
  for (r in seq_len(rounds)) {
    f <- s <- 0
    for (a in 1:4) {
      invisible(gc())
      f <- f + floor_once()
      s <- s + cpu(run(2L))
    }
    fl[r] <- f / 4
    sw[r] <- s / 8
  }
  res[[length(res) + 1]] <- data.frame(density = dens, nnz = length(X@x), floor = median(fl),
                                       floor_lo = min(fl), floor_hi = max(fl),
                                       sweep = median(sw), sweep_lo = min(sw),
                                       sweep_hi = max(sw), ratio = median(sw / fl),
                                       ratio_lo = min(sw / fl), ratio_hi = max(sw / fl))
  rm(X, run)
  invisible(gc())
}
tab <- do.call(rbind, res)
fit <- stats::lm(sweep ~ nnz, data = tab)
cat("## Gibbs sweep on sparse input (", I, " x ", J, ", K = ", K, ")\n\n", sep = "")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "; BLAS `", unname(extSoftVersion()["BLAS"]),
    "`; load ", paste(readLines("/proc/loadavg", warn = FALSE), collapse = ""), "\n", sep = "")
cat("- ", rounds, " rounds; CPU seconds; median (range) over rounds\n\n", sep = "")
cat("| density | nnz | sweep (s) | floor (s) | sweep / floor |\n|---|---:|---|---|---|\n")
for (k in seq_len(nrow(tab))) {
  t <- tab[k, ]
  cat(sprintf("| %g | %.3g | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.2f (%.2f-%.2f) |\n",
              t$density, t$nnz, t$sweep, t$sweep_lo, t$sweep_hi, t$floor, t$floor_lo,
              t$floor_hi, t$ratio, t$ratio_lo, t$ratio_hi))
}
cf <- stats::coef(fit)
cat(sprintf("\nsweep (s) = %.4f + %.3g * nnz (least squares over the %d densities)\n",
            cf[1], cf[2], nrow(tab)))
