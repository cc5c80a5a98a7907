# Chib's (1995) estimator of the marginal likelihood log p(X) of the Bayesian
# NMF model (Schmidt, Winther and Hansen 2009, section 3.2).

#' Marginal likelihood by Chib's method
#'
#' Estimates the log marginal likelihood (the evidence) `log p(X)` of the
#' model of a fit, for comparing ranks or priors: Bayes' rule at one point
#' theta* of high posterior density,
#' \deqn{\log p(X) = \log p(X \mid \theta^*) + \log p(\theta^*) - \log p(\theta^* \mid X),}
#' with the posterior density in the last term estimated from Gibbs runs
#' (Chib 1995; Schmidt, Winther and Hansen 2009, section 3.2).
#'
#' The parameters are split into blocks: the `K` rows of `H`, then `tau`
#' (with an [ard()] prior together with the rates `lambda`), then the `K`
#' columns of `W` (when `ncol(X) >= nrow(X)` the roles of `W` and `H` are
#' swapped: the first factor is the one with fewer entries per block). By the
#' chain rule the posterior density at theta* is the product of the blocks'
#' densities, each given the blocks before it, and each is estimated by a
#' Rao-Blackwellised average over a Gibbs run of the posterior with the
#' earlier blocks held at theta*: the average over the run's draws of the
#' block's full conditional density at theta*.
#'
#' * A row of `H` given everything else is a product of truncated normals
#'   (its entries are conditionally independent), evaluated in log space and
#'   exactly in the tails.
#' * `(tau, lambda)` given `W` and `H` is a product of Gamma densities.
#' * Once `H`, `tau` and `lambda` are fixed the rows of `W` are independent,
#'   and so are the Gibbs sampler's chains for them, so the density of a
#'   column of `W` is estimated entry by entry, as a product of per-entry
#'   averages (same expectation, far smaller variance).
#'
#' Within each factor the blocks go from the factor with the largest share of
#' `W %*% H` at theta* to the smallest, which keeps the estimate stable when
#' the rank exceeds what the data support. Missing entries are left out of
#' the likelihood (masked).
#'
#' **Scale.** A factor can be scaled, `W[, k] * c` and `H[k, ] / c`, without
#' changing `W %*% H`: only the prior sets its scale, so the posterior is wide
#' along that path while the conditional of a whole row of `H` is narrow, and
#' its density at theta* would vary over many orders of magnitude between
#' draws. For the first `K` blocks every draw's conditional density is
#' therefore averaged over the exact conditional distribution of the factor's
#' scale (the distribution the sampler's scale move draws from) by
#' one-dimensional quadrature. This is again an unbiased Rao-Blackwell
#' average, with a far smaller variance. Once the first factor is fixed the
#' scales are fixed too.
#'
#' **Labels.** The posterior does not change when the factors are permuted
#' (their priors are the same), so it has `K!` copies of every mode, and a
#' Gibbs chain rarely moves between them. Rather than adding `log(K!)` (which
#' is right only when the copies do not overlap, and wrong for example for
#' factors the data do not support), each average uses the density
#' symmetrised over the labels that are still free: the mean over `k` of the
#' density of the target block as factor `k` of the draw. This is exact
#' whatever the chain's labelling and whether or not the modes overlap.
#' Factors with different prior rates (entry-wise rate matrices that differ
#' between factors) are not exchangeable and are used as labelled.
#'
#' **The point** theta* is by default the posterior mean (the fit's estimate:
#' for a `"vb"` fit the mean of q). `point = "map"` uses the posterior mode
#' found by ICM from there. Any point gives the same answer in expectation,
#' but the mode of the exponential-prior model lies on the boundary (many
#' entries exactly zero) in a region the sampler rarely visits, so its
#' averages are dominated by few draws; the mean is the more reliable choice.
#'
#' **Standard error.** Each block's average has a Monte Carlo standard error:
#' the larger of the batch-means standard error (`batches` batches of its
#' run, which absorbs the autocorrelation of the draws, carried to the log
#' scale by the delta method) and the spread of the log of the averages of
#' ten consecutive parts of the run, divided by `sqrt(10)`. The second sees
#' heavy-tailed densities, whose average a few draws decide (most parts of
#' the run miss them, so their log averages fall short), where the batch
#' means understate the error. The runs are independent, so their variances
#' add. Where a block's effective sample size (`blocks$ess`) is small, say
#' below 100, even this can understate the variation over repeated runs:
#' use more samples, and `plot()` shows whether the estimate has settled as
#' the number of samples grows. Below 10 the estimate cannot be trusted: its
#' log average is biased low (log p(X) high) and repeated estimates spread
#' by more than the se says (above the true rank, where the weak factors'
#' blocks rest on a few draws; `bench/README.md`); a warning (class
#' `bnmf_warning_chib_ess`) names the block.
#'
#' The estimate is conditional on the prior's hyperparameters: with the
#' default `exponential(rate = "auto")` the rate is set from the data and
#' the rank, so for model comparison give the rate explicitly.
#'
#' **Counts.** For a Poisson fit (`likelihood = "poisson"`, method
#' `"gibbs"`; default `samples = 5000`) the identity is
#' \eqn{\log p(X) = \log p(X | W^*, H^*) + \log p(W^*) + \log p(H^*) -
#' \sum_k \log p(W^*_{\cdot k} | W^*_{\cdot, <k}, X) - \log p(H^* | W^*, X)}
#' at the posterior mean. The auxiliary counts (each count split among the
#' factors) make every full conditional a Gamma, so every block is an exact
#' Rao-Blackwellised average: column `k` of \eqn{W^*} over a reduced run
#' with the columns before it held, averaged over each draw's scale orbit
#' (as above; the exact conditional of the scale is a generalised inverse
#' Gaussian, integrated by quadrature; `orbit = FALSE` turns this off) and
#' symmetrised over the labels still free; then \eqn{H^*} over a run with
#' `W` held at \eqn{W^*}, column by column. The factor with fewer entries
#' per factor comes first (`H` when `nrow(X) > ncol(X)`). The runs are
#' samplers in R, O(I J K) a sweep (a dense `X`; fits with an [ard()] prior
#' are refused). It equals exact sums over the splits of the counts on tiny
#' problems; on 30 x 20 counts see `bench/README.md` for the spread of
#' repeated estimates against their se. A warning (class
#' `bnmf_warning_chib_ess`) says when the weakest block's effective sample
#' size is below 10: use more `samples`, or compare ranks by
#' cross-validation.
#'
#' @param fit A `bnmf` fit of method `"gibbs"` or `"vb"` (Poisson: `"gibbs"`):
#'   the model (data, rank and priors) and the point theta*.
#' @param samples Number of Gibbs sweeps kept per block (Schmidt et al. used
#'   20,000).
#' @param burnin Number of sweeps discarded at the start of each run
#'   (default `max(100, samples / 10)`); the runs start at theta*.
#' @param point `"mean"` (the fit's estimate) or `"map"` (the posterior mode
#'   by ICM from the fit's estimate).
#' @param batches Number of batches for the standard errors.
#' @param progress Show a progress bar.
#' @param orbit Average the first `K` blocks over the factors' scale (see
#'   Scale); `FALSE` gives Chib's plain average, for comparison.
#' @param ... Not used: an argument here is an error (a misspelt name
#'   would otherwise be ignored).
#' @return An object of class `bnmf_marglik`: a list with `logml` (the
#'   estimate of `log p(X)`), `se` (its Monte Carlo standard error),
#'   `loglik` and `logprior` (the two terms at theta*), `logpost` (the
#'   estimated log posterior density at theta*), `blocks` (a data frame of
#'   the blocks' log densities, standard errors and `ess`, the effective
#'   number of draws behind each average, `(sum w)^2 / sum(w^2)` for the
#'   averaged densities `w`; for blocks estimated entry by entry the smallest
#'   over the entries), `point` (theta*:
#'   `W`, `H`, `tau` and with ARD `lambda`), `logdens` (a list with a matrix
#'   per block: the per-draw log conditional densities, one column per entry
#'   for the blocks estimated entry by entry), and the settings.
#'   `plot()` shows the estimate against the number of samples used.
#' @references Chib, S. (1995). Marginal likelihood from the Gibbs output.
#'   *Journal of the American Statistical Association* 90, 1313-1321.
#'
#'   Schmidt, M. N., Winther, O. and Hansen, L. K. (2009). Bayesian
#'   non-negative matrix factorization. *Independent Component Analysis and
#'   Signal Separation*, LNCS 5441, 540-547.
#' @seealso [select_rank()] to compare ranks.
#' @examples
#' set.seed(1)
#' W <- matrix(rexp(40 * 2), 40, 2)
#' H <- matrix(rexp(2 * 15), 2, 15)
#' X <- W %*% H + matrix(rnorm(40 * 15, sd = 0.5), 40, 15)
#' fit <- bnmf(X, rank = 2, prior = exponential(rate = 1), iter = 400)
#' ml <- marginal_likelihood(fit, samples = 2000)
#' ml
#' @export
marginal_likelihood <- function(fit, ...) UseMethod("marginal_likelihood")

#' @rdname marginal_likelihood
#' @export
marginal_likelihood.default <- function(fit, ...) {
  abort_input(sprintf("`fit` must be a bnmf fit, not an object of class %s.",
                      class(fit)[1L]))
}

#' @export
marginal_likelihood.bnmf_nmtf <- function(fit, ...) {
  abort_unsupported("`marginal_likelihood()`: Chib's estimate is implemented for Gaussian NMF, not for the tri-factorisation; compare ranks of an NMTF by cross-validation, `select_rank(X, ranks = list(c(2, 2), c(3, 3)), criterion = \"cv\")` with (K, L) pairs, or the ELBO of VB fits, `elbo()`.")
}

# Counts (likelihood = "poisson", Gibbs fits): Chib's identity at theta* =
# the posterior mean (W*, H*),
#   log p(X) = log p(X | W*, H*) + log p(W*) + log p(H*)
#              - sum_k log p(W*[, k] | W*[, <k], X) - log p(H* | W*, X).
# The auxiliary counts Z (x_ij split among the factors) make every full
# conditional a Gamma. Block k is a reduced run with W[, <k] held at W*:
# the average over its draws of (H, Z) of the Gamma density of W*[, k] given
# them, averaged over the exact conditional distribution of the factor's
# scale (the orbit W[, l] s, H[l, ] / s, along which the likelihood does not
# change; one-dimensional quadrature) and symmetrised over the labels still
# free (l = k..K; the prior treats the factors alike). The last block,
# p(H* | W*, X), is a reduced run with W held at W*, column by column (the
# columns of H are independent given W). The samplers are R code on the
# counts (O(I J K) a sweep: for small and moderate data).
#' @rdname marginal_likelihood
#' @export
marginal_likelihood.bnmf_poisson <- function(fit, samples = 5000, burnin = NULL, batches = 50,
                                             progress = interactive(), orbit = TRUE, ...) {
  check_dots_empty(list(...), names(formals()), "marginal_likelihood")
  if (fit$method != "gibbs") {
    abort_unsupported(sprintf("`marginal_likelihood()`: Chib's estimate of a Poisson fit needs method \"gibbs\", not \"%s\"; a VB fit's `elbo()` is a lower bound on log p(X), and `select_rank(criterion = \"evidence\", likelihood = \"poisson\")` compares ranks by it.",
                              fit$method))
  }
  if (identical(fit$prior$type, "ard")) {
    abort_unsupported("`marginal_likelihood()`: Chib's estimate of a Poisson fit is for Gamma priors with fixed rates, not `ard()`.")
  }
  s <- check_marglik_settings(samples, burnin, "mean", batches, progress, orbit)
  check_dense(fit, "`marginal_likelihood()`")
  X <- as.matrix(fit$X)
  O <- !is.na(X)
  X[!O] <- 0
  pr <- fit$prior
  W0 <- unname(fit$W); H0 <- unname(fit$H)
  K <- ncol(W0)
  M <- W0 %*% H0
  loglik <- sum(stats::dpois(X[O], M[O], log = TRUE))
  logprior <- sum(stats::dgamma(W0, pr$a, pr$b, log = TRUE)) +
    sum(stats::dgamma(H0, pr$c, pr$d, log = TRUE))
  # The first K blocks are the columns of the factor with fewer entries per
  # factor (their averages vary least): for I > J the transposed problem
  # X' = H' W', whose "W" is H'.
  flip <- nrow(X) > ncol(X)
  if (flip) {
    X <- t(X); O <- t(O)
    tmp <- W0; W0 <- t(H0); H0 <- t(tmp)
    pr <- list(a = pr$c, b = pr$d, c = pr$a, d = pr$b)
  }
  # the strongest factors first (as for Gaussian fits)
  ord <- order(colSums(W0) * rowSums(H0), decreasing = TRUE)
  W0 <- W0[, ord, drop = FALSE]
  H0 <- H0[ord, , drop = FALSE]
  n <- s$burnin + s$samples
  pb <- progress_start(s$progress, (K + 1L) * n, "Chib's runs (Poisson)")
  on.exit(progress_done(pb), add = TRUE)
  logdens <- vector("list", K + 1L)
  for (k in seq_len(K)) {
    logdens[[k]] <- matrix(pois_chib_block(X, O, W0, H0, pr, k, s, s$orbit,
                                           function(t) progress_update(pb, (k - 1L) * n + t)))
  }
  # W held at W*: the density of H* given Z, column by column
  H <- H0
  rate_H <- pr$d + t(W0) %*% O
  lh <- matrix(0, s$samples, ncol(X))
  for (t in seq_len(n)) {
    z <- pois_split(W0, H, X)
    if (t > s$burnin) {
      lh[t - s$burnin, ] <- colSums(stats::dgamma(H0, pr$c + z$zH, rate_H, log = TRUE))
    }
    H <- matrix(stats::rgamma(length(H), pr$c + z$zH, rate_H), K)
    if (t %% 50L == 0L) progress_update(pb, K * n + t)
  }
  logdens[[K + 1L]] <- lh
  fa <- if (flip) "H[%d,]" else "W[,%d]"
  names(logdens) <- c(sprintf(fa, ord), if (flip) "W | H" else "H | W")
  est <- vapply(logdens, function(m) {
    e <- apply(m, 2L, log_mean_exp_se, batches = s$batches)
    c(sum(e[1L, ]), sqrt(sum(e[2L, ]^2)), min(apply(m, 2L, weight_ess)))
  }, numeric(3))
  blk <- data.frame(block = names(logdens), log_density = est[1L, ], se = est[2L, ],
                    ess = est[3L, ], row.names = NULL)
  logpost <- sum(blk$log_density)
  warn_chib_ess(blk, "likelihood = \"poisson\"")
  validate_marglik(new_marglik(list(
    logml = loglik + logprior - logpost, se = sqrt(sum(blk$se^2)),
    loglik = loglik, logprior = logprior, logpost = logpost, blocks = blk,
    point = list(W = unname(fit$W), H = unname(fit$H)), point_type = "mean", logdens = logdens,
    samples = s$samples, burnin = s$burnin, batches = s$batches,
    symmetrised = K > 1L, rank = K, dims = fit$dims
  )))
}

# One reduced run of Poisson Chib: W[, <k] held at W0, (Z, H, W[, k:K])
# drawn in turn; at each kept sweep, the log density of W0[, k] given the
# sweep's (H, Z), averaged over the scale orbit of each free factor l and
# over the free labels l = k..K. `tick(t)` reports progress.
pois_chib_block <- function(X, O, W0, H0, pr, k, s, orbit, tick) {
  K <- ncol(W0)
  I <- nrow(X); J <- ncol(X)
  free <- k:K
  W <- W0; H <- H0
  w0 <- W0[, k]
  lw0 <- log(w0)
  out <- numeric(s$samples)
  for (t in seq_len(s$burnin + s$samples)) {
    z <- pois_split(W, H, X)
    H <- matrix(stats::rgamma(length(H), pr$c + z$zH, pr$d + t(W) %*% O), K)
    R <- O %*% t(H)
    if (t > s$burnin) {
      lp <- vapply(free, function(l) {
        al <- pr$a + z$zW[, l]
        if (!orbit) {
          return(sum(stats::dgamma(w0, al, pr$b + R[, l], log = TRUE)))
        }
        pois_orbit_logdens(w0, lw0, al, R[, l], pr$b, I * pr$a - J * pr$c,
                           pr$b * sum(W[, l]), pr$d * sum(H[l, ]))
      }, numeric(1))
      out[t - s$burnin] <- log_mean_exp(lp)
    }
    W[, free] <- matrix(stats::rgamma(I * length(free), pr$a + z$zW[, free],
                                      pr$b + R[, free]), I)
    if (t %% 50L == 0L) tick(t)
  }
  out
}

# log E_s[prod_i Gamma(w0_i; al_i, b + R_i / s)], s the scale of a factor
# along its orbit (W[, l] s, H[l, ] / s) given the draw: its log density in
# u = log s is p u - beta e^u - delta e^-u (p = I a - J c, beta = b sum
# W[, l], delta = d sum H[l, ]), a log-concave density with mode and
# curvature in closed form. Trapezoid rule in u over +/- 10 sd of it, with a
# step fine enough for the Gamma factor too (width about 1 / sqrt(sum al)
# in u).
pois_orbit_logdens <- function(w0, lw0, al, R, b, p, beta, delta) {
  x <- (p + sqrt(p^2 + 4 * beta * delta)) / (2 * beta)
  sd <- 1 / sqrt(beta * x + delta / x)
  step <- min(sd, 1 / sqrt(sum(al))) / 4
  m <- min(ceiling(10 * sd / step), 4000L)
  u <- log(x) + seq(-m, m) * (10 * sd / m)
  lwt <- p * u - beta * exp(u) - delta * exp(-u)
  rate <- b + outer(R, exp(-u))
  lf <- colSums(al * log(rate) - rate * w0) + sum((al - 1) * lw0 - lgamma(al))
  logsumexp(lwt + lf) - logsumexp(lwt)
}

#' @rdname marginal_likelihood
#' @export
marginal_likelihood.bnmf <- function(fit, samples = 20000, burnin = NULL,
                                     point = c("mean", "map"), batches = 50,
                                     progress = interactive(), orbit = TRUE, ...) {
  check_dots_empty(list(...), names(formals()), "marginal_likelihood")
  if (!fit$method %in% c("gibbs", "vb")) {
    abort_unsupported(sprintf("`fit`: Chib's method needs a fit of method \"gibbs\" (or \"vb\"), whose posterior mean is the point theta*; not \"%s\".",
                        fit$method))
  }
  s <- check_marglik_settings(samples, burnin, point, batches, progress, orbit)
  samples <- s$samples
  burnin <- s$burnin
  point <- s$point
  batches <- s$batches
  progress <- s$progress
  X <- fit$X
  K <- fit$rank
  I <- fit$dims[1L]
  J <- fit$dims[2L]
  if (any(fit$prior$lamW <= 0) || any(fit$prior$lamH <= 0)) {
    abort_input("`fit`: Chib's method needs a proper prior (exponential rates > 0).")
  }
  data <- prepare_data(X, K)
  ard <- identical(fit$prior$type, "ard")
  prior <- c_prior(fit)
  theta <- chib_point(fit, X, data, prior, point)
  # The blocks of the strongest factors first: a weakly determined factor
  # varies most from draw to draw, and its blocks are better estimated with
  # the others held fixed (measured on Schmidt et al.'s toy data at rank 4:
  # weakest first makes the first block's log densities vary with an sd of
  # 44 instead of 8).
  ord <- order(colSums(theta$W) * rowSums(theta$H), decreasing = TRUE)
  theta$W <- theta$W[, ord, drop = FALSE]
  theta$H <- theta$H[ord, , drop = FALSE]
  if (ard) theta$lambda <- theta$lambda[ord]
  prior$lamW <- prior$lamW[, ord, drop = FALSE]
  prior$lamH <- prior$lamH[ord, , drop = FALSE]
  num <- chib_log_joint(X, data, prior, theta)
  sym <- ard || labels_exchangeable(prior$lamW, prior$lamH)

  # The first K blocks are the factor with the fewer entries per column (the
  # rows of H when J < I): their density, averaged over the scale path, then
  # varies least from draw to draw. The C code always starts with the columns
  # of its W, so it sees the transposed problem X' = H' W' when J < I.
  flip <- J < I
  fa <- if (flip) "H[%d,]" else "W[,%d]"
  fb <- if (flip) "W[,%d]" else "H[%d,]"
  blocks <- c(sprintf(fa, seq_len(K)), if (ard) "tau, lambda" else "tau",
              sprintf(fb, seq_len(K)))
  run <- if (flip) {
    Xt <- if (inherits(X, "Matrix")) Matrix::t(X) else t(X)
    list(X = Xt, data = prepare_data(Xt, K),
         prior = c_prior(fit, lamW = t(prior$lamH), lamH = t(prior$lamW)),
         W = t(theta$H), H = t(theta$W))
  } else {
    list(X = X, data = data, prior = prior, W = theta$W, H = theta$H)
  }
  target <- list(W = run$W, H = run$H, tau = theta$tau)
  if (ard) target$lambda <- as.double(theta$lambda)
  # "W": the first factor's K blocks; "tau": (tau, lambda); "H": the other
  # factor's K blocks, each a matrix of per-entry log densities
  types <- c(rep("W", K), "tau", rep("H", K))
  index <- c(seq_len(K), 1L, seq_len(K))
  logdens <- vector("list", length(blocks))
  names(logdens) <- blocks
  pb <- progress_start(progress, length(blocks), "Chib's reduced runs")
  for (b in seq_along(blocks)) {
    st <- new_state(run$X, run$data, run$W, run$H, theta$tau,
                    numeric(length(run$data$miss_pos)), FALSE,
                    lambda = if (ard) theta$lambda)
    logdens[[b]] <- as.matrix(engine_chib(st, run$data, run$prior, target, burnin, samples,
                                          block = types[b], index = index[b],
                                          sym = sym && types[b] == "W", orbit = orbit))
    progress_update(pb, b)
  }
  progress_done(pb)
  est <- vapply(logdens, function(m) {
    e <- apply(m, 2L, log_mean_exp_se, batches = batches)
    c(sum(e[1L, ]), sqrt(sum(e[2L, ]^2)), min(apply(m, 2L, weight_ess)))
  }, numeric(3))
  blk <- data.frame(block = blocks, log_density = est[1L, ], se = est[2L, ],
                    ess = est[3L, ], row.names = NULL)
  logpost <- sum(blk$log_density)
  warn_chib_ess(blk, NULL)
  validate_marglik(new_marglik(list(
    logml = num$loglik + num$logprior - logpost,
    se = sqrt(sum(blk$se^2)),
    loglik = num$loglik, logprior = num$logprior, logpost = logpost,
    blocks = blk, point = theta, point_type = point, logdens = logdens,
    samples = samples, burnin = burnin, batches = batches,
    symmetrised = sym, rank = K, dims = fit$dims
  )))
}

# The settings of marginal_likelihood(), checked (also by select_rank(),
# before any fit starts).
check_marglik_settings <- function(samples = 20000, burnin = NULL, point = c("mean", "map"),
                                   batches = 50, progress = FALSE, orbit = TRUE) {
  batches <- check_count(batches, "batches", min = 2)
  samples <- check_count(samples, "samples", min = batches)
  list(samples = samples, batches = batches,
       burnin = check_count(burnin %||% max(100L, samples %/% 10L), "burnin", min = 0),
       point = check_choice(point, c("mean", "map"), "point"),
       progress = check_flag(progress, "progress"), orbit = check_flag(orbit, "orbit"))
}

# The result of marginal_likelihood(): a list of class bnmf_marglik.
new_marglik <- function(x) {
  stopifnot(is.list(x))
  structure(x, class = "bnmf_marglik")
}

# Values of a bnmf_marglik: finite log densities with
# logml = loglik + logprior - logpost, logpost the sum of the blocks'
# log densities, one matrix of per-draw log densities per block, and effective
# sample sizes between 1 and the number of draws.
validate_marglik <- function(x) {
  bad <- function(what) abort_fit(sprintf("the marginal likelihood has %s", what))
  parts <- c(x$logml, x$loglik, x$logprior, x$logpost)
  if (length(parts) != 4L || any(!is.finite(parts))) bad("non-finite log densities")
  if (abs(x$logml - (x$loglik + x$logprior - x$logpost)) > 1e-8 * max(1, abs(x$logml))) {
    bad("logml != loglik + logprior - logpost")
  }
  b <- x$blocks
  if (!is.data.frame(b) || length(x$logdens) != nrow(b) ||
      abs(sum(b$log_density) - x$logpost) > 1e-8 * max(1, abs(x$logpost))) {
    bad("blocks that do not add up to its log posterior density")
  }
  n <- vapply(x$logdens, nrow, numeric(1))
  if (any(!(b$ess >= 1 - 1e-9 & b$ess <= n + 1e-9))) bad("effective sample sizes outside [1, draws]")
  if (!(is.na(x$se) || x$se >= 0)) bad("a negative standard error")
  x
}

# theta*: the posterior mode by ICM from the fit's estimate, or the estimate.
chib_point <- function(fit, X, data, prior, point) {
  ard <- length(prior$ard) == 2L
  start <- list(W = fit$W + 0, H = fit$H + 0, tau = fit$tau,
                lambda = if (ard) unname(fit$lambda) else NULL)
  if (point == "mean") return(start)
  run <- run_chain(X, data, prior, "icm", iter = 2000L, burnin = 0L, thin = 1L,
                   keep = "summary", tol = 1e-12, start = start, progress = FALSE,
                   masked = TRUE)
  st <- run$state
  list(W = matrix(st$W, nrow(start$W)), H = matrix(st$H, ncol = ncol(start$H)),
       tau = st$tau[[1L]], lambda = if (ard) st$lambda + 0 else NULL)
}

# log p(X | theta) and log p(theta) at a point, and the SSE there.
chib_log_joint <- function(X, data, prior, theta) {
  W <- theta$W
  H <- theta$H
  tau <- theta$tau
  sse <- sse_at(X, data, W, H)
  loglik <- 0.5 * data$n_obs * (log(tau) - log(2 * pi)) - 0.5 * tau * sse
  logprior <- stats::dgamma(tau, prior$alpha, prior$beta, log = TRUE)
  if (length(prior$ard) == 2L) {
    lam <- theta$lambda
    mass <- colSums(W) + rowSums(H)
    logprior <- logprior + sum((nrow(W) + ncol(H)) * log(lam) - lam * mass +
                                 stats::dgamma(lam, prior$ard[1L], prior$ard[2L], log = TRUE))
  } else {
    logprior <- logprior + sum(log(prior$lamW) - prior$lamW * W) +
      sum(log(prior$lamH) - prior$lamH * H)
  }
  list(loglik = loglik, logprior = logprior, sse = sse)
}

# Sum of squared errors of W H over the observed entries of X.
sse_at <- function(X, data, W, H) {
  if (data$sparse == 1L) {
    j <- rep.int(seq_len(ncol(X)) - 1L, diff(X@p))
    r <- X@x - wh_entries(W, H, X@i, j)
    return(sum(r^2, na.rm = TRUE))
  }
  sum((X - W %*% H)^2, na.rm = TRUE)
}

# Are the factors exchangeable a priori (the same rates for every k)?
labels_exchangeable <- function(lamW, lamH) {
  all(lamW == lamW[, 1L]) && all(t(lamH) == lamH[1L, ])
}

# The effective sample size of an average of exp(v): (sum w)^2 / sum w^2.
weight_ess <- function(v) {
  w <- exp(v - max(v))
  sum(w)^2 / sum(w^2)
}

# log(mean(exp(v))), without overflow.
log_mean_exp <- function(v) {
  m <- max(v)
  if (!is.finite(m)) return(m)
  m + log(mean(exp(v - m)))
}

# log(mean(exp(v))) and its standard error: the larger of the batch-means
# standard error (`batches` batches, carried to the log scale by the delta
# method) and the spread on the log scale of the estimates from `segments`
# consecutive parts of the run, sd / sqrt(segments). When a few draws decide
# the average (heavy-tailed densities), most parts miss them and their
# log-scale estimates fall short, which the batch means of the densities
# themselves do not show: on Schmidt et al.'s toy data above the true rank
# they understated the spread of repeated estimates up to 2.7-fold
# (bench/chib-se.R).
log_mean_exp_se <- function(v, batches, segments = 10L) {
  m <- max(v)
  if (!is.finite(m)) return(c(m, NA_real_))
  e <- exp(v - m)
  n <- length(e)
  size <- n %/% batches
  bm <- colMeans(matrix(e[seq_len(size * batches)], size))
  mu <- mean(e)
  se <- stats::sd(bm) / sqrt(batches) / mu
  size <- n %/% segments
  if (segments >= 2L && size >= 2L) {
    seg <- apply(matrix(v[seq_len(size * segments)], size), 2L, log_mean_exp)
    se <- max(se, stats::sd(seg) / sqrt(segments))
  }
  c(m + log(mu), se)
}

#' @export
print.bnmf_marglik <- function(x, digits = 4, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat(sprintf("Log marginal likelihood (Chib's method), rank %d, X %d x %d\n",
              x$rank, x$dims[1L], x$dims[2L]))
  cat(sprintf("  log p(X) = %s (Monte Carlo se %s)\n",
              format(round(x$logml, 2), nsmall = 2),
              if (is.finite(x$se)) format(signif(x$se, 2)) else
                "NA: a block's per-draw log densities are not finite"))
  cat(sprintf("  at theta* = the posterior %s: log p(X | theta*) %s, log p(theta*) %s,\n",
              if (x$point_type == "map") "mode" else "mean (fit's estimate)",
              format(round(x$loglik, 2), nsmall = 2), format(round(x$logprior, 2), nsmall = 2)))
  cat(sprintf("  log p(theta* | X) %s from %d blocks x %s samples (burn-in %s)%s\n",
              format(round(x$logpost, 2), nsmall = 2), nrow(x$blocks),
              format(x$samples, big.mark = ","), format(x$burnin, big.mark = ","),
              if (x$symmetrised) ", symmetrised over labels" else ""))
  low <- which.min(x$blocks$ess)
  cat(sprintf("  smallest effective sample size of a block's average: %s (%s)\n",
              format(round(x$blocks$ess[low])), x$blocks$block[low]))
  if (x$blocks$ess[low] < 100) cat_low_ess_hint()
  invisible(x)
}

# Below an effective sample size of 10 a block's average rests on a few
# draws: its log is biased low (so log p(X) high) and the spread of repeated
# estimates exceeds the reported se (bench/README.md, chib-se.R: at ranks
# above the true one). `likelihood`: the select_rank() argument to suggest.
warn_chib_ess <- function(blk, likelihood) {
  low <- which.min(blk$ess)
  if (blk$ess[low] >= 10) return(invisible())
  bnmf_signal(warning, "bnmf_warning_chib_ess", sprintf(
    "Chib's estimate cannot be trusted here: the average of block %s is decided by few draws (effective sample size %.1f), so its log is biased low and log p(X) high, by more than its se says. Use more `samples`, or compare ranks by `select_rank(criterion = \"cv\"%s)`.",
    blk$block[low], blk$ess[low], if (is.null(likelihood)) "" else paste0(", ", likelihood)))
}

# The hint printed when a block's effective sample size is below 100.
cat_low_ess_hint <- function() {
  cat("  (below 100 a few draws decide that block's average and the standard error\n",
      "  may understate the error: use more samples, and check plot())\n", sep = "")
}

#' @rdname marginal_likelihood
#' @param x A `bnmf_marglik` object.
#' @param n Numbers of samples at which to show the estimate (from the
#'   first draws of every block's run).
#' @export
plot.bnmf_marglik <- function(x, n = NULL, ...) {
  check_dots_graphics(list(...))
  N <- nrow(x$logdens[[1L]])
  n <- n %||% unique(round(exp(seq(log(min(100, N)), log(N), length.out = 30))))
  n <- n[n >= 2 & n <= N]
  est <- vapply(n, function(m) {
    x$loglik + x$logprior - sum(vapply(x$logdens, function(ld) {
      sum(apply(ld[seq_len(m), , drop = FALSE], 2L, log_mean_exp))
    }, numeric(1)))
  }, numeric(1))
  graphics::plot(n, est, type = "b", log = "x", pch = 19, cex = 0.6,
                 xlab = "samples per block", ylab = "log p(X) estimate",
                 main = sprintf("Chib's estimate, rank %d", x$rank), ...)
  graphics::abline(h = x$logml, lty = 2, col = "grey50")
  invisible(data.frame(samples = n, logml = est))
}
