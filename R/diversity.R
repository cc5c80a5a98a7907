# Diversity of factorisations: matching factors (alignment), the weighted
# angular distance (WAD) and greedy covering numbers (Masood and
# Doshi-Velez, "Rapid posterior exploration in Bayesian non-negative matrix
# factorization", section 2).

# ---- extracting factorisations ----------------------------------------------

# One factorisation from `x`: list(W, H), H NULL when only a basis is given.
as_factorisation <- function(x, arg) {
  if (inherits(x, "bnmf")) {
    W <- x$W
    H <- x$H
  } else if (is.list(x) && !is.data.frame(x) && !is.null(x$W)) {
    W <- x$W
    H <- x$H
  } else if (is.matrix(x) || inherits(x, "Matrix")) {
    W <- x
    H <- NULL
  } else {
    abort_input(sprintf("`%s` must be a basis matrix (features x factors), a list with `W` and `H`, or a bnmf fit.", arg))
  }
  W <- check_factor_matrix(W, if (is.matrix(x) || inherits(x, "Matrix")) arg else paste0(arg, "$W"))
  if (!is.null(H)) {
    H <- check_factor_matrix(H, paste0(arg, "$H"))
    if (nrow(H) != ncol(W)) {
      abort_input(sprintf("`%s$H` must have %d rows (one per column of `%s$W`), not %d.",
                          arg, ncol(W), arg, nrow(H)))
    }
  }
  list(W = W, H = H)
}

check_factor_matrix <- function(M, arg) {
  if (inherits(M, "Matrix")) M <- as.matrix(M)
  if (!is.numeric(M) || !is.matrix(M) || length(M) == 0L || anyNA(M) ||
      any(!is.finite(M)) || any(M < 0)) {
    abort_input(sprintf("`%s` must be a non-empty numeric matrix of finite values >= 0.", arg))
  }
  storage.mode(M) <- "double"
  M
}

# A set of factorisations from `x`: a particle fit (its particles), a Gibbs
# fit (one per chain, or its kept draws), another fit (one), or a list of
# fits / list(W, H) / basis matrices.
as_factorisation_set <- function(x, arg, use = "means", max_draws = 200L) {
  if (inherits(x, "bnmf_particles")) {
    fs <- x$particles
    names(fs) <- names(x$weights) %||% paste0("particle", seq_along(fs))
    return(fs)
  }
  if (inherits(x, "bnmf_nmf") && inherits(x, c("bnmf_gibbs", "bnmf_hmc"))) {
    return(chain_factorisations(x, use, max_draws))
  }
  if (inherits(x, "bnmf_rrt")) {
    # The mixture's components; with use = "draws" every accepted candidate.
    return(if (use == "draws" && length(x$accepted)) x$accepted else x$components)
  }
  if (inherits(x, "bnmf_nmf")) return(list(as_factorisation(x, arg)))
  if (inherits(x, "bnmf")) {
    # (an NMTF fit: its chains or restarts, not draws from a VB fit's q)
    fs <- if (inherits(x, "bnmf_nmtf")) nmtf_chain_factorisations(x)$fs else
      posterior_factorisations(x)$fs
    names(fs) <- paste0(if (x$method == "gibbs") "chain" else "restart", seq_along(fs))
    return(fs)
  }
  if (is.list(x) && !is.data.frame(x) && is.null(x$W) && length(x) >= 1L) {
    fs <- lapply(seq_along(x), function(m) as_factorisation(x[[m]], sprintf("%s[[%d]]", arg, m)))
    names(fs) <- names(x) %||% as.character(seq_along(x))
    return(fs)
  }
  abort_input(sprintf("`%s` must be a list of fits, of lists with `W` and `H`, or of basis matrices; or a particle, Gibbs or HMC fit.", arg))
}

# The factorisations of a Gibbs or HMC fit: per chain its posterior mean
# (stored by the Gibbs fit; else of the kept draws; fits made by older
# versions without either: the last state), or every kept draw
# (thinned to at most max_draws in all). Factors are in the pooled labelling.
chain_factorisations <- function(fit, use = "means", max_draws = 200L) {
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  C <- if (!is.null(fit$draws)) length(fit$draws) else length(fit$chains)
  if (use == "draws") {
    if (is.null(fit$draws)) {
      abort_input("`use = \"draws\"` needs a Gibbs fit made with `keep = \"draws\"`.")
    }
    n <- vapply(fit$draws, function(d) ncol(d$W), numeric(1))
    per <- max(1L, floor(max_draws / C))
    out <- list()
    for (c in seq_len(C)) {
      idx <- unique(round(seq(1, n[c], length.out = min(per, n[c]))))
      fs <- lapply(idx, function(s) list(W = matrix(fit$draws[[c]]$W[, s], I, K),
                                         H = matrix(fit$draws[[c]]$H[, s], K, J)))
      names(fs) <- sprintf("chain%d.draw%d", c, idx)
      out <- c(out, fs)
    }
    return(out)
  }
  fs <- lapply(seq_len(C), function(c) {
    if (!is.null(fit$chains[[c]]$W_mean)) {
      list(W = fit$chains[[c]]$W_mean, H = fit$chains[[c]]$H_mean)
    } else if (!is.null(fit$draws)) {
      list(W = matrix(rowMeans(fit$draws[[c]]$W), I, K),
           H = matrix(rowMeans(fit$draws[[c]]$H), K, J))
    } else {
      p <- fit$chains[[c]]$perm %||% seq_len(K)
      list(W = matrix(fit$chains[[c]]$W, I, K)[, p, drop = FALSE],
           H = matrix(fit$chains[[c]]$H, K, J)[p, , drop = FALSE])
    }
  })
  names(fs) <- paste0("chain", seq_len(C))
  fs
}

# ---- alignment --------------------------------------------------------------

# Columns scaled to unit Euclidean norm (zero columns stay zero) and norms.
unit_columns <- function(A) {
  n <- sqrt(colSums(A^2))
  list(U = A / rep(pmax(n, .Machine$double.xmin), each = nrow(A)), norm = n)
}

# The matching of the columns of B to those of A by minimum total angle: an
# exact linear assignment problem (rectangular when the numbers of columns
# differ). `ua`, `ub` are unit_columns() of A and B. perm[k] is the column of
# B matched to column k of A (NA when unmatched); angle[k] the angle between
# them in degrees (90 when either column is zero).
align_core <- function(ua, ub) {
  Ka <- ncol(ua$U)
  Kb <- ncol(ub$U)
  S <- crossprod(ua$U, ub$U)
  S[] <- pmin(pmax(S, 0), 1)
  cost <- acos(S)
  if (Ka == 1L && Kb == 1L) {
    perm <- 1L
  } else if (Ka <= Kb) {
    perm <- as.integer(clue::solve_LSAP(cost))
  } else {
    tp <- as.integer(clue::solve_LSAP(t(cost)))
    perm <- rep(NA_integer_, Ka)
    perm[tp] <- seq_len(Kb)
  }
  ok <- !is.na(perm)
  angle <- rep(NA_real_, Ka)
  # 2 asin(|u - v| / 2) is the angle between unit vectors u, v, accurate
  # near zero (acos of the cosine is not).
  d <- sqrt(colSums((ua$U[, ok, drop = FALSE] - ub$U[, perm[ok], drop = FALSE])^2))
  a <- 2 * asin(pmin(d / 2, 1)) * 180 / pi
  a[ua$norm[ok] == 0 | ub$norm[perm[ok]] == 0] <- 90
  angle[ok] <- a
  list(perm = perm, angle = angle, cosine = S)
}

# The permutation `perm` such that column perm[k] of W matches column k of
# the reference `ref` (minimum total angle, as align_factors()).
match_factors <- function(ref, W) {
  if (ncol(ref) == 1L) return(1L)
  align_core(unit_columns(ref), unit_columns(W))$perm
}

#' Align the factors of two factorisations
#'
#' Finds the matching of the factors (columns of the basis) of `b` to those
#' of `a` that minimises the total angle between matched columns, exactly, as
#' a linear assignment problem (Hungarian method, [clue::solve_LSAP()]); this
#' is the permutation \eqn{\hat\rho} that Masood and Doshi-Velez define
#' (section 2, the displayed equation for \eqn{\hat\rho}). It then reorders
#' `b` and rescales each matched
#' column to the column sum of its partner in `a` (and the matching row of
#' `b`'s `H` by the inverse, so that `W %*% H` is unchanged).
#'
#' The factors of an NMF are defined only up to order and scale, so two fits
#' of the same data (two chains, two particles, two restarts) must be aligned
#' before their factors can be compared. The Gibbs sampler aligns its chains
#' this way before pooling them, and [summary.bnmf()] before computing
#' factor-level diagnostics.
#'
#' When `a` has fewer factors than `b` every factor of `a` is matched and the
#' extra factors of `b` are left unmatched (they come last in `$W`); when it
#' has more, every factor of `b` is matched and the extra factors of `a` are
#' unmatched (`NA` in `$perm`).
#'
#' @param a,b Two factorisations of data with the same rows: basis matrices
#'   (features x factors, non-negative), lists with matrices `W` and `H`, or
#'   `bnmf` fits (their `W` and `H`; for a particle fit the particle with the
#'   largest weight).
#' @param ... Not used: an argument here is an error.
#' @param x A `bnmf_alignment` object.
#' @param digits Significant digits to print.
#' @return An object of class `bnmf_alignment`, a list with
#'   * `perm`: for each factor `k` of `a`, the factor of `b` matched to it
#'     (`NA` if none), so that `b$W[, perm]` is in the order of `a`;
#'   * `angle`: the angle between each factor of `a` and its match, in
#'     degrees (between 0 and 90; 90 for a zero column);
#'   * `mean_angle`: their mean over the matched factors;
#'   * `scale`: the factor by which each matched column of `b` is multiplied
#'     to have the column sum of its partner in `a`;
#'   * `W`, `H`: the factors of `b`, reordered and rescaled (`H` is `NULL`
#'     when `b` is a basis matrix);
#'   * `unmatched_a`, `unmatched_b`: the factors left unmatched;
#'   * `cosine`: the matrix of cosine similarities of the columns of `a`
#'     (rows) and `b` (columns).
#' @references Masood, M. A. and Doshi-Velez, F. Rapid posterior exploration
#'   in Bayesian non-negative matrix factorization. arXiv:1610.08928.
#' @seealso [wad()], [covering_number()].
#' @examples
#' set.seed(1)
#' W <- matrix(rexp(30), 10, 3)
#' H <- matrix(rexp(24), 3, 8)
#' # the same factorisation with factors permuted and rescaled
#' b <- list(W = W[, c(3, 1, 2)] %*% diag(c(2, 5, 0.5)),
#'           H = diag(1 / c(2, 5, 0.5)) %*% H[c(3, 1, 2), ])
#' al <- align_factors(W, b)
#' al
#' all.equal(al$W, W, check.attributes = FALSE)
#' # two Gibbs fits of the same data
#' f1 <- bnmf(leukemia[1:40, 1:20], rank = 2, iter = 100)
#' f2 <- bnmf(leukemia[1:40, 1:20], rank = 2, iter = 100)
#' align_factors(f1, f2)$angle
#' @export
align_factors <- function(a, b, ...) {
  check_dots_empty(list(...), names(formals()), "align_factors")
  fa <- as_factorisation(a, "a")
  fb <- as_factorisation(b, "b")
  if (nrow(fb$W) != nrow(fa$W)) {
    abort_input(sprintf("`b` must have the same number of rows (features) as `a`, %d, not %d.",
                        nrow(fa$W), nrow(fb$W)))
  }
  Ka <- ncol(fa$W)
  Kb <- ncol(fb$W)
  al <- align_core(unit_columns(fa$W), unit_columns(fb$W))
  perm <- al$perm
  ok <- which(!is.na(perm))
  sa <- colSums(fa$W)[ok]
  sb <- colSums(fb$W)[perm[ok]]
  scale <- rep(NA_real_, Ka)
  scale[ok] <- ifelse(sb > 0, sa / sb, 1)
  unmatched_b <- setdiff(seq_len(Kb), perm)
  cols <- c(perm[ok], unmatched_b)
  sc <- c(scale[ok], rep(1, length(unmatched_b)))
  kn_a <- colnames(fa$W) %||% factor_names(Ka)
  kn_b <- colnames(fb$W) %||% factor_names(Kb)
  kn <- c(kn_a[ok], kn_b[unmatched_b])
  W <- fb$W[, cols, drop = FALSE] * rep(sc, each = nrow(fb$W))
  dimnames(W) <- list(rownames(fb$W), kn)
  H <- NULL
  if (!is.null(fb$H)) {
    H <- fb$H[cols, , drop = FALSE] / sc
    dimnames(H) <- list(kn, colnames(fb$H))
  }
  cosine <- al$cosine
  dimnames(cosine) <- list(kn_a, kn_b)
  structure(list(perm = perm, angle = al$angle,
                 mean_angle = mean(al$angle[ok]), scale = scale, W = W, H = H,
                 unmatched_a = which(is.na(perm)), unmatched_b = unmatched_b,
                 cosine = cosine, names_a = kn_a, names_b = kn_b),
            class = "bnmf_alignment")
}

#' @rdname align_factors
#' @export
print.bnmf_alignment <- function(x, digits = 3, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  digits <- check_count(digits, "digits", min = 1)
  ok <- !is.na(x$perm)
  cat(sprintf("Alignment of the %d factors of `b` to the %d factors of `a` (minimum total angle)\n",
              length(x$names_b), length(x$names_a)))
  tab <- data.frame(a = x$names_a[ok], b = x$names_b[x$perm[ok]],
                    angle = signif(x$angle[ok], digits), scale = signif(x$scale[ok], digits))
  print(tab, row.names = FALSE)
  cat(sprintf("Mean angle: %s degrees\n", format(signif(x$mean_angle, digits))))
  if (length(x$unmatched_a)) {
    cat(sprintf("Unmatched factors of `a`: %s\n", paste(x$names_a[x$unmatched_a], collapse = ", ")))
  }
  if (length(x$unmatched_b)) {
    cat(sprintf("Unmatched factors of `b`: %s\n", paste(x$names_b[x$unmatched_b], collapse = ", ")))
  }
  invisible(x)
}

# ---- weighted angular distance ----------------------------------------------

# Weights of the factors: with the basis scaled to column sums of one, the
# row sums of H normalised to add to one (the share of each factor in the
# fitted signal); equal weights when there is no H.
factor_weights <- function(f) {
  K <- ncol(f$W)
  if (is.null(f$H)) return(rep(1 / K, K))
  m <- colSums(f$W) * rowSums(f$H)
  if (!(sum(m) > 0)) return(rep(1 / K, K))
  m / sum(m)
}

wad_pair <- function(ua, wa, ub, wb) {
  al <- align_core(ua, ub)
  sum(al$angle * (wa + wb[al$perm]) / 2)
}

#' Weighted angular distance between factorisations
#'
#' The weighted angular distance (WAD) of Masood and Doshi-Velez (section 2,
#' the displayed equation for WAD, the last of that section) between two
#' factorisations \eqn{(A, W)} and \eqn{(A', W')}
#' (in bnmf's notation `W` is the basis and `H` the weights): the columns of
#' the bases are matched by the permutation \eqn{\hat\rho} minimising the
#' mean angle between matched columns (the equation for \eqn{\hat\rho}
#' just before it; see [align_factors()]);
#' \eqn{\alpha_r} is the angle between column \eqn{r} of \eqn{A} and column
#' \eqn{\hat\rho(r)} of \eqn{A'}; with the bases scaled to column sums of one
#' (and the weights scaled inversely), the row sums of each weights matrix,
#' normalised to add to one, are the factor weights \eqn{w} and \eqn{w'}; and
#' \deqn{\mathrm{WAD} = \alpha^\top (w + w') / 2,}{WAD = sum_r alpha_r (w_r + w'_rho(r)) / 2,}
#' a weighted mean of the angles in which a factor counts by its share of the
#' fitted signal, `sum(W[, r]) * sum(H[r, ])`.
#'
#' The WAD is in **degrees**, between 0 and 90 (the columns are
#' non-negative, so no two are more than 90 degrees apart), symmetric, and
#' zero between a factorisation and any copy with its factors permuted and
#' rescaled. A basis matrix given without weights counts its factors equally
#' (the WAD is then the mean angle after matching).
#'
#' @param a A factorisation: a basis matrix (features x factors), a list with
#'   matrices `W` and `H`, or a `bnmf` fit. With `b = NULL`, a set of
#'   factorisations: a list of those, a particle fit (its particles), a
#'   Gibbs fit (the posterior mean of each chain; see [covering_number()]) or
#'   an RRT fit (the components of its mixture).
#' @param b A factorisation of data with the same rows and the same number of
#'   factors as `a`, or `NULL`.
#' @return With `b`: a single number, the WAD in degrees. With `b = NULL`:
#'   the pairwise WADs of the set, a `"dist"` object.
#' @references Masood, M. A. and Doshi-Velez, F. Rapid posterior exploration
#'   in Bayesian non-negative matrix factorization. arXiv:1610.08928.
#' @seealso [align_factors()], [covering_number()].
#' @examples
#' set.seed(1)
#' W <- matrix(rexp(30), 10, 3)
#' H <- matrix(rexp(24), 3, 8)
#' wad(list(W = W, H = H), list(W = W[, 3:1] * 7, H = H[3:1, ] / 7))  # 0
#' wad(list(W = W, H = H), list(W = W + 0.5, H = H))
#' fit <- bnmf(leukemia[1:60, ], rank = 3, method = "particles", particles = 4)
#' round(wad(fit), 2)
#' @export
wad <- function(a, b = NULL) {
  if (is.null(b)) return(wad_dist(as_factorisation_set(a, "a")))
  fa <- as_factorisation(a, "a")
  fb <- as_factorisation(b, "b")
  if (nrow(fb$W) != nrow(fa$W)) {
    abort_input(sprintf("`b` must have the same number of rows (features) as `a`, %d, not %d.",
                        nrow(fa$W), nrow(fb$W)))
  }
  if (ncol(fb$W) != ncol(fa$W)) {
    abort_input(sprintf("`b` must have the same number of factors as `a`, %d, not %d (use `align_factors()` for unequal numbers).",
                        ncol(fa$W), ncol(fb$W)))
  }
  wad_pair(unit_columns(fa$W), factor_weights(fa), unit_columns(fb$W), factor_weights(fb))
}

# Pairwise WAD of a list of factorisations, as a "dist" object.
wad_dist <- function(fs) {
  M <- length(fs)
  I <- nrow(fs[[1L]]$W)
  K <- ncol(fs[[1L]]$W)
  for (m in seq_len(M)) {
    if (nrow(fs[[m]]$W) != I || ncol(fs[[m]]$W) != K) {
      abort_input(sprintf("Every factorisation must have a %d x %d basis like the first; element %d is %d x %d.",
                          I, K, m, nrow(fs[[m]]$W), ncol(fs[[m]]$W)))
    }
  }
  us <- lapply(fs, function(f) unit_columns(f$W))
  ws <- lapply(fs, factor_weights)
  D <- matrix(0, M, M)
  if (M > 1L) {
    pairs <- which(upper.tri(D), arr.ind = TRUE)
    d <- vapply(seq_len(nrow(pairs)), function(p) {
      i <- pairs[p, 1L]; j <- pairs[p, 2L]
      wad_pair(us[[i]], ws[[i]], us[[j]], ws[[j]])
    }, numeric(1))
    D[pairs] <- d
    D <- D + t(D)
  }
  dimnames(D) <- list(names(fs), names(fs))
  stats::as.dist(D)
}

# ---- covering numbers -------------------------------------------------------

# Greedy cover of the points by closed balls of radius eps centred on
# points: repeatedly take the point whose ball holds most uncovered points
# (ties: the first). Returns the centres.
greedy_cover <- function(D, eps) {
  M <- nrow(D)
  inside <- D <= eps + 1e-9 * max(1, eps)
  uncovered <- rep(TRUE, M)
  centres <- integer()
  while (any(uncovered)) {
    gain <- colSums(inside[uncovered, , drop = FALSE])
    j <- unname(which.max(gain))
    centres <- c(centres, j)
    uncovered <- uncovered & !inside[, j]
  }
  centres
}

#' Covering numbers of a set of factorisations
#'
#' How many \eqn{\epsilon}-balls under the weighted angular distance
#' ([wad()]) it takes to cover a set of factorisations, for each
#' \eqn{\epsilon}: the measure of posterior coverage that Masood and
#' Doshi-Velez (section 2) use. As in their paper the minimum covering number
#' is approximated greedily, with centres restricted to the factorisations
#' themselves: the ball (of radius \eqn{\epsilon}, closed) holding the most
#' not yet covered factorisations is added until all are covered. The greedy
#' count is at least the minimum and at most about \eqn{\ln M + 1} times it.
#' Being greedy, it need not fall as \eqn{\epsilon} grows: a larger ball
#' can make the greedy first choice one that leaves the rest harder to
#' cover, so that the curve goes, say, 3, 2, 3 (the minimum covering number
#' never rises); `plot()` notes it when it happens.
#'
#' Plotted against \eqn{\epsilon} the covering numbers form the persistence
#' curve: a set of factorisations that stays spread out keeps a covering
#' number above one up to large angles; draws from a single mode fall to one
#' at a small angle.
#'
#' @param fits The factorisations:
#'   * a list of `bnmf` fits, of lists with matrices `W` and `H`, or of basis
#'     matrices (all with the same rows and number of factors);
#'   * a particle fit (`method = "particles"`): its particles;
#'   * a Gibbs or HMC fit: with `use = "means"` one factorisation per chain,
#'     the chain's posterior mean;
#'     with `use = "draws"` the kept draws of all chains (at most
#'     `max_draws`, evenly thinned per chain);
#'   * an RRT fit (`method = "rrt"`): with `use = "means"` the components of
#'     its variational mixture, with `use = "draws"` every candidate the
#'     online NVI accepted during the search;
#'   * or a `"dist"` object of distances already computed (e.g. by [wad()]).
#' @param epsilon Radii, in degrees (vector allowed). `NULL`: 50 values from
#'   0 to the largest distance.
#' @param use For a Gibbs, HMC or RRT fit: `"means"` or `"draws"`.
#' @param max_draws For `use = "draws"`: the largest number of draws used.
#' @param x A `bnmf_covering` object.
#' @param main `plot()`: the title.
#' @param ... `print()`: not used (an argument here is an error); `plot()`:
#'   graphical parameters, passed to [graphics::plot()].
#' @return An object of class `bnmf_covering`: a list with `epsilon`,
#'   `covering` (the greedy covering number at each `epsilon`), `centres` (a
#'   list: the indices of the centres at each `epsilon`), `distance` (the
#'   pairwise WADs, a `"dist"`) and `n` (the number of factorisations).
#' @references Masood, M. A. and Doshi-Velez, F. Rapid posterior exploration
#'   in Bayesian non-negative matrix factorization. arXiv:1610.08928.
#' @seealso [wad()], [align_factors()]; [summary.bnmf()] counts the chains
#'   of a Gibbs fit in distinct modes with it.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, ], rank = 3, method = "particles", particles = 6,
#'             init = "random")
#' cv <- covering_number(fit, epsilon = c(0, 1, 5, 10, 20))
#' cv
#' plot(covering_number(fit))
#' @export
covering_number <- function(fits, epsilon = NULL, use = c("means", "draws"), max_draws = 200) {
  use <- check_choice(use, c("means", "draws"), "use")
  max_draws <- check_count(max_draws, "max_draws", min = 1)
  D <- if (inherits(fits, "dist")) fits else wad(as_factorisation_set(fits, "fits", use, max_draws))
  Dm <- as.matrix(D)
  if (anyNA(Dm) || any(Dm < 0)) abort_input("`fits`: the distances must be non-negative numbers.")
  if (is.null(epsilon)) {
    epsilon <- seq(0, max(Dm, 0), length.out = if (max(Dm) > 0) 50L else 1L)
  }
  if (!is.numeric(epsilon) || length(epsilon) < 1L || anyNA(epsilon) ||
      any(!is.finite(epsilon)) || any(epsilon < 0)) {
    abort_input("`epsilon` must be a vector of finite numbers >= 0 (degrees).")
  }
  epsilon <- sort(unique(as.numeric(epsilon)))
  centres <- lapply(epsilon, function(e) greedy_cover(Dm, e))
  structure(list(epsilon = epsilon, covering = lengths(centres), centres = centres,
                 distance = D, n = nrow(Dm)),
            class = "bnmf_covering")
}

#' @rdname covering_number
#' @export
print.bnmf_covering <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  off <- as.vector(x$distance)
  cat(sprintf("Greedy covering numbers of %d factorisation%s under the weighted angular distance\n",
              x$n, if (x$n == 1L) "" else "s"))
  if (length(off)) {
    cat(sprintf("Pairwise WAD (degrees): median %s, max %s\n",
                format(signif(stats::median(off), 3)), format(signif(max(off), 3))))
  }
  tab <- data.frame(epsilon = signif(x$epsilon, 4), covering = x$covering)
  if (nrow(tab) > 12L) {
    # where the covering number changes
    keep <- c(TRUE, diff(tab$covering) != 0)
    tab <- tab[keep, , drop = FALSE]
    cat("(epsilon values where the covering number changes)\n")
  }
  print(tab, row.names = FALSE)
  invisible(x)
}

#' @rdname covering_number
#' @export
plot.bnmf_covering <- function(x, main = "Persistence of the covering number", ...) {
  check_dots_graphics(list(...))
  graphics::plot(x$epsilon, x$covering, type = "s", xlab = "epsilon (WAD, degrees)",
                 ylab = "covering number", ylim = c(0, max(x$covering, 1)),
                 main = main, ...)
  graphics::points(x$epsilon, x$covering, pch = 20, cex = 0.6)
  covering_note(x$covering)
  invisible(x)
}

# Under the persistence curve: when the greedy count rises with the radius
# somewhere (it can: the greedy cover is not the minimum one), say so.
covering_note <- function(covering) {
  if (any(diff(covering) > 0)) {
    graphics::mtext(paste("greedy cover: the count can rise with the radius (a larger ball",
                          "can lead the greedy choice to a worse cover)"),
                    side = 3, line = 0.2, cex = 0.75, col = "grey30")
  }
}

# ---- synthetic data with several exact NMFs ---------------------------------

# Laurberg-style data (Laurberg et al. 2008; Masood and Doshi-Velez section
# 5.1): a rank-3 matrix with exactly two exact NMFs (up to order and scale),
# embedded in an I x J matrix. Geometry, in a 2-d slice of the 3-d column
# space: the non-negative orthant cuts out a regular hexagon Q (each row of
# X is, up to a positive factor, one of its 6 facet functionals
# l_f(p) = cos(30) - <n_f, p>, n_f at angle 30 + 60 f degrees, affine in p =
# (x, y) and so linear in (1, x, y)); the columns of X are points of the
# hexagon P whose vertices are the 6 crossings of the two triangles T1
# (vertices of Q at 0, 120, 240 degrees) and T2 (at 60, 180, 300), plus
# random convex combinations of them. Exact rank-3 NMFs are triangles T with
# P in T in Q: only T1 and T2 (the regular star of David). The basis of a
# solution is l(vertex of T) for every row, its weights the barycentric
# coordinates of the points in T. Uniform(0, noise * max) noise is added.
laurberg_data <- function(I = 60L, J = 60L, noise = 0) {
  I <- check_count(I, "I", min = 6)
  J <- check_count(J, "J", min = 6)
  noise <- check_number(noise, "noise", 0)
  deg <- pi / 180
  th <- (30 + 60 * 0:5) * deg
  L <- cbind(cos(30 * deg), -cos(th), -sin(th))     # facet f: L[f, ] %*% c(1, x, y)
  f <- rep_len(1:6, I)
  Fm <- L[f, , drop = FALSE] * stats::runif(I, 0.5, 1.5)
  hom <- function(angle, r) rbind(1, r * cos(angle * deg), r * sin(angle * deg))
  Pv <- hom(30 + 60 * 0:5, 1 / sqrt(3))               # vertices of P
  G <- matrix(stats::rexp(6 * (J - 6L)), 6)
  G <- G / rep(colSums(G), each = 6)
  pts <- cbind(Pv, Pv %*% G)
  X0 <- Fm %*% pts
  solution <- function(angles) {
    V <- hom(angles, 1)
    W <- Fm %*% V
    W[abs(W) < 1e-12] <- 0
    H <- solve(V, pts)
    H[abs(H) < 1e-12] <- 0
    list(W = W, H = H)
  }
  X <- X0 + noise * max(X0) * matrix(stats::runif(I * J), I, J)
  list(X = X, X0 = X0,
       solutions = list(solution(c(0, 120, 240)), solution(c(60, 180, 300))))
}
