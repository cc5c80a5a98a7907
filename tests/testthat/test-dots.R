# Arguments that reach no function are errors, named, with the closest valid
# name; select_rank() checks everything before starting any fit or worker;
# an impossible fit is refused before any work.

dots_fit <- function() {
  withr::local_seed(1)
  X <- matrix(rexp(30 * 12), 30, 12)
  list(X = X, fit = bnmf(X, rank = 2, iter = 40, prior = exponential(1), progress = FALSE))
}

test_that("misspelt arguments of marginal_likelihood() and update() are errors naming them", {
  d <- dots_fit()
  err <- expect_error(marginal_likelihood(d$fit, smaples = 100), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`smaples` is not an argument of `marginal_likelihood\\(\\)`; did you mean `samples`\\?")
  err <- expect_error(update(d$fit, iterations = 10), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`iterations` is not an argument of `update\\(\\)`; did you mean `iter`\\?")
  err <- expect_error(update(d$fit, 10, FALSE, 3), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "takes no further arguments, but 1 unnamed argument was given")
  # Nothing close: no suggestion; every unknown name is listed.
  err <- expect_error(marginal_likelihood(d$fit, zzz = 1, qqq = 2), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`zzz` is not an argument of `marginal_likelihood\\(\\)` \\(also unknown: `qqq`\\)")
  # The checks come before any work: the fit is unchanged and no RNG is used.
  withr::local_seed(2)
  s0 <- .Random.seed
  expect_error(update(d$fit, iterations = 10), class = "bnmf_error_input")
  expect_identical(.Random.seed, s0)
})

test_that("closest_name() suggests a prefix or a near spelling, or nothing", {
  expect_identical(bnmf:::closest_name("smaples", c("samples", "burnin")), "samples")
  expect_identical(bnmf:::closest_name("iterations", c("iter", "progress")), "iter")
  expect_identical(bnmf:::closest_name("Burnin", c("samples", "burnin")), "burnin")
  expect_identical(bnmf:::closest_name("zzz", c("samples", "burnin")), NA_character_)
  expect_identical(bnmf:::closest_name("x", character()), NA_character_)
})

test_that("select_rank() refuses unknown or invalid marglik_args before any fit", {
  d <- dots_fit()
  withr::local_seed(3)
  s0 <- .Random.seed
  err <- expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(unknown = 1)),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`marglik_args`: `unknown` is not an argument of `marginal_likelihood\\(\\)`")
  err <- expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(batchs = 10)),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "did you mean `batches`\\?")
  expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(batches = 1)),
               "`batches` must be a single whole number >= 2", class = "bnmf_error_input")
  expect_error(select_rank(d$X, ranks = 1:2, marglik_args = list(point = "median")),
               "`point` must be one of", class = "bnmf_error_input")
  # No fit ran: the session's random numbers were not touched.
  expect_identical(.Random.seed, s0)
})

test_that("select_rank() checks the fits' arguments before starting workers", {
  d <- dots_fit()
  old <- future::plan(future::sequential)
  withr::defer(future::plan(old))
  # The temporary plan of `cores` (and its message) comes after the checks:
  # an invalid argument of the fits errors with no message and no workers.
  for (crit in c("bic", "chib", "cv")) {
    args <- list(d$X, ranks = 1:2, criterion = crit, cores = 2, iter = -1)
    if (crit == "cv") args$method <- "vb"
    expect_no_message(err <- expect_error(do.call(select_rank, args), class = "bnmf_error_input"))
    expect_match(conditionMessage(err), "`iter` must be a single whole number >= 1")
    expect_s3_class(future::plan(), "sequential")
  }
  expect_no_message(expect_error(select_rank(d$X, ranks = 1:2, cores = 2, burnin = 50, iter = 40),
                                 "`burnin` \\(50\\) must be smaller than `iter` \\(40\\)",
                                 class = "bnmf_error_input"))
  expect_no_message(expect_error(select_rank(d$X, ranks = 1:2, criterion = "bic", cores = 2,
                                             prior = "exp"),
                                 "`prior` must be made by", class = "bnmf_error_input"))
})

test_that("a fit that cannot fit in memory is refused before any work, naming the sizes", {
  X <- Matrix::sparseMatrix(i = c(seq_len(1e6), 1:3), j = c(seq_len(1e6), 3:1), x = 1,
                            dims = c(1e6, 1e6))
  err <- expect_error(bnmf(X, rank = 1e6, progress = FALSE), class = "bnmf_error_input")
  expect_match(conditionMessage(err),
               "rank 1,000,000 for a 1,000,000 x 1,000,000 matrix needs a W array of 1,000,000,000,000 elements, more than the 2,147,483,647")
  d <- dots_fit()
  # Kept draws count: 30 x 2 x 4e7 elements.
  err <- expect_error(bnmf(d$X, rank = 2, iter = 4e7, burnin = 0, keep = "draws", progress = FALSE),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "W draws array of 2,400,000,000 elements")
  expect_match(conditionMessage(err), "lower `rank`, `iter` or keep fewer draws")
  # The total against getOption("bnmf.max_memory") (bytes): 4 chains of
  # 5 copies of W and H (30 x 2 + 2 x 12) and 3 copies of X, 8 bytes each.
  need <- 8 * 4 * (5 * (30 * 2 + 2 * 12) + 3 * 30 * 12)
  expect_identical(bnmf:::check_fit_size(30, 12, 2, 4, data = 3, nx = 360), need)
  withr::local_options(bnmf.max_memory = need - 1)
  err <- expect_error(bnmf(d$X, rank = 2, iter = 10, chains = 4, progress = FALSE),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "rank 2 for a 30 x 12 matrix \\(4 chains\\) needs about 46.9 kB of memory, more than `getOption\\(\"bnmf.max_memory\"\\)`")
  withr::local_options(bnmf.max_memory = need)
  expect_s3_class(bnmf(d$X, rank = 2, iter = 10, chains = 4, progress = FALSE), "bnmf")
})

test_that("bnmf() refuses arguments that the method would ignore, naming them", {
  d <- dots_fit()
  X <- d$X
  refuse <- function(..., pattern) {
    err <- expect_error(bnmf(X, rank = 2, iter = 10, progress = FALSE, ...),
                        class = "bnmf_error_input")
    expect_match(conditionMessage(err), pattern)
  }
  # method "particles" has no chains, sweeps to keep or thin, noise or loss
  for (a in list(list(chains = 2), list(thin = 2), list(burnin = 5), list(keep = "draws"),
                 list(keep = "summary"), list(noise = gamma_prior(1, 1)), list(loss = "kl"))) {
    do.call(refuse, c(list(method = "particles", particles = 3), a,
                      pattern = sprintf("`%s`: not used by method \"particles\" \\(its number of candidate factorisations is `particles`", names(a))))
  }
  # `particles` is for the particle methods only
  for (m in c("gibbs", "vb", "icm", "np")) {
    refuse(method = m, particles = 3,
           pattern = sprintf("`particles` applies to methods \"particles\", \"svgd\" and \"dsgd\" only, not \"%s\"; use `chains`", m))
  }
  expect_error(bnmf(X ~ nmtf(2, 2), method = "vb", particles = 3, progress = FALSE),
               "`particles` applies to methods", class = "bnmf_error_input")
  # the methods that never test convergence take no `tol` but 0 (or the default)
  refuse(method = "gibbs", tol = 1e-3, pattern = "`tol` \\(0.001\\) applies to the methods that iterate to convergence .* not to method \"gibbs\"")
  refuse(method = "gibbs", likelihood = "poisson", tol = 1e-3, pattern = "not to method \"gibbs\"")
  refuse(method = "ssvi", tol = 1e-3, pattern = "`tol` \\(0.001\\) does not apply to method \"ssvi\"")
  refuse(method = "rrt", tol = 1e-3, pattern = "does not apply to method \"rrt\"; .*`control = rrt_control\\(tol = \\)`")
  refuse(method = "rrt", tol = NaN, pattern = "`tol` must be a single finite number >= 0")
  expect_s3_class(bnmf(X, rank = 2, iter = 10, tol = 0, progress = FALSE), "bnmf")
  expect_s3_class(bnmf(X, rank = 2, iter = 10, tol = 1e-6, progress = FALSE), "bnmf")
  # `data` is for the formula interface only
  refuse(data = data.frame(a = 1), pattern = "`data` applies to the formula interface only")
  Y <- X
  expect_s3_class(bnmf(Y ~ nmf(2), data = list(Y = X), iter = 10, progress = FALSE), "bnmf")
  # the refusals come before any work: no random numbers drawn
  withr::local_seed(5)
  s0 <- .Random.seed
  refuse(method = "particles", chains = 2, pattern = "`chains`")
  refuse(method = "icm", particles = 3, pattern = "`particles`")
  expect_identical(.Random.seed, s0)
})

test_that("absurd numbers of particles are refused before any work", {
  d <- dots_fit()
  withr::local_seed(6)
  s0 <- .Random.seed
  err <- expect_error(bnmf(d$X, rank = 2, method = "particles", particles = 1e9, progress = FALSE),
                      class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`particles`: method \"particles\" with 1,000,000,000 particles needs a 1,000,000,000 x 1,000,000,000 Stein kernel matrix, .*use at most 46340 particles")
  for (m in c("svgd", "dsgd")) {
    err <- expect_error(bnmf(d$X, rank = 2, method = m, particles = 46341, progress = FALSE),
                        class = "bnmf_error_input")
    expect_match(conditionMessage(err), sprintf("method \"%s\" with 46,341 particles", m))
  }
  # The memory limit counts the M x M kernel with the candidates' factors.
  withr::local_options(bnmf.max_memory = 1e6)
  expect_error(bnmf(d$X, rank = 2, method = "particles", particles = 400, progress = FALSE),
               "needs about .* of memory, more than", class = "bnmf_error_input")
  expect_identical(.Random.seed, s0)
})

test_that("markers() adapts its default to fewer than 10 features and refuses a larger n", {
  withr::local_seed(7)
  X <- matrix(rexp(6 * 12), 6, 12)
  fit <- bnmf(X, rank = 2, iter = 40, progress = FALSE)
  mk <- markers(fit)
  expect_identical(nrow(mk), 12L)
  expect_identical(mk$rank, rep(1:6, 2))
  err <- expect_error(markers(fit, n = 7), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`n` \\(7\\) must be at most the number of features, 6")
  expect_identical(nrow(markers(fit, n = 6)), 12L)
})

test_that("the S3 methods refuse unknown arguments in `...`, naming them", {
  d <- dots_fit()
  fit <- d$fit
  unknown <- function(expr, name, fun, hint = NULL) {
    err <- expect_error(expr, class = "bnmf_error_input")
    expect_match(conditionMessage(err),
                 sprintf("`%s` is not an argument of `%s\\(\\)`", name, fun), fixed = FALSE)
    if (!is.null(hint)) expect_match(conditionMessage(err), sprintf("did you mean `%s`\\?", hint))
  }
  unknown(summary(fit, digts = 3), "digts", "summary")
  unknown(summary(fit, wad_treshold = 3), "wad_treshold", "summary", "wad_threshold")
  unknown(print(fit, foo = 1), "foo", "print")
  unknown(print(summary(fit), digts = 2), "digts", "print", "digits")
  unknown(fitted(fit, foo = 1), "foo", "fitted")
  unknown(residuals(fit, ii = 1), "ii", "residuals", "i")
  unknown(logLik(fit, REML = TRUE), "REML", "logLik")
  unknown(sigma(fit, foo = 1), "foo", "sigma")
  unknown(nobs(fit, foo = 1), "foo", "nobs")
  unknown(coef(fit, foo = 1), "foo", "coef")
  unknown(basis(fit, foo = 1), "foo", "basis")
  unknown(factors(fit, foo = 1), "foo", "factors")
  unknown(predict(fit, newdata = d$X, foo = 1), "foo", "predict")
  unknown(consensus_matrix(fit, foo = 1), "foo", "consensus_matrix")
  unknown(tidy(fit, matirx = "H"), "matirx", "tidy", "matrix")
  unknown(glance(fit, foo = 1), "foo", "glance")
  unknown(augment(fit, newdata = d$X), "newdata", "augment")
  unknown(as.data.frame(fit, foo = 1), "foo", "as.data.frame")
  err <- expect_error(summary(fit, 3, 4), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "1 unnamed argument was given")
  # What the generics of stats and base pass keeps working.
  expect_output(print(fit))
  expect_output(print(summary(fit), digits = 2))
  expect_output(print(summary(fit)))
  expect_s3_class(logLik(fit), "logLik")
  expect_true(is.finite(AIC(fit)) && is.finite(BIC(fit)))
  expect_identical(nobs(fit, use.fallback = TRUE), nobs(fit))
  expect_identical(dim(predict(fit, newdata = d$X, type = "coef")), c(2L, 12L))
  expect_length(residuals(fit, i = 1, j = 2), 1L)
  vb <- bnmf(d$X, rank = 2, method = "vb", iter = 20, tol = 0, progress = FALSE)
  unknown(summary(vb, wad_threshold = 5), "wad_threshold", "summary")
  unknown(elbo(vb, foo = 1), "foo", "elbo")
  # draws
  dr <- withr::with_seed(8, bnmf(d$X, rank = 2, iter = 40, keep = "draws", progress = FALSE))
  unknown(coda::as.mcmc(dr, foo = 1), "foo", "as.mcmc")
  unknown(posterior::as_draws(dr, foo = 1), "foo", "as_draws")
  unknown(posterior::as_draws_array(dr, foo = 1), "foo", "as_draws_array")
  expect_s3_class(posterior::as_draws(dr), "draws_array")
  # particle and HMC fits
  pf <- bnmf(d$X, rank = 2, method = "particles", particles = 3, progress = FALSE)
  unknown(weights(pf, foo = 1), "foo", "weights")
  unknown(summary(pf, n_tops = 3), "n_tops", "summary", "n_top")
  unknown(predict(pf, particel = 1), "particel", "predict", "particle")
  unknown(logLik(pf, foo = 1), "foo", "logLik")
  unknown(fitted(pf, foo = 1), "foo", "fitted")
  hm <- withr::with_seed(9, bnmf(d$X, rank = 2, method = "hmc", iter = 20, progress = FALSE))
  expect_identical(factors(hm, draw = NULL), factors(hm))
  unknown(factors(hm, drwa = 1), "drwa", "factors", "draw")
  unknown(predict(hm, iter = 10), "iter", "predict")
  unknown(summary(hm, foo = 1), "foo", "summary")
  # model pieces print nothing else
  unknown(print(exponential(), foo = 1), "foo", "print")
  unknown(print(gamma_prior(), foo = 1), "foo", "print")
})

test_that("plot methods pass on graphical parameters only", {
  d <- dots_fit()
  fit <- d$fit
  grDevices::pdf(NULL)
  withr::defer(grDevices::dev.off())
  err <- expect_error(plot(fit, mian = "x"), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "`mian` is not an argument of `plot\\(\\)`; did you mean `main`\\?")
  err <- expect_error(plot(fit, type = "basis", ntop = 3), class = "bnmf_error_input")
  expect_match(conditionMessage(err), "did you mean `n_top`\\?")
  # n_top belongs to the basis and heatmap plots, not to the trace
  expect_error(plot(fit, n_top = 3), "`n_top` is not an argument of `plot\\(\\)`",
               class = "bnmf_error_input")
  expect_error(plot(fit, "main"), "must be one of", class = "bnmf_error_input")
  expect_identical(plot(fit, main = "trace", col = 2), fit)
  expect_identical(plot(fit, type = "basis", n_top = 3, cex = 0.8), fit)
  expect_identical(plot(fit, type = "heatmap", what = "basis", n_top = 3), fit)
  pf <- bnmf(d$X, rank = 2, method = "particles", particles = 3, progress = FALSE)
  expect_error(plot(pf, colour = 2), "`colour` is not an argument of `plot\\(\\)`; did you mean `col`\\?",
               class = "bnmf_error_input")
  expect_identical(plot(pf, col = 2), pf)
  expect_error(plot(consensus_matrix(fit), grops = 1), "did you mean `groups`\\?",
               class = "bnmf_error_input")
})

test_that("bnmf() names an argument it does not have, and says what replaces NMF's nrun and seed", {
  X <- leukemia[1:20, 1:10]
  expect_error(bnmf(X, 2, nrun = 10), class = "bnmf_error_input", regexp = "chains")
  expect_error(bnmf(X, 2, seed = 1), class = "bnmf_error_input", regexp = "set.seed")
  expect_error(bnmf(X, 2, iterations = 5), class = "bnmf_error_input",
               regexp = "`iterations` is not an argument of `bnmf\\(\\)`; did you mean `iter`")
  expect_error(select_rank(X, ranks = 1:2, criterion = "bic", nrun = 3),
               class = "bnmf_error_input", regexp = "nrun")
})
