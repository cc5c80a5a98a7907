# Fuzzing of the registered .Call routines: every routine of
# getDLLRegisteredRoutines("bnmf") is called directly, bypassing its R
# wrapper, with each argument (and each component of a list argument) in turn
# replaced by a bad value. A call must return (an R error, or a value for
# inputs that are merely unusual, such as NaN or zero-length vectors); it must
# never crash R. fuzz_run() does the calls in the current process (for
# valgrind and the sanitizers, tools/); fuzz_in_child() runs it in a child R
# process, so that a crash is reported instead of ending the test run.

# Bad values for any argument.
fuzz_values <- function() {
  list(
    null = NULL, na = NA, NA_int = NA_integer_, NA_real = NA_real_,
    nan = NaN, inf = Inf, minus_Inf = -Inf, chr = "a", chr_NA = NA_character_,
    empty_dbl = numeric(), empty_int = integer(), empty_list = list(),
    neg_int = -1L, neg_dbl = -1, zero = 0, huge_int = .Machine$integer.max,
    huge_dbl = 1e300, over_int = 2^31, dbl_vec = c(1, 2, 3), int_vec = 1:3,
    lgl = TRUE, cplx = 1i, raw = as.raw(1), fun = function() 1,
    env = globalenv(), sym = quote(x), unnamed_list = list(1, 2),
    matrix0 = matrix(numeric(), 0, 0), dbl_matrix = matrix(1, 2, 2),
    int_matrix = matrix(1L, 2, 2), long_dbl = numeric(1e4)
  )
}

# A small valid problem for the NMF sweep routines: list(state, data, prior,
# ctrl), with one missing entry (so that the missing-entry indices are used).
fuzz_nmf_args <- function(sparse = FALSE, masked = FALSE) {
  X <- matrix(c(1, 2, 3, 4, 5, 6), 2, 3)
  X[1, 2] <- NA
  if (sparse) X <- Matrix::Matrix(X, sparse = TRUE)
  K <- 2L
  d <- bnmf:::prepare_data(X, K)
  W <- matrix(1, 2, K)
  H <- matrix(1, K, 3)
  st <- bnmf:::new_state(X, d, W, H, 1, 1, TRUE)
  pr <- list(lamW = matrix(1, 2, K), lamH = matrix(1, K, 3), alpha = 1, beta = 1)
  ctrl <- list(n = 2L, rule = "gibbs", masked = masked, accumulate = TRUE, thin = 1L,
               keep_draws = TRUE, update_W = TRUE, update_H = TRUE, update_tau = TRUE,
               tol = 0, wh_thin = 2L, threads = if (masked) 2L else 1L)
  # Components the routine does not read: their absence is no error (nor is
  # that of the scratch `work`, replaced by R_alloc).
  structure(list(state = st, data = d, prior = pr, ctrl = ctrl),
            optional = c("sum_obs", if (!sparse) c("xi", "xp"), "work"))
}

# A small valid problem for Chib's reduced runs: list(state, data, prior,
# target, ctrl), missing entry masked (zero in x).
fuzz_chib_args <- function(block = "W") {
  a <- fuzz_nmf_args()
  st <- a$state
  st$x[is.na(st$x)] <- 0
  st$x[a$data$miss_pos + 1L] <- 0
  st$sumsq <- a$data$sumsq_obs + 0
  state <- st[c("W", "H", "tau", "x", "sumsq")]
  structure(list(state = state, data = a$data, prior = a$prior,
                 target = list(W = st$W + 0, H = st$H + 0, tau = 1),
                 ctrl = list(burnin = 2L, samples = 3L, block = block, index = 2L,
                             sym = TRUE, orbit = TRUE)),
            optional = c("sum_obs", "xi", "xp"))
}

# A small valid problem for the KL updates: list(state, data, ctrl), the
# missing entry masked (zero in x). The state's tau, sumsq and running moments
# are not read.
fuzz_kl_args <- function(sparse = FALSE) {
  a <- fuzz_nmf_args(sparse = sparse)
  st <- a$state
  st$x[a$data$miss_pos + 1L] <- 0
  structure(list(state = st, data = a$data, ctrl = list(n = 2L, tol = 0, update_W = TRUE)),
            optional = c("sum_obs", if (!sparse) c("xi", "xp"), "tau", "sumsq",
                         grep("_mean$|_m2$", names(st), value = TRUE), "n_wh", "wh_wait",
                         "work"))
}

# Valid arguments of each routine, by name. A routine not listed here is
# called with bad values in every position (and, if it takes the four
# arguments of an NMF sweep routine, with the NMF templates as a base).
fuzz_templates <- function(name, nargs) {
  switch(name,
    rtnorm = list(list(3, 0, 1, 0, Inf)),
    norm_std = list(list(10)),
    unif = list(list(10, 2)),
    exp_std = list(list(10)),
    tn_moments = list(list(c(0, 1), 1)),
    tn_vb = list(list(c(-1, 0, 2), 1)),
    tn_logdens = list(list(c(0.5, 1), 0, 1)),
    wh_entries = list(list(matrix(1, 2, 2), matrix(1, 2, 3), c(0L, 1L), c(2L, 0L))),
    gram_cols = list(list(matrix(1, 3, 2))),
    blas_threads = list(list(NA_integer_)),
    kmeans_rows = list(list(matrix(c(1, 2, 8, 3, 1, 9), 3, 2), c(10, 5, 145),
                            matrix(c(1, 8, 3, 9), 2, 2), 5L),
                       list(list(c(0L, 2L, 1L), c(0L, 2L, 3L), c(1, 8, 3), c(3L, 2L)),
                            c(1, 9, 64), matrix(c(1, 0, 0, 3), 2, 2), 5L)),
    sparse_products = list(local({
      a <- fuzz_nmf_args(sparse = TRUE)
      structure(list(a$data, a$state$x, matrix(1, 2, 2), matrix(1, 2, 3)),
                optional = "sum_obs")
    })),
    nmf_sweeps = list(fuzz_nmf_args(), fuzz_nmf_args(sparse = TRUE),
                      fuzz_nmf_args(masked = TRUE)),
    chib_run = list(fuzz_chib_args("W"), fuzz_chib_args("H"), fuzz_chib_args("tau")),
    nmf_kl = list(fuzz_kl_args(), fuzz_kl_args(sparse = TRUE)),
    if (nargs == 4L && grepl("^nmf", name)) {
      list(fuzz_nmf_args(), fuzz_nmf_args(sparse = TRUE))
    } else {
      list(rep(list(NULL), nargs))
    })
}

# Deep copy, so that routines that modify their arguments in place never
# touch the templates.
fuzz_copy <- function(x) unserialize(serialize(x, NULL))

# Extra mutations of the list components that describe sizes and indices:
# lengths off by one, huge and negative dimensions, pointers out of order.
fuzz_component_values <- function(nm, v) {
  out <- list()
  if (is.numeric(v) && length(v)) {
    out$drop_last <- v[-length(v)]
    out$add_one <- c(v, v[1L])
    out$as_other_type <- if (is.integer(v)) as.double(v) else suppressWarnings(as.integer(v))
    out$negated <- -v - 1L
    out$shuffled <- rev(v)
  }
  if (nm == "dims") {
    big <- .Machine$integer.max
    out$dims_huge_I <- c(big, 3L, 2L)
    out$dims_huge_J <- c(2L, big, 2L)
    out$dims_huge_K <- c(2L, 3L, big)
    out$dims_zero <- c(0L, 3L, 2L)
    out$dims_neg <- c(2L, -3L, 2L)
    out$dims_K1 <- c(2L, 3L, 1L)
  }
  if (nm %in% c("mcol_ptr", "mrow_ptr", "xp") && length(v) >= 2L) {
    w <- v
    w[2L] <- 1000L
    out$ptr_jump <- w
    w <- v
    w[2L] <- -5L
    out$ptr_negative <- w
  }
  out
}

# The routines whose first argument is a number of draws: 2^31 of them is a
# legitimate request (16 GiB of doubles), not a bad value to fuzz with.
fuzz_counted <- c("rtnorm", "norm_std", "exp_std")

# All the calls: a list of list(label, name, args).
fuzz_cases <- function(routines = getDLLRegisteredRoutines("bnmf")$.Call) {
  cases <- list()
  add <- function(label, name, args, must_error = FALSE) {
    cases[[length(cases) + 1L]] <<- list(label = label, name = name, args = args,
                                         must_error = must_error)
  }
  bad <- fuzz_values()
  # Values of the wrong type for any argument of the routines: an error.
  wrong_type <- c("null", "chr", "chr_NA", "raw", "cplx", "fun", "env", "sym",
                  "unnamed_list")
  for (r in routines) {
    nm <- r$name
    templates <- fuzz_templates(nm, r$numParameters)
    for (t in seq_along(templates)) {
      base <- templates[[t]]
      add(sprintf("%s[%d] valid", nm, t), nm, base)
      for (a in seq_along(base)) {
        for (b in names(bad)) {
          if (nm %in% fuzz_counted && a == 1L && b %in% c("huge_int", "over_int")) next
          args <- base
          args[a] <- list(bad[[b]])
          add(sprintf("%s[%d] arg %d = %s", nm, t, a, b), nm, args,
              must_error = b %in% wrong_type)
        }
        if (is.list(base[[a]]) && !is.null(names(base[[a]]))) {
          for (comp in names(base[[a]])) {
            v <- base[[a]][[comp]]
            args <- base
            args[[a]][[comp]] <- NULL
            add(sprintf("%s[%d] arg %d without %s", nm, t, a, comp), nm, args,
                must_error = !comp %in% attr(base, "optional"))
            vals <- c(bad[c("null", "na", "NA_real", "nan", "inf", "chr", "empty_dbl",
                            "empty_int", "neg_int", "huge_int", "huge_dbl", "empty_list")],
                      fuzz_component_values(comp, v))
            for (b in names(vals)) {
              # 2^31 - 1 KL sweeps are a legitimate (if long) request, as
              # rtnorm(2^31) is (the sweeps' requests fail to allocate).
              if (nm == "nmf_kl" && comp == "n" && b == "huge_int") next
              args <- base
              args[[a]][comp] <- list(vals[[b]])
              add(sprintf("%s[%d] arg %d $%s = %s", nm, t, a, comp, b), nm, args)
            }
          }
          args <- base
          args[[a]] <- unname(args[[a]])
          add(sprintf("%s[%d] arg %d unnamed", nm, t, a), nm, args, must_error = TRUE)
        } else if (is.numeric(base[[a]]) && length(base[[a]]) > 0L) {
          # Each element of a numeric argument (e.g. ctrl) in turn.
          for (e in seq_along(base[[a]])) {
            vals <- c("NA_real", "nan", "inf", "minus_Inf", "neg_dbl", "huge_int",
                      "over_int", "huge_dbl")
            # rtnorm(2^31) is a legitimate (if long) request for 2^31 draws
            # (so are norm_std's and exp_std's); 1e15 draws cannot be
            # allocated and must give an error.
            if (nm %in% fuzz_counted && a == 1L)
              vals <- c(setdiff(vals, c("huge_int", "over_int")), "not_allocatable")
            for (b in vals) {
              args <- base
              v <- args[[a]]
              v[e] <- if (b == "not_allocatable") 1e15 else bad[[b]]
              args[[a]] <- v
              add(sprintf("%s[%d] arg %d [%d] = %s", nm, t, a, e, b), nm, args)
            }
          }
        }
      }
    }
  }
  cases
}

# Run the cases in this process. Before each call its label is appended to
# `log` (if given), so that after a crash the last line names the culprit.
# Returns a data frame: label, routine, outcome ("error" or "value"), the
# error message, and whether the case must be an error (a value of the wrong
# type, a missing component the routine reads).
fuzz_run <- function(log = NULL, cases = fuzz_cases()) {
  ns <- asNamespace("bnmf")
  # Some outcomes depend on the random draws of a sweep (a NaN tau, say):
  # the same seed every time makes the counts reproducible.
  set.seed(1)
  res <- vector("list", length(cases))
  for (i in seq_along(cases)) {
    cs <- cases[[i]]
    if (!is.null(log)) cat(cs$label, "\n", sep = "", file = log, append = TRUE)
    fn <- get(paste0("C_", cs$name), envir = ns)
    args <- fuzz_copy(cs$args)
    r <- tryCatch({
      do.call(.Call, c(list(fn), args), quote = TRUE)
      c("value", "")
    }, error = function(e) c("error", conditionMessage(e)))
    res[[i]] <- c(cs$label, cs$name, r, cs$must_error)
  }
  out <- as.data.frame(do.call(rbind, res), stringsAsFactors = FALSE)
  names(out) <- c("label", "routine", "outcome", "message", "must_error")
  out$must_error <- as.logical(out$must_error)
  out
}

# Run fuzz_run() in a child R process. Returns list(status, results (NULL if
# the child died), last = the last case started, output).
fuzz_in_child <- function(helper = test_path("helper-fuzz.R"), timeout = 120) {
  log <- tempfile("fuzz-log-")
  res_file <- tempfile("fuzz-res-", fileext = ".rds")
  script <- tempfile("fuzz-", fileext = ".R")
  on.exit(unlink(c(log, res_file, script)))
  writeLines(c(
    "suppressPackageStartupMessages(library(bnmf))",
    sprintf("source(%s)", deparse(normalizePath(helper))),
    sprintf("res <- fuzz_run(log = %s)", deparse(log)),
    sprintf("saveRDS(res, %s)", deparse(res_file))
  ), script)
  libs <- paste(.libPaths(), collapse = .Platform$path.sep)
  output <- suppressWarnings(system2(
    file.path(R.home("bin"), "Rscript"), c("--vanilla", shQuote(script)),
    stdout = TRUE, stderr = TRUE, timeout = timeout,
    env = c(paste0("R_LIBS=", libs), "R_DEFAULT_PACKAGES=NULL")))
  status <- attr(output, "status") %||% 0L
  lines <- if (file.exists(log)) readLines(log, warn = FALSE) else character()
  list(status = status,
       results = if (file.exists(res_file)) readRDS(res_file) else NULL,
       last = if (length(lines)) lines[length(lines)] else NA_character_,
       n_started = length(lines), output = output)
}

`%||%` <- function(a, b) if (is.null(a)) b else a
