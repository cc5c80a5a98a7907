# plot() of fits: the trace of the chains or restarts, a basis vector with
# its posterior band, the ARD relevance of the factors (Gaussian fits); the
# trace of an HMC fit; the weights, distances, bases and top features of a
# particle fit.

#' Plot a fit
#'
#' `type = "trace"`: the log-likelihood and the noise precision `tau` against
#' the sweep, one line per chain, burn-in shaded (for ICM: the log posterior;
#' VB: the ELBO; NP: the loss).
#' `type = "basis"`: the top `n_top` features of one factor (the largest
#' entries of `W[, factor]`, see [markers()]) as points, named, with their 95%
#' posterior intervals (from the kept draws when `keep = "draws"`, else mean
#' +/- 1.96 posterior sd; VB: from q; ICM and NP: the point estimates only).
#' `type = "heatmap"`: with `what = "coef"` the coefficients, each sample's
#' column as the shares of the factors' contributions `sum(W[, k]) * H[k, j]`;
#' with `what = "basis"` the `n_top` features dominated by each factor,
#' scaled to a maximum of 1, with their dominant factor as a track and,
#' where the fit has posterior intervals (Gibbs and VB fits of the Gaussian
#' model), the width of the 95% interval of `W[i, k]` over `W[i, k]` (shown
#' up to 2) as a second. Rows and
#' columns are ordered by average-linkage clustering, the dendrograms drawn
#' in the margins; the samples carry tracks: `groups`, the posterior cluster
#' and its probability ([membership()]) and, when the recommended package
#' cluster is installed, the silhouette width of the clusters. A colour key
#' is drawn at the right; sample and feature names are drawn as large as
#' the device allows, thinned (or left out, with a note) when there are too
#' many to be legible.
#' `type = "consensus"`: the posterior consensus map of the samples
#' ([consensus_matrix()]), annotated by `groups`, the posterior cluster of
#' every sample and its probability, and the silhouette width (see
#' [plot.bnmf_consensus()]).
#' `type = "ard"` (fits with an [ard()] prior): each factor's gain in fit
#' (`summary(x)$factors$gain`, in noise variances) on a log scale, with the
#' line at `(sqrt(I) + sqrt(J))^2` below which [summary.bnmf()] counts a
#' factor as switched off.
#' `type = "biclusters"` (tri-factorisation fits, `X ~ nmtf(K, L)`): `X` with
#' its rows and columns ordered by their clusters (`summary(x)$row_clusters`,
#' `$col_clusters`), next to `S` drawn as the block pattern (block `(k, l)`
#' coloured by `sqrt(S[k, l])`, its value printed).
#'
#' @param x A `bnmf` fit.
#' @param type `"trace"`, `"basis"`, `"ard"`, `"heatmap"`, `"consensus"` or
#'   `"biclusters"`.
#' @param factor For `type = "basis"`: which factor to show.
#' @param ... Graphical parameters, passed to the underlying graphics call
#'   (other names are an error); for `"basis"` also
#'   `n_top` (default 20) and `by` (see [markers()]); for `"heatmap"`
#'   `what` (`"coef"` or `"basis"`), `groups` (a factor of the samples) and
#'   `n_top` (default 10); for `"consensus"` `groups`.
#' @return `x`, invisibly.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, ], rank = 2, iter = 300, keep = "draws")
#' plot(fit)
#' plot(fit, type = "basis", factor = 1)
#' plot(fit, type = "heatmap", groups = leukemia_samples$cell_type)
#' plot(fit, type = "heatmap", what = "basis")
#' plot(fit, type = "consensus", groups = leukemia_samples$cell_type)
#' vb <- bnmf(leukemia[1:60, ] ~ nmf(5, prior = ard()), method = "vb")
#' plot(vb, type = "ard")
#' @export
plot.bnmf <- function(x, type = c("trace", "basis", "ard", "heatmap", "consensus", "biclusters"),
                      factor = 1, ...) {
  type <- check_choice(type, c("trace", "basis", "ard", "heatmap", "consensus", "biclusters"),
                       "type")
  check_dots_graphics(list(...), switch(type, basis = c("n_top", "by"),
                                       heatmap = c("what", "groups", "n_top"),
                                       consensus = "groups", character()))
  switch(type, trace = plot_trace(x, ...), basis = plot_basis_top(x, factor, ...),
         ard = plot_ard(x, ...), heatmap = plot_heatmap(x, ...),
         consensus = graphics::plot(consensus_matrix(x), membership = membership(x), ...),
         biclusters = plot_biclusters(x, ...))
  invisible(x)
}

# The further arguments of a plot method, passed on to base graphics: they
# must be graphical parameters or arguments of the high-level plots, or
# `extra` (what the method itself takes through `...`); any other name would
# only be warned about, or ignored, by the graphics functions.
check_dots_graphics <- function(dots, extra = character()) {
  if (!length(dots)) return(invisible())
  nms <- names(dots) %||% rep("", length(dots))
  if (any(nms == "")) {
    abort_input("`...`: the further arguments of `plot()` must be named (graphical parameters such as `main` or `col`).")
  }
  known <- c(extra, graphics_args)
  # the method's own arguments, for "did you mean"
  own <- setdiff(names(formals(sys.function(sys.parent()))), c("x", "..."))
  check_names_known(nms, known, c(own, known), "plot")
}

graphics_args <- c(
  # the high-level plots (plot.default, barplot, image, text, title)
  "main", "sub", "xlab", "ylab", "xlim", "ylim", "zlim", "log", "axes", "frame.plot",
  "panel.first", "panel.last", "asp", "border", "density", "angle", "space", "width",
  "useRaster", "breaks", "line", "outer",
  # par()
  "adj", "ann", "ask", "bg", "bty", "cex", "cex.axis", "cex.lab", "cex.main", "cex.sub",
  "col", "col.axis", "col.lab", "col.main", "col.sub", "crt", "err", "family", "fg", "fig",
  "fin", "font", "font.axis", "font.lab", "font.main", "font.sub", "lab", "las", "lend",
  "lheight", "ljoin", "lmitre", "lty", "lwd", "mai", "mar", "mex", "mfcol", "mfg", "mfrow",
  "mgp", "mkh", "new", "oma", "omd", "omi", "pch", "pin", "plt", "ps", "pty", "srt", "tck",
  "tcl", "usr", "xaxp", "xaxs", "xaxt", "xlog", "xpd", "yaxp", "yaxs", "yaxt", "ylbias", "ylog")

plot_ard <- function(x, main = "ARD: relevance of each factor", ...) {
  if (!identical(x$prior$type, "ard")) {
    abort_input("`type = \"ard\"` needs a fit with an `ard()` prior.")
  }
  rel <- ard_relevance(x)
  cut <- ard_gain_cut(x$dims[1L], x$dims[2L])
  gain <- pmax(rel$gain, 1e-3)
  cols <- ifelse(rel$active, "grey30", "grey80")
  graphics::barplot(gain, names.arg = rel$factor, log = "y", col = cols,
                    border = NA, ylab = "gain in fit / noise variance",
                    ylim = c(min(gain, 1) / 2, max(gain, 10 * cut) * 2), main = main, ...)
  graphics::abline(h = cut, lty = 2)
  graphics::legend("topright", legend = c("active", "switched off (below the line)"),
                   fill = c("grey30", "grey80"), border = NA, bty = "n", cex = 0.85)
}

plot_trace <- function(x, main = NULL, ...) {
  lay <- trace_layout(x)
  panels <- lay$panels
  op <- graphics::par(mfrow = c(length(panels), 1L), mar = c(4, 4.5, 1, 1), oma = c(0, 0, 2, 0))
  on.exit(graphics::par(op))
  for (p in names(panels)) {
    trace_panel(x$trace, p, panels[[p]], "sweep", lay$burnin, legend = p == names(panels)[1L],
                ...)
  }
  graphics::mtext(main %||% trace_title(x), side = 3, outer = TRUE, line = 0.5, font = 2,
                  cex = 1.1)
}

# "Trace of the Gibbs fit (3 chains)" and the like.
trace_title <- function(x) {
  nc <- length(unique(x$trace$chain))
  what <- c(gibbs = "Gibbs", vb = "VB", icm = "ICM", np = "NP", hmc = "HMC",
            ssvi = "SSVI", svgd = "SVGD", dsgd = "DSGD", particles = "particle")[x$method %||% ""]
  if (is.na(what)) what <- x$method %||% ""
  sprintf("Trace of the %s fit (%d %s)", what, nc,
          if (inherits(x, "bnmf_gibbs") || inherits(x, "bnmf_hmc")) {
            if (nc == 1L) "chain" else "chains"
          } else if (nc == 1L) "run" else "runs")
}

# One trace panel: column `var` of the trace against the iteration, one line
# per chain, the burn-in (up to `burnin`; NULL: none) shaded.
# With `legend`, a legend of the chains (when there are several).
trace_panel <- function(tr, var, ylab, xlab, burnin = NULL, legend = FALSE, ...) {
  chains <- sort(unique(tr$chain))
  cols <- grDevices::hcl.colors(max(length(chains), 2L), "Dark 3")
  graphics::plot(range(tr$iteration), range(tr[[var]], finite = TRUE), type = "n",
                 xlab = xlab, ylab = ylab, ...)
  if (!is.null(burnin)) {
    usr <- graphics::par("usr")
    graphics::rect(usr[1L], usr[3L], burnin, usr[4L], col = grDevices::gray(0.92),
                   border = NA)
  }
  for (c in seq_along(chains)) {
    s <- tr[tr$chain == chains[c], ]
    graphics::lines(s$iteration, s[[var]], col = cols[c])
  }
  if (legend) trace_legend(chains, cols, !is.null(burnin))
}

trace_legend <- function(chains, cols, burnin = FALSE) {
  lab <- if (length(chains) > 1L) paste("chain", chains) else character()
  if (!length(lab) && !burnin) return(invisible())
  graphics::legend("bottomright", legend = c(lab, if (burnin) "burn-in"),
                   col = c(cols[seq_along(lab)], if (burnin) "grey92"),
                   lty = c(rep(1, length(lab)), if (burnin) 0),
                   pch = c(rep(NA, length(lab)), if (burnin) 15),
                   pt.cex = 2, bg = grDevices::adjustcolor("white", 0.8), box.col = "grey80",
                   cex = 0.85, ncol = min(4L, length(lab) + burnin))
  invisible()
}

# The panels of the trace plot (trace column = axis label) and where the
# shaded burn-in ends (NULL: no burn-in).
trace_layout <- function(x) UseMethod("trace_layout")

trace_layout.bnmf <- function(x) {
  list(panels = c(logpost = "log posterior", tau = "tau (noise precision)"))
}

trace_layout.bnmf_vb <- function(x) {
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  list(panels = c(logpost = "ELBO", tau = "tau (noise precision)"))
}

trace_layout.bnmf_np <- function(x) list(panels = c(sse = "loss"))

trace_layout.bnmf_gibbs <- function(x) {
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  list(panels = c(loglik = "log-likelihood", tau = "tau (noise precision)"),
       burnin = if (x$settings$burnin > 0) x$settings$burnin + 0.5)
}

# 95% posterior band (lo, hi) of the basis vector W[, factor]; NULL for the
# point estimates.
basis_band <- function(x, factor) {
  b <- factor_band(x, "W")
  if (is.null(b)) return(NULL)
  list(lo = b$lo[, factor], hi = b$hi[, factor])
}

# 95% posterior band (lo, hi: matrices) of every entry of the factor matrix
# `which` ("W" or "H"; for the tri-factorisation "F", "S" or "G") where the
# fit keeps one (the Gaussian NMF and NMTF models, Gibbs and VB); NULL
# otherwise (point estimates; the other models' bands come from
# tidy_spread()).
factor_band <- function(x, which) UseMethod("factor_band")

factor_band.bnmf <- function(x, which) NULL

factor_band.bnmf_vb <- function(x, which) {
  if (inherits(x, "bnmf_poisson")) return(NextMethod())
  sd_band(x[[which]], x[[paste0(which, "_sd")]])
}

# mean +/- 1.96 posterior sd, cut at zero
sd_band <- function(m, s) {
  if (is.null(m) || is.null(s)) return(NULL)
  list(lo = pmax(m - 1.96 * s, 0), hi = m + 1.96 * s)
}

# quantiles of the kept draws, else as VB from the posterior sd
factor_band.bnmf_gibbs <- function(x, which) {
  if (inherits(x, "bnmf_poisson") || is.null(x[[which]])) return(NextMethod())
  d <- gibbs_draws_of(x, which)
  if (is.null(d)) return(sd_band(x[[which]], x[[paste0(which, "_sd")]]))
  draws_band(d, dim(x[[which]]))
}

# The 2.5% and 97.5% quantiles of every row of the draws `d` (one entry per
# row, one draw per column) as matrices of dimensions `dims`.
draws_band <- function(d, dims) {
  q <- apply(d, 1L, stats::quantile, probs = c(0.025, 0.975), names = FALSE)
  list(lo = matrix(q[1L, ], dims[1L], dims[2L]), hi = matrix(q[2L, ], dims[1L], dims[2L]))
}

# The kept draws of a factor matrix of a Gaussian Gibbs fit (keep =
# "draws"), one column per draw over the chains, in the order of the
# matrix's entries; NULL without them. NMTF: each chain's factors matched to
# the fit's (fit$perm).
gibbs_draws_of <- function(x, which) {
  if (is.null(x$draws)) return(NULL)
  if (inherits(x, "bnmf_nmf")) return(do.call(cbind, lapply(x$draws, function(d) d[[which]])))
  dims <- dim(x[[which]])
  do.call(cbind, lapply(seq_along(x$draws), function(c) {
    d <- x$draws[[c]][[which]]
    rows <- if (which == "S") x$perm$F[[c]] else seq_len(dims[1L])
    cols <- if (which == "F") x$perm$F[[c]] else x$perm$G[[c]]
    apply(d, 2L, function(v) as.vector(matrix(v, dims[1L], dims[2L])[rows, cols, drop = FALSE]))
  }))
}

#' @rdname hmc
#' @export
plot.bnmf_hmc <- function(x, ...) {
  dots <- list(...)
  check_dots_graphics(dots)
  dots$main <- dots$main %||% trace_title(x)
  do.call(trace_panel, c(list(x$trace, "logpost", "log posterior", "iteration",
                              if (x$settings$burnin > 0) x$settings$burnin, legend = TRUE),
                         dots))
  invisible(x)
}

#' Plot a particle fit
#'
#' `type = "weights"`: the weight of every particle. `"distance"`: a heatmap
#' of the weighted angular distances ([wad()], in degrees) between the
#' particles, in order of weight. `"basis"`: one factor
#' (column of `W`) of several particles side by side, matched. `"features"`:
#' the top features of one factor in several particles (Figure 5 of Masood
#' and Doshi-Velez).
#'
#' @param x A `bnmf_particles` fit.
#' @param type `"weights"`, `"distance"`, `"basis"` or `"features"`.
#' @param factor The factor shown by `"basis"` and `"features"`.
#' @param particles The particles shown by `"basis"` and `"features"`
#'   (default: the 4 with the largest weights).
#' @param n_top Number of top features (`"features"`).
#' @param ... Graphical parameters, passed to the base graphics function
#'   (other names are an error).
#' @return `x`, invisibly.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:100, ], rank = 3, method = "particles", particles = 6)
#' plot(fit)
#' plot(fit, type = "distance")
#' plot(fit, type = "basis", factor = 2)
#' plot(fit, type = "features", factor = 1)
#' @export
plot.bnmf_particles <- function(x, type = c("weights", "distance", "basis", "features"),
                                factor = 1, particles = NULL, n_top = 10, ...) {
  check_dots_graphics(list(...))
  type <- check_choice(type, c("weights", "distance", "basis", "features"), "type")
  w <- x$weights
  if (is.null(particles)) particles <- order(-w)[seq_len(min(4L, length(w)))]
  particles <- vapply(particles, function(m) check_particle(x, m), integer(1))
  factor <- check_count(factor, "factor", min = 1)
  if (factor > x$rank) abort_input(sprintf("`factor` must be between 1 and %d.", x$rank))
  n_top <- check_count(n_top, "n_top", min = 1)
  switch(type,
    weights = {
      graphics::barplot(unname(w), names.arg = seq_along(w), xlab = "particle",
                        ylab = "weight", main = "Stein weights of the particles", ...)
    },
    distance = {
      ord <- order(-w)
      D <- as.matrix(wad(x))[ord, ord, drop = FALSE]
      M <- nrow(D)
      pal <- grDevices::hcl.colors(32, "viridis")
      br <- seq(0, max(D, 1e-6), length.out = length(pal) + 1L)
      op <- graphics::par(no.readonly = TRUE)
      on.exit(graphics::par(op))
      graphics::layout(matrix(1:2, 1L), widths = c(1, graphics::lcm(3.6)))
      graphics::par(mar = c(4.5, 4.5, 3, 1))
      dots <- list(...)
      dots$main <- dots$main %||% "Weighted angular distances between the particles"
      do.call(graphics::image, c(list(seq_len(M), seq_len(M), D, col = pal, breaks = br,
                                      xlab = "particle (by weight)", ylab = "particle (by weight)",
                                      axes = FALSE), dots))
      at <- unique(round(seq(1, M, length.out = min(M, 10))))
      graphics::axis(1, at = at, labels = ord[at])
      graphics::axis(2, at = at, labels = ord[at], las = 1)
      graphics::box()
      graphics::par(mar = c(4.5, 0.8, 3, 0.5))
      hm_legends(br, pal, "WAD\n(degrees)", FALSE, list())
    },
    basis = {
      P <- length(particles)
      op <- graphics::par(mfrow = c(1, P), mar = c(4, 4, 3, 1))
      on.exit(graphics::par(op))
      ylim <- c(0, max(vapply(particles, function(m) {
        max(align_particle(x$particles[[m]], x$alignment[[m]])$W[, factor])
      }, numeric(1))))
      for (m in particles) {
        Wm <- align_particle(x$particles[[m]], x$alignment[[m]])$W
        graphics::plot(Wm[, factor], type = "h", ylim = ylim, xlab = "feature",
                       ylab = sprintf("W[, %d]", factor),
                       main = sprintf("particle %d (w = %.2g)", m, w[[m]]), ...)
      }
    },
    features = {
      P <- length(particles)
      op <- graphics::par(mar = c(1, 1, 3, 1))
      on.exit(graphics::par(op))
      graphics::plot.new()
      graphics::plot.window(xlim = c(0, P), ylim = c(n_top + 1, 0))
      graphics::title(main = sprintf("Top %d features of factor %d", n_top, factor))
      for (i in seq_along(particles)) {
        m <- particles[i]
        tf <- top_features(x, m, n_top)[, factor]
        graphics::text(i - 0.5, 0.2, sprintf("particle %d (w = %.2g)", m, w[[m]]), font = 2,
                       cex = 0.8)
        graphics::text(i - 0.5, seq_len(n_top) + 0.2, tf, cex = 0.75, ...)
      }
    }
  )
  invisible(x)
}

# ---- NMTF: biclusters -------------------------------------------------------
# plot(fit, type = "biclusters") for NMTF fits: left, X with its rows and
# columns ordered by their clusters (summary()$row_clusters / $col_clusters:
# argmax of the rows of F and of G; within a cluster by decreasing posterior
# probability), cluster boundaries drawn; right, S as the block pattern: block
# (k, l) spans the rows of row cluster k and the columns of column cluster l
# (the same layout as the left panel) and is coloured by sqrt(S[k, l]), its
# value printed where the block is large enough. X is coloured on quantile
# breaks (raw expression values have a few large entries that would wash out
# a linear scale), with its colour key at the right. Missing entries of X are
# left blank.
plot_biclusters <- function(x, main = "X by row and column cluster", ...) {
  if (!inherits(x, "bnmf_nmtf")) {
    abort_input("`type = \"biclusters\"` needs a tri-factorisation fit (`X ~ nmtf(K, L)`).")
  }
  sm <- summary(x)
  rc <- sm$row_clusters
  cc <- sm$col_clusters
  S <- factors(x)$S
  ro <- order(rc$cluster, -rc$prob)
  co <- order(cc$cluster, -cc$prob)
  X <- as.matrix(x$X)[ro, co, drop = FALSE]
  I <- nrow(X); J <- ncol(X)
  rcl <- rc$cluster[ro]
  ccl <- cc$cluster[co]
  pal <- grDevices::hcl.colors(64L, "YlGnBu", rev = TRUE)
  # Rows run from the top down; boundaries between consecutive clusters.
  cuts <- function(cl) which(diff(cl) != 0) + 0.5
  draw <- function(Z, br, col, main, xlab, ylab) {
    graphics::image(seq_len(J), seq_len(I), t(Z[rev(seq_len(I)), , drop = FALSE]),
                    col = col, breaks = br, axes = FALSE, xlab = xlab, ylab = ylab,
                    main = main, useRaster = I * J > 1e4, ...)
    graphics::abline(v = cuts(ccl), h = I + 1 - cuts(rcl), col = "grey20", lwd = 1)
    graphics::box()
  }
  op <- graphics::par(no.readonly = TRUE)
  on.exit(graphics::par(op))
  graphics::layout(matrix(1:3, 1L), widths = c(1, 1, graphics::lcm(3.6)))
  graphics::par(mar = c(3, 3, 2.5, 1), mgp = c(1.5, 0.5, 0))
  # X on quantile breaks: each colour paints as many entries, so that a few
  # large values do not wash out the rest
  brX <- hm_breaks(X, "quantile", length(pal))
  palX <- grDevices::colorRampPalette(pal)(length(brX) - 1L)
  draw(X, brX, palX, main, "columns (by cluster)", "rows (by cluster)")
  # S on a square-root colour scale (a few large entries would wash out the
  # rest), each block large enough labelled with S[k, l] at its centre.
  B <- sqrt(S[rcl, ccl, drop = FALSE])
  draw(B, seq(0, max(sqrt(S), 1e-300), length.out = length(pal) + 1L), pal,
       "S: block pattern (colour: sqrt S)", "column cluster", "row cluster")
  for (k in unique(rcl)) {
    for (l in unique(ccl)) {
      if (sum(rcl == k) < 0.05 * I || sum(ccl == l) < 0.05 * J) next
      yc <- I + 1 - mean(which(rcl == k))
      xc <- mean(which(ccl == l))
      graphics::text(xc, yc, formatC(S[k, l], digits = 2, format = "g"), cex = 0.75,
                     col = if (sqrt(S[k, l]) > 0.6 * sqrt(max(S))) "white" else "black")
    }
  }
  graphics::par(mar = c(3, 0.8, 2.5, 0.5))
  hm_legends(brX, palX, "X", TRUE, list())
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

# The trace (VB: the ELBO; Gibbs: the log joint density; SSVI: the local log
# joint density), the mask probabilities as images, or (ARD fits) each
# factor's Poisson signal on a log scale with the line I + J - 1 above which
# summary() counts it as active.
#' @export
plot.bnmf_poisson <- function(x, type = c("trace", "masks", "ard", "heatmap", "consensus"),
                              ...) {
  dots <- list(...)
  type <- check_choice(type, c("trace", "masks", "ard", "heatmap", "consensus"), "type")
  check_dots_graphics(dots, switch(type, heatmap = c("what", "groups", "n_top"),
                                   consensus = "groups", character()))
  if (type == "heatmap") {
    plot_heatmap(x, ...)
    return(invisible(x))
  }
  if (type == "consensus") {
    graphics::plot(consensus_matrix(x), membership = membership(x), ...)
    return(invisible(x))
  }
  if (type == "ard") {
    if (!identical(x$prior$type, "ard")) {
      abort_input("`type = \"ard\"` needs a fit with an `ard()` prior.")
    }
    rel <- pois_ard_relevance(x)
    sig <- pmax(rel$signal, 1e-6)
    df <- sum(x$dims) - 1
    dots$main <- dots$main %||% "ARD: Poisson signal of each factor"
    do.call(graphics::barplot, c(list(sig, names.arg = rel$factor, log = "y",
                      col = ifelse(rel$active, "grey30", "grey80"), border = NA,
                      ylab = "Poisson signal (Pearson chi-square)",
                      ylim = c(min(sig, 1e-2) / 2, max(sig, 2 * df) * 2)), dots))
    graphics::abline(h = df, lty = 2)
    graphics::legend("topright", legend = c("active", sprintf("off (below I + J - 1 = %g)", df)),
                     fill = c("grey30", "grey80"), border = NA, bty = "n", cex = 0.85)
    return(invisible(x))
  }
  if (type == "masks") {
    if (is.null(x$masks)) {
      abort_input("`type = \"masks\"` needs a fit with masks (`method = \"ssvi\"` with `sparsity`).")
    }
    plot_masks(x, ...)
    return(invisible(x))
  }
  ylab <- c(vb = "ELBO", gibbs = "log joint density", ssvi = "local log joint density")[[x$method]]
  tr <- x$trace
  chains <- sort(unique(tr$chain))
  cols <- grDevices::hcl.colors(max(length(chains), 2L), "Dark 3")
  dots$main <- dots$main %||% trace_title(x)
  do.call(graphics::plot, c(list(tr$iteration, tr$logpost, type = "n", xlab = "iteration",
                                 ylab = ylab), dots))
  for (c in seq_along(chains)) {
    t <- tr[tr$chain == chains[c], ]
    graphics::lines(t$iteration, t$logpost, col = cols[c])
  }
  if (length(chains) > 1L) trace_legend(chains, cols)
  invisible(x)
}

# The mask probabilities of a DS-NMF fit: P(S^W = 1) (features x factors)
# and P(S^H = 1) (factors x samples) as images with the factor, feature and
# sample names (thinned when too many to read), and a colour key.
plot_masks <- function(x, ...) {
  PW <- as.matrix(x$masks$W)
  PH <- as.matrix(x$masks$H)
  K <- ncol(PW)
  kn <- factor_names(K)
  fn <- x$dimnames[[1L]] %||% as.character(seq_len(nrow(PW)))
  sn <- x$dimnames[[2L]] %||% as.character(seq_len(ncol(PH)))
  pal <- grDevices::hcl.colors(32, "Purples 3", rev = TRUE)
  br <- seq(0, 1, length.out = length(pal) + 1L)
  op <- graphics::par(no.readonly = TRUE)
  on.exit(graphics::par(op))
  graphics::layout(matrix(1:3, 1L), widths = c(1, 1, graphics::lcm(3.6)))
  graphics::par(oma = c(0, 0, 2, 0))
  lw <- function(lab) min(10, 1.5 + 0.5 * max(nchar(lab)))
  graphics::par(mar = c(4.2, lw(fn) + 1, 2.5, 0.5))
  graphics::image(seq_len(K), seq_len(nrow(PW)), t(PW), col = pal, breaks = br, axes = FALSE,
                  xlab = "factor", ylab = "", main = "P(S^W = 1): features", ...)
  graphics::axis(1, at = seq_len(K), labels = kn, tick = FALSE, line = -0.6)
  note1 <- hm_labels(2, fn, graphics::par("pin")[2L], "feature")
  graphics::box()
  if (length(note1)) graphics::mtext(note1, side = 1, line = 2.5, cex = 0.6, col = "grey30")
  graphics::par(mar = c(4.2, lw(sn) + 1, 2.5, 0.5))
  graphics::image(seq_len(K), seq_len(ncol(PH)), PH, col = pal, breaks = br, axes = FALSE,
                  xlab = "factor", ylab = "", main = "P(S^H = 1): samples", ...)
  graphics::axis(1, at = seq_len(K), labels = kn, tick = FALSE, line = -0.6)
  note2 <- hm_labels(2, sn, graphics::par("pin")[2L], "sample")
  graphics::box()
  if (length(note2)) graphics::mtext(note2, side = 1, line = 2.5, cex = 0.6, col = "grey30")
  graphics::par(mar = c(4.2, 0.8, 2.5, 0.5))
  hm_legends(br, pal, "P(entry\nswitched on)", FALSE, list())
  graphics::mtext("Mask probabilities of the DS-NMF fit", side = 3, outer = TRUE, line = 0.5,
                  font = 2, cex = 1.1)
}
# ---- RRT + online NVI fits (method "rrt") ----------------------------------

#' @rdname rrt_fit
#' @param x A `bnmf_rrt` fit.
#' @param type `"elbo"`: the ELBO of the mixture after every candidate
#'   processed, accepted candidates marked. `"persistence"`: the covering
#'   number of the set of factorisations under the weighted angular distance
#'   ([covering_number()]) against the radius, on a log axis (the
#'   persistence plots of Masood and Doshi-Velez, Figures 4-10).
#'   `"projection"`: a 2-D projection of the data and of the bases of the
#'   factorisations (Figures 1-3): every column of `X` and of each basis
#'   scaled to sum one, projected on the two leading principal directions of
#'   the scaled data; each factorisation's basis vectors are joined into a
#'   polygon (the cone that must hold the data).
#' @param set Which factorisations `"persistence"` and `"projection"` show:
#'   `"accepted"` (every candidate the online NVI accepted during the search,
#'   at most 500) or `"components"` (those kept in the final mixture).
#' @export
plot.bnmf_rrt <- function(x, type = c("elbo", "persistence", "projection"),
                          set = c("accepted", "components"), ...) {
  check_dots_graphics(list(...))
  type <- check_choice(type, c("elbo", "persistence", "projection"), "type")
  set <- check_choice(set, c("accepted", "components"), "set")
  fs <- if (set == "accepted" && length(x$accepted)) x$accepted else x$components
  switch(type,
    elbo = {
      tr <- x$trace
      graphics::plot(tr$step, tr$elbo, type = "s", xlab = "candidate processed",
                     ylab = "ELBO", main = sprintf("ELBO of %s", rrt_search_label(x$search)),
                     ...)
      acc <- tr$accepted %in% TRUE
      graphics::points(tr$step[acc], tr$elbo[acc], pch = 19, cex = 0.6, col = "firebrick")
    },
    persistence = {
      D <- wad(fs)
      top <- max(D, 1e-3)
      eps <- 10^seq(-3, log10(top), length.out = 60)
      cv <- covering_number(D, epsilon = eps)
      graphics::plot(cv$epsilon, cv$covering, type = "s", log = "x",
                     xlab = "radius (WAD, degrees)", ylab = "covering number",
                     main = sprintf("Persistence of %d %s factorisations", length(fs), set),
                     ylim = c(0, max(cv$covering, 1)), ...)
      graphics::abline(h = 1, lty = 3)
      covering_note(cv$covering)
    },
    projection = {
      pr <- rrt_projection(x$X, fs)
      graphics::plot(pr$data, pch = 16, cex = 0.5, col = "grey60", asp = 1,
                     xlim = range(pr$data[, 1L], unlist(lapply(pr$bases, `[`, , 1L))),
                     ylim = range(pr$data[, 2L], unlist(lapply(pr$bases, `[`, , 2L))),
                     xlab = "projection 1", ylab = "projection 2",
                     main = sprintf("Data and %d %s factorisations", length(fs), set), ...)
      cols <- grDevices::hcl.colors(max(length(fs), 2L), "viridis", alpha = 0.7)
      for (m in seq_along(pr$bases)) {
        b <- pr$bases[[m]]
        graphics::polygon(b[, 1L], b[, 2L], border = cols[m])
        graphics::points(b, pch = 17, col = cols[m], cex = 0.8)
      }
    })
  invisible(x)
}

# The 2-D projection of plot.bnmf_rrt(type = "projection"): columns scaled
# to sum one, projected on the two leading principal directions of the
# scaled data; the basis vectors of each factorisation in angular order.
rrt_projection <- function(X, fs) {
  to_sum1 <- function(A) A / rep(pmax(colSums(A), .Machine$double.xmin), each = nrow(A))
  Xs <- to_sum1(X)
  ctr <- rowMeans(Xs)
  P <- svd(Xs - ctr, nu = min(2L, ncol(Xs) - 1L), nv = 0)$u
  if (ncol(P) < 2L) P <- cbind(P, 0)
  proj <- function(A) crossprod(to_sum1(A) - ctr, P)
  bases <- lapply(fs, function(f) {
    b <- proj(f$W)
    b[order(atan2(b[, 2L] - mean(b[, 2L]), b[, 1L] - mean(b[, 1L]))), , drop = FALSE]
  })
  list(data = proj(X), bases = bases)
}
