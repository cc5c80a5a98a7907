# Joint-distribution ("getting it right") tests (Geweke 2004) of the NMTF
# Gibbs sampler, through the harness of helper-geweke.R and the model of
# helper-nmtf.R: one Gibbs sweep of bnmf:::nmtf_sweeps() given X alternated
# with fresh data given the parameters leaves the prior invariant, so the
# draws of F, S, G, tau (and the ARD rates) must follow the prior. K != L and
# I != J so that no transposition or index mix-up can cancel out.

test_that("the NMTF harness accepts independent prior draws", {
  # The references of geweke_nmtf_model() themselves: independent prior draws
  # pass the comparison (exact and sampled references, with and without ARD).
  for (ard in list(NULL, list(alpha0 = 8, beta0 = 6))) {
    model <- geweke_nmtf_model(I = 4, J = 3, K = 2, L = 3, lF = 1.5, lS = 0.8, lG = 1.2,
                               alpha = 3, beta = 2, ard = ard)
    withr::local_seed(71)
    res <- geweke_compare(model, model$prior(20000), seed = 72)
    expect_geweke(res, label = if (is.null(ard)) "prior draws" else "prior draws, ARD")
  }
})

test_that("the NMTF Gibbs sampler gets the joint distribution right (complete data)", {
  skip_on_cran()
  model <- geweke_nmtf_model(I = 4, J = 3, K = 2, L = 3, lF = 1.5, lS = 0.8, lG = 1.2,
                             alpha = 3, beta = 2)
  expect_geweke(geweke_run(model, n = 20000, seed = 83, runs = 200), label = "NMTF complete data")
})

test_that("the NMTF Gibbs sampler gets the joint distribution right with missing entries", {
  skip_on_cran()
  model <- geweke_nmtf_model(I = 3, J = 4, K = 3, L = 2, lF = 1, lS = 1.3, lG = 0.9,
                             alpha = 2, beta = 1, miss = c(2, 7, 12))
  # 200 independent runs of 100 steps, each from an exact joint draw: with
  # missing entries the sampler moves slowly, so a run's mean of a tail
  # indicator stays near its start's 0 or 1; over 40 runs of 500 steps such
  # means are too skewed for t-based z-scores (3 of 24 seeds gave |z| > 4.5),
  # over 200 runs the largest |z| of 24 seeds was 3.0.
  expect_geweke(geweke_run(model, n = 20000, seed = 84, runs = 200), label = "NMTF missing")
})

test_that("the NMTF Gibbs sampler with ARD gets the joint distribution right", {
  skip_on_cran()
  # alpha0 = 8: the test functions include second moments of F and of
  # F S G', whose Monte Carlo error needs finite fourth moments; given
  # lambda ~ Gamma(alpha0, beta0), E[F^4] is finite only for alpha0 > 4 (with
  # alpha0 = 4 the z-scores of those second moments are meaningless).
  # beta = 12 (noise sd about 2): with precise data the sampler moves along
  # the scale orbit (F c, S / c) only slowly, and the heavy-tailed ARD scales
  # then mix slowly (effective sample sizes of 26 to 40 in 20000 steps for
  # sum(G) and F S G' at beta = 2, against 500 and 90 here). The 200 runs of
  # 100 steps each start from an exact joint draw, so their means are
  # independent and give an honest Monte Carlo error (t with 199 df:
  # P(|z| > 4.5) is about 1e-5 per test function).
  model <- geweke_nmtf_model(I = 4, J = 3, K = 2, L = 3, lS = 0.8, alpha = 3, beta = 12,
                             miss = 5, ard = list(alpha0 = 8, beta0 = 6))
  expect_geweke(geweke_run(model, n = 20000, seed = 85, runs = 200), label = "NMTF ARD")
})

test_that("the NMTF joint-distribution test detects a tau shape off by one half", {
  skip_on_cran()
  # The sampler's tau conditional gets the shape alpha + 1/2 + n/2 instead of
  # alpha + n/2; the draws of tau then drift above the prior.
  model <- geweke_nmtf_model(I = 4, J = 3, K = 2, L = 3, lF = 1.5, lS = 0.8, lG = 1.2,
                             alpha = 3, beta = 2, shape_offset = 0.5)
  res <- geweke_run(model, n = 5000, seed = 76)
  tau <- res[res$stat == "tau", ]
  expect_gt(tau$z[tau$fun == "mean"], 4.5)
})
