# VB whole fits of two versions of bnmf: how many sweeps and seconds each
# takes to reach the same ELBO. Written for the scale step of VB sweeps
# (each sweep maximises the ELBO along every factor's scale), which changes
# the path of the fit but not the cost of a sweep.
#
#   Rscript bench/vb-scale.R LIB_A LIB_B [rounds = 2]     (from the package root)
#   bench/openblas.sh Rscript bench/vb-scale.R LIB_A LIB_B [rounds]
#
# Per round, one process per version (the order swapped every round), each
# fitting every case with bnmf(method = "vb") from the same seed, to
# tol = 1e-8 (at most BNMF_BENCH_ITER sweeps, default 4000). The "target" is
# the ELBO at which version A's fit of the round would have stopped at
# bnmf's default tol = 1e-6 (the first sweep whose relative change is at most
# 1e-6); each version's sweeps to first reach it are read off its ELBO trace
# and its seconds are those sweeps times its mean seconds a sweep. Also
# printed: where each version stops at tol = 1e-6 (sweeps, ELBO), and the
# sweeps each takes to within 1e-7 of the best ELBO either reaches. Cases:
# the bundled leukemia data (K = 4); 1000 x 1000, K = 20, X = W0 H0 + N(0, 1)
# complete and with 20% missing at random; a sparse 2000 x 1000 X at density
# 0.05 (K = 10); the GDSC IC50 matrix (707 x 139, 19.3% missing, K = 10) when
# ../shared/data/gdsc is beside the repository; and tri-factorisations
# (rank = c(K, L)): leukemia with K = L = 3, and a simulated 600 x 400 X =
# F S G' + N(0, 1) with K = 5, L = 4 and 20% missing. BNMF_BENCH_CASES: a regular
# expression on the cases' names (default all).
child <- Sys.getenv("BNMF_VBS_CHILD", "")
if (nzchar(child)) {
  suppressPackageStartupMessages(library(bnmf))
  iter <- as.integer(Sys.getenv("BNMF_BENCH_ITER", "4000"))
  sim <- function(frac, K = 20L, I = 1000L, J = 1000L) {
    set.seed(7)
    X <- matrix(rexp(I * K), I) %*% matrix(rexp(K * J), K) + matrix(rnorm(I * J), I)
    if (frac > 0) X[sample(length(X), round(frac * length(X)))] <- NA
    list(X = X, K = K)
  }
  sparse <- function() {
    set.seed(8)
    X <- Matrix::rsparsematrix(2000, 1000, 0.05, rand.x = function(n) rexp(n) * 3)
    list(X = X, K = 10L)
  }
  nmtf_sim <- function() {
    set.seed(9)
    X <- matrix(rexp(600 * 5), 600) %*% matrix(rexp(20), 5) %*% t(matrix(rexp(400 * 4), 400)) +
      matrix(rnorm(600 * 400), 600)
    X[sample(length(X), 0.2 * length(X))] <- NA
    list(X = X, K = c(5L, 4L))
  }
  cases <- list("leukemia, K = 4" = list(X = bnmf::leukemia, K = 4L),
                "1000 x 1000, K = 20, complete" = sim(0),
                "1000 x 1000, K = 20, 20% missing" = sim(0.2),
                "sparse 2000 x 1000, density 0.05, K = 10" = sparse(),
                "leukemia, NMTF K = L = 3" = list(X = bnmf::leukemia, K = c(3L, 3L)),
                "600 x 400 NMTF K = 5, L = 4, 20% missing" = nmtf_sim())
  gdsc <- file.path("..", "shared", "data", "gdsc", "ic50.txt")
  if (file.exists(gdsc)) {
    cases[["GDSC IC50 707 x 139, K = 10"]] <-
      list(X = as.matrix(utils::read.table(gdsc, na.strings = "nan")), K = 10L)
  }
  only <- Sys.getenv("BNMF_BENCH_CASES", "")
  if (nzchar(only)) cases <- cases[grepl(only, names(cases))]
  out <- list()
  for (nm in names(cases)) {
    set.seed(1)
    t <- system.time(fit <- bnmf(cases[[nm]]$X, rank = cases[[nm]]$K, method = "vb",
                                 iter = iter, tol = 1e-8, progress = FALSE))[["elapsed"]]
    e <- elbo(fit)
    out[[nm]] <- list(elbo = e, sec = t / length(e))
  }
  saveRDS(list(out = out, blas = extSoftVersion()[["BLAS"]]), child)
  quit(save = "no")
}

args <- commandArgs(TRUE)
if (length(args) < 2L) stop("usage: vb-scale.R LIB_A LIB_B [rounds]")
libs <- c(A = args[1], B = args[2])
rounds <- if (length(args) >= 3L) as.integer(args[3]) else 2L
self <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
run <- function(v) {
  f <- tempfile(fileext = ".rds")
  status <- system2(file.path(R.home("bin"), "Rscript"), self,
                    env = c(paste0("R_LIBS=", libs[[v]]), paste0("BNMF_VBS_CHILD=", f)))
  if (status != 0L) stop("version ", v, " failed")
  readRDS(f)
}
# the first sweep whose relative change is at most tol (else the last)
stop_at <- function(e, tol) {
  ok <- which(abs(diff(e)) <= tol * abs(e[-1]))
  if (length(ok)) ok[1] + 1L else length(e)
}
res <- list()
blas <- NULL
for (r in seq_len(rounds)) {
  order <- if (r %% 2) c("A", "B") else c("B", "A")
  got <- list()
  for (v in order) {
    g <- run(v)
    got[[v]] <- g$out
    blas <- g$blas
  }
  for (nm in names(got$A)) {
    a <- got$A[[nm]]
    b <- got$B[[nm]]
    sa <- stop_at(a$elbo, 1e-6)
    sb <- stop_at(b$elbo, 1e-6)
    target <- a$elbo[sa]
    na <- which(a$elbo >= target)[1]
    nb <- which(b$elbo >= target)[1]
    # the best ELBO either reaches, and the sweeps to within 1e-7 of it
    best <- max(a$elbo, b$elbo)
    near <- best - 1e-7 * abs(best)
    res[[length(res) + 1L]] <- data.frame(
      case = nm, round = r, a_sweeps = na, b_sweeps = nb,
      a_opt = which(a$elbo >= near)[1], b_opt = which(b$elbo >= near)[1],
      a_s = na * a$sec, b_s = nb * b$sec, ratio = (nb * b$sec) / (na * a$sec),
      a_stop = sa, b_stop = sb, a_elbo = a$elbo[sa], b_elbo = b$elbo[sb])
  }
}
res <- do.call(rbind, res)
cat("## VB fits, A =", libs[["A"]], ", B =", libs[["B"]], "\n\n")
cat("- ", format(Sys.time(), "%Y-%m-%d %H:%M %Z", tz = "UTC"), "; BLAS: ", blas, "; ",
    rounds, " rounds\n", sep = "")
cat("- to target: sweeps and seconds to the ELBO where A stops at tol = 1e-6; median (range) over rounds\n")
cat("- at tol = 1e-6: the sweep where each stops and its ELBO (median over rounds)\n\n")
cat("- to the optimum: sweeps to within 1e-7 (relative) of the best ELBO either reaches (NA: not reached before the fit stopped, at tol = 1e-8 or BNMF_BENCH_ITER sweeps)\n\n")
cat("| case | A: sweeps, s to target | B: sweeps, s to target | B / A (s) | A stops: sweep, ELBO | B stops: sweep, ELBO | to the optimum: A, B |\n")
cat("|---|---|---|---|---|---|---|\n")
mr <- function(x, d = 2) {
  if (length(x) == 1L) return(formatC(x, format = "f", digits = d))
  sprintf("%s (%s-%s)", formatC(median(x), format = "f", digits = d),
          formatC(min(x), format = "f", digits = d), formatC(max(x), format = "f", digits = d))
}
for (nm in unique(res$case)) {
  x <- res[res$case == nm, ]
  cat(sprintf("| %s | %s, %s | %s, %s | %s | %s, %.2f | %s, %.2f | %s, %s |\n", nm,
              mr(x$a_sweeps, 0), mr(x$a_s), mr(x$b_sweeps, 0), mr(x$b_s), mr(x$ratio),
              mr(x$a_stop, 0), median(x$a_elbo), mr(x$b_stop, 0), median(x$b_elbo),
              mr(x$a_opt, 0), mr(x$b_opt, 0)))
}
