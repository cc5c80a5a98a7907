# Active factors of Gaussian ARD fits (default settings, prior = ard()):
# noise around a positive mean, X = mu + N(0, 1), 40 x 30, mu = 0.5, 5, 50,
# from 8 factors (NMF) and 6 x 6 (NMTF); and rank-3 data (W, H exponential,
# noise sd 0.1 of the signal's sd), 40 x 30, where the answer is 3. Three
# seeds each. The noise data support one factor (the constant mu).
# Also the noise around 5 multiplied by 1e-4 (the ARD default must not
# depend on the units of X).
# Run: R_LIBS=<lib> Rscript bench/ard-noise.R   (about 30 s)
library(bnmf)
# Active factors by the rule of summary() ("active") and by the rule before
# version 0.1.0 (mean contribution >= 0.1 noise sd, "signal >= 0.1"),
# printed as "new (old)"; NMTF: columns of F / of G.
act <- function(f) {
  tab <- if (inherits(f, "bnmf_nmtf")) bnmf:::nmtf_ard_relevance(f) else summary(f)$factors
  old <- tab$signal >= 0.1
  if (!is.null(tab$matrix)) {
    a <- tapply(tab$active, tab$matrix, sum)
    o <- tapply(old, tab$matrix, sum)
    return(sprintf("%d/%d (%d/%d)", a[["F"]], a[["G"]], o[["F"]], o[["G"]]))
  }
  sprintf("%d (%d)", sum(tab$active), sum(old))
}
fits <- function(X, K, L, seed) {
  one <- function(expr) { set.seed(seed); act(suppressWarnings(expr)) }
  c(gibbs = one(bnmf(X, K, method = "gibbs", prior = ard(), progress = FALSE)),
    vb = one(bnmf(X, K, method = "vb", prior = ard())),
    icm = one(bnmf(X, K, method = "icm", prior = ard())),
    nmtf_vb = one(bnmf(X ~ nmtf(L, L, prior = ard()), method = "vb")),
    nmtf_gibbs = one(bnmf(X ~ nmtf(L, L, prior = ard()), method = "gibbs", progress = FALSE)))
}
res <- list()
for (seed in 1:3) {
  for (mu in c(0.5, 5, 50)) {
    set.seed(100 + seed)
    X <- matrix(mu + rnorm(40 * 30), 40, 30)
    res[[length(res) + 1]] <- data.frame(data = sprintf("mu %g + N(0,1)", mu), seed = seed,
                                         t(fits(X, 8, 6, seed)))
  }
  set.seed(100 + seed)
  X <- matrix(5 + rnorm(40 * 30), 40, 30) * 1e-4
  res[[length(res) + 1]] <- data.frame(data = "(mu 5 + N(0,1)) * 1e-4", seed = seed,
                                       t(fits(X, 8, 6, seed)))
  set.seed(200 + seed)
  S <- matrix(rexp(40 * 3), 40, 3) %*% matrix(rexp(3 * 30), 3, 30)
  X <- S + matrix(rnorm(40 * 30, sd = 0.1 * sd(S)), 40, 30)
  res[[length(res) + 1]] <- data.frame(data = "rank 3", seed = seed, t(fits(X, 8, 6, seed)))
}
tab <- do.call(rbind, res)
tab <- tab[order(tab$data, tab$seed), ]
print(tab, row.names = FALSE)
cat("new (old): active by summary()$factors$active (old: by signal >= 0.1);\nNMTF: active columns of F / of G, from 6 / 6\n")
