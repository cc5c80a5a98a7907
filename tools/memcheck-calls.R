# Calls every registered .Call routine of bnmf: the fuzzing cases of
# tests/testthat/helper-fuzz.R (bad arguments, in this process) and a set of
# small but complete fits that go through every code path of the C sweep
# (Gibbs, ICM, VB, ARD, NP and particles; dense, sparse; complete, latent and
# masked missing entries;
# kept draws; predict, update). Used by tools/check-valgrind.sh and
# tools/check-sanitizers.sh. Run from the package root:
#   Rscript tools/memcheck-calls.R
suppressPackageStartupMessages(library(bnmf))
source(file.path("tests", "testthat", "helper-fuzz.R"))

fz <- fuzz_run()
cat(sprintf("fuzzing: %d calls of %d routines (%d errors, %d values)\n", nrow(fz),
            length(unique(fz$routine)), sum(fz$outcome == "error"),
            sum(fz$outcome == "value")))
stopifnot(setequal(unique(fz$routine), names(getDLLRegisteredRoutines("bnmf")$.Call)))

set.seed(1)
I <- 30; J <- 20; K <- 3
X <- matrix(rexp(I * K), I, K) %*% matrix(rexp(K * J), K, J) +
  matrix(rnorm(I * J, sd = 0.1), I, J)
Xm <- X
Xm[sample(length(X), 40)] <- NA
Xs <- Matrix::rsparsematrix(I, J, 0.3, rand.x = function(n) rexp(n))
Xs@x[1:5] <- NA
for (method in c("gibbs", "icm")) {
  for (data in list(X, Xm, Xs)) {
    fit <- bnmf(data, rank = K, method = method, iter = 60, chains = 2,
                keep = if (method == "gibbs") "draws" else "summary", progress = FALSE)
    invisible(list(fitted(fit), predict(fit), summary(fit), logLik(fit)))
    fit <- update(fit, iter = 20, progress = FALSE)
    if (!inherits(data, "Matrix")) {
      invisible(predict(fit, newdata = data[, 1:4], iter = 20))
    }
  }
}
invisible(bnmf(X, rank = 2, method = "icm", prior = exponential(0), progress = FALSE))
# Gibbs's moments of W H by batches of draws (src/nmf_moments.c, wh_batch):
# 300 x 70 with K = 2 holds four draws a batch; partial tiles (256 + 44 rows,
# 64 + 6 columns) and a partial batch at the end of each call.
Xb <- pmax(matrix(rexp(300 * 2), 300, 2) %*% matrix(rexp(2 * 70), 2, 70) +
             matrix(rnorm(300 * 70, sd = 0.1), 300, 70), 0)
fit <- bnmf(Xb, rank = 2, method = "gibbs", iter = 17, burnin = 10, wh_thin = 1,
            progress = FALSE)
invisible(update(fit, iter = 6, progress = FALSE))
# Gibbs by blocks of samples (src/nmf_blocks.c): dense and sparse, kept
# draws, the moments of W H in the blocks.
Xs0 <- Xs
Xs0@x[is.na(Xs0@x)] <- 1
for (data in list(X, Xs0)) {
  fit <- bnmf(data, rank = K, method = "gibbs", iter = 20, burnin = 10, wh_thin = 1,
              blocks = 3, keep = "draws", progress = FALSE)
  invisible(list(fitted(fit), summary(fit), update(fit, iter = 4, progress = FALSE)))
}
# From K = 16 on, ICM and VB update masked rows with few missing entries
# without their own Gram matrix (an odd K and odd numbers of missing entries:
# the kernel pads them to pairs); dense and sparse, with ARD.
Xb <- abs(matrix(rexp(I * 17), I, 17) %*% matrix(rexp(17 * J), 17, J) +
            matrix(rnorm(I * J, sd = 0.1), I, J))
Xb[sample(length(Xb), 61)] <- NA
Xb[1, 1:15] <- NA
Xbs <- Matrix::Matrix(Xb * (Xb > 0.2 * mean(Xb, na.rm = TRUE)), sparse = TRUE)
for (data in list(Xb, Xbs)) {
  for (method in c("icm", "vb")) {
    for (prior in list(exponential(), ard())) {
      invisible(bnmf(data, rank = 17, method = method, prior = prior, iter = 15,
                     progress = FALSE))
    }
  }
  # VB with the missing entries filled in (row 1 summed over its observed
  # entries), with ARD, and continued
  fit <- bnmf(data, rank = 17, method = "vb", prior = ard(), iter = 15, progress = FALSE,
              control = vb_control("impute"))
  invisible(update(fit, iter = 5, progress = FALSE))
}
# NP's masked rows without their own Gram matrix (bnmf_mult_row_masked): at
# K = 17 (four-value sums and one left over) and K = 45 (the loop for K
# above 43), with rows and a column that miss most of their entries (summed
# over the observed ones); the KL updates' denominators (NMF and NMTF) on the
# same X
local({
  Xn <- matrix(rexp(60 * 45), 60, 45) %*% matrix(rexp(45 * 50), 45, 50)
  Xn[sample(length(Xn), 300)] <- NA
  Xn[1:2, 1:40] <- NA
  Xn[5:50, 3] <- NA
  for (K in c(17, 45)) {
    invisible(bnmf(Xn, rank = K, method = "np", iter = 10, progress = FALSE))
    invisible(bnmf(Xn, rank = K, method = "np", loss = "kl", iter = 10, progress = FALSE))
  }
  # NMTF's KL denominators (bnmf_kl_scale, bnmf_obs_sums) on the same X
  invisible(bnmf(Xn, rank = c(6, 5), method = "np", loss = "kl", iter = 10, progress = FALSE))
})
# The same on two OpenMP threads (options(bnmf.threads)): each thread its
# own rows' scratch; ICM (masked), VB (masked and imputing) and NP
local({
  op <- options(bnmf.threads = 2)
  on.exit(options(op))
  for (data in list(Xb, Xbs)) {
    invisible(bnmf(data, rank = 17, method = "icm", iter = 15, progress = FALSE,
                   control = icm_control("mask")))
    invisible(bnmf(data, rank = 17, method = "vb", iter = 15, progress = FALSE))
    invisible(bnmf(data, rank = 5, method = "vb", iter = 15, progress = FALSE))
    invisible(bnmf(data, rank = 5, method = "vb", iter = 15, progress = FALSE,
                   control = vb_control("impute")))
    invisible(bnmf(abs(data), rank = 5, method = "np", iter = 15, progress = FALSE,
                   control = np_control("mask")))
    # NP with the missing entries filled in (EM), continued
    fit <- bnmf(abs(data), rank = 5, method = "np", iter = 15, progress = FALSE,
                control = np_control("impute"))
    invisible(update(fit, iter = 5, progress = FALSE))
  }
})
invisible(.Call(bnmf:::C_cond_row_sub, tcrossprod(matrix(rexp(51), 3)) + diag(3),
                matrix(runif(15), 3), matrix(runif(15), 3), rexp(3), rexp(3), rexp(3),
                c(2, 2)))
# Variational Bayes, ARD (Gibbs, VB, ICM) and the multiplicative updates
Xp <- abs(X)
Xpm <- abs(Xm)
Xps <- Xs
Xps@x <- abs(Xps@x)
for (data in list(Xp, Xpm, Xps)) {
  for (prior in list(exponential(), ard())) {
    fit <- bnmf(data, rank = K, method = "vb", prior = prior, iter = 30, progress = FALSE)
    invisible(list(elbo(fit), predict(fit, se.fit = TRUE), summary(fit)))
    fit <- update(fit, iter = 10, progress = FALSE)
    if (!inherits(data, "Matrix")) {
      invisible(predict(fit, newdata = data[, 1:4], se.fit = TRUE))
    }
  }
  invisible(bnmf(data, rank = K, method = "gibbs", prior = ard(), iter = 40, chains = 2,
                 keep = "draws", progress = FALSE))
  invisible(bnmf(data, rank = K, method = "icm", prior = ard(), iter = 40, progress = FALSE))
  for (loss in c("euclidean", "kl")) {
    fit <- bnmf(data, rank = K, method = "np", loss = loss, iter = 30, progress = FALSE)
    fit <- update(fit, iter = 10, progress = FALSE)
    if (!inherits(data, "Matrix")) invisible(predict(fit, newdata = data[, 1:4]))
  }
}
# A tall sparse X whose sparse products, moments of W H (F S G') and KL
# ratio take the rows in several blocks (bnmf_sparse_visit: 20,000 rows at
# K = 3 make 4), with stored NAs and an empty column.
Xt <- Matrix::rsparsematrix(20000, 12, 0.05, rand.x = function(n) rexp(n) + 0.1)
Xt[, 2] <- 0
Xt <- Matrix::drop0(Xt)
Xt@x[c(3, 500)] <- NA
invisible(bnmf(Xt, rank = 3, iter = 4, burnin = 1, progress = FALSE))
invisible(bnmf(Xt, rank = 3, method = "np", loss = "kl", iter = 3, tol = 0, progress = FALSE))
invisible(bnmf(Xt, rank = c(3, 2), iter = 4, burnin = 1, progress = FALSE))
invisible(bnmf(Xt, rank = c(3, 2), method = "np", loss = "kl", iter = 3, tol = 0,
               progress = FALSE))
# Stein-weighted particles (the Stein kernel and the simplex QP)
pf <- bnmf(Xp, rank = 2, method = "particles", particles = 6, progress = FALSE)
invisible(list(weights(pf), fitted(pf), summary(pf), stein_discrepancy(pf)))
# Chib's marginal likelihood: both block orders (I > J and I < J), missing
# entries, sparse data, ARD, the plain and the scale-averaged estimator
for (data in list(Xpm, t(Xpm), Xps)) {
  for (prior in list(exponential(1), ard())) {
    fit <- bnmf(data, rank = 2, prior = prior, iter = 40, progress = FALSE)
    invisible(marginal_likelihood(fit, samples = 60, burnin = 5, batches = 5))
  }
}
invisible(marginal_likelihood(fit, samples = 60, burnin = 5, batches = 5, orbit = FALSE,
                              point = "map"))
invisible(rtnorm(1000, mean = c(-50, 0, 3), sd = c(1, 2), lower = c(0, -Inf, 1),
                 upper = c(Inf, 5, 1.1)))
invisible(bnmf:::tn_moments(c(-100, -1, 0, 5), 1))
invisible(bnmf:::tn_logdens(c(0, 1, 10), c(-100, 1), 2))
# Near-exact data (the entry-wise noise sum: dense, missing, sparse; VB's
# expected one; Chib's scale integral beyond resolution) and a tiny rate
# (the scale move from logs)
set.seed(5)
Xe <- (matrix(rexp(16), 8, 2) %*% matrix(rexp(12), 2, 6) + 1e-9 * rnorm(48)) * 1e100
Xe[c(4, 20)] <- NA
for (data in list(Xe, Matrix::Matrix(pmax(Xe, 0) * (col(Xe) > 2), sparse = TRUE))) {
  fit <- bnmf(data, rank = 2, method = "icm", noise = gamma_prior(1, 1), iter = 3000,
              tol = 1e-14, progress = FALSE)
  invisible(bnmf(data, rank = 2, method = "vb", noise = gamma_prior(1, 1), iter = 60,
                 progress = FALSE))
  invisible(bnmf(data, rank = 2, noise = gamma_prior(1, 1), iter = 10,
                 init = list(W = fit$W, H = fit$H), progress = FALSE))
}
invisible(marginal_likelihood(bnmf(Xe[, 1:4], rank = 2, method = "vb", iter = 200,
                                   noise = gamma_prior(1, 1), progress = FALSE),
                              samples = 30, burnin = 5, batches = 5))
invisible(bnmf(Xe / 1e100, rank = 2, prior = exponential(1e-140), iter = 20,
               progress = FALSE))
# The tri-factorisation: every rule on dense, missing and sparse data, ARD,
# both NP losses, kept draws, update
for (data in list(Xp, Xpm, Xps)) {
  for (method in c("gibbs", "icm", "vb", "np")) {
    for (prior in list(exponential(), ard())) {
      if (method == "np" && identical(prior$type, "ard")) next
      args <- list(data, rank = c(3, 2), method = method, iter = 30, chains = 2,
                   keep = if (method == "gibbs") "draws" else "summary", progress = FALSE)
      if (method != "np") args$prior <- prior
      fit <- do.call(bnmf, args)
      invisible(list(fitted(fit), summary(fit), update(fit, iter = 10, progress = FALSE)))
    }
  }
  invisible(bnmf(data, rank = c(2, 3), method = "np", loss = "kl", iter = 30,
                 init = "random", progress = FALSE))
}
# The Poisson likelihood: VB, Gibbs (summary and draws) and SSVI (every
# sparsity) on dense, incomplete and sparse counts; the internal hooks
set.seed(6)
Xc <- matrix(rpois(I * J, 2), I, J)
Xcm <- Xc
Xcm[sample(length(Xc), 30)] <- NA
Xcs <- Matrix::Matrix(Xc * (matrix(runif(I * J), I, J) < 0.4), sparse = TRUE)
Xcs@x[1:3] <- NA
for (data in list(Xc, Xcm, Xcs)) {
  for (m in c("vb", "gibbs")) {
    fit <- bnmf(data, rank = 2, likelihood = "poisson", method = m, iter = 30, chains = 2,
                keep = if (m == "gibbs") "draws" else "summary", progress = FALSE)
    invisible(list(fitted(fit), summary(fit), logLik(fit)))
  }
  for (sp in c("none", "coef", "both")) {
    invisible(bnmf(data, rank = 3, method = "ssvi", sparsity = sp, iter = 8, progress = FALSE,
                   control = ssvi_control(mask_sweeps = 3, mask_samples = 2, final = 3)))
  }
}
# Poisson Gibbs by blocks of samples (gamma priors and ARD, kept draws, update)
for (data in list(Xcm, Xcs)) {
  for (pr in list(gamma_prior(1, 1), ard())) {
    fit <- bnmf(data, rank = 2, likelihood = "poisson", method = "gibbs", iter = 20, blocks = 3,
                prior = pr, keep = "draws", progress = FALSE)
    invisible(list(fitted(fit), summary(fit), update(fit, iter = 4)))
  }
}
invisible(bnmf:::pois_mask_sweeps(Xcm[1:5, 1:4], matrix(1, 5, 2), matrix(1, 2, 4),
                                  matrix(1L, 5, 2), matrix(0L, 2, 4), c(0, 1), c(1, 0.5), 3))
# The BLAS's threads (src/blas_threads.c): read, set to what it is, bad n.
th <- bnmf:::blas_threads()
invisible(bnmf:::blas_threads(if (is.na(th)) 1L else as.integer(th)))
invisible(try(.Call(bnmf:::C_blas_threads, 1.5), silent = TRUE))
cat("memcheck-calls: done\n")
