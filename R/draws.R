# posterior::as_draws() and coda::as.mcmc() of the kept draws of a Gibbs or
# HMC fit, through draws_cube(): an iterations x chains x variables array.

#' Posterior draws of a Gibbs fit for posterior and coda
#'
#' Converts the kept draws of a Gibbs fit into a `posterior::draws_array`
#' (`posterior::as_draws()`, `posterior::as_draws_array()`) or a
#' `coda::mcmc` / `coda::mcmc.list` (`coda::as.mcmc()`), one chain per chain
#' of the fit. Variables are named as in Stan: `tau`, `loglik` (the
#' log-likelihood of the observed entries at each draw), `lambda[k]` (the ARD
#' rates, with an [ard()] prior), and when the fit was made with
#' `keep = "draws"` also `W[i,k]` and `H[k,j]`.
#'
#' @param x A `bnmf` Gibbs fit.
#' @param ... Not used: an argument here is an error.
#' @return A `draws_array`, or an `mcmc` (one chain) / `mcmc.list` object.
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:30, 1:20], rank = 2, iter = 200, keep = "draws")
#' if (requireNamespace("posterior", quietly = TRUE)) {
#'   d <- posterior::as_draws(fit)
#'   posterior::summarise_draws(posterior::subset_draws(d, c("tau", "loglik")))
#' }
#' if (requireNamespace("coda", quietly = TRUE)) {
#'   m <- coda::as.mcmc(fit)
#'   coda::effectiveSize(m[, c("tau", "loglik")])
#' }
#' @name as.mcmc.bnmf
NULL

# iterations x chains x variables array of the kept draws.
draws_cube <- function(x) UseMethod("draws_cube")

draws_cube.bnmf <- function(x) {
  abort_unsupported(sprintf("`x`: posterior draws need a Gibbs fit, not method \"%s\".", x$method))
}

draws_cube.bnmf_gibbs <- function(x) {
  if (!inherits(x, "bnmf_nmf")) return(NextMethod())
  lam <- grep("^lambda\\[", names(x$trace), value = TRUE)
  wh_draws_cube(x, c("tau", "loglik"), lam, if (!is.null(x$draws)) function(c) {
    rbind(x$draws[[c]]$W, x$draws[[c]]$H)
  })
}

# Poisson Gibbs: the log likelihood and log posterior of every kept sweep,
# and with keep = "draws" every entry of W and H, each chain's factors in
# the pooled fit's order.
draws_cube.bnmf_poisson <- function(x) {
  if (x$method != "gibbs") return(NextMethod())
  wh_draws_cube(x, c("loglik", "logpost"), character(), if (!is.null(x$draws)) function(c) {
    d <- pois_aligned_draws(x, c)
    rbind(d$W_draws, d$H_draws)
  })
}

# The kept draws of chain c of a Poisson Gibbs fit (W_draws, H_draws), its
# factors in the pooled fit's order (fit$alignment).
pois_aligned_draws <- function(x, c) {
  I <- x$dims[1L]; J <- x$dims[2L]; K <- x$rank
  p <- x$alignment[[c]] %||% seq_len(K)
  list(W_draws = x$draws[[c]]$W_draws[as.vector(matrix(seq_len(I * K), I, K)[, p]), , drop = FALSE],
       H_draws = x$draws[[c]]$H_draws[as.vector(matrix(seq_len(K * J), K, J)[p, ]), , drop = FALSE])
}

# The array of a Gibbs fit of W H: the trace's columns `scalars`, the ARD
# rates `lam` (in the pooled fit's factor order: the chains are aligned),
# and where `chain_draws(c)` gives chain c's kept draws (rows W, then H,
# column a draw), every entry of W and H.
wh_draws_cube <- function(x, scalars, lam, chain_draws) {
  kt <- kept_trace(x)
  chains <- sort(unique(kt$chain))
  n <- min(table(kt$chain))
  I <- x$dims[1L]; J <- x$dims[2L]; K <- x$rank
  vars <- c(scalars, lam)
  if (!is.null(chain_draws)) {
    vars <- c(vars,
              sprintf("W[%d,%d]", rep(seq_len(I), K), rep(seq_len(K), each = I)),
              sprintf("H[%d,%d]", rep(seq_len(K), J), rep(seq_len(J), each = K)))
  }
  a <- array(NA_real_, c(n, length(chains), length(vars)),
             dimnames = list(iteration = NULL, chain = NULL, variable = vars))
  ns <- length(scalars)
  for (c in seq_along(chains)) {
    s <- kt[kt$chain == chains[c], ]
    for (v in seq_len(ns)) a[, c, v] <- s[[scalars[v]]][seq_len(n)]
    perm <- x$chains[[chains[c]]]$perm %||% seq_along(lam)
    for (k in seq_along(lam)) a[, c, ns + k] <- s[[lam[perm[k]]]][seq_len(n)]
    if (!is.null(chain_draws)) {
      a[, c, -seq_len(ns + length(lam))] <- t(chain_draws(c)[, seq_len(n), drop = FALSE])
    }
  }
  a
}

# HMC: the log posterior (lp), the objective and every entry of W and H.
draws_cube.bnmf_hmc <- function(x) {
  kt <- kept_trace(x)
  n <- min(vapply(x$draws, function(d) ncol(d$W), numeric(1)))
  I <- x$dims[1L]; J <- x$dims[2L]; K <- x$rank
  vars <- c("lp", "objective",
            sprintf("W[%d,%d]", rep(seq_len(I), K), rep(seq_len(K), each = I)),
            sprintf("H[%d,%d]", rep(seq_len(K), J), rep(seq_len(J), each = K)))
  a <- array(NA_real_, c(n, length(x$draws), length(vars)),
             dimnames = list(iteration = NULL, chain = NULL, variable = vars))
  for (c in seq_along(x$draws)) {
    s <- kt[kt$chain == c, ]
    a[, c, 1L] <- s$logpost[seq_len(n)]
    a[, c, 2L] <- s$objective[seq_len(n)]
    a[, c, -(1:2)] <- t(rbind(x$draws[[c]]$W, x$draws[[c]]$H)[, seq_len(n), drop = FALSE])
  }
  a
}

#' @rdname as.mcmc.bnmf
#' @exportS3Method posterior::as_draws_array
as_draws_array.bnmf <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "as_draws_array")
  posterior::as_draws_array(draws_cube(x))
}

#' @rdname as.mcmc.bnmf
#' @exportS3Method posterior::as_draws
as_draws.bnmf <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "as_draws")
  as_draws_array.bnmf(x, ...)
}

#' @rdname as.mcmc.bnmf
#' @exportS3Method coda::as.mcmc
as.mcmc.bnmf <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "as.mcmc")
  a <- draws_cube(x)
  thin <- x$settings$thin
  one <- function(c) coda::mcmc(a[, c, , drop = TRUE], thin = thin)
  if (dim(a)[2L] == 1L) return(one(1L))
  coda::mcmc.list(lapply(seq_len(dim(a)[2L]), one))
}

# ---- the tri-factorisation (bnmf_nmtf) ----

# Gibbs: tau, loglik, the ARD rates lambda_F[k], lambda_G[l] and with
# keep = "draws" every entry of F, S and G, in the factor order of the pooled
# fit (each chain's labels matched to the first chain's).
draws_cube.bnmf_nmtf <- function(x) {
  if (x$method != "gibbs") return(draws_cube.bnmf(x))
  kt <- kept_trace(x)
  chains <- sort(unique(kt$chain))
  n <- min(table(kt$chain))
  I <- x$dims[1L]; J <- x$dims[2L]; K <- x$rank[[1L]]; L <- x$rank[[2L]]
  ard <- identical(x$prior$type, "ard")
  lam <- if (ard) c(sprintf("lambda_F[%d]", seq_len(K)), sprintf("lambda_G[%d]", seq_len(L)))
  vars <- c("tau", "loglik", lam)
  if (!is.null(x$draws)) {
    vars <- c(vars,
              sprintf("F[%d,%d]", rep(seq_len(I), K), rep(seq_len(K), each = I)),
              sprintf("S[%d,%d]", rep(seq_len(K), L), rep(seq_len(L), each = K)),
              sprintf("G[%d,%d]", rep(seq_len(J), L), rep(seq_len(L), each = J)))
  }
  # one n x variables matrix per chain, then iterations x chains x variables
  one_chain <- function(ch) {
    s <- kt[kt$chain == ch, ][seq_len(n), ]
    pF <- x$perm$F[[ch]]
    pG <- x$perm$G[[ch]]
    own <- if (ard) c(sprintf("lambda_F[%d]", pF), sprintf("lambda_G[%d]", pG))
    m <- cbind(s$tau, s$loglik, as.matrix(s[, own, drop = FALSE]))
    if (is.null(x$draws)) return(m)
    d <- x$draws[[ch]]
    iF <- as.vector(matrix(seq_len(I * K), I, K)[, pF])
    iS <- as.vector(matrix(seq_len(K * L), K, L)[pF, pG])
    iG <- as.vector(matrix(seq_len(J * L), J, L)[, pG])
    cbind(m, t(rbind(d$F[iF, , drop = FALSE], d$S[iS, , drop = FALSE],
                     d$G[iG, , drop = FALSE])[, seq_len(n), drop = FALSE]))
  }
  a <- vapply(chains, one_chain, matrix(0, n, length(vars)))
  a <- aperm(array(a, c(n, length(vars), length(chains))), c(1L, 3L, 2L))
  dimnames(a) <- list(iteration = NULL, chain = NULL, variable = vars)
  a
}
