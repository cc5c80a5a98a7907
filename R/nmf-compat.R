# Habits of NMF users: when the NMF package is loaded (before or after
# bnmf), its S4 generics basis(), coef(), coefficients(), nbasis(),
# featureNames(), sampleNames() and consensus() give bnmf's answers for bnmf
# fits. NMF's catch-all methods would otherwise answer NULL (basis()) or
# nonsense. The methods are set when NMF's namespace loads (a hook), without
# a dependency on NMF.

#' bnmf fits under the NMF package's generics
#'
#' The NMF package (CRAN) defines S4 generics `basis()`, `coef()`,
#' `nbasis()`, `consensus()`, `featureNames()` and `sampleNames()`. When it
#' is attached after bnmf, its `basis()` masks bnmf's and, for any object it
#' does not know, returns `NULL`. bnmf therefore registers methods for bnmf
#' fits on these generics as soon as NMF's namespace is loaded (whether
#' before or after bnmf), so that `basis(fit)`, `coef(fit)`, `nbasis(fit)`
#' (the rank), `consensus(fit)` ([consensus_matrix()], as a plain matrix),
#' `featureNames(fit)` and `sampleNames(fit)` (the row and column names of
#' the data) give bnmf's answers under either package's functions.
#' `consensusmap(fit)`, `coefmap(fit)` and `basismap(fit)` draw bnmf's
#' consensus map (`plot(fit, type = "consensus")`) and heatmaps
#' (`plot(fit, type = "heatmap", what = "coef")` and `what = "basis"`); of
#' NMF's arguments they use `annCol` (the sample groups: a vector, or a data
#' frame whose first column is taken) and `main`, and say which others they
#' leave unused. bnmf does
#' not depend on NMF.
#'
#' @examples
#' fit <- bnmf(leukemia[1:40, 1:20], rank = 2, method = "icm")
#' if (requireNamespace("NMF", quietly = TRUE)) {
#'   all.equal(NMF::basis(fit), basis(fit))
#'   NMF::nbasis(fit)
#'   NMF::coefmap(fit, annCol = leukemia_samples$cell_type[1:20])
#' }
#' @name nmf-compat
#' @keywords internal
NULL

# S4 dispatch of an S3 object looks at its first class only, so the method
# class of every fit, c("bnmf_<method>", "bnmf_<model>", "bnmf"), is
# declared to extend "bnmf".
methods::setOldClass("bnmf")
for (cl in paste0("bnmf_", bnmf_methods)) methods::setOldClass(c(cl, "bnmf"))
rm(cl)

# The S4 methods for bnmf fits on NMF's generics, in an environment of their
# own (bnmf's namespace is locked once loaded).
register_nmf_methods <- function(...) {
  ns <- asNamespace("NMF")
  where <- nmf_compat_env
  defs <- list(
    basis = function(object, ...) basis(object),
    coef = function(object, ...) stats::coef(object),
    coefficients = function(object, ...) stats::coef(object),
    nbasis = function(x, ...) ncol(wh_view(x)$W),
    consensus = function(object, ...) unclass_consensus(consensus_matrix(object, ...)),
    featureNames = function(object) object$dimnames[[1L]],
    sampleNames = function(object) object$dimnames[[2L]],
    consensusmap = function(object, ...) nmf_map(object, "consensus", ...),
    basismap = function(object, ...) nmf_map(object, "basis", ...),
    coefmap = function(object, ...) nmf_map(object, "coef", ...)
  )
  for (g in names(defs)) {
    gen <- tryCatch(get(g, envir = ns), error = function(e) NULL)
    if (!methods::is(gen, "genericFunction")) next
    def <- defs[[g]]
    formals(def) <- formals(gen)
    methods::setMethod(gen, "bnmf", def, where = where)
  }
  invisible(TRUE)
}

nmf_compat_env <- new.env()

# NMF's consensusmap(), basismap() and coefmap() on a bnmf fit: bnmf's
# consensus map and heatmaps. Of NMF's arguments, `annCol` (a vector or
# factor of the samples, or a data frame whose first column is used) gives
# the sample groups and `main` the title; the others (NMF's aheatmap()
# options) are not used, and a note says which.
nmf_map <- function(object, what, ...) {
  a <- list(...)
  groups <- a$annCol %||% a$groups
  if (is.data.frame(groups) || is.list(groups)) groups <- groups[[1L]]
  unused <- setdiff(names(a), c("annCol", "groups", "main"))
  if (length(unused)) {
    message(sprintf("bnmf's %s map does not use NMF's argument%s %s.", what,
                    if (length(unused) > 1L) "s" else "",
                    paste0("`", unused, "`", collapse = ", ")))
  }
  switch(what,
    consensus = graphics::plot(consensus_matrix(object), groups = groups,
                               membership = membership(object), main = a$main),
    coef = plot_heatmap(object, what = "coef", groups = groups, main = a$main),
    basis = plot_heatmap(object, what = "basis", main = a$main))
  invisible(object)
}

unclass_consensus <- function(x) {
  attributes(x) <- attributes(x)[c("dim", "dimnames")]
  x
}

.onLoad <- function(libname, pkgname) {
  setHook(packageEvent("NMF", "onLoad"), register_nmf_methods)
  if (isNamespaceLoaded("NMF")) register_nmf_methods()
  invisible()
}
