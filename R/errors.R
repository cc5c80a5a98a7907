# Conditions. Every error the package raises has class
# c("bnmf_error_<kind>", "bnmf_error", "error", "condition"), so that a
# caller can catch all of them (`bnmf_error`) or one kind:
#   input        bad input, naming the argument
#   dense        (an input error) a result of I x J values for a sparse X
#                above getOption("bnmf.max_dense")
#   unsupported  what a model or method cannot do by its mathematics; the
#                message says why and what to use instead
#   cluster      a worker of `cluster` (a fit by blocks) stopped answering
#                or failed
#   internal     a broken invariant of the package (a bug)

bnmf_abort <- function(kind, msg, call = NULL) {
  stop(structure(
    class = c(paste0("bnmf_error_", kind), "bnmf_error", "error", "condition"),
    list(message = msg, call = call)
  ))
}

abort_input <- function(msg, call = NULL) bnmf_abort("input", msg, call)

abort_unsupported <- function(msg) bnmf_abort("unsupported", msg)

# A result too large to make dense for a sparse X (an input error too).
abort_dense <- function(msg) {
  stop(structure(
    class = c("bnmf_error_dense", "bnmf_error_input", "bnmf_error", "error", "condition"),
    list(message = msg, call = NULL)
  ))
}

abort_fit <- function(what) bnmf_abort("internal", sprintf("bnmf internal error: %s.", what))
