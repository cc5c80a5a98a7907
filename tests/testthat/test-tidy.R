# tidy(), glance(), augment() and as.data.frame() of fits, and tidy() and
# glance() of rank selections: every number checked against the fit it
# comes from.

quiet <- function(expr) suppressWarnings(expr)
X <- conformance_data()
I <- nrow(X); J <- ncol(X)

set.seed(1)
gibbs <- quiet(bnmf(X, rank = 2, method = "gibbs", iter = 120, keep = "draws", chains = 2))
set.seed(1)
vb <- quiet(bnmf(X, rank = 2, method = "vb", iter = 60))

test_that("tidy(W) of a Gibbs fit with draws: estimates, sds and the quantiles of the draws", {
  td <- tidy(gibbs)
  expect_s3_class(td, "data.frame")
  expect_identical(names(td), c("factor", "feature", "estimate", "sd", "lower", "upper",
                                "prob_top"))
  expect_identical(nrow(td), I * 2L)
  expect_identical(levels(td$factor), c("k1", "k2"))
  expect_identical(as.character(td$factor), rep(c("k1", "k2"), each = I))
  expect_identical(td$feature, rep(rownames(X), 2))
  expect_identical(td$estimate, as.vector(factors(gibbs)$W))
  expect_identical(td$sd, as.vector(gibbs$W_sd))
  d <- do.call(cbind, lapply(gibbs$draws, function(dr) dr$W))
  expect_identical(ncol(d), as.integer(gibbs$n_draws))
  q <- apply(d, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
  expect_equal(td$lower, q[1, ])
  expect_equal(td$upper, q[2, ])
  expect_true(all(td$lower <= td$upper))
  # each factorisation puts exactly n_top features in every factor's top
  expect_equal(as.vector(tapply(td$prob_top, td$factor, sum)), c(10, 10))
  mk <- markers(gibbs, n = 10)
  key <- paste(td$factor, td$feature)
  expect_equal(td$prob_top[match(paste(mk$factor, mk$feature), key)], mk$prob_top)
  expect_equal(td$lower[match(paste(mk$factor, mk$feature), key)], mk$lower)
})

test_that("tidy(H) of a Gibbs fit: quantiles of the draws and cluster probabilities", {
  th <- tidy(gibbs, matrix = "H")
  expect_identical(names(th), c("factor", "sample", "estimate", "sd", "lower", "upper",
                                "probability"))
  expect_identical(as.character(th$factor), rep(c("k1", "k2"), J))
  expect_identical(th$sample, rep(colnames(X), each = 2))
  expect_identical(th$estimate, as.vector(factors(gibbs)$H))
  expect_identical(th$sd, as.vector(gibbs$H_sd))
  d <- do.call(cbind, lapply(gibbs$draws, function(dr) dr$H))
  q <- apply(d, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
  expect_equal(th$lower, q[1, ])
  expect_equal(th$upper, q[2, ])
  s <- tapply(th$probability, th$sample, sum)
  expect_equal(as.vector(s), rep(1, J))
  # the probability of each sample's most probable cluster is membership()'s
  m <- membership(gibbs)
  top <- th[th$probability == ave(th$probability, th$sample, FUN = max), ]
  top <- top[!duplicated(top$sample), ]
  expect_equal(top$probability[match(m$sample, top$sample)], m$probability)
  # and it is the share of kept draws in which k is the sample's dominant
  # factor
  dw <- do.call(cbind, lapply(gibbs$draws, function(dr) dr$W))
  P <- matrix(0, 2, J)
  for (t in seq_len(ncol(d))) {
    k <- bnmf:::dominant_factor(matrix(dw[, t], I, 2), matrix(d[, t], 2, J))
    P[cbind(k, seq_len(J))] <- P[cbind(k, seq_len(J))] + 1 / ncol(d)
  }
  expect_equal(th$probability, as.vector(P))
})

test_that("tidy() of a VB fit: the sds of q and estimate +/- 1.96 sd cut at zero", {
  td <- tidy(vb)
  W <- factors(vb)$W
  expect_identical(td$estimate, as.vector(W))
  expect_identical(td$sd, as.vector(vb$W_sd))
  expect_equal(td$lower, pmax(as.vector(W - 1.96 * vb$W_sd), 0))
  expect_equal(td$upper, as.vector(W + 1.96 * vb$W_sd))
  th <- tidy(vb, "H")
  expect_equal(th$upper, as.vector(factors(vb)$H + 1.96 * vb$H_sd))
  # the probabilities are over draws from q, as membership()'s
  expect_equal(as.vector(tapply(th$probability, th$sample, sum)), rep(1, J))
  set.seed(10)
  th <- tidy(vb, "H")
  set.seed(10)
  m <- membership(vb)
  expect_equal(as.vector(tapply(th$probability, factor(th$sample, colnames(X)), max)),
               m$probability)
})

test_that("point estimates (ICM, NP) have no sd or interval", {
  set.seed(2)
  for (m in c("icm", "np")) {
    fit <- quiet(bnmf(X, rank = 2, method = m, iter = 30))
    td <- tidy(fit)
    expect_identical(td$estimate, as.vector(factors(fit)$W))
    expect_true(all(is.na(td$sd)) && all(is.na(td$lower)) && all(is.na(td$upper)))
    expect_true(all(td$prob_top %in% c(0, 1)))
  }
})

test_that("tidy() of particle and HMC fits: weighted spread over the factorisations", {
  set.seed(3)
  fit <- quiet(bnmf(X, rank = 2, method = "particles", particles = 4, iter = 30))
  td <- tidy(fit)
  expect_identical(td$estimate, as.vector(factors(fit)$W))
  w <- weights(fit)
  A <- vapply(seq_along(w), function(m) as.vector(factors(fit, particle = m, aligned = TRUE)$W),
              numeric(I * 2))
  mu <- drop(A %*% w)
  expect_equal(td$sd, sqrt(pmax(drop(A^2 %*% w) - mu^2, 0)))
  # weighted quantiles are values of the particles
  expect_true(all(vapply(seq_len(nrow(A)), function(r) {
    td$lower[r] %in% A[r, ] && td$upper[r] %in% A[r, ]
  }, logical(1))))
  expect_true(all(td$lower <= td$upper))

  set.seed(3)
  h <- quiet(bnmf(X, rank = 2, method = "hmc", iter = 40))
  th <- tidy(h, "H")
  expect_equal(th$estimate, as.vector(factors(h)$H))
  D <- vapply(seq_len(h$n_draws), function(d) as.vector(factors(h, draw = d)$H), numeric(2 * J))
  expect_equal(th$sd, sqrt(pmax(rowMeans(D^2) - rowMeans(D)^2, 0)))
  q <- apply(D, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
  expect_equal(th$lower, q[1, ])
  expect_equal(th$upper, q[2, ])
})

test_that("tidy() of a tri-factorisation: F, S, G and the W, H view", {
  set.seed(4)
  fit <- quiet(bnmf(X, rank = c(2, 3), method = "vb", iter = 60))
  f <- tidy(fit)
  expect_identical(f$estimate, as.vector(fit$F))
  expect_identical(f$sd, as.vector(fit$F_sd))
  expect_equal(f$upper, as.vector(fit$F + 1.96 * fit$F_sd))
  expect_equal(as.vector(tapply(f$probability, f$feature, sum)), rep(1, I))
  s <- tidy(fit, "S")
  expect_identical(names(s)[1:3], c("row_factor", "col_factor", "estimate"))
  expect_identical(s$estimate, as.vector(fit$S))
  expect_identical(as.character(s$col_factor), rep(c("l1", "l2", "l3"), each = 2))
  g <- tidy(fit, "G")
  expect_identical(g$estimate, as.vector(fit$G))
  expect_identical(g$sample, rep(colnames(X), 3))
  expect_identical(g$sd, as.vector(fit$G_sd))
  expect_equal(as.vector(tapply(g$probability, g$sample, sum)), rep(1, J))
  w <- tidy(fit, "W")
  expect_identical(w$estimate, f$estimate)
  expect_identical(w$sd, f$sd)
  hv <- tidy(fit, "H")
  H <- fit$S %*% t(fit$G)
  expect_equal(hv$estimate, as.vector(H))
  Sv <- fit$S_sd^2; Gv <- t(fit$G_sd^2)
  expect_equal(hv$sd, as.vector(sqrt(fit$S^2 %*% Gv + Sv %*% t(fit$G^2) + Sv %*% Gv)))
  expect_equal(as.vector(tapply(hv$probability, hv$sample, sum)), rep(1, J))
  expect_error(tidy(fit, matrix = "Q"), class = "bnmf_error_input")

  set.seed(4)
  gb <- quiet(bnmf(X, rank = c(2, 2), method = "gibbs", iter = 60, keep = "draws"))
  f <- tidy(gb, "F")
  expect_identical(f$sd, as.vector(gb$F_sd))
  q <- apply(gb$draws[[1]]$F, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
  expect_equal(f$lower, q[1, ])
  expect_equal(f$upper, q[2, ])
  expect_equal(f$probability, as.vector(gb$row_prob))
})

test_that("tidy() of a Poisson VB fit: the exact quantiles of q's Gammas", {
  set.seed(5)
  fit <- quiet(bnmf(X, rank = 2, method = "vb", likelihood = "poisson", iter = 60))
  td <- tidy(fit)
  expect_identical(td$estimate, as.vector(fit$W))
  expect_identical(td$sd, as.vector(fit$W_sd))
  expect_equal(td$lower, as.vector(qgamma(0.025, fit$q$shape_W, fit$q$rate_W)))
  expect_equal(td$upper, as.vector(qgamma(0.975, fit$q$shape_W, fit$q$rate_W)))
  th <- tidy(fit, "H")
  expect_equal(th$lower, as.vector(qgamma(0.025, fit$q$shape_H, fit$q$rate_H)))
  expect_equal(as.vector(tapply(th$probability, th$sample, sum)), rep(1, J))
})

test_that("tidy() of a Poisson Gibbs fit with draws of several chains: chains aligned", {
  set.seed(4)
  fit <- quiet(bnmf(X, rank = 2, method = "gibbs", likelihood = "poisson", iter = 60,
                    keep = "draws", chains = 2))
  # each chain's draws with its factors in the pooled fit's order
  al <- function(what, c) {
    p <- fit$alignment[[c]]
    d <- fit$draws[[c]][[paste0(what, "_draws")]]
    idx <- if (what == "W") matrix(seq_len(I * 2), I, 2)[, p] else matrix(seq_len(2 * J), 2, J)[p, ]
    d[as.vector(idx), , drop = FALSE]
  }
  dW <- cbind(al("W", 1), al("W", 2))
  dH <- cbind(al("H", 1), al("H", 2))
  # the pooled posterior means are the means of the aligned draws
  expect_equal(rowMeans(dW), as.vector(fit$W))
  expect_equal(rowMeans(dH), as.vector(fit$H))
  td <- tidy(fit)
  expect_identical(td$sd, as.vector(fit$W_sd))
  q <- apply(dW, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
  expect_equal(td$lower, q[1, ])
  expect_equal(td$upper, q[2, ])
  th <- tidy(fit, "H")
  q <- apply(dH, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
  expect_equal(th$upper, q[2, ])
  expect_equal(as.vector(tapply(th$probability, th$sample, sum)), rep(1, J))
  expect_identical(membership(fit)$probability,
                   as.vector(tapply(th$probability, factor(th$sample, colnames(X)), max)))
})

test_that("the kept draws of a tri-factorisation, chains matched, average to its means", {
  set.seed(5)
  fit <- quiet(bnmf(X, rank = c(2, 2), method = "gibbs", iter = 60, keep = "draws", chains = 2))
  for (m in c("F", "S", "G")) {
    d <- bnmf:::gibbs_draws_of(fit, m)
    expect_equal(rowMeans(d), as.vector(fit[[m]]), info = m)
    td <- tidy(fit, m)
    q <- apply(d, 1, quantile, probs = c(0.025, 0.975), names = FALSE)
    expect_equal(td$lower, q[1, ], info = m)
  }
  hv <- tidy(fit, "H")
  S <- bnmf:::gibbs_draws_of(fit, "S")
  G <- bnmf:::gibbs_draws_of(fit, "G")
  D <- vapply(seq_len(ncol(S)), function(t) {
    as.vector(matrix(S[, t], 2, 2) %*% t(matrix(G[, t], J, 2)))
  }, numeric(2 * J))
  expect_equal(hv$sd, sqrt(pmax(rowMeans(D^2) - rowMeans(D)^2, 0)))
  expect_equal(hv$upper, apply(D, 1, quantile, probs = 0.975, names = FALSE))
})

test_that("as.data.frame() binds the rows of W and H", {
  set.seed(11)
  d <- as.data.frame(vb)
  expect_identical(nrow(d), I * 2L + 2L * J)
  expect_identical(d$matrix, rep(c("W", "H"), c(I * 2L, 2L * J)))
  expect_identical(d$estimate, c(as.vector(vb$W), as.vector(vb$H)))
  expect_true(all(is.na(d$sample[d$matrix == "W"])) && all(is.na(d$feature[d$matrix == "H"])))
  # W's and H's probabilities from the same draws of q
  set.seed(11)
  pf <- bnmf:::posterior_factorisations(vb)
  expect_equal(d$probability[d$matrix == "H"], as.vector(bnmf:::cluster_probs(pf, 2, J)))
  expect_equal(d$prob_top[d$matrix == "W"],
               as.vector(bnmf:::top_probs(pf, 10, identity, I, 2)))
  expect_identical(d$sd[d$matrix == "H"], tidy(vb, "H")$sd)
  expect_error(as.data.frame(vb, stringsAsFactors = TRUE), class = "bnmf_error_input")
})

test_that("glance() is one row with the fit's own numbers", {
  gl <- glance(vb)
  expect_identical(nrow(gl), 1L)
  expect_identical(gl$method, "vb")
  expect_identical(gl$model, "nmf")
  expect_identical(gl$rank, 2L)
  expect_true(is.na(gl$rank_L))
  expect_identical(c(gl$n_features, gl$n_samples), c(I, J))
  expect_equal(gl$logLik, as.numeric(logLik(vb)))
  expect_equal(gl$AIC, AIC(vb))
  expect_equal(gl$BIC, BIC(vb))
  expect_equal(gl$sigma, sigma(vb))
  s <- summary(vb)
  expect_equal(gl$rmse, s$rmse)
  expect_equal(gl$r_squared, s$r_squared)
  expect_equal(gl$elbo, tail(elbo(vb), 1))
  expect_equal(gl$iterations, vb$iterations[vb$best])
  gg <- glance(gibbs)
  expect_equal(gg$logLik, as.numeric(logLik(gibbs)))
  expect_identical(gg$chains, 2L)
  expect_equal(gg$draws, gibbs$n_draws)
  expect_true(is.na(gg$elbo))
  # NP has no likelihood and no noise: NA, not an error
  set.seed(6)
  np <- quiet(bnmf(X, rank = 2, method = "np", iter = 20))
  gn <- glance(np)
  expect_true(is.na(gn$logLik) && is.na(gn$AIC) && is.na(gn$sigma))
  expect_false(is.na(gn$rmse))
  # rows of different models bind
  set.seed(6)
  nt <- quiet(bnmf(X, rank = c(2, 3), method = "icm", iter = 20))
  both <- rbind(glance(vb), glance(nt))
  expect_identical(both$rank_L, c(NA, 3L))
  expect_equal(both$logLik[2], as.numeric(logLik(nt)))
  expect_equal(both$rmse[2], summary(nt)$rmse)
  # RRT: its residuals are those of augment(), X minus the mean over its
  # components
  set.seed(6)
  rr <- quiet(bnmf(X, rank = 2, method = "rrt", iter = 3,
                   control = rrt_control(max_failures = 5, solver_iter = 50)))
  expect_equal(glance(rr)$rmse, sqrt(mean(augment(rr)$.resid^2)))
  expect_equal(glance(rr)$elbo, rr$elbo)
})

test_that("augment() gives every entry with the fitted values and residuals", {
  Xm <- X
  Xm[2, 3] <- NA
  Xm[5, 1] <- NA
  set.seed(7)
  fit <- quiet(bnmf(Xm, rank = 2, method = "vb", iter = 60))
  a <- augment(fit)
  expect_identical(nrow(a), I * J)
  expect_identical(names(a), c("feature", "sample", "value", ".fitted", ".resid", ".se.fit"))
  expect_identical(a$feature, rep(rownames(X), J))
  expect_identical(a$sample, rep(colnames(X), each = I))
  expect_equal(a$value, as.vector(Xm))
  expect_true(is.na(a$value[a$feature == "g2" & a$sample == "s3"]))
  expect_identical(sum(is.na(a$value)), 2L)
  expect_equal(a$.fitted, as.vector(fitted(fit)))
  expect_equal(a$.resid, as.vector(Xm - fitted(fit)))
  expect_identical(is.na(a$.resid), is.na(a$value))
  expect_equal(a$.se.fit, as.vector(predict(fit, se.fit = TRUE)$se.fit))
  # `data`: the complete data give the residuals of the missing entries
  b <- augment(fit, data = X)
  expect_equal(b$value, as.vector(X))
  expect_equal(b$.resid, as.vector(X - fitted(fit)))
  expect_error(augment(fit, data = X[, 1:3]), class = "bnmf_error_input")
  # point estimates have no .se.fit
  set.seed(7)
  icm <- quiet(bnmf(X, rank = 2, method = "icm", iter = 30))
  ai <- augment(icm)
  expect_false(".se.fit" %in% names(ai))
  expect_equal(ai$.fitted, as.vector(fitted(icm)))
})

test_that("augment() of a sparse fit: stored entries as fitted(), refused above the dense limit", {
  Xs <- conformance_data(sparse = TRUE)
  set.seed(8)
  fit <- quiet(bnmf(Xs, rank = 2, method = "gibbs", iter = 60))
  a <- augment(fit)
  f <- fitted(fit)
  pos <- (f@i + 1) + (rep(seq_len(ncol(f)), diff(f@p)) - 1) * nrow(f)
  expect_equal(a$.fitted[pos], f@x)
  expect_equal(a$.fitted, as.vector(predict(fit)))
  expect_equal(a$value, as.vector(as.matrix(Xs)))
  expect_true(all(is.na(a$.se.fit[-pos])))
  expect_false(anyNA(a$.se.fit[pos]))
  withr::with_options(list(bnmf.max_dense = 50), {
    expect_error(augment(fit), class = "bnmf_error_dense")
    expect_s3_class(tidy(fit), "data.frame")
    expect_s3_class(glance(fit), "data.frame")
  })
  withr::with_options(list(bnmf.max_dense = 50), {
    expect_error(augment(vb), class = "bnmf_error_dense")
  })
})

test_that("unknown arguments are refused", {
  expect_error(tidy(vb, matrx = "H"), class = "bnmf_error_input", regexp = "matrix")
  expect_error(tidy(vb, "H", 10, 3), class = "bnmf_error_input")
  expect_error(glance(vb, digits = 3), class = "bnmf_error_input")
  expect_error(augment(vb, newdata = X), class = "bnmf_error_input")
  expect_error(tidy(vb, matrix = "F"), class = "bnmf_error_input")
  expect_error(tidy(vb, n_top = I + 1), class = "bnmf_error_input")
  expect_error(tidy(vb, n_top = 0), class = "bnmf_error_input")
  expect_equal(sum(tidy(vb, n_top = 3)$prob_top), 2 * 3)
})

test_that("tidy() and glance() of a rank selection", {
  set.seed(9)
  sel <- quiet(select_rank(X, ranks = 1:3, criterion = "bic"))
  td <- tidy(sel)
  expect_identical(td$rank, 1:3)
  expect_identical(td$bic, sel$table$bic)
  expect_identical(td$chosen, td$rank == best(sel))
  gl <- glance(sel)
  expect_identical(nrow(gl), 1L)
  expect_identical(gl$criterion, "bic")
  expect_identical(gl$rank, as.integer(best(sel)))
  expect_equal(gl$value, sel$table$bic[sel$table$rank == best(sel)])
  expect_identical(c(gl$rank_min, gl$rank_max, gl$n_ranks), c(1L, 3L, 3L))
  expect_error(tidy(sel, digits = 1), class = "bnmf_error_input")
  expect_error(glance(sel, 1), class = "bnmf_error_input")

  set.seed(9)
  cv <- quiet(select_rank(X, ranks = list(c(1, 1), c(2, 2)), criterion = "cv", method = "np",
                          folds = 2))
  tc <- tidy(cv)
  expect_identical(tc$chosen, tc$K == best(cv)[["K"]] & tc$L == best(cv)[["L"]])
  gc <- glance(cv)
  expect_identical(c(gc$rank, gc$rank_L), unname(as.integer(best(cv))))
  expect_equal(gc$value, tc$mse[tc$chosen])
  expect_identical(c(gc$rank_L_min, gc$rank_L_max), c(1L, 2L))
})

test_that("every fit of every model and method is tidied and glanced, or refused with a class", {
  for (kind in c("dense", "sparse")) {
    Xk <- conformance_data(sparse = kind == "sparse")
    for (spec in conformance_fits()) {
      set.seed(3)
      fit <- quiet(do.call(bnmf, c(list(Xk), spec$args)))
      what <- paste(kind, spec$model, spec$method)
      mats <- if (spec$model == "nmtf") c("F", "S", "G", "W", "H") else c("W", "H")
      for (m in mats) {
        td <- tryCatch(tidy(fit, matrix = m), bnmf_error = function(e) e)
        if (inherits(td, "bnmf_error")) next
        M <- if (m %in% c("W", "H")) bnmf:::wh_view(fit)[[m]] else fit[[m]]
        expect_equal(td$estimate, as.vector(M), info = paste(what, m))
        ok <- is.na(td$sd) | td$sd >= 0
        expect_true(all(ok), info = paste(what, m))
        band <- !is.na(td$lower)
        expect_true(all(td$lower[band] <= td$upper[band] + 1e-12), info = paste(what, m))
        if (m == "H") {
          expect_equal(as.vector(tapply(td$probability, td$sample, sum)), rep(1, ncol(Xk)),
                       info = what)
        }
        if (m == "W") {
          expect_equal(sum(td$prob_top), 10 * ncol(M), info = what)
        }
      }
      gl <- tryCatch(glance(fit), bnmf_error = function(e) e)
      if (!inherits(gl, "bnmf_error")) {
        expect_identical(nrow(gl), 1L, info = what)
        ll <- tryCatch(as.numeric(logLik(fit)), bnmf_error_unsupported = function(e) NA_real_)
        expect_equal(gl$logLik, ll, info = what)
      }
      au <- tryCatch(augment(fit), bnmf_error = function(e) e)
      if (!inherits(au, "bnmf_error")) {
        expect_identical(nrow(au), length(Xk), info = what)
        expect_equal(au$.resid, au$value - au$.fitted, info = what)
      }
    }
  }
})
