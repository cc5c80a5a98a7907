# The relative error ||X - fitted(fit)||_F / ||X||_F of every Gaussian-likelihood
# model and method on the same data at scales 1, 1e-3, 1e3, 1e-100 and 1e100:
# a fit that follows the units of X gives the same number in every column.
#
#   R_LIBS=LIB Rscript bench/scale-table.R [methods regex]     (from the package root)
#
# The data: a 40 x 30 X = W0 H0 + E of rank 3 (W0, H0 unit exponentials, E
# normal with sd 0.05 times the root mean square of W0 H0), times the scale.
# Every fit of a row starts from the same seed at every scale, with short
# settings (the whole table takes a few minutes). Poisson is left out
# (counts have no scale). A fit that fails shows "error" in the table and its
# message below it.
suppressPackageStartupMessages(library(bnmf))
only <- commandArgs(TRUE)
set.seed(11)
I <- 40; J <- 30; K <- 3
W0 <- matrix(rexp(I * K), I, K)
H0 <- matrix(rexp(K * J), K, J)
WH <- W0 %*% H0
X1 <- WH + matrix(rnorm(I * J, sd = 0.05 * sqrt(mean(WH^2))), I, J)
X1 <- pmax(X1, 0) # the particle models need X >= 0
scales <- c(1, 1e-3, 1e3, 1e-100, 1e100)

fits <- list(
  "nmf gibbs" = function(X) bnmf(X, rank = K, method = "gibbs", iter = 300),
  "nmf vb" = function(X) bnmf(X, rank = K, method = "vb", iter = 300),
  "nmf icm" = function(X) bnmf(X, rank = K, method = "icm", iter = 300),
  "nmf np" = function(X) bnmf(X, rank = K, method = "np", iter = 300),
  "nmtf gibbs" = function(X) bnmf(X ~ nmtf(3, 3), method = "gibbs", iter = 300),
  "nmtf vb" = function(X) bnmf(X ~ nmtf(3, 3), method = "vb", iter = 300),
  "nmtf icm" = function(X) bnmf(X ~ nmtf(3, 3), method = "icm", iter = 300),
  "nmtf np" = function(X) bnmf(X ~ nmtf(3, 3), method = "np", iter = 300),
  "particles" = function(X) bnmf(X, rank = K, method = "particles", particles = 5, iter = 200),
  "hmc" = function(X) bnmf(X, rank = K, method = "hmc", iter = 100),
  "svgd" = function(X) bnmf(X, rank = K, method = "svgd", iter = 100, particles = 3),
  "dsgd" = function(X) bnmf(X, rank = K, method = "dsgd", iter = 100, particles = 3),
  "rrt" = function(X) bnmf(X, rank = K, method = "rrt", iter = 30,
                           control = rrt_control(max_failures = 30, solver_iter = 100))
)
if (length(only)) fits <- fits[grepl(only[1], names(fits))]

rel <- matrix(NA_real_, length(fits), length(scales),
              dimnames = list(names(fits), format(scales)))
errors <- character()
secs <- setNames(numeric(length(fits)), names(fits))
for (m in names(fits)) {
  for (k in seq_along(scales)) {
    s <- scales[k]
    set.seed(1)
    t0 <- proc.time()[["elapsed"]]
    r <- tryCatch(suppressWarnings({
      fit <- fits[[m]](X1 * s)
      sqrt(sum((X1 * s - fitted(fit))^2)) / sqrt(sum((X1 * s)^2))
    }), error = function(e) {
      errors[[length(errors) + 1L]] <<- sprintf("%s at %s: %s", m, format(s),
                                                 conditionMessage(e))
      NA_real_
    })
    secs[[m]] <- secs[[m]] + proc.time()[["elapsed"]] - t0
    rel[m, k] <- r
  }
}
cat("relative error ||X - fitted||_F / ||X||_F (40 x 30, rank 3, noise 5% of rms(W0 H0))\n\n")
cat("| model, method |", paste(colnames(rel), collapse = " | "), "| s |\n")
cat("|---|", paste(rep("---", ncol(rel)), collapse = "|"), "|---|\n", sep = "")
for (m in rownames(rel)) {
  v <- ifelse(is.na(rel[m, ]), "error",
              ifelse(rel[m, ] < 10, formatC(rel[m, ], format = "f", digits = 3),
                     formatC(rel[m, ], format = "g", digits = 3)))
  cat("|", m, "|", paste(v, collapse = " | "), "|", sprintf("%.1f", secs[[m]]), "|\n")
}
if (length(errors)) {
  cat("\nerrors:\n")
  cat(paste0("- ", errors, "\n"), sep = "")
}
