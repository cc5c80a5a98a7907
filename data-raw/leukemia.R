## data-raw/leukemia.R
##
## Builds data/leukemia.rda, which contains two objects:
##   leukemia          numeric matrix, 500 probe sets (rows) x 128 samples
##                     (columns): the 500 probe sets with the largest variance
##                     across all samples, ordered by decreasing variance,
##                     RMA-normalised log2 expression rounded to 3 decimals.
##   leukemia_samples  data.frame of sample annotations, one row per column
##                     of `leukemia` (same order).
##
## Source: the Bioconductor experiment-data package 'ALL' (version 1.40.0 was
## used; author Xiaochun Li, maintainer Robert Gentleman), data set `ALL`,
## an ExpressionSet of 128 adult acute lymphoblastic leukemia samples hybridised
## to Affymetrix HG-U95Av2 arrays, from
##   Chiaretti S, Li X, Gentleman R, Vitale A, Vignetti M, Mandelli F, Ritz J,
##   Foa R (2004). Gene expression profile of adult T-cell acute lymphocytic
##   leukemia identifies distinct subsets of patients with different response
##   to therapy and survival. Blood 103(7):2771-2778.
##   doi:10.1182/blood-2003-09-3243
## Licence of the source data: Artistic-2.0 (see inst/COPYRIGHTS).
##
## Requirements: Bioconductor packages 'ALL' and 'Biobase'.
## Run from the package root:  Rscript data-raw/leukemia.R
## The script is deterministic (no random numbers are used).

suppressPackageStartupMessages({
  library(Biobase)
  library(ALL)
})

if (!file.exists("DESCRIPTION") || !dir.exists("data-raw")) {
  stop("run this script from the package root: Rscript data-raw/leukemia.R")
}

data("ALL", package = "ALL", envir = environment())
n_genes <- 500L

x <- Biobase::exprs(ALL)
stopifnot(identical(dim(x), c(12625L, 128L)), all(is.finite(x)), all(x > 0))

## Select the n_genes probe sets with the largest variance across samples,
## in decreasing order of variance (ties, if any, broken by original order).
v <- apply(x, 1L, stats::var)
keep <- order(v, decreasing = TRUE, method = "radix")[seq_len(n_genes)]

leukemia <- round(x[keep, , drop = FALSE], 3L)
storage.mode(leukemia) <- "double"
dimnames(leukemia) <- list(rownames(x)[keep], colnames(x))
stopifnot(all(leukemia > 0))

## Sample annotations.
pd <- Biobase::pData(ALL)
stopifnot(identical(rownames(pd), colnames(leukemia)))
bt <- as.character(pd$BT)
leukemia_samples <- data.frame(
  sample    = colnames(leukemia),
  cell_type = factor(substr(bt, 1L, 1L), levels = c("B", "T")),
  stage     = factor(bt, levels = c("B", "B1", "B2", "B3", "B4",
                                    "T", "T1", "T2", "T3", "T4")),
  molecular = factor(as.character(pd$mol.biol),
                     levels = levels(pd$mol.biol)),
  sex       = factor(as.character(pd$sex), levels = c("F", "M")),
  age       = as.integer(pd$age),
  stringsAsFactors = FALSE
)
rownames(leukemia_samples) <- NULL
stopifnot(!anyNA(leukemia_samples$cell_type), !anyNA(leukemia_samples$stage))

save(leukemia, leukemia_samples, file = "data/leukemia.rda",
     compress = "xz", version = 2)

message(sprintf("wrote data/leukemia.rda: %d x %d matrix, %s bytes",
                nrow(leukemia), ncol(leukemia),
                format(file.size("data/leukemia.rda"), big.mark = ",")))
