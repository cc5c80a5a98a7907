# The Laurberg toy of Masood and Doshi-Velez (section 5.1) at the paper's
# size: a rank-3 matrix with two exact NMFs embedded in 500 x 500, Uniform
# noise; every search starts at one known solution (s1). RRT + ONVI against
# NVI (M = 10) and HMC + ONVI under the Uniform likelihood: how many accepted
# components lie nearer each known solution (WAD), and the persistence
# (greedy covering numbers at radii in degrees).
# Run: R_LIBS=<lib> Rscript bench/rrt-toy.R [seconds per search, default 120]
#        [rate of the exponential prior on W and H, default "auto": the
#        package's default prior] [output, default toy]
#        [searches, comma-separated, default rrt,nvi10,hmc]
# Under the Uniform likelihood the log joint inside the box is the prior's,
# -rate * sum(W, H): at rate 1 on the 3000 entries of W and H the candidates
# differ by many nats in it, and the ONVI weights (proportional to the
# exponential of each component's expected log joint) keep only the region
# of smallest sum(W, H); a weak prior (rate 0.01) lets the data decide.
suppressMessages(library(bnmf))
laurberg_toy <- bnmf:::laurberg_toy
secs <- as.numeric(commandArgs(TRUE)[1])
if (is.na(secs)) secs <- 120
rate <- commandArgs(TRUE)[2]
if (is.na(rate)) rate <- "auto"
if (rate != "auto") rate <- as.numeric(rate)
out_name <- commandArgs(TRUE)[3]
if (is.na(out_name)) out_name <- "toy"
searches <- commandArgs(TRUE)[4]
searches <- if (is.na(searches)) c("rrt", "nvi10", "hmc") else strsplit(searches, ",")[[1]]
set.seed(2)
toy <- laurberg_toy(500, noise = 0.01)
s1 <- toy$solutions[[1]]
s2 <- toy$solutions[[2]]
eps <- 0.3
radii <- c(0.001, 0.01, 0.1, 1, 10)
res <- list()
for (search in searches) {
  set.seed(3)
  t0 <- proc.time()[[3]]
  fit <- bnmf(toy$X, rank = 3, method = "rrt", likelihood = "uniform", init = s1,
              prior = if (identical(rate, "auto")) exponential() else exponential(rate),
              iter = switch(search, rrt = 5000, hmc = 2000, nvi10 = 100),
              control = rrt_control(search = search, epsilon = eps, time_limit = secs))
  fs <- if (search == "nvi10") fit$components else fit$accepted
  d <- vapply(fs, function(f) c(wad(f, s1), wad(f, s2)), numeric(2))
  D <- wad(fs)
  cov <- covering_number(D, epsilon = radii)$covering
  curve <- covering_number(D, epsilon = 10^seq(-3, log10(max(D, 1e-3)), length.out = 60))
  dk <- vapply(fit$components, function(f) c(wad(f, s1), wad(f, s2)), numeric(2))
  # rate: in the units of X (the automatic one as the fit reports it);
  # rate_scaled: on X / s, where the search runs.
  res[[search]] <- list(search = search, auto = identical(rate, "auto"),
                        rate = if (identical(rate, "auto")) fit$prior$rate else rate,
                        rate_scaled = fit$prior$rate * sqrt(fit$data_scale), time = proc.time()[[3]] - t0, n = length(fs),
                        near_s1 = sum(d[1, ] < d[2, ]), near_s2 = sum(d[2, ] < d[1, ]),
                        kept = ncol(dk), kept_s1 = sum(dk[1, ] < dk[2, ]),
                        kept_s2 = sum(dk[2, ] < dk[1, ]),
                        max_wad_s1 = max(d[1, ]), covering = cov,
                        curve = data.frame(epsilon = curve$epsilon, covering = curve$covering),
                        projection = bnmf:::rrt_projection(toy$X, fs),
                        stats = fit$stats[c("processed", "accepted", "expansions", "stop")])
  r <- res[[search]]
  cat(sprintf("rate %.4g (%.4g on X / s); ", r$rate, r$rate_scaled))
  cat(sprintf("%-5s %6.1fs: %3d components (%d nearer s1, %d nearer s2; max WAD to s1 %.2f deg); covering at %s deg: %s; final mixture %d (%d / %d)\n",
              search, r$time, r$n, r$near_s1, r$near_s2, r$max_wad_s1,
              paste(radii, collapse = "/"), paste(cov, collapse = "/"), r$kept, r$kept_s1,
              r$kept_s2))
}
res$wad_s1_s2 <- wad(s1, s2)
dir.create("bench/rrt-results", showWarnings = FALSE)
saveRDS(res, sprintf("bench/rrt-results/%s.rds", out_name))
