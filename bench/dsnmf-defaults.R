## bench/dsnmf-defaults.R: which settings of method "ssvi" reach Park's
## Table 1 (section 4.1) on her doubly sparse simulation, one change at a
## time from the package's defaults.
##
## The truth and the 10 data sets are those of bench/poisson-sim.R (seed
## 2024: F = T = 300, K = 4, pi^W = (0.3, 0.2, 0.3, 1), pi^H = (0.4, 0.5,
## 0.45, 1), Gamma(shape_k, 1) entries with shapes (1.6, 1.4, 1.2, 1)).
## Every fit is `bnmf(X ~ nmf(4, sparsity = "both"), likelihood =
## "poisson", method = "ssvi", ...)` with the arguments of a configuration
## (below) and set.seed(1000 * i) before data set i; the metrics are those
## of bench/poisson-sim.R (accuracy of round(P(S = 1)) against the true
## masks, RRMSE of W S^W, H S^H after matching the factors, RRMSE of E[X]),
## plus the seconds of the whole fit (all its restarts).
##
## One run fits one configuration and saves its rows to
## bench/dsnmf-defaults/<config>.rds; `table` prints every saved
## configuration beside Park's Table 1:
##   R_LIBS=<lib> Rscript bench/dsnmf-defaults.R <config> [n_data] [scale]
##   Rscript bench/dsnmf-defaults.R table
## scale = 10 fits round(10 X) instead of X (the truth of E[X] is then
## 10 E[X]; RRMSE of the factors is not reported, their scale being free).
## Configurations (the old defaults are fitted with the package of main at
## e96a198 installed in /tmp/lib-dsnmf-base, under the name `old`):
##   paper    gamma_prior(5, 5), beta_process(1, 1), iter 100, chains 3
##   old      nothing given (old package: gamma_prior(1, "auto"), 1 chain)
##   shape5   prior = gamma_prior(5, "auto") (one restart)
##   rate5    prior = gamma_prior(5, 5) (Park's fixed prior, one restart)
##   chains3  chains = 3 (old prior)
##   iter200  iter = 200 (old prior, one restart)
##   shape5i200 prior = gamma_prior(5, "auto"), iter = 200 (one restart)
##   shape5c3 prior = gamma_prior(5, "auto"), chains = 3
##   half3    prior = gamma_prior(5, 2.5 sqrt(K / mean(X))), chains = 3: the
##            new defaults, given explicitly to the old package (the new
##            package's default fit is identical to it)
##   default  nothing given (new package)

args <- commandArgs(TRUE)
dir <- "bench/dsnmf-defaults"
dir.create(dir, showWarnings = FALSE)

paper1 <- c(acc_SW = "0.834 (0.041)", rrmse_WSW = "0.290 (0.041)", acc_SH = "0.735 (0.053)",
            rrmse_HSH = "0.542 (0.272)")
med_sd <- function(v) if (all(is.na(v))) "-" else sprintf("%.3f (%.3f)", stats::median(v), stats::sd(v))

if (identical(args[1], "table")) {
  files <- list.files(dir, "\\.rds$", full.names = TRUE)
  cols <- c("config", "scale", "data", "acc_SW", "acc_SH", "rrmse_WSW", "rrmse_HSH", "rrmse_EX",
            "secs")
  rows <- do.call(rbind, lapply(files, function(f) readRDS(f)[cols]))
  order_cfg <- c("paper", "old", "shape5", "rate5", "chains3", "iter200", "shape5i200", "shape5c3", "half3", "default")
  cfgs <- unique(rows$config)
  cfgs <- c(intersect(order_cfg, cfgs), setdiff(cfgs, order_cfg))
  out <- do.call(rbind, lapply(cfgs, function(cf) {
    do.call(rbind, lapply(sort(unique(rows$scale[rows$config == cf])), function(sc) {
      d <- rows[rows$config == cf & rows$scale == sc, ]
      data.frame(config = cf, X = if (sc == 1) "X" else sprintf("round(%g X)", sc), n = nrow(d),
                 acc_SW = med_sd(d$acc_SW), rrmse_WSW = med_sd(d$rrmse_WSW),
                 acc_SH = med_sd(d$acc_SH), rrmse_HSH = med_sd(d$rrmse_HSH),
                 rrmse_EX = med_sd(d$rrmse_EX), sec_per_fit = sprintf("%.0f", stats::median(d$secs)))
    }))
  }))
  out <- rbind(out, data.frame(config = "Park Table 1", X = "X", n = 10, t(paper1), rrmse_EX = "",
                               sec_per_fit = ""))
  cat("| ", paste(names(out), collapse = " | "), " |\n", sep = "")
  cat("|", paste(rep("---", ncol(out)), collapse = "|"), "|\n", sep = "")
  for (r in seq_len(nrow(out))) cat("| ", paste(unlist(out[r, ]), collapse = " | "), " |\n", sep = "")
  quit(save = "no")
}

suppressPackageStartupMessages(library(bnmf))
config <- args[1]
n_data <- if (length(args) >= 2) as.integer(args[2]) else 10L
scale <- if (length(args) >= 3) as.numeric(args[3]) else 1

configs <- list(
  paper = list(prior = gamma_prior(5, 5), mask_prior = beta_process(1, 1), iter = 100, chains = 3),
  old = list(),
  shape5 = list(prior = gamma_prior(5, "auto")),
  rate5 = list(prior = gamma_prior(5, 5)),
  chains3 = list(chains = 3, prior = gamma_prior(1, "auto")),
  iter200 = list(iter = 200, prior = gamma_prior(1, "auto")),
  shape5i200 = list(iter = 200, prior = gamma_prior(5, "auto")),
  shape5c3 = list(prior = gamma_prior(5, "auto"), chains = 3),
  # the automatic rate halved: prior mean of W and H twice sqrt(mean(X) / K)
  half3 = function(X) list(prior = gamma_prior(5, 5 * sqrt(K0 / mean(X)) / 2), chains = 3),
  default = list()
)
if (!config %in% names(configs)) stop("unknown configuration ", config)

# the truth and data sets of bench/poisson-sim.R
source("bench/park-sim-data.R") # run from the package root
invisible(list2env(park_sim_data(10), environment()))

`%||%` <- function(x, y) if (is.null(x)) y else x
rrmse <- function(est, truth) sqrt(sum((est - truth)^2) / sum(truth^2))

rows <- list()
for (i in seq_len(n_data)) {
  X <- if (scale == 1) data_sets[[i]] else round(scale * data_sets[[i]])
  set.seed(1000 * i)
  t0 <- Sys.time()
  cfg <- configs[[config]]
  if (is.function(cfg)) cfg <- cfg(X)
  fit <- do.call(bnmf, c(list(X ~ nmf(K0, sparsity = "both"), likelihood = "poisson",
                              method = "ssvi", progress = FALSE), cfg))
  secs <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
  fa <- factors(fit)
  mk <- masks(fit)
  perm <- align_factors(A0, fa)$perm
  rows[[i]] <- data.frame(
    config = config, scale = scale, data = i,
    acc_SW = mean(round(mk$W[, perm]) == SW0), acc_SH = mean(round(mk$H[perm, ]) == SH0),
    rrmse_WSW = if (scale == 1) rrmse(fa$W[, perm], A0) else NA_real_,
    rrmse_HSH = if (scale == 1) rrmse(fa$H[perm, ], B0) else NA_real_,
    rrmse_EX = rrmse(fitted(fit), scale * EX), secs = secs,
    chains = fit$settings$chains %||% NA, iter = fit$settings$iter %||% NA,
    prior = sprintf("Gamma(%g, %.3g) Gamma(%g, %.3g)", fit$prior$a, fit$prior$b, fit$prior$c,
                    fit$prior$d),
    package = as.character(utils::packageVersion("bnmf")),
    lib = dirname(find.package("bnmf")))
  cat(sprintf("%s x%g data %d: %s\n", config, scale, i,
              paste(format(unlist(rows[[i]][4:9]), digits = 3), collapse = " ")), file = stderr())
  saveRDS(do.call(rbind, rows),
          file.path(dir, sprintf("%s%s.rds", config, if (scale == 1) "" else sprintf("-x%g", scale))),
          version = 2)
}
