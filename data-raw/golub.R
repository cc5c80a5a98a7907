## data-raw/golub.R
##
## Builds data/golub.rda, which contains two objects:
##   golub          integer matrix, 5000 genes (rows) x 38 samples (columns):
##                  the expression values of the Golub et al. (1999) leukemia
##                  training set at linear scale, as shipped in the NMF
##                  package (`esGolub`: thresholded to [20, 16000] and
##                  filtered to the 5000 most variable genes by Brunet et al.
##                  2004), unchanged (the values are whole numbers).
##   golub_samples  data.frame of sample annotations, one row per column.
##
## Source: the CRAN package 'NMF' (GPL (>= 2)), data set `esGolub`; on Debian
## in the package r-cran-nmf. Licence: GPL (>= 2), see inst/COPYRIGHTS.
## Run from the package root:  Rscript data-raw/golub.R
## Deterministic (no random numbers).

if (!file.exists("DESCRIPTION") || !dir.exists("data-raw")) {
  stop("run this script from the package root: Rscript data-raw/golub.R")
}
env <- new.env()
utils::data("esGolub", package = "NMF", envir = env)
es <- env$esGolub
x <- Biobase::exprs(es)
stopifnot(identical(dim(x), c(5000L, 38L)), all(is.finite(x)), all(x == round(x)))
golub <- x
storage.mode(golub) <- "integer"
pd <- Biobase::pData(es)
type <- ifelse(pd$ALL.AML == "AML", "AML", ifelse(pd$Cell == "T-cell", "ALL-T", "ALL-B"))
golub_samples <- data.frame(
  sample = colnames(golub),
  type = factor(type, levels = c("ALL-B", "ALL-T", "AML")),
  class = factor(as.character(pd$ALL.AML), levels = c("ALL", "AML")),
  stringsAsFactors = FALSE
)
rownames(golub_samples) <- NULL
stopifnot(identical(golub_samples$sample, rownames(pd)), !anyNA(golub_samples$type))
save(golub, golub_samples, file = "data/golub.rda", compress = "xz", version = 2)
message(sprintf("wrote data/golub.rda: %d x %d, %s bytes", nrow(golub), ncol(golub),
                format(file.size("data/golub.rda"), big.mark = ",")))
