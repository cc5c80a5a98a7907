# No silent surprises: the classed warnings and messages of long or doubtful
# work. An optimiser that stops at `iter` before reaching `tol`
# (bnmf_warning_convergence, from run_chain()), select_rank()'s plan before
# long work (bnmf_message_plan) and Chib's method under the rank-dependent
# automatic prior (bnmf_warning_prior).

# A classed warning or message.
bnmf_signal <- function(fun, class, msg) {
  fun(structure(class = c(class, if (identical(fun, warning)) "warning" else "message",
                          "condition"),
                list(message = msg, call = NULL)))
}

# Warn that an optimiser (ICM, VB, NP, a particle candidate's solver) did not
# reach its tolerance within `iter` sweeps.
warn_not_converged <- function(label, iter, tol, trace) {
  crit <- trace[["logpost"]]
  n <- length(crit)
  change <- if (n >= 2L) abs(crit[n] - crit[n - 1L]) / max(abs(crit[n]), .Machine$double.xmin) else NA
  bnmf_signal(warning, "bnmf_warning_convergence",
              sprintf("%s stopped at `iter` = %d sweeps before its relative change reached `tol` = %s (last change %s); raise `iter`, or continue with `update(fit, iter = ...)`.",
                      label, iter, format(tol), format(signif(change, 3))))
}

# select_rank(): the warning about Chib's method under the automatic prior,
# and a message of the work ahead when it is long (about 2e9 sweep-entries
# times the rank, a few seconds or more on one core).
rank_plan_notice <- function(X, ranks, criterion, method, args, samples, per_rank) {
  prior <- args$prior %||% exponential()
  if (criterion == "chib" && identical(prior$type, "exponential") && identical(prior$rate, "auto")) {
    bnmf_signal(warning, "bnmf_warning_prior",
                "Chib's method compares the marginal likelihoods of the ranks under the automatic prior `exponential(rate = \"auto\")`, whose rate sqrt(K / mean(X)) changes with the rank K: the ranks are then compared under different priors. Give a fixed rate, e.g. `prior = exponential(rate = 1)` (see vignette(\"rank\")).")
  }
  fit_ranks <- if (criterion == "ard") max(ranks) else ranks
  iter <- args$iter %||% switch(method, gibbs = 2000L, ssvi = 100L, 1000L)
  chains <- args$chains %||% if (method == "ssvi") ssvi_restarts else 1L
  sweeps <- iter * chains * per_rank + if (criterion == "chib") (2 * fit_ranks + 1) * samples else 0
  sweeps <- rep_len(sweeps, length(fit_ranks))
  entries <- if (inherits(X, "dgCMatrix")) length(X@x) else prod(as.double(dim(X)))
  cost <- sum(sweeps * fit_ranks) * entries
  if (cost < 2e9) return(invisible())
  plan <- if (tasks_in_process()) "one after the other in this R process" else
    sprintf("as futures under the current plan (%s)", class(future::plan())[1L])
  bnmf_signal(message, "bnmf_message_plan",
              sprintf("select_rank(): %d %s (%s), about %s sweeps over a %d x %d matrix, %s; this can take a while.",
                      length(fit_ranks) * (if (criterion == "cv") per_rank else 1L),
                      if (criterion == "cv") "fits (ranks x folds)" else "fits",
                      switch(criterion, chib = sprintf("Gibbs fits of %d sweeps and Chib's runs of %d samples per block", iter, samples),
                             sprintf("method \"%s\", %d sweeps each", method, iter)),
                      format(sum(sweeps), big.mark = ",", scientific = FALSE),
                      nrow(X), ncol(X), plan))
}
