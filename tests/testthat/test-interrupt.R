# Interrupts and progress. A child R process runs a long fit; the test sends
# it SIGINT mid-fit. The child measures the time from the signal (the parent
# writes its time just before sending it) to its return from the fit, checks
# that the R heap is back to its size before the fit, and runs a second fit.

interrupt_child <- c(
  "dir <- commandArgs(trailingOnly = TRUE)[1]",
  "suppressPackageStartupMessages(library(bnmf))",
  "set.seed(1)",
  "X <- matrix(rexp(400 * 300), 400, 300)",
  "X[seq(1, length(X), by = 97)] <- NA  # the state then holds its own copy of X",
  "writeLines(as.character(Sys.getpid()), file.path(dir, 'pid'))",
  "mem <- function() { invisible(gc()); sum(gc()[, 2]) }",
  "# Load what a fit loads (namespaces, byte code) before measuring the heap.",
  "for (m in c('gibbs', 'icm')) invisible(bnmf(X, rank = 10, method = m, iter = 4, progress = FALSE))",
  "mem0 <- mem()",
  "run <- function(method) {",
  "  file.create(file.path(dir, paste0('fitting-', method)))",
  "  tryCatch({",
  "    bnmf(X, rank = 10, method = method, iter = 1e6, tol = 0, progress = FALSE)",
  "    'finished'",
  "  }, interrupt = function(c) 'interrupted')",
  "}",
  "result <- list()",
  "for (method in c('gibbs', 'icm')) {",
  "  status <- run(method)",
  "  back <- as.numeric(Sys.time())",
  "  sig_file <- file.path(dir, paste0('signal-', method))",
  "  while (!file.exists(sig_file)) Sys.sleep(0.01)",
  "  signal <- as.numeric(readLines(sig_file))",
  "  result[[method]] <- list(status = status, gap = back - signal, mem_growth = mem() - mem0)",
  "  cat(method, status, back - signal, mem() - mem0, '\\n')",
  "}",
  "fit2 <- tryCatch(bnmf(X[1:60, 1:40], rank = 2, iter = 100, progress = FALSE),",
  "                 error = function(e) e)",
  "result$second_ok <- inherits(fit2, 'bnmf') && all(is.finite(fitted(fit2)))",
  "saveRDS(result, file.path(dir, 'result.rds'))"
)

wait_for <- function(path, timeout) {
  t0 <- Sys.time()
  while (!file.exists(path)) {
    if (as.numeric(Sys.time() - t0, units = "secs") > timeout) return(FALSE)
    Sys.sleep(0.02)
  }
  TRUE
}

# Start `Rscript child_lines args...` in the background, with this session's
# libraries, its output in `dir`/out.txt and err.txt.
start_child <- function(child_lines, dir, args) {
  script <- file.path(dir, "child.R")
  writeLines(child_lines, script)
  libs <- paste(.libPaths(), collapse = .Platform$path.sep)
  system2(file.path(R.home("bin"), "Rscript"), c("--vanilla", shQuote(script), args),
          wait = FALSE, stdout = file.path(dir, "out.txt"), stderr = file.path(dir, "err.txt"),
          env = paste0("R_LIBS=", libs))
}

test_that("an interrupted fit returns promptly and the session keeps working", {
  skip_on_cran()
  skip_on_os("windows")
  dir <- withr::local_tempdir()
  start_child(interrupt_child, dir, shQuote(dir))
  expect_true(wait_for(file.path(dir, "pid"), 60))
  pid <- as.integer(readLines(file.path(dir, "pid")))
  on.exit(tools::pskill(pid, tools::SIGKILL), add = TRUE)
  for (method in c("gibbs", "icm")) {
    expect_true(wait_for(file.path(dir, paste0("fitting-", method)), 60))
    Sys.sleep(1) # well inside the fit (each takes minutes)
    writeLines(format(as.numeric(Sys.time()), digits = 17), file.path(dir, paste0("signal-", method)))
    tools::pskill(pid, tools::SIGINT)
  }
  done <- wait_for(file.path(dir, "result.rds"), 60)
  expect(done, paste("the child did not finish:",
                     paste(readLines(file.path(dir, "err.txt")), collapse = "\n")))
  skip_if_not(done)
  res <- readRDS(file.path(dir, "result.rds"))
  for (method in c("gibbs", "icm")) {
    r <- res[[method]]
    expect_identical(r$status, "interrupted")
    # Back at the prompt within a second of the signal (a functional bound:
    # the sweep checks for interrupts once per sweep, a few ms here).
    expect_lt(r$gap, 1)
    expect_gte(r$gap, 0)
    # Nothing of the interrupted fit stays on the R heap (MB): a chain's state
    # holds a copy of X (0.96 MB), and for Gibbs also the moments of WH.
    expect_lt(r$mem_growth, 0.5)
  }
  expect_true(res$second_ok)
})

test_that("progress = TRUE shows a cli progress bar with an ETA", {
  skip_on_cran()
  skip_on_os("windows")
  # In a child process whose cli timer ticks every millisecond (CLI_TICK_TIME,
  # read when cli loads), so that every update of the bar is drawn; the bar
  # goes to the message stream.
  dir <- withr::local_tempdir()
  script <- file.path(dir, "progress.R")
  writeLines(c(
    "suppressPackageStartupMessages(library(bnmf))",
    "options(cli.progress_show_after = 0, cli.dynamic = FALSE)",
    "set.seed(1)",
    "X <- matrix(rexp(60 * 40), 60, 40)",
    "message('<gibbs>')",
    "fit <- bnmf(X, rank = 3, iter = 400, progress = TRUE)",
    "message('<icm>')",
    "fit <- bnmf(X, rank = 3, method = 'icm', tol = 0, iter = 400, progress = TRUE)",
    "message('<none>')",
    "fit <- bnmf(X, rank = 3, iter = 400, progress = FALSE)",
    "message('<end>')"
  ), script)
  libs <- paste(.libPaths(), collapse = .Platform$path.sep)
  out <- suppressWarnings(system2(file.path(R.home("bin"), "Rscript"), c("--vanilla", shQuote(script)),
                                  stdout = TRUE, stderr = TRUE, timeout = 120,
                                  env = c(paste0("R_LIBS=", libs), "CLI_TICK_TIME=1")))
  part <- function(from, to) {
    i <- match(from, out)
    j <- match(to, out)
    if (is.na(i) || is.na(j) || j <= i + 1L) character() else out[(i + 1L):(j - 1L)]
  }
  expect_true(all(c("<gibbs>", "<icm>", "<none>", "<end>") %in% out), info = paste(out, collapse = "\n"))
  gibbs <- part("<gibbs>", "<icm>")
  expect_true(any(grepl("^Gibbs sampling .*% [|] ETA", gibbs)), info = paste(gibbs, collapse = "\n"))
  expect_true(any(grepl("100%", gibbs)))
  icm <- part("<icm>", "<none>")
  expect_true(any(grepl("^ICM .*% [|] ETA", icm)), info = paste(icm, collapse = "\n"))
  expect_length(part("<none>", "<end>"), 0L)
})

# One long call in a child R process, interrupted: it must end with an
# interrupt condition, and a following call in the same process must work
# (under a multisession plan: on fresh workers, the abandoned chains' workers
# stopped). Under a multisession plan the interrupt reaches the main process
# while future.apply waits for the chains: older versions of future let the
# interrupt go on, newer ones (1.40 and later) turn it into an error of
# class FutureInterruptError; either is an interrupted call.
interrupt_call_child <- c(
  "args <- commandArgs(trailingOnly = TRUE); what <- args[1]; dir <- args[2]",
  "suppressPackageStartupMessages(library(bnmf))",
  "set.seed(1)",
  "X <- matrix(rexp(300 * 200), 300, 200)",
  "alive <- function(p) isTRUE(tools::pskill(p, 0L))",
  "wpids <- integer()",
  "if (what == 'chib') fit <- bnmf(X, rank = 5, iter = 20, prior = exponential(1), progress = FALSE)",
  "if (what == 'multisession') {",
  "  future::plan(future::multisession, workers = 2)",
  "  wpids <- unique(unlist(future.apply::future_lapply(1:4, function(i) { Sys.sleep(0.5); Sys.getpid() })))",
  "}",
  "writeLines(as.character(Sys.getpid()), file.path(dir, 'pid'))",
  "file.create(file.path(dir, 'started'))",
  "status <- tryCatch({",
  "  switch(what,",
  "    chib = marginal_likelihood(fit, samples = 1e8, progress = FALSE),",
  "    kl = bnmf(X, rank = 5, method = 'np', loss = 'kl', iter = 1e8, tol = 0, progress = FALSE),",
  "    hmc = bnmf(X, rank = 5, method = 'hmc', iter = 1e6, thin = 1000, progress = FALSE),",
  "    multisession = bnmf(X, rank = 5, iter = 1e8, chains = 2, progress = FALSE))",
  "  'finished'",
  "}, interrupt = function(c) 'interrupted',",
  "   error = function(e) if (inherits(e, 'FutureInterruptError')) 'future-interrupted' else",
  "     paste('error:', conditionMessage(e)))",
  "file.create(file.path(dir, 'returned'))",
  "# The abandoned workers stop (they were sent SIGINT and then shut down).",
  "t0 <- Sys.time()",
  "while (any(vapply(wpids, alive, logical(1))) && Sys.time() - t0 < 30) Sys.sleep(0.1)",
  "workers_stopped <- !any(vapply(wpids, alive, logical(1)))",
  "next_fit <- tryCatch(bnmf(X[1:40, 1:20], rank = 2, iter = 20, chains = 2, progress = FALSE),",
  "                     error = function(e) e)",
  "saveRDS(list(status = status, workers_stopped = workers_stopped, n_workers = length(wpids),",
  "             next_ok = inherits(next_fit, 'bnmf') && all(is.finite(fitted(next_fit)))),",
  "        file.path(dir, 'result.rds'))"
)

test_that("Chib's runs, the KL updates, HMC and a multisession fit stop on an interrupt", {
  skip_on_cran()
  skip_on_os("windows")
  dir0 <- withr::local_tempdir()
  for (what in c("chib", "kl", "hmc", "multisession")) {
    dir <- file.path(dir0, what)
    dir.create(dir)
    start_child(interrupt_call_child, dir, c(what, shQuote(dir)))
    expect_true(wait_for(file.path(dir, "started"), 120), label = paste(what, "started"))
    pid <- as.integer(readLines(file.path(dir, "pid")))
    withr::defer(tools::pskill(pid, tools::SIGKILL))
    # Inside the call (each runs for hours uninterrupted); the multisession
    # fit first has to hand its chains to the workers.
    Sys.sleep(if (what == "multisession") 5 else 2)
    tools::pskill(pid, tools::SIGINT)
    # A generous bound: the call returns well within 30 s of the signal.
    expect_true(wait_for(file.path(dir, "returned"), 30), label = paste(what, "returned"))
    done <- wait_for(file.path(dir, "result.rds"), 120)
    expect(done, paste(what, ": the child did not finish:",
                       paste(readLines(file.path(dir, "err.txt")), collapse = "\n")))
    if (!done) next
    res <- readRDS(file.path(dir, "result.rds"))
    if (what == "multisession") {
      expect_true(res$status %in% c("interrupted", "future-interrupted"),
                  label = paste(what, "status:", res$status))
    } else {
      expect_identical(res$status, "interrupted", label = paste(what, "status"))
    }
    expect_true(res$next_ok, label = paste(what, "next call"))
    if (what == "multisession") {
      expect_gte(res$n_workers, 1L)
      expect_true(res$workers_stopped)
    }
  }
})
