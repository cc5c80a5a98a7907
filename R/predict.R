# predict(): the posterior mean (and sd) of W H on every entry or on the
# entries asked for, or the coefficients of new samples given the fit's basis. newdata_run() is the
# run of the fit's own algorithm on the new samples with W held fixed.

#' @rdname predict.bnmf
#' @export
predict.bnmf <- function(object, newdata = NULL, type = c("response", "coef"),
                         se.fit = FALSE, iter = 500, i = NULL, j = NULL, ...) {
  a <- predict_args(object, newdata, type, se.fit, i, j, list(...), names(formals()))
  type <- a$type; se.fit <- a$se.fit
  if (!is.null(e <- a$entries)) {
    m <- wh_at(object, e$i, e$j)
    if (!se.fit) return(m)
    return(list(fit = m, se.fit = wh_sd_at(object, e$i, e$j)))
  }
  if (is.null(newdata)) {
    if (type == "coef") {
      return(if (se.fit) list(fit = object$H, se.fit = object$H_sd) else object$H)
    }
    m <- wh_mean(object)
    if (!se.fit) return(m)
    return(list(fit = m, se.fit = wh_sd(object)))
  }
  iter <- check_count(iter, "iter", min = 2)
  Xn <- match_features(object, check_data_matrix(newdata, "newdata"))
  K <- object$rank
  Jn <- ncol(Xn)
  data_c <- prepare_data(Xn, K)
  lamH <- object$prior$lamH
  lam_new <- if (length(unique(as.vector(lamH))) == 1L) {
    matrix(lamH[1L], K, Jn)
  } else {
    abort_input("`newdata` cannot be used with entry-wise prior rates of `H`.")
  }
  if (!is.null(object$lambda)) {
    # ARD: the new coefficients get the fitted rates lambda_k (posterior means).
    lam_new <- matrix(object$lambda, K, Jn)
  }
  W <- unname(object$W)
  lamW <- if (!is.null(object$lambda)) matrix(object$lambda, nrow(W), K, byrow = TRUE) else
    object$prior$lamW
  prior_c <- c_prior(object, lamW = lamW, lamH = lam_new, ard = numeric())
  mean_x <- data_c$sum_obs / data_c$n_obs
  s <- sqrt(max(mean_x, .Machine$double.eps) / K)
  start <- list(W = W, H = matrix(s, K, Jn), tau = object$tau %||% 1)
  res <- newdata_run(object, Xn, data_c, prior_c, start, iter)
  dn <- list(rownames(Xn), colnames(Xn))
  H <- matrix(res$H, K, Jn, dimnames = list(factor_names(K), colnames(Xn)))
  H_sd <- if (!is.null(res$H_sd)) matrix(res$H_sd, K, Jn, dimnames = dimnames(H))
  if (type == "coef") {
    if (se.fit && is.null(H_sd)) no_posterior(object, "`se.fit = TRUE`")
    return(if (se.fit) list(fit = H, se.fit = H_sd) else H)
  }
  if (!is.null(res$WH)) {
    m <- matrix(res$WH, nrow(Xn), Jn, dimnames = dn)
    if (!se.fit) return(m)
    return(list(fit = m, se.fit = matrix(res$WH_sd, nrow(Xn), Jn, dimnames = dn)))
  }
  m <- object$W %*% H
  dimnames(m) <- dn
  if (!se.fit) return(m)
  list(fit = m, se.fit = newdata_wh_sd(object, H, H_sd, dimnames(m)))
}

#' @rdname particles
#' @export
predict.bnmf_particles <- function(object, newdata = NULL, type = c("response", "coef"),
                                   particle = NULL, se.fit = FALSE, i = NULL, j = NULL, ...) {
  a <- predict_args(object, newdata, type, se.fit, i, j, list(...), names(formals()))
  type <- a$type; se.fit <- a$se.fit
  if (!is.null(e <- a$entries)) {
    return(parts_at(object$particles, object$weights, e$i, e$j, se.fit))
  }
  if (is.null(newdata)) {
    if (type == "coef") return(factors(object, particle)$H)
    return(wh_over_parts(object, object$particles, object$weights, se.fit))
  }
  Xn <- match_features(object, check_particle_data(newdata, "newdata", complete = TRUE))
  if (type == "coef") {
    m <- check_particle(object, particle)
    H <- nnls_coef(object$particles[[m]]$W, Xn)
    dimnames(H) <- list(factor_names(object$rank), colnames(Xn))
    return(H)
  }
  w <- object$weights
  out <- matrix(0, nrow(Xn), ncol(Xn))
  for (m in which(w > 0)) {
    W <- object$particles[[m]]$W
    out <- out + w[[m]] * (W %*% nnls_coef(W, Xn))
  }
  dimnames(out) <- list(rownames(Xn), colnames(Xn))
  out
}

#' @rdname hmc
#' @export
predict.bnmf_hmc <- function(object, newdata = NULL, type = c("response", "coef"),
                             se.fit = FALSE, i = NULL, j = NULL, ...) {
  a <- predict_args(object, newdata, type, se.fit, i, j, list(...), names(formals()))
  type <- a$type; se.fit <- a$se.fit
  if (!is.null(e <- a$entries)) {
    return(parts_at(hmc_draw_list(object), rep(1 / object$n_draws, object$n_draws), e$i, e$j,
                    se.fit))
  }
  if (!is.null(newdata)) {
    abort_unsupported("`newdata`: an HMC fit does not predict new samples; fit them with the data, or use method = \"particles\".")
  }
  if (type == "coef") return(object$H)
  if (!se.fit && !is.null(object$WH)) return(object$WH)
  wh_over_parts(object, hmc_draw_list(object), rep(1 / object$n_draws, object$n_draws), se.fit)
}

# The coefficients of new samples: the fit's algorithm run with W fixed from
# `start`. A list with H (the posterior mean or the mode), H_sd (NULL without
# a posterior) and, for a dense Gibbs run, the moments WH and WH_sd of W H.
newdata_run <- function(object, Xn, data_c, prior_c, start, iter) UseMethod("newdata_run")

# The optimisers (ICM, VB, NP): run to convergence.
newdata_run.bnmf <- function(object, Xn, data_c, prior_c, start, iter) {
  res <- run_chain(Xn, data_c, prior_c, object$method, iter = 1000L, burnin = 0L,
                   thin = 1L, keep = "summary", tol = 1e-10, start = start,
                   progress = FALSE, masked = TRUE, fix_W = TRUE,
                   loss = object$settings$loss %||% "euclidean")
  list(H = res$state$H, state = res$state)
}

newdata_run.bnmf_gibbs <- function(object, Xn, data_c, prior_c, start, iter) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  res <- run_chain(Xn, data_c, prior_c, object$method, iter = iter,
                   burnin = iter %/% 2L, thin = 1L, keep = "summary", tol = 0,
                   start = start, progress = FALSE, masked = FALSE, fix_W = TRUE,
                   loss = object$settings$loss %||% "euclidean")
  st <- res$state
  out <- list(H = st$H_mean, H_sd = moment_sd(st$H_m2, st$n_kept))
  if (!data_c$sparse) {
    out$WH <- st$WH_mean
    out$WH_sd <- moment_sd(st$WH_m2, st$n_wh)
  }
  out
}

# VB continues from the fit's q(W) and q(tau).
newdata_run.bnmf_vb <- function(object, Xn, data_c, prior_c, start, iter) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  b <- object$chains[[object$best]]
  start$W_var <- b$W_var
  start$W_ent <- b$W_ent
  start$tau_rate <- b$tau_rate
  res <- NextMethod()
  res$H_sd <- sqrt(res$state$H_var)
  res
}

newdata_run.bnmf_np <- function(object, Xn, data_c, prior_c, start, iter) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  if (isTRUE(min(if (data_c$sparse == 1L) Xn@x else Xn, na.rm = TRUE) < 0)) {
    abort_input("`newdata` has negative entries; method \"np\" needs X >= 0.")
  }
  NextMethod()
}

# Posterior sd of (WH)_ij on every entry of the fit's data.
wh_sd <- function(object) UseMethod("wh_sd")

wh_sd.bnmf <- function(object) no_posterior(object, "`se.fit = TRUE`")

wh_sd.bnmf_gibbs <- function(object) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  if (object$sparse) abort_input("`se.fit = TRUE` needs a Gibbs fit of a dense matrix, or a VB fit.")
  no_wh_moments(object)
  matrix(moment_sd(object$moments$WH$m2, object$moments$WH$n),
         object$dims[1L], object$dims[2L], dimnames = object$dimnames)
}

wh_sd.bnmf_vb <- function(object) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  check_dense(object, "`predict(se.fit = TRUE)`")
  newdata_wh_sd(object, object$H, object$H_sd, object$dimnames)
}

# A Gibbs fit by blocks of a DelayedMatrix keeps no moments of W H: refused.
no_wh_moments <- function(object) {
  if (length(object$moments$WH$mean)) return(invisible(NULL))
  abort_unsupported("`se.fit = TRUE`: a Gibbs fit by blocks of a DelayedMatrix keeps no moments of W H (they would take I x J values); fit the data in memory, or use a VB fit.")
}

# Posterior sd of (WH)_ij on the entries (i, j), 1-based.
wh_sd_at <- function(object, i, j) UseMethod("wh_sd_at")

wh_sd_at.bnmf <- function(object, i, j) no_posterior(object, "`se.fit = TRUE`")

# Gibbs: from the running moments, kept on every entry of a dense X and on
# the stored entries of a sparse one.
wh_sd_at.bnmf_gibbs <- function(object, i, j) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  no_wh_moments(object)
  pos <- if (object$sparse) stored_pos(object$X, i, j) else linear_index(i, j, object$dims[1L])
  if (anyNA(pos)) {
    abort_input("`se.fit = TRUE`: a Gibbs fit of a sparse X keeps the moments of W H on the stored entries of X only; ask for stored entries, or use a VB fit.")
  }
  moment_sd(object$moments$WH$m2[pos], object$moments$WH$n)
}

# VB: Var_q((WH)_ij) entry by entry (see q_wh_sd()).
wh_sd_at.bnmf_vb <- function(object, i, j) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  W <- unname(object$W); H <- unname(object$H)
  Wv <- unname(object$W_sd)^2; Hv <- unname(object$H_sd)^2
  v <- wh_entries(W^2, Hv, i - 1L, j - 1L) + wh_entries(Wv, H^2, i - 1L, j - 1L) +
    wh_entries(Wv, Hv, i - 1L, j - 1L)
  sqrt(pmax(v, 0))
}

# Posterior sd of W H for coefficients H (sd H_sd) of new samples.
newdata_wh_sd <- function(object, H, H_sd, dn) UseMethod("newdata_wh_sd")

newdata_wh_sd.bnmf <- function(object, H, H_sd, dn) {
  abort_input("`se.fit = TRUE` for `newdata` needs a dense Gibbs fit or a VB fit.")
}

newdata_wh_sd.bnmf_vb <- function(object, H, H_sd, dn) {
  if (!inherits(object, "bnmf_nmf")) return(NextMethod())
  q_wh_sd(object$W, object$W_sd^2, H, H_sd^2, dn)
}

# Under mean-field VB, W_ik and H_kj are independent, so
# Var_q((WH)_ij) = sum_k E[W_ik^2] E[H_kj^2] - E[W_ik]^2 E[H_kj]^2
#                = (W^2 Hv + Wv H^2 + Wv Hv)_ij with Wv, Hv the variances.
q_wh_sd <- function(W, Wv, H, Hv, dn) {
  v <- (W^2) %*% Hv + Wv %*% (H^2) + Wv %*% Hv
  m <- sqrt(pmax(v, 0))
  dimnames(m) <- dn
  m
}

# The arguments every predict() method checks: its `...` (against the
# method's own arguments `valid`, where given), `type`, `se.fit`, and the
# entries (i, j) of the fit's data asked for (without newdata; NULL when
# none).
predict_args <- function(object, newdata, type, se.fit, i, j, dots = list(), valid = NULL) {
  if (!is.null(valid)) check_dots_empty(dots, valid, "predict")
  type <- check_choice(type, c("response", "coef"), "type")
  se.fit <- check_flag(se.fit, "se.fit")
  entries <- if (!is.null(i) || !is.null(j)) {
    if (!is.null(newdata) || type == "coef") {
      abort_input("`i`, `j`: entries of the fit's data are predicted with `newdata = NULL` and `type = \"response\"`.")
    }
    check_entries(object, i, j)
  }
  list(type = type, se.fit = se.fit, entries = entries)
}

# Errors for what a fit without a posterior cannot give.
no_posterior <- function(object, what) {
  desc <- c(icm = "iterated conditional modes (a posterior mode)",
            np = "non-probabilistic multiplicative updates (no posterior)",
            rrt = "the RRT search (the estimate of its highest-weight component)")
  how <- if (object$method %in% names(desc)) desc[[object$method]] else object$method
  abort_unsupported(sprintf("%s is not available for method \"%s\": it is a point estimate by %s. Refit with method = \"gibbs\" or \"vb\".",
                      what, object$method, how))
}

# min |X - W H|_F over H >= 0 with W fixed: coordinate descent (HALS) over
# the rows of H, vectorised over the columns, until the largest change of H
# is below 1e-10 of its scale.
nnls_coef <- function(W, X, maxit = 1000L) {
  R <- ncol(W)
  G <- crossprod(W)
  B <- crossprod(W, X)
  H <- matrix(pmax(qr.solve(G, B), 0), R, ncol(X))
  for (it in seq_len(maxit)) {
    change <- 0
    for (k in seq_len(R)) {
      if (!(G[k, k] > 0)) next
      new <- pmax(H[k, ] + (B[k, ] - drop(G[k, , drop = FALSE] %*% H)) / G[k, k], 0)
      change <- max(change, abs(new - H[k, ]))
      H[k, ] <- new
    }
    if (change <= 1e-10 * max(H, 1e-300)) break
  }
  H
}

# ---- RRT (method = "rrt") ---------------------------------------------------

# New samples of an RRT fit: each component's coefficients by non-negative
# least squares with its basis held; the response is the components'
# weighted mean (se.fit: their weighted sd), the coefficients those of the
# highest-weight component (se.fit: the weighted sd over the components,
# factors matched to it).
#' @rdname predict.bnmf
#' @export
predict.bnmf_rrt <- function(object, newdata = NULL, type = c("response", "coef"),
                             se.fit = FALSE, i = NULL, j = NULL, ...) {
  if (is.null(newdata)) return(NextMethod())
  a <- predict_args(object, newdata, type, se.fit, i, j, list(...), names(formals()))
  type <- a$type; se.fit <- a$se.fit
  Xn <- match_features(object, check_data_matrix(newdata, "newdata"))
  Xn <- as.matrix(Xn)
  if (anyNA(Xn)) abort_input("`newdata`: method \"rrt\" predicts complete new samples (no NA).")
  w <- object$weights
  ref <- unname(object$W)
  parts <- lapply(object$components, function(f) {
    p <- match_factors(ref, unname(f$W))
    W <- unname(f$W)[, p, drop = FALSE]
    H <- nnls_coef(W, Xn)
    list(H = H, WH = W %*% H)
  })
  dn <- list(rownames(Xn), colnames(Xn))
  wmean <- function(get) Reduce(`+`, Map(function(f, wm) wm * get(f), parts, w))
  wsd <- function(get, m) sqrt(pmax(wmean(function(f) get(f)^2) - m^2, 0))
  if (type == "coef") {
    H <- parts[[object$best]]$H
    dimnames(H) <- list(factor_names(object$rank), colnames(Xn))
    if (!se.fit) return(H)
    m <- wmean(function(f) f$H)
    return(list(fit = H, se.fit = matrix(wsd(function(f) f$H, m), nrow(H), dimnames = dimnames(H))))
  }
  m <- wmean(function(f) f$WH)
  dimnames(m) <- dn
  if (!se.fit) return(m)
  list(fit = m, se.fit = matrix(wsd(function(f) f$WH, m), nrow(m), dimnames = dn))
}

# ---- the tri-factorisation (bnmf_nmtf) ----

#' @rdname predict.bnmf
#' @export
predict.bnmf_nmtf <- function(object, newdata = NULL, type = c("response", "coef"),
                              se.fit = FALSE, iter = 500, i = NULL, j = NULL, ...) {
  a <- predict_args(object, newdata, type, se.fit, i, j, list(...), names(formals()))
  type <- a$type; se.fit <- a$se.fit
  if (!is.null(e <- a$entries)) {
    if (se.fit) nmtf_no_se("entries")
    return(wh_at(object, e$i, e$j))
  }
  if (is.null(newdata)) {
    if (se.fit) nmtf_no_se("the data of the fit")
    if (type == "coef") return(coef(object))
    return(nmtf_mean(object))
  }
  # New samples are new rows of G, from their conditional given F and S held
  # at the fit's estimate: the NMF problem X ~ (F S) t(G) with the basis F S.
  out <- predict.bnmf(nmtf_as_nmf(object), newdata, type = type, se.fit = se.fit, iter = iter)
  if (type == "response") return(out)
  S <- unname(object$S)
  to_coef <- function(Gt) {
    m <- S %*% Gt
    dimnames(m) <- list(rownames(object$S), colnames(Gt))
    m
  }
  if (!se.fit) return(to_coef(out))
  # the sd of S g with the entries of g independent, S held
  sd <- sqrt(S^2 %*% out$se.fit^2)
  dimnames(sd) <- list(rownames(object$S), colnames(out$fit))
  list(fit = to_coef(out$fit), se.fit = sd)
}

nmtf_no_se <- function(what) {
  abort_unsupported(sprintf("`se.fit = TRUE`: the posterior sd of F S t(G) on %s is not kept by an NMTF fit; the sds of its factors are `fit$F_sd`, `fit$S_sd`, `fit$G_sd`, and `predict(fit, newdata, se.fit = TRUE)` gives them for new samples.",
                            what))
}

# An NMTF fit as the NMF fit whose basis is F S (I x L, held at the fit's
# estimate) and whose coefficients are t(G), with G's prior and the fit's
# noise: new samples' rows of G are that NMF's coefficients of new samples.
nmtf_as_nmf <- function(object) {
  I <- object$dims[1L]
  L <- object$rank[[2L]]
  W <- object$F %*% object$S
  colnames(W) <- colnames(object$G)
  lamG <- object$prior$rate[["G"]]
  ch <- object$chains[[object$best %||% 1L]]$state
  proxy <- list(method = object$method, rank = L, dims = object$dims,
                dimnames = object$dimnames, sparse = object$sparse, W = W, W_sd = W * 0,
                tau = object$tau, noise = object$noise, settings = object$settings,
                prior = list(type = object$prior$type, lamW = matrix(lamG, I, L),
                             lamH = matrix(lamG, L, 1L)),
                lambda = object$lambda$G, best = 1L,
                chains = list(list(W_var = numeric(I * L), W_ent = numeric(I * L),
                                   tau_rate = ch$tau_rate)))
  class(proxy) <- fit_class(object$method, "nmf")
  proxy
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

#' @rdname predict.bnmf
#' @export
predict.bnmf_poisson <- function(object, newdata = NULL, type = c("response", "coef"),
                                 se.fit = FALSE, iter = 500, i = NULL, j = NULL, ...) {
  a <- predict_args(object, newdata, type, se.fit, i, j, list(...), names(formals()))
  type <- a$type; se.fit <- a$se.fit
  if (!is.null(e <- a$entries)) {
    m <- if (!is.null(object$WH)) object$WH[cbind(e$i, e$j)] else wh_at(object, e$i, e$j)
    if (!se.fit) return(m)
    Ws <- object$W_sd %||% 0 * object$W
    Hs <- object$H_sd %||% 0 * object$H
    sd <- pois_wh_sd(object$W[e$i, , drop = FALSE], Ws[e$i, , drop = FALSE],
                     t(object$H)[e$j, , drop = FALSE], t(Hs)[e$j, , drop = FALSE])
    return(list(fit = m, se.fit = sd))
  }
  if (is.null(newdata)) {
    if (type == "coef") return(if (se.fit) list(fit = object$H, se.fit = object$H_sd) else object$H)
    m <- pois_wh_mean(object)
    if (!se.fit) return(m)
    check_dense(object, "`predict(se.fit = TRUE)`")
    W <- unname(object$W); Ws <- unname(object$W_sd %||% 0 * W)
    H <- unname(object$H); Hs <- unname(object$H_sd %||% 0 * H)
    sd <- sqrt(pmax((W^2 + Ws^2) %*% (H^2 + Hs^2) - W^2 %*% H^2, 0))
    dimnames(sd) <- object$dimnames
    return(list(fit = m, se.fit = sd))
  }
  iter <- check_count(iter, "iter", min = 2)
  Xn <- match_features(object, check_data_matrix(newdata, "newdata"))
  Xn <- as.matrix(Xn)
  if (isTRUE(min(Xn, na.rm = TRUE) < 0)) {
    abort_input("`newdata` has negative entries; the Poisson likelihood needs counts >= 0.")
  }
  res <- pois_new_coef(object, Xn, iter)
  kn <- rownames(object$H) %||% factor_names(object$rank)
  H <- matrix(res$H, object$rank, ncol(Xn), dimnames = list(kn, colnames(Xn)))
  H_sd <- matrix(res$H_sd, object$rank, ncol(Xn), dimnames = dimnames(H))
  if (type == "coef") return(if (se.fit) list(fit = H, se.fit = H_sd) else H)
  m <- object$W %*% H
  dimnames(m) <- list(rownames(Xn), colnames(Xn))
  if (!se.fit) return(m)
  sd <- vapply(seq_len(ncol(Xn)), function(c) {
    pois_wh_sd(object$W, object$W_sd %||% 0 * object$W, matrix(H[, c], nrow(Xn), object$rank, byrow = TRUE),
               matrix(H_sd[, c], nrow(Xn), object$rank, byrow = TRUE))
  }, numeric(nrow(Xn)))
  sd <- matrix(sd, nrow(Xn), dimnames = dimnames(m))
  list(fit = m, se.fit = sd)
}

# The sd of sum_k W_k H_k for independent W_k (mean W, sd Ws) and H_k
# (mean H, sd Hs), row by row of equal-sized matrices.
pois_wh_sd <- function(W, Ws, H, Hs) {
  sqrt(pmax(rowSums((W^2 + Ws^2) * (H^2 + Hs^2) - W^2 * H^2), 0))
}

# The coefficients of new samples of a Poisson fit with the basis held:
# VB (and SSVI): coordinate ascent on q(H) = Gamma with q(W) the fit's
# (Gamma, from its means and sds), to a relative change of 1e-8 or `iter`
# sweeps; Gibbs: `iter` sweeps of the auxiliary-variable sampler of H with W
# at its posterior mean (the first half discarded), the mean and sd of the
# rest. Missing entries (NA) are left out.
pois_new_coef <- function(object, Xn, iter) {
  K <- object$rank
  O <- !is.na(Xn)
  Xn[!O] <- 0
  a_h <- object$prior$c
  # ARD: the rate of H[k, ] is lambda_k (its posterior mean), a K-vector
  # recycled down the columns of the K x Jn matrices below
  b_h <- if (identical(object$prior$type, "ard")) unname(object$lambda) else object$prior$d
  Wm <- unname(object$W)
  rate <- b_h + crossprod(Wm, O * 1)          # K x Jn
  if (object$method == "gibbs") {
    H <- matrix(a_h / b_h, K, ncol(Xn))
    burn <- iter %/% 2L
    s1 <- s2 <- 0
    for (t in seq_len(iter)) {
      shape <- a_h + pois_split(Wm, H, Xn)$zH
      H <- matrix(stats::rgamma(length(shape), shape, rate), K)
      if (t > burn) {
        s1 <- s1 + H
        s2 <- s2 + H^2
      }
    }
    n <- iter - burn
    m <- s1 / n
    return(list(H = m, H_sd = sqrt(pmax(s2 / n - m^2, 0) * n / max(n - 1, 1))))
  }
  # exp(E[log W]) of q(W); a fit without sds of W (SSVI) holds W at its mean
  eW <- Wm
  if (!is.null(object$W_sd)) {
    shW <- Wm^2 / pmax(unname(object$W_sd)^2, .Machine$double.xmin)
    eW <- exp(digamma(shW) - log(shW / Wm))
    eW[Wm == 0] <- 0
  }
  Hm <- matrix(a_h / b_h, K, ncol(Xn))
  shape <- matrix(a_h, K, ncol(Xn))
  for (t in seq_len(iter)) {
    eH <- exp(digamma(shape)) / rate
    shape <- a_h + eH * crossprod(eW, Xn / pmax(eW %*% eH, .Machine$double.xmin))
    H_new <- shape / rate
    done <- max(abs(H_new - Hm)) <= 1e-8 * max(abs(H_new), .Machine$double.xmin)
    Hm <- H_new
    if (done) break
  }
  list(H = Hm, H_sd = sqrt(shape) / rate)
}

# Gibbs: the multinomial split of every count of X (I x J; zero where
# missing) among the K factors, with probabilities W[i, ] * H[, j], drawn as
# a sequence of binomials, factor by factor; its sums over samples (`zW`,
# I x K) and over features (`zH`, K x J).
pois_split <- function(W, H, X) {
  K <- ncol(W)
  left <- X
  tail <- W %*% H
  zW <- matrix(0, nrow(X), K)
  zH <- matrix(0, K, ncol(X))
  for (k in seq_len(K)) {
    part <- outer(W[, k], H[k, ])
    p <- if (k < K) pmin(part / pmax(tail, .Machine$double.xmin), 1) else (left > 0) * 1
    z <- matrix(stats::rbinom(length(left), left, p), nrow(left))
    zW[, k] <- rowSums(z)
    zH[k, ] <- colSums(z)
    left <- left - z
    tail <- pmax(tail - part, 0)
  }
  list(zW = zW, zH = zH)
}
