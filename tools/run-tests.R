# Runs the test suite against the installed package, every file whatever
# fails, and ends with two lines: how many test files ran of how many (and
# how many were skipped whole), how many of them had failures; then
# "N passed, N failed, N skipped". Exits non-zero on any failure or error.
# Usage (from the package root, after R CMD INSTALL .):
#   NOT_CRAN=true Rscript tools/run-tests.R
for (p in c("testthat", "bnmf")) {
  if (!requireNamespace(p, quietly = TRUE)) {
    cat(sprintf("%s is not installed: %s\n", p, if (p == "testthat") {
      "run `Rscript tools/install-deps.R`, which says why when it cannot install it"
    } else "run `R CMD INSTALL .` first"))
    quit(status = 1)
  }
}
library(testthat)
dir <- "tests/testthat"
# The whole suite whatever fails (testthat's progress reporter stops after
# 10 failures by default).
options(testthat.progress.max_fails = Inf)
res <- testthat::test_dir(dir, package = "bnmf", load_package = "installed",
                          stop_on_failure = FALSE,
                          reporter = testthat::ProgressReporter$new(show_praise = FALSE,
                                                                    max_failures = Inf))
df <- as.data.frame(res)
bad <- df$failed > 0 | df$error
failed <- sum(df$failed) + sum(df$error)
files <- list.files(dir, pattern = "^test.*\\.[rR]$")
# A file ran when one of its tests did (passed, failed or gave an error);
# it was skipped whole when all its tests were skipped, or it skipped itself
# at the top (it then gives no result).
ran <- intersect(files, df$file[!df$skipped | bad])
files_failed <- unique(df$file[bad])
if (length(files_failed)) cat("\nFiles with failures:", paste(files_failed, collapse = ", "), "\n")
cat(sprintf("\n%d of %d test files run (%d skipped whole), %d with failures\n",
            length(ran), length(files), length(files) - length(ran), length(files_failed)))
cat(sprintf("%d passed, %d failed, %d skipped\n", sum(df$passed), failed, sum(df$skipped)))
quit(status = if (failed > 0) 1 else 0)
