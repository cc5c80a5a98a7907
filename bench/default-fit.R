# The default Gibbs fit's sweep against the BLAS floor, on one chain, under
# both BLAS libraries.
#
#   R_LIBS=<lib> Rscript bench/default-fit.R [rounds = 10]   (from the package root)
#
# What `bnmf(X, 20)` does per kept draw, at I = J = 1000, K = 20 (the sweep
# table's X), in units of the floor X %*% t(H) + t(W) %*% X. Unlike the sweep
# table, whose rows are separate chains, every kind of sweep below advances
# one and the same chain, so their differences are those of the work, not of
# where each chain happens to be; and the clock is Sys.time() (microseconds),
# not proc.time() (milliseconds, which is a sixth of a 3.5 ms floor).
#
# The kinds, in a random order each round, each in 4 alternations of (one
# floor, 16 sweeps):
#   - burn-in: a Gibbs sweep that keeps nothing;
#   - default fit: the same with the running moments, WH's from every 4th
#     kept draw (wh_thin = 4), as a chain of bnmf() runs its kept draws;
#   - both again under L'Ecuyer-CMRG, the generator of bnmf()'s chains (the
#     first two: Mersenne-Twister, the session's default);
#   - WH every kept draw (wh_thin = 1);
#   - the running moments of W, H and tau without WH's.
# Rounds alternate R's reference BLAS and OpenBLAS with one thread
# (bench/openblas.sh), one process per round and BLAS, swapping which goes
# first every round; each process builds the same chain (set.seed) and makes
# 100 warm-up sweeps. Cells: median (min-max) over rounds of the round's
# sweep time over its floor time; "pooled": the median sweep time over the
# median of every floor of that BLAS in the run.

args <- commandArgs(TRUE)
child <- Sys.getenv("BNMF_DF_CHILD", "")
here <- if (file.exists("bench/chain-setup.R")) "bench" else "."

kinds <- list(
  list(name = "Gibbs, burn-in sweep", acc = FALSE, thin = 1L, rng = "Mersenne-Twister"),
  list(name = "Gibbs, default fit (wh_thin = 4)", acc = TRUE, thin = 4L, rng = "Mersenne-Twister"),
  list(name = "Gibbs, burn-in sweep, L'Ecuyer-CMRG", acc = FALSE, thin = 1L, rng = "L'Ecuyer-CMRG"),
  list(name = "Gibbs, default fit, L'Ecuyer-CMRG (as bnmf() runs it)", acc = TRUE, thin = 4L,
       rng = "L'Ecuyer-CMRG"),
  list(name = "Gibbs, WH every kept draw (wh_thin = 1)", acc = TRUE, thin = 1L,
       rng = "Mersenne-Twister"),
  list(name = "Gibbs, the moments of W, H and tau only (no WH)", acc = TRUE, thin = 1L,
       rng = "Mersenne-Twister", no_wh = TRUE)
)

if (nzchar(child)) {
  # One round in this process: the timings go to the RDS file `child`.
  suppressPackageStartupMessages(library(bnmf))
  source(file.path(here, "chain-setup.R"))
  now <- function() as.numeric(Sys.time())
  I <- 1000L
  J <- 1000L
  K <- 20L
  X <- bench_table_x(I, J, K)
  Wf <- matrix(rexp(I * K), I, K)
  Hf <- matrix(rexp(K * J), K, J)
  floor_once <- function() {
    t0 <- now()
    a <- X %*% t(Hf)
    b <- t(Wf) %*% X
    now() - t0
  }
  ch <- bench_chain(X, K, "gibbs", FALSE, keep_wh = TRUE)
  # the same chain without WH's moments (a list sharing the state's vectors)
  st_no_wh <- ch$state
  st_no_wh$WH_mean <- numeric()
  sweeps <- function(n, kd) {
    RNGkind(kd$rng)
    st <- if (isTRUE(kd$no_wh)) st_no_wh else ch$state
    invisible(bnmf:::engine_sweeps(st, ch$data, ch$prior, n, rule = "gibbs",
                                   masked = FALSE, accumulate = kd$acc, wh_thin = kd$thin))
  }
  sweeps(100L, kinds[[1L]])
  invisible(replicate(3L, floor_once()))
  n_alt <- 4L
  per <- 16L
  sweep_t <- floor_t <- numeric(length(kinds))
  for (m in sample(seq_along(kinds))) {
    invisible(gc())
    sweeps(per, kinds[[m]]) # settles the kind's generator and, for wh_thin = 1, wh_wait
    f <- s <- 0
    for (a in seq_len(n_alt)) {
      f <- f + floor_once()
      t0 <- now()
      sweeps(per, kinds[[m]])
      s <- s + now() - t0
    }
    floor_t[m] <- f / n_alt
    sweep_t[m] <- s / (n_alt * per)
  }
  saveRDS(list(sweep_t = sweep_t, floor_t = floor_t,
               blas = unname(extSoftVersion()["BLAS"])), child)
  quit(save = "no")
}

rounds <- if (length(args)) as.integer(args[1L]) else 10L
tmp <- tempfile("default-fit")
dir.create(tmp)
run_one <- function(blas, r) {
  out <- file.path(tmp, sprintf("%s-%02d.rds", blas, r))
  cmd <- c(if (blas == "openblas") file.path(here, "openblas.sh"), "Rscript",
           file.path(here, "default-fit.R"))
  status <- system2(cmd[1L], cmd[-1L], stdout = FALSE, env = paste0("BNMF_DF_CHILD=", out))
  if (status != 0 || !file.exists(out)) stop("default-fit.R failed under ", blas)
  readRDS(out)
}
res <- list(reference = list(), openblas = list())
t_start <- proc.time()[["elapsed"]]
for (r in seq_len(rounds)) {
  for (b in if (r %% 2) c("reference", "openblas") else c("openblas", "reference")) {
    res[[b]][[r]] <- run_one(b, r)
  }
}

stack <- function(b, field) do.call(rbind, lapply(res[[b]], `[[`, field))
ratio <- function(b) stack(b, "sweep_t") / stack(b, "floor_t")
cell <- function(x) sprintf("%.2f (%.2f-%.2f)", median(x), min(x), max(x))
source(file.path(here, "machine.R"))
cat("## The default Gibbs fit on one chain (I = J = 1000, K = 20, dense)\n\n")
cat("- bnmf ", format(utils::packageVersion("bnmf")), "; ", R.version.string, "; ",
    format(Sys.time(), "%Y-%m-%d %H:%M %Z"), "\n", sep = "")
cat("- machine: ", cpu_desc(), "\n", sep = "")
cat("- reference: `", res$reference[[1L]]$blas, "`\n", sep = "")
cat("- OpenBLAS (1 thread): `", res$openblas[[1L]]$blas, "`\n", sep = "")
cat(sprintf("- %d rounds alternating the two BLAS; floor %.2f ms (reference), %.2f ms (OpenBLAS); %.0f s\n\n",
            rounds, 1000 * median(stack("reference", "floor_t")),
            1000 * median(stack("openblas", "floor_t")), proc.time()[["elapsed"]] - t_start))
cat("| sweep | reference BLAS | ms | pooled | OpenBLAS, 1 thread | ms | pooled |\n",
    "|---|---:|---:|---:|---:|---:|---:|\n", sep = "")
row <- function(name, rr, ro, m = NULL) {
  extra <- function(b) {
    if (is.null(m)) return(" - | - ")
    st <- stack(b, "sweep_t")[, m]
    sprintf(" %.2f | %.2f ", 1000 * median(st), median(st) / median(stack(b, "floor_t")))
  }
  cat("| ", name, " | ", cell(rr), " |", extra("reference"), "| ", cell(ro), " |",
      extra("openblas"), "|\n", sep = "")
}
for (m in seq_along(kinds)) row(kinds[[m]]$name, ratio("reference")[, m], ratio("openblas")[, m], m)
# Per round, on the same chain: what the moments add to a sweep.
row("default fit - burn-in (Mersenne-Twister)", ratio("reference")[, 2L] - ratio("reference")[, 1L],
    ratio("openblas")[, 2L] - ratio("openblas")[, 1L])
row("default fit - burn-in (L'Ecuyer-CMRG)", ratio("reference")[, 4L] - ratio("reference")[, 3L],
    ratio("openblas")[, 4L] - ratio("openblas")[, 3L])
row("the moments of W, H and tau - burn-in", ratio("reference")[, 6L] - ratio("reference")[, 1L],
    ratio("openblas")[, 6L] - ratio("openblas")[, 1L])
row("(WH every kept draw - burn-in) / 4", (ratio("reference")[, 5L] - ratio("reference")[, 1L]) / 4,
    (ratio("openblas")[, 5L] - ratio("openblas")[, 1L]) / 4)
