# The table of bench/rrt-elbo.R: mean ELBO [25%, 75%] and mean number of
# components kept, per data set, likelihood and search; for the Uniform
# likelihood also the deviation from the data set's mean ELBO (the paper's
# Table 3). Run: Rscript bench/rrt-elbo-table.R [pattern] (the files of
# bench/rrt-results matching the regular expression, default every elbo*.rds)
pattern <- if (length(commandArgs(TRUE))) commandArgs(TRUE)[1] else "^elbo.*[.]rds$"
files <- list.files("bench/rrt-results", pattern, full.names = TRUE)
res <- do.call(rbind, lapply(files, function(f) readRDS(f)$results))
q <- function(v) sprintf("%.4g [%.4g, %.4g]", mean(v), quantile(v, 0.25), quantile(v, 0.75))
tab <- do.call(rbind, lapply(split(res, list(res$data, res$likelihood, res$search), drop = TRUE),
  function(d) {
    all <- res[res$data == d$data[1] & res$likelihood == d$likelihood[1], ]
    data.frame(data = d$data[1], likelihood = d$likelihood[1], search = d$search[1],
               n = nrow(d), elbo = q(d$elbo), deviation = q(d$elbo - mean(all$elbo)),
               kept = mean(d$kept), processed = round(mean(d$processed)))
  }))
tab <- tab[order(tab$data, tab$likelihood, match(tab$search, c("nvi4", "nvi10", "gibbs", "hmc", "rrt"))), ]
print(tab, row.names = FALSE)
