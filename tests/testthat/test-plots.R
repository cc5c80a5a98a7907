# Every plot type of every model and method is drawn to a PNG file without a
# warning or an error, and the file is written.

plot_types <- function(fit) {
  ard <- identical(fit$prior$type, "ard")
  if (inherits(fit, "bnmf_rrt")) {
    return(list(list(type = "elbo"), list(type = "persistence"), list(type = "projection")))
  }
  if (inherits(fit, "bnmf_particles")) {
    return(list(list(type = "weights"), list(type = "distance"), list(type = "basis"),
                list(type = "features")))
  }
  if (inherits(fit, "bnmf_hmc")) return(list(list()))
  groups <- rep(c("a", "b"), length.out = fit$dims[2L])
  if (inherits(fit, "bnmf_poisson")) {
    return(c(list(list(type = "trace"), list(type = "masks"),
                  list(type = "heatmap", groups = groups), list(type = "consensus")),
             if (ard) list(list(type = "ard"))))
  }
  c(list(list(type = "trace"), list(type = "basis", factor = 2),
         list(type = "heatmap", groups = groups), list(type = "heatmap", what = "basis", n_top = 3),
         list(type = "consensus", groups = groups)),
    if (inherits(fit, "bnmf_nmtf")) list(list(type = "biclusters")),
    if (ard) list(list(type = "ard")))
}

expect_png <- function(expr_fun, label) {
  f <- tempfile(fileext = ".png")
  grDevices::png(f, width = 900, height = 700)
  on.exit(if (grDevices::dev.cur() > 1L) grDevices::dev.off())
  expect_no_warning(expr_fun(), message = NULL)
  grDevices::dev.off()
  expect_true(file.exists(f), label = paste(label, "writes its file"))
  expect_gt(file.size(f), 1000)
  unlink(f)
}

test_that("every plot of every model and method draws to PNG without warnings", {
  skip_if_not(capabilities("png"))
  X <- conformance_data()
  for (spec in conformance_fits()) {
    set.seed(3)
    fit <- suppressWarnings(do.call(bnmf, c(list(X), spec$args)))
    for (a in plot_types(fit)) {
      label <- sprintf("%s/%s plot(%s)", spec$model, spec$method,
                       paste(names(a), vapply(a, function(v) paste(v, collapse = ","), ""),
                             sep = "=", collapse = ", "))
      expect_png(function() do.call(plot, c(list(fit), a)), label)
    }
  }
})

test_that("consensus map, covering persistence and rank plots draw to PNG", {
  skip_if_not(capabilities("png"))
  X <- conformance_data()
  set.seed(4)
  fit <- suppressWarnings(bnmf(X, rank = 2, iter = 60, chains = 2, keep = "draws"))
  expect_png(function() plot(consensus_matrix(fit)), "consensus_matrix")
  expect_png(function() plot(consensus_matrix(fit), groups = rep(1:2, 5),
                             membership = membership(fit)), "consensus_matrix with membership")
  pf <- suppressWarnings(bnmf(X, rank = 2, method = "particles", particles = 4, iter = 20))
  expect_png(function() plot(covering_number(pf)), "covering_number")
  rk <- suppressWarnings(select_rank(X, ranks = 1:2, criterion = "bic", method = "icm"))
  expect_png(function() plot(rk), "select_rank")
})

test_that("heatmap labels are thinned, with a note, when too many for the device", {
  skip_if_not(capabilities("png"))
  set.seed(5)
  M <- matrix(runif(3 * 400), 3, 400, dimnames = list(c("a", "b", "c"), paste0("s", 1:400)))
  f <- tempfile(fileext = ".png")
  grDevices::png(f, width = 600, height = 400)
  expect_no_warning(bnmf:::bnmf_heatmap(M, col = grDevices::hcl.colors(8), xlab = "sample",
                                        tracks = list(g = rep(c("x", "y"), 200))))
  grDevices::dev.off()
  expect_gt(file.size(f), 1000)
  grDevices::png(f, width = 600, height = 400)
  graphics::plot.new()
  graphics::plot.window(c(0.5, 400.5), c(0, 1))
  pin <- graphics::par("pin")[1L]
  expect_match(bnmf:::hm_labels(1, paste0("s", 1:2000), pin, "sample"), "labels omitted")
  expect_match(bnmf:::hm_labels(1, paste0("s", 1:400), pin, "sample"), "every .* sample label shown")
  expect_null(bnmf:::hm_labels(1, paste0("s", 1:10), pin, "sample"))
  grDevices::dev.off()
  unlink(f)
})

test_that("quantile breaks spread the colours over skewed data", {
  v <- matrix(c(rep(1, 50), 2:49, 1e6, 2e6), 10)
  b <- bnmf:::hm_breaks(v, "quantile", 8)
  expect_true(length(b) >= 3)
  expect_lt(b[length(b) - 1L], 1e5)
  expect_equal(bnmf:::hm_breaks(v, "linear", 8), seq(1, 2e6, length.out = 9))
})

test_that("NMF's consensusmap(), coefmap() and basismap() draw bnmf fits", {
  skip_if_not_installed("NMF")
  skip_if_not(capabilities("png"))
  suppressMessages(requireNamespace("NMF", quietly = TRUE))
  X <- conformance_data()
  set.seed(6)
  fit <- suppressWarnings(bnmf(X, rank = 2, iter = 60, chains = 2, keep = "draws"))
  g <- rep(c("a", "b"), 5)
  expect_png(function() NMF::consensusmap(fit, annCol = g), "consensusmap")
  expect_png(function() NMF::coefmap(fit, annCol = data.frame(type = g)), "coefmap")
  expect_png(function() NMF::basismap(fit, main = "W"), "basismap")
  f <- tempfile(fileext = ".png")
  grDevices::png(f)
  expect_message(NMF::basismap(fit, Rowv = FALSE), "does not use NMF's argument `Rowv`")
  grDevices::dev.off()
  unlink(f)
})

test_that("titles can be replaced with main =", {
  skip_if_not(capabilities("png"))
  X <- conformance_data()
  set.seed(7)
  fit <- suppressWarnings(bnmf(X ~ nmtf(2, 2), iter = 30))
  pf <- suppressWarnings(bnmf(X, rank = 2, method = "particles", particles = 3, iter = 20))
  for (a in list(list(fit, type = "biclusters"), list(fit, type = "heatmap"),
                 list(fit, type = "consensus"), list(fit), list(pf, type = "distance"))) {
    expect_png(function() do.call(plot, c(a, main = "a title")), "main =")
  }
})
