# predict(): the posterior mean (and sd) of W H on every entry or on the
# entries asked for, or the coefficients of new samples given the fit's basis. newdata_run() is the
# run of the fit's own algorithm on the new samples with W held fixed.

#' @rdname predict.bnmf
#' @export
predict.bnmf <- function(object, newdata = NULL, type = c("response", "coef"),
                         se.fit = FALSE, iter = 500, i = NULL, j = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "predict")
  type <- check_choice(type, c("response", "coef"), "type")
  se.fit <- check_flag(se.fit, "se.fit")
  if (!is.null(i) || !is.null(j)) {
    if (!is.null(newdata) || type == "coef") {
      abort_input("`i`, `j`: entries of the fit's data are predicted with `newdata = NULL` and `type = \"response\"`.")
    }
    e <- check_entries(object, i, j)
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
                                   particle = NULL, se.fit = FALSE, ...) {
  check_dots_empty(list(...), names(formals()), "predict")
  type <- check_choice(type, c("response", "coef"), "type")
  se.fit <- check_flag(se.fit, "se.fit")
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
                             se.fit = FALSE, ...) {
  check_dots_empty(list(...), names(formals()), "predict")
  type <- check_choice(type, c("response", "coef"), "type")
  se.fit <- check_flag(se.fit, "se.fit")
  if (!is.null(newdata)) {
    abort_input("`newdata`: an HMC fit does not predict new samples; fit them with the data, or use method = \"particles\".")
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
  b <- object$chains[[object$best]]
  start$W_var <- b$W_var
  start$W_ent <- b$W_ent
  start$tau_rate <- b$tau_rate
  res <- NextMethod()
  res$H_sd <- sqrt(res$state$H_var)
  res
}

newdata_run.bnmf_np <- function(object, Xn, data_c, prior_c, start, iter) {
  if (isTRUE(min(if (data_c$sparse == 1L) Xn@x else Xn, na.rm = TRUE) < 0)) {
    abort_input("`newdata` has negative entries; method \"np\" needs X >= 0.")
  }
  NextMethod()
}

# Posterior sd of (WH)_ij on every entry of the fit's data.
wh_sd <- function(object) UseMethod("wh_sd")

wh_sd.bnmf <- function(object) no_posterior(object, "`se.fit = TRUE`")

wh_sd.bnmf_gibbs <- function(object) {
  if (object$sparse) abort_input("`se.fit = TRUE` needs a Gibbs fit of a dense matrix, or a VB fit.")
  matrix(moment_sd(object$moments$WH$m2, object$moments$WH$n),
         object$dims[1L], object$dims[2L], dimnames = object$dimnames)
}

wh_sd.bnmf_vb <- function(object) {
  check_dense(object, "`predict(se.fit = TRUE)`")
  newdata_wh_sd(object, object$H, object$H_sd, object$dimnames)
}

# Posterior sd of (WH)_ij on the entries (i, j), 1-based.
wh_sd_at <- function(object, i, j) UseMethod("wh_sd_at")

wh_sd_at.bnmf <- function(object, i, j) no_posterior(object, "`se.fit = TRUE`")

# Gibbs: from the running moments, kept on every entry of a dense X and on
# the stored entries of a sparse one.
wh_sd_at.bnmf_gibbs <- function(object, i, j) {
  pos <- if (object$sparse) stored_pos(object$X, i, j) else linear_index(i, j, object$dims[1L])
  if (anyNA(pos)) {
    abort_input("`se.fit = TRUE`: a Gibbs fit of a sparse X keeps the moments of W H on the stored entries of X only; ask for stored entries, or use a VB fit.")
  }
  moment_sd(object$moments$WH$m2[pos], object$moments$WH$n)
}

# VB: Var_q((WH)_ij) entry by entry (see q_wh_sd()).
wh_sd_at.bnmf_vb <- function(object, i, j) {
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

# Errors for what a fit without a posterior cannot give.
no_posterior <- function(object, what) {
  desc <- c(icm = "iterated conditional modes (a posterior mode)",
            np = "non-probabilistic multiplicative updates (no posterior)")
  abort_input(sprintf("%s is not available for method \"%s\": it is a point estimate by %s. Refit with method = \"gibbs\" or \"vb\".",
                      what, object$method, desc[[object$method]] %||% object$method))
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

# ---- the tri-factorisation (bnmf_nmtf) ----

#' @rdname predict.bnmf
#' @export
predict.bnmf_nmtf <- function(object, newdata = NULL, type = c("response", "coef"), ...) {
  check_dots_empty(list(...), c("newdata", "type"), "predict")
  type <- check_choice(type, c("response", "coef"), "type")
  if (!is.null(newdata)) {
    abort_input("`newdata`: predictions for new samples are not available for a tri-factorisation; refit with the new columns (as missing entries, NA, they are predicted).")
  }
  if (type == "coef") return(coef(object))
  nmtf_mean(object)
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

# newdata: not supported for Poisson fits yet.
#' @export
predict.bnmf_poisson <- function(object, newdata = NULL, ...) {
  check_dots_empty(list(...), names(formals()), "predict")
  if (!is.null(newdata)) {
    abort_input("`newdata`: predictions for new samples are not available for `likelihood = \"poisson\"` fits yet.")
  }
  pois_wh_mean(object)
}
