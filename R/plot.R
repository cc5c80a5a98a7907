#' Plot a fit
#'
#' `type = "trace"`: the log-likelihood and the noise precision `tau` against
#' the sweep, one line per chain, burn-in shaded (for ICM: the log posterior;
#' VB: the ELBO; NP: the loss).
#' `type = "basis"`: the posterior mean of one basis vector `W[, factor]` with
#' 95% posterior intervals (from the kept draws when `keep = "draws"`, else
#' mean +/- 1.96 posterior sd; VB: from q), as in Figure 1 of Schmidt et al.
#' (2009).
#' `type = "ard"` (fits with an [ard()] prior): each factor's mean
#' contribution to an entry of `W %*% H` in units of the noise sd, on a log
#' scale, with the line at 0.1 below which [summary.bnmf()] counts a factor
#' as switched off.
#'
#' @param x A `bnmf` fit.
#' @param type `"trace"`, `"basis"` or `"ard"`.
#' @param factor For `type = "basis"`: which factor to show.
#' @param ... Passed to the underlying [graphics::plot()] call.
#' @return `x`, invisibly.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:60, ], rank = 2, iter = 300, keep = "draws")
#' plot(fit)
#' plot(fit, type = "basis", factor = 1)
#' vb <- bnmf(leukemia[1:60, ] ~ nmf(5, prior = ard()), method = "vb")
#' plot(vb, type = "ard")
#' @export
plot.bnmf <- function(x, type = c("trace", "basis", "ard"), factor = 1, ...) {
  type <- check_choice(type, c("trace", "basis", "ard"), "type")
  switch(type, trace = plot_trace(x, ...), basis = plot_basis(x, factor, ...),
         ard = plot_ard(x, ...))
  invisible(x)
}

plot_ard <- function(x, ...) {
  if (!identical(x$prior$type, "ard")) {
    abort_input("`type = \"ard\"` needs a fit with an `ard()` prior.")
  }
  rel <- ard_relevance(x)
  sig <- pmax(rel$signal, 1e-6)
  cols <- ifelse(rel$active, "grey30", "grey80")
  graphics::barplot(sig, names.arg = rel$factor, log = "y", col = cols,
                    border = NA, ylab = "mean contribution / noise sd",
                    ylim = c(min(sig, 1e-2) / 2, max(sig, 1) * 2), ...)
  graphics::abline(h = 0.1, lty = 2)
}

plot_trace <- function(x, ...) {
  tr <- x$trace
  chains <- sort(unique(tr$chain))
  cols <- grDevices::hcl.colors(max(length(chains), 2L), "Dark 3")
  panels <- switch(x$method, gibbs = c("loglik", "tau"), np = "sse",
                   c("logpost", "tau"))
  labels <- c(loglik = "log-likelihood", tau = "tau (noise precision)",
              logpost = if (x$method == "vb") "ELBO" else "log posterior",
              sse = "loss")
  op <- graphics::par(mfrow = c(length(panels), 1L), mar = c(4, 4.5, 1, 1))
  on.exit(graphics::par(op))
  for (p in panels) {
    graphics::plot(range(tr$iteration), range(tr[[p]], finite = TRUE), type = "n",
                   xlab = "sweep", ylab = labels[[p]], ...)
    if (x$method == "gibbs" && x$settings$burnin > 0) {
      usr <- graphics::par("usr")
      graphics::rect(usr[1L], usr[3L], x$settings$burnin + 0.5, usr[4L],
                     col = grDevices::gray(0.92), border = NA)
    }
    for (c in seq_along(chains)) {
      s <- tr[tr$chain == chains[c], ]
      graphics::lines(s$iteration, s[[p]], col = cols[c])
    }
  }
}

plot_basis <- function(x, factor, ...) {
  factor <- check_count(factor, "factor", min = 1)
  if (factor > x$rank) abort_input(sprintf("`factor` must be at most the rank, %d.", x$rank))
  w <- x$W[, factor]
  lo <- hi <- NULL
  if (x$method %in% c("gibbs", "vb")) {
    if (!is.null(x$draws)) {
      I <- x$dims[1L]
      rows <- (factor - 1L) * I + seq_len(I)
      d <- do.call(cbind, lapply(x$draws, function(dr) dr$W[rows, , drop = FALSE]))
      q <- apply(d, 1L, stats::quantile, probs = c(0.025, 0.975))
      lo <- q[1L, ]
      hi <- q[2L, ]
    } else {
      s <- x$W_sd[, factor]
      lo <- pmax(w - 1.96 * s, 0)
      hi <- w + 1.96 * s
    }
  }
  idx <- seq_along(w)
  graphics::plot(idx, w, type = "n", ylim = range(0, w, hi),
                 xlab = "feature (row of X)",
                 ylab = sprintf("basis vector %s", colnames(x$W)[factor]), ...)
  if (!is.null(lo)) {
    graphics::polygon(c(idx, rev(idx)), c(lo, rev(hi)), col = grDevices::gray(0.8),
                      border = NA)
  }
  graphics::lines(idx, w, lwd = 1.5)
}
