# The small saved results that vignettes/exploration.Rmd reads, from the
# outputs of bench/rrt-toy.R, bench/rrt-elbo.R and bench/rrt-speed.R.
# Run: Rscript bench/rrt-vignette-data.R
`%||%` <- function(a, b) if (is.null(a)) b else a
rd <- function(f) if (file.exists(f)) readRDS(f)
toy <- rd("bench/rrt-results/toy.rds")
elbo_files <- list.files("bench/rrt-results", "^elbo.*[.]rds$", full.names = TRUE)
elbo_runs <- lapply(elbo_files, readRDS)
elbo <- list(results = do.call(rbind, lapply(elbo_runs, `[[`, "results")),
             settings = do.call(rbind, lapply(elbo_runs, function(e) {
               data.frame(data = paste(unique(e$results$data), collapse = ","), reps = e$reps,
                          secs = e$secs, starts = e$starts, nvi_iter = e$nvi_iter %||% NA)
             })))
speed <- rd("bench/rrt-results/speed.rds")
out <- list(
  toy = if (!is.null(toy)) lapply(toy[c("rrt", "nvi10", "hmc")], function(r) r[setdiff(names(r), "projection")]),
  toy_wad = toy$wad_s1_s2,
  elbo = elbo$results, elbo_settings = elbo$settings,
  speed = if (!is.null(speed)) do.call(rbind, lapply(speed, function(r) {
    data.frame(data = sprintf("%d x %d, R = %d", r$dims[1], r$dims[2], r$rank),
               likelihood = r$likelihood, processed = r$processed, expansions = r$expansions,
               ms_component = 1e3 * r$per_component, ms_offer = 1e3 * r$offer_per_component,
               ms_expansion = 1e3 * r$per_expansion, ms_eval = 1e3 * r$eval_per_expansion)
  })))
saveRDS(out, "vignettes/rrt-results.rds", compress = "xz")
