#' Bayesian non-negative matrix factorisation
#'
#' Factorises a non-negative data matrix `X` (features x samples, I x J) as
#' `X ~ W H` with `W` (I x K, the basis) and `H` (K x J, the coefficients),
#' under the Bayesian model of Schmidt, Winther and Hansen (2009): for every
#' observed entry
#' \deqn{X_{ij} \sim N((WH)_{ij}, 1/\tau), \quad W_{ik} \sim Exp(\lambda),
#'   \quad H_{kj} \sim Exp(\lambda), \quad \tau \sim Gamma(\alpha, \beta)}
#' (rates, not scales, throughout). `NA` entries of `X` are missing: they are
#' left out of the likelihood (never treated as zero) and predicted by the fit.
#'
#' @section Methods:
#' * `"gibbs"`: the Gibbs sampler of Schmidt et al. (Algorithm 1). Each
#'   column of `W` and row of `H` is drawn from its exact truncated-normal
#'   conditional ([rtnorm()]), `tau` from its Gamma conditional. A sweep costs
#'   the two products `X %*% t(H)` and `t(W) %*% X` plus O((I + J) K^2). Missing
#'   entries are latent variables redrawn each sweep (exact, and as fast as
#'   complete data). The fit keeps running posterior means and standard
#'   deviations of `W`, `H`, `tau` and `W %*% H` (the posterior mean of the
#'   product, not the product of the means).
#' * `"icm"`: iterated conditional modes (Algorithm 2): each block is set to
#'   the mode of its conditional, so the log posterior never decreases and the
#'   iteration stops at a local maximum of the joint posterior (a
#'   Karush-Kuhn-Tucker point of the MAP problem) when its relative change
#'   falls below `tol`. The mode is local: the joint posterior also has a
#'   degenerate mode at `W = 0, H = 0` (on tiny or very noisy data it can even
#'   be the higher one), which the random start (improved by least squares)
#'   keeps ICM away from; use several `chains` to compare local modes. With
#'   missing data the conditionals use the observed entries only (masked Gram
#'   matrices). A flat prior
#'   (`exponential(rate = 0)`) turns ICM into exact coordinate-descent
#'   non-negative least squares.
#' * `"vb"`: variational Bayes (Brouwer, Frellsen and Lio 2017). The
#'   posterior is approximated by independent factors
#'   \eqn{q(W_{ik}) q(H_{kj}) q(\tau)}: each entry of `W` and `H` a truncated
#'   normal, `tau` a Gamma (and each ARD rate a Gamma). Coordinate ascent
#'   updates each factor to the optimum given the others (the same truncated
#'   normal as the Gibbs conditional, with expectations in place of the other
#'   variables), so the evidence lower bound ([elbo()]) never decreases; the
#'   iteration stops when its relative change is at most `tol`. Fast and
#'   deterministic, with posterior standard deviations that are typically too
#'   small (mean-field VB ignores the posterior correlations).
#' * `"np"`: non-probabilistic NMF by the multiplicative updates of Lee and
#'   Seung (2001), on the observed entries only, for the Euclidean loss
#'   \eqn{\sum_\Omega (X - WH)^2} or the generalised Kullback-Leibler
#'   divergence \eqn{\sum_\Omega X \log(X / WH) - X + WH} (`loss`); the loss
#'   never increases. No prior, no uncertainty: posterior summaries are not
#'   available for these fits. Needs `X >= 0`.
#'
#' @section Particles:
#' `method = "particles"` approximates the posterior of a different model by
#' a weighted set of M factorisations (Masood and Doshi-Velez, Algorithm 1).
#' The likelihood is a soft insensitive loss on an NMF objective ([silf()]:
#' every factorisation good enough under the objective is equally likely),
#' every column of `W` has a Dirichlet(1) prior (so `W` is column-stochastic)
#' and every entry of `H` an exponential prior (`prior = exponential(rate)`;
#' `"auto"` means rate 1, the paper's choice). The M candidates start from
#' `init`: `"qtransform"` (the default for this method: the shipped
#' transformation pairs of [qtransform_pairs()] applied to the top SVD
#' factors of `X`; or pairs you made with it), `"random"` (entries
#' `sqrt(mean(X) / rank) |N(0, 1)|`), `"nndsvd"` (deterministic, so every
#' candidate is the same) or `"nndsvdar"`; each is solved to convergence
#' (`tol`, at most `iter` sweeps) by coordinate-descent non-negative least
#' squares (ICM with a flat prior), rescaled so that the columns of `W` sum to
#' one, and weighted by minimising the kernel Stein discrepancy over the
#' simplex ([stein_discrepancy()]). `X` must be dense, complete and
#' non-negative. See [weights.bnmf_particles()] and
#' [summary.bnmf_particles()].
#'
#' @section HMC:
#' `method = "hmc"` samples the posterior of the particle model (SILF
#' likelihood, Dirichlet(1) columns of `W`, Exp(`rate`) entries of `H`) by
#' Hamiltonian Monte Carlo, the MCMC baseline of Masood and Doshi-Velez
#' (section 6.2). The simplex constraint is a reparametrisation: `W[, k] =
#' V[, k] / sum(V[, k])` with `V_ik ~ Exp(1)` independently makes every column
#' Dirichlet(1) (the scale `sum(V[, k])` is an independent Gamma(I, 1)
#' variable, redrawn exactly after every transition); positivity of `V` and
#' `H` is kept by reflecting the leapfrog at 0 (position mirrored, momentum
#' flipped). Every chain starts from a warm start: with `init = "random"` a
#' random start solved by non-negative least squares (at most
#' `hmc_control()$solver_iter` sweeps, tolerance `tol`), or given factors
#' (`init = list(W =, H =)`, or one such list per chain) used as they are.
#' With `silf(epsilon = NULL)` the threshold is 1.2 times the largest
#' objective among the warm starts (give `epsilon` when the warm start fits
#' `X` exactly). The first `burnin` iterations (default `iter / 2`) adapt the
#' step size (dual averaging towards `hmc_control()$target` acceptance) and,
#' by default, a diagonal mass matrix; they are then frozen, and every
#' `thin`-th later draw is kept. Chains run one after the other in this R
#' process with the session's random numbers (`set.seed()` reproduces the
#' fit). `X` must be dense, complete and non-negative. The SILF likelihood
#' acts on the objective in the units of `X`: the posterior puts the
#' objective some K(I + J) / (2C) or more above its minimum (the volume of
#' the parameter space grows with it), which is negligible when `epsilon` is
#' large against it but not for data of small magnitude (scale `X` up, or
#' raise `C`). See [hmc_control()],
#' [factors.bnmf_hmc()], [summary.bnmf_hmc()] and [stein_discrepancy()].
#'
#' @section Chains and reproducibility:
#' Chains (for ICM: restarts, of which the fit with the highest log posterior
#' is kept) are independent tasks, each with its own L'Ecuyer-CMRG random
#' number stream derived from one draw of the session's random numbers, so
#' `set.seed()` before the call reproduces the fit exactly. Under the default
#' sequential [future::plan()] the chains run one after the other in this R
#' process; under any other plan (e.g. `future::plan(future::multisession)`)
#' they run as futures via [future.apply::future_lapply()], with the same
#' streams and therefore the same results. Before their posterior moments are
#' pooled, the factors of every chain are matched to those of the first chain
#' (the posterior does not change when factors are permuted). [update()]
#' continues every chain from its last state and random number stream.
#'
#' @param X A numeric matrix (features in rows, samples in columns), a
#'   numeric data frame, or a `Matrix::dgCMatrix` (whose zeros are observed
#'   zeros; only its stored `NA`s are missing). Or a formula `X ~ nmf(rank)`.
#' @param rank The number of factors `K`, between 1 and `min(dim(X))`.
#' @param method `"gibbs"` (posterior sampling), `"vb"` (variational Bayes),
#'   `"icm"` (posterior mode), `"np"` (Lee-Seung multiplicative updates) or
#'   `"particles"` (a Stein-weighted set of factorisations; see the section
#'   Particles) or `"hmc"` (Hamiltonian Monte Carlo on the particle model;
#'   see the section HMC).
#' @param prior Prior of the factors: [exponential()] or [ard()] (automatic
#'   relevance determination). Not used by `"np"` and `"particles"`.
#' @param noise Prior of the noise precision `tau`: [gamma_prior()].
#' @param iter Number of sweeps per chain, burn-in included (Gibbs, HMC;
#'   default 2000), or the maximum number of sweeps (ICM, VB, NP; default 1000).
#' @param burnin Sweeps discarded at the start of each chain (Gibbs; HMC:
#'   the warm-up; default `iter / 2`).
#' @param thin Keep every `thin`-th sweep after burn-in (Gibbs, HMC).
#' @param chains Number of independent chains (Gibbs, HMC) or restarts (ICM, VB,
#'   NP; the restart with the highest log posterior, ELBO, or lowest loss is
#'   kept).
#' @param init `"random"`: entries `sqrt(mean(X) / K)` times unit
#'   exponentials, improved by 10 sweeps of non-negative least squares; or a
#'   list with matrices `W` (I x K), `H` (K x J) and optionally `tau` (by
#'   default its conditional mode given `W` and `H`); or a list of such lists,
#'   one per chain.
#' @param tol ICM, VB and NP stop when the relative change of the log
#'   posterior (ICM), the ELBO (VB) or the loss (NP) between sweeps is at
#'   most `tol`.
#' @param keep `"summary"` keeps running posterior means and standard
#'   deviations; `"draws"` also keeps the thinned draws of `W` and `H` (see
#'   [as.mcmc.bnmf()]).
#' @param loss For `method = "np"`: `"euclidean"` (squared error) or `"kl"`
#'   (generalised Kullback-Leibler divergence, as in the paper of Brouwer et
#'   al.).
#' @param progress Show a progress bar (for fits that take more than a couple
#'   of seconds).
#' @param data For the formula interface: where to find the variable on the
#'   left side (default: the formula's environment).
#' @param particles Method `"particles"`: the number M of candidate
#'   factorisations.
#' @param likelihood Methods `"particles"` and `"hmc"`: the likelihood, made
#'   by [silf()].
#' @param control Method `"hmc"`: tuning of the sampler, made by
#'   [hmc_control()].
#' @return An object of class `c("bnmf_<method>", "bnmf")`; see [factors()], [fitted.bnmf()],
#'   [predict.bnmf()], [summary.bnmf()], [plot.bnmf()].
#' @references
#' Schmidt, M. N., Winther, O. and Hansen, L. K. (2009). Bayesian non-negative
#' matrix factorization. *Independent Component Analysis and Signal
#' Separation*, LNCS 5441, 540-547. \doi{10.1007/978-3-642-00599-2_68}
#'
#' Brouwer, T., Frellsen, J. and Lio, P. (2017). Comparative study of
#' inference methods for Bayesian nonnegative matrix factorisation. *Machine
#' Learning and Knowledge Discovery in Databases (ECML PKDD)*, LNCS 10534,
#' 513-529. \doi{10.1007/978-3-319-71249-9_31}
#'
#' Lee, D. D. and Seung, H. S. (2001). Algorithms for non-negative matrix
#' factorization. *Advances in Neural Information Processing Systems* 13,
#' 556-562.
#' @examples
#' X <- leukemia[1:100, ]
#' set.seed(1)
#' fit <- bnmf(X, rank = 3, method = "gibbs", iter = 400)
#' fit
#' summary(fit)
#'
#' # The posterior mode, and the formula interface
#' map <- bnmf(X ~ nmf(3), method = "icm")
#' sigma(map)
#'
#' # Variational Bayes with ARD: fit more factors than needed
#' vb <- bnmf(X ~ nmf(6, prior = ard()), method = "vb")
#' summary(vb)
#' tail(elbo(vb))
#'
#' # Lee-Seung multiplicative updates
#' np <- bnmf(X, rank = 3, method = "np", loss = "kl")
#'
#' # Missing entries are predicted
#' Xm <- X
#' Xm[sample(length(Xm), 500)] <- NA
#' fit_m <- bnmf(Xm, rank = 3, iter = 400)
#' pred <- predict(fit_m)
#' @export
bnmf <- function(X, rank = NULL, method = c("gibbs", "vb", "icm", "np", "particles", "hmc"),
                 prior = exponential(), noise = gamma_prior(), iter = NULL,
                 burnin = NULL, thin = 1, chains = 1, init = "random",
                 tol = 1e-6, keep = c("summary", "draws"),
                 loss = c("euclidean", "kl"),
                 progress = interactive(), data = NULL, particles = 20,
                 likelihood = silf(), control = hmc_control()) {
  call <- match.call()
  method <- check_choice(method, c("gibbs", "vb", "icm", "np", "particles", "hmc"), "method")
  if (method == "np" && (!missing(prior) || !missing(noise))) {
    abort_input("`prior`, `noise`: method \"np\" (Lee-Seung multiplicative updates) has no prior; use method \"icm\" or \"vb\" for a prior.")
  }
  if (method != "hmc" && !missing(control)) abort_input("`control` applies to method \"hmc\" only.")
  spec <- parse_model(X, rank, prior, data, parent.frame())
  if (method == "particles") {
    return(fit_particles(spec, if (missing(init)) "qtransform" else init, particles,
                         likelihood, tol, iter, progress, call))
  }
  if (method == "hmc") {
    unused <- c(noise = !missing(noise), keep = !missing(keep), loss = !missing(loss),
                particles = !missing(particles))
    if (any(unused)) {
      abort_input(sprintf("%s: not used by method \"hmc\".",
                          paste0("`", names(unused)[unused], "`", collapse = ", ")))
    }
    return(fit_hmc(spec, init, likelihood, iter, burnin, thin, chains, tol, progress,
                   control, call))
  }
  if (method != "np" && !missing(loss)) {
    abort_input(sprintf("`loss` applies to method \"np\" only, not \"%s\" (the Bayesian methods have a Gaussian likelihood).", method))
  }
  keep <- check_choice(keep, c("summary", "draws"), "keep")
  loss <- check_choice(loss, c("euclidean", "kl"), "loss")
  X <- check_data_matrix(spec$X)
  I <- nrow(X)
  J <- ncol(X)
  K <- spec$rank
  if (K > min(I, J)) {
    abort_input(sprintf("`rank` must be at most min(nrow(X), ncol(X)) = %d, not %d.",
                        min(I, J), K))
  }
  prior <- spec$prior
  if (!inherits(prior, "bnmf_prior")) abort_input("`prior` must be made by `exponential()` or `ard()`.")
  if (method == "np" && identical(prior$type, "ard")) {
    abort_input("`prior`: method \"np\" (Lee-Seung multiplicative updates) has no prior; use method \"icm\", \"vb\" or \"gibbs\" for ARD.")
  }
  if (!inherits(noise, "bnmf_noise")) abort_input("`noise` must be made by `gamma_prior()`.")
  settings <- check_settings(method, iter, burnin, thin, chains, tol, keep, progress)
  settings$loss <- if (method == "np") loss else NULL
  data_c <- prepare_data(X, K)
  check_signs(X, method)
  mean_x <- data_c$sum_obs / data_c$n_obs
  rates <- if (method == "np") {
    list(lamW = matrix(0, I, K), lamH = matrix(0, K, J), rate = 0, auto = FALSE,
         ard = numeric())
  } else {
    resolve_rates(prior, I, J, K, mean_x, method)
  }
  prior_c <- list(lamW = rates$lamW, lamH = rates$lamH,
                  alpha = noise$shape, beta = noise$rate, ard = rates$ard)
  starts <- make_starts(init, settings$chains, I, J, K)

  runs <- run_chains(X, data_c, prior_c, method, settings, starts,
                     seeds = TRUE)
  fit <- new_bnmf_fit(runs, X, data_c, method, K, rates, noise, settings, call)
  validate_bnmf_fit(fit)
}

# The formula interface: `X ~ nmf(rank, prior)`, read by bnmf itself.
parse_model <- function(X, rank, prior, data, env) {
  if (!inherits(X, "formula")) {
    if (is.null(rank)) abort_input("`rank` is missing: give the number of factors, e.g. `rank = 5`.")
    return(list(X = X, rank = check_count(rank, "rank", min = 1), prior = prior))
  }
  f <- X
  if (length(f) != 3L) abort_input("`X`: the formula must have a data matrix on its left side, as in `X ~ nmf(5)`.")
  fenv <- environment(f) %||% env
  lhs <- eval(f[[2L]], if (is.null(data)) fenv else data, fenv)
  rhs <- f[[3L]]
  if (!is.call(rhs) || !identical(rhs[[1L]], as.name("nmf"))) {
    abort_input(sprintf("`X`: the right side of the formula must be `nmf(rank)`, not `%s`.",
                        deparse1(rhs)))
  }
  terms_env <- new.env(parent = fenv)
  terms_env$nmf <- nmf
  model <- eval(rhs, terms_env)
  if (!is.null(rank) && !identical(as.integer(rank), model$rank)) {
    abort_input("`rank` is given both in the formula and as an argument; give it once.")
  }
  list(X = lhs, rank = model$rank, prior = model$prior %||% prior)
}

`%||%` <- function(a, b) if (is.null(a)) b else a

check_settings <- function(method, iter, burnin, thin, chains, tol, keep, progress) {
  iter <- check_count(iter %||% if (method == "gibbs") 2000L else 1000L, "iter", min = 1)
  thin <- check_count(thin, "thin", min = 1)
  chains <- check_count(chains, "chains", min = 1)
  tol <- check_number(tol, "tol", 0)
  progress <- check_flag(progress, "progress")
  if (method == "gibbs") {
    burnin <- check_count(burnin %||% (iter %/% 2L), "burnin", min = 0)
    if (burnin >= iter) {
      abort_input(sprintf("`burnin` (%d) must be smaller than `iter` (%d).", burnin, iter))
    }
    n_keep <- (iter - burnin) %/% thin
    if (n_keep < 1L) {
      abort_input(sprintf("`thin` (%d) leaves no draw after burn-in: (iter - burnin) / thin must be >= 1.",
                          thin))
    }
    iter <- burnin + n_keep * thin
  } else {
    if (!is.null(burnin) && burnin != 0) abort_input("`burnin` applies to method \"gibbs\" only.")
    burnin <- 0L
    if (thin != 1L) abort_input("`thin` applies to method \"gibbs\" only.")
    if (keep == "draws") abort_input("`keep`: \"draws\" applies to method \"gibbs\" only.")
  }
  list(iter = iter, burnin = burnin, thin = thin, chains = chains, tol = tol,
       keep = keep, progress = progress)
}

check_signs <- function(X, method) {
  vals <- if (inherits(X, "dgCMatrix")) X@x else X
  if (!length(vals) || !isTRUE(min(vals, na.rm = TRUE) < 0)) return(invisible())
  if (method == "np") {
    abort_input("`X` has negative entries; the multiplicative updates of method \"np\" need X >= 0 (the Gaussian methods \"gibbs\", \"vb\" and \"icm\" accept them).")
  }
  neg <- sum(vals < 0, na.rm = TRUE)
  if (neg > 0) {
    n <- if (inherits(X, "dgCMatrix")) prod(as.double(dim(X))) else sum(!is.na(vals))
    share <- neg / n
    if (share > 0.05) {
      warning(structure(
        class = c("bnmf_warning_negative", "warning", "condition"),
        list(message = sprintf("%.1f%% of the observed entries of `X` are negative; the Gaussian model allows them, but W %%*%% H can only fit non-negative values.",
                               100 * share), call = NULL)))
    }
  }
}

make_starts <- function(init, chains, I, J, K) {
  if (is.character(init)) {
    check_choice(init, "random", "init")
    return(rep(list(NULL), chains))
  }
  if (is.list(init) && !is.null(init$W)) {
    init <- check_init_list(init, I, J, K)
    return(rep(list(init[intersect(c("W", "H", "tau", "lambda"), names(init))]), chains))
  }
  if (is.list(init) && length(init) == chains && all(vapply(init, is.list, logical(1)))) {
    return(lapply(init, check_init_list, I = I, J = J, K = K))
  }
  abort_input("`init` must be \"random\", a list with matrices `W` and `H`, or a list of such lists, one per chain.")
}

# Run the chains, each with its own L'Ecuyer-CMRG random number stream.
# `seeds` is TRUE (new streams derived from the session's seed) or the list of
# the streams' states saved at the end of a previous run (to continue them).
# Under a sequential future plan (the default) the chains run in this process;
# otherwise they are futures. The streams are the same either way, and so are
# the results.
run_chains <- function(X, data, prior, method, settings, starts, seeds) {
  if (isTRUE(seeds)) seeds <- chain_streams(length(starts))
  sequential <- inherits(future::plan(), "sequential")
  progress <- settings$progress && sequential
  label <- c(gibbs = "Gibbs sampling", icm = "ICM", vb = "Variational Bayes",
             np = "Multiplicative updates")[[method]]
  one_chain <- function(c) {
    res <- run_chain(X, data, prior, method, settings$iter, settings$burnin,
                     settings$thin, settings$keep, settings$tol, starts[[c]],
                     progress = progress, masked = method != "gibbs",
                     loss = settings$loss %||% "euclidean",
                     label = if (length(starts) > 1L) sprintf("%s, chain %d", label, c) else label)
    res$seed <- get(".Random.seed", envir = globalenv())
    res
  }
  if (!sequential) {
    return(future.apply::future_lapply(seq_along(starts), one_chain, future.seed = seeds,
                                       future.packages = "bnmf"))
  }
  # In this process: switch to each chain's stream, then restore the session's.
  genv <- globalenv()
  old <- if (exists(".Random.seed", envir = genv, inherits = FALSE)) genv$.Random.seed
  on.exit(if (is.null(old)) rm(".Random.seed", envir = genv) else assign(".Random.seed", old, envir = genv))
  lapply(seq_along(starts), function(c) {
    assign(".Random.seed", seeds[[c]], envir = genv)
    one_chain(c)
  })
}

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
