# Truncated-normal draws against rnorm() under each uniform generator.
#
#   R_LIBS=<lib> Rscript bench/rtnorm-rng.R [rounds = 5] [n = 1e6]
#
# For each RNG kind (R's normal.kind stays "Inversion", the default) and
# each kind of mean, the time of rtnorm(n, mean = mu) (truncated to
# [0, Inf)) over the time of rnorm(n), both under that RNG kind. Per round,
# every (kind, mean) pair is measured with n_alt = 5 alternations of rnorm() and
# rtnorm(), each after a gc(); the pairs run in a new random order every
# round. Means: "mixed" mu = rnorm(n) (bench-sweep.R's case), "body" mu = 2
# (mostly the normal itself), "bound" mu = 0, "tail" mu = -3 (the standard
# bound a = 3: the exponential-tail draw, which nearly every coordinate of a
# sparse fit takes) and "far tail" mu = -30. Reported: median (range) of the
# ratio over the rounds, and the median ns per draw of each.
suppressPackageStartupMessages(library(bnmf))
args <- as.numeric(commandArgs(TRUE))
rounds <- if (length(args) >= 1 && !is.na(args[1])) args[1] else 5
n <- if (length(args) >= 2 && !is.na(args[2])) args[2] else 1e6
kinds <- c("Mersenne-Twister", "L'Ecuyer-CMRG", "Knuth-TAOCP-2002")
elapsed <- function(expr) {
  t0 <- proc.time()
  force(expr)
  (proc.time() - t0)[["elapsed"]]
}
cat("bnmf ", format(packageVersion("bnmf")), "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), "; n = ", n, ", ", rounds,
    " rounds\n\n", sep = "")
set.seed(1)
mu <- list(mixed = rnorm(n), body = rep(2, n), bound = rep(0, n), tail = rep(-3, n),
           `far tail` = rep(-30, n))
n_alt <- 5
cases <- expand.grid(kind = kinds, mean = names(mu), stringsAsFactors = FALSE)
ratio <- matrix(NA_real_, nrow(cases), rounds)
t_rt <- t_rn <- ratio
for (kind in kinds) { # warm-up under every kind
  RNGkind(kind)
  invisible(rnorm(n))
  invisible(rtnorm(n, mean = mu$mixed))
}
for (r in seq_len(rounds)) {
  for (c in sample(nrow(cases))) {
    RNGkind(cases$kind[c], "Inversion")
    set.seed(r)
    m <- mu[[cases$mean[c]]]
    a <- b <- 0
    for (k in seq_len(n_alt)) {
      invisible(gc())
      a <- a + elapsed(rnorm(n))
      invisible(gc())
      b <- b + elapsed(rtnorm(n, mean = m))
    }
    ratio[c, r] <- b / a
    t_rt[c, r] <- 1e9 * b / n_alt / n
    t_rn[c, r] <- 1e9 * a / n_alt / n
  }
}
RNGkind("default", "default")
fmt <- function(x) formatC(x, format = "f", digits = 2)
cat("| RNG kind | mean | rtnorm / rnorm: median (range) | rtnorm, ns a draw | rnorm, ns a draw |\n")
cat("|---|---|---:|---:|---:|\n")
for (c in seq_len(nrow(cases))) {
  cat("| ", cases$kind[c], " | ", cases$mean[c], " | ", fmt(median(ratio[c, ])), " (",
      fmt(min(ratio[c, ])), "-", fmt(max(ratio[c, ])), ") | ",
      formatC(median(t_rt[c, ]), format = "f", digits = 1), " | ",
      formatC(median(t_rn[c, ]), format = "f", digits = 1), " |\n", sep = "")
}
