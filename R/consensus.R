# Interpretation over the posterior: the factorisations a fit holds (its
# kept draws, its chains or restarts, or its weighted particles), the samples'
# dominant factors in each (membership(), consensus_matrix()) and the top
# features of each factor with the probability of being among them
# (markers()).

# The factorisations of a fit, each a list(W, H), with their weights (summing
# to one) and where they come from: the kept draws (Gibbs with
# keep = "draws", HMC), the particles (weighted), 100 draws from the
# variational posterior q of a VB fit (the kept restart's; the session's
# random numbers), else the chains or restarts (their posterior means, or
# their point estimates), factors matched to the fit's own by
# align_factors()'s assignment.
posterior_factorisations <- function(fit) UseMethod("posterior_factorisations")

# The number of factorisations drawn from the q of a VB fit.
n_q_draws <- 100L

posterior_factorisations.bnmf <- function(fit) {
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  if (!is.null(fit$draws)) return(kept_factorisations(fit$draws, "W", "H", I, J, K))
  if (inherits(fit, "bnmf_vb")) return(q_factorisations(fit))
  if (!is.null(fit$particles)) {
    fs <- lapply(seq_along(fit$particles), function(m) {
      p <- align_particle(fit$particles[[m]], fit$alignment[[m]])
      list(W = unname(p$W), H = unname(p$H))
    })
    return(list(fs = fs, weights = unname(fit$weights), source = "particles"))
  }
  chain_wh <- lapply(fit$chains, function(ch) {
    list(W = matrix(ch$W_mean %||% ch$W, I, K), H = matrix(ch$H_mean %||% ch$H, K, J))
  })
  aligned_chains(fit, chain_wh)
}

# The kept draws of every chain (`draws[[c]][[w]]`, I K x draws, and
# `[[h]]`), each a factorisation of equal weight.
kept_factorisations <- function(draws, w, h, I, J, K) {
  fs <- unlist(lapply(draws, function(d) {
    lapply(seq_len(ncol(d[[w]])), function(t) {
      list(W = matrix(d[[w]][, t], I, K), H = matrix(d[[h]][, t], K, J))
    })
  }), recursive = FALSE)
  list(fs = fs, weights = rep(1 / length(fs), length(fs)), source = "draws")
}

# The chains' or restarts' factorisations (each a list(W, H)), factors
# matched to the fit's own; a fit without chains (Poisson) is its estimate.
aligned_chains <- function(fit, chain_wh) {
  ref <- unname(wh_view(fit)$W)
  if (!length(chain_wh)) chain_wh <- list(lapply(wh_view(fit), unname))
  fs <- lapply(chain_wh, function(f) {
    p <- match_factors(ref, f$W)
    list(W = f$W[, p, drop = FALSE], H = f$H[p, , drop = FALSE])
  })
  list(fs = fs, weights = rep(1 / length(fs), length(fs)),
       source = if (fit$method == "gibbs") "chains" else "restarts")
}

# Draws from the q of a Gaussian VB fit (NMF, NMTF), of equal weight; q's
# own labelling is the fit's, so no factors need matching.
q_factorisations <- function(fit) {
  fs <- lapply(vb_q_draws(fit, n_q_draws), function(d) list(W = d$W, H = d$H))
  list(fs = fs, weights = rep(1 / length(fs), length(fs)), source = "q")
}

# NMTF: 100 draws from q for VB; else its chains' (nmtf_chain_factorisations()).
posterior_factorisations.bnmf_nmtf <- function(fit) {
  if (inherits(fit, "bnmf_vb")) return(q_factorisations(fit))
  nmtf_chain_factorisations(fit)
}

# NMTF: W = F and H = S t(G) of each chain or restart (its posterior mean for
# Gibbs), factors matched to the fit's own.
nmtf_chain_factorisations <- function(fit) {
  chain_wh <- lapply(fit$chains, function(ch) {
    st <- ch$state
    I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank[[1L]]; L <- fit$rank[[2L]]
    S <- matrix(st$S_mean %||% st$S, K, L)
    G <- matrix(st$G_mean %||% st$G, J, L)
    list(W = matrix(st$F_mean %||% st$F, I, K), H = S %*% t(G))
  })
  aligned_chains(fit, chain_wh)
}

# Poisson: the kept draws (keep = "draws", chains aligned); for VB 100 factorisations drawn
# from its variational posterior q (independent Gammas; the session's random
# numbers); else the estimate.
posterior_factorisations.bnmf_poisson <- function(fit) {
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  if (!is.null(fit$draws)) {
    # each chain's draws with its factors in the pooled fit's order
    draws <- lapply(seq_along(fit$draws), function(c) pois_aligned_draws(fit, c))
    return(kept_factorisations(draws, "W_draws", "H_draws", I, J, K))
  }
  q <- fit$q
  if (fit$method == "vb" && !is.null(q)) {
    n <- n_q_draws
    fs <- lapply(seq_len(n), function(t) {
      list(W = matrix(stats::rgamma(I * K, q$shape_W, q$rate_W), I, K),
           H = matrix(stats::rgamma(K * J, q$shape_H, q$rate_H), K, J))
    })
    return(list(fs = fs, weights = rep(1 / n, n), source = "q"))
  }
  aligned_chains(fit, list())
}

# The fit as W H: NMF and Poisson its W and H; NMTF W = F and H = S t(G),
# the samples' coefficients on the row clusters' factors.
wh_view <- function(fit) UseMethod("wh_view")

wh_view.bnmf <- function(fit) {
  f <- factors(fit)
  list(W = f$W, H = f$H)
}

wh_view.bnmf_nmtf <- function(fit) {
  H <- fit$S %*% t(fit$G)
  dimnames(H) <- list(colnames(fit$F), fit$dimnames[[2L]])
  list(W = fit$F, H = H)
}

# The dominant factor of every sample (or of the samples `samples` only):
# the factor with the largest excess contribution E[k, j] = C[k, j] -
# min_l C[k, l], where C[k, j] = sum(W[, k]) * H[k, j] is factor k's
# contribution to sample j and the minimum is over all the samples (so a
# sample's factor does not depend on which others are asked for). Samples
# where every factor is at its minimum (every E[, j] zero, as when there is
# one sample) go by the largest contribution. A baseline factor, large in
# every sample, keeps only its variation over the samples: a factor never
# wins the sample where its contribution is smallest unless every factor is
# at its minimum there, and a constant factor wins only such samples.
# Scale-free: C, hence E, does not change when a column of W is multiplied
# and the row of H divided by the same number. When every factor's
# contribution is zero in some sample (sparse H) this is the largest
# contribution.
dominant_factor <- function(W, H, samples = NULL) {
  C <- H * colSums(W)
  E <- C - apply(C, 1L, min)
  if (!is.null(samples)) {
    C <- C[, samples, drop = FALSE]
    E <- E[, samples, drop = FALSE]
  }
  d <- max.col(t(E), ties.method = "first")
  flat <- colSums(E > 0) == 0L
  if (any(flat)) d[flat] <- max.col(t(C[, flat, drop = FALSE]), ties.method = "first")
  d
}

#' Posterior consensus of the samples' clusters
#'
#' The Bayesian version of the consensus matrix of the NMF package (Brunet
#' et al. 2004): entry `(j, l)` is the posterior probability that samples `j`
#' and `l` have the same dominant factor (the rule is in the section Dominant
#' factor). The probability is
#' taken over the factorisations the fit holds: the kept draws of a Gibbs
#' fit with `keep = "draws"` or of an HMC fit, the weighted particles of a
#' particle fit, 100 factorisations drawn from the variational posterior q
#' of a VB fit of any model (Gaussian NMF and NMTF: independent truncated
#' normals, of the restart kept; Poisson: independent Gammas), drawn with the
#' session's random numbers (so that the result depends on the random number
#' state: `set.seed()` first), else the chains (Gibbs, their posterior
#' means) or restarts (ICM, NP: their estimates), so that a fit with one
#' chain and no draws gives a 0/1 matrix. For a tri-factorisation the
#' samples' side is `S t(G)` (with `W = F`). `plot()` shows it as a heatmap, samples ordered by
#' average-linkage clustering of `1 - consensus` (the dendrogram in the
#' margins), with tracks above the map: the sample groups `groups`, each
#' sample's cluster and how sure it is (the posterior cluster and its
#' probability when `membership` is given, as `plot(fit, type =
#' "consensus")` does; else the tree cut at consensus 0.5 and the sample's
#' mean consensus with the rest of its cluster), and the silhouette width of
#' the clusters under the distance `1 - consensus` (when the recommended
#' package cluster is installed); two well-separated clusters are two
#' blocks.
#'
#' @section Dominant factor:
#' With `C[k, j] = sum(W[, k]) * H[k, j]`, factor `k`'s contribution to
#' sample `j`, the dominant factor of sample `j` is the factor with the
#' largest excess contribution `C[k, j] - min_l C[k, l]`: what the factor
#' gives the sample beyond the least it gives any sample (the minimum over
#' all the fit's samples, also when `samples` asks for some of them). Where
#' every factor is at its minimum (every excess zero) the largest
#' contribution decides. A baseline factor, one whose coefficients are large
#' in every sample, has the largest contribution everywhere, but its excess
#' is only its variation over the samples: a factor wins the sample where its
#' contribution is smallest only if every factor is at its minimum there,
#' and a constant factor wins only such samples. When every factor's contribution is zero in some
#' sample (a sparse `H`) the rule is the largest contribution. The rule is
#' scale-free: multiplying a column of `W` and dividing the row of `H` by the
#' same number changes neither `C` nor the dominant factor.
#'
#' @param fit A `bnmf` fit.
#' @param samples `NULL` (every sample), or the samples (numbers or column
#'   names) whose consensus to compute. The whole matrix of a fit with many
#'   samples is refused (class `bnmf_error_dense`) when it has more than
#'   `getOption("bnmf.max_dense")` entries (5e7 by default) and more than the
#'   data; ask for part of it then.
#' @param x A `bnmf_consensus` matrix.
#' @param groups For `plot()`: `NULL` or a factor of the samples' known
#'   groups (length J), drawn as a colour bar with a legend.
#' @param main Title.
#' @param membership For `plot()`: `NULL` or [membership()] of the fit,
#'   whose clusters and their posterior probabilities the map shows.
#' @param ... Not used by `consensus_matrix()`; graphical parameters for
#'   `plot()` (`col`, `zlim`, `breaks`, `xlab`, ... of the map; other
#'   names are an error).
#' @return `consensus_matrix()`: a J x J matrix of class `bnmf_consensus`
#'   with attributes `n` (the number of factorisations) and `source`
#'   (`"draws"`, `"particles"`, `"q"` (draws from a VB fit's variational
#'   posterior), `"chains"` or `"restarts"`). `plot()`: `x`,
#'   invisibly.
#' @references
#' Brunet, J.-P., Tamayo, P., Golub, T. R. and Mesirov, J. P. (2004).
#' Metagenes and molecular pattern discovery using matrix factorization.
#' *PNAS* 101(12), 4164-4169. \doi{10.1073/pnas.0308531101}
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, 1:30], rank = 2, iter = 200, keep = "draws")
#' C <- consensus_matrix(fit)
#' range(C)
#' plot(C, groups = leukemia_samples$cell_type[1:30])
#' @export
consensus_matrix <- function(fit, samples = NULL, ...) {
  if (!inherits(fit, "bnmf")) abort_not_fit(fit)
  check_dots_empty(list(...), c("fit", "samples"), "consensus_matrix")
  J <- fit$dims[2L]
  cn <- fit$dimnames[[2L]]
  samples <- if (is.null(samples)) seq_len(J) else one_index(samples, J, cn, "samples")
  n <- length(samples)
  if (as.double(n)^2 > max_dense() && as.double(n)^2 > prod(as.double(fit$dims))) {
    abort_dense(sprintf(paste(
      "`consensus_matrix()` of %s samples would be a dense %s x %s matrix (%s GB), above the",
      "limit getOption(\"bnmf.max_dense\") = %s values. Ask for part of it,",
      "`consensus_matrix(fit, samples = )`, or use `membership(fit)` (each sample's cluster and",
      "its posterior probability); or raise the limit with `options(bnmf.max_dense = )`."),
      format(n, big.mark = ","), format(n, big.mark = ","), format(n, big.mark = ","),
      format(signif(8 * as.double(n)^2 / 1e9, 3)),
      format(max_dense(), big.mark = ",", scientific = FALSE)))
  }
  pf <- posterior_factorisations(fit)
  C <- matrix(0, n, n)
  for (s in seq_along(pf$fs)) {
    d <- dominant_factor(pf$fs[[s]]$W, pf$fs[[s]]$H, samples)
    C <- C + pf$weights[s] * outer(d, d, "==")
  }
  C <- pmin(C / sum(pf$weights), 1)
  dimnames(C) <- list(cn[samples], cn[samples])
  structure(C, n = length(pf$fs), source = pf$source, class = "bnmf_consensus")
}

#' @rdname consensus_matrix
#' @export
plot.bnmf_consensus <- function(x, groups = NULL, main = NULL, membership = NULL, ...) {
  check_dots_graphics(list(...))
  C <- unclass_consensus(x)
  J <- nrow(C)
  if (is.null(rownames(C))) dimnames(C) <- list(as.character(seq_len(J)), as.character(seq_len(J)))
  groups <- check_groups(groups, J)
  D <- stats::as.dist(1 - C)
  # the clusters: the posterior clusters of membership() when given, else
  # the average-linkage tree of 1 - consensus cut at 0.5 (samples joined
  # when their average consensus exceeds one half); each sample's
  # probability: its posterior probability, else its mean consensus with the
  # other members of its cluster
  if (!is.null(membership)) {
    if (!is.data.frame(membership) || nrow(membership) != J ||
        is.null(membership$cluster) || is.null(membership$probability)) {
      abort_input(sprintf("`membership` must be NULL or a data frame from `membership()` with %d rows.", J))
    }
    cl <- droplevels(as.factor(membership$cluster))
    prob <- membership$probability
  } else if (J > 2L) {
    ct <- stats::cutree(stats::hclust(D, method = "average"), h = 0.5)
    cl <- factor(ct, levels = sort(unique(ct)), labels = paste0("c", sort(unique(ct))))
    prob <- vapply(seq_len(J), function(j) {
      same <- setdiff(which(ct == ct[j]), j)
      if (length(same)) mean(C[j, same]) else 1
    }, numeric(1))
  } else {
    cl <- factor(rep("c1", J))
    prob <- rep(1, J)
  }
  tracks <- list()
  if (!is.null(groups)) tracks$group <- groups
  tracks$cluster <- cl
  tracks[[if (is.null(membership)) "cohesion" else "P(cluster)"]] <-
    hm_prob_track(prob)
  sil <- hm_silhouette(cl, D)
  if (!is.null(sil)) tracks$silhouette <- sil
  main <- main %||% sprintf("Posterior consensus (%d %s)", attr(x, "n"), attr(x, "source"))
  hm_call(list(C, col = grDevices::hcl.colors(32, "Blues 3", rev = TRUE), breaks = "linear",
               zlim = c(0, 1), main = main, xlab = "sample", ylab = "sample",
               key_title = "P(same\ncluster)", tracks = tracks, row_dist = D, col_dist = D),
          list(...))
  invisible(x)
}

#' Cluster membership of the samples
#'
#' Each sample's cluster is its dominant factor, and its posterior
#' probability the share of the fit's factorisations (draws, particles,
#' 100 draws from the variational posterior q of a VB fit of any model,
#' chains or restarts; factors matched across them) in which the sample has
#' that dominant factor. For a VB fit it is the probability under q, drawn
#' with the session's random numbers (`set.seed()` first for reproducible
#' probabilities).
#' `summary()` of a fit reports it.
#'
#' The dominant factor of sample `j` is the factor `k` with the largest
#' excess contribution `C[k, j] - min_l C[k, l]`, where
#' `C[k, j] = sum(W[, k]) * H[k, j]` is the factor's contribution to the
#' sample and the minimum is over the samples: what the factor gives this
#' sample beyond the least it gives any sample. Samples where every factor is
#' at its minimum go by the largest contribution `C[k, j]`. The excess, not
#' the contribution, decides because of baseline factors: on expression data
#' a factor whose coefficients are large in every sample (the level common
#' to all samples) has the largest contribution everywhere and would put
#' every sample in one cluster. Its excess is only its variation over the
#' samples: a factor wins the sample where its contribution is smallest only
#' if every factor is at its minimum there, and a constant factor wins only
#' such samples. When every
#' factor's contribution is zero in some sample (sparse `H`) the rule is the
#' largest contribution. It is scale-free: multiplying `W[, k]` by `c` and
#' dividing `H[k, ]` by `c` leaves every cluster unchanged.
#'
#' @param fit A `bnmf` fit.
#' @return A data frame with one row per sample: `sample` (the column name,
#'   or number), `cluster` (a factor with the factors' names as levels: the
#'   most probable dominant factor), `probability` (its posterior
#'   probability) and `estimate` (the dominant factor of the fit's point
#'   estimate or posterior mean); attributes `n` (the number of
#'   factorisations the probabilities are over: with 1, a fit with one chain
#'   or restart and no draws (Gibbs, ICM, NP; a VB fit is drawn from, 100),
#'   they are 0 or 1 and no posterior probability,
#'   and `summary()` does not print them) and `source` (as for
#'   [consensus_matrix()]).
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, 1:30], rank = 2, iter = 200, keep = "draws")
#' m <- membership(fit)
#' table(m$cluster, leukemia_samples$cell_type[1:30])
#' @export
membership <- function(fit) {
  if (!inherits(fit, "bnmf")) abort_not_fit(fit)
  pf <- posterior_factorisations(fit)
  f <- wh_view(fit)
  K <- ncol(f$W)
  J <- fit$dims[2L]
  P <- cluster_probs(pf, K, J)
  kn <- factor_names(K)
  best <- max.col(t(P), ties.method = "first")
  out <- data.frame(sample = fit$dimnames[[2L]] %||% as.character(seq_len(J)),
                    cluster = factor(kn[best], levels = kn),
                    probability = P[cbind(best, seq_len(J))],
                    estimate = factor(kn[dominant_factor(f$W, f$H)], levels = kn),
                    stringsAsFactors = FALSE)
  # how many factorisations the probabilities are over (1: not a posterior
  # probability), and which
  attr(out, "n") <- length(pf$fs)
  attr(out, "source") <- pf$source
  out
}

# The posterior probability that factor k is the dominant factor of sample
# j (K x J, columns summing to one): the weighted share of the
# factorisations `pf` (posterior_factorisations()) in which it is.
cluster_probs <- function(pf, K, J) {
  P <- matrix(0, K, J)
  for (s in seq_along(pf$fs)) {
    d <- dominant_factor(pf$fs[[s]]$W, pf$fs[[s]]$H)
    P[cbind(d, seq_len(J))] <- P[cbind(d, seq_len(J))] + pf$weights[s]
  }
  P / sum(pf$weights)
}

#' Marker features of each factor, with their uncertainty
#'
#' For each factor, the `n` features with the largest score at the fit's
#' estimate (posterior mean or point estimate of `W`), their 95% posterior
#' interval of `W[i, k]` where the fit has one, and the posterior
#' probability that the feature is among the factor's top `n`: the share of
#' the fit's factorisations (kept draws, particles, 100 draws from the
#' variational posterior q of a VB fit of any model, chains or restarts,
#' factors matched) in which its score is among the `n` largest. The draws
#' from q use the session's random numbers (`set.seed()` first). A marker
#' with probability near one is a marker whatever the posterior draw; one
#' near zero is in the list by chance of the point estimate. Fits without
#' draws (Gibbs, ICM, NP) and with a single chain or restart have
#' probability 0 or 1 only (fit with `keep = "draws"` for the posterior
#' probability).
#'
#' The score is `W[i, k]` itself (`by = "weight"`), or its weight times its
#' specificity (`by = "specificity"`): with the columns of `W` scaled to sum
#' to one, `W[i, k]^2 / sum_l W[i, l]`, which prefers features that load on
#' factor `k` rather than on every factor (such as highly expressed genes).
#'
#' @param fit A `bnmf` fit.
#' @param n Number of top features per factor, at most the number of
#'   features (by default 10, or all features when there are fewer).
#' @param by `"weight"` or `"specificity"`.
#' @return A data frame with columns `factor`, `rank` (1 to `n`), `feature`
#'   (row name, or row number), `W` (the estimate), `lower`, `upper` (the
#'   95% interval; `NA` for point estimates), `score` and `prob_top` (the
#'   posterior probability of being among the top `n`).
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, 1:30], rank = 2, iter = 300, keep = "draws")
#' head(markers(fit, n = 5))
#' @export
markers <- function(fit, n = 10, by = c("weight", "specificity")) {
  if (!inherits(fit, "bnmf")) abort_not_fit(fit)
  by <- check_choice(by, c("weight", "specificity"), "by")
  I <- fit$dims[1L]
  # The default, 10, is clipped to the number of features; a given `n` is not.
  n <- if (missing(n)) min(10L, I) else check_count(n, "n", min = 1)
  if (n > I) abort_input(sprintf("`n` (%d) must be at most the number of features, %d.", n, I))
  score <- function(W) {
    if (by == "weight") return(W)
    U <- sweep(W, 2L, pmax(colSums(W), .Machine$double.xmin), "/")
    U^2 / pmax(rowSums(U), .Machine$double.xmin)
  }
  pf <- posterior_factorisations(fit)
  W <- unname(wh_view(fit)$W)
  K <- ncol(W)
  hits <- top_probs(pf, n, score, I, K)
  sc <- score(W)
  tp <- top_n(sc, n)
  rn <- fit$dimnames[[1L]] %||% as.character(seq_len(I))
  kn <- factor_names(K)
  out <- do.call(rbind, lapply(seq_len(K), function(k) {
    i <- tp[, k]
    band <- marker_band(fit, k, pf)
    data.frame(factor = kn[k], rank = seq_len(n), feature = rn[i], W = W[i, k],
               lower = if (is.null(band)) NA_real_ else band$lo[i],
               upper = if (is.null(band)) NA_real_ else band$hi[i],
               score = sc[i, k], prob_top = hits[i, k], stringsAsFactors = FALSE)
  }))
  out$factor <- factor(out$factor, levels = kn)
  rownames(out) <- NULL
  out
}

# The indices of the n largest entries of every column of the scores `s`
# (n x K).
top_n <- function(s, n) matrix(apply(s, 2L, function(v) order(-v)[seq_len(n)]), n, ncol(s))

# The posterior probability that feature i is among the `n` top features of
# factor k (I x K): the weighted share of the factorisations `pf` in which
# its score (`score(W)`) is among the n largest of the column.
top_probs <- function(pf, n, score, I, K) {
  hits <- matrix(0, I, K)
  for (s in seq_along(pf$fs)) {
    tp <- top_n(score(pf$fs[[s]]$W), n)
    idx <- cbind(as.vector(tp), rep(seq_len(K), each = n))
    hits[idx] <- hits[idx] + pf$weights[s]
  }
  # (a feature in the top of every factorisation sums its weights in
  # another order than sum() does: at most 1)
  pmin(hits / sum(pf$weights), 1)
}

# The 95% posterior interval of W[, k], or NULL (point estimates): the
# fit's basis_band() (Gibbs, VB), else the weighted quantiles of the draws
# or particles.
marker_band <- function(fit, k, pf = NULL) {
  if (inherits(fit, "bnmf_nmf") && inherits(fit, c("bnmf_gibbs", "bnmf_vb"))) {
    return(basis_band(fit, k))
  }
  pf <- pf %||% posterior_factorisations(fit)
  if (!pf$source %in% c("draws", "q")) return(NULL)
  d <- vapply(pf$fs, function(f) f$W[, k], numeric(fit$dims[1L]))
  q <- apply(matrix(d, fit$dims[1L]), 1L, stats::quantile, probs = c(0.025, 0.975))
  list(lo = q[1L, ], hi = q[2L, ])
}

# The sample groups of a plot: NULL, or a factor of length J.
check_groups <- function(groups, J) {
  if (is.null(groups)) return(NULL)
  if (!is.atomic(groups) || length(groups) != J) {
    abort_input(sprintf("`groups` must be NULL or a vector with one value per sample (%d).", J))
  }
  as.factor(groups)
}

# The clusters of a summary: sizes, mean posterior probability, and the
# samples whose cluster is uncertain.
cat_membership <- function(m, digits) {
  if (is.null(m) || !nrow(m)) return(invisible())
  tab <- table(m$cluster)
  if (identical(attr(m, "n"), 1L)) {
    # one factorisation: its clusters, with no probability to speak of
    cat(sprintf("Samples by cluster (dominant factor of the one estimate; for posterior probabilities fit several chains or keep = \"draws\"): %s\n",
                paste(sprintf("%s %d", names(tab), as.integer(tab)), collapse = ", ")))
    return(invisible())
  }
  p <- tapply(m$probability, m$cluster, mean)
  parts <- sprintf("%s %d%s", names(tab), as.integer(tab),
                   ifelse(tab > 0, sprintf(" (mean probability %s)", format(signif(p, digits))), ""))
  cat(sprintf("Samples by cluster (dominant factor): %s\n", paste(parts, collapse = ", ")))
  low <- sum(m$probability < 0.9)
  if (low) cat(sprintf("  %d sample%s with a posterior cluster probability below 0.9 (see membership())\n",
                       low, if (low > 1L) "s" else ""))
  invisible()
}
