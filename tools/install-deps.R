# Installs the R packages bnmf, its tests and vignettes need, on any system
# with R (macOS, Windows, Linux without apt): the missing CRAN packages from
# CRAN, then the suggested Bioconductor packages through BiocManager when
# Bioconductor is reachable (they are optional: tests and vignettes that need
# them are skipped without them). Run with `Rscript tools/install-deps.R`;
# tools/install-deps.sh calls it where apt is not available.
repos <- getOption("repos")
if (is.null(repos) || identical(unname(repos["CRAN"]), "@CRAN@")) {
  repos <- c(CRAN = "https://cloud.r-project.org")
}
options(repos = repos)
cran <- c("cli", "clue", "future", "future.apply", "Matrix", "testthat", "withr",
          "coda", "posterior", "knitr", "rmarkdown", "quadprog", "NMF")
bioc <- c("Biobase", "SummarizedExperiment", "SingleCellExperiment", "DelayedArray")
missing_pkgs <- function(p) p[!vapply(p, requireNamespace, logical(1), quietly = TRUE)]
need <- missing_pkgs(setdiff(cran, "NMF"))
if (length(need)) install.packages(need)
# NMF needs Biobase (Bioconductor); both are optional.
bioc_ok <- tryCatch({
  if (!requireNamespace("BiocManager", quietly = TRUE)) install.packages("BiocManager")
  need <- missing_pkgs(bioc)
  if (length(need)) BiocManager::install(need, update = FALSE, ask = FALSE)
  TRUE
}, error = function(e) {
  message("Bioconductor is not reachable (", conditionMessage(e), "); its optional packages are skipped.")
  FALSE
})
if (bioc_ok && length(missing_pkgs("NMF"))) {
  tryCatch(install.packages("NMF"), error = function(e) message("NMF not installed: ", conditionMessage(e)))
}
still <- missing_pkgs(setdiff(cran, "NMF"))
if (length(still)) stop("could not install: ", paste(still, collapse = ", "))
message("bnmf's dependencies are installed.")
