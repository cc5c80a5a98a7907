## bench/nmtf-toy.R: NMTF on the toy of Brouwer, Frellsen & Lio (section 4.1:
## I = 100, J = 80, K = L = 5, unit-mean exponential F, S, G, unit Gaussian
## noise), every method, and NMTF ICM at (K, K) against NMF ICM at rank K on
## a near-noiseless rank-K matrix; one or more installed builds, each in its
## own process.
##
##   Rscript bench/nmtf-toy.R [runs] LIB [LIB ...] [--init=kmeans] [--chains=n]
##
## Toy: run r draws its own data (seed r) and sets 10% of the entries NA
## (held out); the fit uses the defaults of bnmf() but for tol = 0 and the
## sweeps below (as in the paper's Figure 3, 20 runs). Train MSE: on the
## observed entries (the noise variance 1 is the paper's level: all four
## methods reach it); held-out MSE: on the NA entries. NP gets pmax(X, 0) and
## is scored on X. Prints mean (median; max) over the runs, and the seconds
## per fit (mean).
## NMF vs NMTF: X = W H + N(0, 0.01^2), W 100 x K, H K x 80 unit
## exponentials, K = 3 and 5, seeds 1-5; relative error ||X - fitted||_F /
## ||X||_F of bnmf(X, rank = K, method = "icm") and
## bnmf(X ~ nmtf(K, K), method = "icm"), both with the defaults.
args <- commandArgs(TRUE)
if (length(args) >= 1L && args[1] == "--child") {
  suppressPackageStartupMessages(library(bnmf, lib.loc = args[2]))
  runs <- as.integer(args[3])
  extra <- if (length(args) > 3L) eval(parse(text = paste0("list(", args[4], ")"))) else list()
  sweeps <- list(gibbs = list(iter = 1000, burnin = 500), vb = list(iter = 1000),
                 icm = list(iter = 1000), np = list(iter = 3000))
  out <- list()
  for (m in names(sweeps)) {
    res <- vapply(seq_len(runs), function(r) {
      set.seed(r)
      F <- matrix(rexp(100 * 5), 100, 5); S <- matrix(rexp(25), 5, 5)
      G <- matrix(rexp(80 * 5), 80, 5)
      X <- F %*% S %*% t(G) + matrix(rnorm(8000), 100, 80)
      test <- sample(8000, 800)
      Xtr <- if (m == "np") pmax(X, 0) else X
      Xtr[test] <- NA
      set.seed(1000 + r)
      t0 <- proc.time()[["elapsed"]]
      fit <- suppressWarnings(do.call(bnmf, c(list(Xtr ~ nmtf(5, 5), method = m, tol = 0,
                                                   progress = FALSE), sweeps[[m]], extra)))
      sec <- proc.time()[["elapsed"]] - t0
      P <- fitted(fit)
      c(train = mean((P[-test] - X[-test])^2), test = mean((P[test] - X[test])^2), sec = sec)
    }, numeric(3))
    out[[m]] <- res
  }
  rel <- function(fit, X) sqrt(sum((fitted(fit) - X)^2) / sum(X^2))
  cmp <- NULL
  for (K in c(3L, 5L)) for (seed in 1:5) {
    set.seed(seed)
    W <- matrix(rexp(100 * K), 100, K); H <- matrix(rexp(K * 80), K, 80)
    X <- W %*% H + matrix(rnorm(8000, sd = 0.01), 100, 80)
    set.seed(10 + seed)
    a <- suppressWarnings(bnmf(X, rank = K, method = "icm", progress = FALSE))
    set.seed(10 + seed)
    b <- suppressWarnings(do.call(bnmf, c(list(X ~ nmtf(K, K), method = "icm", progress = FALSE),
                                          extra)))
    cmp <- rbind(cmp, c(K = K, seed = seed, nmf = rel(a, X), nmtf = rel(b, X)))
  }
  saveRDS(list(toy = out, cmp = cmp), args[5])
  quit(save = "no")
}
opts <- grepl("^--", args)
flags <- args[opts]
args <- args[!opts]
runs <- if (length(args) && grepl("^[0-9]+$", args[1])) as.integer(args[1]) else 20L
libs <- if (length(args) && grepl("^[0-9]+$", args[1])) args[-1] else args
if (!length(libs)) stop("usage: Rscript bench/nmtf-toy.R [runs] LIB [LIB ...] [--init=kmeans] [--chains=n]")
extra <- paste(c(if (any(grepl("^--init=", flags))) sprintf("init = \"%s\"", sub("^--init=", "", flags[grepl("^--init=", flags)])),
                 if (any(grepl("^--chains=", flags))) sprintf("chains = %s", sub("^--chains=", "", flags[grepl("^--chains=", flags)]))),
               collapse = ", ")
rscript <- file.path(R.home("bin"), "Rscript")
cat(sprintf("BLAS %s; %s; %d runs; extra arguments: %s\n\n", extSoftVersion()[["BLAS"]],
            format(Sys.time(), "%Y-%m-%d %H:%M %Z"), runs, if (nzchar(extra)) extra else "none"))
res <- lapply(libs, function(lib) {
  f <- tempfile(fileext = ".rds")
  system2(rscript, c("bench/nmtf-toy.R", "--child", lib, runs, shQuote(extra), f))
  readRDS(f)
})
fmt <- function(v) sprintf("%.3f (%.3f; %.3f)", mean(v), stats::median(v), max(v))
cat("Toy, I = 100, J = 80, K = L = 5, 10% held out: mean (median; max) over the runs\n\n")
cat("| method | build | train MSE | held-out MSE | paper (train) | s per fit |\n|---|---|---:|---:|---:|---:|\n")
for (m in names(res[[1]]$toy)) for (b in seq_along(libs)) {
  r <- res[[b]]$toy[[m]]
  cat(sprintf("| %s | %s | %s | %s | 1.0 | %.2f |\n", m, basename(libs[b]), fmt(r["train", ]),
              fmt(r["test", ]), mean(r["sec", ])))
}
cat("\nICM on X = W H + N(0, 0.01^2) (100 x 80, rank K): relative error, NMF at K vs NMTF at (K, K)\n\n")
cat("| K | seed |", paste(sprintf("NMF, %s | NMTF, %s", basename(libs), basename(libs)), collapse = " | "),
    "|\n|---|---|", paste(rep("---:|---:", length(libs)), collapse = "|"), "|\n", sep = "")
for (i in seq_len(nrow(res[[1]]$cmp))) {
  cat(sprintf("| %d | %d |", res[[1]]$cmp[i, "K"], res[[1]]$cmp[i, "seed"]),
      paste(vapply(res, function(r) sprintf(" %.4f | %.4f ", r$cmp[i, "nmf"], r$cmp[i, "nmtf"]),
                   character(1)), collapse = "|"), "|\n", sep = "")
}
