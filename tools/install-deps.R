# Installs the R packages bnmf needs, on any system with R (macOS, Windows,
# Linux without apt; as any user): the packages of DESCRIPTION's Imports,
# which bnmf cannot be installed without, then as many as install of its
# Suggests, which only its tests and vignettes use (from CRAN, and the
# Bioconductor ones through BiocManager when Bioconductor is reachable).
# Stops with an error only when an import could not be installed; a
# suggested package that could not be installed is named at the end with
# what goes without it. Run with `Rscript tools/install-deps.R`;
# tools/install-deps.sh calls it where apt is not available (or not as root).
#
# Packages go into the first library on .libPaths() that can be written to;
# when there is none (a user's R with only the system's libraries), into the
# user library R_LIBS_USER, created here, which R puts on the library path
# of every later session (so `R CMD INSTALL .` installs bnmf there too).

repos <- getOption("repos")
if (is.null(repos) || identical(unname(repos["CRAN"]), "@CRAN@")) {
  repos <- c(CRAN = "https://cloud.r-project.org")
}
options(repos = repos)

# DESCRIPTION, beside this script's folder.
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
root <- if (length(script) == 1L) file.path(dirname(normalizePath(script)), "..") else "."
desc <- read.dcf(file.path(root, "DESCRIPTION"), fields = c("Imports", "Suggests"))

# A dependency field as a named vector of minimum versions ("" for none).
deps <- function(field) {
  x <- desc[1L, field]
  if (is.na(x)) return(character())
  x <- trimws(strsplit(gsub("\\s+", " ", x), ",")[[1L]])
  x <- x[nzchar(x)]
  pkg <- trimws(sub("\\(.*$", "", x))
  ver <- ifelse(grepl(">=", x), trimws(sub("^.*>=\\s*([^)]*)\\).*$", "\\1", x)), "")
  setNames(ver, pkg)
}
imports <- deps("Imports")
suggests <- deps("Suggests")

# The packages of `need` not installed (or older than the version asked for).
missing_pkgs <- function(need) {
  ok <- vapply(names(need), function(p) {
    v <- tryCatch(utils::packageVersion(p, lib.loc = .libPaths()), error = function(e) NULL)
    !is.null(v) && (!nzchar(need[[p]]) || v >= package_version(need[[p]]))
  }, logical(1))
  names(need)[!ok]
}

# The library to install into.
writable <- function(p) dir.exists(p) && file.access(p, 2L) == 0L
lib <- Filter(writable, .libPaths())
if (length(lib)) {
  lib <- lib[[1L]]
} else {
  lib <- path.expand(strsplit(Sys.getenv("R_LIBS_USER"), .Platform$path.sep, fixed = TRUE)[[1L]][1L])
  if (is.na(lib) || !nzchar(lib)) {
    stop("no library on .libPaths() can be written to and R_LIBS_USER is not set: ",
         "set R_LIBS_USER to a folder of your own and run this script again.")
  }
  if (!dir.create(lib, recursive = TRUE, showWarnings = FALSE) && !dir.exists(lib)) {
    stop("could not create the user library ", lib, " (R_LIBS_USER).")
  }
  .libPaths(c(lib, .libPaths()))
  message("No library on R's library path can be written to: installing into the user library ",
          lib, " (R_LIBS_USER), which R puts on the library path of every later session.")
}

install <- function(pkgs) {
  if (length(pkgs)) utils::install.packages(pkgs, lib = lib)
}

# 1. The imports: bnmf does not install without them.
install(missing_pkgs(imports))
still <- missing_pkgs(imports)
if (length(still)) {
  stop("could not install ", paste(still, collapse = ", "),
       ", which bnmf imports (see the messages above); bnmf cannot be installed without ",
       if (length(still) == 1L) "it." else "them.")
}
message("bnmf's imports are installed.")

# 2. The suggested packages, as far as they install. fs (which testthat and
# rmarkdown need) builds against the system's libuv unless told to use the
# copy it ships; most systems have no libuv headers.
if (!nzchar(Sys.getenv("USE_BUNDLED_LIBUV"))) Sys.setenv(USE_BUNDLED_LIBUV = "1")
avail <- tryCatch(utils::available.packages(), error = function(e) NULL)
on_cran <- if (is.null(avail)) character() else rownames(avail)
base_pkgs <- rownames(utils::installed.packages(priority = "base"))
# A CRAN package that needs a package CRAN does not have (NMF needs
# Biobase) is installed with the Bioconductor ones.
needs_bioc <- function(p) {
  d <- tools::package_dependencies(p, db = avail, recursive = TRUE)[[1L]]
  any(!d %in% c(on_cran, base_pkgs))
}
need <- missing_pkgs(suggests)
from_cran <- Filter(function(p) !needs_bioc(p), intersect(need, on_cran))
tryCatch(install(from_cran), error = function(e) {
  message("Installing suggested packages from CRAN failed: ", conditionMessage(e))
})
need <- setdiff(missing_pkgs(suggests), from_cran)
if (length(need)) {
  tryCatch({
    if (!requireNamespace("BiocManager", quietly = TRUE)) install("BiocManager")
    BiocManager::install(need, update = FALSE, ask = FALSE, lib = lib)
  }, error = function(e) {
    message("Installing ", paste(need, collapse = ", "), " through Bioconductor failed (",
            conditionMessage(e), ").")
  })
}

# 3. What could not be installed, and what goes without it.
skips <- c(
  testthat = "the test suite (tools/run-tests.R) and R CMD check's tests",
  withr = "the test suite",
  knitr = "building the vignettes (R CMD build, R CMD check)",
  rmarkdown = "building the vignettes (R CMD build, R CMD check)",
  coda = "coda::as.mcmc() of fits, and its tests",
  posterior = "posterior::as_draws() of fits and the tests that use posterior (summary() uses bnmf's own R-hat and ESS)",
  quadprog = "the tests against a quadratic-programming solver",
  NMF = "the NMF package's interface and the tests that compare with it",
  SummarizedExperiment = "fits of Bioconductor containers, and their tests and vignette",
  SingleCellExperiment = "fits of Bioconductor containers, and their tests and vignette",
  DelayedArray = "fits of Bioconductor containers, and their tests and vignette",
  S4Vectors = "run_bnmf() of Bioconductor containers",
  rhdf5 = "reading 10x HDF5 files (TENxMatrix) by blocks, and its tests",
  HDF5Array = "HDF5-backed matrices (HDF5Matrix, TENxMatrix) read by blocks, and their tests",
  Biobase = "fits of ExpressionSets"
)
still <- missing_pkgs(suggests)
if (length(still)) {
  what <- ifelse(still %in% names(skips), skips[still], "the tests and vignettes that use it")
  message("\nbnmf's imports are installed, but not these suggested packages (see the messages above):\n",
          paste0("  ", still, ": without it, ", what, collapse = "\n"),
          "\nbnmf installs and works without them",
          if ("testthat" %in% still) "; the test suite needs testthat." else
            "; the tests that need them are skipped.")
} else {
  message("bnmf's dependencies are installed.")
}
