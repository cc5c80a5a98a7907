# Speed of RRT + online NVI: time per processed component and per RRT
# expansion at the AML size (Golub, 5000 x 38, rank 3) and at 1000 x 1000,
# rank 5; and where the time goes (Rprof).
# Run: R_LIBS=<lib> Rscript bench/rrt-speed.R [seconds per run, default 60]
# Needs NMF and Biobase (esGolub) installed; they are not dependencies.
suppressMessages({
  library(bnmf)
  library(Biobase)
})
secs <- as.numeric(commandArgs(TRUE)[1])
if (is.na(secs)) secs <- 60
data(esGolub, package = "NMF")
set.seed(1)
W <- matrix(rexp(1000 * 5), 1000, 5)
H <- matrix(rexp(5 * 1000), 5, 1000)
sets <- list(aml = list(X = exprs(esGolub), R = 3),
             big = list(X = W %*% H + matrix(runif(1e6, 0, 0.5), 1000), R = 5))
out <- list()
for (nm in names(sets)) {
  s <- sets[[nm]]
  for (lik in c("gaussian", "uniform")) {
    set.seed(2)
    prof <- tempfile()
    Rprof(prof, interval = 0.02)
    t0 <- proc.time()[[3]]
    fit <- bnmf(s$X, rank = s$R, method = "rrt", likelihood = lik, iter = 10^6,
                control = rrt_control(starts = 5, time_limit = secs))
    total <- proc.time()[[3]] - t0
    Rprof(NULL)
    st <- fit$stats
    top <- head(summaryRprof(prof)$by.total, 15)
    out[[paste(nm, lik)]] <- list(
      data = nm, dims = dim(s$X), rank = s$R, likelihood = lik, total = total,
      starts_time = st$time_starts, search_time = st$time, processed = st$processed,
      accepted = st$accepted, expansions = st$expansions, kept = length(fit$weights),
      per_component = st$time / st$processed, per_expansion = st$time / st$expansions,
      offer_per_component = st$time_offer / st$processed,
      eval_per_expansion = st$time_eval / st$expansions, profile = top)
    r <- out[[paste(nm, lik)]]
    cat(sprintf("%s %s: %d x %d R=%d | restarts %.1fs | search %.1fs: %d components (%d accepted, %d kept), %d expansions | %.2f ms/component (ONVI offer %.2f ms), %.2f ms/expansion (node evaluation %.2f ms)\n",
                nm, lik, r$dims[1], r$dims[2], r$rank, r$starts_time, r$search_time,
                r$processed, r$accepted, r$kept, r$expansions, 1e3 * r$per_component,
                1e3 * r$offer_per_component, 1e3 * r$per_expansion, 1e3 * r$eval_per_expansion))
    print(top[, c("total.time", "total.pct")])
  }
}
dir.create("bench/rrt-results", showWarnings = FALSE)
saveRDS(out, "bench/rrt-results/speed.rds")
