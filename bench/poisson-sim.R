## bench/poisson-sim.R: the doubly sparse simulation of Park (section 4.1)
## and the larger-K runs of section 4.2, for the Poisson model with
## beta-process masks fitted by SSVI (sparsity = "both", the paper's DS-SSVI,
## against sparsity = "coef", its S-SSVI).
##
## Truth (one draw, seed 2024): F = T = 300, K = 4,
##   pi^W = (0.3, 0.2, 0.3, 1), pi^H = (0.4, 0.5, 0.45, 1),
##   W_fk, H_kt ~ Gamma(shape_k, scale 1), shape = (1.6, 1.4, 1.2, 1),
##   E[X] = (W * S^W) (H * S^H);
## 10 data sets X ~ Poisson(E[X]) drawn from it. Fits as in the paper:
## prior a = b = c = d = 5, a0 = b0 = 1 (uniform pi), 100 SSVI iterations, K = 4,
## 3 restarts per data set (chains = 3: the restart with the highest mean
## local log joint log p(X, S | W, H, pi) of the final phase is kept, as
## Park selects by the local likelihood).
## Metrics: accuracy of round(P(S = 1)) against the true masks and RRMSE of
## the posterior means of W * S^W and H * S^H, after matching the factors to
## the true ones (align_factors(): permutation only, no rescaling), median
## and sd over the 10 data sets. Section 4.2: K = 5 and K = 10, one fit per
## data set, RRMSE of the fitted mean E[X].
##
## Run from the package root against an installed copy:
##   R_LIBS=/tmp/bench/lib Rscript bench/poisson-sim.R [n_data] [restarts]
## Writes markdown to stdout and the result table to
## vignettes/counts-sim.rds (read by vignettes/counts.Rmd).

suppressPackageStartupMessages(library(bnmf))
args <- as.integer(commandArgs(TRUE))
n_data <- if (length(args) >= 1) args[1] else 10L
restarts <- if (length(args) >= 2) args[2] else 3L
iter <- 100L

source("bench/park-sim-data.R") # run from the package root
invisible(list2env(park_sim_data(n_data), environment()))

rrmse <- function(est, truth) sqrt(sum((est - truth)^2) / sum(truth^2))

fit_one <- function(X, K, sparsity, seed, chains = 1L) {
  set.seed(seed)
  bnmf(X, rank = K, likelihood = "poisson", method = "ssvi", sparsity = sparsity,
       prior = gamma_prior(5, 5), mask_prior = beta_process(1, 1), iter = iter,
       chains = chains, progress = FALSE)
}

med_sd <- function(v) if (all(is.na(v))) "-" else sprintf("%.3f (%.3f)", stats::median(v), stats::sd(v))
paper1 <- data.frame(
  sparsity = c("both", "coef"),
  acc_SW = c("0.834 (0.041)", "-"), rrmse_WSW = c("0.290 (0.041)", "0.769 (0.055)"),
  acc_SH = c("0.735 (0.053)", "0.745 (0.052)"), rrmse_HSH = c("0.542 (0.272)", "0.558 (0.075)"))
paper2 <- data.frame(K = c(5, 5, 10, 10), sparsity = c("both", "coef", "both", "coef"),
                     rrmse_EX = c("0.099 (0.017)", "0.180 (0.051)", "0.669 (0.001)", "0.678 (0.003)"))
results <- function(table1, table2, n_done) {
  summ1 <- do.call(rbind, lapply(c("both", "coef"), function(sp) {
    d <- table1[table1$sparsity == sp, ]
    data.frame(sparsity = sp, acc_SW = med_sd(d$acc_SW), rrmse_WSW = med_sd(d$rrmse_WSW),
               acc_SH = med_sd(d$acc_SH), rrmse_HSH = med_sd(d$rrmse_HSH),
               rrmse_EX = med_sd(d$rrmse_EX), sec_per_fit = sprintf("%.1f", mean(d$sec_per_fit)))
  }))
  summ2 <- do.call(rbind, lapply(split(table2, list(table2$sparsity, table2$K), drop = TRUE), function(d) {
    data.frame(K = d$K[1], sparsity = d$sparsity[1], rrmse_EX = med_sd(d$rrmse_EX))
  }))
  summ2 <- summ2[order(summ2$K, summ2$sparsity != "both"), ]
  list(table1 = table1, table2 = table2, summary1 = summ1, summary2 = summ2,
       paper1 = paper1, paper2 = paper2, n_data = n_done, restarts = restarts,
       iter = iter, version = as.character(utils::packageVersion("bnmf")))
}

t_start <- Sys.time()
out_file <- "vignettes/counts-sim.rds"
rows1 <- rows2 <- list()
# data set by data set (Table 1 then Table 2 on it), the summary saved after
# each, so that an interrupted run leaves the data sets it finished
for (i in seq_len(n_data)) {
  for (sp in c("both", "coef")) {
    t0 <- Sys.time()
    fit <- fit_one(data_sets[[i]], K0, sp, 1000 * i, chains = restarts)
    secs <- as.numeric(difftime(Sys.time(), t0, units = "secs")) / restarts
    fa <- factors(fit)
    mk <- masks(fit)
    perm <- align_factors(A0, fa)$perm
    A <- fa$W[, perm, drop = FALSE]
    B <- fa$H[perm, , drop = FALSE]
    accW <- if (sp == "both") mean(round(mk$W[, perm]) == SW0) else NA_real_
    accH <- mean(round(mk$H[perm, ]) == SH0)
    rows1[[length(rows1) + 1L]] <- data.frame(
      data = i, sparsity = sp, acc_SW = accW, rrmse_WSW = rrmse(A, A0), acc_SH = accH,
      rrmse_HSH = rrmse(B, B0), rrmse_EX = rrmse(fitted(fit), EX), sec_per_fit = secs)
    cat(sprintf("data %d %s: %s\n", i, sp,
                paste(format(unlist(rows1[[length(rows1)]][-(1:2)]), digits = 3), collapse = " ")),
        file = stderr())
  }
  for (K in c(5L, 10L)) {
    for (sp in c("both", "coef")) {
      fit <- fit_one(data_sets[[i]], K, sp, 5000 + 100 * K + i)
      rows2[[length(rows2) + 1L]] <- data.frame(K = K, data = i, sparsity = sp,
                                                rrmse_EX = rrmse(fitted(fit), EX))
      cat(sprintf("data %d K = %d %s: %.3f\n", i, K, sp, rows2[[length(rows2)]]$rrmse_EX),
          file = stderr())
    }
  }
  table1 <- do.call(rbind, rows1)
  table2 <- do.call(rbind, rows2)
  res <- results(table1, table2, i)
  saveRDS(res, out_file, version = 2)
}

md <- function(df) {
  cat("| ", paste(names(df), collapse = " | "), " |\n", sep = "")
  cat("|", paste(rep("---", ncol(df)), collapse = "|"), "|\n", sep = "")
  for (r in seq_len(nrow(df))) cat("| ", paste(unlist(df[r, ]), collapse = " | "), " |\n", sep = "")
}
cat(sprintf("Doubly sparse simulation: %d data sets x %d restarts, %d SSVI iterations (%.0f min in all)\n\n",
            n_data, restarts, iter, as.numeric(difftime(Sys.time(), t_start, units = "mins"))))
cat("Table 1 (K = 4), median (sd) over the data sets; bnmf:\n\n"); md(res$summary1)
cat("\nPark, Table 1:\n\n"); md(paper1)
cat("\nTable 2 (RRMSE of E[X]), median (sd); bnmf:\n\n"); md(res$summary2)
cat("\nPark, Table 2:\n\n"); md(paper2)
