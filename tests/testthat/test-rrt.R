# RRT + online NVI (method "rrt"): the oblique manifold, the configuration
# space, the Laurberg toy of Masood and Doshi-Velez (section 5.1), input
# errors and the fit's methods.

rrt_angle <- function(Q1, Q2) {
  mean(acos(pmin(1, colSums(Q1 * Q2)))) * 180 / pi
}

test_that("the retraction keeps Q on the oblique manifold and the projection is tangent", {
  withr::local_seed(11)
  for (R in c(2L, 3L, 5L)) {
    for (rep in 1:20) {
      Q <- bnmf:::oblique_sample(R)
      expect_equal(colSums(Q^2), rep(1, R), tolerance = 1e-12)
      Z <- matrix(rnorm(R * R), R, R)
      P <- bnmf:::oblique_project(Q, Z)
      # tangent: diag(Q'P) = 0, and projecting twice changes nothing
      expect_equal(colSums(Q * P), rep(0, R), tolerance = 1e-12)
      expect_equal(bnmf:::oblique_project(Q, P), P, tolerance = 1e-12)
      Qn <- bnmf:::oblique_retract(Q, 0.1 * P)
      expect_equal(colSums(Qn^2), rep(1, R), tolerance = 1e-12)
      expect_gt(abs(det(Qn)), 1e-8)
      expect_true(bnmf:::oblique_invertible(Qn))
      # to first order the retraction is Q + Z: |R_Q(tZ) - Q - tZ| = O(t^2)
      e1 <- sqrt(sum((bnmf:::oblique_retract(Q, 1e-3 * P) - Q - 1e-3 * P)^2))
      e2 <- sqrt(sum((bnmf:::oblique_retract(Q, 1e-4 * P) - Q - 1e-4 * P)^2))
      expect_lt(e2, e1 / 50)
    }
  }
  expect_false(bnmf:::oblique_invertible(matrix(c(1, 0, 1, 0), 2, 2)))
})

test_that("a step between two nodes moves towards the target", {
  withr::local_seed(12)
  for (rep in 1:30) {
    R <- 3L
    Q1 <- bnmf:::oblique_sample(R)
    Q2 <- bnmf:::oblique_sample(R)
    Q <- Q1
    for (k in 1:5) {
      Qn <- bnmf:::oblique_step(Q, Q2, 0.01)
      expect_equal(colSums(Qn^2), rep(1, R), tolerance = 1e-12)
      expect_lt(rrt_angle(Qn, Q2), rrt_angle(Q, Q2))
      expect_lt(sqrt(sum((Qn - Q2)^2)), sqrt(sum((Q - Q2)^2)))
      expect_equal(sqrt(sum((Qn - Q)^2)), 0.01, tolerance = 1e-3)
      Q <- Qn
    }
    # steps that grow by 10% reach the target (the last step lands on it)
    s <- 0.01
    for (k in 1:200) {
      Q <- bnmf:::oblique_step(Q, Q2, s)
      s <- 1.1 * s
      if (identical(Q, Q2)) break
    }
    expect_identical(Q, Q2)
  }
})

test_that("floor() products are non-negative and reconstruct an exact NMF", {
  withr::local_seed(13)
  # X with non-negative singular vectors (positive rank-1 blocks): Q = I
  # gives back X exactly.
  blocks <- list(c(1, 2, 3) %o% c(1, 1, 2, 1), c(2, 1) %o% c(3, 1, 1), c(1, 1, 1) %o% c(2, 5))
  X <- as.matrix(Matrix::bdiag(blocks))
  sp <- bnmf:::rrt_space(X, 3)
  f <- bnmf:::rrt_factors(diag(3), sp)
  expect_equal(f$W %*% f$H, X, tolerance = 1e-10)
  # A random exact NMF: its node Q = A'W (normalised) gives X again, and
  # every Q gives non-negative factors.
  W0 <- matrix(rexp(40 * 3), 40, 3)
  H0 <- matrix(rexp(3 * 25), 3, 25)
  X <- W0 %*% H0
  sp <- bnmf:::rrt_space(X, 3)
  Q <- bnmf:::rrt_node(W0, sp)
  expect_equal(colSums(Q^2), rep(1, 3), tolerance = 1e-12)
  f <- bnmf:::rrt_factors(Q, sp)
  expect_equal(f$W %*% f$H, X, tolerance = 1e-9)
  expect_equal(f$W / rep(sqrt(colSums(f$W^2)), each = 40),
               W0 / rep(sqrt(colSums(W0^2)), each = 40), tolerance = 1e-9)
  for (rep in 1:20) {
    f <- bnmf:::rrt_factors(bnmf:::oblique_sample(3), sp)
    expect_gte(min(f$W), 0)
    expect_gte(min(f$H), 0)
  }
  # the prior's mode on the scale orbit: W H unchanged, column sums of W
  # equal to row sums of H
  th <- bnmf:::prior_scale(c(W0, H0), 40, 25, 3)
  W1 <- matrix(th[1:120], 40, 3)
  H1 <- matrix(th[-(1:120)], 3, 25)
  expect_equal(W1 %*% H1, X, tolerance = 1e-12)
  expect_equal(colSums(W1), rowSums(H1), tolerance = 1e-12)
})

test_that("Laurberg toy: RRT + ONVI accepts components in both modes, NVI and HMC + ONVI stay in one", {
  skip_on_cran()
  withr::local_seed(2)
  toy <- laurberg_toy(60, noise = 0.01)
  s1 <- toy$solutions[[1]]
  s2 <- toy$solutions[[2]]
  # two exact solutions up to the noise, far apart
  expect_lt(max(abs(toy$X - s1$W %*% s1$H)), 0.011)
  expect_lt(max(abs(toy$X - s2$W %*% s2$H)), 0.011)
  expect_gt(wad(s1, s2), 20)
  near <- function(fs) {
    d <- vapply(fs, function(f) c(wad(f, s1), wad(f, s2)), numeric(2))
    c(s1 = sum(d[1, ] < d[2, ]), s2 = sum(d[2, ] < d[1, ]))
  }
  ctl <- function(search) rrt_control(search = search, epsilon = 0.3, max_failures = 500)
  withr::local_seed(3)
  rrt <- bnmf(toy$X, rank = 3, method = "rrt", likelihood = "uniform", init = s1, iter = 600,
              control = ctl("rrt"))
  n_rrt <- near(rrt$accepted)
  expect_gte(n_rrt[["s1"]], 1)
  expect_gte(n_rrt[["s2"]], 1)
  # and the final mixture holds components in both modes (an accepted
  # component stays unless removing it costs less than the absolute
  # criterion)
  n_kept <- near(rrt$components)
  expect_gte(n_kept[["s1"]], 1)
  expect_gte(n_kept[["s2"]], 1)
  # The persistence: at this size the accepted components of every search
  # are spread by more than 0.01 degrees, but only those of the RRT need more
  # than one ball of 10 degrees (the full-size toy is in bench/rrt-toy.R).
  cov_rrt <- covering_number(rrt, epsilon = c(0.01, 10), use = "draws")$covering
  expect_gt(cov_rrt[1], 1)
  expect_gt(cov_rrt[2], 1)
  nvi <- bnmf(toy$X, rank = 3, method = "rrt", likelihood = "uniform", init = s1, iter = 20,
              control = ctl("nvi10"))
  expect_identical(near(nvi$components)[["s2"]], 0L)
  hmc <- bnmf(toy$X, rank = 3, method = "rrt", likelihood = "uniform", init = s1, iter = 200,
              control = ctl("hmc"))
  expect_identical(near(hmc$accepted)[["s2"]], 0L)
  expect_identical(covering_number(hmc, epsilon = 10, use = "draws")$covering, 1L)
  expect_identical(covering_number(nvi, epsilon = 10)$covering, 1L)
  # every component of the baselines within a few degrees of the start
  expect_lt(max(vapply(c(nvi$components, hmc$accepted), wad, numeric(1), b = s1)), 5)
})

test_that("the HMC baseline's draws are those of a plain reflecting leapfrog sampler", {
  # A plain-R sampler written for the test: unit mass, a half step of the
  # gradient of the log joint, L position steps (mirrored at 0, momentum
  # flipped) each followed by a full (last: half) gradient step, stopped
  # when the log joint leaves its support; Metropolis on the Hamiltonian;
  # log step += (a - 0.8) / sqrt(t) during warm-up.
  ref_draws <- function(start, target, L, warmup, iter) {
    q <- c(start$W, start$H)
    lq <- target$logp(q)
    gq <- target$grad(q)
    eps <- 0.1 / sqrt(mean(gq^2) + 1)
    out <- vector("list", iter)
    for (t in seq_len(iter)) {
      p0 <- rnorm(length(q))
      p <- p0 + 0.5 * eps * gq
      x <- q
      for (l in seq_len(L)) {
        x <- x + eps * p
        neg <- x < 0
        x[neg] <- -x[neg]
        p[neg] <- -p[neg]
        lx <- target$logp(x)
        if (!is.finite(lx)) break
        gx <- target$grad(x)
        p <- p + (if (l == L) 0.5 else 1) * eps * gx
      }
      a <- if (is.finite(lx)) min(1, exp(lx - lq - sum(p^2) / 2 + sum(p0^2) / 2)) else 0
      if (runif(1) < a) {
        q <- x
        lq <- lx
        gq <- gx
      }
      if (t <= floor(warmup * iter)) eps <- eps * exp((a - 0.8) / sqrt(t))
      out[[t]] <- q
    }
    out
  }
  withr::local_seed(21)
  toy <- laurberg_toy(12, noise = 0.01)
  s1 <- toy$solutions[[1]]
  ctl <- rrt_control(search = "hmc", leapfrog = 7, warmup = 0.3)
  for (lik in c("gaussian", "uniform")) {
    tg <- bnmf:::nvi_target(toy$X, 3, lik, sigma2 = 1e-3, epsilon = 0.3, rate = 0.5)
    withr::local_seed(22)
    ref <- ref_draws(s1, tg, 7, 0.3, 60)
    withr::local_seed(22)
    draw <- bnmf:::hmc_draws(s1, tg, ctl, 60)
    got <- c(draw(25), draw(35)) # in chunks, as onvi_stream() asks
    expect_equal(got, ref, tolerance = 1e-10, label = lik)
    # it moves (not every proposal is rejected) and stays in the support
    expect_gt(length(unique(got)), 10)
    expect_true(all(is.finite(vapply(got, tg$logp, 0))))
  }
})

test_that("Gaussian schedule: the start of smallest squared error is optimised under equation 3 and offered first", {
  withr::local_seed(4)
  I <- 15; J <- 12; R <- 2
  W0 <- matrix(rexp(I * R), I)
  H0 <- matrix(rexp(R * J), R)
  X <- pmax(W0 %*% H0 + matrix(rnorm(I * J, 0, 0.1), I), 0)
  # three starts around the truth; the second fits best
  starts <- lapply(c(0.3, 0.05, 0.2), function(e) {
    list(W = W0 * exp(rnorm(I * R, 0, e)), H = H0 * exp(rnorm(R * J, 0, e)))
  })
  rss <- vapply(starts, function(s) sum((X - s$W %*% s$H)^2), 0)
  expect_identical(which.min(rss), 2L)
  # bnmf() searches on X / s (s the root mean square of X), W and H over
  # sqrt(s), sigma2 over s^2, with the automatic rate 1 / sqrt((I + J)
  # mean(X / s)) there; its ELBO is that of X / s minus n log(s).
  s <- bnmf:::data_scale(X)
  r <- sqrt(s)
  tg <- bnmf:::nvi_target(X / s, R, sigma2 = 0.01 / s^2, rate = 1 / sqrt((I + J) * mean(X / s)))
  starts_s <- lapply(starts, function(st) list(W = st$W / r, H = st$H / r))
  D <- tg$D
  # The one-component ELBO of equation 3 at its optimal variance s = -D / t:
  # D/2 log(4 pi s) + f(mu) + s t / 2.
  one <- function(th) {
    t <- tg$hess_trace(th)
    s <- -D / t
    D / 2 * log(4 * pi * s) + tg$logp(th) + s * t / 2
  }
  o <- bnmf:::rrt_optimise_start(starts_s, tg, 100)
  expect_identical(o$index, 2L)
  mu <- c(o$start$W, o$start$H)
  expect_true(all(mu >= 0))
  expect_equal(o$elbo[2], one(mu), tolerance = 1e-8)
  # A maximum: a tightly converged optimiser written for the test, from the
  # raw start, finds no more than the NVI's absolute stopping criterion
  # (1e-3) above it; the raw start is far below.
  ref <- optim(c(starts_s[[2]]$W, starts_s[[2]]$H), function(x) -one(pmax(x, 0)),
               method = "L-BFGS-B", lower = 0, control = list(factr = 1, pgtol = 0, maxit = 20000))
  expect_identical(ref$convergence, 0L)
  expect_lt(-ref$value - one(mu), 1e-3)
  expect_gt(one(mu) - one(c(starts_s[[2]]$W, starts_s[[2]]$H)), 100)
  # In the search it replaces its start and is the first candidate, offered
  # as it is (the first candidate is always accepted).
  fit <- bnmf(X, rank = R, method = "rrt", init = starts, iter = 5,
              control = rrt_control(sigma2 = 0.01, max_failures = 5))
  expect_identical(fit$stats$optimised, 2L)
  expect_equal(unname(fit$accepted[[1]]$W) / r, o$start$W, tolerance = 1e-8)
  expect_equal(unname(fit$accepted[[1]]$H) / r, o$start$H, tolerance = 1e-8)
  expect_equal(fit$trace$elbo[1] + length(X) * log(s), one(mu), tolerance = 1e-8)
  # optimise_iter = 0: the first start is offered first, at the prior's
  # mode on its scale orbit
  fit0 <- bnmf(X, rank = R, method = "rrt", init = starts, iter = 1,
               control = rrt_control(sigma2 = 0.01, max_failures = 5, optimise_iter = 0))
  expect_null(fit0$stats$optimised)
  p1 <- bnmf:::prior_scale(c(starts[[1]]$W, starts[[1]]$H), I, J, R)
  first <- bnmf:::nvi_rescale(p1, tg)
  expect_equal(unname(c(fit0$accepted[[1]]$W, fit0$accepted[[1]]$H)), first, tolerance = 1e-12)
  expect_error(rrt_control(optimise_iter = -1), class = "bnmf_error_input", regexp = "optimise_iter")
})

test_that("Gaussian: a tree grown from one given exact solution leaves it", {
  skip_on_cran()
  withr::local_seed(2)
  toy <- laurberg_toy(60, noise = 0.01)
  s1 <- toy$solutions[[1]]
  D <- (60 + 60) * 3
  # Near the exact solution the log joint falls by thousands of nats within
  # the paper's first step 0.01: with a fixed first step and the poorest
  # node (the start itself) as the bound, no extension is ever feasible.
  fixed <- function(...) {
    withr::local_seed(3)
    bnmf(toy$X, rank = 3, method = "rrt", init = s1, iter = 100,
         control = rrt_control(max_failures = 100, ...))
  }
  f0 <- fixed(adapt_step = FALSE, slack = 0)
  expect_identical(f0$stats$processed, 1L)
  expect_identical(f0$stats$nodes, 1L)
  # The threshold D / 2 below the start and the adapted first step: the
  # tree grows, every node within the band, none of them the start.
  withr::local_seed(3)
  fit <- bnmf(toy$X, rank = 3, method = "rrt", init = s1, iter = 100,
              control = rrt_control(max_failures = 100))
  st <- fit$stats
  expect_gt(st$nodes, 10)
  expect_gt(st$processed, 10)
  expect_lt(st$nodes, 1 + 100) # the tree never filled: the threshold is the first one
  expect_equal(st$threshold, fit$node_logp[1] - D / 2, tolerance = 1e-12)
  expect_true(all(fit$node_logp >= st$threshold))
  expect_lt(st$first_step, 0.01)
  angle <- bnmf:::node_distances(matrix(fit$nodes[, 1], 3, 3), fit$nodes[, -1, drop = FALSE])$angle
  expect_true(all(angle >= 0.01)) # min_angle: every node a distinct change of basis
  expect_gt(max(angle), 0.05)
  # slack = 0 keeps the paper's threshold (the start's own log joint) and
  # the adapted step alone still moves the tree, to nodes at least as good.
  f1 <- fixed(slack = 0)
  expect_equal(f1$stats$threshold, f1$node_logp[1], tolerance = 1e-12)
  expect_true(all(f1$node_logp >= f1$node_logp[1]))
})

test_that("the automatic prior rate is 1 / sqrt((I + J) mean(X / s)) on X / s", {
  withr::local_seed(5)
  X <- matrix(rexp(30 * 12, 1 / 50), 30)
  s <- sqrt(mean(X^2))
  fit <- bnmf(X, rank = 2, method = "rrt", iter = 3,
              control = rrt_control(starts = 2, max_failures = 2))
  # on X / s, then in the units of X: over sqrt(s)
  expect_equal(fit$prior$rate * sqrt(s), 1 / sqrt((30 + 12) * mean(X / s)), tolerance = 1e-12)
  nvi <- bnmf(X, rank = 2, method = "rrt", iter = 2, control = rrt_control(search = "nvi4"))
  expect_equal(nvi$prior$rate, fit$prior$rate, tolerance = 1e-12)
  # an explicit rate is in the units of X
  f2 <- bnmf(X, rank = 2, method = "rrt", iter = 3, prior = exponential(0.3),
             control = rrt_control(starts = 2, max_failures = 2))
  expect_equal(f2$prior$rate, 0.3, tolerance = 1e-12)
  expect_error(rrt_control(slack = -1), class = "bnmf_error_input", regexp = "slack")
  expect_error(rrt_control(adapt_step = NA), class = "bnmf_error_input", regexp = "adapt_step")
})

test_that("method rrt: input errors are classed and name the argument", {
  X <- leukemia[1:30, 1:10]
  expect_error(bnmf(X, rank = 2, method = "rrt", likelihood = "poisson"),
               class = "bnmf_error_input", regexp = "likelihood")
  expect_error(bnmf(X, rank = 2, method = "rrt", control = hmc_control()),
               class = "bnmf_error_input", regexp = "rrt_control")
  expect_error(bnmf(X, rank = 2, method = "gibbs", control = rrt_control()),
               class = "bnmf_error_input", regexp = "control")
  expect_error(bnmf(X, rank = 2, method = "rrt", likelihood = "uniform",
                    control = rrt_control(search = "gibbs")),
               class = "bnmf_error_input", regexp = "gibbs")
  Xn <- X
  Xn[1, 1] <- NA
  expect_error(bnmf(Xn, rank = 2, method = "rrt"), class = "bnmf_error_input", regexp = "complete")
  expect_error(bnmf(-X, rank = 2, method = "rrt"), class = "bnmf_error_input", regexp = "non-negative")
  expect_error(bnmf(X, rank = 11, method = "rrt"), class = "bnmf_error_input", regexp = "rank")
  expect_error(bnmf(X, rank = 2, method = "rrt", init = list(W = matrix(1, 3, 2), H = 1)),
               class = "bnmf_error_input", regexp = "init")
  expect_error(bnmf(X, rank = 2, method = "rrt", init = "nndsvd"),
               class = "bnmf_error_input", regexp = "init")
  expect_error(bnmf(X, rank = 2, method = "rrt", chains = 2),
               class = "bnmf_error_input", regexp = "chains")
  expect_error(bnmf(X, rank = 2, method = "rrt", prior = ard()),
               class = "bnmf_error_input", regexp = "prior")
  # nothing feasible under the Uniform likelihood: a clear error
  expect_error(bnmf(X, rank = 2, method = "rrt", likelihood = "uniform", iter = 5,
                    control = rrt_control(search = "nvi4", epsilon = 1e-8)),
               class = "bnmf_error_input", regexp = "epsilon")
  expect_error(bnmf(X, rank = 2, method = "rrt", likelihood = "uniform", iter = 5,
                    init = list(W = cbind(1:30, 30:1) / 10, H = matrix(1, 2, 10)),
                    control = rrt_control(epsilon = 1e-8, max_failures = 5)),
               class = "bnmf_error_input", regexp = "accepted no candidate")
  expect_error(rrt_control(search = "mcmc"), class = "bnmf_error_input", regexp = "search")
  expect_error(rrt_control(step = 0), class = "bnmf_error_input", regexp = "step")
  expect_error(rrt_control(sigma2 = -1), class = "bnmf_error_input", regexp = "sigma2")
  expect_error(rrt_control(time_limit = "1"), class = "bnmf_error_input", regexp = "time_limit")
  expect_error(rrt_control(warmup = 1), class = "bnmf_error_input", regexp = "warmup")
})

test_that("method rrt: the fit, its methods and plots", {
  withr::local_seed(14)
  X <- leukemia[1:60, 1:20]
  fit <- bnmf(X, rank = 2, method = "rrt", iter = 40,
              control = rrt_control(starts = 3, temporary = 10, max_failures = 50))
  expect_s3_class(fit, c("bnmf_rrt", "bnmf_nmf", "bnmf"), exact = TRUE)
  M <- length(fit$components)
  expect_gte(M, 1)
  expect_equal(sum(weights(fit)), 1, tolerance = 1e-12)
  expect_identical(factors(fit), fit$components[[fit$best]])
  expect_identical(factors(fit, component = M), fit$components[[M]])
  expect_error(factors(fit, component = M + 1), class = "bnmf_error_input", regexp = "component")
  ref <- Reduce(`+`, Map(function(f, w) w * f$W %*% f$H, fit$components, fit$weights))
  expect_equal(unname(fitted(fit)), unname(ref), tolerance = 1e-12)
  expect_identical(dimnames(fitted(fit)), dimnames(X))
  # the ELBO of the fit is the ONVI's ELBO of its mixture
  expect_true(is.finite(fit$elbo))
  expect_equal(fit$elbo, utils::tail(fit$trace$elbo, 1), tolerance = 1e-8)
  expect_lte(fit$stats$processed, 40)
  expect_output(print(fit), "RRT")
  s <- summary(fit)
  expect_s3_class(s, "summary.bnmf_rrt")
  expect_identical(nrow(s$components), M)
  expect_output(print(s), "ELBO")
  expect_identical(attr(wad(fit), "Size"), M)
  expect_identical(covering_number(fit, epsilon = 0)$covering, M)
  expect_identical(align_factors(fit, fit)$perm, 1:2)
  png_file <- withr::local_tempfile(fileext = ".png")
  for (type in c("elbo", "persistence", "projection")) {
    grDevices::png(png_file)
    plot(fit, type = type)
    grDevices::dev.off()
    expect_gt(file.size(png_file), 1000)
  }
  # every baseline runs and gives a valid fit
  for (search in c("nvi4", "gibbs", "hmc")) {
    f <- bnmf(X, rank = 2, method = "rrt", iter = 20, control = rrt_control(search = search))
    expect_s3_class(f, "bnmf_rrt")
    expect_identical(f$search, search)
  }
  # a time limit stops the search
  f <- bnmf(X, rank = 2, method = "rrt", iter = 10^6,
            control = rrt_control(starts = 2, time_limit = 0.5))
  expect_identical(f$stats$stop, "time")
})
