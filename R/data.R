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

#' Golub leukemia gene expression data
#'
#' The leukemia training set of Golub et al. (1999) at linear scale, as used
#' by Brunet et al. (2004) to introduce the NMF consensus map: expression of
#' 5000 genes in 38 bone marrow samples of acute lymphoblastic leukemia
#' (ALL, B-cell and T-cell) and acute myeloid leukemia (AML). Laid out as the
#' data matrix `X` of `X ~ W H`: genes in rows, samples in columns.
#'
#' @format
#' `golub`: an integer matrix with 5000 rows (genes, named by their
#' Affymetrix Hu6800 probe identifiers, e.g. `"M12759_at"`) and 38 columns
#' (samples, e.g. `"ALL_19769_B-cell"`). Values are whole numbers from 20 to
#' 61225 (linear scale; no missing values).
#'
#' `golub_samples`: a data frame with 38 rows, one per column of `golub`,
#' in the same order:
#' \describe{
#'   \item{`sample`}{character, the sample name (equals `colnames(golub)`).}
#'   \item{`type`}{factor with levels `ALL-B` (19 samples), `ALL-T` (8)
#'     and `AML` (11).}
#'   \item{`class`}{factor with levels `ALL` and `AML`.}
#' }
#'
#' @details
#' The values are those of the `esGolub` ExpressionSet of the CRAN package
#' \pkg{NMF}, unchanged: Golub et al.'s data thresholded to the range
#' \[20, 16000\] (a few larger values remain) and filtered to the 5000 genes
#' of largest variation by Brunet et al. The script that builds the data is
#' `data-raw/golub.R` in the package sources.
#'
#' @source
#' CRAN package \pkg{NMF} (Gaujoux and Seoighe), data set `esGolub`,
#' licensed under the GNU General Public License (>= 2), like bnmf; see the
#' file `COPYRIGHTS` installed with this package.
#'
#' Golub T. R. et al. (1999). Molecular classification of cancer: class
#' discovery and class prediction by gene expression monitoring. *Science*
#' **286**(5439), 531--537. \doi{10.1126/science.286.5439.531}
#'
#' Brunet J.-P., Tamayo P., Golub T. R., Mesirov J. P. (2004). Metagenes and
#' molecular pattern discovery using matrix factorization. *PNAS*
#' **101**(12), 4164--4169. \doi{10.1073/pnas.0308531101}
#'
#' @examples
#' dim(golub)
#' table(golub_samples$type)
#' @docType data
#' @keywords datasets
#' @name golub
#' @usage data(golub)
"golub"

#' @rdname golub
#' @docType data
#' @format NULL
#' @usage NULL
"golub_samples"
