# Runs the test suite against the installed package and ends with one line
# "N passed, N failed, N skipped"; exits non-zero on any failure or error.
# Usage (from the package root, after R CMD INSTALL .):
#   NOT_CRAN=true Rscript tools/run-tests.R
library(testthat)
# the whole suite whatever fails (testthat stops after 10 failures by default)
options(testthat.progress.max_fails = Inf)
res <- testthat::test_dir("tests/testthat", package = "bnmf",
                          load_package = "installed", stop_on_failure = FALSE,
                          reporter = testthat::ProgressReporter$new(show_praise = FALSE))
df <- as.data.frame(res)
failed <- sum(df$failed) + sum(df$error)
cat(sprintf("\n%d test files run\n", length(unique(df$file))))
cat(sprintf("%d passed, %d failed, %d skipped\n", sum(df$passed), failed,
            sum(df$skipped)))
quit(status = if (failed > 0) 1 else 0)
