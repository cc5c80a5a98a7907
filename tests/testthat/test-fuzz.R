# Every registered .Call routine, called directly with bad arguments, returns
# (an R error or a value) and never crashes R (helper-fuzz.R). The calls run in
# a child R process, so that a crash is a test failure naming the call.

test_that("every registered .Call routine is fuzzed", {
  routines <- getDLLRegisteredRoutines("bnmf")$.Call
  expect_gte(length(routines), 5L)
  cases <- fuzz_cases(routines)
  # Each routine gets its own cases: a new routine is covered automatically
  # (a routine without arguments has its valid call only).
  per_routine <- table(vapply(cases, `[[`, "", "name"))
  expect_setequal(names(per_routine), names(routines))
  nargs <- vapply(routines, `[[`, 0L, "numParameters")
  names(nargs) <- vapply(routines, `[[`, "", "name")
  expect_true(all(per_routine[names(nargs)[nargs > 0L]] >= 30L))
  expect_true(all(per_routine[names(nargs)[nargs == 0L]] == 1L))
})

test_that("no bad argument crashes a .Call routine", {
  skip_on_cran()
  skip_on_os("windows")
  n <- length(fuzz_cases())
  res <- fuzz_in_child()
  expect(res$status == 0L && !is.null(res$results),
         sprintf("the fuzzing child process died (status %s) at the call '%s':\n%s",
                 res$status, res$last, paste(utils::tail(res$output, 20), collapse = "\n")))
  r <- res$results
  skip_if(is.null(r))
  expect_equal(nrow(r), n)
  # Values of the wrong type, and missing list components the routine reads,
  # are refused with an R error.
  bad <- r$must_error & r$outcome != "error"
  expect(!any(bad), paste("no error for:", paste(r$label[bad], collapse = "; ")))
  expect_gt(sum(r$must_error), 300L)
  # The C layer refuses inconsistent sizes and indices (a few examples). A
  # pattern that matches no case would make all() vacuously TRUE: each must
  # match at least one.
  err <- function(pattern) {
    out <- r$outcome[grepl(pattern, r$label, fixed = TRUE)]
    expect(length(out) > 0L, sprintf("no fuzzing case matches '%s'", pattern))
    out
  }
  expect_true(all(err("nmf_sweeps[1] arg 2 $dims = dims_huge_") == "error"))
  expect_true(all(err("nmf_sweeps[1] arg 2 $mcol_ptr = ptr_") == "error"))
  expect_true(all(err("nmf_sweeps[2] arg 2 $xp = ptr_") == "error"))
  expect_true(all(err("wh_entries[1] arg 3 = huge_int") == "error"))
  expect_true(all(err("rtnorm[1] arg 1 [1] = not_allocatable") == "error"))
  # Named controls: a malformed field is refused by name, whatever its value.
  for (f in c("rule", "masked", "update_W", "keep_draws")) {
    expect_true(all(err(sprintf("nmf_sweeps[1] arg 4 $%s = ", f)) == "error"), info = f)
  }
  expect_true(all(err("chib_run[1] arg 5 $block = ") == "error"))
  expect_true(all(err("nmf_kl[1] arg 3 $update_W = ") == "error"))
})
