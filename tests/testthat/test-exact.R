# Every method's headline output on the tiny problem (I = 1, J = 2, K = 1)
# against the exact reference of helper-exact.R: posterior moments by
# quadrature (Gibbs), local modes of the joint posterior (ICM). A new method
# gets a branch in exact_check() and an entry here.

exact_methods <- c("gibbs", "icm")

for (method in exact_methods) {
  for (problem in names(exact_tiny_problems)) {
    test_that(sprintf("%s matches the exact answer on the tiny problem (%s)", method, problem), {
      if (method == "gibbs") skip_on_cran()
      res <- exact_check(method, exact_tiny_problems[[problem]],
                         seed = 10 + match(problem, names(exact_tiny_problems)))
      expect_exact(res, label = paste(method, problem))
    })
  }
}

test_that("the exact local modes are stationary points of the log joint density", {
  # The reference itself, checked by its KKT conditions: zero gradient in the
  # coordinates that are positive, non-positive gradient where they are 0.
  p <- exact_tiny_problems$moderate
  m <- exact_tiny_modes(p$x, p$lambda, p$lambda, p$alpha, p$beta)
  expect_true(any(m$interior))
  for (r in seq_len(nrow(m))) {
    w <- m$W[r]; h <- c(m$H1[r], m$H2[r]); tau <- m$tau[r]
    res <- p$x - w * h
    g_w <- tau * sum(res * h) - p$lambda
    g_h <- tau * res * w - p$lambda
    g_tau <- (p$alpha - 1 + 1) / tau - p$beta - sum(res^2) / 2
    expect_lt(abs(g_tau), 1e-6)
    if (w > 0) expect_lt(abs(g_w), 1e-5) else expect_lte(g_w, 0)
    expect_true(all(ifelse(h > 0, abs(g_h) < 1e-5, g_h <= 1e-12)))
  }
})
