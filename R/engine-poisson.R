# The Poisson likelihood: Bayesian Poisson-Gamma NMF (methods "vb",
# "gibbs") and sparse NMF with beta-process masks by structured stochastic
# VI (method "ssvi"). C code: src/pois_nmf.c, src/pois_ssvi.c.

#' @section Counts:
#' `likelihood = "poisson"` fits count data (a non-negative integer-valued
#' matrix or `dgCMatrix`; `NA` is missing) with
#' \deqn{X_{ij} \sim Poisson(\sum_k W_{ik} S^W_{ik} H_{kj} S^H_{kj}),\quad
#'   W_{ik} \sim Gamma(a, b),\quad H_{kj} \sim Gamma(c, d)}
#' (shape, rate; `prior = gamma_prior(shape, rate)` for both factors or
#' `list(W = gamma_prior(a, b), H = gamma_prior(c, d))`; the default
#' `exponential()` is `gamma_prior(1, "auto")`). A rate `"auto"` is
#' `shape * sqrt(K / mean(X))` over the observed entries, so that the prior
#' mean of every entry of `W H` is the mean of `X` when both shapes are equal.
#' `sparsity` adds binary masks with a finite beta-process prior,
#' \eqn{S^W_{ik} \sim Bernoulli(\pi^W_k)},
#' \eqn{\pi^W_k \sim Beta(a_0 / K, b_0 (K - 1) / K)} (the same for `H`;
#' `mask_prior = beta_process(a0, b0)`): `"none"` (all masks 1), `"coef"`
#' (a mask on `H`, the S-NMF of Liang and Hoffman) or `"both"` (DS-NMF).
#'
#' `prior = ard()` (methods `"vb"` and `"gibbs"`) gives each factor one
#' relevance rate shared by column `k` of `W` and row `k` of `H` (Tan and
#' Fevotte 2013, the model of SignatureAnalyzer, in conjugate form):
#' \deqn{W_{ik} \sim Gamma(a, \lambda_k),\quad H_{kj} \sim Gamma(c,
#'   \lambda_k),\quad \lambda_k \sim Gamma(\alpha_0, \beta_0),}
#' `a = c = 1` (exponential factors) or the shapes of `prior = list(W =
#' gamma_prior(a), H = gamma_prior(c), lambda = ard(alpha0, beta0))`. The
#' default `beta0` is `alpha0 * sqrt(mean(X) / (a c K))`, so that the prior
#' mean of `lambda_k` is the automatic rate above (see [ard()], The default
#' beta0). Gibbs draws, after `W` and `H` in every sweep,
#' \eqn{\lambda_k \sim Gamma(\alpha_0 + I a + J c, \beta_0 + \sum_i W_{ik} +
#' \sum_j H_{kj})}; `fit$lambda` is its posterior mean. VB has
#' \eqn{q(\lambda_k) = Gamma(\alpha_0 + I a + J c, \beta_0 + \sum_i E[W_{ik}] +
#' \sum_j E[H_{kj}])} (`fit$q`; `fit$lambda` its mean), updates `q(W)`,
#' `q(H)` with the rates \eqn{E[\lambda_k]}, and its ELBO (with the terms of
#' `lambda`) never decreases. `summary()` adds, per factor, `lambda`,
#' `signal` and `active`: `signal` is the Pearson chi-square of the counts
#' the factor adds to the fit, \eqn{\sum_{ij} (W_{ik} H_{kj})^2 / (W H)_{ij}}
#' over the observed entries (at the posterior means), which is how far the
#' fitted counts would move without the factor, in units of their Poisson
#' variance; a factor is `active` when its signal exceeds `I + J - 1`, the
#' number of free parameters of a rank-one term: a term fitted to pure
#' Poisson noise moves the fit by about that much (a chi-square with `I + J
#' - 1` degrees of freedom), so a factor below it is not told apart from
#' noise. A factor that ARD switches off keeps a small mass set by the prior
#' (its rate \eqn{\lambda_k} grows until its entries are of the order of
#' \eqn{a / \lambda_k}), with a signal far below 1; one the data need is far
#' above `I + J` (`plot(fit, type = "ard")` draws the signals on a log
#' scale). `select_rank(criterion = "ard", likelihood = "poisson")`
#' counts the active factors of a VB fit at the largest rank. VB prunes:
#' its updates starve a factor that explains few counts (the geometric
#' means \eqn{\exp E[\log W]} of `q(Z)`). The exact posterior sampled by
#' Gibbs, with exponential factors, need not: the likelihood sees only the
#' sum of the factors, and redundant factors can go on sharing the counts
#' of the needed ones. From random starts a Gibbs chain usually spreads the
#' counts over most of the factors (on counts of rank 4 with 10 factors,
#' 6 to 10 active after 1000 sweeps); started at a VB fit (`init = list(W =
#' fit$W, H = fit$H)`) it may stay near the pruned solution on structured
#' counts (4 active there), but on counts of a constant rate, where VB
#' keeps one factor, it spreads them over several within a few hundred
#' sweeps. So a Gibbs fit's relevance table often reports redundant factors
#' as active: use VB for the number of factors. Restarts (`chains`) help VB: a local
#' optimum that splits a factor in two has a lower ELBO, and the restart
#' with the highest ELBO is kept. ARD does not combine with masks (method
#' `"ssvi"`), nor with [marginal_likelihood()].
#'
#' On sparse counts with many factors (single cells: tens of counts a cell,
#' 20 programmes), VB from the default random start can stop in a poor
#' local optimum far from the factors the data support, and restarts rarely
#' leave it. So VB and Gibbs start from the samples' clusters
#' (`init = "spectral"`, their default but with ARD, whose K clusters would
#' keep factors it switches off; `init = "random"` for the random start): with
#' \eqn{y_{ij} = \sqrt{x_{ij} / n_j}} (\eqn{n_j} sample j's total), the
#' leading singular subspace of Y (a randomised range finder, two passes of
#' \eqn{Y Y'}), each sample's embedding there scaled to unit length, k-means
#' with K centres (on at most 50,000 samples drawn at random, the others
#' given their nearest centre); `W[, k]` is cluster k's gene profile, `H[k,
#' j]` sample j's total on its cluster (plus a tenth of the mean total over K
#' everywhere). It costs four passes over the counts and works by blocks
#' (`blocks`, `cluster`: the same start for a given partition); missing
#' counts count as 0 in the start only; counts that cannot give K clusters
#' start at random. On simulated counts of 5,000 genes x 20,000 cells at
#' K = 20 (37 counts a cell), 300 VB sweeps from the random start matched
#' the true W columns with median correlation 0.22 (0.23 after 1,500
#' sweeps), from the spectral start 0.66 to 0.89 by seed, with a higher
#' ELBO; where random starts do well (denser counts, fewer factors) it
#' reaches the same optimum in about half the sweeps.
#'
#' * `method = "vb"`: mean-field VB with Gamma `q(W)`, `q(H)` and the
#'   multinomial split of each count (Cemgil 2009); the ELBO ([elbo()]) is
#'   exact and never decreases; iterations stop at relative change `tol`.
#'   With `chains > 1` the restart with the highest ELBO is kept.
#' * `method = "gibbs"`: the auxiliary-variable Gibbs sampler: each positive
#'   count is split multinomially over the factors, then every entry of `W`
#'   and `H` is drawn from its Gamma conditional. Posterior means and sds
#'   are pooled over the chains (factors matched to the first chain).
#' * `method = "ssvi"`: Algorithm 1 of Park (DS-NMF), after Liang and
#'   Hoffman (2014): at iteration `i` draw `W`, `H`, `pi` from `q`, run the
#'   collapsed Gibbs sampler of the masks (`Z` summed out; the masks carry
#'   over from one iteration to the next), average the expected counts
#'   \eqn{X_{ij} \phi_{ijk}} and the mask statistics over its last samples,
#'   and take a step \eqn{\eta_i = (t_0 + i)^{-\kappa}} on the natural
#'   parameters of `q(W)`, `q(H)`, `q(pi)` (see [ssvi_control()]). After
#'   `iter` iterations, `ssvi_control()$final` more iterations without steps
#'   give the posterior mask probabilities ([masks()]) and the means of the
#'   masked factors ([factors()]). With `chains > 1` the restart with the
#'   highest mean local log joint density \eqn{\log p(X, S | W, H, \pi)} of
#'   that final phase is kept (Park, section 4.1). The defaults match Park's
#'   settings' mask accuracies without them: `iter = 100`, `chains = 3`
#'   restarts from random starts (one run per start given in `init`), and,
#'   with masks and no `prior` given, Gamma(5, \eqn{2.5 \sqrt{K / mean(X)}})
#'   entries of `W` and `H`; see [ssvi_control()], section Defaults. A factor is reported as
#'   switched off by [summary()] when the posterior mean of one of its mask
#'   probabilities is below `ssvi_control()$cutoff`. From random starts,
#'   factors beyond those the data need often share a true factor between
#'   them rather than switch off (Park, section 5). SSVI has no ELBO
#'   estimate ([elbo()] refuses it): `fit$trace` holds, per iteration, the
#'   log-likelihood and the local log joint density \eqn{\log p(X, S | W,
#'   H, \pi)} of the last mask sample (`logpost`), and `sampling` marks the
#'   final iterations.
#'
#' Every sweep costs O(nnz K) + O((I + J) K) for a `dgCMatrix` with nnz
#' positive entries (a zero count enters only through column sums of `H`
#' and row sums of `W`), plus O(K) per missing entry (the sums less those of
#' each row's and column's missing entries); dense and sparse input give
#' the same fit. `fitted()` is \eqn{E[W] E[H]} (VB; SSVI: the means of the
#' masked factors), the posterior mean of `W H` for Gibbs on a dense `X`;
#' `sigma()` is `NA` (a Poisson model has no noise sd).
#'
#' `options(bnmf.threads = 2)` runs the passes over the counts of each VB
#' sweep (all but O((I + J) K) of its work) on 2 threads, where the package
#' was built with OpenMP; the default is 1. A fit with a given number of
#' threads is reproducible; fits with different numbers of threads differ
#' in the last bits (sums are added in another order).
#' @references
#' Tan, V. Y. F. and Fevotte, C. (2013). Automatic relevance determination
#' in nonnegative matrix factorization with the beta-divergence. *IEEE
#' Transactions on Pattern Analysis and Machine Intelligence*, 35(7),
#' 1592-1605. \doi{10.1109/TPAMI.2012.240}
#'
#' Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix
#' factorisation models. *Computational Intelligence and Neuroscience*,
#' 785152. \doi{10.1155/2009/785152}
#'
#' Liang, D. and Hoffman, M. D. (2014). Beta process non-negative matrix
#' factorization with stochastic structured mean-field variational
#' inference. arXiv:1411.1804.
#'
#' Park, G. H. (2021). Variational inference for Bayesian non-negative
#' matrix factorisation. AMSI Vacation Research Scholarship report.
#' @examples
#'
#' # Counts: Poisson NMF by VB and Gibbs; masks by SSVI
#' set.seed(3)
#' C <- matrix(rpois(40 * 30, 3), 40, 30)
#' pv <- bnmf(C, rank = 2, likelihood = "poisson", method = "vb",
#'            prior = gamma_prior(1, 1))
#' tail(elbo(pv))
#' # The same fit by blocks of samples (3 blocks of columns): equal to rounding
#' set.seed(4)
#' p1 <- bnmf(C, rank = 2, likelihood = "poisson", method = "vb",
#'            prior = gamma_prior(1, 1))
#' set.seed(4)
#' pb <- bnmf(C, rank = 2, likelihood = "poisson", method = "vb",
#'            prior = gamma_prior(1, 1), blocks = 3)
#' max(abs(pb$W - p1$W))
#' \donttest{
#' # the blocks on the workers of a cluster: the numbers of `pb`
#' cl <- parallel::makePSOCKcluster(2)
#' set.seed(4)
#' pc <- bnmf(C, rank = 2, likelihood = "poisson", method = "vb",
#'            prior = gamma_prior(1, 1), blocks = 3, cluster = cl)
#' parallel::stopCluster(cl)
#' identical(pc$W, pb$W)
#' }
#' pg <- bnmf(C, rank = 2, likelihood = "poisson", method = "gibbs", iter = 200)
#' ps <- bnmf(C ~ nmf(3, sparsity = "both"), method = "ssvi", iter = 30,
#'            prior = gamma_prior(5, 5), control = ssvi_control(final = 5))
#' summary(ps)
#' # ARD: start with more factors than needed and let VB switch some off
#' pa <- bnmf(C, rank = 5, likelihood = "poisson", method = "vb", prior = ard())
#' summary(pa)
#' @rdname bnmf
#' @name bnmf
NULL

#' Priors and controls of the Poisson model's masks
#'
#' `beta_process()` is the finite beta-process prior of the mask
#' probabilities of `bnmf(likelihood = "poisson", sparsity = )`:
#' \eqn{\pi_k \sim Beta(a_0 / K, b_0 (K - 1) / K)} for each factor `k`
#' (Paisley and Carin 2009; Liang, Hoffman and Ellis 2013). Small `a0`
#' against `b0` favours few active entries. The defaults `a0 = b0 = 1` are
#' Park's.
#'
#' `ssvi_control()` tunes method `"ssvi"`: the step size at iteration `i`
#' is \eqn{(t_0 + i)^{-\kappa}} (Park: \eqn{t_0 = 0}, \eqn{\kappa = 0.5});
#' each iteration runs `mask_sweeps` sweeps of the mask sampler and averages
#' the statistics of its last `mask_samples`; `final` iterations without
#' steps estimate the mask probabilities at the end; factors whose posterior
#' mean of a mask probability is below `cutoff` count as switched off.
#'
#' @section Defaults:
#' Method `"ssvi"` with masks (`sparsity = "coef"` or `"both"`) uses, unless
#' given:
#' * `prior = gamma_prior(5, 2.5 * sqrt(K / mean(X)))` for `W` and `H`
#'   (`mean(X)` over the observed entries). Shape 5 makes the entries dense,
#'   as Park's a = b = c = d = 5, "to encourage the sparse structures to be
#'   captured by the binary masks, not by making entries in W and H tiny":
#'   under exponential entries (shape 1, the default without masks) a small
#'   entry with its mask on explains the counts as well as a mask off, and
#'   the masks stay on. The rate puts the prior mean of every entry of
#'   `W H` at `4 mean(X)`, so that the mean count is `mean(X)` when half
#'   of each mask is on; it is half the automatic rate `"auto"` (which
#'   assumes every mask on).
#'   It moves with the unit of `X` (a rate fixed as Park's 5 suits her
#'   simulation, mean count 1.7, and not counts 10 times larger); on her
#'   simulation it gives prior means 1.3 to the entries, whose true means
#'   are 1 to 1.6.
#' * `chains = 3` restarts, the one with the highest mean local log joint
#'   \eqn{\log p(X, S | W, H, \pi)} of the final phase kept (Park's rule);
#'   one run per start when `init` gives the starts.
#' * `iter = 100` stochastic steps and `mask_prior = beta_process(1, 1)`,
#'   Park's settings.
#'
#' On Park's simulation (section 4.1, 10 data sets, `sparsity = "both"`;
#' `bench/dsnmf-defaults.R` in the package sources) these defaults give
#' median mask accuracies 0.79 (`W`) and 0.81 (`H`), as Park's own settings
#' do in this package (0.78 and 0.81; her Table 1: 0.83 and 0.74).
#' Exponential entries with one run gave 0.61 and 0.62, and with three
#' restarts 0.59 and 0.62. One change at a time: dense entries with one run 0.73 and 0.76 (the largest step; with
#' 200 iterations 0.02 to 0.05 more on 5 data sets); three restarts then
#' add about 0.01 but bring the error of the fitted mean down to that of
#' Park's settings (RRMSE 0.14 against 0.20 for one run); halving the
#' automatic rate adds 0.04 to 0.05. The default fit of a 300 x 300
#' matrix at `K = 4` takes 32 to 34 s of CPU (three runs; 11 s for one);
#' the restarts run in parallel under a `future` plan ([bnmf()], section
#' Chains and reproducibility).
#'
#' @param a0,b0 Beta-process parameters (> 0).
#' @param t0 Delay of the step sizes (>= 0).
#' @param kappa Forgetting rate of the step sizes, in (0, 1].
#' @param mask_sweeps Sweeps of the collapsed mask sampler per iteration.
#' @param mask_samples How many of the last sweeps are averaged (at most
#'   `mask_sweeps`; `NULL`, the default, means half of them, rounded up).
#' @param final Iterations without steps at the end, whose mask samples give
#'   [masks()] and [factors()].
#' @param cutoff Posterior mean of a mask probability below which a factor
#'   is reported as switched off (default 0.05: fewer than about 5% of its
#'   features or samples active). The beta process puts a floor under it,
#'   about `(a0 / K) / (a0 / K + b0 (K - 1) / K + n)` for `n` features
#'   (samples).
#' @return `beta_process()`: an object of class `bnmf_beta_process`;
#'   `ssvi_control()`: an object of class `bnmf_ssvi_control`.
#' @examples
#' beta_process()
#' ssvi_control(mask_sweeps = 4)
#' set.seed(1)
#' X <- matrix(rpois(30 * 20, 2), 30, 20)
#' fit <- bnmf(X ~ nmf(3, sparsity = "coef"), method = "ssvi", iter = 20,
#'             mask_prior = beta_process(1, 1), control = ssvi_control(final = 5))
#' masks(fit)$H[, 1:5]
#' @export
beta_process <- function(a0 = 1, b0 = 1) {
  a0 <- check_number(a0, "a0", 0, min_open = TRUE)
  b0 <- check_number(b0, "b0", 0, min_open = TRUE)
  structure(list(a0 = a0, b0 = b0), class = "bnmf_beta_process")
}

#' @rdname beta_process
#' @export
ssvi_control <- function(t0 = 0, kappa = 0.5, mask_sweeps = 10, mask_samples = NULL,
                         final = 20, cutoff = 0.05) {
  t0 <- check_number(t0, "t0", 0)
  kappa <- check_number(kappa, "kappa", 0, min_open = TRUE)
  if (kappa > 1) abort_input("`kappa` must be in (0, 1].")
  mask_sweeps <- check_count(mask_sweeps, "mask_sweeps", min = 1)
  mask_samples <- check_count(mask_samples %||% ceiling(mask_sweeps / 2), "mask_samples",
                              min = 1)
  if (mask_samples > mask_sweeps) {
    abort_input("`mask_samples` must be at most `mask_sweeps`.")
  }
  final <- check_count(final, "final", min = 1)
  cutoff <- check_number(cutoff, "cutoff", 0)
  if (cutoff >= 1) abort_input("`cutoff` must be in [0, 1).")
  structure(list(t0 = t0, kappa = kappa, mask_sweeps = mask_sweeps,
                 mask_samples = mask_samples, final = final, cutoff = cutoff),
            class = "bnmf_ssvi_control")
}

#' @export
print.bnmf_beta_process <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat("<bnmf mask prior> beta_process(a0 = ", format(x$a0), ", b0 = ", format(x$b0),
      "): pi_k ~ Beta(a0 / K, b0 (K - 1) / K)\n", sep = "")
  invisible(x)
}

#' @export
print.bnmf_ssvi_control <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat("<bnmf SSVI control> step (t0 + i)^-kappa, t0 = ", format(x$t0), ", kappa = ",
      format(x$kappa), "; ", x$mask_sweeps, " mask sweeps (last ", x$mask_samples,
      " averaged); ", x$final, " final iterations; cutoff ", format(x$cutoff), "\n", sep = "")
  invisible(x)
}

# ---- checks ---------------------------------------------------------------------

# X for the Poisson likelihood: a checked matrix or dgCMatrix of counts.
check_count_matrix <- function(X) {
  X <- check_data_matrix(X)
  vals <- if (inherits(X, "dgCMatrix")) X@x else X
  if (isTRUE(any(vals < 0, na.rm = TRUE)) || isTRUE(any(vals %% 1 != 0, na.rm = TRUE))) {
    abort_input("`X` must hold counts (whole numbers >= 0; NA for missing) for `likelihood = \"poisson\"`.")
  }
  if (!isTRUE(any(vals > 0, na.rm = TRUE))) abort_input("`X` has no positive count.")
  X
}

# Is `prior` an ARD prior of the Poisson model: `ard()`, or a list with
# `lambda = ard()` (and the shapes in `W`, `H`)?
pois_prior_is_ard <- function(prior) {
  (inherits(prior, "bnmf_prior") && identical(prior$type, "ard")) ||
    (is.list(prior) && !inherits(prior, c("bnmf_prior", "bnmf_noise")) &&
       inherits(prior$lambda, "bnmf_prior") && identical(prior$lambda$type, "ard"))
}

# The Gamma priors of W and H: list(a, b, c, d, auto); "auto" rates are
# shape * sqrt(K / mean_x). With ARD (pois_prior_is_ard()) also type = "ard"
# and ard = c(alpha0, beta0) (b, d are then NA: the rates are lambda_k);
# beta0 not given is alpha0 * sqrt(mean_x / (a c K)), so that the prior mean
# of lambda_k is sqrt(a c K / mean_x), the rate that puts the prior mean of
# every entry of W H at mean_x (beta0_auto records that it was).
resolve_pois_prior <- function(prior, K, mean_x) {
  if (pois_prior_is_ard(prior)) return(resolve_pois_ard(prior, K, mean_x))
  if (is.list(prior) && !is.null(prior$lambda)) {
    abort_input("`prior`: its `lambda` must be made by `ard()`.")
  }
  if (inherits(prior, "bnmf_prior")) {
    if (!identical(prior$type, "exponential") || is.list(prior$rate)) {
      abort_input("`prior`: `likelihood = \"poisson\"` takes `gamma_prior(shape, rate)`, `list(W = gamma_prior(), H = gamma_prior())`, `exponential(rate)` with a single rate, or `ard()`.")
    }
    if (!identical(prior$rate, "auto") && !(prior$rate > 0)) {
      abort_input("`prior`: the rate must be > 0 for `likelihood = \"poisson\"`.")
    }
    prior <- structure(list(shape = 1, rate = prior$rate), class = "bnmf_noise")
  }
  if (inherits(prior, "bnmf_noise")) prior <- list(W = prior, H = prior)
  ok <- is.list(prior) && all(c("W", "H") %in% names(prior)) &&
    inherits(prior$W, "bnmf_noise") && inherits(prior$H, "bnmf_noise")
  if (!ok) {
    abort_input("`prior`: `likelihood = \"poisson\"` takes `gamma_prior(shape, rate)` or `list(W = gamma_prior(), H = gamma_prior())`.")
  }
  s <- sqrt(K / mean_x)
  rate <- function(p) if (identical(p$rate, "auto")) p$shape * s else p$rate
  list(a = prior$W$shape, b = rate(prior$W), c = prior$H$shape, d = rate(prior$H),
       auto = c(W = identical(prior$W$rate, "auto"), H = identical(prior$H$rate, "auto")))
}

resolve_pois_ard <- function(prior, K, mean_x) {
  shape <- c(W = 1, H = 1)
  if (!inherits(prior, "bnmf_prior")) {
    for (nm in c("W", "H")) {
      p <- prior[[nm]]
      if (is.null(p)) next
      if (!inherits(p, "bnmf_noise")) {
        abort_input(sprintf("`prior$%s`: with `lambda = ard()` it must be `gamma_prior(shape)`.", nm))
      }
      if (!identical(p$rate, "auto")) {
        abort_input(sprintf("`prior$%s`: with `lambda = ard()` the rate of %s is lambda_k; give only the shape, `gamma_prior(shape)`.",
                            nm, nm))
      }
      shape[[nm]] <- p$shape
    }
    extra <- setdiff(names(prior), c("W", "H", "lambda"))
    if (length(extra)) {
      abort_input(sprintf("`prior`: unknown component%s %s (the ARD prior of counts is `list(W = gamma_prior(a), H = gamma_prior(c), lambda = ard())`).",
                          if (length(extra) > 1) "s" else "", paste0("`", extra, "`", collapse = ", ")))
    }
    prior <- prior$lambda
  }
  a <- shape[["W"]]; c <- shape[["H"]]
  auto <- is.null(prior$beta0) || isTRUE(prior$beta0_auto)
  beta0 <- if (auto) prior$alpha0 * sqrt(mean_x / (a * c * K)) else prior$beta0
  if (!(beta0 > 0) || !is.finite(beta0)) {
    abort_input("`prior`: the automatic `beta0` of `ard()` needs a positive, finite mean of the observed counts; give `ard(beta0 = )`.")
  }
  list(a = a, b = NA_real_, c = c, d = NA_real_, auto = c(W = FALSE, H = FALSE),
       type = "ard", ard = c(prior$alpha0, beta0), beta0_auto = auto)
}

# The shape of q(lambda_k) (VB) and of lambda_k's conditional (Gibbs).
pois_ard_shape <- function(pp, I, J) pp$ard[1L] + I * pp$a + J * pp$c

resolve_mask_prior <- function(mp) {
  mp <- mp %||% beta_process()
  if (inherits(mp, "bnmf_beta_process")) mp <- list(W = mp, H = mp)
  if (!is.list(mp) || !inherits(mp$W, "bnmf_beta_process") ||
      !inherits(mp$H, "bnmf_beta_process")) {
    abort_input("`mask_prior` must be made by `beta_process()` or be `list(W = beta_process(), H = beta_process())`.")
  }
  mp[c("W", "H")]
}

# ---- the engine -----------------------------------------------------------------

poisson_check <- function(job) {
  method <- job$method
  if (!method %in% c("vb", "gibbs", "ssvi")) {
    abort_input(sprintf("`method`: `likelihood = \"poisson\"` takes methods \"vb\", \"gibbs\" and \"ssvi\", not \"%s\".",
                        method))
  }
  if (!identical(job$likelihood %||% "poisson", "poisson")) {
    abort_input("`likelihood`: method \"ssvi\" is for `likelihood = \"poisson\"` only.")
  }
  job$likelihood <- "poisson"
  unused <- job$given[c("noise", "loss", "particles")]
  if (any(unused)) {
    abort_input(sprintf("%s: not used by `likelihood = \"poisson\"`.",
                        paste0("`", names(unused)[unused], "`", collapse = ", ")))
  }
  job$cluster <- check_cluster(job$cluster)
  # Poisson VB by blocks of samples (R/blocks.R): a DelayedMatrix, `cluster`
  # or `blocks`; Gibbs by blocks (R/blocks-pois-gibbs.R): `cluster` or `blocks`
  by_blocks <- !is.null(job$cluster) || !is.null(job$blocks)
  blocked <- (method == "vb" && (by_blocks || is_delayed(job$X))) ||
    (method == "gibbs" && by_blocks)
  job$X <- if (blocked && is_delayed(job$X)) check_delayed_counts(job$X) else check_count_matrix(job$X)
  check_rank_bound(job$rank, job$X)
  job$sparsity <- check_choice(job$sparsity %||% "none", c("none", "coef", "both"), "sparsity")
  if (job$sparsity != "none" && method != "ssvi") {
    abort_input(sprintf("`sparsity`: masks (\"%s\") need method \"ssvi\".", job$sparsity))
  }
  if (pois_prior_is_ard(job$prior) && method == "ssvi") {
    abort_unsupported("`prior = ard()` with `likelihood = \"poisson\"` takes methods \"vb\" and \"gibbs\"; method \"ssvi\" switches factors off by its masks (`sparsity`) instead.")
  }
  if (job$sparsity == "none" && job$given[["mask_prior"]]) {
    abort_input("`mask_prior` applies to `sparsity = \"coef\"` or `\"both\"` only.")
  }
  job$mask_prior <- resolve_mask_prior(job$mask_prior)
  if (method == "ssvi") job$control <- check_control(job$control, "ssvi_control")
  keep <- check_choice(job$keep, c("summary", "draws"), "keep")
  iter <- job$iter %||% if (method == "ssvi") 100L else NULL
  chains <- if (method == "ssvi" && !job$given[["chains"]]) ssvi_default_chains(job$init) else job$chains
  job$settings <- check_settings(if (method == "gibbs") "gibbs" else "vb", iter, job$burnin,
                                 job$thin, chains, job$tol, keep, job$progress)
  s <- job$settings
  draws <- if (keep == "draws") (s$iter - s$burnin) %/% s$thin else 0
  if (blocked) {
    check_fit_size(nrow(job$X), ncol(job$X), job$rank, s$chains, copies = 8,
                   draws = if (method == "gibbs") draws else 0)
    return(pois_blocks_setup(job))
  }
  check_fit_size(nrow(job$X), ncol(job$X), job$rank, s$chains, draws = draws,
                 copies = 8, data = 1, nx = if (inherits(job$X, "Matrix")) length(job$X@x) else
                   length(job$X))
  job$data <- prepare_data(job$X, job$rank)
  job
}

# A DelayedMatrix for the Poisson fit by blocks: numeric, at least 1 x 1 (its
# values are checked block by block as they are first read).
check_delayed_counts <- function(X) {
  if (length(dim(X)) != 2L || any(dim(X) < 1L) ||
      !DelayedArray::type(X) %in% c("double", "integer", "logical")) {
    abort_input("`X` must be a numeric matrix with at least one row and one column.")
  }
  X
}

# The blocks of a Poisson VB fit (R/blocks.R): their source and holders
# (this process or the workers of `cluster`), which read each block once to
# check its counts and sum them. The holders are released when bnmf()
# returns (or here, when the counts are refused).
pois_blocks_setup <- function(job) {
  runner <- if (identical(job$method, "gibbs")) pois_gibbs_block_runner else block_runner
  open_blocks(job, runner, function(job, sm) {
    if (any(sm[, "bad"] != 0)) {
      abort_input("`X` must hold counts (whole numbers >= 0; NA for missing) for `likelihood = \"poisson\"`.")
    }
    if (!any(sm[, "pos"] != 0)) abort_input("`X` has no positive count.")
    I <- nrow(job$X); J <- ncol(job$X)
    nmiss <- sum(sm[, "nmiss"])
    if (nmiss <= .Machine$integer.max) nmiss <- as.integer(nmiss) # as n_missing()
    job$data <- list(sum_obs = sum(sm[, "sum"]), n_obs = as.double(I) * J - nmiss,
                     n_missing = nmiss)
    job
  })
}

# Method "ssvi" without `chains`: 3 restarts from random starts (the one
# with the highest mean local log joint of the final phase kept); one run
# per start given in `init`.
ssvi_default_chains <- function(init) {
  if (is.character(init)) return(ssvi_restarts)
  if (is.list(init) && is.null(init$W)) max(length(init), 1L) else 1L
}
ssvi_restarts <- 3L

# The prior of a fit with masks when none is given: dense Gamma(5, rate)
# entries, so that the masks, not tiny entries, carry the sparsity (Park,
# section 4.1). The rate 2.5 sqrt(K / mean(X)), half the automatic one,
# puts the prior mean of every entry of W H at 4 mean(X): the mean count
# is mean(X) when half of each mask is on (the automatic rate assumes
# every mask on). Scale-free: the rate moves with the unit of X.
ssvi_mask_prior_default <- function(K, mean_x) gamma_prior(5, 2.5 * sqrt(K / mean_x))

poisson_model <- function(job) {
  d <- job$data
  prior <- job$prior
  if (job$method == "ssvi" && job$sparsity != "none" && !isTRUE(job$prior_given)) {
    prior <- ssvi_mask_prior_default(job$rank, d$sum_obs / d$n_obs)
  }
  pp <- resolve_pois_prior(prior, job$rank, d$sum_obs / d$n_obs)
  spec <- nmf_spec(nrow(job$X), ncol(job$X), job$rank, prior = pp, likelihood = "poisson")
  spec$sparsity <- job$sparsity
  spec$mask_prior <- job$mask_prior
  spec
}

poisson_tasks <- function(job) {
  I <- nrow(job$X); J <- ncol(job$X); K <- job$rank
  # the default start: spectral for VB and Gibbs, but for ARD (whose K
  # clusters would keep factors it switches off) and masks
  if (!isTRUE(job$given[["init"]]) && job$method %in% c("vb", "gibbs") &&
      !identical(job$model$prior$type, "ard")) {
    job$init <- "spectral"
  }
  if (is.character(job$init)) job$init <- check_choice(job$init, c("random", "spectral"), "init")
  starts <- make_starts(if (is.character(job$init)) "random" else job$init,
                        job$settings$chains, I, J, K)
  label <- c(gibbs = "Gibbs sampling (Poisson)", vb = "Variational Bayes (Poisson)",
             ssvi = "SSVI (Poisson)")[[job$method]]
  n <- length(starts)
  job$tasks <- lapply(seq_len(n), function(c) {
    list(start = starts[[c]], label = if (n > 1L) sprintf("%s, chain %d", label, c) else label)
  })
  pp <- job$model$prior
  mp <- job$model$mask_prior
  job$prior_c <- list(a = pp$a, b = pp$b, c = pp$c, d = pp$d, a0W = mp$W$a0, b0W = mp$W$b0,
                      a0H = mp$H$a0, b0H = mp$H$b0)
  if (identical(pp$type, "ard")) {
    # the rates of W and H are lambda, in the chains' states
    job$prior_c$b <- job$prior_c$d <- 1
    job$prior_c$ard <- as.double(pp$ard)
  }
  job$xvals <- if (!is.null(job$runner)) NULL else if (inherits(job$X, "dgCMatrix")) job$X@x else job$X
  job$chain_progress <- job$settings$progress && tasks_in_process()
  job
}

pois_start <- function(task, job) {
  I <- nrow(job$X); J <- ncol(job$X); K <- job$rank
  st <- task$start
  if (is.null(st) && identical(job$init, "spectral")) {
    map <- job$runner$map %||% function(fun, args) list(fun(job$X, args, c(1L, J)))
    st <- spectral_start(map, I, J, K)
  }
  st <- st %||% random_init(I, J, K, job$data$sum_obs / job$data$n_obs)
  floor <- 1e-8 * sqrt(job$data$sum_obs / job$data$n_obs / K)
  list(W = pmax(double_matrix(st$W, I, K), floor), H = pmax(double_matrix(st$H, K, J), floor))
}

# matrix(as.double(x), r, c), without its copies when x is already that: an
# r x c double matrix with no attribute but its dimensions (a K x J H is
# 160 MB at K = 20 and a million samples).
double_matrix <- function(x, r, c) {
  if (is.double(x) && identical(attributes(x), list(dim = as.integer(c(r, c))))) x
  else matrix(as.double(x), r, c)
}

# The counts' row layout (C_pois_rows: 12 bytes a count) for the pass of
# VB's sweeps in memory that forms q(W)'s sums, or NULL. In row order that
# pass reads columns of exp(E log H) (K x J) at random places and adds into
# the row it is on; in column order it reads rows of exp(E log W) (K x I)
# and adds into rows of another K x I array at random places: 1.15-1.5
# times as fast a sweep at 5%, 1.07-1.15 at 20,000 x 50,000 and 0.75%
# (bench/README.md). q is the same bits either way; the log likelihood is
# summed by row. The sweeps by blocks run in column order: a block read from
# a file in every sweep would be laid out again each time (about a pass
# over its counts), and its numbers must be those of the same block held in
# memory. (Option bnmf.vb_rows = FALSE: column order in memory too, as one
# block gives it; for the tests.)
pois_rows <- function(data, x) {
  if (isFALSE(getOption("bnmf.vb_rows"))) return(NULL)
  .Call(C_pois_rows, data, x)
}

pois_vb_state <- function(W, H, pp = NULL) {
  q <- list(shape_W = matrix(1, nrow(W), ncol(W)) + 0, rate_W = 1 / W, shape_H = matrix(1, nrow(H), ncol(H)) + 0,
            rate_H = 1 / H, W = W + 0, H = H + 0, elbo = -Inf + 0)
  if (identical(pp$type, "ard")) {
    # q(lambda) as its update from the starting means
    q$shape_lambda <- rep(pois_ard_shape(pp, nrow(W), ncol(H)), ncol(W)) + 0
    q$rate_lambda <- pp$ard[2L] + colSums(W) + rowSums(H) + 0
  }
  q
}

pois_vb_chain <- function(task, job) {
  s <- job$settings
  threads <- option_threads()
  q <- task$resume
  if (is.null(q)) {
    st <- pois_start(task, job)
    q <- pois_vb_state(st$W, st$H, job$model$prior)
  }
  # what the first call finds out about the counts, reused by the others;
  # the counts laid out by row too (pois_rows())
  known <- c(NA_real_, NA_real_)
  rows <- pois_rows(job$data, job$xvals)
  ch <- run_chunks(function(n, accumulate) {
    out <- .Call(C_pois_vb, q, job$data, job$xvals, job$prior_c,
                 list(n = as.double(n), tol = as.double(s$tol), threads = threads,
                      known = known, rows = rows))
    known <<- out$known
    out
  }, "vb", s$iter, 0L, 1L, job$chain_progress, task$label, tol = s$tol,
  trace_names = "logpost", min_chunk = 4L)
  # (each call ends with a pass for the ELBO of its last state, half a
  # sweep: at least 4 sweeps a call keep that below 1/8 of the work)
  list(state = q, converged = ch$converged, seed = task_stream(),
       trace = pois_trace(ch$trace))
}

# A Poisson chain's trace: iteration, loglik (NA for VB), logpost, sampling.
pois_trace <- function(tr) {
  if (is.null(tr$loglik)) tr$loglik <- NA_real_
  tr[c("iteration", "loglik", "logpost", "sampling")]
}

pois_gibbs_state <- function(W, H, dense_wh, pp = NULL) {
  I <- nrow(W); K <- ncol(W); J <- ncol(H)
  st <- list(W = W + 0, H = H + 0, logpost = -Inf + 0, n_kept = 0 + 0,
             W_sum = numeric(I * K), W_sq = numeric(I * K), H_sum = numeric(K * J),
             H_sq = numeric(K * J), WH_sum = numeric(if (dense_wh) as.double(I) * J else 0))
  if (identical(pp$type, "ard")) {
    # lambda starts at the mean of its conditional given the starting W, H
    st$lambda <- pois_ard_shape(pp, I, J) / (pp$ard[2L] + colSums(W) + rowSums(H)) + 0
    st$lambda_sum <- numeric(K)
  }
  st
}

pois_gibbs_chain <- function(task, job) {
  s <- job$settings
  st <- task$resume
  if (is.null(st)) {
    st0 <- pois_start(task, job)
    st <- pois_gibbs_state(st0$W, st0$H, !inherits(job$X, "dgCMatrix"), job$model$prior)
  }
  ch <- run_chunks(function(n, accumulate) {
    .Call(C_pois_gibbs, st, job$data, job$xvals, job$prior_c,
          list(n = as.double(n), accumulate = as.double(accumulate),
               thin = as.double(if (accumulate) s$thin else 1),
               keep_draws = as.double(accumulate && s$keep == "draws")))
  }, "gibbs", s$iter, s$burnin, s$thin, job$chain_progress, task$label,
  draws = c("W_draws", "H_draws"), trace_names = c("loglik", "logpost"))
  list(state = st, seed = task_stream(), W_draws = ch$draws$W_draws, H_draws = ch$draws$H_draws,
       trace = pois_trace(ch$trace))
}

pois_ssvi_state <- function(W, H, job) {
  I <- nrow(W); K <- ncol(W); J <- ncol(H)
  sh <- 10
  list(shape_W = matrix(sh, I, K) + 0, rate_W = sh / W, shape_H = matrix(sh, K, J) + 0,
       rate_H = sh / H, pi_W_shape1 = rep(1, K) + 0, pi_W_shape2 = rep(1, K) + 0,
       pi_H_shape1 = rep(1, K) + 0, pi_H_shape2 = rep(1, K) + 0,
       SW = matrix(1L, I, K) + 0L, SH = matrix(1L, K, J) + 0L, W = W + 0, H = H + 0,
       steps = 0 + 0, n_acc = 0 + 0, SW_sum = numeric(I * K), SH_sum = numeric(K * J),
       WS_sum = numeric(I * K), HS_sum = numeric(K * J))
}

pois_ssvi_chain <- function(task, job) {
  s <- job$settings
  ctl <- job$control
  st0 <- pois_start(task, job)
  st <- pois_ssvi_state(st0$W, st0$H, job)
  sp <- job$sparsity
  # the stochastic steps (iter), then the final phase that samples the masks
  ch <- run_chunks(function(n, accumulate) {
    tr <- .Call(C_pois_ssvi, st, job$data, job$xvals, job$prior_c,
                list(n = as.double(n), update = as.double(!accumulate),
                     accumulate = as.double(accumulate), mask_sweeps = as.double(ctl$mask_sweeps),
                     mask_samples = as.double(ctl$mask_samples),
                     mask_W = as.double(sp == "both"), mask_H = as.double(sp != "none"),
                     t0 = as.double(ctl$t0), kappa = as.double(ctl$kappa)))
    list(trace = tr)
  }, "ssvi", s$iter + ctl$final, s$iter, 1L, job$chain_progress, task$label,
  trace_names = c("loglik", "logpost"), sampler = TRUE)
  list(state = st, seed = task_stream(), trace = pois_trace(ch$trace))
}

poisson_run_task <- function(task, job) {
  switch(job$method,
         vb = if (is.null(job$runner)) pois_vb_chain(task, job) else pois_vb_blocks_chain(task, job),
         gibbs = if (is.null(job$runner)) pois_gibbs_chain(task, job) else
           pois_gibbs_blocks_chain(task, job),
         ssvi = pois_ssvi_chain(task, job))
}

poisson_engine <- function() {
  list(check = poisson_check, model = poisson_model, tasks = poisson_tasks,
       run_task = poisson_run_task, seeds = TRUE, build = poisson_build)
}

# ---- the fit --------------------------------------------------------------------

poisson_build <- function(runs, job, call) {
  validate_poisson_fit(new_poisson_fit(runs, job, call))
}

new_poisson_fit <- function(runs, job, call) {
  X <- job$X
  I <- nrow(X); J <- ncol(X); K <- job$rank
  kn <- factor_names(K)
  trace <- do.call(rbind, lapply(seq_along(runs), function(c) cbind(chain = c, runs[[c]]$trace)))
  fit <- c(fit_header(call, job$method, "poisson", X, K, job$settings,
                      n_miss = job$data$n_missing %||% n_missing(X)),
           list(likelihood = "poisson", sparsity = job$sparsity,
                prior = job$model$prior, mask_prior = job$model$mask_prior,
                control = job$control, trace = trace, seeds = lapply(runs, `[[`, "seed")))
  part <- switch(job$method, gibbs = pois_gibbs_parts(runs, I, J, K),
                 vb = pois_vb_parts(runs, trace, I, J, K),
                 ssvi = pois_ssvi_parts(runs, trace, I, J, K, job$sparsity))
  # the names of the K x J matrices set in `part` before it joins `fit`: in
  # place where `part` alone holds the matrix (copied only where it is
  # shared, as VB's H with the state kept); dn() then finds them named
  dnH <- list(kn, colnames(X))
  if (!is.null(part$H)) dimnames(part$H) <- dnH
  if (!is.null(part$H_sd)) dimnames(part$H_sd) <- dnH
  if (!is.null(part$masks$H)) dimnames(part$masks$H) <- dnH
  lambda <- part$lambda
  fit <- c(fit, part)
  part <- NULL
  fit["lambda"] <- NULL # not kept without ARD
  if (!is.null(lambda)) fit$lambda <- lambda
  dn <- function(M, r, c) {
    if (!is.null(M) && !identical(dimnames(M), list(r, c))) dimnames(M) <- list(r, c)
    M
  }
  fit$W <- dn(fit$W, rownames(X), kn); fit$W_sd <- dn(fit$W_sd, rownames(X), kn)
  fit$H <- dn(fit$H, kn, colnames(X)); fit$H_sd <- dn(fit$H_sd, kn, colnames(X))
  fit$masks <- list(W = dn(fit$masks$W, rownames(X), kn), H = dn(fit$masks$H, kn, colnames(X)))
  if (!is.null(fit$lambda)) names(fit$lambda) <- kn
  if (!is.null(fit$WH)) dimnames(fit$WH) <- fit$dimnames
  class(fit) <- fit_class(job$method, "poisson")
  fit
}

pois_gibbs_parts <- function(runs, I, J, K) {
  ref <- matrix(runs[[1L]]$state$W_sum, I, K)
  perms <- lapply(runs, function(r) match_factors(ref, matrix(r$state$W_sum, I, K)))
  N <- sum(vapply(runs, function(r) r$state$n_kept, numeric(1)))
  sumW <- sumW2 <- matrix(0, I, K)
  sumH <- sumH2 <- matrix(0, K, J)
  for (c in seq_along(runs)) {
    st <- runs[[c]]$state
    p <- perms[[c]]
    sumW <- sumW + matrix(st$W_sum, I, K)[, p, drop = FALSE]
    sumW2 <- sumW2 + matrix(st$W_sq, I, K)[, p, drop = FALSE]
    sumH <- sumH + matrix(st$H_sum, K, J)[p, , drop = FALSE]
    sumH2 <- sumH2 + matrix(st$H_sq, K, J)[p, , drop = FALSE]
  }
  sd_of <- function(s, s2) sqrt(pmax(s2 - s^2 / N, 0) / max(N - 1, 1))
  WH <- if (length(runs[[1L]]$state$WH_sum)) {
    matrix(Reduce(`+`, lapply(runs, function(r) r$state$WH_sum)) / N, I, J)
  }
  lambda <- if (!is.null(runs[[1L]]$state$lambda_sum)) {
    Reduce(`+`, Map(function(r, p) r$state$lambda_sum[p], runs, perms)) / N
  }
  list(W = sumW / N, H = sumH / N, W_sd = sd_of(sumW, sumW2), H_sd = sd_of(sumH, sumH2),
       lambda = lambda,
       masks = list(W = matrix(1, I, K), H = matrix(1, K, J)), pi = NULL, n_draws = N,
       WH = WH, alignment = perms,
       draws = if (!is.null(runs[[1L]]$W_draws)) lapply(runs, function(r) r[c("W_draws", "H_draws")]),
       state = lapply(runs, `[[`, "state"))
}

# The restart kept: the highest final value of `what` (VB: the ELBO; SSVI:
# the mean local log joint of the final phase).
pois_best <- function(trace, runs, ssvi) {
  v <- vapply(seq_along(runs), function(c) {
    t <- trace[trace$chain == c, , drop = FALSE]
    if (ssvi) mean(t$logpost[t$sampling]) else t$logpost[nrow(t)]
  }, numeric(1))
  which.max(v)
}

pois_vb_parts <- function(runs, trace, I, J, K) {
  best <- pois_best(trace, runs, FALSE)
  q <- runs[[best]]$state
  ard <- !is.null(q$shape_lambda)
  # (H and H_sd not copied when they already are K x J matrices: H is named
  # by new_poisson_fit(), which copies it then)
  list(W = matrix(q$W, I, K), H = same_matrix(q$H, K, J),
       W_sd = matrix(sqrt(q$shape_W) / q$rate_W, I, K),
       H_sd = same_matrix(sqrt(q$shape_H) / q$rate_H, K, J),
       lambda = if (ard) q$shape_lambda / q$rate_lambda,
       masks = list(W = matrix(1, I, K), H = matrix(1, K, J)), pi = NULL, best = best,
       converged = vapply(runs, `[[`, logical(1), "converged"),
       q = q[intersect(c("shape_W", "rate_W", "shape_H", "rate_H", "shape_lambda", "rate_lambda"),
                       names(q))],
       state = list(q))
}

# matrix(x, r, c), x itself when it is already that: an r x c matrix with
# no attribute but its dimensions.
same_matrix <- function(x, r, c) {
  if (identical(attributes(x), list(dim = as.integer(c(r, c))))) x else matrix(x, r, c)
}

pois_ssvi_parts <- function(runs, trace, I, J, K, sparsity) {
  best <- pois_best(trace, runs, TRUE)
  st <- runs[[best]]$state
  n <- st$n_acc
  beta_mean <- function(a, b) a / (a + b)
  list(W = matrix(st$WS_sum / n, I, K), H = matrix(st$HS_sum / n, K, J),
       W_sd = NULL, H_sd = NULL,
       masks = list(W = matrix(st$SW_sum / n, I, K), H = matrix(st$SH_sum / n, K, J)),
       pi = list(W = if (sparsity == "both") beta_mean(st$pi_W_shape1, st$pi_W_shape2),
                 H = if (sparsity != "none") beta_mean(st$pi_H_shape1, st$pi_H_shape2)),
       best = best,
       q = st[c("shape_W", "rate_W", "shape_H", "rate_H", "pi_W_shape1", "pi_W_shape2",
                "pi_H_shape1", "pi_H_shape2")])
}

# Values of a Poisson fit: factors and mask probabilities of the fit's size,
# finite and non-negative; probabilities in [0, 1]; a trace per chain.
validate_poisson_fit <- function(fit) {
  validate_fit_header(fit)
  bad <- function(what) abort_fit(sprintf("the Poisson fit has %s", what))
  I <- fit$dims[1L]; J <- fit$dims[2L]; K <- fit$rank
  # (by min() and max(): no logical copies of the K x J matrices; a NaN or
  # NA gives a min() that is not finite)
  ok <- function(M, r, c) is.matrix(M) && identical(dim(M), c(as.integer(r), as.integer(c))) &&
    (length(M) == 0L || (is.finite(min(M)) && is.finite(max(M)) && min(M) >= 0))
  above1 <- function(M) length(M) > 0L && max(M) > 1
  if (!ok(fit$W, I, K) || !ok(fit$H, K, J)) bad("factors that are not finite non-negative matrices of its size")
  if (!ok(fit$masks$W, I, K) || !ok(fit$masks$H, K, J) || above1(fit$masks$W) ||
      above1(fit$masks$H)) {
    bad("mask probabilities outside [0, 1] or of the wrong size")
  }
  if (!fit$method %in% c("vb", "gibbs", "ssvi")) bad(sprintf("an unknown method \"%s\"", fit$method))
  if (!fit$sparsity %in% c("none", "coef", "both")) bad("an unknown sparsity")
  if (!is.data.frame(fit$trace) || !all(c("chain", "iteration", "loglik", "logpost") %in% names(fit$trace))) {
    bad("no trace")
  }
  if (!is.null(fit$WH) && !identical(dim(fit$WH), c(as.integer(I), as.integer(J)))) bad("a mean of W H of the wrong size")
  if (identical(fit$prior$type, "ard") &&
      (length(fit$lambda) != K || !all(is.finite(fit$lambda)) || !all(fit$lambda > 0))) {
    bad("an ARD prior without K finite positive rates lambda")
  }
  fit
}

# ---- hooks for the references (internal) ------------------------------------

pois_hook_data <- function(X, K) {
  X <- as.matrix(X)
  storage.mode(X) <- "double"
  list(X = X, data = prepare_data(X, K))
}

# n sweeps of the auxiliary-variable Gibbs sampler from state = list(W, H)
# on a dense X (NA missing); prior = list(a, b, c, d). Returns list(W, H).
# ARD: prior = list(a, c, ard = c(alpha0, beta0)) and state$lambda (K);
# returns list(W, H, lambda).
pois_gibbs_sweeps <- function(X, state, prior, n) {
  K <- ncol(state$W)
  h <- pois_hook_data(X, K)
  st <- pois_gibbs_state(matrix(as.double(state$W), nrow(X), K),
                         matrix(as.double(state$H), K, ncol(X)), FALSE)
  ard <- !is.null(prior$ard)
  if (ard) {
    prior$b <- prior$d <- 1
    st$lambda <- as.double(state$lambda) + 0
    st$lambda_sum <- numeric(K)
  }
  pr <- lapply(prior[c("a", "b", "c", "d", if (ard) "ard")], as.double)
  .Call(C_pois_gibbs, st, h$data, h$X, pr,
        list(n = as.double(n), accumulate = 0, thin = 1, keep_draws = 0))
  if (ard) list(W = st$W, H = st$H, lambda = st$lambda) else list(W = st$W, H = st$H)
}

# The C arguments of VB parameters q = list(shape_W, rate_W, shape_H,
# rate_H[, shape_lambda, rate_lambda]) on a dense X (NA missing): the state
# (fresh copies, with the means W, H), the data and the prior.
pois_vb_args <- function(X, q, prior) {
  K <- ncol(as.matrix(q$shape_W))
  h <- pois_hook_data(X, K)
  ard <- !is.null(prior$ard)
  nm <- c("shape_W", "rate_W", "shape_H", "rate_H", if (ard) c("shape_lambda", "rate_lambda"))
  st <- lapply(q[nm], function(z) as.double(z) + 0)
  st$W <- st$shape_W / st$rate_W
  st$H <- st$shape_H / st$rate_H
  st$elbo <- -Inf + 0
  if (ard) prior$b <- prior$d <- 1
  list(st = st, h = h, pr = lapply(prior[c("a", "b", "c", "d", if (ard) "ard")], as.double))
}

# n VB sweeps from q (as pois_vb_args()) with tol = 0. Returns the new q
# (with W, H, the means) and the ELBO after each sweep.
pois_vb_sweeps <- function(X, q, prior, n) {
  a <- pois_vb_args(X, q, prior)
  out <- .Call(C_pois_vb, a$st, a$h$data, a$h$X, a$pr,
               list(n = as.double(n), tol = 0, threads = 1, known = c(NA_real_, NA_real_),
                    rows = TRUE))
  c(a$st, list(trace = out$trace))
}

# n sweeps of the collapsed Gibbs sampler of both masks (Z summed out), W,
# H, piW, piH fixed; SW (I x K), SH (K x J) 0/1. Returns list(SW, SH).
pois_mask_sweeps <- function(X, W, H, SW, SH, piW, piH, n) {
  K <- ncol(W)
  h <- pois_hook_data(X, K)
  st <- list(W = matrix(as.double(W), nrow(X), K) + 0, H = matrix(as.double(H), K, ncol(X)) + 0,
             SW = matrix(as.integer(SW), nrow(X), K) + 0L,
             SH = matrix(as.integer(SH), K, ncol(X)) + 0L,
             pi_W = as.double(piW) + 0, pi_H = as.double(piH) + 0)
  .Call(C_pois_masks, st, h$data, h$X, as.integer(n))
  list(SW = st$SW, SH = st$SH)
}

# The ELBO of VB parameters q (as pois_vb_args()), exactly as the VB sweeps
# compute it.
pois_vb_elbo <- function(X, q, prior) {
  a <- pois_vb_args(X, q, prior)
  .Call(C_pois_elbo, a$st, a$h$data, a$h$X, a$pr)
}
