#' Priors and model terms
#'
#' `exponential()` is the prior of the factors: every entry of `W` and `H`
#' is exponential with rate `rate` (mean `1 / rate`). `gamma_prior()` is the
#' prior of the noise precision `tau` (the inverse variance of the Gaussian
#' likelihood). Every distribution in bnmf is parametrised by its **rate**,
#' never its scale.
#'
#' `ard()` is the automatic relevance determination prior (Brouwer, Frellsen
#' and Lio 2017): one rate per factor, shared by column `k` of `W` and row `k`
#' of `H`, \eqn{W_{ik} \sim Exp(\lambda_k)}, \eqn{H_{kj} \sim Exp(\lambda_k)},
#' with \eqn{\lambda_k \sim Gamma(\alpha_0, \beta_0)}. A factor the data do not
#' need gets a large rate, which shrinks it to zero: fit more factors than
#' you expect and let ARD switch the superfluous ones off (see the relevance
#' table of [summary.bnmf()] and `plot(fit, type = "ard")`). Gibbs draws
#' \eqn{\lambda_k} from \eqn{Gamma(\alpha_0 + I + J, \beta_0 + \sum_i W_{ik} +
#' \sum_j H_{kj})}, VB uses the same with expectations, ICM its mode.
#'
#' With `likelihood = "poisson"` (methods `"vb"` and `"gibbs"`), `ard()` is
#' the ARD of Tan and Fevotte (2013) for the KL loss in conjugate form:
#' \eqn{W_{ik} \sim Gamma(a, \lambda_k)}, \eqn{H_{kj} \sim Gamma(c,
#' \lambda_k)}, \eqn{\lambda_k \sim Gamma(\alpha_0, \beta_0)}, with
#' `a = c = 1` for `prior = ard()` and other shapes by `prior = list(W =
#' gamma_prior(a), H = gamma_prior(c), lambda = ard())`; see the section
#' Counts of [bnmf()].
#'
#' @section The default beta0:
#' `ard()` without `beta0` takes the model's default, which follows the
#' scale of the data. For Gaussian NMF it is `beta0 = alpha0 * sqrt(mean(X)
#' / K)` over the observed entries, so that the prior mean of every rate,
#' `alpha0 / beta0 = sqrt(K / mean(X))`, is the automatic rate of
#' `exponential()` (see The automatic rate); for the tri-factorisation
#' (`nmtf()`) `beta0 = alpha0 / (K L / mean(X))^(1/3)`, the automatic rate of
#' `F`, `S` and `G`. The fit of `c * X` is then that of `X` with the factors
#' multiplied by `sqrt(c)` (NMTF: `c^(1/3)`), whatever `c`. (Before version
#' 0.1.0 the Gaussian default was `beta0 = 1`, which is not scale-free: for
#' data whose factors are far below 1, say `X` around `1e-6`, the prior mean
#' rate 1 is far too small to shrink them and ARD switched no factor off.) A
#' mean of `X` that is not positive needs `beta0` given. For counts
#' (`likelihood = "poisson"`) it follows the scale of the counts:
#' `beta0 = alpha0 * sqrt(mean(X) / (a c K))` over the observed entries, so
#' that the prior mean of every rate, `alpha0 / beta0 = sqrt(a c K /
#' mean(X))`, is the rate that puts the prior mean of every entry of `W H`
#' at `mean(X)` (as the automatic rate of `gamma_prior()` does without ARD).
#' Counts `s` times as large give rates `1 / sqrt(s)` times as large, and
#' the factors that ARD switches off stay a negligible part of the fit at
#' every scale: a fixed `beta0` would, for counts with a small mean, make
#' the factors that the data do not need carry a sizeable part of them. The
#' value used is `fit$prior$ard[2]`, shown by `print(fit)`.
#'
#' `nmf(rank, prior)` is the model term of the formula interface,
#' `bnmf(X ~ nmf(5))`. It is read by [bnmf()] itself (it is not exported, so it
#' never masks `NMF::nmf()`).
#'
#' @section The automatic rate:
#' With `rate = "auto"` (the default) the rate is set from the data so that the
#' prior mean of every entry of `W %*% H` equals the mean of the observed
#' entries of `X`: with `K` factors, `E[(WH)_ij] = K / rate^2`, so
#' `rate = sqrt(K / mean(X))`. This makes the default prior sensible for data
#' of any magnitude; `print(fit)` shows the value used. If the mean of `X` is
#' not positive, give the rate explicitly.
#'
#' @section The automatic noise rate:
#' `gamma_prior(shape, rate = "auto")` (the default of [bnmf()]'s `noise`)
#' sets the rate from the observed entries of `X`,
#' `rate = shape * 1e-4 * mean(X^2)`, so that the prior mean of the noise
#' precision is `shape / rate = 1e4 / mean(X^2)`: a priori a noise sd of
#' about 1% of the root mean square of `X`, with the weight of `2 * shape`
#' observed entries (the posterior of `tau` is
#' `Gamma(shape + n / 2, rate + SSE / 2)`), so that it moves the estimated
#' noise variance by a fraction of about
#' `2e-4 * shape * mean(X^2) / (n * sigma^2)`:
#' negligible unless the noise sd is far below 1% of the data's. The noise
#' precision has units of `1 / X^2`, so with this rate and the automatic rate
#' of `exponential()` the whole posterior follows the units of `X`: the fit
#' of `c * X` is the fit of `X` with `W`, `H` multiplied by `sqrt(c)` and
#' `tau` divided by `c^2`. A fixed rate does not: with `gamma_prior(1, 1)`
#' (the default before version 0.1.0, the same as `"auto"` for data with
#' `mean(X^2) = 1e4`) data in small units get a prior noise far larger than
#' the data, and the fit shrinks to zero. (If every observed entry is zero
#' the data have no scale and the rate is `shape`.) The value used is stored
#' in `fit$noise$rate` and shown by `print(fit)`; `update()` keeps it; for a
#' near-exact fit whose noise is far below 1% give a smaller rate. Method
#' `"np"` has no noise prior.
#'
#' @param rate For `exponential()`: the exponential rate, `"auto"`, a single
#'   number, or a list with matrices `W` (I x K) and `H` (K x J) of entry-wise
#'   rates. A rate of 0 (a flat, improper prior) is allowed for
#'   `method = "icm"` only. For `gamma_prior()`: the rate of the Gamma prior of
#'   `tau` (its prior mean is `shape / rate`), a single number > 0 or `"auto"`
#'   (the default): `shape * 1e-4 * mean(X^2)` over the observed entries (see
#'   The automatic noise rate).
#' @param rank The number of factors `K`.
#' @param alpha0,beta0 Shape and rate of the Gamma prior of each ARD rate
#'   \eqn{\lambda_k}. `beta0 = NULL` (the default) is the model's default:
#'   `alpha0 * sqrt(mean(X) / K)` for Gaussian NMF, `alpha0 / (K L /
#'   mean(X))^(1/3)` for NMTF, `alpha0 * sqrt(mean(X) / (a c K))` for counts
#'   (see The default beta0).
#' @return An object of class `bnmf_prior` (`exponential()`, `ard()`), `bnmf_noise`
#'   (`gamma_prior()`) or `bnmf_model` (`nmf()`).
#' @examples
#' exponential()
#' exponential(rate = 2)
#' ard()
#' gamma_prior(shape = 2, rate = 0.5)
#' gamma_prior()
#' fit <- bnmf(leukemia[1:50, 1:20] ~ nmf(2), method = "icm")
#' fit
#' @name priors
NULL

#' @rdname priors
#' @export
exponential <- function(rate = "auto") {
  if (identical(rate, "auto")) {
    return(structure(list(type = "exponential", rate = "auto"), class = "bnmf_prior"))
  }
  if (is.list(rate) && !is.data.frame(rate)) {
    if (!all(c("W", "H") %in% names(rate))) {
      abort_input("`rate` given as a list must have matrices `W` and `H`.")
    }
    for (nm in c("W", "H")) {
      r <- rate[[nm]]
      if (!is.numeric(r) || !is.matrix(r) || anyNA(r) || any(!is.finite(r)) || any(r < 0)) {
        abort_input(sprintf("`rate$%s` must be a matrix of finite rates >= 0.", nm))
      }
    }
    return(structure(list(type = "exponential", rate = list(W = rate$W, H = rate$H)),
                     class = "bnmf_prior"))
  }
  if (!is.numeric(rate) || length(rate) != 1L || is.na(rate) || !is.finite(rate) ||
      rate < 0) {
    abort_input("`rate` must be \"auto\", a single finite number >= 0, or a list of rate matrices `W` and `H`.")
  }
  structure(list(type = "exponential", rate = as.numeric(rate)), class = "bnmf_prior")
}

#' @rdname priors
#' @export
ard <- function(alpha0 = 1, beta0 = NULL) {
  alpha0 <- check_number(alpha0, "alpha0", 0, min_open = TRUE)
  # beta0 not given: set from the data when the model is resolved
  # (beta0_auto; resolve_rates(), nmtf_prior(), resolve_pois_ard())
  auto <- is.null(beta0)
  beta0 <- if (auto) 1 else check_number(beta0, "beta0", 0, min_open = TRUE)
  structure(list(type = "ard", alpha0 = alpha0, beta0 = beta0, beta0_auto = auto),
            class = "bnmf_prior")
}

#' @rdname priors
#' @param shape Shape of the Gamma prior of the noise precision `tau`.
#' @export
gamma_prior <- function(shape = 1, rate = "auto") {
  shape <- check_number(shape, "shape", 0, min_open = TRUE)
  if (!identical(rate, "auto")) {
    if (is.character(rate)) abort_input("`rate` must be \"auto\" or a single finite number > 0.")
    rate <- check_number(rate, "rate", 0, min_open = TRUE)
  }
  structure(list(shape = shape, rate = rate), class = "bnmf_noise")
}

#' @rdname priors
#' @param prior For `nmf()`: the prior of the factors, `exponential()` or
#'   `ard()` (for `likelihood = "poisson"`: `gamma_prior()`, a list of two,
#'   `ard()` or `list(W = gamma_prior(a), H = gamma_prior(c), lambda = ard())`).
#' @param sparsity For `nmf()`: the masks of the Poisson model, `"none"`,
#'   `"coef"` or `"both"` (see [bnmf()], section Counts).
nmf <- function(rank, prior = NULL, sparsity = NULL) {
  rank <- check_count(rank, "rank", min = 1)
  if (!is.null(prior) && !inherits(prior, c("bnmf_prior", "bnmf_noise")) &&
      !(is.list(prior) && all(c("W", "H") %in% names(prior)))) {
    abort_input("`prior` must be made by `exponential()` or `ard()` (or, for `likelihood = \"poisson\"`, `gamma_prior()`).")
  }
  if (!is.null(sparsity)) sparsity <- check_choice(sparsity, c("none", "coef", "both"), "sparsity")
  structure(list(type = "nmf", rank = rank, prior = prior, sparsity = sparsity),
            class = "bnmf_model")
}

#' @rdname priors
#' @param K,L For `nmtf()`: the numbers of row factors (columns of `F`) and
#'   of column factors (columns of `G`) of the tri-factorisation
#'   `X ~ F S t(G)`; see the section NMTF of [bnmf()].
nmtf <- function(K, L, prior = NULL) {
  K <- check_count(K, "K", min = 1)
  L <- check_count(L, "L", min = 1)
  if (!is.null(prior) && !inherits(prior, "bnmf_prior")) {
    abort_input("`prior` must be made by `exponential()` or `ard()`.")
  }
  structure(list(type = "nmtf", rank = c(K, L), prior = prior), class = "bnmf_model")
}

#' @export
print.bnmf_prior <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  if (identical(x$type, "ard")) {
    b0 <- if (isTRUE(x$beta0_auto)) "default: from the data, alpha0 sqrt(mean(X) / K) for NMF" else format(x$beta0)
    cat("<bnmf prior> ard(alpha0 = ", format(x$alpha0), ", beta0 = ", b0,
        "): W[, k], H[k, ] ~ Exp(lambda_k), lambda_k ~ Gamma(alpha0, beta0)\n", sep = "")
    return(invisible(x))
  }
  cat("<bnmf prior> exponential(rate = ", format_rate(x$rate), ")\n", sep = "")
  invisible(x)
}

#' @export
print.bnmf_noise <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  cat("<bnmf noise prior> tau ~ Gamma(shape = ", format(x$shape),
      ", rate = ", format_rate(x$rate), ")\n", sep = "")
  invisible(x)
}

#' @export
print.bnmf_model <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "print")
  if (identical(x$type, "nmtf")) {
    cat("<bnmf model> nmtf(K = ", x$rank[1L], ", L = ", x$rank[2L], ")\n", sep = "")
    return(invisible(x))
  }
  cat("<bnmf model> nmf(rank = ", x$rank, ")\n", sep = "")
  invisible(x)
}

format_rate <- function(rate) {
  if (identical(rate, "auto")) return('"auto"')
  if (is.list(rate)) return("<entry-wise matrices>")
  format(signif(rate, 4))
}

# ---- the model specification ----------------------------------------------

# What every model hands to the engines: its dimensions, its blocks (name ->
# dimensions), the resolved priors of the blocks and of the noise, and the
# likelihood ("gaussian"; "silf" for particles and HMC, whose parameters are
# in `silf`). Future models (NMTF: blocks F, S, G; a Poisson likelihood)
# produce the same kind of list.
nmf_spec <- function(I, J, K, prior, noise = NULL, likelihood = "gaussian", silf = NULL) {
  structure(list(model = "nmf", dims = c(I, J), rank = K,
                 blocks = list(W = c(I, K), H = c(K, J)),
                 prior = prior, noise = noise, likelihood = likelihood, silf = silf),
            class = "bnmf_spec")
}

# The model of particles and HMC: SILF likelihood, Dirichlet(1) columns of W,
# Exp(rate) entries of H (`job` checked by silf_check()).
silf_model <- function(job) {
  nmf_spec(nrow(job$X), ncol(job$X), job$rank,
           prior = list(type = "dirichlet-exponential", rate = job$rate),
           likelihood = "silf", silf = job$likelihood)
}

# The C view of a model's prior (what the C code reads by name): entry-wise
# exponential rates of W and H, the Gamma prior of tau and the ARD
# hyper-parameters (numeric() without ARD). `spec` is a model specification
# or a fit (both hold `prior` and `noise`); the arguments replace its rates.
c_prior <- function(spec, lamW = spec$prior$lamW, lamH = spec$prior$lamH,
                    ard = spec$prior$ard %||% numeric()) {
  list(lamW = lamW, lamH = lamH, alpha = spec$noise$shape, beta = spec$noise$rate,
       ard = ard)
}

# The noise prior of a Gaussian NMF model, resolved: rate = "auto" becomes
# shape * 1e-4 * mean(X^2) over the observed entries (`data`:
# prepare_data()), so that the prior mean of tau is 1e4 / mean(X^2); `auto`
# records that it was.
resolve_noise <- function(noise, data) {
  if (!identical(noise$rate, "auto")) return(noise)
  ms <- data$sumsq_obs / data$n_obs
  if (identical(ms, 0)) ms <- 1e4 # all observed entries zero: no scale to follow
  if (!(ms > 0) || !is.finite(ms)) {
    abort_input(sprintf("`noise`: the automatic rate needs a positive, finite mean of the squared observed entries of `X` (it is %s); give `gamma_prior(rate = )` explicitly.",
                        format(ms)))
  }
  noise$rate <- noise$shape * 1e-4 * ms
  noise$auto <- TRUE
  noise
}

# The prior of a Gaussian NMF model, resolved: `type`, the rate given (`rate`,
# `auto`), the entry-wise rate matrices and the ARD hyper-parameters. Method
# "np" has none (zero rates).
gaussian_prior <- function(prior, I, J, K, mean_x, method) {
  if (method == "np") {
    return(list(type = "none", lamW = matrix(0, I, K), lamH = matrix(0, K, J), rate = 0,
                auto = FALSE, ard = numeric()))
  }
  c(list(type = prior$type), resolve_rates(prior, I, J, K, mean_x, method))
}

# The default beta0 of ard() for the Gaussian models: alpha0 / rate, so that
# the prior mean alpha0 / beta0 of every ARD rate is the automatic
# exponential rate `rate` of the model (sqrt(K / mean(X)) for NMF,
# (K L / mean(X))^(1/3) for NMTF).
gaussian_ard_beta0 <- function(alpha0, rate) {
  beta0 <- alpha0 / rate
  if (!(beta0 > 0) || !is.finite(beta0)) {
    abort_input("`prior`: the default `beta0` of `ard()` needs a positive, finite mean of the observed entries of `X`; give `ard(beta0 = )`.")
  }
  beta0
}

# Resolve the prior into entry-wise rate matrices for the C code.
resolve_rates <- function(prior, I, J, K, mean_x, method) {
  if (identical(prior$type, "ard")) {
    # The rates live in the chain's state (lambda); the matrices are scratch.
    # beta0 not given: alpha0 * sqrt(mean_x / K), so that the prior mean of
    # lambda_k is the automatic rate sqrt(K / mean_x) (see The default beta0).
    b0_auto <- isTRUE(prior$beta0_auto)
    beta0 <- if (b0_auto) gaussian_ard_beta0(prior$alpha0, sqrt(K / mean_x)) else prior$beta0
    return(list(lamW = matrix(1, I, K), lamH = matrix(1, K, J), rate = NA_real_,
                auto = FALSE, ard = c(prior$alpha0, beta0), beta0_auto = b0_auto))
  }
  rate <- prior$rate
  auto <- identical(rate, "auto")
  if (auto) {
    if (!(mean_x > 0)) {
      abort_input("`prior`: the automatic rate needs a positive mean of the observed entries of `X`; give `exponential(rate = )` explicitly.")
    }
    rate <- sqrt(K / mean_x)
  }
  if (is.list(rate)) {
    if (!identical(dim(rate$W), c(I, K))) {
      abort_input(sprintf("`prior`: the rate matrix `W` must be %d x %d.", I, K))
    }
    if (!identical(dim(rate$H), c(K, J))) {
      abort_input(sprintf("`prior`: the rate matrix `H` must be %d x %d.", K, J))
    }
    lamW <- rate$W + 0
    lamH <- rate$H + 0
    storage.mode(lamW) <- storage.mode(lamH) <- "double"
  } else {
    lamW <- matrix(as.numeric(rate), I, K)
    lamH <- matrix(as.numeric(rate), K, J)
  }
  if (method %in% c("gibbs", "vb") && (any(lamW <= 0) || any(lamH <= 0))) {
    abort_input(sprintf("`prior`: method \"%s\" needs exponential rates > 0 (a rate of 0 is an improper prior, allowed for method \"icm\" only).", method))
  }
  if (method == "gibbs" && (any(lamW < 1e-150) || any(lamH < 1e-150))) {
    abort_input(sprintf("`prior`: method \"gibbs\" needs exponential rates >= 1e-150, not %s: its exact move along each factor's scale puts the factors at the prior's scale 1 / rate, whose square must be a finite double. Use a larger rate, or method \"icm\" or \"vb\".",
                        format(min(lamW, lamH))))
  }
  list(lamW = lamW, lamH = lamH, rate = rate, auto = auto, ard = numeric())
}
