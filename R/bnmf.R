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
#'   matrices), or the sweeps fill the missing entries with `W H` of the
#'   previous sweep (an ECM step: the same modes, the cost of complete data
#'   per sweep, more sweeps); by default the latter when no row or column
#'   misses more than a third of its entries ([icm_control()]).
#'   A flat prior
#'   (`exponential(rate = 0)`) turns ICM into exact coordinate-descent
#'   non-negative least squares.
#' * `"vb"`: variational Bayes (Brouwer, Frellsen and Lio 2017). The
#'   posterior is approximated by independent factors
#'   \eqn{q(W_{ik}) q(H_{kj}) q(\tau)}: each entry of `W` and `H` a truncated
#'   normal, `tau` a Gamma (and each ARD rate a Gamma). Coordinate ascent
#'   updates each factor to the optimum given the others (the same truncated
#'   normal as the Gibbs conditional, with expectations in place of the other
#'   variables), so the evidence lower bound ([elbo()]) never decreases; the
#'   iteration stops when its relative change is at most `tol`. With missing
#'   entries the updates use the observed entries only, or the sweeps fill
#'   the missing entries with `E[W] E[H]` of the previous sweep and correct
#'   each row for its own terms there (the same fixed points, the cost of
#'   complete data per sweep plus `O(K)` per missing entry, but the ELBO is
#'   no longer guaranteed to rise at every sweep); by default the latter when
#'   no row or column misses more than a third of its entries
#'   ([vb_control()]). Each sweep
#'   also rescales each factor's pair `q(W[, k])`, `q(H[k, ])` by `c` and
#'   `1 / c` to the `c` that maximises the ELBO (in closed form: the
#'   likelihood does not change along that path), a direction coordinate
#'   updates cross slowly; the fixed points are the same. Fast and
#'   deterministic, with posterior standard deviations that are typically too
#'   small (mean-field VB ignores the posterior correlations). The fit keeps
#'   q's means (`W`, `H`) and standard deviations (`W_sd`, `H_sd`), and its
#'   truncated normals themselves as `q_W`, `q_H` (NMTF: `q_F`, `q_S`,
#'   `q_G`), each a list of `mu` and `sigma`, the mean and sd of the normal
#'   before its truncation to \eqn{[0, \infty)}; [membership()], [markers()]
#'   and [consensus_matrix()] draw from them.
#' * `"np"`: non-probabilistic NMF by the multiplicative updates of Lee and
#'   Seung (2001), on the observed entries only, for the Euclidean loss
#'   \eqn{\sum_\Omega (X - WH)^2} or the generalised Kullback-Leibler
#'   divergence \eqn{\sum_\Omega X \log(X / WH) - X + WH} (`loss`); the loss
#'   never increases. With missing entries the Euclidean updates either
#'   leave them out or fill them with `W H` of the previous sweep (EM, at the
#'   cost of complete data), with the same fixed points ([np_control()]; the
#'   default leaves them out).
#'   No prior, no uncertainty: posterior summaries are not
#'   available for these fits. Needs `X >= 0`.
#'
#' @section Particles:
#' `method = "particles"` approximates the posterior of a different model by
#' a weighted set of M factorisations (Masood and Doshi-Velez, Algorithm 1).
#' The likelihood is a soft insensitive loss on an NMF objective ([silf()]:
#' every factorisation good enough under the objective is equally likely),
#' every column of `W` has a Dirichlet(1) prior (so `W` is column-stochastic)
#' and every entry of `H` an exponential prior (`prior = exponential(rate)`;
#' `"auto"` means rate 1, the paper's choice, on the scaled data: see below). The M candidates start from
#' `init`: `"qtransform"` (the default for this method: the shipped
#' transformation pairs of [qtransform_pairs()] applied to the top SVD
#' factors of `X`; or pairs you made with it), `"random"` (entries
#' `sqrt(mean(X) / rank) |N(0, 1)|`), `"nndsvd"` (deterministic, so every
#' candidate is the same) or `"nndsvdar"`; each is solved to convergence
#' (`tol`, at most `iter` sweeps) by coordinate-descent non-negative least
#' squares (ICM with a flat prior), rescaled so that the columns of `W` sum to
#' one, and weighted by minimising the kernel Stein discrepancy over the
#' simplex ([stein_discrepancy()]). `X` must be non-negative (see the
#' section Missing and sparse data for particles and HMC). See [weights.bnmf_particles()] and
#' [summary.bnmf_particles()].
#'
#' The particle model (methods `"particles"`, `"hmc"`, `"svgd"`, `"dsgd"`) is
#' fitted on `X / s`, `s` the root mean square of the observed entries of
#' `X` (`fit$data_scale`), and the fit is scaled back (`H`, `W H`, the
#' objectives and `epsilon` in the units of `X`): the slope `C` of [silf()],
#' the automatic rate 1 of `H`, the Stein kernel's bandwidths and the steps
#' of SVGD and DSGD apply to data of root mean square 1, so the fit of
#' `c X` is that of `X` with `H` times `c` at any scale. An explicit rate
#' of `H` and an explicit `epsilon` are in the units of `X` (the automatic
#' rate is `1 / s` there: `fit$prior$rate`). The Stein discrepancy, HMC's
#' log posterior, step sizes and metric are those of the fit on `X / s`.
#' (Before, every setting was absolute: at `X * 1e-100` the prior of `H`
#' outweighed the data, and at `X * 1e100` the Stein discrepancy overflowed.)
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
#' `thin`-th later draw is kept. The warm starts are drawn in this R process;
#' the chains are independent tasks, each on its own random number stream
#' (see the section Chains and reproducibility), so `set.seed()` reproduces
#' the fit under any [future::plan()]. `X` must be non-negative (see the
#' section Missing and sparse data for particles and HMC). The SILF likelihood
#' acts on the objective of `X / s` (`s` the root mean square of `X`, see the
#' section Particles): the posterior puts that objective some K(I + J) / (2C)
#' or more above its minimum (the volume of the parameter space grows with
#' it). The default `silf(C = "auto")` sets `C` from the warm starts'
#' objective `f` and the number of observed entries `n`, `C = n / (2 f)`
#' (the Gaussian likelihood whose noise would give `f`), so the draws stay
#' a fraction K(I + J) / n of `f` above the minimum at any scale of `X`; a
#' smaller `C` widens the posterior. See [hmc_control()],
#' [factors.bnmf_hmc()], [summary.bnmf_hmc()] and [stein_discrepancy()].
#'
#' @section Chains and reproducibility:
#' Chains (for ICM: restarts, of which the fit with the highest log posterior
#' is kept; for HMC: its chains; for particles: the candidates, which use no
#' random numbers) are independent tasks, each with its own L'Ecuyer-CMRG random
#' number stream derived from one draw of the session's random numbers, so
#' `set.seed()` before the call reproduces the fit exactly. Under the default
#' sequential [future::plan()] the chains run one after the other in this R
#' process; under any other plan (e.g. `future::plan(future::multisession)`)
#' they run as futures via [future.apply::future_lapply()], with the same
#' streams and therefore the same results. Before their posterior moments are
#' pooled, the factors of every chain are matched to those of the first chain
#' (the posterior does not change when factors are permuted). [update()]
#' continues every chain from its last state and random number stream.
#' The session's random numbers after the call are the same under every plan.
#' An interrupt (Ctrl-C) stops the chains also under a non-sequential plan:
#' the tasks still running in worker processes of this machine are
#' interrupted and the plan's workers are restarted, so the next call does
#' not wait for them.
#'
#' Futures run side by side, so each task in a worker runs with one thread of
#' R's BLAS where the BLAS lets a program set it (OpenBLAS, FlexiBLAS, Intel
#' MKL), and the worker gets its own setting back when the task ends. A
#' multithreaded BLAS in every worker puts several threads on each core:
#' under OpenBLAS with its default of one thread per core, two chains on
#' two workers of a 2-core machine finished no faster than one after the
#' other. Tasks in this R process (the sequential plan) run with the BLAS as
#' it is. A multithreaded BLAS's sums depend on its number of threads, so
#' there the fits of the two kinds of plan can differ in the last digits;
#' `options(bnmf.blas_threads = 1)` runs every task with one thread wherever
#' it runs, and so gives the same fit under every plan again (R's reference
#' BLAS has one thread: nothing changes). `options(bnmf.blas_threads = n)`
#' sets another number, `NA` leaves the BLAS as it is everywhere.
#'
#' `options(bnmf.threads = n)` runs the rows and columns with missing entries
#' of ICM sweeps with masked entries (`icm_control(missing = "mask")`), of VB
#' sweeps (masked or imputing, [vb_control()]) and of NP sweeps with masked
#' entries ([np_control()]) on n
#' threads, where the package was built with OpenMP (the default is 1;
#' Gibbs sweeps, ICM's and NP's imputing sweeps and complete rows are not affected;
#' VB's imputing sweeps run all their rows so). Each
#' row is computed alone and the terms of the error are added in a fixed
#' order, so the fit is the same, to the last bit, on any number of threads.
#' It gains where the BLAS runs one thread: at 1000 x 1000, K = 20 with 20%
#' missing, two threads took a masked VB sweep from 10.4 to 8.0 ms under
#' OpenBLAS at one thread, and from 22 to 20 ms under R's reference BLAS,
#' whose products dominate. With a multithreaded BLAS on the same cores it
#' gained nothing. OpenMP's threads wait actively for some milliseconds
#' after each pass; `OMP_WAIT_POLICY=passive` in the environment R starts
#' with (for example in `~/.Renviron`) makes them yield the core instead.
#' The option is read where the sweeps run, and futures carry it to their
#' workers: n threads in each of several workers share the machine's cores.
#'
#' @section Memory:
#' The memory a fit needs is estimated before any work: its factors, their
#' running moments and the draws kept, per chain. A fit is refused at once
#' (an error of class `bnmf_error_input` giving the sizes) when a single array
#' would exceed 2^31 - 1 elements (the largest the C code indexes; for
#' example `W` of a rank-10^6 fit of a 10^6 x 10^6 sparse matrix), or when the
#' estimated total exceeds `getOption("bnmf.max_memory")` (in bytes; unset by
#' default, as the memory available cannot be known portably).
#'
#' @param X A numeric matrix (features in rows, samples in columns), a
#'   numeric data frame, or a `Matrix::dgCMatrix` (whose zeros are observed
#'   zeros; only its stored `NA`s are missing), or a `SummarizedExperiment`
#'   (see `assay`). Or a formula `X ~ nmf(rank)` or `X ~ nmtf(K, L)`.
#' @param rank The number of factors `K`, between 1 and `min(dim(X))`; or
#'   two numbers `c(K, L)` for the tri-factorisation `X ~ F S t(G)` (see the
#'   section NMTF).
#' @param method `"gibbs"` (posterior sampling), `"vb"` (variational Bayes),
#'   `"icm"` (posterior mode), `"np"` (Lee-Seung multiplicative updates) or
#'   `"particles"` (a Stein-weighted set of factorisations; see the section
#'   Particles) or `"hmc"` (Hamiltonian Monte Carlo on the particle model;
#'   see the section HMC), `"svgd"` or `"dsgd"` (Stein variational and
#'   Stein discrepancy gradient descent; see the section SVGD and DSGD),
#'   `"ssvi"` (structured stochastic variational inference of the Poisson
#'   model with sparsity masks; see the section Counts) or `"rrt"` (RRT +
#'   online NVI; see the section RRT).
#' @param prior Prior of the factors: [exponential()] or [ard()] (automatic
#'   relevance determination). Not used by `"np"` and `"particles"`. For
#'   `likelihood = "poisson"`: [gamma_prior()] (shape, rate) of every entry
#'   of `W` and `H`, or `list(W = gamma_prior(), H = gamma_prior())` (see the
#'   section Counts); not given, `gamma_prior(1, "auto")` (exponential
#'   entries), and `gamma_prior(5, 2.5 * sqrt(K / mean(X)))` for method
#'   `"ssvi"` with masks (see [ssvi_control()], section Defaults).
#' @param noise Prior of the noise precision `tau`: [gamma_prior()]. The
#'   default `gamma_prior(shape = 1, rate = "auto")` sets the rate from the
#'   data, `rate = shape * 1e-4 * mean(X^2)` over the observed entries (see
#'   [priors]), so that a fit of `c * X` is `c` times the fit of `X`; an
#'   explicit number, e.g. `gamma_prior(1, 1)`, is used as given.
#' @param iter Number of sweeps per chain, burn-in included (Gibbs, HMC;
#'   default 2000), or the maximum number of sweeps (ICM, VB, NP; default
#'   1000); SSVI: the number of stochastic steps (default 100).
#' @param burnin Sweeps discarded at the start of each chain (Gibbs; HMC:
#'   the warm-up; default `iter / 2`).
#' @param thin Keep every `thin`-th sweep after burn-in (Gibbs, HMC).
#' @param chains Number of independent chains (Gibbs, HMC) or restarts (ICM, VB,
#'   NP; the restart with the highest log posterior, ELBO, or lowest loss is
#'   kept). Method `"ssvi"`: restarts, the one with the highest mean local
#'   log joint of its final phase kept; not given, 3 (one per start when
#'   `init` gives the starts), since a single run often ends with masks
#'   far from the truth (see [ssvi_control()], section Defaults).
#' @param init `"random"`: entries `sqrt(mean(X) / K)` times unit
#'   exponentials, improved by 10 sweeps of non-negative least squares; or a
#'   list with matrices `W` (I x K), `H` (K x J) and optionally `tau` (by
#'   default its conditional mode given `W` and `H`); or a list of such lists,
#'   one per chain. For counts (`likelihood = "poisson"`) also
#'   `"spectral"`: the samples clustered in the leading singular subspace of
#'   their normalised counts, `W` the clusters' profiles; the default of
#'   methods `"vb"` and `"gibbs"` without ARD (see the section Poisson). For a tri-factorisation `"nmf"` (its default: `F` and
#'   `G` from NMF ICM fits), `"kmeans"` (the start of Brouwer and Lio),
#'   `"random"` or lists with `F`, `S`, `G` (see the section NMTF).
#' @param tol ICM, VB and NP stop when the relative change of the log
#'   posterior (ICM), the ELBO (VB) or the loss (NP) between sweeps is at
#'   most `tol`. Methods `"gibbs"` and `"ssvi"` run all `iter` sweeps and
#'   take only 0 (or the default); method `"rrt"` takes its tolerance in
#'   [rrt_control()].
#' @param keep `"summary"` keeps running posterior means and standard
#'   deviations; `"draws"` also keeps the thinned draws of `W` and `H` (see
#'   [as.mcmc.bnmf()]).
#' @param wh_thin Method `"gibbs"` (Gaussian NMF): the running mean and
#'   standard deviation of `W %*% H` (behind [fitted()], [predict()],
#'   [residuals()]) are computed from every `wh_thin`-th kept draw of each
#'   chain, starting with its first kept draw (kept draws 1, 1 + `wh_thin`,
#'   1 + 2 `wh_thin`, ...; [update()] continues the count). Each such draw
#'   costs a third I x J x K product and an update of two I x J arrays,
#'   about half a sweep; with the default 4 a kept draw costs about 1.1
#'   sweeps instead of 1.5 (bench/README.md). The subset is fixed before the
#'   draws, so the estimate is exact in distribution, with a larger Monte
#'   Carlo error; [summary()] reports the number of draws it used and that
#'   error. The moments of `W`, `H` and `tau` use every kept draw; `wh_thin =
#'   1` uses every kept draw for `W %*% H` too.
#' @param loss For `method = "np"`: `"euclidean"` (squared error) or `"kl"`
#'   (generalised Kullback-Leibler divergence, as in the paper of Brouwer et
#'   al.).
#' @param progress Show a progress bar (for fits that take more than a couple
#'   of seconds).
#' @param data For the formula interface: where to find the variable on the
#'   left side (default: the formula's environment). A matrix `X` takes none.
#' @param particles Method `"particles"`: the number M of candidate
#'   factorisations; methods `"svgd"` and `"dsgd"`: the number of particles
#'   moved jointly (5 unless given). At most 46340 (their M x M kernel
#'   matrix must fit in one array); other methods take none.
#' @param likelihood Methods `"particles"`, `"hmc"`, `"svgd"` and `"dsgd"`:
#'   the likelihood, made by [silf()] (`NULL`, the default, means `silf()`).
#'   Methods `"vb"` and `"gibbs"`: `"poisson"` for counts (see the section
#'   Counts; `NULL`, the default, is the Gaussian likelihood); method
#'   `"ssvi"` is for `"poisson"` only (its default). Method `"rrt"`:
#'   `"gaussian"` (the default) or `"uniform"`. `"icm"` and `"np"` take none.
#' @param control Methods `"icm"`, `"vb"` and `"np"`: the treatment of
#'   missing entries, made by [icm_control()], [vb_control()] or
#'   [np_control()] (`NULL` means `icm_control()`, `vb_control()`,
#'   `np_control()`); method `"hmc"`: tuning
#'   of the sampler, made by
#'   [hmc_control()] (`NULL`, the default, means `hmc_control()`); methods
#'   `"svgd"` and `"dsgd"`: their steps, made by [stein_control()]; method
#'   `"ssvi"`: [ssvi_control()] (`NULL` means `ssvi_control()`); method
#'   `"rrt"`: the search and its settings, made by [rrt_control()].
#' @param sparsity `likelihood = "poisson"` only: the beta-process masks,
#'   `"none"` (the default: Bayesian Poisson-Gamma NMF), `"coef"` (a mask on
#'   `H`) or `"both"` (masks on `W` and `H`); masks need method `"ssvi"`.
#'   Also in the formula, `X ~ nmf(K, sparsity = "both")`.
#' @param mask_prior `likelihood = "poisson"` with masks: the beta-process
#'   prior of the mask probabilities, [beta_process()] (both masks) or
#'   `list(W = beta_process(), H = beta_process())`; `NULL` means
#'   `beta_process()`.
#' @param ... Not used: an argument here is an error naming it (with the
#'   closest argument of `bnmf()`); the NMF package's `nrun` and `seed` say to
#'   use `chains` and [set.seed()].
#' @param assay When `X` is a Bioconductor `SummarizedExperiment` (or
#'   `SingleCellExperiment`): the assay to factorise, a name or a number
#'   (default: the first assay); see the section Bioconductor data. Any
#'   other `X` takes none.
#' @param cluster `likelihood = "poisson"` with methods `"vb"` and `"gibbs"`, and
#'   Gaussian NMF with methods `"vb"`, `"icm"` and `"gibbs"`: a cluster
#'   of the parallel package (`parallel::makePSOCKcluster()`, on one or
#'   many hosts, with bnmf installed on each) whose workers hold the blocks
#'   of samples and update them in parallel; `NULL` (the default) fits in
#'   this process. The same numbers as in this process for the same
#'   `blocks` (Gibbs: each block draws from its own random number stream). See the
#'   section Data in blocks.
#' @param blocks `likelihood = "poisson"` with methods `"vb"` and `"gibbs"`, and
#'   Gaussian NMF with methods `"vb"`, `"icm"` and `"gibbs"`: the number of blocks of consecutive samples (columns) the sweeps run over. `NULL`
#'   (the default): one block for a matrix in memory, blocks of about
#'   `DelayedArray::getAutoBlockSize()` bytes for a `DelayedMatrix`, and at
#'   least one per worker of `cluster`. See the section Data in blocks.
#' @return An object of class `c("bnmf_<method>", "bnmf_<model>", "bnmf")` (model `"nmf"`, `"nmtf"` or `"poisson"`); see [factors()], [fitted.bnmf()],
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
bnmf <- function(X, rank = NULL, method = c("gibbs", "vb", "icm", "np", "particles", "hmc", "svgd",
                                          "dsgd", "ssvi", "rrt"),
                 prior = exponential(), noise = gamma_prior(), iter = NULL,
                 burnin = NULL, thin = 1, chains = 1, init = "random",
                 tol = 1e-6, keep = c("summary", "draws"),
                 loss = c("euclidean", "kl"),
                 progress = interactive(), data = NULL, particles = 20,
                 likelihood = NULL, control = NULL, sparsity = NULL, assay = NULL,
                 mask_prior = NULL, wh_thin = 4, cluster = NULL, blocks = NULL, ...) {
  call <- match.call()
  check_bnmf_dots(list(...))
  args <- mget(setdiff(names(formals(sys.function())), "..."), environment())
  given <- stats::setNames(names(args) %in% names(call), names(args))
  job <- bnmf_job(args, given, parent.frame())
  if (!is.null(job$runner)) on.exit(job$runner$close(), add = TRUE)
  engine <- job$engine
  # Build the model, lay out its independent tasks, run them, build the fit.
  job$model <- engine$model(job)
  job <- engine$tasks(job)
  runs <- run_tasks(job$tasks, engine$run_task, job = job, seeds = engine$seeds,
                    progress = job$task_progress, in_process = !is.null(job$runner))
  engine$build(runs, job, call)
}

# Arguments of bnmf() it does not have: an error naming them (with the
# closest name), and for the NMF package's `nrun` and `seed` what bnmf does
# instead.
check_bnmf_dots <- function(dots) {
  nms <- names(dots) %||% rep("", length(dots))
  if ("nrun" %in% nms) {
    abort_input("`nrun` is an argument of the NMF package's nmf(), not of `bnmf()`: bnmf runs independent chains (Gibbs, HMC) or restarts (ICM, VB, NP, keeping the best) with `chains = `, and `consensus_matrix()` pools them.")
  }
  if ("seed" %in% nms) {
    abort_input("`seed` is an argument of the NMF package's nmf(), not of `bnmf()`: call `set.seed()` before `bnmf()`; every chain's random number stream derives from it, under any future plan.")
  }
  check_dots_empty(dots, setdiff(names(formals(bnmf)), "..."), "bnmf")
}

# The methods of bnmf(), in the order of its `method` argument.
bnmf_methods <- c("gibbs", "vb", "icm", "np", "particles", "hmc", "svgd", "dsgd", "ssvi", "rrt")

# Check the call: the method picks the engine, which checks the arguments
# (all of them before any work, so that select_rank() can check its fits'
# arguments before starting any). `args` holds every argument of bnmf() by
# name (defaults filled in), `given` which of them the caller gave.
bnmf_job <- function(args, given, env) {
  method <- check_choice(args$method, bnmf_methods, "method")
  check_method_args(method, given, args$likelihood, args$tol)
  term <- parse_model(args$X, args$rank, args$prior, args$data, env)
  # Poisson VB reads a DelayedMatrix by blocks, Poisson Gibbs with `blocks`
  # or `cluster`; the others read it into memory
  by_blocks <- !is.null(args$cluster) || !is.null(args$blocks)
  pois_vb <- identical(args$likelihood, "poisson") &&
    (method == "vb" || (method == "gibbs" && by_blocks))
  # Gaussian NMF by blocks: methods "vb", "icm" and "gibbs", with `blocks` or
  # `cluster`
  gauss_blocks <- by_blocks && method %in% c("vb", "icm", "gibbs") &&
    !identical(args$likelihood, "poisson") && length(args$rank) == 1L
  if (!pois_vb && !gauss_blocks && by_blocks) {
    abort_unsupported(sprintf("`cluster`, `blocks`: fits by blocks of samples are for methods \"vb\", \"icm\" and \"gibbs\" (Gaussian NMF) and for `likelihood = \"poisson\"` with methods \"vb\" and \"gibbs\" only, not %s; fit the data in memory without them (or, for several chains, restarts or ranks in parallel, use a `future::plan()`).",
                              sprintf("method \"%s\"%s", method,
                                if (identical(args$likelihood, "poisson")) " with counts" else
                                  if (length(args$rank) == 2L) " of a tri-factorisation" else "")))
  }
  term$X <- assay_matrix(term$X, args$assay, keep_delayed = pois_vb || gauss_blocks)
  if (length(term$rank) == 2L) {
    if (given[["wh_thin"]]) {
      abort_input("`wh_thin` applies to NMF with method \"gibbs\" only, not to a tri-factorisation.")
    }
    if (identical(args$likelihood, "poisson")) {
      abort_input("`likelihood`: a tri-factorisation (`rank = c(K, L)`, `nmtf()`) has a Gaussian likelihood only.")
    }
  }
  engine <- bnmf_engine(method, args$likelihood, term$rank)
  if (!is.null(term$sparsity)) {
    if (given[["sparsity"]]) abort_input("`sparsity` is given both in the formula and as an argument; give it once.")
    given[["sparsity"]] <- TRUE
    args$sparsity <- term$sparsity
    check_method_args(method, given, args$likelihood, args$tol)
  }
  job <- args[setdiff(names(args), c("X", "rank", "prior", "data"))]
  job$method <- method
  job$X <- term$X
  job$rank <- term$rank
  job$prior <- term$prior
  # given as an argument or in the formula (`nmf(K, prior = )`)
  job$prior_given <- given[["prior"]] || isTRUE(term$prior_given)
  job$given <- given
  job$engine <- engine
  engine$check(job)
}

# The one place an engine is chosen, from the method, the likelihood and the
# rank (two numbers: the tri-factorisation, which checks its methods). The
# engine of a method's family: a list of `check` (the arguments, into a
# job), `model` (the model specification, nmf_spec()), `tasks` (the
# independent units: chains, restarts, candidates, in `job$tasks`),
# `run_task` (one unit, as run_tasks() calls it), `seeds` (whether the units
# draw random numbers) and `build` (the fit object).
bnmf_engine <- function(method, likelihood = NULL, rank = 1L) {
  if (length(rank) == 2L) return(nmtf_engine())
  if (method == "ssvi" || identical(likelihood, "poisson") && method %in% c("vb", "gibbs")) {
    return(poisson_engine())
  }
  switch(method, particles = particles_engine(), hmc = hmc_engine(),
         svgd = , dsgd = svgd_engine(), rrt = rrt_engine(), gaussian_engine())
}

# Arguments that the method does not take, before the model term is read.
check_method_args <- function(method, given, likelihood = NULL, tol = 1e-6) {
  if (method == "np" && any(given[c("prior", "noise")])) {
    abort_input("`prior`, `noise`: method \"np\" (Lee-Seung multiplicative updates) has no prior; use method \"icm\" or \"vb\" for a prior.")
  }
  pois <- identical(likelihood, "poisson") || method == "ssvi"
  control_methods <- c("icm", "vb", "np", "hmc", "svgd", "dsgd", "ssvi", "rrt")
  if (given[["control"]] && (!method %in% control_methods || pois && method == "vb")) {
    abort_input(sprintf("`control` applies to methods %s only (\"vb\" with the Gaussian likelihood).",
                        paste0("\"", control_methods, "\"", collapse = ", ")))
  }
  if (given[["likelihood"]] && !(method %in% c("particles", "hmc", "svgd", "dsgd", "rrt") ||
                                 pois && method %in% c("vb", "gibbs", "ssvi"))) {
    abort_input(sprintf("`likelihood` applies to methods \"particles\", \"hmc\", \"svgd\" and \"dsgd\" (made by `silf()`), to method \"rrt\" (\"gaussian\" or \"uniform\"), and `likelihood = \"poisson\"` to methods \"vb\", \"gibbs\" and \"ssvi\"; not to \"%s\" (whose likelihood is Gaussian).",
                        method))
  }
  if (given[["wh_thin"]] && (method != "gibbs" || pois)) {
    abort_input(sprintf("`wh_thin` applies to method \"gibbs\" with the Gaussian likelihood only, not to %s.",
                        if (pois) "`likelihood = \"poisson\"`" else sprintf("method \"%s\"", method)))
  }
  if (!pois && any(given[c("sparsity", "mask_prior")])) {
    abort_input("`sparsity`, `mask_prior` apply to `likelihood = \"poisson\"` only.")
  }
  if (given[["particles"]] && !pois && method %in% c("gibbs", "vb", "icm", "np")) {
    abort_input(sprintf("`particles` applies to methods \"particles\", \"svgd\" and \"dsgd\" only, not \"%s\"; use `chains` for several chains or restarts.",
                        method))
  }
  # These methods never test convergence: only tol = 0 (never stop early) or
  # the default agree with what they do.
  if (given[["tol"]] && method %in% c("gibbs", "ssvi", "rrt") &&
      !check_number(tol, "tol", 0) %in% c(0, 1e-6)) {
    abort_input(sprintf(switch(method,
      gibbs = "`tol` (%s) applies to the methods that iterate to convergence (\"vb\", \"icm\", \"np\", and the solves of \"particles\", \"hmc\", \"svgd\", \"dsgd\"), not to method \"gibbs\", which runs all `iter` sweeps; set `iter` instead.",
      ssvi = "`tol` (%s) does not apply to method \"ssvi\", which runs all `iter` stochastic steps; set `iter` instead.",
      rrt = "`tol` (%s) does not apply to method \"rrt\"; its non-negative least squares tolerance is `control = rrt_control(tol = )`."),
      format(tol)))
  }
}

check_rank_bound <- function(K, X) {
  if (K > min(dim(X))) {
    abort_input(sprintf("`rank` must be at most min(nrow(X), ncol(X)) = %d, not %d.",
                        min(dim(X)), K))
  }
}

# The formula interface: `X ~ nmf(rank, prior)`, read by bnmf itself.
parse_model <- function(X, rank, prior, data, env) {
  if (!inherits(X, "formula")) {
    if (!is.null(data)) {
      abort_input("`data` applies to the formula interface only (`bnmf(Y ~ nmf(rank), data = d)`); with a matrix `X` it is not used, so leave it out.")
    }
    if (is.null(rank)) abort_input("`rank` is missing: give the number of factors, e.g. `rank = 5`.")
    return(list(X = X, rank = check_rank(rank), prior = prior))
  }
  f <- X
  if (length(f) != 3L) abort_input("`X`: the formula must have a data matrix on its left side, as in `X ~ nmf(5)`.")
  fenv <- environment(f) %||% env
  lhs <- eval(f[[2L]], if (is.null(data)) fenv else data, fenv)
  rhs <- f[[3L]]
  if (!is.call(rhs) || !(identical(rhs[[1L]], as.name("nmf")) ||
                         identical(rhs[[1L]], as.name("nmtf")))) {
    abort_input(sprintf("`X`: the right side of the formula must be `nmf(rank)` or `nmtf(K, L)`, not `%s`.",
                        deparse1(rhs)))
  }
  terms_env <- new.env(parent = fenv)
  terms_env$nmf <- nmf
  terms_env$nmtf <- nmtf
  model <- eval(rhs, terms_env)
  if (!is.null(rank) && !identical(as.integer(rank), as.integer(model$rank))) {
    abort_input("`rank` is given both in the formula and as an argument; give it once.")
  }
  list(X = lhs, rank = model$rank, prior = model$prior %||% prior, sparsity = model$sparsity,
       prior_given = !is.null(model$prior))
}

# A rank: one whole number K (NMF), or two, c(K, L) (NMTF).
check_rank <- function(rank) {
  if (is.numeric(rank) && length(rank) == 2L) {
    return(c(check_count(rank[1L], "rank[1]", min = 1), check_count(rank[2L], "rank[2]", min = 1)))
  }
  # More than two numbers: the rank survey of the NMF package's habit.
  if (is.numeric(rank) && length(rank) > 2L) check_rank_survey(rank)
  check_count(rank, "rank", min = 1)
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
  n <- if (inherits(X, "dgCMatrix")) prod(as.double(dim(X))) else sum(!is.na(vals))
  warn_negative(sum(vals < 0, na.rm = TRUE), n)
}

# The warning (class bnmf_warning_negative) when more than 5% of the n
# observed entries of X are negative (`neg` of them); also for data read by
# blocks, from the blocks' counts.
warn_negative <- function(neg, n) {
  if (neg > 0 && neg / n > 0.05) {
    warning(structure(
      class = c("bnmf_warning_negative", "warning", "condition"),
      list(message = sprintf("%.1f%% of the observed entries of `X` are negative; the Gaussian model allows them, but W %%*%% H can only fit non-negative values.",
                             100 * neg / n), call = NULL)))
  }
  invisible()
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
