# Checks a call's error as an error snapshot would, without depending on how
# testthat formats a condition (which changes between its versions): the
# quoted `call`, evaluated in `env`, fails with an error whose first class
# is "bnmf_error_<kind>" and whose message contains `message` (fixed text),
# and gives on the way exactly the warnings of classes `warnings` (their
# first classes, in order; none by default).
expect_bnmf_error <- function(call, kind, message, warnings = character(),
                              env = parent.frame()) {
  cls <- paste0("bnmf_error_", kind)
  label <- deparse1(call)
  seen <- character()
  err <- withCallingHandlers(
    expect_error(eval(call, env), message, fixed = TRUE, class = cls, label = label),
    warning = function(w) {
      seen <<- c(seen, class(w)[1L])
      invokeRestart("muffleWarning")
    })
  if (inherits(err, "condition")) {
    expect_identical(class(err)[1L], cls, label = paste("first class of the error of", label))
  }
  expect_identical(seen, warnings, label = paste("classes of the warnings of", label))
  invisible(err)
}
