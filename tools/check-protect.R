# PROTECT lint for the C sources (grep-style rules, in the spirit of
# data.table's release checklist). Fails (exit status 1) on:
#  1. an allocating call (Rf_allocVector, Rf_allocMatrix, Rf_mkChar,
#     Rf_ScalarReal, Rf_duplicate, Rf_coerceVector, ...) whose result is
#     neither the direct argument of PROTECT(), nor stored directly into a
#     protected vector with SET_VECTOR_ELT / SET_STRING_ELT, nor returned
#     directly (`return Rf_ScalarReal(x);`);
#  2. unbalanced PROTECT counts in a function: a function that PROTECTs must
#     UNPROTECT; with a counter (UNPROTECT(nprot)) every PROTECT statement
#     increments that counter on the same line; with a literal
#     (UNPROTECT(3)) the last UNPROTECT equals the number of PROTECTs;
#  3. UNPROTECT in a function that protects nothing.
# Usage, from the package root:
#   Rscript tools/check-protect.R            # lint src/*.c
#   Rscript tools/check-protect.R --self-test  # the rules catch known bad code
#   Rscript tools/check-protect.R file.c ...

alloc_fns <- c(
  "allocVector", "allocVector3", "allocMatrix", "alloc3DArray", "allocArray",
  "allocList", "allocSExp", "allocS4Object", "mkChar", "mkCharCE", "mkCharLen",
  "mkCharLenCE", "mkString", "ScalarReal", "ScalarInteger", "ScalarLogical",
  "ScalarString", "ScalarRaw", "ScalarComplex", "duplicate", "shallow_duplicate",
  "coerceVector", "lengthgets", "xlengthgets", "cons", "lcons", "lang1", "lang2",
  "lang3", "lang4", "lang5", "lang6", "list1", "list2", "list3", "list4",
  "list5", "PairToVectorList", "VectorToPairList", "asCharacterFactor",
  "installChar", "mkNamed", "R_do_new_object", "R_MakeExternalPtr", "eval"
)
alloc_re <- sprintf("\\b(Rf_)?(%s)\\s*\\(", paste(alloc_fns, collapse = "|"))

# Remove comments, and the contents of string and character literals.
strip_c <- function(txt) {
  txt <- paste(txt, collapse = "\n")
  chars <- strsplit(txt, "")[[1L]]
  out <- chars
  n <- length(chars)
  i <- 1L
  state <- "code"
  while (i <= n) {
    c1 <- chars[i]
    c2 <- if (i < n) chars[i + 1L] else ""
    if (state == "code") {
      if (c1 == "/" && c2 == "*") { state <- "block"; out[i] <- out[i + 1L] <- " "; i <- i + 2L; next }
      if (c1 == "/" && c2 == "/") { state <- "line"; out[i] <- " "; i <- i + 1L; next }
      if (c1 == "\"") { state <- "str"; i <- i + 1L; next }
      if (c1 == "'") { state <- "chr"; i <- i + 1L; next }
    } else if (state == "block") {
      if (c1 == "*" && c2 == "/") { state <- "code"; out[i] <- out[i + 1L] <- " "; i <- i + 2L; next }
      if (c1 != "\n") out[i] <- " "
    } else if (state == "line") {
      if (c1 == "\n") state <- "code" else out[i] <- " "
    } else {
      quote <- if (state == "str") "\"" else "'"
      if (c1 == "\\") { out[i] <- " "; if (i < n && chars[i + 1L] != "\n") out[i + 1L] <- " "; i <- i + 2L; next }
      if (c1 == quote) { state <- "code" } else if (c1 != "\n") out[i] <- " "
    }
    i <- i + 1L
  }
  paste(out, collapse = "")
}

# Function bodies at file level: list(name, body, line).
functions_of <- function(code) {
  chars <- strsplit(code, "")[[1L]]
  depth <- 0L
  start <- NA_integer_
  res <- list()
  for (i in seq_along(chars)) {
    ch <- chars[i]
    if (ch == "{") {
      if (depth == 0L) start <- i
      depth <- depth + 1L
    } else if (ch == "}") {
      depth <- depth - 1L
      if (depth == 0L && !is.na(start)) {
        head <- substr(code, max(1L, start - 300L), start - 1L)
        if (grepl("\\)\\s*$", head)) {
          nm <- regmatches(head, regexpr("[A-Za-z_][A-Za-z0-9_]*(?=\\s*\\([^()]*(\\([^()]*\\)[^()]*)*\\)\\s*$)",
                                         head, perl = TRUE))
          line <- 1L + sum(chars[seq_len(start)] == "\n")
          res[[length(res) + 1L]] <- list(name = if (length(nm)) nm else "?",
                                          body = substr(code, start + 1L, i - 1L),
                                          line = line)
        }
        start <- NA_integer_
      }
    }
  }
  res
}

# Statements of a body (split at ';' outside parentheses, and at braces).
statements_of <- function(body) {
  chars <- strsplit(body, "")[[1L]]
  par <- 0L
  cur <- character()
  out <- character()
  for (ch in chars) {
    if (ch == "(") par <- par + 1L
    if (ch == ")") par <- par - 1L
    if ((ch == ";" && par == 0L) || ch == "{" || ch == "}") {
      out <- c(out, paste(cur, collapse = ""))
      cur <- character()
    } else {
      cur <- c(cur, ch)
    }
  }
  out <- c(out, paste(cur, collapse = ""))
  out <- gsub("\\s+", " ", trimws(out))
  out[nzchar(out)]
}

# Is the allocating call at `pos` (a regexpr match in `s`) safe?
alloc_ok <- function(s, pos) {
  before <- substr(s, 1L, pos - 1L)
  # Direct argument of PROTECT / PROTECT_WITH_INDEX, also as PROTECT(x = alloc(...)).
  if (grepl("\\b(PROTECT|PROTECT_WITH_INDEX|REPROTECT)\\s*\\(\\s*([A-Za-z_][A-Za-z0-9_]*\\s*=\\s*)?$",
            before)) return(TRUE)
  # The result is discarded (e.g. `Rf_eval(call, rho);`): nothing to protect.
  if (grepl("^\\s*(\\(void\\)\\s*)?$", before) && !grepl("=", before)) return(TRUE)
  # Stored directly into a vector: SET_VECTOR_ELT(v, i, alloc(...)).
  if (grepl("^(SET_VECTOR_ELT|SET_STRING_ELT)\\s*\\(", before) && grepl(",\\s*$", before)) {
    return(TRUE)
  }
  # Returned directly: return alloc(...).
  if (grepl("^return\\s*\\(?\\s*$", before)) return(TRUE)
  FALSE
}

lint_file <- function(path) {
  code <- strip_c(readLines(path, warn = FALSE))
  problems <- character()
  report <- function(fn, msg) {
    problems <<- c(problems, sprintf("%s: %s() (line %d): %s", basename(path), fn$name,
                                     fn$line, msg))
  }
  for (fn in functions_of(code)) {
    st <- statements_of(fn$body)
    for (s in st) {
      m <- gregexpr(alloc_re, s, perl = TRUE)[[1L]]
      if (m[1L] == -1L) next
      for (p in m) {
        if (!alloc_ok(s, p)) report(fn, sprintf("unprotected allocation in `%s`", s))
      }
    }
    body <- fn$body
    n_prot <- length(gregexpr("(?<![A-Za-z_])(PROTECT|PROTECT_WITH_INDEX)\\s*\\(", body,
                              perl = TRUE)[[1L]])
    if (!grepl("(?<![A-Za-z_])(PROTECT|PROTECT_WITH_INDEX)\\s*\\(", body, perl = TRUE)) n_prot <- 0L
    unp <- regmatches(body, gregexpr("\\bUNPROTECT\\s*\\(\\s*[^)]*\\)", body, perl = TRUE))[[1L]]
    args <- trimws(sub("^UNPROTECT\\s*\\(\\s*([^)]*)\\)$", "\\1", unp))
    if (n_prot > 0L && !length(unp)) report(fn, sprintf("%d PROTECT without UNPROTECT", n_prot))
    if (n_prot == 0L && length(unp)) report(fn, "UNPROTECT without PROTECT")
    if (n_prot == 0L || !length(unp)) next
    literal <- grepl("^[0-9]+$", args)
    if (all(literal)) {
      if (as.integer(args[length(args)]) != n_prot) {
        report(fn, sprintf("%d PROTECT but the last UNPROTECT(%s)", n_prot, args[length(args)]))
      }
      if (any(as.integer(args) > n_prot)) report(fn, "UNPROTECT of more than was protected")
    } else {
      counters <- unique(args[!literal])
      if (length(counters) != 1L || !grepl("^[A-Za-z_][A-Za-z0-9_]*$", counters)) {
        report(fn, sprintf("UNPROTECT(%s): use one counter or literals", paste(args, collapse = ", ")))
        next
      }
      ctr <- counters
      if (!grepl(sprintf("\\bint\\s+%s\\s*=\\s*0\\b", ctr), body)) {
        report(fn, sprintf("the counter `%s` must be declared `int %s = 0`", ctr, ctr))
      }
      lines <- strsplit(body, "\n")[[1L]]
      prot_lines <- grep("(?<![A-Za-z_])(PROTECT|PROTECT_WITH_INDEX)\\s*\\(", lines, perl = TRUE,
                         value = TRUE)
      inc <- grepl(sprintf("(\\b%s\\s*\\+\\+|\\+\\+\\s*%s\\b|\\b%s\\s*\\+=\\s*1\\b)", ctr, ctr, ctr),
                   prot_lines)
      if (!all(inc)) {
        report(fn, sprintf("PROTECT without `%s++` on the same line: %s", ctr,
                           paste(trimws(prot_lines[!inc]), collapse = " | ")))
      }
    }
  }
  problems
}

self_test <- function() {
  bad <- list(
    "unprotected alloc" = "SEXP f(void) { SEXP x = Rf_allocVector(REALSXP, 2); SEXP y = PROTECT(Rf_allocVector(REALSXP, 1)); UNPROTECT(1); return x; }",
    "alloc as argument" = "SEXP f(SEXP a) { SEXP x = PROTECT(Rf_allocVector(VECSXP, 1)); Rf_setAttrib(x, R_NamesSymbol, Rf_mkString(\"a\")); UNPROTECT(1); return x; }",
    "scalar unprotected" = "SEXP f(SEXP a) { SEXP s = Rf_ScalarReal(1.0); SEXP x = PROTECT(Rf_allocVector(VECSXP, 1)); SET_VECTOR_ELT(x, 0, s); UNPROTECT(1); return x; }",
    "unbalanced literal" = "SEXP f(void) { SEXP x = PROTECT(Rf_allocVector(REALSXP, 2)); SEXP y = PROTECT(Rf_allocVector(REALSXP, 2)); UNPROTECT(1); return x; }",
    "counter not incremented" = "SEXP f(void) { int np = 0; SEXP x = PROTECT(Rf_allocVector(REALSXP, 2)); np++;\n SEXP y = PROTECT(Rf_allocVector(REALSXP, 2));\n UNPROTECT(np); return x; }",
    "no unprotect" = "SEXP f(void) { SEXP x = PROTECT(Rf_allocVector(REALSXP, 2)); return x; }"
  )
  good <- "/* PROTECT(Rf_allocVector( in a comment */ SEXP f(void) { int np = 0; SEXP x = PROTECT(Rf_allocVector(VECSXP, 2)); np++;\n SEXP n = PROTECT(Rf_allocVector(STRSXP, 2)); np++;\n SET_STRING_ELT(n, 0, Rf_mkChar(\"a;b\")); SET_VECTOR_ELT(x, 1, Rf_ScalarReal(1)); UNPROTECT(np); return x; }\nSEXP g(void) { return Rf_ScalarInteger(1); }\nSEXP h(SEXP call, SEXP rho) { SEXP ans; PROTECT(ans = Rf_allocVector(REALSXP, 1)); Rf_eval(call, rho); UNPROTECT(1); return ans; }"
  ok <- TRUE
  for (nm in names(bad)) {
    f <- tempfile(fileext = ".c")
    writeLines(bad[[nm]], f)
    p <- lint_file(f)
    cat(sprintf("self-test %-24s %s\n", nm, if (length(p)) "caught" else "MISSED"))
    ok <- ok && length(p) > 0L
  }
  f <- tempfile(fileext = ".c")
  writeLines(good, f)
  p <- lint_file(f)
  cat(sprintf("self-test %-24s %s\n", "correct code", if (length(p)) "FLAGGED" else "passes"))
  if (length(p)) print(p)
  ok && !length(p)
}

main <- function(args) {
  if (identical(args, "--self-test")) {
    if (!self_test()) quit(status = 1)
    return(invisible())
  }
  files <- if (length(args)) args else Sys.glob(file.path("src", "*.c"))
  if (!length(files)) stop("no C files found; run from the package root")
  problems <- unlist(lapply(files, lint_file))
  if (length(problems)) {
    cat("PROTECT lint: problems found\n", paste0("  ", problems, "\n"), sep = "")
    quit(status = 1)
  }
  cat(sprintf("PROTECT lint: %d files, no problems\n", length(files)))
}

main(commandArgs(trailingOnly = TRUE))
