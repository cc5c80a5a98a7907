# Non-negative matrix tri-factorisation X ~ F S t(G): the NMTF engine of
# bnmf() (methods gibbs, icm, vb, np), its chain state, its start, and the
# fit. The sweeps are in src/nmtf_*.c; the chunk loop is run_chunks()
# (R/chains.R), the tasks run_tasks() (R/tasks.R).

#' @section NMTF:
#' `bnmf(X ~ nmtf(K, L), ...)` or `bnmf(X, rank = c(K, L), ...)` fits the
#' tri-factorisation \eqn{X \approx F S G^T} with `F` (I x K), `S` (K x L)
#' and `G` (J x L) non-negative (Brouwer and Lio 2017; Brouwer, Frellsen and
#' Lio 2017): for every observed entry
#' \deqn{X_{ij} \sim N(F_{i\cdot} S G_{j\cdot}^T, 1/\tau), \quad
#'   F_{ik} \sim Exp(\lambda), \quad S_{kl} \sim Exp(\lambda), \quad
#'   G_{jl} \sim Exp(\lambda), \quad \tau \sim Gamma(\alpha, \beta).}
#' The rows of `F` cluster the rows of `X`, the rows of `G` its columns, and
#' `S` holds the strength of each (row cluster, column cluster) block.
#' Methods `"gibbs"`, `"icm"`, `"vb"` and `"np"` work as for NMF: the rows of
#' `F` are updated from the NMF conditional with `H = S t(G)`, the rows of
#' `G` with `W = F S`, every entry of `S` from its truncated-normal
#' conditional, then `tau` (and the ARD rates). VB uses the exact expected
#' squared error of the tri-factorisation (with the covariances of the terms
#' that share an entry of `F` or of `G`), and its ELBO never decreases; ICM
#' takes plain modes (no floor), so its log posterior never decreases and it
#' stops at a KKT point of the MAP problem. Both also rescale each column of
#' `F` and of `G` against the matching row or column of `S` (`F S t(G)` is
#' unchanged) to the scale that maximises the log posterior (ICM) or the
#' ELBO (VB), a direction coordinate updates cross slowly; Gibbs draws
#' that scale from its conditional (a Metropolis-Hastings step of the
#' generalised Gibbs sampler of Liu and Sabatti, which leaves the posterior
#' invariant); `"np"` uses the multiplicative
#' updates of the Euclidean loss (`loss = "euclidean"`) or the
#' I-divergence updates of Yoo and Choi (2009) (`loss = "kl"`, the paper's
#' baseline), on the observed entries.
#'
#' `prior = exponential(rate)` gives one rate to `F`, `S` and `G`; `"auto"`
#' sets it so that the prior mean of every entry of `F S t(G)` is the mean of
#' the observed `X`: `rate = (K L / mean(X))^(1/3)`. `prior = ard(alpha0,
#' beta0)` gives each column of `F` its own rate \eqn{\lambda^F_k} and each
#' column of `G` its own \eqn{\lambda^G_l}, all Gamma(alpha0, beta0); `S`
#' keeps the automatic rate.
#'
#' `init = "nmf"` (the default): `F` and `G` from Gaussian NMF ICM fits of
#' `X` (automatic prior and noise, missing entries masked, from a random
#' start; at most 100 sweeps, until 10 sweeps lower the squared error by at
#' most `1e-5` of itself): `F` is the `W` of the fit at rank `K` and `G` the
#' `t(H)` of the fit at rank `L` (one fit when `K = L`), every column
#' rescaled to mean `s = (mean(X) / (K L))^(1/3)`, the scale of a factor
#' under the automatic prior; `S` is the diagonal that keeps `F S t(G) = W H`
#' when `K = L`, otherwise exponential draws with mean `s / (K L)`. Since
#' `F S t(G)` with a `K x K` `S` represents every rank-`K` `W H`, the
#' tri-factorisation starts where NMF got, and NMF's coordinate updates from
#' a random start reach the best fit far more often than the
#' tri-factorisation's from k-means indicators (on the toy data of Brouwer,
#' Frellsen and Lio, every method reaches the noise level in each of 20
#' runs, a training MSE of at most 0.97, where from k-means indicators the
#' mean over the 20 runs was 1.12-1.98; bench/README.md). If the observed
#' entries of `X` have a mean <= 0, `"nmf"` is the k-means start.
#' `init = "kmeans"` (the paper's section 3.6): `F` is the indicator matrix of
#' a k-means clustering of the rows of `X` into `K` clusters and `G` that of
#' its columns into `L` clusters (plus 0.2 for methods `"gibbs"`, `"icm"` and
#' `"np"`), both times `s`; k-means runs on the observed entries, a missing
#' entry taking the mean of the observed entries of its column (for the rows)
#' or of its row (for the columns); a sparse `X` stays sparse. `S` starts
#' from random exponential draws with mean `s / (K L)`. `init = "random"`:
#' every entry of `F`, `S`, `G` exponential with mean `s`. With each scheme
#' `S` is then improved by a few sweeps of non-negative least squares in `S`
#' alone, and `tau` starts at its conditional mode. Every block of the start
#' of `c X` is thus `c^(1/3)` times that of `X`, and with the automatic prior
#' and noise rates the fit of `c X` is that of `X` with `F S t(G)` times `c`,
#' at any scale. Or a list `F`, `S`, `G` (and optionally `tau`, and `lambda =
#' list(F =, G =)` under ARD), or a list of such lists, one per chain.
#' Several `chains` are restarts for methods `"icm"`, `"vb"` and `"np"` (the
#' one with the highest log posterior, ELBO or lowest loss is kept) and
#' independent chains for `"gibbs"` (pooled, their factors matched).
#'
#' The fit has class `c("bnmf_<method>", "bnmf_nmtf", "bnmf")`: [factors()] gives `F`, `S`,
#' `G`; `basis()` is `F` and `coef()` is `S %*% t(G)`; `summary()` gives the
#' row and column clusters (argmax of each row of `F` and of `G`) with, for
#' Gibbs fits, their posterior probabilities over the kept draws.
#' @references
#' Brouwer, T. and Lio, P. (2017). Bayesian hybrid matrix factorisation for
#' data integration. *Proceedings of AISTATS 2017*, PMLR 54, 557-566.
#'
#' Yoo, J. and Choi, S. (2009). Probabilistic matrix tri-factorization.
#' *IEEE ICASSP 2009*, 1553-1556.
#' @examples
#' # A tri-factorisation: row and column clusters with the block strengths S
#' set.seed(3)
#' tri <- bnmf(leukemia[1:60, ] ~ nmtf(3, 2), method = "vb", iter = 100)
#' head(summary(tri)$col_clusters)
#' factors(tri)$S
#' @rdname bnmf
#' @name bnmf
NULL

# ---- the engine --------------------------------------------------------------

nmtf_engine <- function() {
  list(check = nmtf_check, model = nmtf_model, tasks = nmtf_tasks,
       run_task = nmtf_chain, seeds = TRUE, build = nmtf_build)
}

nmtf_methods <- c("gibbs", "vb", "icm", "np")

nmtf_check <- function(job) {
  method <- job$method
  if (!method %in% nmtf_methods) {
    abort_input(sprintf("`rank`: a tri-factorisation (rank = c(K, L), or `nmtf(K, L)`) is fitted by methods %s, not \"%s\".",
                        paste0('"', nmtf_methods, '"', collapse = ", "), method))
  }
  if (job$given[["control"]]) {
    abort_input("`control`: a tri-factorisation (rank = c(K, L), or `nmtf(K, L)`) takes none; its sweeps always leave missing entries out.")
  }
  if (method != "np" && job$given[["loss"]]) {
    abort_input(sprintf("`loss` applies to method \"np\" only, not \"%s\" (the Bayesian methods have a Gaussian likelihood).", method))
  }
  keep <- check_choice(job$keep, c("summary", "draws"), "keep")
  loss <- check_choice(job$loss, c("euclidean", "kl"), "loss")
  job$X <- check_data_matrix(job$X)
  K <- job$rank[1L]
  L <- job$rank[2L]
  I <- nrow(job$X)
  J <- ncol(job$X)
  if (K > I || L > J) {
    abort_input(sprintf("`rank`: c(K, L) must have K <= nrow(X) = %d and L <= ncol(X) = %d, not c(%d, %d).",
                        I, J, K, L))
  }
  prior <- job$prior
  problem <- if (!inherits(prior, "bnmf_prior")) {
    "`prior` must be made by `exponential()` or `ard()`."
  } else if (is.list(prior$rate)) {
    "`prior`: a tri-factorisation takes one exponential rate (for F, S and G) or `ard()`, not rate matrices."
  } else if (method == "np" && identical(prior$type, "ard")) {
    "`prior`: method \"np\" (multiplicative updates) has no prior; use method \"icm\", \"vb\" or \"gibbs\" for ARD."
  } else if (!inherits(job$noise, "bnmf_noise")) {
    "`noise` must be made by `gamma_prior()`."
  }
  if (!is.null(problem)) abort_input(problem)
  s <- check_settings(method, job$iter, job$burnin, job$thin, job$chains, job$tol, keep,
                      job$progress)
  s$loss <- if (method == "np") loss
  job$settings <- s
  draws <- if (keep == "draws") (s$iter - s$burnin) %/% s$thin else 0
  check_fit_size(I, J, max(K, L), s$chains, draws = draws,
                 copies = if (method == "vb") 7 else 6, data = 1 + (method == "gibbs"),
                 nx = if (inherits(job$X, "Matrix")) length(job$X@x) else length(job$X))
  job$data <- prepare_data(job$X, K)
  check_signs(job$X, method)
  job$init <- if (!job$given[["init"]]) "nmf" else job$init
  job$starts <- nmtf_starts(job$init, s$chains, I, J, K, L)
  job
}

# The model: dimensions, blocks, the resolved prior and noise.
nmtf_model <- function(job) {
  I <- nrow(job$X)
  J <- ncol(job$X)
  K <- job$rank[1L]
  L <- job$rank[2L]
  mean_x <- job$data$sum_obs / job$data$n_obs
  structure(list(model = "nmtf", dims = c(I, J), rank = c(K, L),
                 blocks = list(F = c(I, K), S = c(K, L), G = c(J, L)),
                 prior = nmtf_prior(job$prior, K, L, mean_x, job$method),
                 noise = if (job$method == "np") gamma_prior(1, 1) else
                   resolve_noise(job$noise, job$data),
                 likelihood = "gaussian"),
            class = "bnmf_spec")
}

# The prior resolved: `type`, the rates c(F, S, G) (`auto`: set from the
# data), the ARD hyper-parameters (numeric() without ARD).
nmtf_prior <- function(prior, K, L, mean_x, method) {
  if (method == "np") {
    return(list(type = "none", rate = c(F = 0, S = 0, G = 0), auto = FALSE, ard = numeric()))
  }
  ard <- identical(prior$type, "ard")
  rate <- if (ard) "auto" else prior$rate
  auto <- identical(rate, "auto")
  if (auto) {
    if (!(mean_x > 0)) {
      abort_input("`prior`: the automatic rate needs a positive mean of the observed entries of `X`; give `exponential(rate = )` explicitly.")
    }
    rate <- (K * L / mean_x)^(1 / 3)
  }
  if (method %in% c("gibbs", "vb") && !(rate > 0)) {
    abort_input(sprintf("`prior`: method \"%s\" needs an exponential rate > 0 (a rate of 0 is an improper prior, allowed for method \"icm\" only).", method))
  }
  # ARD without beta0: alpha0 / rate, the prior mean of the rates of F and G
  # is the automatic rate (see ?ard, The default beta0)
  b0_auto <- ard && isTRUE(prior$beta0_auto)
  beta0 <- if (b0_auto) gaussian_ard_beta0(prior$alpha0, rate) else prior$beta0
  out <- list(type = if (ard) "ard" else "exponential", rate = c(F = rate, S = rate, G = rate),
              auto = auto, ard = if (ard) c(prior$alpha0, beta0) else numeric())
  if (ard) out$beta0_auto <- b0_auto
  out
}

# The C view of the prior.
nmtf_c_prior <- function(model) {
  list(rate = as.double(unname(model$prior$rate)), alpha = as.double(model$noise$shape),
       beta = as.double(model$noise$rate), ard = as.double(model$prior$ard))
}

# The starts of the chains: NULL (a scheme, "kmeans" or "random", run in the
# chain's task on its own random numbers) or a checked list.
nmtf_starts <- function(init, chains, I, J, K, L) {
  if (is.character(init)) {
    init <- check_choice(init, c("nmf", "kmeans", "random"), "init")
    return(rep(list(list(scheme = init)), chains))
  }
  if (is.list(init) && !is.null(init$F)) {
    return(rep(list(check_nmtf_init(init, I, J, K, L)), chains))
  }
  if (is.list(init) && length(init) == chains && length(init) &&
      all(vapply(init, function(x) is.list(x) && !is.null(x$F), logical(1)))) {
    return(lapply(init, check_nmtf_init, I = I, J = J, K = K, L = L))
  }
  abort_input("`init` must be \"nmf\", \"kmeans\", \"random\", a list with matrices `F`, `S` and `G`, or a list of such lists, one per chain.")
}

check_nmtf_init <- function(init, I, J, K, L) {
  dims <- list(F = c(I, K), S = c(K, L), G = c(J, L))
  for (nm in names(dims)) {
    m <- init[[nm]]
    if (!is.numeric(m) || !identical(as.integer(dim(m)), as.integer(dims[[nm]])) || anyNA(m) ||
        any(!is.finite(m)) || any(m < 0)) {
      abort_input(sprintf("`init$%s` must be a %d x %d matrix of finite values >= 0.", nm,
                          dims[[nm]][1L], dims[[nm]][2L]))
    }
  }
  if (!is.null(init$tau)) check_number(init$tau, "init$tau", 0, min_open = TRUE)
  if (!is.null(init$lambda)) {
    l <- init$lambda
    ok <- is.list(l) && all(c("F", "G") %in% names(l)) &&
      is.numeric(l$F) && length(l$F) == K && all(is.finite(l$F)) && all(l$F > 0) &&
      is.numeric(l$G) && length(l$G) == L && all(is.finite(l$G)) && all(l$G > 0)
    if (!isTRUE(ok)) {
      abort_input(sprintf("`init$lambda` must be a list of ARD rates `F` (%d values > 0) and `G` (%d values > 0).",
                          K, L))
    }
  }
  init[intersect(c("F", "S", "G", "tau", "lambda"), names(init))]
}

nmtf_tasks <- function(job) {
  label <- c(gibbs = "Gibbs sampling", icm = "ICM", vb = "Variational Bayes",
             np = "Multiplicative updates")[[job$method]]
  n <- length(job$starts)
  job$tasks <- lapply(seq_len(n), function(c) {
    list(start = job$starts[[c]],
         label = if (n > 1L) sprintf("NMTF %s, chain %d", label, c) else paste("NMTF", label))
  })
  job$prior_c <- nmtf_c_prior(job$model)
  job$chain_progress <- job$settings$progress && tasks_in_process()
  job
}

# ---- starts ----------------------------------------------------------------------

# Lloyd's k-means of the rows of X (a dense matrix or a dgCMatrix: never
# densified) into k clusters: returns the cluster of every row. Starts from
# k distinct rows drawn at random; empty clusters keep their centre. The
# iterations run in C (src/kmeans.c), at most `iter` of them.
kmeans_rows <- function(X, k, iter = 30L) {
  n <- nrow(X)
  if (k >= n) return(seq_len(n))
  sparse <- inherits(X, "Matrix")
  if (sparse && !inherits(X, "dgCMatrix")) {
    X <- methods::as(methods::as(methods::as(X, "CsparseMatrix"), "generalMatrix"), "dMatrix")
  }
  norms <- if (sparse) Matrix::rowSums(X^2) else rowSums(X^2)
  centres <- as.matrix(X[sample.int(n, k), , drop = FALSE])
  storage.mode(centres) <- "double"
  if (sparse) {
    X <- list(X@i, X@p, as.double(X@x), X@Dim)
  } else if (!is.double(X)) {
    storage.mode(X) <- "double"
  }
  .Call(C_kmeans_rows, X, as.double(norms), centres, as.integer(iter))$cluster
}

# X with every missing entry replaced by the mean of the observed entries of
# its column (by = 2) or of its row (by = 1).
impute_means <- function(X, by) {
  if (inherits(X, "dgCMatrix")) {
    nas <- which(is.na(X@x))
    if (!length(nas)) return(X)
    cols <- rep.int(seq_len(ncol(X)), diff(X@p))
    keep <- X
    keep@x[nas] <- 0
    counts <- if (by == 2L) nrow(X) - tabulate(cols[nas], ncol(X)) else
      ncol(X) - tabulate(X@i[nas] + 1L, nrow(X))
    means <- (if (by == 2L) Matrix::colSums(keep) else Matrix::rowSums(keep)) / counts
    X@x[nas] <- if (by == 2L) means[cols[nas]] else means[X@i[nas] + 1L]
    return(X)
  }
  if (!anyNA(X)) return(X)
  means <- if (by == 2L) colMeans(X, na.rm = TRUE) else rowMeans(X, na.rm = TRUE)
  idx <- which(is.na(X), arr.ind = TRUE)
  X[idx] <- means[idx[, by]]
  X
}

indicators <- function(cl, k) {
  Z <- matrix(0, length(cl), k)
  Z[cbind(seq_along(cl), cl)] <- 1
  Z
}

# A start of a chain from its scheme: F and G (NMF fits, nmtf_nmf_start();
# k-means indicators, plus 0.2 except for VB; or random exponentials) and S
# (the NMF fit's scales when K = L, else random exponentials), all on
# the scale of the data: F, G at s = (mean(X) / (K L))^(1/3), the scale of
# each factor under the automatic prior, and S such that F S G' is of the
# order of X. A start of c X is then c^(1/3) times that of X in every block
# (in the units of the posterior of c X): with F and G at scale 1 whatever
# X, a start of X * 1e100 had F and G 1e33 below their posterior scale and
# S 1e67 above it, where the prior of S outweighs the data and the first
# sweep of ICM set S (so the fit) to zero.
nmtf_init <- function(scheme, X, K, L, mean_x, method) {
  I <- nrow(X)
  J <- ncol(X)
  s <- ((if (mean_x > 0) mean_x else .Machine$double.eps) / (K * L))^(1 / 3)
  # NMF's automatic prior needs mean(X) > 0; otherwise the k-means start
  if (scheme == "nmf" && mean_x > 0) return(nmtf_nmf_start(X, K, L, s))
  if (scheme == "random") {
    return(list(F = matrix(stats::rexp(I * K) * s, I, K),
                S = matrix(stats::rexp(K * L) * s, K, L),
                G = matrix(stats::rexp(J * L) * s, J, L)))
  }
  Xt <- if (inherits(X, "Matrix")) Matrix::t(X) else t(X)
  F0 <- indicators(kmeans_rows(impute_means(X, 2L), K), K)
  G0 <- indicators(kmeans_rows(impute_means(Xt, 2L), L), L)
  if (method != "vb") {
    F0 <- F0 + 0.2
    G0 <- G0 + 0.2
  }
  list(F = F0 * s, S = matrix(stats::rexp(K * L) * (s / (K * L)), K, L), G = G0 * s)
}

# The start init = "nmf": F = W and G = t(H) of Gaussian NMF ICM fits of X
# at ranks K and L (one fit when K = L), every column of F and of G rescaled
# to mean s (an all-zero column: exponential draws of mean s), S the
# diagonal that keeps F S t(G) = W H when K = L (else exponential draws of
# mean s / (K L); the caller improves S by non-negative least squares). NMF
# ICM reaches the basin of the best fit from a random start far more often
# than the tri-factorisation's sweeps from k-means indicators, whose fits
# settle where two clusters are not told apart (bench/README.md, NMTF on
# the paper's toy); F S t(G) with a K x K S represents every rank-K W H, so
# from here the tri-factorisation starts at least as close as NMF gets.
# Scale-free: the NMF ICM fit of c X (automatic prior and noise) is that of
# X with W, H times sqrt(c), and the columns are then set to s.
nmtf_nmf_start <- function(X, K, L, s) {
  I <- nrow(X)
  J <- ncol(X)
  fitK <- nmf_icm_factors(X, K)
  fitL <- if (L == K) fitK else nmf_icm_factors(X, L)
  unit <- function(Z) {
    m <- colMeans(Z)
    for (r in which(!(m > 0) | !is.finite(m))) {
      Z[, r] <- stats::rexp(nrow(Z))
      m[r] <- mean(Z[, r])
    }
    list(Z = sweep(Z, 2L, m, "/") * s, m = m)
  }
  F0 <- unit(fitK$W)
  G0 <- unit(t(fitL$H))
  S <- if (L == K) diag(F0$m * G0$m / s^2, K) else
    matrix(stats::rexp(K * L) * (s / (K * L)), K, L)
  list(F = F0$Z, S = S, G = G0$Z)
}

# W and H of a Gaussian NMF ICM fit of X at rank R (automatic prior and
# noise, missing entries masked) from a random start: 10 sweeps of
# non-negative least squares, then ICM sweeps in chunks of 10, at most
# `iter`, until a chunk lowers the SSE by at most `tol` of itself. (The
# SSE's relative change is the same for X and c X; the log posterior's is
# not, as log p moves by constants with the scale, so a stop on it would
# make the start of c X differ from that of X.)
nmf_icm_factors <- function(X, R, iter = 100L, tol = 1e-5) {
  I <- nrow(X)
  J <- ncol(X)
  data <- prepare_data(X, R)
  mean_x <- data$sum_obs / data$n_obs
  spec <- nmf_spec(I, J, R, gaussian_prior(exponential(), I, J, R, mean_x, "icm"),
                   resolve_noise(gamma_prior(), data))
  prior <- c_prior(spec)
  start <- random_init(I, J, R, mean_x)
  nmiss <- length(data$miss_pos)
  st <- new_state(X, data, start$W, start$H, 1, numeric(nmiss), FALSE)
  flat <- prior
  flat$lamW <- 0 * prior$lamW
  flat$lamH <- 0 * prior$lamH
  engine_sweeps(st, data, flat, 10L, rule = "icm", masked = TRUE)
  sse <- Inf
  for (chunk in seq_len(ceiling(iter / 10))) {
    tr <- engine_sweeps(st, data, prior, 10L, rule = "icm", masked = TRUE)$trace
    now <- tr[nrow(tr), 4L]
    if (!(sse - now > tol * now)) break
    sse <- now
  }
  list(W = matrix(st$W, I, R), H = matrix(st$H, R, J))
}

# ---- the chain state and the sweeps -----------------------------------------------

# A fresh NMTF chain state: the one place that writes its layout. The C code
# reads it by name and updates it in place, so every vector is owned by this
# state (`+ 0` copies). `acc`: running moments (Gibbs), with those of F S G'
# on the stored entries when `keep_fitted`; `lambda`: list(F, G) under ARD;
# `vb`: list(tau_rate, lambda_rate = list(F, G), and optionally the
# variances and entropies).
nmtf_new_state <- function(X, data, F, S, G, tau, acc = FALSE, keep_fitted = FALSE,
                           lambda = NULL, vb = NULL) {
  I <- data$dims[1L]
  J <- data$dims[2L]
  K <- ncol(F)
  L <- ncol(G)
  vals <- if (data$sparse == 1L) X@x else X
  nmiss <- length(data$miss_pos)
  x <- vals + 0
  if (nmiss) x[data$miss_pos + 1L] <- 0
  storage.mode(x) <- "double"
  st <- list(F = matrix(as.double(F), I, K) + 0, S = matrix(as.double(S), K, L) + 0,
             G = matrix(as.double(G), J, L) + 0, tau = as.double(tau) + 0, x = x,
             sumsq = data$sumsq_obs + 0, logpost = -Inf + 0, n_kept = 0 + 0)
  if (acc) {
    nfit <- if (keep_fitted) length(vals) else 0L
    st <- c(st, list(F_mean = numeric(I * K), F_m2 = numeric(I * K),
                     S_mean = numeric(K * L), S_m2 = numeric(K * L),
                     G_mean = numeric(J * L), G_m2 = numeric(J * L),
                     tau_mean = 0 + 0, tau_m2 = 0 + 0,
                     X_mean = numeric(nfit), X_m2 = numeric(nfit),
                     row_hits = numeric(I * K), col_hits = numeric(J * L)))
  }
  if (!is.null(lambda)) {
    st$lambda_F <- as.double(lambda$F) + 0
    st$lambda_G <- as.double(lambda$G) + 0
    if (acc) {
      st <- c(st, list(lambda_F_mean = numeric(K), lambda_F_m2 = numeric(K),
                       lambda_G_mean = numeric(L), lambda_G_m2 = numeric(L)))
    }
  }
  if (!is.null(vb)) {
    st$F_var <- as.double(vb$F_var %||% numeric(I * K)) + 0
    st$S_var <- as.double(vb$S_var %||% numeric(K * L)) + 0
    st$G_var <- as.double(vb$G_var %||% numeric(J * L)) + 0
    st$F_ent <- as.double(vb$F_ent %||% numeric(I * K)) + 0
    st$S_ent <- as.double(vb$S_ent %||% numeric(K * L)) + 0
    st$G_ent <- as.double(vb$G_ent %||% numeric(J * L)) + 0
    st$tau_rate <- as.double(vb$tau_rate) + 0
    if (!is.null(lambda)) {
      st$lambda_F_rate <- as.double(vb$lambda_rate$F) + 0
      st$lambda_G_rate <- as.double(vb$lambda_rate$G) + 0
    }
  }
  st
}

# Advance an NMTF state by n sweeps (in place): the R face of the C routine
# nmtf_sweeps. `update`: the blocks among F, S, G, tau. `scale`: with F, S
# and G updated, each sweep of Gibbs, ICM and VB ends with moves along the
# scale paths (F[, k] c, S[k, ] / c and G[, l] c, S[, l] / c): an exact
# draw (Gibbs) or maximisation (ICM, VB).
engine_nmtf_sweeps <- function(state, data, prior, n, rule = c("gibbs", "icm", "vb", "np"),
                               loss = "euclidean", accumulate = FALSE, thin = 1L,
                               keep_draws = FALSE, update = c("F", "S", "G", "tau"),
                               tol = 0, scale = TRUE) {
  rule <- match.arg(rule)
  ctrl <- list(n = as.integer(n), rule = rule, loss = loss,
               accumulate = as.logical(accumulate), thin = as.integer(thin),
               keep_draws = as.logical(keep_draws), update_F = "F" %in% update,
               update_S = "S" %in% update, update_G = "G" %in% update,
               update_tau = "tau" %in% update, scale = as.logical(scale),
               tol = as.double(tol))
  .Call(C_nmtf_sweeps, state, data, prior, ctrl, as.integer(ncol(state$G)))
}

#' n sweeps of an NMTF rule from a given state (for joint-distribution tests)
#'
#' @param X a data matrix (NA: missing).
#' @param state list(F, S, G, tau, lambda = list(F, G) or NULL).
#' @param prior list(rate = c(F =, S =, G =) or, for ARD, list(alpha0 =,
#'   beta0 =, rate_S =), alpha =, beta =).
#' @param n the number of sweeps.
#' @param rule "gibbs", "icm", "vb" or "np".
#' @param scale make the moves along the scale paths (see engine_nmtf_sweeps()).
#' @return the new state, in the layout of `state`.
#' @noRd
nmtf_sweeps <- function(X, state, prior, n, rule = "gibbs", scale = TRUE) {
  storage.mode(X) <- "double"
  K <- ncol(state$F)
  L <- ncol(state$G)
  data <- prepare_data(X, K)
  ard <- is.list(prior$rate)
  rate <- if (ard) c(1, prior$rate$rate_S, 1) else
    if (is.null(names(prior$rate))) prior$rate else prior$rate[c("F", "S", "G")]
  cp <- list(rate = as.double(unname(rate)), alpha = as.double(prior$alpha),
             beta = as.double(prior$beta),
             ard = if (ard) as.double(c(prior$rate$alpha0, prior$rate$beta0)) else numeric())
  lambda <- if (ard) state$lambda %||% list(F = rep(1, K), G = rep(1, L))
  vb <- if (rule == "vb") {
    list(tau_rate = (prior$alpha + data$n_obs / 2) / state$tau,
         lambda_rate = if (ard) list(F = (prior$rate$alpha0 + nrow(X)) / lambda$F,
                                     G = (prior$rate$alpha0 + ncol(X)) / lambda$G))
  }
  st <- nmtf_new_state(X, data, state$F, state$S, state$G, state$tau, lambda = lambda, vb = vb)
  engine_nmtf_sweeps(st, data, cp, n, rule = rule, scale = scale)
  list(F = st$F, S = st$S, G = st$G, tau = st$tau,
       lambda = if (ard) list(F = st$lambda_F, G = st$lambda_G))
}

# Run one NMTF chain from its start (a scheme, a list, or the saved state of
# a chain to continue): the start, tau and the rates at their conditional
# modes or means, then the chunks of run_chunks().
nmtf_run_chain <- function(job, start, label) {
  X <- job$X
  data <- job$data
  prior <- job$prior_c
  method <- job$method
  s <- job$settings
  I <- data$dims[1L]; J <- data$dims[2L]
  K <- job$rank[1L]; L <- job$rank[2L]
  ard <- length(prior$ard) == 2L
  acc <- method == "gibbs"
  state <- start$state
  if (is.null(state)) {
    mean_x <- data$sum_obs / data$n_obs
    if (!is.null(start$scheme)) {
      start <- nmtf_init(start$scheme, X, K, L, mean_x, method)
      # S by a few sweeps of non-negative least squares given F and G (a
      # flat prior; tau does not matter to them).
      st0 <- nmtf_new_state(X, data, start$F, start$S, start$G, 1)
      flat <- prior
      flat$rate[] <- 0
      flat$ard <- numeric()
      engine_nmtf_sweeps(st0, data, flat, 10L, rule = "icm", update = "S")
      start$S <- st0$S
    }
    tau0 <- start$tau
    if (method == "np") {
      tau0 <- 1
    } else if (is.null(tau0)) {
      st0 <- nmtf_new_state(X, data, start$F, start$S, start$G, 1)
      noard <- prior
      noard$ard <- numeric()
      engine_nmtf_sweeps(st0, data, noard, 1L, rule = "icm", update = "tau")
      tau0 <- st0$tau
    }
    lambda <- NULL
    if (ard) {
      rate_F <- prior$ard[2L] + colSums(start$F)
      rate_G <- prior$ard[2L] + colSums(start$G)
      lambda <- start$lambda %||% list(F = (prior$ard[1L] + I) / rate_F,
                                       G = (prior$ard[1L] + J) / rate_G)
    }
    vb <- if (method == "vb") {
      list(tau_rate = (prior$alpha + data$n_obs / 2) / tau0,
           lambda_rate = if (ard) list(F = (prior$ard[1L] + I) / lambda$F,
                                       G = (prior$ard[1L] + J) / lambda$G))
    }
    state <- nmtf_new_state(X, data, start$F, start$S, start$G, tau0, acc = acc,
                            keep_fitted = acc, lambda = lambda, vb = vb)
  } else {
    # continue: the data values are not saved with the fit
    vals <- if (data$sparse == 1L) X@x else X
    state$x <- vals + 0
    storage.mode(state$x) <- "double"
    if (length(data$miss_pos)) state$x[data$miss_pos + 1L] <- 0
  }
  sweep <- function(n, accumulate) {
    engine_nmtf_sweeps(state, data, prior, n, rule = method, loss = s$loss %||% "euclidean",
                       accumulate = accumulate, thin = if (accumulate) s$thin else 1L,
                       keep_draws = accumulate && s$keep == "draws",
                       tol = if (method == "gibbs") 0 else s$tol)
  }
  ch <- run_chunks(sweep, method, s$iter, s$burnin, s$thin, job$chain_progress, label,
                   draws = c("F_draws", "S_draws", "G_draws"),
                   lambda_names = if (ard) c(sprintf("lambda_F[%d]", seq_len(K)),
                                             sprintf("lambda_G[%d]", seq_len(L))),
                   tol = if (method == "gibbs") 0 else s$tol)
  state$x <- NULL
  c(list(state = state), ch)
}

nmtf_chain <- function(task, job) {
  res <- nmtf_run_chain(job, task$start, task$label)
  res$seed <- task_stream()
  res
}

nmtf_build <- function(runs, job, call) {
  validate_bnmf_nmtf_fit(new_bnmf_nmtf_fit(runs, job, call))
}

# ---- the fit ---------------------------------------------------------------------

# Build an NMTF fit from the chains' results (`previous`: the fit that
# update() continued, whose traces come first).
new_bnmf_nmtf_fit <- function(runs, job, call, previous = NULL) {
  X <- job$X
  data <- job$data
  method <- job$method
  I <- data$dims[1L]; J <- data$dims[2L]
  K <- job$rank[1L]; L <- job$rank[2L]
  rn <- rownames(X); cn <- colnames(X)
  kn <- paste0("k", seq_len(K)); ln <- paste0("l", seq_len(L))
  prior <- job$model$prior
  # each chain's trace after its earlier one (update())
  trace <- do.call(rbind, lapply(seq_along(runs), function(c) {
    new <- cbind(runs[[c]]$trace, chain = c)
    old <- previous$trace[previous$trace$chain == c, names(new), drop = FALSE]
    if (!NROW(old)) return(new)
    new$iteration <- new$iteration + nrow(old)
    rbind(old, new)
  }))
  rownames(trace) <- NULL
  chains <- lapply(runs, function(r) list(state = r$state, seed = r$seed,
                                          converged = r$converged))
  fit <- c(fit_header(call, method, "nmtf", X, c(K = K, L = L), job$settings),
           list(prior = prior, noise = job$model$noise, trace = trace, chains = chains))
  mat <- function(v, r, c, dn) matrix(v, r, c, dimnames = dn)
  dF <- list(rn, kn); dS <- list(kn, ln); dG <- list(cn, ln)
  ard <- length(prior$ard) == 2L
  if (method == "gibbs") {
    sts <- lapply(runs, function(r) r$state)
    ref <- sts[[1L]]
    pF <- lapply(sts, function(st) match_factors(matrix(ref$F_mean, I, K), matrix(st$F_mean, I, K)))
    pG <- lapply(sts, function(st) match_factors(matrix(ref$G_mean, J, L), matrix(st$G_mean, J, L)))
    ns <- vapply(sts, function(st) st$n_kept, numeric(1))
    idx <- function(c, what) {
      switch(what,
             F = as.vector(matrix(seq_len(I * K), I, K)[, pF[[c]]]),
             S = as.vector(matrix(seq_len(K * L), K, L)[pF[[c]], pG[[c]]]),
             G = as.vector(matrix(seq_len(J * L), J, L)[, pG[[c]]]),
             lambda_F = pF[[c]], lambda_G = pG[[c]], NULL)
    }
    mom <- function(what) {
      means <- lapply(seq_along(sts), function(c) {
        v <- sts[[c]][[paste0(what, "_mean")]]
        p <- idx(c, what)
        if (is.null(p)) v else v[p]
      })
      m2s <- lapply(seq_along(sts), function(c) {
        v <- sts[[c]][[paste0(what, "_m2")]]
        p <- idx(c, what)
        if (is.null(p)) v else v[p]
      })
      pool_moments(means, m2s, ns)
    }
    m <- list(F = mom("F"), S = mom("S"), G = mom("G"), tau = mom("tau"), X = mom("X"))
    if (ard) {
      m$lambda_F <- mom("lambda_F")
      m$lambda_G <- mom("lambda_G")
      fit$lambda <- list(F = stats::setNames(m$lambda_F$mean, kn),
                         G = stats::setNames(m$lambda_G$mean, ln))
    }
    fit$moments <- m
    fit$F <- mat(m$F$mean, I, K, dF)
    fit$S <- mat(m$S$mean, K, L, dS)
    fit$G <- mat(m$G$mean, J, L, dG)
    fit$F_sd <- mat(moment_sd(m$F$m2, m$F$n), I, K, dF)
    fit$S_sd <- mat(moment_sd(m$S$m2, m$S$n), K, L, dS)
    fit$G_sd <- mat(moment_sd(m$G$m2, m$G$n), J, L, dG)
    fit$tau <- m$tau$mean
    fit$tau_sd <- moment_sd(m$tau$m2, m$tau$n)
    fit$n_draws <- m$F$n
    hits <- function(what, n, R, p) {
      Reduce(`+`, lapply(seq_along(sts), function(c) {
        matrix(sts[[c]][[what]], n, R)[, p[[c]], drop = FALSE]
      })) / sum(ns)
    }
    fit$row_prob <- mat(hits("row_hits", I, K, pF), I, K, dF)
    fit$col_prob <- mat(hits("col_hits", J, L, pG), J, L, dG)
    fit$perm <- list(F = pF, G = pG)
    if (job$settings$keep == "draws") {
      fit$draws <- lapply(seq_along(runs), function(c) {
        old <- if (!is.null(previous)) previous$draws[[c]] else NULL
        list(F = cbind(old$F, runs[[c]]$draws$F_draws), S = cbind(old$S, runs[[c]]$draws$S_draws),
             G = cbind(old$G, runs[[c]]$draws$G_draws))
      })
    }
  } else {
    best <- which.max(vapply(runs, function(r) r$state$logpost, numeric(1)))
    b <- runs[[best]]$state
    fit$best <- best
    fit$F <- mat(b$F, I, K, dF)
    fit$S <- mat(b$S, K, L, dS)
    fit$G <- mat(b$G, J, L, dG)
    fit$tau <- b$tau
    fit$logpost <- b$logpost
    fit$converged <- vapply(runs, function(r) r$converged, logical(1))
    fit$iterations <- vapply(seq_along(runs), function(c) sum(trace$chain == c), numeric(1))
    if (ard) {
      fit$lambda <- list(F = stats::setNames(b$lambda_F, kn), G = stats::setNames(b$lambda_G, ln))
    }
    if (method == "vb") {
      fit$F_sd <- mat(sqrt(b$F_var), I, K, dF)
      fit$S_sd <- mat(sqrt(b$S_var), K, L, dS)
      fit$G_sd <- mat(sqrt(b$G_var), J, L, dG)
      # q's parameters: each entry N(mu, sigma^2) truncated to [0, Inf)
      # (list(mu, sigma), recovered from the mean and variance, tn_params())
      fit$q_F <- q_factor(b$F, b$F_var, c(I, K), dF)
      fit$q_S <- q_factor(b$S, b$S_var, c(K, L), dS)
      fit$q_G <- q_factor(b$G, b$G_var, c(J, L), dG)
      if (ard) {
        fit$q_lambda <- list(F = cbind(shape = prior$ard[1L] + I, rate = b$lambda_F_rate),
                             G = cbind(shape = prior$ard[1L] + J, rate = b$lambda_G_rate))
      }
    }
    fit <- optimiser_noise_parts(fit, b, fit$noise$shape, data$n_obs)
  }
  class(fit) <- fit_class(method, "nmtf")
  fit
}

# Values of an NMTF fit: non-negative finite factors of the fit's sizes, a
# positive finite tau (none for NP), cluster probabilities in [0, 1].
validate_bnmf_nmtf_fit <- function(fit) {
  validate_fit_header(fit)
  bad <- function(what) abort_fit(sprintf("the NMTF fit has %s", what))
  K <- fit$rank[[1L]]; L <- fit$rank[[2L]]
  sizes <- list(F = c(fit$dims[1L], K), S = c(K, L), G = c(fit$dims[2L], L))
  for (nm in names(sizes)) {
    m <- fit[[nm]]
    if (!identical(as.integer(dim(m)), as.integer(sizes[[nm]]))) bad(sprintf("%s of the wrong size", nm))
    if (any(!is.finite(m)) || any(m < 0)) bad(sprintf("a non-finite or negative %s", nm))
  }
  if (fit$method != "np" && (!all(is.finite(fit$tau)) || any(fit$tau <= 0))) {
    bad("a non-finite or non-positive tau")
  }
  if (!isTRUE(all(dim(fit$X) == fit$dims))) bad("X of the wrong size")
  for (p in list(fit$row_prob, fit$col_prob)) {
    if (!is.null(p) && (any(!is.finite(p)) || any(p < 0) || any(p > 1 + 1e-12))) {
      bad("cluster probabilities outside [0, 1]")
    }
  }
  validate_vb_q(fit, c("F", "S", "G"), bad)
  fit
}

# (F S G')_ij at the 0-based entries (i, j).
fsg_entries <- function(F, S, G, i, j) {
  W <- F %*% S
  rowSums(W[i + 1L, , drop = FALSE] * G[j + 1L, , drop = FALSE])
}

# The clusters of the rows of a factor matrix M (argmax of each row) and
# their probabilities (`prob`: the posterior probabilities of every cluster,
# or NULL for a point estimate: 1).
cluster_table <- function(M, prob, names) {
  cl <- max.col(M, ties.method = "first")
  p <- if (is.null(prob)) rep(1, nrow(M)) else prob[cbind(seq_len(nrow(M)), cl)]
  data.frame(cluster = cl, prob = p, row.names = names %||% seq_len(nrow(M)))
}
