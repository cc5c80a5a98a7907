# Joint-distribution ("getting it right") tests (Geweke 2004) of the Gibbs
# sampler, through the harness of helper-geweke.R. K = 2 with I != J, so that
# the cross terms of the conditionals and the scale move (whose target depends
# on I - J) are exercised.

# Test-only switch: set to 0.5 to run the tests below with a broken tau
# conditional (its Gamma shape off by one half); they must then fail. The last
# test of this file checks that automatically, whatever the switch.
broken_shape_offset <- 0

test_that("the Gibbs sampler gets the joint distribution right (complete data)", {
  skip_on_cran()
  model <- geweke_nmf_model(I = 4, J = 3, K = 2, lambda = 1, alpha = 3, beta = 2,
                            shape_offset = broken_shape_offset)
  expect_geweke(geweke_run(model, n = 40000, seed = 31), label = "complete data")
})

test_that("the Gibbs sampler gets the joint distribution right with latent missing entries", {
  skip_on_cran()
  model <- geweke_nmf_model(I = 3, J = 5, K = 2, lambda = 1.5, alpha = 2, beta = 1,
                            miss = c(2, 7), masked = FALSE,
                            shape_offset = broken_shape_offset)
  expect_geweke(geweke_run(model, n = 40000, seed = 32), label = "latent missing")
})

test_that("the Gibbs sampler gets the joint distribution right with masked missing entries", {
  skip_on_cran()
  model <- geweke_nmf_model(I = 3, J = 5, K = 2, lambda = 1.5, alpha = 2, beta = 1,
                            miss = c(2, 7), masked = TRUE,
                            shape_offset = broken_shape_offset)
  expect_geweke(geweke_run(model, n = 40000, seed = 33), label = "masked missing")
})

test_that("the Gibbs sampler gets the joint distribution right with sparse data", {
  skip_on_cran()
  model <- geweke_nmf_model(I = 4, J = 3, K = 2, lambda = 1, alpha = 3, beta = 2,
                            miss = 5, sparse = TRUE, shape_offset = broken_shape_offset)
  expect_geweke(geweke_run(model, n = 40000, seed = 36), label = "sparse")
})

# The Gibbs sampler with the ARD prior (lambda_k drawn each sweep) has its
# own joint-distribution test in test-geweke-ard.R; moving it onto this
# harness means filling in the places marked "ARD:" in helper-geweke.R.

test_that("the harness accepts independent prior draws (exact and sampled references)", {
  # Independent draws from the prior pass the comparison, whether the
  # reference is exact (no ARD) or itself sampled (ARD sums of W and H).
  for (ard in list(NULL, list(alpha0 = 3, beta0 = 2))) {
    model <- geweke_nmf_model(I = 4, J = 3, K = 2, lambda = 1, alpha = 3, beta = 2, ard = ard)
    withr::local_seed(37)
    res <- geweke_compare(model, model$prior(20000), seed = 38)
    expect_geweke(res, label = if (is.null(ard)) "prior draws" else "prior draws, ARD")
    expect_equal(sort(unique(res$stat)),
                 sort(c("tau", "sumW", "sumH", "logW11", "logHKJ",
                        if (!is.null(ard)) c("lambda[1]", "lambda[2]"))))
  }
})

test_that("the joint-distribution test detects a tau conditional with its shape off by one half", {
  skip_on_cran()
  # The sampler gets the prior shape alpha + 1/2, the reference uses alpha:
  # exactly a tau conditional Gamma(alpha + 1/2 + n/2, ...) instead of
  # Gamma(alpha + n/2, ...). A shorter run than above suffices.
  model <- geweke_nmf_model(I = 4, J = 3, K = 2, lambda = 1, alpha = 3, beta = 2,
                            shape_offset = 0.5)
  res <- geweke_run(model, n = 10000, seed = 35)
  tau <- res[res$stat == "tau", ]
  expect_gt(max(abs(tau$z)), 4.5)
  expect_false(all(abs(res$z) < 4.5))
  # The test functions of tau are the ones that fail, towards larger tau.
  expect_gt(tau$z[tau$fun == "mean"], 4.5)
})
