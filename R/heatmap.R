# Heatmaps of the factors (plot(fit, type = "heatmap")), the drawing shared
# with the consensus map (heatmap_panels()), and the basis plot of a
# factor's top features with their posterior intervals.

# Heatmap of the coefficients H (samples in columns, each column as the
# shares of the factors' contributions) or of the basis W (the top `n_top`
# features of every factor, each row scaled to a maximum of 1), samples and
# features ordered by their dominant factor (samples: dominant_factor(), as
# membership()), then by its share; `groups` annotates the samples.
plot_heatmap <- function(x, what = c("coef", "basis"), groups = NULL, n_top = 10, ...) {
  what <- check_choice(what, c("coef", "basis"), "what")
  f <- wh_view(x)
  W <- unname(f$W)
  H <- unname(f$H)
  K <- ncol(W)
  kn <- colnames(f$W) %||% factor_names(K)
  col <- grDevices::hcl.colors(32, "YlOrRd", rev = TRUE)
  if (what == "coef") {
    J <- ncol(H)
    groups <- check_groups(groups, J)
    C <- H * colSums(W)
    S <- sweep(C, 2L, pmax(colSums(C), .Machine$double.xmin), "/")
    d <- dominant_factor(W, H)
    ord <- order(d, -S[cbind(d, seq_len(J))])
    M <- t(S[, ord, drop = FALSE])
    dimnames(M) <- list(x$dimnames[[2L]][ord], kn)
    heatmap_panels(M, groups = if (!is.null(groups)) groups[ord], col = col, zlim = c(0, 1),
                   main = "Coefficients: share of each factor in each sample",
                   xlab = "sample (by dominant factor)", ylab = "factor",
                   legend_title = "share", ...)
  } else {
    if (!is.null(groups)) abort_input("`groups` annotates samples: use it with `what = \"coef\"`.")
    n_top <- check_count(n_top, "n_top", min = 1)
    I <- nrow(W)
    U <- sweep(W, 2L, pmax(colSums(W), .Machine$double.xmin), "/")
    d <- max.col(U, ties.method = "first")
    R <- U / pmax(apply(U, 1L, max), .Machine$double.xmin)
    # per factor, the features it dominates with the largest weight
    rows <- unlist(lapply(seq_len(K), function(k) {
      i <- which(d == k)
      i[order(-U[i, k])][seq_len(min(n_top, length(i)))]
    }))
    M <- R[rows, , drop = FALSE]
    dimnames(M) <- list(x$dimnames[[1L]][rows] %||% as.character(rows), kn)
    heatmap_panels(M, col = col, zlim = c(0, 1),
                   main = sprintf("Basis: top %d features of each factor (rows scaled to max 1)", n_top),
                   xlab = "feature (by dominant factor)", ylab = "factor",
                   legend_title = "relative weight", ...)
  }
}

# Draw matrix M (rows along the x axis, columns along the y axis, as
# graphics::image() does) with a colour key, and `groups` (a factor of the
# rows, or NULL) as a colour bar above it with a legend.
heatmap_panels <- function(M, groups = NULL, col, zlim, main, xlab, ylab, legend_title, ...) {
  n <- nrow(M)
  m <- ncol(M)
  # room for the names of the columns of M (the y axis) when they are drawn
  left <- if (!is.null(colnames(M)) && m <= 60L) {
    min(10, 1.5 + 0.5 * max(nchar(colnames(M))) * max(0.4, min(0.8, 30 / m)))
  } else 5
  left <- max(left, 5)
  op <- graphics::par(no.readonly = TRUE)
  on.exit(graphics::par(op))
  # the colour key and the group bar get fixed heights (cm), the map the rest
  heights <- if (is.null(groups)) c(graphics::lcm(2.6), 1) else
    c(graphics::lcm(2.6), graphics::lcm(0.8), 1)
  graphics::layout(matrix(seq_along(heights), ncol = 1L), heights = heights)
  # colour key
  graphics::par(mar = c(1.6, 8, 2.2, 8))
  graphics::image(seq(zlim[1L], zlim[2L], length.out = length(col)), 1, matrix(seq_along(col)),
                  col = col, axes = FALSE, xlab = "", ylab = "", main = main)
  graphics::axis(1, cex.axis = 0.7, mgp = c(3, 0.3, 0), tcl = -0.2)
  graphics::mtext(legend_title, side = 2, las = 1, cex = 0.7, line = 0.5)
  if (!is.null(groups)) {
    gcol <- grDevices::hcl.colors(max(nlevels(groups), 2L), "Dark 3")
    graphics::par(mar = c(0.2, left, 0.2, 8))
    graphics::image(seq_len(n), 1, matrix(as.integer(groups)), col = gcol[seq_len(nlevels(groups))],
                    axes = FALSE, xlab = "", ylab = "", zlim = c(1, max(nlevels(groups), 1L)))
    graphics::mtext("group", side = 2, las = 1, cex = 0.7, line = 0.5)
    graphics::par(xpd = NA)
    graphics::legend(graphics::par("usr")[2L], graphics::par("usr")[4L] + 0.5,
                     legend = levels(groups), fill = gcol[seq_len(nlevels(groups))],
                     bty = "n", cex = 0.9, yjust = 1)
    graphics::par(xpd = FALSE)
  }
  named <- !is.null(rownames(M)) && n <= 60L
  bottom <- if (named) min(10, 3 + 0.5 * max(nchar(rownames(M))) * max(0.4, min(0.8, 30 / n))) else 4
  graphics::par(mar = c(bottom, left, 0.2, 8))
  graphics::image(seq_len(n), seq_len(m), M, col = col, zlim = zlim, axes = FALSE,
                  xlab = "", ylab = ylab, ...)
  graphics::title(xlab = xlab, line = bottom - 1.5)
  lab_axis(1, rownames(M), n)
  lab_axis(2, colnames(M), m)
  graphics::box()
}

# Axis labels: all names when they fit, else some tick numbers.
lab_axis <- function(side, labels, n) {
  if (!is.null(labels) && n <= 60L) {
    graphics::axis(side, at = seq_len(n), labels = labels, las = 2,
                   cex.axis = max(0.4, min(0.8, 30 / n)), tick = FALSE, line = -0.5)
  } else {
    at <- unique(round(seq(1, n, length.out = min(n, 8L))))
    graphics::axis(side, at = at, cex.axis = 0.7)
  }
}

# The top `n_top` features of one factor as points with their 95% posterior
# intervals (where the fit has them) and their names, largest on top.
plot_basis_top <- function(x, factor, n_top = 20, by = "weight", ...) {
  factor <- check_count(factor, "factor", min = 1)
  K <- ncol(wh_view(x)$W)
  if (factor > K) abort_input(sprintf("`factor` must be at most the rank, %d.", K))
  n_top <- check_count(n_top, "n_top", min = 1)
  mk <- markers(x, n = min(n_top, x$dims[1L]), by = by)
  mk <- mk[mk$factor == factor_names(K)[factor], , drop = FALSE]
  n <- nrow(mk)
  y <- rev(seq_len(n))
  has_band <- any(!is.na(mk$lower))
  xr <- range(0, mk$W, if (has_band) c(mk$lower, mk$upper), na.rm = TRUE)
  op <- graphics::par(mar = c(4, 9, 3, 1))
  on.exit(graphics::par(op))
  graphics::plot(mk$W, y, xlim = xr, ylim = c(0.5, n + 0.5), yaxt = "n", pch = 19,
                 xlab = sprintf("W[, %d]%s", factor,
                                if (has_band) " (posterior mean, 95% interval)" else " (point estimate)"),
                 ylab = "", main = sprintf("Top %d features of factor %s", n,
                                           factor_names(K)[factor]), ...)
  if (has_band) graphics::segments(mk$lower, y, mk$upper, y, col = "grey40")
  graphics::axis(2, at = y, labels = mk$feature, las = 1, cex.axis = max(0.5, min(0.8, 25 / n)))
}
