# Kernel Stein discrepancies: the Stein kernel matrix (C, closed form), the
# optimal weights on the simplex (C, exact active-set QP) and the user-facing
# ksd() and stein_discrepancy().

# The M x M Stein kernel matrix. `theta` and `score` are lists of blocks, each
# a d_b x M matrix (column m = particle m); `par` a list of c(c, b, a) per
# block: the base kernel is sum_b a_b (c_b^2 + |x_b - y_b|^2)^b_b.
stein_kernel <- function(theta, score, par) {
  theta <- lapply(theta, as_double_matrix)
  score <- lapply(score, as_double_matrix)
  .Call(C_stein_kernel, theta, score, as.double(unlist(par)))
}

as_double_matrix <- function(x) {
  if (!is.matrix(x)) x <- as.matrix(x)
  if (!is.double(x)) storage.mode(x) <- "double"
  x
}

# min w'Kw over the probability simplex; returns the weights with the
# solver's status, number of steps and relative KKT residual.
simplex_weights <- function(K, tol = 1e-13, maxit = NULL) {
  K <- as_double_matrix(K)
  M <- nrow(K)
  maxit <- maxit %||% (20L * M + 100L)
  out <- .Call(C_simplex_qp, K, as.double(tol), as.integer(maxit))
  if (out$status != 0L && out$kkt > 1e-8) {
    warning(sprintf("the weights' quadratic program stopped with a KKT residual of %.2g.",
                    out$kkt), call. = FALSE)
  }
  out
}

#' Kernel Stein discrepancy of weighted draws
#'
#' The kernel Stein discrepancy (Liu, Lee and Jordan 2016; Chwialkowski,
#' Strathmann and Gretton 2016) of a set of points `theta` with weights `w`
#' with respect to a target density `p` known through its score
#' \eqn{s(\theta) = \nabla \log p(\theta)}: the value \eqn{w' K w} where
#' \eqn{K_{mn} = K_p(\theta_m, \theta_n)} is the Stein kernel built on the
#' inverse multiquadric base kernel
#' \eqn{k(x, y) = a (c^2 + \|x - y\|^2)^b}. With equal weights this is the
#' V-statistic, which tends to 0 as the number of draws from `p` grows (and
#' stays away from 0 for draws from any other distribution).
#'
#' @param theta A numeric matrix, one point (draw, particle) per row.
#' @param score A matrix of the same size: the score of the target at each
#'   row of `theta`.
#' @param weights `"equal"` (1/M each), `"optimal"` (the weights on the
#'   simplex that minimise the discrepancy, found exactly by an active-set
#'   method) or a numeric vector of M weights.
#' @param c,b Parameters of the inverse multiquadric kernel (`c > 0`,
#'   `-1 < b < 0`).
#' @param scale `a`: `"unit"` divides the kernel by \eqn{c^{2b}} so that it
#'   takes values in (0, 1]; or a positive number.
#' @return The discrepancy \eqn{w'Kw}, with attributes `weights` and (with
#'   `kernel = TRUE`) `K`, the Stein kernel matrix.
#' @param kernel Attach the Stein kernel matrix as attribute `K`.
#' @references
#' Liu, Q., Lee, J. and Jordan, M. (2016). A kernelized Stein discrepancy for
#' goodness-of-fit tests. *ICML*.
#' Gorham, J. and Mackey, L. (2017). Measuring sample quality with kernels.
#' *ICML*.
#' @seealso [stein_discrepancy()] for factorisations.
#' @examples
#' set.seed(1)
#' for (n in c(20, 80, 320)) {
#'   theta <- matrix(rnorm(2 * n), n, 2)      # draws from N(0, I)
#'   print(ksd(theta, score = -theta))       # the score of N(0, I) is -theta
#' }
#' @export
ksd <- function(theta, score, weights = "equal", c = 1, b = -0.5, scale = "unit",
                kernel = FALSE) {
  theta <- as_double_matrix(theta)
  score <- as_double_matrix(score)
  if (!is.numeric(theta) || anyNA(theta) || any(!is.finite(theta))) {
    abort_input("`theta` must be a numeric matrix of finite values, one point per row.")
  }
  if (!identical(dim(score), dim(theta)) || any(!is.finite(score))) {
    abort_input(sprintf("`score` must be a %d x %d matrix of finite values, like `theta`.",
                        nrow(theta), ncol(theta)))
  }
  c <- check_number(c, "c", 0, min_open = TRUE)
  b <- check_number(b, "b", -Inf)
  if (!(b > -1 && b < 0)) abort_input("`b` must be between -1 and 0 (exclusive).")
  a <- if (identical(scale, "unit")) (c^2)^(-b) else check_number(scale, "scale", 0, min_open = TRUE)
  kernel <- check_flag(kernel, "kernel")
  K <- stein_kernel(list(t(theta)), list(t(score)), list(c(c, b, a)))
  stein_value(K, weights, kernel)
}

# w'Kw for weights "equal", "optimal" or given.
stein_value <- function(K, weights, kernel = FALSE) {
  M <- nrow(K)
  if (is.character(weights)) {
    weights <- check_choice(weights, c("equal", "optimal"), "weights")
    w <- if (weights == "equal") rep(1 / M, M) else simplex_weights(K)$weights
  } else {
    w <- weights
    if (!is.numeric(w) || length(w) != M || anyNA(w) || any(w < 0) || !(sum(w) > 0)) {
      abort_input(sprintf("`weights` must be \"equal\", \"optimal\" or %d non-negative numbers.", M))
    }
    w <- w / sum(w)
  }
  val <- drop(crossprod(w, K %*% w))
  attr(val, "weights") <- w
  if (kernel) attr(val, "K") <- K
  val
}

#' Stein discrepancy of a set of factorisations
#'
#' How well a weighted set of factorisations approximates the posterior of
#' the particle model of [bnmf()] (`method = "particles"`): the kernel Stein
#' discrepancy \eqn{w'Kw} of Masood and Doshi-Velez, with the score of the
#' SILF likelihood ([silf()]), a Dirichlet(1) prior on every column of `W`
#' and an Exp(`rate`) prior on every entry of `H`, and the sum of two scaled
#' inverse multiquadric kernels on `W` and `H`. For a particle fit it returns
#' the value at the fit's weights. For a list of factorisations (e.g. the
#' particles of several fits, or thinned Gibbs draws) each `W` is rescaled
#' to sum to one by columns, the scale moving into `H` (the product `W H` is
#' unchanged), and the discrepancy is computed with the optimal weights (or
#' equal or given weights).
#'
#' @param x A `bnmf_particles` fit, a `bnmf_hmc` fit (its kept draws, with
#'   equal weights by default, on the fit's likelihood and prior), or a list
#'   of factorisations, each a list with matrices `W` (I x K) and `H` (K x J).
#' @param X The data matrix (for a list of factorisations).
#' @param likelihood The likelihood, made by [silf()]. Its `epsilon`
#'   defaults to 1.2 times the largest objective among the factorisations:
#'   give it explicitly to compare sets on the same model.
#' @param rate Rate of the exponential prior on `H` (in the units of `X`), or
#'   `"auto"` (the default, as in [bnmf()]): rate 1 on the data scaled to
#'   root mean square 1, i.e. `1 / s` with `s` the root mean square of the
#'   observed entries of `X`.
#' @section The data's scale:
#' As [bnmf()] does for the particle model, the discrepancy is evaluated on
#' `X / s` (`s` the root mean square of the observed entries of `X`), with
#' `H / s`, `epsilon / s^p` (`p` = 2 for the Frobenius objective, 1 for KL, 0
#' for Itakura-Saito) and `rate * s`: the slope `C` of [silf()] and the
#' kernel's bandwidths apply to the data scaled to root mean square 1, so
#' that the same factorisations of `c X` (with `H` times `c`) have the same
#' discrepancy and weights.
#' @param weights `"optimal"`, `"equal"` or a numeric vector.
#' @param kernel A list of base-kernel parameters, any of `c_W` (default
#'   `1e-2`), `c_H` (`1e3`), `b_W` and `b_H` (both `-0.5`): the kernel is
#'   \eqn{(\|W - W'\|^2 + c_W^2)^{b_W} / (2 \gamma_W) + (\|H - H'\|^2 +
#'   c_H^2)^{b_H} / (2 \gamma_H)} with \eqn{\gamma = (c^2)^b}, equation 7
#'   of the paper with its section 6.1 values (the ones `bnmf()` uses).
#' @param ... Not used: an argument here is an error.
#' @return The discrepancy, with attribute `weights` (and for a list
#'   `epsilon`).
#' @examples
#' set.seed(1)
#' fit <- bnmf(leukemia[1:100, ], rank = 3, method = "particles", particles = 8)
#' stein_discrepancy(fit)
#' # The same value from the particles themselves, and with equal weights
#' parts <- lapply(1:8, function(m) factors(fit, particle = m))
#' eps <- fit$likelihood$epsilon
#' stein_discrepancy(parts, leukemia[1:100, ], likelihood = silf(eps))
#' stein_discrepancy(parts, leukemia[1:100, ], likelihood = silf(eps), weights = "equal")
#' @export
stein_discrepancy <- function(x, ...) UseMethod("stein_discrepancy")

#' @rdname stein_discrepancy
#' @export
stein_discrepancy.bnmf_particles <- function(x, ...) {
  check_dots_empty(list(...), names(formals()), "stein_discrepancy")
  val <- x$stein
  attr(val, "weights") <- x$weights
  val
}

#' @rdname stein_discrepancy
#' @param draws For an HMC fit: `NULL` (every kept draw) or a number M: M
#'   kept draws evenly spaced over the chains (as the paper thins its HMC
#'   chain to a few factorisations).
#' @export
stein_discrepancy.bnmf_hmc <- function(x, weights = "equal", kernel = list(), draws = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "stein_discrepancy")
  idx <- seq_len(x$n_draws)
  if (!is.null(draws)) {
    draws <- check_count(draws, "draws", min = 1)
    if (draws > x$n_draws) abort_input(sprintf("`draws` must be at most the %d kept draws.", x$n_draws))
    idx <- unique(round(seq(1, x$n_draws, length.out = draws)))
  }
  parts <- lapply(idx, function(d) factors(x, draw = d))
  stein_discrepancy.list(parts, x$X, likelihood = x$likelihood, rate = x$prior$rate,
                         weights = weights, kernel = kernel)
}

#' @rdname stein_discrepancy
#' @export
stein_discrepancy.list <- function(x, X, likelihood = silf(), rate = "auto",
                                   weights = "optimal", kernel = list(), ...) {
  check_dots_empty(list(...), names(formals()), "stein_discrepancy")
  X <- check_particle_data(X)
  if (!length(x)) abort_input("`x` must hold at least one factorisation.")
  parts <- lapply(seq_along(x), function(m) {
    p <- x[[m]]
    if (!is.list(p) || is.null(p$W) || is.null(p$H)) {
      abort_input(sprintf("`x[[%d]]` must be a list with matrices `W` and `H`.", m))
    }
    W <- as_double_matrix(p$W)
    H <- as_double_matrix(p$H)
    if (nrow(W) != nrow(X) || ncol(H) != ncol(X) || ncol(W) != nrow(H) ||
        any(!is.finite(W)) || any(!is.finite(H)) || any(W < 0) || any(H < 0)) {
      abort_input(sprintf("`x[[%d]]`: `W` must be %d x K and `H` K x %d, finite and >= 0.",
                          m, nrow(X), ncol(X)))
    }
    to_simplex(W, H)
  })
  K1 <- ncol(parts[[1L]]$W)
  if (any(vapply(parts, function(p) ncol(p$W), 1L) != K1)) {
    abort_input("`x`: every factorisation must have the same rank.")
  }
  likelihood <- check_likelihood(likelihood)
  if (!identical(rate, "auto")) rate <- check_number(rate, "rate", 0)
  # on X / s, as bnmf() fits the particle model (data_scale())
  s <- data_scale(X)
  p <- objective_power(likelihood$objective)
  rate <- if (identical(rate, "auto")) 1 else rate * s
  if (!is.null(likelihood$epsilon)) likelihood$epsilon <- likelihood$epsilon / s^p
  parts <- lapply(parts, function(q) list(W = q$W, H = q$H / s))
  st <- particle_stein(X / s, parts, likelihood, rate, kernel, weights)
  val <- st$value
  attr(val, "weights") <- st$weights
  attr(val, "epsilon") <- st$likelihood$epsilon * s^p
  val
}

#' @rdname stein_discrepancy
#' @export
stein_discrepancy.default <- function(x, ...) {
  abort_input("`x` must be a particle fit from `bnmf(method = \"particles\")`, an HMC fit from `bnmf(method = \"hmc\")` or a list of factorisations (lists with `W` and `H`).")
}

# Kernel parameters of Masood & Doshi-Velez (section 6.1).
stein_kernel_par <- function(c_W = 1e-2, c_H = 1e3, b_W = -0.5, b_H = -0.5) {
  list(c_W = c_W, c_H = c_H, b_W = b_W, b_H = b_H)
}

check_kernel_par <- function(kernel) {
  if (!is.list(kernel) || length(kernel) && is.null(names(kernel))) {
    abort_input("`kernel` must be a list with elements among c_W, c_H, b_W, b_H.")
  }
  def <- stein_kernel_par()
  bad <- setdiff(names(kernel), names(def))
  if (length(bad)) abort_input(sprintf("`kernel`: unknown element%s %s.", if (length(bad) > 1) "s" else "",
                                       paste(bad, collapse = ", ")))
  def[names(kernel)] <- kernel
  for (nm in c("c_W", "c_H")) def[[nm]] <- check_number(def[[nm]], paste0("kernel$", nm), 0, min_open = TRUE)
  for (nm in c("b_W", "b_H")) {
    v <- check_number(def[[nm]], paste0("kernel$", nm))
    if (!(v > -1 && v < 0)) abort_input(sprintf("`kernel$%s` must be between -1 and 0 (exclusive).", nm))
  }
  def
}

# Scores, Stein kernel matrix, weights and discrepancy of simplex-scaled
# particles. Equation 7 of Masood & Doshi-Velez: each IMQ term is divided by
# 2 gamma = 2 (c^2)^b, so the base kernel takes values in (0, 1].
particle_stein <- function(X, parts, likelihood, rate, kernel, weights = "optimal") {
  kernel <- check_kernel_par(kernel)
  X <- silf_data(X)
  t0 <- proc.time()[[3L]]
  grads <- lapply(parts, function(p) objective_grad(X, p$W, p$H, likelihood$objective))
  obj <- vapply(grads, function(g) g$f, numeric(1))
  if (is.null(likelihood$epsilon)) likelihood$epsilon <- 1.2 * max(obj)
  likelihood <- silf_resolve_C(likelihood, silf_n_obs(X))
  scores <- lapply(grads, particle_score, likelihood = likelihood, rate = rate)
  t_score <- proc.time()[[3L]] - t0
  t0 <- proc.time()[[3L]]
  K <- particle_kernel_matrix(parts, scores, kernel)
  qp <- if (identical(weights, "optimal")) simplex_weights(K) else NULL
  val <- stein_value(K, if (is.null(qp)) weights else qp$weights)
  t_weights <- proc.time()[[3L]] - t0
  list(value = as.numeric(val), weights = attr(val, "weights"), K = K, qp = qp,
       objective = obj, likelihood = likelihood, kernel = kernel,
       loglik = -likelihood$C * silf_loss(obj, likelihood$epsilon, likelihood$beta),
       timing = c(scores = t_score, weights = t_weights))
}

particle_kernel_matrix <- function(parts, scores, kernel) {
  TW <- vapply(parts, function(p) as.vector(p$W), numeric(length(parts[[1L]]$W)))
  TH <- vapply(parts, function(p) as.vector(p$H), numeric(length(parts[[1L]]$H)))
  SW <- vapply(scores, function(s) as.vector(s$W), numeric(length(parts[[1L]]$W)))
  SH <- vapply(scores, function(s) as.vector(s$H), numeric(length(parts[[1L]]$H)))
  dim(TW) <- dim(SW) <- c(length(parts[[1L]]$W), length(parts))
  dim(TH) <- dim(SH) <- c(length(parts[[1L]]$H), length(parts))
  gW <- (kernel$c_W^2)^kernel$b_W
  gH <- (kernel$c_H^2)^kernel$b_H
  stein_kernel(list(TW, TH), list(SW, SH),
               list(c(kernel$c_W, kernel$b_W, 1 / (2 * gW)),
                    c(kernel$c_H, kernel$b_H, 1 / (2 * gH))))
}
