# The task runner: every independent unit of work (chains, ICM/VB/NP
# restarts, particle candidates, HMC chains, ranks, CV folds) goes through
# run_tasks(), under the user's future::plan().

# Run `fun(task, ...)` for every task. `tasks` is a number n (tasks 1..n) or
# a list. `seeds` is TRUE (one L'Ecuyer-CMRG stream per task, derived here in
# the main process from one draw of the session's random numbers, so that
# set.seed() reproduces the result), FALSE (the tasks use no random numbers)
# or a list of streams saved at the end of an earlier run (to continue them).
# Under a sequential plan the tasks run in this process, each on its own
# stream; under any other plan they are futures with the same streams, so the
# results are the same whatever the plan. Either way the session's random
# number state is restored afterwards (future_lapply() draws from it), so
# that it is the same after the call whatever the plan. An interrupt while
# the futures run stops them (see stop_tasks_on_interrupt()). `progress` (a
# label, or NULL) shows a bar of the tasks done when they run in this
# process. The tasks run with the BLAS threads task_blas_threads() gives.
# `in_process = TRUE` runs them in this process whatever the plan (the
# tasks of a fit by blocks share the blocks' holders: this process or a
# cluster's workers), on the same streams.
run_tasks <- function(tasks, fun, ..., seeds = TRUE, progress = NULL, in_process = FALSE) {
  if (is.numeric(tasks) && length(tasks) == 1L) tasks <- seq_len(tasks)
  if (isTRUE(seeds)) seeds <- chain_streams(length(tasks))
  if (!in_process && !tasks_in_process()) {
    # Tasks without streams draw no random numbers, but the C code brackets
    # every call with GetRNGstate()/PutRNGstate(), which creates a seed in a
    # fresh worker: not a use of random numbers for future's check.
    dir <- tempfile("bnmf-tasks-")
    dir.create(dir)
    on.exit(unlink(dir, recursive = TRUE), add = TRUE)
    blas <- task_blas_threads(in_process = FALSE)
    return(keep_session_rng(stop_tasks_on_interrupt(dir, {
      future.apply::future_lapply(tasks, task_in_worker, fun, dir, blas, ...,
                                  future.seed = if (!isFALSE(seeds)) seeds,
                                  future.packages = "bnmf")
    })))
  }
  run <- function(...) {
    pb <- progress_start(!is.null(progress), length(tasks), progress)
    out <- vector("list", length(tasks))
    for (t in seq_along(tasks)) {
      if (!isFALSE(seeds)) assign(".Random.seed", seeds[[t]], envir = globalenv())
      out[t] <- list(fun(tasks[[t]], ...))
      progress_update(pb, t)
    }
    progress_done(pb)
    names(out) <- names(tasks)
    out
  }
  keep_session_rng(with_blas_threads(task_blas_threads(in_process = TRUE), run(...)))
}

# A task run as a future: while it runs, a file in `dir` (a directory of the
# main process) names its process and machine, so that an interrupt in the
# main process can stop it; and R's BLAS runs with `blas` threads (NA: as
# the worker has it), as the tasks run in this process do. A task that
# starts after the main process gave the run up (its file stop_flag(dir)
# exists) returns NULL at once: the mark is made before that check and the
# flag before the main process reads the marks (stop_tasks_on_interrupt()),
# so a task on this machine is either signalled or sees the flag, also when
# it reaches its worker only after the interrupt.
task_in_worker <- function(task, fun, dir, blas, ...) {
  mark <- file.path(dir, paste(Sys.getpid(), Sys.info()[["nodename"]], sep = "@"))
  if (dir.exists(dir)) {
    file.create(mark, showWarnings = FALSE)
    on.exit(unlink(mark), add = TRUE)
  }
  if (file.exists(stop_flag(dir))) return(NULL)
  with_blas_threads(blas, fun(task, ...))
}

# The file that tells the tasks of the run whose marks are in `dir` that the
# main process gave the run up. Beside `dir`, not in it: `dir` is removed
# when run_tasks() returns, the flag stays (in the session's temporary
# directory) for the tasks that start later.
stop_flag <- function(dir) paste0(dir, "-stop")

# Evaluate `expr` with R's BLAS at `n` threads (NA: as it is), giving the
# BLAS its setting back afterwards.
with_blas_threads <- function(n, expr) {
  if (!is.na(n)) {
    before <- blas_threads(n)
    if (!is.na(before)) on.exit(blas_threads(before), add = TRUE)
  }
  expr
}

# The number of threads of R's BLAS, where the library lets a program read
# and set it (FlexiBLAS, OpenBLAS, Intel MKL; src/blas_threads.c):
# blas_threads() reads it, blas_threads(n) sets it to n. Returns the number
# before the call, with the library's name as attribute "blas"; NA (and no
# change) for a BLAS without that control, such as R's reference BLAS.
blas_threads <- function(n = NA_integer_) {
  r <- .Call(C_blas_threads, as.integer(n))
  structure(r[1L], blas = c("FlexiBLAS", "OpenBLAS", "MKL")[r[2L]])
}

# The BLAS threads of the tasks run in this process (in_process = TRUE) or in
# workers: getOption("bnmf.blas_threads") wherever they run when it is set
# (NA: the BLAS as it is); unset, one thread in workers and the BLAS as it
# is in this process (see ?bnmf, "Chains and reproducibility").
task_blas_threads <- function(in_process) {
  t <- getOption("bnmf.blas_threads")
  if (is.null(t)) return(if (in_process) NA_integer_ else 1L)
  if (length(t) == 1L && is.na(t)) return(NA_integer_)
  as.integer(thread_option(t, "bnmf.blas_threads", ", or NA"))
}

# The value `t` of options(<name> =) as a number of threads: a whole number
# in 1..1024 (`or`: what else the option takes, for the message).
thread_option <- function(t, name, or = "") {
  if (!is.numeric(t) || length(t) != 1L || is.na(t) || t < 1 || t != round(t) || t > 1024) {
    abort_input(sprintf("`options(%s =)` must be a whole number between 1 and 1024%s.",
                        name, or))
  }
  t
}

# The threads of the package's own OpenMP loops: getOption("bnmf.threads"),
# default 1 (the passes over the counts of Poisson VB sweeps, see
# ?bnmf_poisson; the rows with missing entries of masked Gaussian ICM, VB and
# NP sweeps, see ?bnmf).
option_threads <- function() {
  as.double(thread_option(getOption("bnmf.threads", 1L), "bnmf.threads"))
}

# Evaluate `expr` (futures of task_in_worker()); on an interrupt, stop the
# tasks still running in processes of this machine (SIGINT, which their
# sweeps check; the tasks not yet started see stop_flag(dir)) and restart
# the workers of the plan (future::plan() shuts down the workers of the plan
# it replaces), so that the abandoned tasks neither keep the workers busy
# nor block the next call; then the interrupt goes on to the top level.
stop_tasks_on_interrupt <- function(dir, expr) {
  withCallingHandlers(expr, interrupt = function(cnd) {
    file.create(stop_flag(dir), showWarnings = FALSE)
    marks <- strsplit(list.files(dir), "@", fixed = TRUE)
    here <- Sys.info()[["nodename"]]
    for (m in marks) {
      pid <- suppressWarnings(as.integer(m[1L]))
      if (length(m) == 2L && identical(m[2L], here) && !is.na(pid) && pid != Sys.getpid()) {
        tools::pskill(pid, tools::SIGINT)
      }
    }
    restart_workers()
  })
}

# Shut down the workers of the current plan and start fresh ones.
restart_workers <- function() {
  stack <- future::plan("list")
  future::plan(future::sequential)
  future::plan(stack)
  invisible()
}

# Evaluate `expr` and restore the session's random number state afterwards.
keep_session_rng <- function(expr) {
  genv <- globalenv()
  old <- if (exists(".Random.seed", envir = genv, inherits = FALSE)) genv$.Random.seed
  on.exit(if (!is.null(old)) assign(".Random.seed", old, envir = genv) else
    if (exists(".Random.seed", envir = genv, inherits = FALSE)) rm(".Random.seed", envir = genv))
  expr
}

# Do the tasks run in this process (a sequential plan)? Progress bars are
# shown only then.
tasks_in_process <- function() inherits(future::plan(), "sequential")

# The state of the task's random number stream, saved at its end so that the
# task can be continued (update()).
task_stream <- function() get(".Random.seed", envir = globalenv())

# n consecutive L'Ecuyer-CMRG streams from one draw of the session's RNG, so
# that set.seed() before a fit reproduces it.
chain_streams <- function(n) {
  base <- c(10407L, as.integer(stats::runif(6L) * 2147483646) + 1L)
  # The first three seeds must be below m1 = 4294967087, the last three below
  # m2 = 4294944443 (as unsigned 32-bit integers): any positive int is.
  streams <- vector("list", n)
  s <- base
  for (c in seq_len(n)) {
    s <- parallel::nextRNGStream(s)
    streams[[c]] <- s
  }
  streams
}

# Run `expr` under a temporary plan of `cores` R processes (1: this process),
# saying so, and restore the user's plan afterwards; `cores = NULL` leaves the
# user's plan in force.
with_cores <- function(cores, expr) {
  if (is.null(cores)) return(expr)
  if (cores > 1L) {
    message(sprintf("Running on %d background R sessions (a temporary `future::plan(multisession, workers = %d)`; the current plan is restored afterwards).",
                    cores, cores))
    old <- future::plan(future::multisession, workers = cores)
  } else {
    message("Running in this R process (a temporary `future::plan(sequential)`; the current plan is restored afterwards).")
    old <- future::plan(future::sequential)
  }
  on.exit(future::plan(old), add = TRUE)
  expr
}
