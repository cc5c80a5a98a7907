## data-raw/mutations.R
##
## Builds data/mutations.rda, which contains two objects:
##   mutations            integer matrix, 96 trinucleotide mutation types
##                        (rows, e.g. "A[C>A]A") x 9 samples (columns): counts
##                        of somatic single-base substitutions in 9 normal
##                        human adult stem-cell organoids (3 colon, 3 small
##                        intestine, 3 liver).
##   mutation_signatures  numeric matrix, 96 x 4: the COSMIC v3.2 (GRCh37)
##                        reference signatures SBS1, SBS5, SBS18 and SBS40,
##                        rows in the order of `mutations`, columns summing
##                        to 1.
##
## Source: the Bioconductor package MutationalPatterns 3.8.1 as packaged by
## Debian (r-bioc-mutationalpatterns 3.8.1+dfsg-1; licence MIT, see
## inst/COPYRIGHTS): its example mutation matrix `states/mut_mat_data.rds`
## (built by the package's `scripts/create_example_snvs.R` from the VCF files
## it ships, a subset of the somatic SNVs of Blokzijl et al. 2016) and its
## reference file `extdata/signatures/snv_COSMIC_v3.2_reference_GRCh37.txt`.
##
## Either install the Debian package (apt-get install r-bioc-mutationalpatterns)
## or unpack it without installing:
##   apt-get download r-bioc-mutationalpatterns
##   dpkg -x r-bioc-mutationalpatterns_*.deb /tmp/mp
##   MP_DIR=/tmp/mp/usr/lib/R/site-library/MutationalPatterns Rscript data-raw/mutations.R
## Run from the package root. Deterministic (no random numbers).

if (!file.exists("DESCRIPTION") || !dir.exists("data-raw")) {
  stop("run this script from the package root: Rscript data-raw/mutations.R")
}
mp <- Sys.getenv("MP_DIR", system.file(package = "MutationalPatterns"))
if (!nzchar(mp) || !dir.exists(mp)) {
  stop("MutationalPatterns not found: install r-bioc-mutationalpatterns or set MP_DIR")
}

mm <- readRDS(file.path(mp, "states", "mut_mat_data.rds"))
stopifnot(is.matrix(mm), identical(dim(mm), c(96L, 9L)), all(mm >= 0), all(mm == round(mm)))
mutations <- matrix(as.integer(mm), nrow(mm), ncol(mm), dimnames = dimnames(mm))

ref <- utils::read.delim(file.path(mp, "extdata", "signatures",
                                   "snv_COSMIC_v3.2_reference_GRCh37.txt"),
                         check.names = FALSE, stringsAsFactors = FALSE)
# rows of the reference: Type "C>A", Subtype "ACA" -> "A[C>A]A"
type <- paste0(substr(ref$Subtype, 1, 1), "[", ref$Type, "]", substr(ref$Subtype, 3, 3))
keep <- c("SBS1", "SBS5", "SBS18", "SBS40")
mutation_signatures <- as.matrix(ref[match(rownames(mutations), type), keep])
rownames(mutation_signatures) <- rownames(mutations)
stopifnot(!anyNA(mutation_signatures), all(abs(colSums(mutation_signatures) - 1) < 1e-3))

save(mutations, mutation_signatures, file = file.path("data", "mutations.rda"),
     compress = "xz", version = 2)
message("wrote data/mutations.rda: ", nrow(mutations), " x ", ncol(mutations),
        " counts, ", sum(mutations), " mutations")
