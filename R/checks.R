# Input validation shared by every user-facing function. Errors are classed
# `bnmf_error_input` and name the offending argument.

check_count <- function(x, arg, min = 0) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || !is.finite(x) ||
      x != round(x) || x < min) {
    abort_input(sprintf("`%s` must be a single whole number >= %s.", arg, min))
  }
  if (x > .Machine$integer.max) {
    abort_input(sprintf("`%s` must be at most %d, not %s.", arg, .Machine$integer.max,
                        format(x)))
  }
  as.integer(x)
}

check_number <- function(x, arg, min = -Inf, min_open = FALSE) {
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && is.finite(x) &&
    (if (min_open) x > min else x >= min)
  if (!ok) {
    abort_input(sprintf("`%s` must be a single finite number %s %s.", arg,
                        if (min_open) ">" else ">=", format(min)))
  }
  as.numeric(x)
}

check_flag <- function(x, arg) {
  if (!is.logical(x) || length(x) != 1L || is.na(x)) {
    abort_input(sprintf("`%s` must be TRUE or FALSE.", arg))
  }
  x
}

# `control` of a method: made by the function named `maker` (class
# "bnmf_<maker>"); NULL means that function's defaults.
check_control <- function(control, maker) {
  control <- control %||% do.call(maker, list())
  if (!inherits(control, paste0("bnmf_", maker))) {
    abort_input(sprintf("`control` must be made by `%s()`.", maker))
  }
  control
}

check_choice <- function(x, choices, arg) {
  if (!is.character(x) || length(x) < 1L || anyNA(x)) {
    abort_input(sprintf("`%s` must be one of %s.", arg,
                        paste0('"', choices, '"', collapse = ", ")))
  }
  x <- x[1L]
  m <- pmatch(x, choices)
  if (is.na(m)) {
    abort_input(sprintf("`%s` must be one of %s, not \"%s\".", arg,
                        paste0('"', choices, '"', collapse = ", "), x))
  }
  choices[m]
}

# Check a data matrix and return it as a double matrix or a dgCMatrix.
# NA and NaN mean missing; Inf is an error; rows or columns with no observed
# entry are an error.
check_data_matrix <- function(X, arg = "X") {
  if (is.data.frame(X)) {
    ok <- vapply(X, function(col) is.numeric(col) || is.logical(col) && all(is.na(col)),
                 logical(1))
    if (!all(ok)) {
      abort_input(sprintf("`%s` must be numeric: column%s %s of the data frame %s not.",
                          arg, if (sum(!ok) > 1) "s" else "",
                          paste(names(X)[!ok], collapse = ", "),
                          if (sum(!ok) > 1) "are" else "is"))
    }
    X <- as.matrix(X)
  }
  if (inherits(X, "Matrix")) {
    if (!methods::is(X, "dgCMatrix")) {
      X <- tryCatch(methods::as(methods::as(X, "CsparseMatrix"), "generalMatrix"),
                    error = function(e) NULL)
      if (!is.null(X)) X <- tryCatch(methods::as(X, "dMatrix"), error = function(e) NULL)
      if (is.null(X) || !methods::is(X, "dgCMatrix")) {
        abort_input(sprintf("`%s` must be a numeric matrix or a Matrix::dgCMatrix.", arg))
      }
    }
    vals <- X@x
  } else {
    if (is.vector(X) && is.numeric(X)) {
      abort_input(sprintf("`%s` must be a matrix (features x samples), not a vector.", arg))
    }
    if (!is.matrix(X) || !(is.numeric(X) || is.logical(X) && all(is.na(X)))) {
      what <- if (is.matrix(X)) paste("a", typeof(X), "matrix") else
        paste("an object of class", class(X)[1L])
      abort_input(sprintf("`%s` must be a numeric matrix or a Matrix::dgCMatrix, not %s.",
                          arg, what))
    }
    if (!is.double(X)) storage.mode(X) <- "double"
    vals <- X
  }
  d <- dim(X)
  if (any(d < 1L)) {
    abort_input(sprintf("`%s` must have at least one row and one column (it is %d x %d).",
                        arg, d[1L], d[2L]))
  }
  # min() and max() scan without an I x J temporary (range() copies); they
  # give Inf and -Inf when nothing is observed.
  r <- suppressWarnings(c(min(vals, na.rm = TRUE), max(vals, na.rm = TRUE)))
  if (r[1L] <= r[2L] && any(is.infinite(r))) {
    abort_input(sprintf("`%s` has infinite entries; use NA for missing values.", arg))
  }
  check_magnitude(max(abs(r)), length(vals), arg)
  if (!anyNA(vals)) return(X)
  nas <- is.na(vals)
  if (all(nas) && length(vals) == prod(as.double(d))) {
    abort_input(sprintf("`%s` has no observed entries.", arg))
  }
  {
    if (inherits(X, "Matrix")) {
      # Count missing per row / column among stored entries.
      cols <- rep.int(seq_len(d[2L]), diff(X@p))
      miss_row <- tabulate(X@i[nas] + 1L, d[1L])
      miss_col <- tabulate(cols[nas], d[2L])
    } else {
      miss_row <- rowSums(nas)
      miss_col <- colSums(nas)
    }
    bad_r <- which(miss_row == d[2L])
    bad_c <- which(miss_col == d[1L])
    if (length(bad_r)) {
      abort_input(sprintf("`%s` has rows with no observed entry (row%s %s); remove them.",
                          arg, if (length(bad_r) > 1) "s" else "",
                          format_index(bad_r)))
    }
    if (length(bad_c)) {
      abort_input(sprintf("`%s` has columns with no observed entry (column%s %s); remove them.",
                          arg, if (length(bad_c) > 1) "s" else "",
                          format_index(bad_c)))
    }
  }
  X
}

# The sweeps work with squares of the data (sums of squares) and of the
# factors (whose entries are on the scale of sqrt(|X|)) and with prior rates
# on the scale of 1 / sqrt(|X|): data far from 1 in magnitude overflow or
# underflow double precision. Refuse them with advice (the factorisation
# scales with X) rather than fail inside the sweep.
check_magnitude <- function(big, n, arg) {
  if (!is.finite(big) || big == 0) return(invisible())
  if (big > 1e150 || big^2 * n > .Machine$double.xmax / 1e6) {
    abort_input(sprintf("`%s` has entries too large in magnitude (largest %s; the sums of squares and products of the sweeps need |%s| below 1e150): divide `%s` by a constant.",
                        arg, format(big, digits = 3), arg, arg))
  }
  if (big < 1e-150) {
    abort_input(sprintf("`%s` has entries too small in magnitude (largest %s; the sweeps need the largest |%s| above 1e-150): multiply `%s` by a constant.",
                        arg, format(big, digits = 3), arg, arg))
  }
  invisible()
}

format_index <- function(idx, max = 5L) {
  s <- paste(utils::head(idx, max), collapse = ", ")
  if (length(idx) > max) s <- paste0(s, ", ... (", length(idx), " in all)")
  s
}

# `...` of a method that takes no further arguments (kept for the generic's
# sake): any argument there is an error naming it, with the closest valid
# name. `valid` are the method's own argument names (for the suggestion);
# `fun` the name the user called.
check_dots_empty <- function(dots, valid, fun) {
  if (!length(dots)) return(invisible())
  nms <- names(dots) %||% rep("", length(dots))
  unnamed <- sum(nms == "")
  if (unnamed) {
    abort_input(sprintf("`...`: `%s()` takes no further arguments, but %d unnamed argument%s given.",
                        fun, unnamed, if (unnamed > 1L) "s were" else " was"))
  }
  check_names_known(nms, character(), valid, fun)
}

# Names of arguments that must all be in `known`; `valid` are further names
# used only for the suggestion (the function's own arguments).
check_names_known <- function(nms, known, valid, fun, arg = "...") {
  unknown <- setdiff(nms, known)
  if (!length(unknown)) return(invisible())
  u <- unknown[1L]
  cand <- unique(c(known, valid))
  hint <- closest_name(u, cand)
  also <- if (length(unknown) > 1L) {
    sprintf(" (also unknown: %s)", paste0("`", unknown[-1L], "`", collapse = ", "))
  } else ""
  abort_input(sprintf("`%s`: `%s` is not an argument of `%s()`%s%s", arg, u, fun, also,
                      if (is.na(hint)) "." else sprintf("; did you mean `%s`?", hint)))
}

# The candidate closest to `x`: one that starts `x` or that `x` starts
# (`iterations` -> `iter`), else the nearest by edit distance (ignoring case)
# if at most a third of the longer name's characters away; NA otherwise.
closest_name <- function(x, candidates) {
  candidates <- candidates[nzchar(candidates) & candidates != "..."]
  if (!length(candidates)) return(NA_character_)
  lx <- tolower(x)
  lc <- tolower(candidates)
  pre <- startsWith(lx, lc) | startsWith(lc, lx)
  if (any(pre)) return(candidates[pre][which.max(nchar(candidates[pre]))])
  d <- drop(utils::adist(x, candidates, ignore.case = TRUE))
  best <- which.min(d)
  if (d[best] <= max(2, ceiling(max(nchar(x), nchar(candidates[best])) / 3))) candidates[best] else NA_character_
}

# The memory a fit will need, estimated before any work: the largest single
# array and the total (in bytes, over all chains) of the factors, their
# running moments and the draws kept. An array of more than 2^31 - 1
# elements is refused (the C code indexes factors and draws with int
# products, and R cannot pass longer vectors to it), and so is a total above
# `getOption("bnmf.max_memory")` (bytes; unset: no limit), with the sizes in
# the message. `draws` is the number of draws kept per chain (of W and H),
# `copies` the number of arrays of each factor's size per chain (the state,
# moments, VB variances), `data` the per-chain arrays of the data's size.
check_fit_size <- function(I, J, K, chains = 1, draws = 0, copies = 5, data = 0, nx = 0) {
  I <- as.double(I); J <- as.double(J); K <- as.double(K)
  arrays <- c(W = I * K, H = K * J, "W draws" = I * K * draws, "H draws" = K * J * draws,
              data = if (data > 0) as.double(nx) else 0)
  big <- which.max(arrays)
  n <- function(x) format(x, big.mark = ",", scientific = FALSE)
  dims <- sprintf("rank %s for a %s x %s matrix", n(K), n(I), n(J))
  if (arrays[[big]] > .Machine$integer.max) {
    abort_input(sprintf("`rank`: a fit of %s needs a %s array of %s elements, more than the %s (2^31 - 1) a single array can hold; lower `rank`%s.",
                        dims, names(arrays)[big], n(arrays[[big]]), n(.Machine$integer.max),
                        if (draws > 0) ", `iter` or keep fewer draws" else ""))
  }
  bytes <- 8 * chains * (copies * (I * K + K * J) + (I * K + K * J) * draws + data * nx)
  limit <- getOption("bnmf.max_memory")
  if (!is.null(limit) && is.numeric(limit) && length(limit) == 1L && !is.na(limit) &&
      bytes > limit) {
    abort_input(sprintf("`rank`: a fit of %s (%s chain%s) needs about %s of memory, more than `getOption(\"bnmf.max_memory\")` = %s.",
                        dims, chains, if (chains > 1) "s" else "", format_bytes(bytes),
                        format_bytes(limit)))
  }
  invisible(bytes)
}

format_bytes <- function(b) {
  u <- c("bytes", "kB", "MB", "GB", "TB", "PB")
  e <- max(0, min(length(u) - 1, floor(log(max(b, 1), 1024))))
  sprintf("%.3g %s", b / 1024^e, u[e + 1])
}
