#' Acute lymphoblastic leukemia gene expression data
#'
#' Gene expression of the 500 most variable Affymetrix probe sets in 128
#' adult acute lymphoblastic leukemia (ALL) samples (Chiaretti et al. 2004),
#' with the clinical annotation of the samples. A small, real, non-negative
#' data set for trying out non-negative matrix factorisation: `leukemia` is
#' laid out as the data matrix `X` in `X ~ W H`, features (probe sets) in rows
#' and samples in columns.
#'
#' @format
#' `leukemia`: a numeric matrix with 500 rows (probe sets) and 128 columns
#' (samples). Row names are Affymetrix HG-U95Av2 probe set identifiers (for
#' example `"38355_at"`), column names are the sample identifiers of the
#' original study (for example `"01005"`). All values are positive (range
#' 2.321 to 14.127) and there are no missing values.
#'
#' `leukemia_samples`: a data frame with 128 rows, one per column of
#' `leukemia` and in the same order, and 6 columns:
#' \describe{
#'   \item{`sample`}{character, the sample identifier (equals
#'     `colnames(leukemia)`).}
#'   \item{`cell_type`}{factor with levels `B` and `T`: the lineage of the
#'     leukemia (95 B-cell and 33 T-cell samples).}
#'   \item{`stage`}{factor with levels `B`, `B1`, ..., `B4`, `T`, `T1`, ...,
#'     `T4`: lineage and stage of differentiation (column `BT` of the
#'     source).}
#'   \item{`molecular`}{factor, the molecular biology of the leukemia
#'     (`ALL1/AF4`, `BCR/ABL`, `E2A/PBX1`, `NEG`, `NUP-98`, `p15/p16`; column
#'     `mol.biol` of the source).}
#'   \item{`sex`}{factor with levels `F` and `M` (3 missing).}
#'   \item{`age`}{integer, age in years at diagnosis (5 missing).}
#' }
#'
#' @details
#' The values are RMA-normalised log2 expression values, taken unchanged
#' (apart from rounding to 3 decimals) from the `ALL` ExpressionSet of the
#' Bioconductor package \pkg{ALL}. Of its 12,625 probe sets, the 500 with the
#' largest sample variance across all 128 samples were kept, and the rows are
#' ordered by decreasing variance. No other filtering or transformation was
#' applied. The script that builds the data is `data-raw/leukemia.R` in the
#' package sources.
#'
#' @source
#' Bioconductor package \pkg{ALL} (version 1.40.0, by Xiaochun Li),
#' <https://bioconductor.org/packages/ALL/>, licensed under the Artistic
#' License 2.0 (Artistic-2.0); see the file `COPYRIGHTS` installed with this
#' package.
#'
#' The original study: Chiaretti S, Li X, Gentleman R, Vitale A, Vignetti M,
#' Mandelli F, Ritz J, Foa R (2004). Gene expression profile of adult T-cell
#' acute lymphocytic leukemia identifies distinct subsets of patients with
#' different response to therapy and survival. *Blood*, **103**(7),
#' 2771--2778. \doi{10.1182/blood-2003-09-3243}
#'
#' @examples
#' dim(leukemia)
#' range(leukemia)
#' table(leukemia_samples$cell_type)
#' table(leukemia_samples$molecular, leukemia_samples$cell_type)
#' @docType data
#' @keywords datasets
#' @name leukemia
#' @usage data(leukemia)
"leukemia"

#' @rdname leukemia
#' @docType data
#' @format NULL
#' @usage NULL
"leukemia_samples"
