# What the fits of every model share: their header (fit_header(), checked
# by validate_fit_header()), their class (fit_class()), and helpers of the
# constructors and validators of R/engine-<model>.R, Advanced R style
# (constructor: types; validator: values).

factor_names <- function(K) paste0("k", seq_len(K))

# Checks shared by the particle and HMC fits: factors W (I x K, every column
# on the simplex) and H (K x J), finite and non-negative.
check_simplex_factors <- function(W, H, I, J, K, bad, what) {
  if (!identical(dim(W), c(I, K)) || !identical(dim(H), c(K, J))) {
    bad(sprintf("%s of the wrong size", what))
  }
  if (any(!is.finite(W)) || any(W < 0) || any(!is.finite(H)) || any(H < 0)) {
    bad(sprintf("%s with non-finite or negative entries", what))
  }
  if (any(abs(colSums(W) - 1) > 1e-8)) bad(sprintf("%s whose W is not on the simplex", what))
}

# The sd of the kept draws of a trace column (every `thin`-th sweep of the
# sampling phase of each chain), computed on the draws divided by their
# largest absolute value, so that it neither overflows nor underflows.
kept_sd <- function(trace, column, thin) {
  tr <- trace[trace$sampling, , drop = FALSE]
  v <- tr[[column]][stats::ave(seq_len(nrow(tr)), tr$chain, FUN = seq_along) %% thin == 0]
  s <- max(abs(v))
  if (!(s > 0) || !is.finite(s)) return(stats::sd(v))
  s * stats::sd(v / s)
}

# A permutation of 1..K for every particle or chain.
check_alignment <- function(alignment, n, K, bad) {
  ok <- is.list(alignment) && length(alignment) == n &&
    all(vapply(alignment, function(p) identical(sort(as.integer(p)), seq_len(K)), logical(1)))
  if (!ok) bad("an alignment that is not a permutation of the factors per member")
}

# What the Gaussian noise gives the kept restart `b` of an optimiser of any
# model: VB its q(tau) (shape, rate), the sd of tau and the ELBO; NP, which
# has no noise model, its loss instead of tau and a log posterior.
optimiser_noise_parts <- function(fit, b, shape0, n_obs) {
  if (fit$method == "vb") {
    shape <- shape0 + n_obs / 2
    fit$q_tau <- c(shape = shape, rate = b$tau_rate)
    fit$tau_sd <- sqrt(shape) / b$tau_rate
    fit$elbo <- b$logpost
  }
  if (fit$method == "np") {
    fit$tau <- NULL
    fit$loss <- -b$logpost
    fit$logpost <- NULL
  }
  fit
}

# The fields every fit shares, written in one place: the call, the method
# and model, the rank, the data (X as given, its size, names, whether
# sparse, how many entries are observed and missing) and the settings. Each
# model's constructor adds its own fields to this header.
fit_header <- function(call, method, model, X, rank, settings, n_miss = n_missing(X)) {
  list(call = call, method = method, model = model, rank = rank, dims = dim(X),
       dimnames = list(rownames(X), colnames(X)), sparse = inherits(X, "dgCMatrix"),
       n_obs = prod(as.double(dim(X))) - n_miss, n_missing = n_miss, settings = settings,
       X = X)
}

# Checks of the header (fit_header()) that every constructor's validator
# makes first: its class names its method and model, and the data fields
# agree with X.
validate_fit_header <- function(fit) {
  bad <- function(what) abort_fit(sprintf("the fit has %s", what))
  cls <- class(fit)
  if (!identical(cls[1L], paste0("bnmf_", fit$method)) ||
      !identical(utils::tail(cls, 2L), c(paste0("bnmf_", fit$model), "bnmf"))) {
    bad(sprintf("the class %s, not that of its method \"%s\" and model \"%s\"",
                paste(cls, collapse = ", "), fit$method, fit$model))
  }
  if (!identical(as.integer(fit$dims), dim(fit$X))) bad("dimensions other than those of X")
  if (!isTRUE(all.equal(fit$n_obs + fit$n_missing, prod(as.double(fit$dims))))) {
    bad("counts of observed entries and missing entries that do not add up to the size of X")
  }
  if (!isTRUE(fit$settings$chains >= 1)) bad("no chain")
  fit
}

# The class of a fit: its method (with any family it belongs to, as the
# SVGD fits to the particles), its model ("nmf", "nmtf", "poisson"), and
# what every fit is. Methods dispatch on the method, then the model, then
# what all fits share.
fit_class <- function(method, model) {
  c(paste0("bnmf_", method), paste0("bnmf_", model), "bnmf")
}
