# Heatmaps of the factors (plot(fit, type = "heatmap")), the heatmap drawing
# shared with the consensus map and the biclusters (bnmf_heatmap()), and the
# basis plot of a factor's top features with their posterior intervals.

# Heatmap of the coefficients H (samples in columns, each column as the
# shares of the factors' contributions) or of the basis W (the top `n_top`
# features of every factor, each row scaled to a maximum of 1). Samples and
# features are ordered by hierarchical clustering (average linkage,
# dendrograms in the margins); the samples carry tracks: the known `groups`,
# the posterior cluster (membership()) and its probability, and the
# silhouette width of the clusters on the share profiles.
plot_heatmap <- function(x, what = c("coef", "basis"), groups = NULL, n_top = 10,
                         main = NULL, ...) {
  what <- check_choice(what, c("coef", "basis"), "what")
  f <- wh_view(x)
  W <- unname(f$W)
  H <- unname(f$H)
  K <- ncol(W)
  kn <- colnames(f$W) %||% factor_names(K)
  if (!identical(length(kn), K)) kn <- factor_names(K)
  col <- grDevices::hcl.colors(32, "YlOrRd", rev = TRUE)
  if (what == "coef") {
    J <- ncol(H)
    groups <- check_groups(groups, J)
    C <- H * colSums(W)
    S <- sweep(C, 2L, pmax(colSums(C), .Machine$double.xmin), "/")
    dimnames(S) <- list(kn, x$dimnames[[2L]] %||% as.character(seq_len(J)))
    m <- membership(x)
    tracks <- list()
    if (!is.null(groups)) tracks$group <- groups
    tracks$cluster <- droplevels(m$cluster)
    if (!identical(attr(m, "n"), 1L)) tracks[["P(cluster)"]] <- hm_prob_track(m$probability)
    sil <- hm_silhouette(m$cluster, stats::dist(t(S)))
    if (!is.null(sil)) tracks$silhouette <- sil
    hm_call(list(S, col = col, breaks = "linear", zlim = c(0, 1),
                 main = main %||% "Coefficients: share of each factor in each sample",
                 xlab = "sample", ylab = "factor", key_title = "share",
                 tracks = tracks), list(...))
  } else {
    if (!is.null(groups)) abort_input("`groups` annotates samples: use it with `what = \"coef\"`.")
    n_top <- check_count(n_top, "n_top", min = 1)
    U <- sweep(W, 2L, pmax(colSums(W), .Machine$double.xmin), "/")
    d <- max.col(U, ties.method = "first")
    R <- U / pmax(apply(U, 1L, max), .Machine$double.xmin)
    # per factor, the features it dominates with the largest weight
    rows <- unlist(lapply(seq_len(K), function(k) {
      i <- which(d == k)
      i[order(-U[i, k])][seq_len(min(n_top, length(i)))]
    }))
    M <- t(R[rows, , drop = FALSE])
    dimnames(M) <- list(kn, x$dimnames[[1L]][rows] %||% as.character(rows))
    hm_call(list(M, col = col, breaks = "linear", zlim = c(0, 1),
                 main = main %||% sprintf("Basis: top %d features of each factor (scaled to max 1)",
                                          n_top),
                 xlab = "feature", ylab = "factor", key_title = "relative\nweight",
                 tracks = list(factor = factor(kn[d[rows]], levels = kn),
                               `95% CI / W` = basis_interval_track(x, W, rows, d[rows]))),
            list(...))
  }
}

# bnmf_heatmap() with the arguments `args`, those of `dots` (the user's
# graphical parameters: col, zlim, breaks, xlab, ...) taking precedence.
hm_call <- function(args, dots) {
  do.call(bnmf_heatmap, utils::modifyList(args, dots))
}

# The uncertainty of the basis map's entries: for feature i of the map and
# its dominant factor k, the width of the 95% posterior interval of W[i, k]
# over W[i, k] (0: certain; shown up to 2), where the fit has intervals
# (Gibbs and VB fits of the Gaussian NMF model); NULL otherwise.
basis_interval_track <- function(x, W, rows, k) {
  bands <- tryCatch(lapply(sort(unique(k)), function(f) basis_band(x, f)),
                    error = function(e) NULL)
  if (is.null(bands) || any(vapply(bands, is.null, logical(1)))) return(NULL)
  names(bands) <- sort(unique(k))
  w <- vapply(seq_along(rows), function(r) {
    b <- bands[[as.character(k[r])]]
    (b$hi[rows[r]] - b$lo[rows[r]]) / max(W[rows[r], k[r]], .Machine$double.xmin)
  }, numeric(1))
  if (!all(is.finite(w))) return(NULL)
  structure(list(values = pmin(w, 2), zlim = c(0, 2),
                 col = grDevices::hcl.colors(16, "Grays", rev = TRUE)), class = "hm_track")
}

# A numeric annotation track: values, their range and palette.
hm_prob_track <- function(p) {
  structure(list(values = p, zlim = c(0, 1),
                 col = grDevices::hcl.colors(16, "Grays", rev = TRUE)), class = "hm_track")
}

# Silhouette widths (cluster::silhouette, when the recommended package is
# installed) of the clustering `cl` under the distances `d`, as a track; NULL
# without the package or with fewer than 2 clusters.
hm_silhouette <- function(cl, d) {
  cl <- as.integer(droplevels(as.factor(cl)))
  if (length(unique(cl)) < 2L || length(cl) < 3L) return(NULL)
  if (!requireNamespace("cluster", quietly = TRUE)) return(NULL)
  s <- cluster::silhouette(cl, d)
  structure(list(values = s[, "sil_width"], zlim = c(-1, 1),
                 col = grDevices::hcl.colors(16, "Blue-Red 3", rev = TRUE)), class = "hm_track")
}

# Colour breaks: "quantile" (the quantiles of the values: each colour paints
# as many entries, so that a few outliers do not wash out the rest) or
# "linear" (equal steps over zlim), or numeric breaks.
hm_breaks <- function(M, breaks, n, zlim = NULL) {
  v <- M[is.finite(M)]
  if (!length(v)) v <- c(0, 1)
  zlim <- zlim %||% range(v)
  if (zlim[1L] == zlim[2L]) zlim <- zlim + c(-0.5, 0.5)
  if (is.numeric(breaks)) return(sort(unique(breaks)))
  b <- if (identical(breaks, "quantile")) {
    unique(stats::quantile(v, probs = seq(0, 1, length.out = n + 1L), names = FALSE, type = 7))
  }
  if (length(b) < 3L) b <- seq(zlim[1L], zlim[2L], length.out = n + 1L)
  b[1L] <- min(b[1L], zlim[1L])
  b[length(b)] <- max(b[length(b)], zlim[2L])
  b
}

# The heatmap every plot of the package draws: matrix M with its rows from the
# bottom up and its columns from left to right, in the order of average-linkage
# clustering (euclidean distances, or `row_dist`/`col_dist`) with the
# dendrograms in the left and top margins (`cluster_rows`/`cluster_cols`
# FALSE: in the given order, or in `row_order`/`col_order`); `tracks`, a named
# list of annotations of the columns (factors: a colour per level; hm_track
# objects: a numeric scale), drawn as bars above the map; a colour key with
# its title and the legends of the tracks in the right-hand column; colour
# `breaks` "quantile" or "linear". Labels are drawn as large as the device
# allows (par("pin"), strheight()); when they would be smaller than a legible
# size only every k-th is drawn, and when still too many none, with a note.
bnmf_heatmap <- function(M, col, breaks = c("quantile", "linear"), zlim = NULL,
                         main = "", xlab = "", ylab = "", key_title = "",
                         tracks = list(), cluster_rows = TRUE, cluster_cols = TRUE,
                         row_order = NULL, col_order = NULL, row_dist = NULL, col_dist = NULL,
                         row_cuts = NULL, col_cuts = NULL, ...) {
  n <- nrow(M)
  m <- ncol(M)
  dots <- list(...)
  if (is.character(breaks)) breaks <- match.arg(breaks)
  br <- hm_breaks(M, breaks, length(col), zlim)
  pal <- grDevices::colorRampPalette(col)(length(br) - 1L)
  hc_of <- function(d) stats::hclust(d, method = "average")
  rhc <- if (cluster_rows && n > 2L && is.null(row_order)) {
    hc_of(row_dist %||% stats::dist(replace(M, !is.finite(M), 0)))
  }
  chc <- if (cluster_cols && m > 2L && is.null(col_order)) {
    hc_of(col_dist %||% stats::dist(t(replace(M, !is.finite(M), 0))))
  }
  ro <- if (!is.null(rhc)) rhc$order else row_order %||% seq_len(n)
  co <- if (!is.null(chc)) chc$order else col_order %||% seq_len(m)
  Mo <- M[ro, co, drop = FALSE]
  tracks <- Filter(Negate(is.null), tracks)
  nt <- length(tracks)

  op <- graphics::par(no.readonly = TRUE)
  on.exit(graphics::par(op))
  din <- grDevices::dev.size("in")
  csi <- graphics::par("csi")
  # label sizes from the device: the character size that fits n labels in
  # the height and m in the width of the map (about 60% of the device)
  fit_cex <- function(k, inches) max(0.1, min(0.9, inches / (k * csi * 1.05)))
  rcex <- fit_cex(n, 0.6 * din[2L])
  ccex <- fit_cex(m, 0.55 * din[1L])
  lab_lines <- function(lab, cex, k) {
    if (is.null(lab) || cex < 0.05) return(1)
    min(14, 1 + 0.62 * max(nchar(lab), 1) * max(cex, 0.5))
  }
  right <- max(lab_lines(rownames(M), rcex, n), if (nt) 0.5 * max(nchar(names(tracks))) + 1)
  right <- max(right, 2) + 0.5
  bottom <- lab_lines(colnames(M), ccex, m) + 2
  # layout: [row dendrogram | map column | key and legends], the map column
  # holding the column dendrogram, the tracks and the map
  dend_w <- if (!is.null(rhc)) 2.2 else 0.8
  heights <- c(if (!is.null(chc)) graphics::lcm(1.6) else graphics::lcm(0.3),
               rep(graphics::lcm(0.5), nt), 1)
  nr <- length(heights)
  lay <- matrix(0L, nr, 3L)
  lay[1L, 2L] <- 1L
  if (nt) lay[1L + seq_len(nt), 2L] <- 1L + seq_len(nt)
  lay[nr, 2L] <- nt + 2L
  lay[nr, 1L] <- nt + 3L
  lay[, 3L] <- nt + 4L
  graphics::layout(lay, widths = c(graphics::lcm(dend_w), 1, graphics::lcm(4.2)),
                   heights = heights)
  graphics::par(oma = c(0, 0, 2.2, 0))
  # column dendrogram
  graphics::par(mar = c(0, 0, 0.3, right))
  if (!is.null(chc)) {
    graphics::plot(stats::as.dendrogram(chc), axes = FALSE, xaxs = "i", leaflab = "none",
                   xlim = c(0.5, m + 0.5))
  } else graphics::plot.new()
  # tracks
  legends <- list()
  for (t in seq_len(nt)) {
    tr <- tracks[[t]]
    graphics::par(mar = c(0.15, 0, 0, right))
    if (inherits(tr, "hm_track")) {
      v <- tr$values[co]
      graphics::image(seq_len(m), 1, matrix(v, ncol = 1L), col = tr$col, zlim = tr$zlim,
                      axes = FALSE, xlab = "", ylab = "")
      legends[[names(tracks)[t]]] <- tr
    } else {
      g <- as.factor(tr)
      lv <- levels(droplevels(g))
      g <- factor(g, levels = lv)
      gcol <- hm_group_colours(length(lv), t)
      graphics::image(seq_len(m), 1, matrix(as.integer(g)[co], ncol = 1L), col = gcol,
                      zlim = c(0.5, length(lv) + 0.5), axes = FALSE, xlab = "", ylab = "")
      legends[[names(tracks)[t]]] <- list(levels = lv, col = gcol)
    }
    if (!is.null(col_cuts)) graphics::abline(v = col_cuts, col = "white", lwd = 2)
    graphics::box(col = "grey60")
    graphics::mtext(names(tracks)[t], side = 4, las = 1, line = 0.3, cex = 0.7)
  }
  # the map
  graphics::par(mar = c(bottom, 0, 0, right))
  do.call(graphics::image, c(list(seq_len(m), seq_len(n), t(Mo), col = pal, breaks = br,
                                   axes = FALSE, xlab = "", ylab = "",
                                   xlim = c(0.5, m + 0.5), ylim = c(0.5, n + 0.5),
                                   useRaster = n * m > 5e4), dots))
  if (!is.null(row_cuts)) graphics::abline(h = row_cuts, col = "white", lwd = 2)
  if (!is.null(col_cuts)) graphics::abline(v = col_cuts, col = "white", lwd = 2)
  graphics::box()
  pin <- graphics::par("pin")
  notes <- c(hm_labels(1, colnames(Mo), pin[1L], xlab),
             hm_labels(4, rownames(Mo), pin[2L], ylab))
  graphics::title(xlab = xlab, line = bottom - 1.2)
  if (length(notes)) {
    graphics::mtext(paste(notes, collapse = "; "), side = 1, line = bottom - 0.2, cex = 0.6,
                    col = "grey30", adj = 0)
  }
  # row dendrogram
  graphics::par(mar = c(bottom, 1.3, 0, 0))
  if (!is.null(rhc)) {
    graphics::plot(stats::as.dendrogram(rhc), horiz = TRUE, axes = FALSE, yaxs = "i",
                   leaflab = "none", ylim = c(0.5, n + 0.5))
  } else graphics::plot.new()
  graphics::mtext(ylab, side = 2, line = 0.2)
  # key and legends
  graphics::par(mar = c(1, 1.2, 1.5, 0.8))
  hm_legends(br, pal, key_title, is.character(breaks) && breaks == "quantile", legends)
  graphics::mtext(main, side = 3, outer = TRUE, line = 0.6, font = 2, cex = 1.1)
  invisible(list(row_order = ro, col_order = co))
}

# Qualitative colours of track `t` (successive tracks use different palettes,
# so that two tracks' levels are not confused).
hm_group_colours <- function(k, t) {
  pals <- c("Dark 3", "Set 2", "Harmonic", "Dynamic")
  grDevices::hcl.colors(max(k, 2L), pals[(t - 1L) %% length(pals) + 1L])[seq_len(k)]
}

# Labels on side 1 (columns) or 4 (rows) of the map, `inches` long: as large
# as fits up to cex 0.9; below cex 0.5, every k-th label at cex 0.5; when
# that would drop more than 90% of them, none. Returns a note for the margin
# (or NULL).
hm_labels <- function(side, labels, inches, what) {
  k <- length(labels)
  if (!k) return(NULL)
  h <- graphics::strheight("Mg", units = "inches", cex = 1) * 1.15
  cex <- min(0.9, inches / (k * h))
  step <- 1L
  if (cex < 0.5) {
    step <- ceiling(0.5 / cex)
    cex <- 0.5
  }
  what <- if (nzchar(what)) what else "label"
  if (step > 10L) {
    return(sprintf("%d %ss: labels omitted", k, sub("\\s*\\(.*$", "", what)))
  }
  at <- seq(1L, k, by = step)
  graphics::axis(side, at = at, labels = labels[at], las = 2, cex.axis = cex, tick = FALSE,
                 line = -0.6, hadj = if (side == 4) 0 else 1)
  if (step > 1L) sprintf("every %s %s label shown (of %d)", ordinal(step),
                         sub("\\s*\\(.*$", "", what), k)
}

ordinal <- function(k) {
  suf <- if (k %% 100L %in% 11:13) "th" else c("th", "st", "nd", "rd", rep("th", 6))[k %% 10L + 1L]
  paste0(k, suf)
}

# The right-hand column: the colour key (vertical, titled; quantile breaks:
# equal boxes labelled with the break values) and the legends of the tracks.
hm_legends <- function(br, pal, key_title, quantile, legends) {
  graphics::plot.new()
  graphics::plot.window(xlim = c(0, 1), ylim = c(0, 1), yaxs = "i", xaxs = "i")
  lh <- graphics::strheight("M", cex = 0.85) * 1.7
  nk <- length(pal)
  top <- 0.98
  nlines <- 1L + lengths(regmatches(key_title, gregexpr("\n", key_title)))
  graphics::text(0, top, key_title, adj = c(0, 1), cex = 0.9, font = 2)
  kt <- top - nlines * lh - 0.01
  y <- kt - max(0.18, min(0.32, 0.6 - 0.2 * length(legends)))
  ys <- seq(y, kt, length.out = nk + 1L)
  graphics::rect(0.02, ys[-(nk + 1L)], 0.2, ys[-1L], col = pal, border = NA)
  graphics::rect(0.02, y, 0.2, kt, border = "grey40")
  at <- unique(round(seq(1, nk + 1L, length.out = min(nk + 1L, 6L))))
  graphics::text(0.24, ys[at], formatC(br[at], digits = 3, format = "g"), adj = 0, cex = 0.8)
  if (quantile) graphics::text(0, y - 0.01, "(quantile breaks)", adj = c(0, 1), cex = 0.75,
                               col = "grey30")
  y <- y - 2 * lh
  for (nm in names(legends)) {
    lg <- legends[[nm]]
    if (y < 3 * lh) break
    graphics::text(0, y, nm, adj = c(0, 1), cex = 0.85, font = 2)
    y <- y - lh
    if (is.null(lg$levels)) {
      # a numeric track: a horizontal bar from zlim[1] to zlim[2]
      xs <- seq(0.02, 0.8, length.out = length(lg$col) + 1L)
      graphics::rect(xs[-length(xs)], y - 0.8 * lh, xs[-1L], y, col = lg$col, border = NA)
      graphics::text(c(0.02, 0.8), y - 0.9 * lh, format(lg$zlim), adj = c(0.5, 1), cex = 0.75)
      y <- y - 2.6 * lh
    } else {
      nl <- length(lg$levels)
      show <- seq_len(min(nl, max(1L, floor((y - lh) / lh))))
      for (i in show) {
        graphics::rect(0.02, y - 0.75 * lh, 0.12, y - 0.05 * lh, col = lg$col[i], border = NA)
        graphics::text(0.16, y - 0.4 * lh, lg$levels[i], adj = c(0, 0.5), cex = 0.8)
        y <- y - lh
      }
      if (nl > length(show)) graphics::text(0.16, y - 0.4 * lh, "...", adj = 0, cex = 0.8)
      y <- y - lh
    }
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
