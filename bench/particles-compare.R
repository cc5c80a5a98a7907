# The comparison of Masood & Doshi-Velez (Figures 3, 4 and 9): Stein
# discrepancy against wall time of Q-Transform, random and NNDSVDar particles,
# thinned HMC, SVGD and DSGD on the same data and the same model.
#
#   Rscript bench/particles-compare.R [lib]
#
# writes bench/particles-compare.rds (every run), the table and plot
# bench/particles-compare.md and bench/particles-compare.png, and the small
# summary the vignette reads, inst/extdata/particles-compare.rds.
#
# Data: the bundled `leukemia` (its first 100 genes, so that the whole run
# takes minutes on a shared machine), complete and with 10%, 30% and 50% of
# its entries hidden (the same hidden entries for every method). Rank 3.
# Model: SILF on the Frobenius objective with one epsilon per data set (1.2
# times the largest objective of 50 Q-Transform candidates, the paper's
# rule), beta = 0.1, C automatic (silf()), Exp(1) on H, the kernel of equation 7 with the
# paper's parameters.
#
# Methods (three repetitions, set.seed(rep)):
# - particles ("qtransform", "random", "nndsvdar"): 50 candidates solved once;
#   for M = 5, 25, 50 the first M of them, optimal Stein weights; time = the
#   starts and solves of those M plus the weights (as the paper samples
#   collections from its 100 factorisations and sums their times).
# - HMC: one chain of 300 iterations (150 warm-up) from a solved random start;
#   its 150 draws thinned to M evenly spaced ones, optimal Stein weights;
#   time = the whole chain (whatever M).
# - SVGD and DSGD: M = 5 (the paper's only size) and 25 particles from
#   random starts, 150 steps,
#   AdaGrad step 0.01; the optimal-weight discrepancy of the final particles
#   (and the equal-weight one along the way, in the rds).
# Times are CPU seconds of the one R process (tasks sequential): the machine
# these numbers come from was shared and loaded, where elapsed time would
# mostly measure the other processes.

args <- commandArgs(trailingOnly = TRUE)
if (length(args)) .libPaths(c(args[1L], .libPaths()))
suppressPackageStartupMessages(library(bnmf))

set.seed(20261123)
X0 <- leukemia[1:100, ]
K <- 3L
Ms <- c(5L, 25L, 50L)
Ms_grad <- c(5L, 25L)
reps <- 1:3
hide <- c(0, 0.1, 0.3, 0.5)
steps <- 150L
datasets <- lapply(hide, function(p) {
  X <- X0
  if (p > 0) X[sample(length(X), round(p * length(X)))] <- NA
  X
})
names(datasets) <- sprintf("leukemia, %d%% hidden", round(100 * hide))

# CPU seconds of this process (user + system): on a shared, loaded machine
# elapsed time mostly measures the other processes.
cpu <- function() sum(proc.time()[c(1L, 2L)])
elapsed <- function(expr) {
  t0 <- cpu()
  val <- force(expr)
  list(value = val, time = cpu() - t0)
}

stein_of <- function(parts, X, lik) {
  r <- elapsed(stein_discrepancy(parts, X, likelihood = lik))
  c(stein = as.numeric(r$value), time = r$time)
}

rows <- list()
traces <- list()
add <- function(...) rows[[length(rows) + 1L]] <<- data.frame(...)
for (dn in names(datasets)) {
  X <- datasets[[dn]]
  set.seed(1)
  ref <- bnmf(X, rank = K, method = "particles", particles = 50, progress = FALSE)
  lik <- silf(epsilon = ref$likelihood$epsilon)
  cat(sprintf("%s: epsilon %.4g\n", dn, lik$epsilon))
  for (rep in reps) {
    for (init in c("qtransform", "random", "nndsvdar")) {
      set.seed(rep)
      f <- elapsed(suppressWarnings(bnmf(X, rank = K, method = "particles", particles = max(Ms),
                                         init = init, likelihood = lik, progress = FALSE)))
      fit <- f$value
      # the CPU time of the fit shared among the candidates as their
      # (elapsed) start and solve times
      share <- fit$candidates$init_time + fit$candidates$solve_time
      share <- f$time * share / sum(share)
      for (M in Ms) {
        parts <- lapply(seq_len(M), function(m) factors(fit, particle = m))
        s <- stein_of(parts, X, lik)
        add(data = dn, method = init, M = M, rep = rep, stein = s[["stein"]],
            time = sum(share[seq_len(M)]) + s[["time"]])
      }
    }
    set.seed(rep)
    h <- elapsed(bnmf(X, rank = K, method = "hmc", iter = 300, burnin = 150, likelihood = lik,
                      progress = FALSE))
    for (M in Ms) {
      r <- elapsed(stein_discrepancy(h$value, draws = M, weights = "optimal"))
      add(data = dn, method = "hmc", M = M, rep = rep, stein = as.numeric(r$value),
          time = h$time + r$time)
    }
    for (meth in c("svgd", "dsgd")) {
      for (M in Ms_grad) {
        set.seed(rep)
        g <- elapsed(bnmf(X, rank = K, method = meth, particles = M, iter = steps,
                          likelihood = lik, control = stein_control(record = 25), progress = FALSE))
        add(data = dn, method = meth, M = M, rep = rep, stein = g$value$stein, time = g$time)
        traces[[length(traces) + 1L]] <- cbind(data = dn, method = meth, M = M, rep = rep,
                                               g$value$trace)
      }
    }
    cat(sprintf("  repetition %d done (%.0f s CPU so far)\n", rep, cpu()))
  }
}
res <- do.call(rbind, rows)
tr <- do.call(rbind, traces)
saveRDS(list(results = res, traces = tr, settings = list(dims = dim(X0), rank = K, M = Ms,
                                                          steps = steps, hide = hide)),
        "bench/particles-compare.rds")

# The table: median over the repetitions of the discrepancy and the time.
agg <- aggregate(cbind(stein, time) ~ data + method + M, data = res, FUN = stats::median)
agg <- agg[order(agg$data, agg$M, agg$stein), ]
saveRDS(agg, "inst/extdata/particles-compare.rds")
best <- do.call(rbind, lapply(split(agg, list(agg$data, agg$M), drop = TRUE), function(d) d[1L, ]))
md <- c("| data | M | method | Stein discrepancy (median of 3) | time, s |",
        "|---|---:|---|---:|---:|",
        sprintf("| %s | %d | %s | %.4g | %.2f |", agg$data, agg$M, agg$method, agg$stein, agg$time),
        "", "Lowest discrepancy per data set and M:", "",
        sprintf("- %s, M = %d: %s (%.4g in %.2f s)", best$data, best$M, best$method, best$stein,
                best$time))
writeLines(md, "bench/particles-compare.md")

# The plot (Figures 4 and 9): discrepancy against time, log scales, one
# panel per data set, one colour per method, the size of a point M.
cols <- c(qtransform = "#d62728", random = "#1f77b4", nndsvdar = "#2ca02c", hmc = "#9467bd",
          svgd = "#ff7f0e", dsgd = "#8c564b")
grDevices::png("bench/particles-compare.png", width = 1400, height = 1000, res = 130)
op <- graphics::par(mfrow = c(2, 2), mar = c(4, 4, 2.5, 1))
for (dn in names(datasets)) {
  d <- res[res$data == dn, ]
  graphics::plot(d$time, d$stein, log = "xy", col = cols[d$method], pch = 19,
                 cex = c(0.8, 1.3, 1.8)[match(d$M, Ms)], xlab = "CPU time (s)",
                 ylab = "Stein discrepancy", main = dn)
  if (dn == names(datasets)[1L]) {
    graphics::legend("topright", legend = c(names(cols), paste("M =", Ms)), bty = "n", cex = 0.8,
                     col = c(cols, rep("grey40", 3)), pch = 19,
                     pt.cex = c(rep(1, length(cols)), 0.8, 1.3, 1.8))
  }
}
graphics::par(op)
invisible(grDevices::dev.off())
cat(md, sep = "\n")
