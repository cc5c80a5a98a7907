#' Choose the number of factors
#'
#' Compares factorisations of `X` over a range of ranks by one of four
#' criteria and returns the chosen rank with the evidence for it.
#'
#' @section Criteria:
#' * `"chib"`: a Gibbs fit ([bnmf()], `method = "gibbs"`) per rank, then
#'   its log marginal likelihood \eqn{\log p(X)} by Chib's method
#'   (`marginal_likelihood()`, Schmidt et al. 2009, section 2.2), with
#'   `samples` Gibbs sweeps per parameter block. The chosen rank has the
#'   largest estimate; the table also gives its Monte Carlo standard error.
#' * `"bic"`: an ICM fit (the posterior mode, `method = "icm"`) per rank and
#'   the Bayesian information criterion
#'   \eqn{BIC = -2 \log p(X | \hat\theta) + d \log n}, where \eqn{n} is the
#'   number of observed entries and \eqn{d} the number of effective
#'   parameters: as in Schmidt et al. (2009, section 3.2) the non-zero
#'   entries of the MAP estimates of `W` and `H`, plus one for the noise
#'   precision (the `df` of [logLik.bnmf()] for ICM fits). The table reports
#'   `-BIC / 2` as `value`, an approximation of the log marginal likelihood,
#'   so that larger is better as for `"chib"`. The MAP estimate is a local
#'   mode: pass `chains` (restarts, the best of which is kept) through `...`
#'   to make it more reliable.
#' * `"cv"`: `folds`-fold cross-validation over the observed entries. Each
#'   fold's entries are set to `NA` (missing), a fit by `method` (any of
#'   `"gibbs"`, `"vb"`, `"icm"`, `"np"`) of the remaining entries predicts
#'   them ([predict.bnmf()]: the posterior mean, or the point estimate), and
#'   the mean squared error on the held-out entries is recorded for every fold
#'   and rank. The chosen rank has the smallest mean held-out error
#'   (`rule = "min"`), or is the smallest rank whose mean error is within one
#'   standard error (over the folds) of the smallest (`rule = "1se"`: the
#'   one-standard-error rule, which prefers the simpler model when the
#'   errors of larger ranks are no better than noise).
#'   With `nested = TRUE` (Brouwer et al. 2017, section 4.3) each outer
#'   fold's training entries are split again into `inner_folds` folds; the
#'   inner cross-validation, which never sees the outer fold's test entries,
#'   chooses the rank for that outer fold, and the outer test error of that
#'   rank is reported: an honest estimate of the prediction error of the
#'   whole procedure (rank selection included). The chosen rank is then the
#'   one most often chosen by the outer folds (the smaller one on a tie); the
#'   table still shows the plain (non-nested) cross-validation error of every
#'   rank on the outer folds.
#' * `"ard"`: one fit with an automatic relevance determination prior
#'   ([ard()]) at the largest rank `max(ranks)`; the chosen rank is the number
#'   of factors that remain active (`summary(fit)$factors$active`, see
#'   [summary.bnmf()]: for the Gaussian models a factor is active when it
#'   adds to the fit, beyond the larger factors, more than a rank-one term
#'   fitted to pure noise would, so a factor split over several counts
#'   once). For counts (`likelihood = "poisson"`) the fit is by
#'   VB (the only method taken) and a factor is active when its Poisson
#'   signal exceeds `I + J - 1` (see [bnmf()], section Counts); `prior` may be
#'   `ard()` or `list(W = gamma_prior(a), H = gamma_prior(c), lambda =
#'   ard())`.
#'
#' @section Tri-factorisation:
#' `ranks` given as (K, L) pairs, `list(c(2, 2), c(3, 2))` or a two-column
#' matrix (one row per candidate, K the number of row factors, L of column
#' factors), compares tri-factorisations `X ~ F S G'` ([nmtf()], fitted as
#' `bnmf(X, rank = c(K, L))`) by criterion `"cv"` or `"ard"`. Everything
#' works as for NMF ranks, with one candidate per pair: `$ranks` is the
#' two-column matrix of the pairs (columns `K` and `L`), `$best` the chosen
#' pair `c(K = , L = )`, the table has columns `K` and `L` instead of `rank`,
#' and the rows of `$fold_mse` are named `"KxL"`. With `"ard"` one fit with
#' ARD priors on the columns of F and of G is made at the largest K and the
#' largest L, and `$best` counts the active factors of F and of G: a column
#' of F is active when its terms `F[, k] S[k, ] G'` add to the fit beyond
#' the larger columns of F more than a rank-one term fitted to pure noise
#' would, `(sqrt(I) + sqrt(J))^2` noise variances (the `gain` of the table;
#' [summary.bnmf()] describes the refit), and likewise for G.
#'
#' @section Folds:
#' The folds partition the observed entries. To keep every row and column of
#' `X` observed in every training set, the assignment is stratified by row:
#' the observed entries of each row are shuffled and dealt to the folds in
#' turn from a random starting fold, so every row with at least two observed
#' entries has entries in at least two folds, and the folds are balanced
#' within each row. A column whose observed entries all fell into one fold
#' is then repaired by swapping the fold of one of its entries with that of
#' another entry of the same row (which keeps the rows balanced). An entry
#' that is the only observed entry of its row or column cannot be held out
#' without leaving its row or column empty: such entries (and, as a last
#' resort, entries for which no swap exists) are kept in every training set
#' and never tested (fold 0 in `$folds`). With the usual complete or mostly
#' complete data every observed entry is held out exactly once.
#'
#' The zeros of a sparse `X` (a `Matrix::dgCMatrix`) are observed entries and
#' are dealt to the folds like the others, as long as `X` has at most
#' `getOption("bnmf.max_dense", 5e7)` entries (see the section Sparse data
#' of [predict.bnmf()]). A larger sparse `X` cannot have all its zeros dealt
#' to folds without a design of I x J entries: its folds are then made of its
#' stored (non-missing) entries and of a uniform random sample, as large, of
#' its zeros (all of them when there are fewer), held out as `NA` entries of
#' the training matrix; in a fold's error each sampled zero weighs (number of
#' zeros) / (number sampled), so that the error estimates the mean squared
#' error over all observed entries, as with a dense `X`. The zeros not
#' sampled stay in every training set, so the training sets hold a slightly
#' larger share of zeros than `X` does. `$zeros` then gives the number of
#' zeros, the number sampled and their weight, and `$obs` and `$folds` cover
#' the stored entries and the sampled zeros only. Memory and time stay of
#' the order of the stored entries.
#'
#' @section Reproducibility and parallel computing:
#' The folds and one L'Ecuyer-CMRG random number stream per task (a rank,
#' or a rank and a fold) are drawn in this R process from the session's
#' random numbers before any fit starts, so `set.seed()` before the call
#' reproduces the result, whatever the plan. The tasks run under the current
#' [future::plan()] through [future.apply::future_lapply()]: under the default
#' sequential plan one after the other in this process, under
#' `future::plan(future::multisession)` on background R sessions, and so on;
#' the plan is left as it is. `cores` is a shortcut: `cores = 1` runs the
#' tasks in this process and `cores > 1` on that many background sessions
#' ([future::multisession]), through a temporary plan that is announced by a
#' message and replaced by the session's plan afterwards. The single fit of
#' `"ard"` runs in this process (its `chains`, if several, as tasks under the
#' plan).
#'
#' @param X A numeric matrix (features in rows, samples in columns), a
#'   numeric data frame, or a `Matrix::dgCMatrix`; `NA` entries are missing.
#'   Or a `SummarizedExperiment` (e.g. a `SingleCellExperiment`), whose assay
#'   `assay` (given through `...`; default the first) is used, as in [bnmf()].
#' @param ranks The ranks to compare: distinct whole numbers between 1 and
#'   `min(nrow(X), ncol(X))`. For `criterion = "ard"` only the largest is
#'   used. For a tri-factorisation, (K, L) pairs: a list of length-2 vectors
#'   or a two-column matrix (see the section Tri-factorisation).
#' @param criterion `"chib"`, `"bic"`, `"cv"`, `"ard"` or `"evidence"`; see
#'   the section Criteria. `"evidence"` compares the evidence of VB fits by
#'   their final ELBO (a lower bound on log p(X), labelled so), or with
#'   `method = "gibbs"` by Chib's estimate (as `"chib"`).
#' @param method The fitting method: for `"cv"` any of `"gibbs"` (default),
#'   `"vb"`, `"icm"`, `"np"`; for `"ard"` `"gibbs"` (default), `"vb"` or
#'   `"icm"`. `"chib"` needs `"gibbs"` and `"bic"` needs `"icm"`;
#'   `"evidence"` takes `"vb"` (default) or `"gibbs"`. For counts
#'   (`likelihood = "poisson"`) `"vb"` is the default and the only method of
#'   `"bic"`, `"ard"` (the active factors of a VB fit) and the default of
#'   `"evidence"`; `"cv"` and `"evidence"` also take `"gibbs"`, and
#'   `"chib"` needs it.
#' @param folds Number of cross-validation folds (`"cv"` only), at least 2.
#' @param nested Nested cross-validation (`"cv"` only): choose the rank
#'   within each outer fold by an inner cross-validation.
#' @param inner_folds Number of inner folds for `nested = TRUE`.
#' @param rule For `"cv"` (and the inner cross-validation of `nested =
#'   TRUE`): `"min"`, the rank with the smallest mean held-out error, or
#'   `"1se"`, the smallest rank within one standard error of it.
#' @param cores `NULL` (the default) runs the tasks under the current
#'   [future::plan()]; a number of R processes (1: this process) sets a
#'   temporary plan for the call.
#' @param samples For `"chib"`: Gibbs sweeps per parameter block of
#'   `marginal_likelihood()` (for counts 5000 unless given).
#' @param marglik_args For `"chib"`: a named list of further arguments of
#'   `marginal_likelihood()` (for example `burnin`).
#' @param keep_fits Keep the fits in the result (`$fits`: one per rank; for
#'   `"cv"` one per rank and fold, `$fits[[rank]][[fold]]`, and with
#'   `nested = TRUE` those of the outer folds only). The single ARD fit is
#'   always kept (`$fit`).
#' @param ... Further arguments of [bnmf()] for every fit, such as `prior`,
#'   `noise`, `iter`, `burnin`, `chains`, `tol` or `assay` (not `X`, `rank`,
#'   `method`, `data`). `likelihood = "poisson"` compares Poisson models of
#'   counts by `"cv"` (the held-out error is then the mean Poisson deviance
#'   \eqn{2 (x \log(x / \mu) - (x - \mu))} of the test entries, column
#'   `deviance`), `"evidence"` (the ELBO of VB fits, or with
#'   `method = "gibbs"` Chib's estimate, as `"chib"`: calibrated up to the
#'   rank the counts support, biased upward above it, where it warns) or
#'   `"bic"` (at the
#'   posterior mean, df = (I + J) K) or `"ard"` (the active factors of one VB
#'   fit at the largest rank). `progress = TRUE` shows every fit's progress bar
#'   besides the bar of the tasks (ranks, folds) done, which is shown by
#'   default in interactive sessions when the tasks run in this process;
#'   `progress = FALSE` shows neither.
#' @return An object of class `bnmf_rank`: a list with `criterion`,
#'   `method`, `ranks`, `best` (the chosen rank, also given by [best()]),
#'   `likelihood` (`"gaussian"` or `"poisson"`),
#'   `table` (a data frame with one row per rank: for `"chib"` `logml` and
#'   `se`; for `"evidence"` `elbo` (VB) or `logml` and `se` (Gibbs); for `"bic"` `loglik`, `df`, `bic` and `value = -bic / 2`; for
#'   `"cv"` the mean held-out `mse` over the folds, its `sd` and `se =
#'   sd / sqrt(folds)`; for `"ard"` one row per factor of the ARD fit with its
#'   `signal`, for the Gaussian models its `gain` (see [summary.bnmf()]), and
#'   whether it is `active`), and criterion-specific elements:
#'   `fold_mse` (ranks x folds), `folds` (the fold of each observed entry, in
#'   the order of `obs`, their linear indices in `X`) and for `nested = TRUE`
#'   `nested` (per outer fold: the inner mean errors of every rank, the chosen
#'   rank and its outer test error); `marglik` (the `bnmf_marglik` objects);
#'   `fit` (ARD); `fits` (with `keep_fits = TRUE`); `elapsed` (seconds).
#'
#'   A chosen rank that is the largest of `ranks` (or the smallest, when it
#'   is above 1) warns (class `bnmf_warning_rank_edge`): the best rank may lie
#'   beyond the ranks compared.
#' @seealso [best()], [plot.bnmf_rank()], [bnmf()], [logLik.bnmf()].
#' @references
#' Schmidt, M. N., Winther, O. and Hansen, L. K. (2009). Bayesian non-negative
#' matrix factorization. *Independent Component Analysis and Signal
#' Separation*, LNCS 5441, 540-547. \doi{10.1007/978-3-642-00599-2_68}
#'
#' Brouwer, T., Frellsen, J. and Lio, P. (2017). Comparative study of
#' inference methods for Bayesian nonnegative matrix factorisation. *Machine
#' Learning and Knowledge Discovery in Databases (ECML PKDD)*, LNCS 10534,
#' 513-529. \doi{10.1007/978-3-319-71249-9_31}
#' @examples
#' # Schmidt et al.'s toy data: rank 3, unit-variance noise
#' set.seed(1)
#' X <- matrix(rexp(300), 100, 3) %*% matrix(rexp(60), 3, 20) +
#'   matrix(rnorm(2000), 100, 20)
#' bic <- suppressWarnings(select_rank(X, ranks = 1:5, criterion = "bic",
#'                                     prior = exponential(rate = 1)))
#' bic
#' best(bic)
#'
#' cv <- suppressWarnings(select_rank(X, ranks = 1:5, criterion = "cv",
#'                                    method = "vb", folds = 5,
#'                                    prior = exponential(rate = 1)))
#' summary(cv)
#' plot(cv)
#'
#' ard <- suppressWarnings(select_rank(X, ranks = 6, criterion = "ard",
#'                                     method = "vb"))
#' best(ard)
#'
#' \donttest{
#' # Chib's method: a Gibbs fit and 2 * rank further Gibbs runs per rank
#' chib <- suppressWarnings(select_rank(X, ranks = 2:4, criterion = "chib",
#'                                      samples = 1000, iter = 1000,
#'                                      prior = exponential(rate = 1)))
#' plot(chib)
#' }
#' @export
select_rank <- function(X, ranks = 1:6, criterion = c("chib", "bic", "cv", "ard", "evidence"),
                        method = c("gibbs", "vb", "icm", "np"), folds = 5,
                        nested = FALSE, inner_folds = folds,
                        rule = c("min", "1se"), cores = NULL,
                        samples = 20000, marglik_args = list(),
                        keep_fits = FALSE, ...) {
  call <- match.call()
  criterion <- check_choice(criterion, c("chib", "bic", "cv", "ard", "evidence"), "criterion")
  pois <- identical(list(...)$likelihood, "poisson")
  method <- rank_method(criterion, method, missing(method), pois)
  if (criterion != "cv") {
    if (!missing(folds)) abort_input(sprintf("`folds` applies to criterion \"cv\" only, not \"%s\".", criterion))
    if (!missing(nested)) abort_input(sprintf("`nested` applies to criterion \"cv\" only, not \"%s\".", criterion))
    if (!missing(inner_folds)) abort_input(sprintf("`inner_folds` applies to criterion \"cv\" only, not \"%s\".", criterion))
    if (!missing(rule)) abort_input(sprintf("`rule` applies to criterion \"cv\" only, not \"%s\".", criterion))
  }
  rule <- check_choice(rule, c("min", "1se"), "rule")
  if (criterion != "chib" && !(criterion == "evidence" && method == "gibbs")) {
    if (!missing(samples)) abort_input(sprintf("`samples` applies to criterion \"chib\" only, not \"%s\".", criterion))
    if (!missing(marglik_args)) abort_input(sprintf("`marglik_args` applies to criterion \"chib\" only, not \"%s\".", criterion))
  }
  ml_fun <- if (criterion == "chib" || criterion == "evidence" && method == "gibbs") marginal_likelihood
  # Chib's estimate of a count model runs samplers in R: 5000 samples a block
  if (pois && missing(samples)) samples <- 5000
  rank_select(X, ranks, criterion, method, folds, nested, inner_folds, cores,
              samples, marglik_args, keep_fits, list(...), ml_fun, call, rule,
              missing(inner_folds))
}

rank_method <- function(criterion, method, default, pois = FALSE) {
  if (pois) return(rank_method_counts(criterion, method, default))
  methods <- c("gibbs", "vb", "icm", "np")
  if (default) {
    return(switch(criterion, bic = "icm", evidence = "vb", "gibbs"))
  }
  method <- check_choice(method, methods, "method")
  if (criterion == "evidence" && !method %in% c("vb", "gibbs")) {
    abort_input(sprintf("`method`: criterion \"evidence\" needs method \"vb\" (the ELBO) or \"gibbs\" (Chib's estimate), not \"%s\".",
                        method))
  }
  need <- c(chib = "gibbs", bic = "icm")[criterion]
  if (!is.na(need) && method != need) {
    abort_input(sprintf("`method`: criterion \"%s\" needs method \"%s\", not \"%s\".",
                        criterion, need, method))
  }
  if (criterion == "ard" && method == "np") {
    abort_input("`method`: criterion \"ard\" needs a prior; use method \"gibbs\", \"vb\" or \"icm\", not \"np\".")
  }
  method
}

# Counts (likelihood = "poisson"): VB by default; Gibbs for "cv", and for
# "evidence" (Chib's estimate) and "chib". ARD counts the active factors of a
# VB fit: the exact posterior (Gibbs) of exponential factors keeps
# redundant factors alive, sharing the counts (see ?bnmf, section Counts).
rank_method_counts <- function(criterion, method, default) {
  if (criterion == "ard" && !default && !identical(method, "vb")) {
    abort_unsupported(sprintf("`method`: criterion \"ard\" counts the active factors of a VB fit for `likelihood = \"poisson\"`, not of method \"%s\": under the exact posterior (Gibbs) redundant factors share the counts instead of switching off.",
                              method[1L]))
  }
  if (criterion == "ard") return("vb")
  if (default) return(if (criterion == "chib") "gibbs" else "vb")
  method <- check_choice(method, c("vb", "gibbs", "icm", "np"), "method")
  allowed <- switch(criterion, cv = , evidence = c("vb", "gibbs"), chib = "gibbs", bic = "vb")
  if (!method %in% allowed) {
    abort_input(sprintf("`method`: counts are compared by %s with method %s, not \"%s\".",
                        if (criterion == "cv") "cross-validation" else sprintf("criterion \"%s\"", criterion),
                        paste0("\"", allowed, "\"", collapse = " or "), method))
  }
  method
}

# The worker behind select_rank(); `ml_fun` is the marginal-likelihood
# estimator (an argument, so the tests can stand in for it).
rank_select <- function(X, ranks, criterion, method, folds, nested, inner_folds,
                        cores, samples, marglik_args, keep_fits, args, ml_fun,
                        call = NULL, rule = "min", inner_missing = TRUE) {
  X <- assay_matrix(X, args$assay)
  args$assay <- NULL
  bar <- if (is.null(args$progress)) interactive() else isTRUE(args$progress)
  X <- check_data_matrix(X)
  I <- nrow(X)
  J <- ncol(X)
  pairs <- check_rank_pairs(ranks, I, J, criterion)
  ranks <- if (is.null(pairs)) check_ranks(ranks, min(I, J)) else seq_len(nrow(pairs))
  keep_fits <- check_flag(keep_fits, "keep_fits")
  if (!is.null(cores)) cores <- check_count(cores, "cores", min = 1)
  args <- check_fit_args(args, criterion, method)
  attr(args, "rank_pairs") <- pairs
  check_signs(X, method)
  if (!is.null(ml_fun)) {
    samples <- check_count(samples, "samples", min = 1)
    if (!is.list(marglik_args) || (length(marglik_args) &&
        (is.null(names(marglik_args)) || any(names(marglik_args) == "")))) {
      abort_input("`marglik_args` must be a named list of arguments of `marginal_likelihood()`.")
    }
    if (any(c("fit", "samples") %in% names(marglik_args))) {
      abort_input("`marglik_args` must not contain `fit` or `samples` (give `samples` as an argument of `select_rank()`).")
    }
    # The settings of marginal_likelihood() (not of a stand-in `ml_fun`).
    if (identical(ml_fun, marginal_likelihood)) {
      ml_method <- if (identical(args$likelihood, "poisson")) marginal_likelihood.bnmf_poisson else marginal_likelihood.bnmf
      known <- setdiff(names(formals(ml_method)), c("fit", "samples", "..."))
      check_names_known(names(marglik_args), known, known, "marginal_likelihood",
                        arg = "marglik_args")
      do.call(check_marglik_settings, c(list(samples = samples), marglik_args))
    }
  }
  if (criterion == "cv") {
    folds <- check_count(folds, "folds", min = 2)
    nested <- check_flag(nested, "nested")
    if (!nested && !inner_missing) {
      abort_input("`inner_folds` applies with `nested = TRUE` only.")
    }
    inner_folds <- check_count(inner_folds, "inner_folds", min = 2)
  }
  # Every fit's arguments are checked here, before any worker starts.
  check_fit_job(X, ranks, method, args)
  rank_plan_notice(X, ranks, criterion, method, args, samples,
                   if (criterion == "cv") folds * (1 + nested * inner_folds) else 1L)
  op <- options(bnmf.rank_progress = if (bar) sprintf("select_rank(criterion = \"%s\")", criterion))
  on.exit(options(op), add = TRUE)
  t0 <- proc.time()[[3L]]
  # The ranks (and folds) are tasks of run_tasks(), under the user's plan or
  # the temporary one of `cores`.
  out <- with_cores(cores, switch(criterion,
    ard = rank_ard(X, if (is.null(pairs)) max(ranks) else apply(pairs, 2L, max), method, args),
    chib = rank_chib(X, ranks, args, samples, marglik_args, ml_fun, keep_fits),
    evidence = if (method == "gibbs") {
      rank_chib(X, ranks, args, samples, marglik_args, ml_fun, keep_fits)
    } else rank_elbo(X, ranks, args, keep_fits),
    bic = rank_bic(X, ranks, args, keep_fits, if (identical(args$likelihood, "poisson")) "vb" else "icm"),
    cv = rank_cv(X, ranks, method, folds, nested, inner_folds, args, keep_fits, rule)
  ))
  if (!is.null(pairs)) out <- pair_result(out, pairs, criterion)
  out$likelihood <- if (identical(args$likelihood, "poisson")) "poisson" else "gaussian"
  if (is.null(pairs)) warn_rank_edge(out$best, ranks, criterion)
  out <- c(list(criterion = criterion, method = method,
                ranks = if (is.null(pairs)) ranks else pairs), out)
  out$dims <- c(I, J)
  out$elapsed <- proc.time()[[3L]] - t0
  out$call <- call
  validate_rank_result(new_rank_result(out))
}

# The result of select_rank(): a list of class bnmf_rank.
new_rank_result <- function(x) {
  stopifnot(is.list(x))
  structure(x, class = "bnmf_rank")
}

# Values of a bnmf_rank: a known criterion, whole ranks >= 1, and a chosen
# rank among them (ARD: the number of active factors, 0 to the rank fitted).
validate_rank_result <- function(x) {
  bad <- function(what) abort_fit(sprintf("the rank selection has %s", what))
  if (!isTRUE(x$criterion %in% c("chib", "bic", "cv", "ard", "evidence"))) bad("an unknown criterion")
  r <- x$ranks
  if (!is.numeric(r) || !length(r) || any(!is.finite(r)) || any(r < 1) || any(r != round(r))) {
    bad("ranks that are not whole numbers >= 1")
  }
  if (is.matrix(r)) {
    ok <- length(x$best) == 2L && if (x$criterion == "ard") {
      all(x$best >= 0 & x$best <= apply(r, 2L, max))
    } else any(r[, 1L] == x$best[1L] & r[, 2L] == x$best[2L])
    if (!isTRUE(ok)) bad("a chosen (K, L) pair outside its ranks")
  } else {
    ok <- if (x$criterion == "ard") x$best %in% 0:max(r) else x$best %in% r
    if (length(x$best) != 1L || !isTRUE(ok)) bad("a chosen rank outside its ranks")
  }
  if (length(x$dims) != 2L) bad("no data dimensions")
  x
}

check_ranks <- function(ranks, max_rank) {
  if (!is.numeric(ranks) || !length(ranks) || anyNA(ranks) || any(!is.finite(ranks)) ||
      any(ranks != round(ranks)) || any(ranks < 1)) {
    abort_input("`ranks` must be a vector of whole numbers >= 1.")
  }
  if (anyDuplicated(ranks)) abort_input("`ranks` must not contain duplicates.")
  if (any(ranks > max_rank)) {
    abort_input(sprintf("`ranks` must be at most min(nrow(X), ncol(X)) = %d; %s %s larger.",
                        max_rank, format_index(ranks[ranks > max_rank]),
                        if (sum(ranks > max_rank) > 1) "are" else "is"))
  }
  sort(as.integer(ranks))
}

# Arguments of bnmf() passed through `...`.
check_fit_args <- function(args, criterion, method) {
  if (length(args) && (is.null(names(args)) || any(names(args) == ""))) {
    abort_input("`...`: the arguments for `bnmf()` must be named (e.g. `iter = 500`).")
  }
  taken <- intersect(names(args), c("X", "rank", "method", "data"))
  if (length(taken)) {
    abort_input(sprintf("`...`: %s %s set by `select_rank()` and cannot be passed to `bnmf()`.",
                        paste0("`", taken, "`", collapse = ", "),
                        if (length(taken) > 1) "are" else "is"))
  }
  if (!is.null(args$likelihood) && !identical(args$likelihood, "gaussian") &&
      !identical(args$likelihood, "poisson")) {
    abort_input("`likelihood`: `select_rank()` compares Gaussian models (the default) or counts, `likelihood = \"poisson\"`.")
  }
  if (identical(args$likelihood, "gaussian")) args$likelihood <- NULL
  allowed <- setdiff(names(formals(bnmf)), c("X", "rank", "method", "data", "particles", "..."))
  unknown <- setdiff(names(args), allowed)
  if (length(unknown)) {
    abort_input(sprintf("`...`: %s %s not %s of `bnmf()`.",
                        paste0("`", unknown, "`", collapse = ", "),
                        if (length(unknown) > 1) "are" else "is",
                        if (length(unknown) > 1) "arguments" else "an argument"))
  }
  if (criterion == "ard") {
    if (is.null(args$prior)) {
      args$prior <- ard()
    } else if (!(inherits(args$prior, "bnmf_prior") && identical(args$prior$type, "ard")) &&
               !(identical(args$likelihood, "poisson") && pois_prior_is_ard(args$prior))) {
      abort_input("`prior`: criterion \"ard\" needs an `ard()` prior.")
    }
  }
  if (is.null(args$progress)) args$progress <- FALSE
  args
}

# bnmf()'s checks of the fits' arguments (`args`, with bnmf()'s defaults
# for the others), at the largest rank, in this process.
check_fit_job <- function(X, ranks, method, args) {
  defaults <- formals(bnmf)
  rest <- setdiff(names(defaults), c(names(args), "X", "rank", "method", "..."))
  a <- lapply(defaults[rest], eval, envir = environment(bnmf))
  a[names(args)] <- args
  a$X <- X
  pairs <- attr(args, "rank_pairs")
  a$rank <- if (is.null(pairs)) max(ranks) else apply(pairs, 2L, max)
  a$method <- method
  given <- stats::setNames(names(a) %in% names(args), names(a))
  withCallingHandlers(
    bnmf_job(a, given, environment()),
    bnmf_warning_negative = function(w) invokeRestart("muffleWarning"))
  invisible()
}

# One bnmf fit, without repeating the warning about negative entries (given
# once by select_rank()), and with a short call.
fit_one <- function(X, rank, method, args) {
  # Tri-factorisation candidates are numbered: the number picks the (K, L) row.
  pairs <- attr(args, "rank_pairs")
  if (!is.null(pairs) && length(rank) == 1L) rank <- pairs[rank, ]
  f <- function(...) bnmf(X, rank = rank, method = method, ...)
  withCallingHandlers(
    do.call(f, args),
    bnmf_warning_negative = function(w) invokeRestart("muffleWarning")
  )
}

# The tasks of a rank selection, through run_tasks(). The session's random
# numbers after them are those after their streams were drawn, whatever the
# plan (future_lapply() may draw one more).
rank_tasks <- function(tasks, fun) {
  seeds <- chain_streams(length(tasks))
  keep_session_rng(run_tasks(tasks, fun, seeds = seeds,
                             progress = getOption("bnmf.rank_progress")))
}

rank_ard <- function(X, K, method, args) {
  fit <- fit_one(X, K, method, args)
  tab <- if (inherits(fit, "bnmf_nmtf")) nmtf_ard_relevance(fit) else summary(fit)$factors
  keep <- intersect(c("matrix", "factor", "share", "lambda", "signal", "gain", "active"), names(tab))
  tab <- tab[, keep, drop = FALSE]
  rownames(tab) <- NULL
  list(best = sum(tab$active), table = tab, fit = fit)
}

rank_chib <- function(X, ranks, args, samples, marglik_args, ml_fun, keep_fits) {
  one <- function(r) {
    fit <- fit_one(X, r, "gibbs", args)
    ml <- do.call(ml_fun, c(list(fit, samples = samples), marglik_args))
    if (!inherits(ml, "bnmf_marglik") || !is.numeric(ml$logml) || !is.numeric(ml$se)) {
      stop("`marginal_likelihood()` did not return a `bnmf_marglik` object with `logml` and `se`.",
           call. = FALSE)
    }
    list(ml = ml, fit = if (keep_fits) fit)
  }
  res <- rank_tasks(as.list(ranks), one)
  tab <- data.frame(rank = ranks,
                    logml = vapply(res, function(x) as.numeric(x$ml$logml)[1L], numeric(1)),
                    se = vapply(res, function(x) as.numeric(x$ml$se)[1L], numeric(1)))
  out <- list(best = ranks[which.max(tab$logml)], table = tab,
              marglik = stats::setNames(lapply(res, `[[`, "ml"), ranks))
  if (keep_fits) out$fits <- stats::setNames(lapply(res, `[[`, "fit"), ranks)
  out
}

# BIC at the point estimate of every rank: the mode (ICM) of a Gaussian
# model, the posterior mean (VB) of a Poisson one; df as logLik() counts it.
rank_bic <- function(X, ranks, args, keep_fits, method = "icm") {
  one <- function(r) {
    fit <- fit_one(X, r, method, args)
    ll <- logLik(fit)
    list(loglik = as.numeric(ll), df = attr(ll, "df"), nobs = attr(ll, "nobs"),
         fit = if (keep_fits) fit)
  }
  res <- rank_tasks(as.list(ranks), one)
  loglik <- vapply(res, `[[`, numeric(1), "loglik")
  df <- vapply(res, function(x) as.numeric(x$df), numeric(1))
  n <- res[[1L]]$nobs
  bic <- -2 * loglik + df * log(n)
  tab <- data.frame(rank = ranks, loglik = loglik, df = df, bic = bic, value = -bic / 2)
  out <- list(best = ranks[which.min(bic)], table = tab, nobs = n)
  if (keep_fits) out$fits <- stats::setNames(lapply(res, `[[`, "fit"), ranks)
  out
}

# The evidence lower bound of a VB fit at every rank (a lower bound on
# log p(X), not log p(X) itself; compare with care: the gap can differ
# between ranks).
rank_elbo <- function(X, ranks, args, keep_fits) {
  one <- function(r) {
    fit <- fit_one(X, r, "vb", args)
    e <- elbo(fit)
    list(elbo = e[length(e)], fit = if (keep_fits) fit)
  }
  res <- rank_tasks(as.list(ranks), one)
  tab <- data.frame(rank = ranks, elbo = vapply(res, `[[`, numeric(1), "elbo"))
  out <- list(best = ranks[which.max(tab$elbo)], table = tab)
  if (keep_fits) out$fits <- stats::setNames(lapply(res, `[[`, "fit"), ranks)
  out
}

# A rank chosen at the edge of the ranks compared (the largest, or the
# smallest when it is above 1) may lie beyond them: say so.
warn_rank_edge <- function(best, ranks, criterion) {
  if (criterion == "ard" || length(ranks) < 2L) return(invisible())
  edge <- if (best == max(ranks)) "largest" else if (best == min(ranks) && best > 1) "smallest"
  if (is.null(edge)) return(invisible())
  bnmf_signal(warning, "bnmf_warning_rank_edge",
              sprintf("The chosen rank %d is the %s of the ranks compared; the best rank may lie beyond them: widen `ranks` (e.g. `ranks = %s`).",
                      best, edge, if (edge == "largest") sprintf("%d:%d", min(ranks), best + 3L) else
                        sprintf("%d:%d", max(1L, best - 3L), max(ranks))))
}

# Linear indices of the observed entries of X (dense or dgCMatrix).
observed_index <- function(X) {
  if (inherits(X, "dgCMatrix")) {
    nas <- which(is.na(X@x))
    if (!length(nas)) return(seq_len(prod(dim(X))))
    cols <- rep.int(seq_len(ncol(X)), diff(X@p))
    na_lin <- X@i[nas] + 1 + (cols[nas] - 1) * nrow(X)
    return(setdiff(seq_len(prod(dim(X))), na_lin))
  }
  which(!is.na(X))
}

# Assign the observed entries `obs` (linear indices in an I x J matrix) to k
# folds; see the section Folds of ?select_rank. Returns an integer vector
# aligned with `obs`: the fold, or 0 for entries never held out.
make_folds <- function(obs, I, J, k, arg = "folds") {
  n <- length(obs)
  r <- as.integer((obs - 1) %% I) + 1L
  cc <- as.integer((obs - 1) %/% I) + 1L
  nr <- tabulate(r, I)
  nc <- tabulate(cc, J)
  fold <- integer(n)
  hold <- which(nr[r] >= 2L & nc[cc] >= 2L)
  if (length(hold) < k) {
    abort_input(sprintf("`%s` (%d) is larger than the number of observed entries that can be held out (%d).",
                        arg, k, length(hold)))
  }
  # Stratified by row: shuffle within rows, deal in turn from a random fold.
  o <- hold[order(r[hold], stats::runif(length(hold)))]
  ro <- r[o]
  pos <- seq_along(o) - match(ro, ro)
  offset <- sample.int(k, I, replace = TRUE) - 1L
  fold[o] <- as.integer((pos + offset[ro]) %% k) + 1L
  # Repair the columns whose observed entries all lie in one fold by swapping
  # folds within a row (one pass: a swap never creates a new such column).
  # The entries of each column and row are listed once (in increasing order),
  # so a repair costs the size of its column and row, not of all entries.
  held <- fold > 0L
  cnt <- matrix(tabulate(cc[held] + J * (fold[held] - 1L), J * k), J, k)
  bad <- which(cnt == nc & cnt > 0L, arr.ind = TRUE)
  if (nrow(bad)) {
    by_col <- split(seq_len(n), factor(cc, levels = seq_len(J)))
    by_row <- split(seq_len(n), factor(r, levels = seq_len(I)))
  }
  for (b in seq_len(nrow(bad))) {
    j <- bad[b, 1L]
    f <- bad[b, 2L]
    if (cnt[j, f] < nc[j]) next
    cand <- by_col[[j]][fold[by_col[[j]]] == f]
    e <- cand[sample.int(length(cand), 1L)]
    partners <- by_row[[r[e]]]
    partners <- partners[fold[partners] > 0L & fold[partners] != f]
    partners <- partners[nc[cc[partners]] - cnt[cbind(cc[partners], f)] >= 2L]
    if (length(partners)) {
      p <- partners[sample.int(length(partners), 1L)]
      g <- fold[p]
      cnt[j, f] <- cnt[j, f] - 1L
      cnt[j, g] <- cnt[j, g] + 1L
      cnt[cc[p], g] <- cnt[cc[p], g] - 1L
      cnt[cc[p], f] <- cnt[cc[p], f] + 1L
      fold[p] <- f
      fold[e] <- g
    } else {
      cnt[j, f] <- cnt[j, f] - 1L
      fold[e] <- 0L
    }
  }
  fold
}

# The cross-validation design: outer folds over the observed entries of X
# and, for nested CV, inner folds over each outer fold's training entries
# (the observed entries of X outside the outer fold: the inner design never
# sees the outer test entries). `weight` (NULL: every entry weighs 1) is the
# weight of each entry in the held-out error (cv_candidates()).
cv_design <- function(X, folds, nested, inner_folds) {
  cand <- cv_candidates(X)
  obs <- cand$obs
  I <- nrow(X)
  J <- ncol(X)
  fold <- make_folds(obs, I, J, folds)
  design <- list(obs = obs, fold = fold, folds = folds, nested = nested,
                 weight = cand$weight, zeros = cand$zeros)
  if (nested) {
    design$inner <- lapply(seq_len(folds), function(f) {
      pos <- which(fold != f)
      list(pos = pos, fold = make_folds(obs[pos], I, J, inner_folds, "inner_folds"))
    })
    design$inner_folds <- inner_folds
  }
  design
}

# The entries the folds are made of: every observed entry of X, unless X is
# a dgCMatrix whose I x J entries are more than getOption("bnmf.max_dense"):
# then its stored observed entries and a uniform sample, as large, of its
# unstored zeros (all of them when there are fewer), each sampled zero
# weighing (number of zeros) / (number sampled) in the held-out error, so that
# the error still estimates the mean over every observed entry. Linear
# indices are doubles (I J may pass 2^31); `zeros` describes the sample.
cv_candidates <- function(X) {
  if (!inherits(X, "dgCMatrix") || prod(as.double(dim(X))) <= max_dense()) {
    return(list(obs = observed_index(X), weight = NULL, zeros = NULL))
  }
  I <- nrow(X)
  keys <- linear_index(X@i + 1L, stored_cols(X), I)
  stored <- keys[!is.na(X@x)]
  n_zero <- prod(as.double(dim(X))) - length(keys)
  n_take <- min(n_zero, length(stored))
  zeros <- if (n_take == n_zero) unstored_all(X, keys) else unstored_sample(keys, prod(as.double(dim(X))), n_take)
  obs <- c(stored, zeros)
  w <- rep(c(1, n_zero / n_take), c(length(stored), length(zeros)))
  o <- order(obs)
  list(obs = obs[o], weight = w[o],
       zeros = list(n = n_zero, sampled = n_take, weight = n_zero / n_take))
}

# n distinct linear indices in 1..N, uniform, none among `keys` (a minority:
# more than half of the entries are unstored when this is called).
unstored_sample <- function(keys, N, n) {
  out <- numeric()
  while (length(out) < n) {
    cand <- floor(stats::runif(2 * (n - length(out)) + 16L) * N) + 1
    cand <- cand[cand <= N & is.na(match(cand, keys))]
    out <- unique(c(out, cand))
  }
  out[seq_len(n)]
}

# Every unstored entry of X, column by column (fewer than the stored ones).
unstored_all <- function(X, keys) {
  I <- nrow(X)
  unlist(lapply(seq_len(ncol(X)), function(j) {
    rows <- X@i[seq_len(X@p[j + 1L] - X@p[j]) + X@p[j]] + 1L
    linear_index(setdiff(seq_len(I), rows), j, I)
  }))
}

# The entries to hide (set to NA) and to test for outer fold f and inner fold
# g (g = 0: the outer fold itself), and the weights of the test entries.
cv_split <- function(design, f, g = 0L) {
  at <- which(design$fold == f)
  if (g > 0L) {
    inn <- design$inner[[f]]
    outer_test <- design$obs[at]
    at <- inn$pos[inn$fold == g]
  }
  test <- design$obs[at]
  list(hide = if (g == 0L) test else c(outer_test, test), test = test,
       weight = design$weight[at])
}

# X with the entries `split$hide` missing. A dgCMatrix whose folds hold
# sampled zeros gets them as stored NAs, without a dense copy.
cv_train <- function(X, split) {
  if (!inherits(X, "dgCMatrix") || is.null(split$weight)) {
    X[split$hide] <- NA
    return(X)
  }
  I <- nrow(X)
  j <- stored_cols(X)
  keys <- linear_index(X@i + 1L, j, I)
  x <- X@x
  x[!is.na(match(keys, split$hide))] <- NA
  new <- split$hide[is.na(match(split$hide, keys))]
  Matrix::sparseMatrix(i = c(X@i + 1L, as.integer((new - 1) %% I) + 1L),
                       j = c(j, as.integer((new - 1) %/% I) + 1L),
                       x = c(x, rep(NA_real_, length(new))), dims = dim(X),
                       dimnames = dimnames(X))
}

# The (weighted) mean squared error of `fit` on the test entries of `split`:
# a dense fit through predict(), a sparse one entry by entry.
cv_error <- function(fit, X, split) {
  loss <- if (inherits(fit, "bnmf_poisson")) poisson_deviance else function(x, m) (x - m)^2
  if (!fit$sparse) return(mean(loss(X[split$test], predict(fit)[split$test])))
  I <- nrow(X)
  i <- as.integer((split$test - 1) %% I) + 1L
  j <- as.integer((split$test - 1) %/% I) + 1L
  e2 <- loss(data_at(X, i, j), wh_at(fit, i, j))
  if (is.null(split$weight)) mean(e2) else sum(split$weight * e2) / sum(split$weight)
}

# The Poisson deviance of counts x at means m, entry by entry:
# 2 (x log(x / m) - (x - m)), with 0 log 0 = 0.
poisson_deviance <- function(x, m) {
  m <- pmax(m, .Machine$double.xmin)
  2 * (ifelse(x > 0, x * log(x / m), 0) - (x - m))
}

# The rank chosen from held-out errors (ranks x folds): the smallest mean
# error, or (rule "1se") the smallest rank whose mean error is within one
# standard error (over the folds) of the smallest.
cv_choose <- function(mse, ranks, rule) {
  m <- rowMeans(mse)
  b <- which.min(m)
  if (rule == "min") return(ranks[b])
  se <- stats::sd(mse[b, ]) / sqrt(ncol(mse))
  ranks[which(m <= m[b] + se)[1L]]
}

rank_cv <- function(X, ranks, method, folds, nested, inner_folds, args, keep_fits,
                    rule = "min") {
  design <- cv_design(X, folds, nested, inner_folds)
  grid <- expand.grid(rank = ranks, outer = seq_len(folds), inner = 0L)
  if (nested) {
    grid <- rbind(grid, expand.grid(rank = ranks, outer = seq_len(folds),
                                    inner = seq_len(inner_folds)))
  }
  tasks <- lapply(seq_len(nrow(grid)), function(t) as.list(grid[t, ]))
  one <- function(task) {
    split <- cv_split(design, task$outer, task$inner)
    fit <- fit_one(cv_train(X, split), task$rank, method, args)
    list(mse = cv_error(fit, X, split), n = length(split$test),
         fit = if (keep_fits && task$inner == 0L) fit)
  }
  res <- rank_tasks(tasks, one)
  grid$mse <- vapply(res, `[[`, numeric(1), "mse")
  outer <- grid[grid$inner == 0L, ]
  fold_mse <- matrix(outer$mse, length(ranks), folds,
                     dimnames = list(rank = ranks, fold = seq_len(folds)))
  m <- rowMeans(fold_mse)
  s <- apply(fold_mse, 1L, stats::sd)
  tab <- data.frame(rank = ranks, mse = unname(m), sd = unname(s),
                    se = unname(s) / sqrt(folds))
  out <- list(best = cv_choose(fold_mse, ranks, rule), rule = rule, table = tab,
              fold_mse = fold_mse,
              folds = design$fold, obs = design$obs, n_test = tabulate(design$fold, folds))
  out$zeros <- design$zeros
  if (nested) {
    inner <- grid[grid$inner > 0L, ]
    inner_arr <- array(inner$mse, c(length(ranks), folds, inner_folds))
    inner_mse <- apply(inner_arr, c(1L, 2L), mean)
    dimnames(inner_mse) <- list(rank = ranks, fold = seq_len(folds))
    chosen <- vapply(seq_len(folds), function(f) {
      cv_choose(matrix(inner_arr[, f, ], length(ranks)), ranks, rule)
    }, integer(1))
    err <- fold_mse[cbind(match(chosen, ranks), seq_len(folds))]
    counts <- tabulate(match(chosen, ranks), length(ranks))
    out$nested <- list(inner_mse = inner_mse,
                       outer = data.frame(fold = seq_len(folds), rank = chosen, mse = err),
                       mse = mean(err), se = stats::sd(err) / sqrt(folds),
                       inner_folds = inner_folds)
    out$best <- ranks[which.max(counts)]
  }
  if (identical(args$likelihood, "poisson")) names(out$table)[2L] <- "deviance"
  if (keep_fits) {
    idx <- which(grid$inner == 0L)
    out$fits <- lapply(ranks, function(r) {
      lapply(idx[grid$rank[idx] == r], function(t) res[[t]]$fit)
    })
    names(out$fits) <- ranks
  }
  out
}

#' The chosen rank
#'
#' @param object A `bnmf_rank` object made by [select_rank()].
#' @param ... Not used: an argument here is an error.
#' @return The chosen number of factors, an integer.
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(120), 40, 3) %*% matrix(rexp(45), 3, 15) +
#'   matrix(rnorm(600, sd = 0.3), 40, 15)
#' sel <- suppressWarnings(select_rank(X, ranks = 1:4, criterion = "bic"))
#' best(sel)
#' @export
best <- function(object, ...) UseMethod("best")

#' @rdname best
#' @export
best.bnmf_rank <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "best")
  object$best
}

#' @rdname best
#' @export
best.default <- function(object, ...) {
  abort_input(sprintf("`object` must be made by `select_rank()`, not an object of class %s.",
                      class(object)[1L]))
}

# The held-out error of cross-validation: the MSE, or for counts the mean
# Poisson deviance.
cv_loss_name <- function(x) if (identical(x$likelihood, "poisson")) "Poisson deviance" else "MSE"

rank_title <- function(x) {
  counts <- if (identical(x$likelihood, "poisson")) ", counts (Poisson)" else ""
  paste0(switch(x$criterion,
    chib = "Rank selection by Chib's marginal likelihood (Gibbs fits)",
    evidence = if (x$method == "gibbs") "Rank selection by the evidence: Chib's estimate of log p(X) (Gibbs fits)" else
      "Rank selection by the evidence: the ELBO of VB fits (a lower bound on log p(X))",
    bic = if (identical(x$likelihood, "poisson")) "Rank selection by BIC (VB fits; df = (I + J) K)" else
      "Rank selection by BIC (ICM fits; df = non-zeros of the MAP estimate + 1)",
    cv = sprintf("Rank selection by %s%d-fold cross-validation (method \"%s\")",
                 if (!is.null(x$nested)) sprintf("nested (%d inner folds) ", x$nested$inner_folds) else "",
                 ncol(x$fold_mse), x$method),
    ard = sprintf("Rank selection by ARD (method \"%s\", rank %s)", x$method, rank_text(x, "max"))),
    counts)
}

rank_rule <- function(x) {
  switch(x$criterion,
    chib = "largest log marginal likelihood",
    evidence = if (x$method == "gibbs") "largest log marginal likelihood" else "largest ELBO",
    bic = "smallest BIC, i.e. largest -BIC/2",
    cv = if (!is.null(x$nested)) "chosen most often by the inner cross-validations" else
      if (identical(x$rule, "1se")) sprintf("smallest rank within one standard error of the smallest mean held-out %s", cv_loss_name(x)) else
      sprintf("smallest mean held-out %s", cv_loss_name(x)),
    ard = "number of active factors")
}

#' @export
print.bnmf_rank <- function(x, digits = 4, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(rank_title(x), "\n", sep = "")
  cat(sprintf("  X: %d x %d; ranks %s\n", x$dims[1L], x$dims[2L],
              paste(rank_text(x), collapse = ", ")))
  print_rank_table(rank_table(x), digits)
  if (!is.null(x$nested)) {
    cat(sprintf("Nested CV: ranks chosen by the outer folds %s; outer test MSE %s (se %s)\n",
                paste(x$nested$outer$rank, collapse = ", "),
                format(signif(x$nested$mse, digits)), format(signif(x$nested$se, digits))))
  }
  cat(sprintf("Chosen rank: %s (%s)\n", rank_text(x, "best"), rank_rule(x)))
  invisible(x)
}

# The table of a rank selection for print() and summary(): for Chib's
# estimates ("chib", or "evidence" of Gibbs fits) with `min_ess`, the
# smallest effective sample size of a block's average at each rank (see
# marginal_likelihood()).
rank_table <- function(x) {
  tab <- x$table
  if (!is.null(x$marglik) && length(x$marglik) == nrow(tab)) {
    tab$min_ess <- vapply(x$marglik, function(m) {
      e <- m$blocks$ess
      if (length(e)) min(e) else NA_real_
    }, numeric(1), USE.NAMES = FALSE)
  }
  tab
}

# Print a rank table: doubles to `digits` significant digits, non-finite
# numbers as NA with a note, and for "chib" the hint of marginal_likelihood()
# when a block's effective sample size is below 100.
print_rank_table <- function(tab, digits) {
  tab <- finite_table(tab)
  num <- vapply(tab, is.double, logical(1))
  tab[num] <- lapply(tab[num], signif, digits = digits)
  if (!is.null(tab$min_ess)) tab$min_ess <- round(tab$min_ess)
  print(tab, row.names = FALSE)
  low <- if (!is.null(tab$min_ess)) tab$rank[which(tab$min_ess < 100)] else integer()
  if (length(low)) {
    cat(sprintf("min_ess (smallest effective sample size of a block's average) below 100 at rank %s\n",
                paste(low, collapse = ", ")))
    cat_low_ess_hint()
  }
  cat_notes(attr(tab, "note"))
}

#' Summarise and plot a rank selection
#'
#' `summary()` collects the table of the criterion by rank (for `"chib"` with
#' `min_ess`, the smallest effective sample size of a block's average in
#' [marginal_likelihood()]; below 100 the standard error may understate the
#' error), the chosen rank
#' and the details of the criterion (per-fold errors for cross-validation,
#' the outer folds of nested cross-validation, the factors of the ARD fit).
#' `plot()` shows the criterion against the rank with error bars (for
#' `"chib"` +/- 2 Monte Carlo standard errors; for `"cv"` the mean held-out
#' error +/- 1 standard error over the folds, with the error of each fold in
#' grey) and marks the chosen rank; for `"ard"` it shows each factor's
#' contribution to `W %*% H` in units of the noise sd, with the line at 0.1
#' below which a factor counts as switched off.
#'
#' @param object,x A `bnmf_rank` object made by [select_rank()].
#' @param digits Significant digits to print.
#' @param ... Passed to [graphics::plot()] (or [graphics::barplot()] for
#'   `"ard"`); not used by `summary()`.
#' @return `summary()`: an object of class `summary.bnmf_rank`; `plot()`:
#'   `x`, invisibly.
#' @examples
#' set.seed(1)
#' X <- matrix(rexp(120), 40, 3) %*% matrix(rexp(45), 3, 15) +
#'   matrix(rnorm(600, sd = 0.3), 40, 15)
#' sel <- suppressWarnings(select_rank(X, ranks = 1:4, criterion = "cv",
#'                                     method = "vb", folds = 3))
#' summary(sel)
#' plot(sel)
#' @export
summary.bnmf_rank <- function(object, ...) {
  check_dots_empty(list(...), names(formals()), "summary")
  out <- list(title = rank_title(object), rule = rank_rule(object),
              criterion = object$criterion, method = object$method,
              dims = object$dims, ranks = object$ranks, best = object$best,
              table = rank_table(object), elapsed = object$elapsed)
  if (object$criterion == "cv") {
    out$loss <- cv_loss_name(object)
    out$fold_mse <- object$fold_mse
    out$n_test <- object$n_test
    out$never_tested <- sum(object$folds == 0L)
    out$nested <- object$nested
  }
  if (object$criterion == "bic") out$nobs <- object$nobs
  structure(out, class = "summary.bnmf_rank")
}

#' @rdname summary.bnmf_rank
#' @export
print.summary.bnmf_rank <- function(x, digits = 4, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  digits <- check_count(digits, "digits", min = 1)
  cat(x$title, "\n", sep = "")
  cat(sprintf("  X: %d x %d; ranks %s; %.1f s\n\n", x$dims[1L], x$dims[2L],
              paste(rank_text(x), collapse = ", "), x$elapsed))
  print_rank_table(x$table, digits)
  if (x$criterion == "bic") {
    cat(sprintf("\nBIC = -2 loglik + df log(n), n = %d observed entries\n", x$nobs))
  }
  if (x$criterion == "cv") {
    cat(sprintf("\nHeld-out %s by rank (rows) and fold (columns); test entries per fold %s%s:\n",
                x$loss %||% "MSE",
                paste(x$n_test, collapse = ", "),
                if (x$never_tested) sprintf(", %d never tested", x$never_tested) else ""))
    print(signif(x$fold_mse, digits))
    if (!is.null(x$nested)) {
      cat(sprintf("\nNested CV (%d inner folds): inner mean MSE by rank (rows) and outer fold (columns):\n",
                  x$nested$inner_folds))
      print(signif(x$nested$inner_mse, digits))
      cat("Rank chosen by each outer fold and its outer test MSE:\n")
      o <- x$nested$outer
      o$mse <- signif(o$mse, digits)
      print(o, row.names = FALSE)
      cat(sprintf("Nested CV estimate of the prediction error: %s (se %s)\n",
                  format(signif(x$nested$mse, digits)), format(signif(x$nested$se, digits))))
    }
  }
  cat(sprintf("\nChosen rank: %s (%s)\n", rank_text(x, "best"), x$rule))
  invisible(x)
}

#' @rdname summary.bnmf_rank
#' @export
plot.bnmf_rank <- function(x, ...) {
  check_dots_graphics(list(...))
  if (x$criterion != "ard" && is.null(list(...)$main)) {
    crit <- c(chib = "Chib's marginal likelihood", bic = "BIC", cv = "cross-validation",
              evidence = "evidence")[[x$criterion]]
    return(plot.bnmf_rank(x, main = sprintf("Rank selection by %s", crit), ...))
  }
  if (x$criterion == "ard") {
    tab <- x$table
    if (!is.null(tab$gain)) {
      # Gaussian models: the gain in fit, with the cut of summary()
      cut <- ard_gain_cut(x$dims[1L], x$dims[2L])
      gain <- pmax(tab$gain, 1e-3)
      graphics::barplot(gain, names.arg = tab$factor, log = "y",
                        col = ifelse(tab$active, "grey30", "grey80"), border = NA,
                        ylab = "gain in fit / noise variance",
                        ylim = c(min(gain, 1) / 2, max(gain, 10 * cut) * 2),
                        main = sprintf("ARD: %s of %d factors active",
                                       paste(x$best, collapse = " + "), nrow(tab)), ...)
      graphics::abline(h = cut, lty = 2)
      return(invisible(x))
    }
    sig <- pmax(tab$signal, 1e-6)
    graphics::barplot(sig, names.arg = tab$factor, log = "y",
                      col = ifelse(tab$active, "grey30", "grey80"), border = NA,
                      ylab = "mean contribution / noise sd",
                      ylim = c(min(sig, 1e-2) / 2, max(sig, 1) * 2),
                      main = sprintf("ARD: %s of %d factors active",
                                     paste(x$best, collapse = " + "), nrow(tab)), ...)
    graphics::abline(h = 0.1, lty = 2)
    return(invisible(x))
  }
  tab <- x$table
  r <- if (is.matrix(x$ranks)) seq_len(nrow(x$ranks)) else tab$rank
  spec <- switch(x$criterion,
    chib = list(y = tab$logml, lo = tab$logml - 2 * tab$se, hi = tab$logml + 2 * tab$se,
                lab = "log marginal likelihood (+/- 2 se)"),
    bic = list(y = tab$value, lo = NULL, hi = NULL, lab = "-BIC / 2"),
    evidence = if (is.null(tab$elbo)) {
      list(y = tab$logml, lo = tab$logml - 2 * tab$se, hi = tab$logml + 2 * tab$se,
           lab = "log marginal likelihood (+/- 2 se)")
    } else list(y = tab$elbo, lo = NULL, hi = NULL, lab = "ELBO (a lower bound on log p(X))"),
    # the held-out error: mse, or deviance for counts (not the L of a pair)
    cv = list(y = tab$deviance %||% tab$mse, lo = (tab$deviance %||% tab$mse) - tab$se,
              hi = (tab$deviance %||% tab$mse) + tab$se,
              lab = sprintf("held-out %s (+/- 1 se)", cv_loss_name(x))))
  yr <- range(c(spec$y, spec$lo, spec$hi, if (x$criterion == "cv") x$fold_mse),
              finite = TRUE)
  graphics::plot(r, spec$y, type = "b", pch = 19, ylim = yr, xaxt = "n",
                 xlab = if (is.matrix(x$ranks)) "rank (K x L)" else "rank", ylab = spec$lab, ...)
  graphics::axis(1, at = r, labels = rank_text(x))
  if (x$criterion == "cv") {
    graphics::matlines(r, x$fold_mse, lty = 1, col = "grey75")
    graphics::lines(r, spec$y, type = "b", pch = 19)
  }
  if (!is.null(spec$lo)) {
    ok <- is.finite(spec$lo) & is.finite(spec$hi) & spec$hi > spec$lo
    if (any(ok)) {
      graphics::arrows(r[ok], spec$lo[ok], r[ok], spec$hi[ok], angle = 90, code = 3,
                       length = 0.05)
    }
  }
  b <- match(rank_text(x, "best"), rank_text(x))
  graphics::abline(v = r[b], lty = 2, col = "red")
  graphics::points(r[b], spec$y[b], pch = 21, cex = 2, col = "red", lwd = 2)
  graphics::legend("topright", legend = sprintf("chosen: %s", rank_text(x, "best")), bty = "n",
                   text.col = "red")
  invisible(x)
}

# ---- Tri-factorisation ranks: (K, L) pairs ----------------------------------

# NULL for NMF ranks (a plain vector), else the candidate pairs as an integer
# matrix with columns K and L, checked: a list of length-2 vectors or a
# two-column matrix, whole numbers from 1 to min(nrow(X), ncol(X)), no
# duplicate pair; only criteria "cv" and "ard".
check_rank_pairs <- function(ranks, I, J, criterion) {
  if (is.list(ranks) && !is.data.frame(ranks)) {
    if (!length(ranks) || !all(vapply(ranks, function(r) is.numeric(r) && length(r) == 2L,
                                      logical(1)))) {
      abort_input("`ranks` given as a list must hold (K, L) pairs: numeric vectors of length 2.")
    }
    ranks <- do.call(rbind, lapply(ranks, as.numeric))
  } else if (!is.matrix(ranks)) {
    return(NULL)
  }
  if (!is.numeric(ranks) || ncol(ranks) != 2L || !nrow(ranks) || anyNA(ranks) ||
      any(!is.finite(ranks)) || any(ranks != round(ranks)) || any(ranks < 1)) {
    abort_input("`ranks` as (K, L) pairs must be a two-column matrix (or a list of pairs) of whole numbers >= 1.")
  }
  if (any(ranks > min(I, J))) {
    abort_input(sprintf("`ranks`: K and L must be at most min(nrow(X), ncol(X)) = %d.", min(I, J)))
  }
  if (anyDuplicated(ranks)) abort_input("`ranks` must not contain duplicate (K, L) pairs.")
  if (!criterion %in% c("cv", "ard")) {
    abort_input(sprintf("`ranks`: (K, L) pairs take criterion \"cv\" or \"ard\", not \"%s\".",
                        criterion))
  }
  out <- matrix(as.integer(ranks), ncol = 2L, dimnames = list(NULL, c("K", "L")))
  out[order(out[, 1L], out[, 2L]), , drop = FALSE]
}

# The result of a selection over numbered pairs, in terms of the pairs.
pair_result <- function(out, pairs, criterion) {
  lab <- paste0(pairs[, 1L], "x", pairs[, 2L])
  if (criterion == "ard") {
    # The ARD fit at the largest K and L: the active factors of F and of G.
    tab <- out$table
    out$best <- c(K = sum(tab$active & tab$matrix == "F"), L = sum(tab$active & tab$matrix == "G"))
    return(out)
  }
  idx <- out$table$rank
  out$table <- data.frame(K = pairs[idx, 1L], L = pairs[idx, 2L],
                          out$table[setdiff(names(out$table), "rank")])
  out$best <- pairs[out$best, ]
  if (!is.null(out$fold_mse)) rownames(out$fold_mse) <- lab[idx]
  if (!is.null(out$nested)) {
    rownames(out$nested$inner_mse) <- lab[idx]
    out$nested$outer$rank <- lab[out$nested$outer$rank]
  }
  if (!is.null(out$fits)) names(out$fits) <- lab[idx]
  out
}

# Relevance of the factors of an NMTF fit under ARD, as ard_relevance() for
# NMF: signal, the mean contribution of column k of F to an entry of F S G'
# (the terms F[, k] S[k, ] G'), and of column l of G (the terms F S[, l]
# G[, l]'), in units of the noise sd; gain, what the column adds to the fit
# beyond the larger columns of its matrix (ard_gain() of the NMF F (S G')
# for F, (F S) G' for G), in noise variances; active when the gain exceeds
# ard_gain_cut(I, J).
nmtf_ard_relevance <- function(fit) {
  fa <- factors(fit)
  cF <- colSums(fa$F)
  cG <- colSums(fa$G)
  mass <- c(cF * as.vector(fa$S %*% cG), cG * as.vector(crossprod(fa$S, cF)))
  sd <- sigma(fit)
  signal <- mass / prod(fit$dims) / sd
  gain <- c(ard_gain(fit$X, fa$F, fa$S %*% t(fa$G), sd),
            ard_gain(fit$X, fa$F %*% fa$S, t(fa$G), sd))
  side <- rep(c("F", "G"), c(length(cF), length(cG)))
  lam <- fit$lambda
  data.frame(matrix = side, factor = c(paste0("k", seq_along(cF)), paste0("l", seq_along(cG))),
             lambda = if (is.list(lam)) c(lam$F, lam$G) else NA_real_,
             share = mass / stats::ave(mass, side, FUN = sum), signal = signal, gain = gain,
             active = gain > ard_gain_cut(fit$dims[1L], fit$dims[2L]))
}

# The ranks of a selection as text ("3" or "3x2"): all of them, the largest
# (per column for pairs) or the chosen one.
rank_text <- function(x, which = c("all", "max", "best")) {
  which <- match.arg(which)
  r <- x$ranks
  if (!is.matrix(r)) {
    return(as.character(switch(which, all = r, max = max(r), best = x$best)))
  }
  switch(which, all = paste0(r[, 1L], "x", r[, 2L]),
         max = paste0(max(r[, 1L]), "x", max(r[, 2L])),
         best = paste0(x$best[1L], "x", x$best[2L]))
}
