# RRT grown from one given start: the 200 x 200 Laurberg toy (laurberg_toy(),
# two exact NMFs, Uniform(-0.01, 0.01) noise), started at an ICM solution
# (bnmf(method = "icm"), seed 1), default settings otherwise, under both
# likelihoods (Uniform: the default epsilon). What the tree does: candidates
# processed and accepted, nodes, extensions, why it stopped, the first step
# at the end, the largest angle of a node from the start (mean column
# angle of Q, degrees), and the WAD of the accepted candidates to the two
# known solutions.
# Run: R_LIBS=<lib> Rscript bench/rrt-given-start.R [seconds per search, default 60]
#        [output name, default given-start]
suppressMessages(library(bnmf))
`%||%` <- function(a, b) if (is.null(a)) b else a
ns <- asNamespace("bnmf")
secs <- as.numeric(commandArgs(TRUE)[1])
if (is.na(secs)) secs <- 60
out_name <- commandArgs(TRUE)[2]
if (is.na(out_name)) out_name <- "given-start"
set.seed(2)
toy <- ns$laurberg_toy(200, noise = 0.01)
s1 <- toy$solutions[[1]]
s2 <- toy$solutions[[2]]
set.seed(1)
icm <- bnmf(toy$X, rank = 3, method = "icm")
start <- list(W = icm$W, H = icm$H)
cat(sprintf("ICM start: WAD %.2f deg to s1, %.2f deg to s2\n", wad(start, s1), wad(start, s2)))
res <- list()
for (lik in c("gaussian", "uniform")) {
  set.seed(3)
  t0 <- proc.time()
  fit <- bnmf(toy$X, rank = 3, method = "rrt", likelihood = lik, init = start,
              control = rrt_control(time_limit = secs))
  cpu <- sum((proc.time() - t0)[c(1, 2)])
  st <- fit$stats
  ang <- if (ncol(fit$nodes) > 1) {
    max(ns$node_distances(matrix(fit$nodes[, 1], 3, 3), fit$nodes[, -1, drop = FALSE])$angle)
  } else 0
  d <- vapply(fit$accepted, function(f) c(wad(f, s1), wad(f, s2)), numeric(2))
  res[[lik]] <- data.frame(likelihood = lik, rate = fit$prior$rate, cpu = cpu,
                           time = st$time, processed = st$processed, accepted = st$accepted,
                           kept = length(fit$components), nodes = st$nodes,
                           expansions = st$expansions, stop = st$stop,
                           first_step = st$first_step %||% NA_real_, max_angle = ang,
                           max_wad_s1 = max(d[1, ]), min_wad_s2 = min(d[2, ]))
  print(res[[lik]], row.names = FALSE)
}
dir.create("bench/rrt-results", showWarnings = FALSE)
saveRDS(do.call(rbind, res), sprintf("bench/rrt-results/%s.rds", out_name))
