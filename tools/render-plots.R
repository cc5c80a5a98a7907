# Render every plot of the package to PNG (900 x 700) for a look at the
# figures: Rscript tools/render-plots.R <directory>
# Small fits on the bundled golub data (the 300 genes of largest variance, 38
# samples, known types in golub_samples$type) and on simulated counts; one
# line per file is printed: the file and what it shows.
library(bnmf)
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args)) args[[1L]] else "plots"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
set.seed(1)
X <- golub[order(-apply(golub, 1, stats::var))[1:300], ]
type <- golub_samples$type
W <- matrix(stats::rgamma(60 * 3, 1, 1), 60, 3)
H <- matrix(stats::rgamma(3 * 24, 1, 1), 3, 24)
Y <- matrix(stats::rpois(60 * 24, 2 * W %*% H), 60, 24,
            dimnames = list(paste0("gene", 1:60), paste0("cell", 1:24)))

fits <- list(
  gibbs = bnmf(X, rank = 2, iter = 200, chains = 2, keep = "draws"),
  vb_ard = bnmf(X ~ nmf(4, prior = ard()), method = "vb", iter = 100),
  hmc = bnmf(X[1:100, ], rank = 2, method = "hmc", iter = 60),
  particles = bnmf(X[1:100, ], rank = 2, method = "particles", particles = 6, iter = 40),
  nmtf = bnmf(X ~ nmtf(2, 2), method = "gibbs", iter = 100),
  pois_vb = bnmf(Y, rank = 3, likelihood = "poisson", method = "vb", iter = 100),
  pois_ard = bnmf(Y ~ nmf(5, prior = ard()), likelihood = "poisson", method = "vb", iter = 100),
  ssvi = bnmf(Y, rank = 3, likelihood = "poisson", method = "ssvi", sparsity = "both",
              iter = 60),
  rrt = bnmf(Y[1:30, 1:12], rank = 3, method = "rrt", iter = 5,
             control = rrt_control(max_failures = 5, solver_iter = 50))
)
rank_cv <- select_rank(X[1:100, ], ranks = 1:3, criterion = "cv", method = "icm", folds = 3)
chib <- marginal_likelihood(bnmf(X[1:60, 1:20], rank = 2, iter = 300), samples = 200)

plots <- list(
  list("gibbs-trace", "Gibbs fit: log-likelihood and tau against the sweep, 2 chains, burn-in shaded",
       quote(plot(fits$gibbs))),
  list("gibbs-basis", "Gibbs fit: top 20 features of factor 1 with 95% posterior intervals",
       quote(plot(fits$gibbs, type = "basis", factor = 1))),
  list("gibbs-heatmap-coef", "Gibbs fit: factor shares per sample, clustered, tracks type/cluster/P/silhouette",
       quote(plot(fits$gibbs, type = "heatmap", groups = type))),
  list("gibbs-heatmap-basis", "Gibbs fit: top 15 features of each factor, clustered, factor and 95% interval-width tracks",
       quote(plot(fits$gibbs, type = "heatmap", what = "basis", n_top = 15))),
  list("gibbs-consensus", "Gibbs fit: posterior consensus map with dendrogram, type/cluster/P/silhouette tracks",
       quote(plot(fits$gibbs, type = "consensus", groups = type))),
  list("consensus-matrix", "plot(consensus_matrix()): tree cut at 0.5, cohesion and silhouette tracks",
       quote(plot(consensus_matrix(fits$gibbs)))),
  list("vb-ard", "VB ARD fit: each factor's relevance, switched-off line",
       quote(plot(fits$vb_ard, type = "ard"))),
  list("vb-trace", "VB fit: ELBO and tau against the iteration",
       quote(plot(fits$vb_ard))),
  list("hmc-trace", "HMC fit: log posterior against the iteration, chains in the legend",
       quote(plot(fits$hmc))),
  list("particles-weights", "Particle fit: Stein weights", quote(plot(fits$particles))),
  list("particles-distance", "Particle fit: weighted angular distances with colour key",
       quote(plot(fits$particles, type = "distance"))),
  list("particles-basis", "Particle fit: factor 1 of the 4 heaviest particles",
       quote(plot(fits$particles, type = "basis"))),
  list("particles-features", "Particle fit: top features of factor 1 in 4 particles",
       quote(plot(fits$particles, type = "features"))),
  list("nmtf-trace", "NMTF Gibbs fit: trace", quote(plot(fits$nmtf))),
  list("nmtf-heatmap", "NMTF fit: shares of the column factors per sample (S t(G)), clustered",
       quote(plot(fits$nmtf, type = "heatmap", groups = type))),
  list("nmtf-consensus", "NMTF fit: consensus map", quote(plot(fits$nmtf, type = "consensus",
                                                               groups = type))),
  list("nmtf-biclusters", "NMTF fit: golub by row/column cluster on quantile breaks, S block pattern",
       quote(plot(fits$nmtf, type = "biclusters"))),
  list("poisson-trace", "Poisson VB fit: ELBO", quote(plot(fits$pois_vb))),
  list("poisson-heatmap", "Poisson VB fit: coefficient heatmap", quote(plot(fits$pois_vb, type = "heatmap"))),
  list("poisson-ard", "Poisson ARD fit: Poisson signal of each factor",
       quote(plot(fits$pois_ard, type = "ard"))),
  list("ssvi-masks", "DS-NMF (SSVI) fit: mask probabilities with factor, gene and cell names",
       quote(plot(fits$ssvi, type = "masks"))),
  list("ssvi-trace", "DS-NMF (SSVI) fit: local log joint density", quote(plot(fits$ssvi))),
  list("rrt-elbo", "RRT fit: ELBO of the mixture, accepted candidates marked", quote(plot(fits$rrt))),
  list("rrt-persistence", "RRT fit: covering number against the radius",
       quote(plot(fits$rrt, type = "persistence"))),
  list("rrt-projection", "RRT fit: data and bases projected", quote(plot(fits$rrt, type = "projection"))),
  list("covering", "covering_number() of the particles: greedy cover persistence, annotated",
       quote(plot(covering_number(fits$particles)))),
  list("rank-cv", "select_rank(criterion = \"cv\"): held-out error per rank", quote(plot(rank_cv))),
  list("chib", "marginal_likelihood(): Chib's estimate against the samples", quote(plot(chib)))
)

for (p in plots) {
  f <- file.path(out, paste0(p[[1L]], ".png"))
  grDevices::png(f, width = 900, height = 700)
  res <- tryCatch({ eval(p[[3L]]); "" }, warning = function(w) paste("WARNING:", conditionMessage(w)),
                  error = function(e) paste("ERROR:", conditionMessage(e)))
  grDevices::dev.off()
  cat(sprintf("%-28s %s%s\n", basename(f), p[[2L]], if (nzchar(res)) paste0("  [", res, "]") else ""))
}
