# The small saved results that vignettes/exploration.Rmd reads, from the
# outputs of bench/rrt-toy.R, bench/rrt-elbo.R and bench/rrt-speed.R.
# Run: Rscript bench/rrt-vignette-data.R
# The ELBO runs on the current code, 10 repetitions: the Gaussian rows of
# elbo-<data>-10.rds and the Uniform rows of elbo-<data>-10-uniform-rate*.rds
# (re-run after the Uniform likelihood's fixed variance changed); older
# files in bench/rrt-results are kept for bench/README.md but not shown.
`%||%` <- function(a, b) if (is.null(a)) b else a
rd <- function(f) if (file.exists(f)) readRDS(f)
pick <- function(pattern, likelihood) {
  lapply(list.files("bench/rrt-results", pattern, full.names = TRUE), function(f) {
    e <- readRDS(f)
    e$results <- e$results[e$results$likelihood == likelihood, , drop = FALSE]
    e
  })
}
# The toy at the default (automatic) prior rate, at rate 1 (the default
# before the automatic rate was weak) and at a weak rate 0.01.
toys <- list(auto = rd("bench/rrt-results/toy-default.rds"),
             rate1 = rd("bench/rrt-results/toy.rds"),
             rate0.01 = rd("bench/rrt-results/toy-rate0.01.rds"))
toys <- toys[!vapply(toys, is.null, logical(1))]
elbo_runs <- c(pick("^elbo-(leukemia|aml)-10[.]rds$", "gaussian"),
               pick("^elbo-(leukemia|aml)-10-uniform-rate.*[.]rds$", "uniform"))
elbo <- list(results = do.call(rbind, lapply(elbo_runs, function(e) {
               r <- e$results
               if (is.null(r$rate)) r$rate <- e$rate %||% 1
               r[c("data", "likelihood", "search", "rate", "rep", "elbo", "kept", "processed",
                   "accepted", "time")]
             })),
             settings = do.call(rbind, lapply(elbo_runs, function(e) {
               data.frame(data = paste(unique(e$results$data), collapse = ","),
                          likelihood = paste(unique(e$results$likelihood), collapse = ","),
                          rate = e$rate %||% 1, reps = e$reps, secs = e$secs,
                          starts = e$starts, nvi_iter = e$nvi_iter %||% NA)
             })))
speed <- rd("bench/rrt-results/speed.rds")
out <- list(
  toy = unlist(lapply(names(toys), function(nm) {
    lapply(toys[[nm]][c("rrt", "nvi10", "hmc")], function(r) {
      r$rate <- r$rate %||% 1
      r$auto <- isTRUE(r$auto)
      r$prior <- if (r$auto) sprintf("auto (%.3g)", r$rate) else format(r$rate)
      r[setdiff(names(r), "projection")]
    })
  }), recursive = FALSE),
  toy_wad = toys[[1]]$wad_s1_s2,
  elbo = elbo$results, elbo_settings = elbo$settings,
  speed = if (!is.null(speed)) do.call(rbind, lapply(speed, function(r) {
    data.frame(data = sprintf("%d x %d, R = %d", r$dims[1], r$dims[2], r$rank),
               likelihood = r$likelihood, processed = r$processed, expansions = r$expansions,
               ms_component = 1e3 * r$per_component, ms_offer = 1e3 * r$offer_per_component,
               ms_expansion = 1e3 * r$per_expansion, ms_eval = 1e3 * r$eval_per_expansion)
  })))
saveRDS(out, "vignettes/rrt-results.rds", compress = "xz")
