# The R driver calls the C sweeps in chunks whose length adapts to the
# machine's speed; where a run is cut must never change where ICM, VB or NP
# stop, nor their result.

run_in_chunks <- function(X, K, method, chunks, tol = 1e-5, loss = "euclidean") {
  data <- bnmf:::prepare_data(X, K)
  set.seed(1)
  init <- bnmf:::random_init(nrow(X), ncol(X), K, mean(X, na.rm = TRUE))
  rate <- if (method == "np") 0 else 2
  prior <- list(lamW = matrix(rate, nrow(X), K), lamH = matrix(rate, K, ncol(X)),
                alpha = 1, beta = 1)
  st <- bnmf:::new_state(X, data, init$W, init$H, 1, numeric(length(data$miss_pos)), FALSE,
                         vb = if (method == "vb") list(tau_rate = 1))
  n <- 0
  for (ch in chunks) {
    out <- if (loss == "kl") bnmf:::engine_kl(st, data, ch, tol = tol) else
      bnmf:::engine_sweeps(st, data, prior, ch, rule = method, masked = TRUE, tol = tol)
    n <- n + nrow(out$trace)
    if (out$converged) break
  }
  list(n = n, W = st$W)
}

test_that("where the sweeps are cut into calls does not change the result", {
  X <- abs(leukemia[1:60, 1:40])
  X[3, 5] <- NA
  for (cfg in list(list(m = "icm"), list(m = "vb"), list(m = "np"), list(m = "np", loss = "kl"))) {
    loss <- if (is.null(cfg$loss)) "euclidean" else cfg$loss
    a <- run_in_chunks(X, 3, cfg$m, rep(1, 3000), loss = loss)
    b <- run_in_chunks(X, 3, cfg$m, rep(7, 500), loss = loss)
    c <- run_in_chunks(X, 3, cfg$m, 3000, loss = loss)
    expect_lt(a$n, 3000)
    expect_equal(b$n, a$n, info = paste(cfg$m, loss))
    expect_equal(c$n, a$n, info = paste(cfg$m, loss))
    expect_identical(b$W, a$W)
    expect_identical(c$W, a$W)
  }
})
