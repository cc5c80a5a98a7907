#' Somatic mutation counts of normal human stem cells
#'
#' Counts of somatic single-base substitutions in 9 normal human adult
#' stem-cell organoids (3 colon, 3 small intestine, 3 liver; Blokzijl et al.
#' 2016), in the 96 trinucleotide mutation types (6 substitution classes times
#' 16 flanking-base contexts), with four reference mutational signatures of
#' COSMIC. A small, real count matrix for the Poisson model
#' (`likelihood = "poisson"`): `mutations` is laid out as the data matrix `X`
#' in `X ~ W H`, mutation types in rows and samples in columns, so that the
#' columns of `W` are signatures and the columns of `H` their exposures.
#'
#' @format
#' `mutations`: an integer matrix with 96 rows (mutation types, named like
#' `"A[C>A]A"`: the substituted base in brackets with its 5' and 3'
#' neighbours) and 9 columns (samples `colon1`, ..., `colon3`, `intestine1`,
#' ..., `intestine3`, `liver1`, ..., `liver3`). Column totals 150 to 896,
#' 4088 mutations in all; 18% of the entries are 0; no missing values.
#'
#' `mutation_signatures`: a numeric matrix with 96 rows (the same mutation
#' types, in the same order) and 4 columns, the COSMIC v3.2 (GRCh37)
#' single-base-substitution reference signatures `SBS1` (spontaneous
#' deamination of 5-methylcytosine, clock-like), `SBS5` (clock-like,
#' aetiology unknown), `SBS18` (damage by reactive oxygen species) and
#' `SBS40` (aetiology unknown, similar to SBS5); each column sums to 1.
#'
#' @details
#' The counts are the example mutation matrix of the Bioconductor package
#' \pkg{MutationalPatterns}, taken unchanged: a subset of the somatic SNVs of
#' the 9 samples, counted per trinucleotide context on the hg19 reference
#' genome. Its vignette finds, by NMF at rank 2, two signatures close to
#' SBS1 (the colon and intestine samples) and SBS5 (the liver samples);
#' SBS18 and SBS40 are included as candidates that should not be matched.
#' The script that builds the data is `data-raw/mutations.R` in the package
#' sources.
#'
#' @source
#' Bioconductor package \pkg{MutationalPatterns} (version 3.8.1, by Francis
#' Blokzijl, Roel Janssen, Ruben van Boxtel and Edwin Cuppen), as packaged by
#' Debian (`r-bioc-mutationalpatterns`), files `states/mut_mat_data.rds` and
#' `extdata/signatures/snv_COSMIC_v3.2_reference_GRCh37.txt`, licensed under
#' the MIT licence; see the file `COPYRIGHTS` installed with this package.
#' <https://bioconductor.org/packages/MutationalPatterns/>
#'
#' Blokzijl F, de Ligt J, Jager M, Sasselli V, Roerink S, Sasaki N, Huch M,
#' Boymans S, Kuijk E, Prins P, Nijman IJ, Martincorena I, Mokry M, Wiegerinck
#' CL, Middendorp S, Sato T, Schwank G, Nieuwenhuis EES, Verstegen MMA, van
#' der Laan LJW, de Jonge J, IJzermans JNM, Vries RG, van de Wetering M,
#' Stratton MR, Clevers H, Cuppen E, van Boxtel R (2016). Tissue-specific
#' mutation accumulation in human adult stem cells during life. *Nature*,
#' **538**, 260--264. \doi{10.1038/nature19768}
#'
#' Alexandrov LB, Kim J, Haradhvala NJ, et al. (2020). The repertoire of
#' mutational signatures in human cancer. *Nature*, **578**, 94--101.
#' \doi{10.1038/s41586-020-1943-3}
#'
#' @examples
#' dim(mutations)
#' colSums(mutations)
#' # cosine similarity of each sample's profile with the reference signatures
#' p <- sweep(mutations, 2, sqrt(colSums(mutations^2)), "/")
#' s <- sweep(mutation_signatures, 2, sqrt(colSums(mutation_signatures^2)), "/")
#' round(crossprod(p, s), 2)
#' @docType data
#' @keywords datasets
#' @name mutations
#' @usage data(mutations)
"mutations"

#' @rdname mutations
#' @docType data
#' @format NULL
#' @usage NULL
"mutation_signatures"
