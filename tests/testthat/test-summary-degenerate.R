# Every number that summary() and print() show is finite, or NA with a note
# saying why, whatever the fit: degenerate data (constant, one row, rank =
# min(I, J), 1e100 and 1e-100 scales), chains stuck at one point, draws too
# few for an ESS. Inputs bnmf() refuses must be refused with a classed input
# error, never an internal one.

# All that print() of an object and of its summary write.
shown <- function(obj) {
  out <- utils::capture.output(print(obj))
  c(out, utils::capture.output(print(summary(obj))))
}

# Lines with a non-finite or absurd number. At the extreme scales the fitted
# quantities (tau, W_sum, ...) are legitimately of the order 1e+-100, so the
# exponent test only runs on data of scale 1; R^2 is scale-free and must
# never be shown in exponent form.
bad_lines <- function(out, scale_free) {
  pat <- "NaN|\\bInf\\b|-Inf|R\\^2 -?[0-9.]+e"
  if (scale_free) pat <- paste0(pat, "|e[+-][0-9]{3}")
  b <- grep(pat, out, value = TRUE)
  if (any(grepl("\\bNA\\b", out)) && !any(grepl("Note|note", out))) b <- c(b, "NA without a note")
  b
}

# Fit and print: either a classed input error, or output without bad lines.
expect_sound <- function(label, expr, scale_free = TRUE) {
  r <- tryCatch(suppressWarnings(suppressMessages(expr)), error = function(e) e)
  if (inherits(r, "error")) {
    expect_true(inherits(r, "bnmf_error_input"),
                label = sprintf("%s: %s (not a classed input error)", label,
                                conditionMessage(r)))
    return(invisible(NULL))
  }
  out <- expect_no_error(shown(r))
  expect_identical(bad_lines(out, scale_free), character(), label = label)
  invisible(r)
}

degenerate_data <- function() {
  withr::local_seed(1)
  base <- matrix(rexp(8 * 3), 8) %*% matrix(rexp(3 * 6), 3) + matrix(runif(48, 0, 0.1), 8)
  list(const = matrix(2, 8, 6), zero = matrix(0, 8, 6), one_row = base[1, , drop = FALSE],
       huge = base * 1e100, tiny = base * 1e-100, normal = base)
}

test_that("ESS and R-hat of constant, short, non-finite and badly scaled draws", {
  withr::local_seed(3)
  x <- as.numeric(arima.sim(list(ar = 0.5), 400))
  ch <- rep(1:2, each = 200)
  e <- bnmf:::ess_chains(x, ch)
  r <- bnmf:::split_rhat(x, ch)
  expect_true(e > 50 && e < 400)
  # scale-free at any scale (before, 1e-200 underflowed to var 0, 1e200 to Inf)
  for (s in c(1e-200, 1e-100, 1e100, 1e200)) {
    expect_equal(bnmf:::ess_chains(x * s, ch), e, tolerance = 1e-10)
    expect_equal(bnmf:::split_rhat(x * s, ch), r, tolerance = 1e-10)
    expect_identical(bnmf:::draws_problem(x * s, ch), "")
  }
  expect_equal(bnmf:::ess_one(x[1:200] + 1e6), bnmf:::ess_one(x[1:200]), tolerance = 1e-6)
  cases <- list(
    constant = list(x = rep(3, 20), ch = rep(1L, 20), why = "constant draws"),
    single = list(x = 1, ch = 1L, why = "too few draws"),
    three = list(x = c(1, 2, 3, 4, 5, 6), ch = rep(1:2, each = 3), why = "too few draws"),
    nan = list(x = c(x[1:10], NaN), ch = rep(1L, 11), why = "non-finite"),
    inf = list(x = c(x[1:10], Inf), ch = rep(1L, 11), why = "non-finite"),
    stuck = list(x = c(rep(1, 10), rep(2, 10)), ch = rep(1:2, each = 10), why = "every chain constant"),
    empty = list(x = numeric(), ch = integer(), why = "no draws")
  )
  for (nm in names(cases)) {
    cs <- cases[[nm]]
    expect_true(is.na(bnmf:::ess_chains(cs$x, cs$ch)), label = nm)
    expect_true(is.na(bnmf:::split_rhat(cs$x, cs$ch)), label = nm)
    expect_match(bnmf:::draws_problem(cs$x, cs$ch), cs$why, label = nm)
    d <- bnmf:::trace_diagnostics(list(q = cs$x), cs$ch)
    expect_match(d$note, cs$why)
  }
  # one chain stuck, one moving: no ESS, but R-hat sees the disagreement
  y <- c(rep(5, 50), x[1:50])
  cy <- rep(1:2, each = 50)
  expect_true(is.na(bnmf:::ess_chains(y, cy)))
  expect_gt(bnmf:::split_rhat(y, cy), 2)
  expect_match(bnmf:::draws_problem(y, cy), "a chain constant")
  # chains of different lengths: each chain's ESS; R-hat on the shortest
  cz <- rep(1:2, c(300, 100))
  expect_equal(bnmf:::ess_chains(x, cz),
               bnmf:::ess_one(x[1:300]) + bnmf:::ess_one(x[301:400]))
  expect_true(is.finite(bnmf:::split_rhat(x, cz)))
})

test_that("R^2 and RMSE are computed on the data's scale, NA with a note for constant data", {
  withr::local_seed(4)
  X <- matrix(rexp(60), 10)
  res <- matrix(rnorm(60, sd = 0.1), 10)
  q1 <- bnmf:::fit_quality(res, X)
  expect_equal(q1$r_squared, 1 - sum(res^2) / sum((X - mean(X))^2))
  expect_equal(q1$rmse, sqrt(mean(res^2)))
  for (s in c(1e-160, 1e-100, 1e100, 1e160)) {
    q <- bnmf:::fit_quality(res * s, X * s)
    expect_equal(q$r_squared, q1$r_squared, tolerance = 1e-12)
    expect_equal(q$rmse / s, q1$rmse, tolerance = 1e-12)
  }
  Xna <- X
  Xna[3] <- NA
  rna <- res
  rna[3] <- NA
  q <- bnmf:::fit_quality(rna, Xna)
  expect_equal(q$rmse, sqrt(mean(res[-3]^2)))
  qc <- bnmf:::fit_quality(res, matrix(2, 10, 6))
  expect_true(is.na(qc$r_squared))
  expect_match(qc$notes, "all equal")
  qb <- bnmf:::fit_quality(res * 1e6, X)
  expect_lt(qb$r_squared, -1)
  expect_match(qb$notes, "R\\^2 < 0")
  expect_identical(bnmf:::format_r_squared(qb$r_squared, 3), "< -1")
  expect_identical(bnmf:::format_r_squared(-2e-16, 3), "0")
  expect_identical(bnmf:::format_r_squared(NA_real_, 3), "NA")
  expect_true(is.na(bnmf:::fit_quality(res + Inf, X)$rmse))
  expect_equal(bnmf:::factor_shares(matrix(1e200, 2, 2), matrix(1e200, 2, 2)), c(0.5, 0.5))
  expect_true(all(is.na(bnmf:::factor_shares(matrix(0, 2, 2), matrix(1, 2, 2)))))
})

test_that("summaries of every optimiser and sampler on degenerate data are finite or NA with a note", {
  skip_on_cran()
  withr::local_seed(5)
  dat <- degenerate_data()
  for (d in names(dat)) {
    X <- dat[[d]]
    sf <- !d %in% c("huge", "tiny")
    K <- min(dim(X))
    for (m in c("gibbs", "vb", "icm", "np")) {
      expect_sound(paste(d, m), bnmf(X, rank = min(2, K), method = m, iter = 30), sf)
      expect_sound(paste(d, m, "rank = min(I, J)"), bnmf(X, rank = K, method = m, iter = 30), sf)
    }
    expect_sound(paste(d, "gibbs ard"), bnmf(X, rank = K, prior = ard(), iter = 30), sf)
    expect_sound(paste(d, "gibbs draws"),
                 bnmf(X, rank = min(2, K), keep = "draws", chains = 2, iter = 30), sf)
    expect_sound(paste(d, "gibbs 2 draws"),
                 bnmf(X, rank = min(2, K), keep = "draws", chains = 2, iter = 3, burnin = 1), sf)
    expect_sound(paste(d, "particles"),
                 bnmf(X, rank = min(2, K), method = "particles", particles = 3, iter = 30), sf)
    expect_sound(paste(d, "hmc"), bnmf(X, rank = min(2, K), method = "hmc", iter = 20, chains = 2), sf)
    expect_sound(paste(d, "hmc 4 iterations"), bnmf(X, rank = 1, method = "hmc", iter = 4, chains = 2), sf)
  }
})

test_that("marginal likelihoods and rank selections on degenerate data are finite or NA with a note", {
  skip_on_cran()
  withr::local_seed(6)
  dat <- degenerate_data()
  for (d in names(dat)) {
    X <- dat[[d]]
    sf <- !d %in% c("huge", "tiny")
    K <- min(dim(X), 3)
    expect_sound(paste(d, "chib"),
                 marginal_likelihood(bnmf(X, rank = 1, iter = 30), samples = 100, progress = FALSE), sf)
    expect_sound(paste(d, "rank bic"), select_rank(X, ranks = 1:K, criterion = "bic"), sf)
    expect_sound(paste(d, "rank chib"), select_rank(X, ranks = 1:K, criterion = "chib", samples = 100), sf)
    expect_sound(paste(d, "rank ard"), select_rank(X, ranks = K, criterion = "ard", method = "vb"), sf)
    expect_sound(paste(d, "rank cv"), select_rank(X, ranks = 1:K, criterion = "cv", method = "vb", folds = 2), sf)
  }
})

test_that("HMC at scales 1e-100 and 1e100: no error, R^2 flagged instead of -1e196", {
  skip_on_cran()
  withr::local_seed(7)
  X <- matrix(rexp(100 * 3), 100) %*% matrix(rexp(3 * 20), 3)
  for (s in c(1e-100, 1e100)) {
    fit <- suppressWarnings(bnmf(X * s, rank = 3, method = "hmc", iter = 20, chains = 2))
    sm <- expect_no_error(summary(fit))
    out <- utils::capture.output(print(sm))
    expect_identical(bad_lines(out, scale_free = FALSE), character())
    if (!is.na(sm$r_squared) && sm$r_squared < 0) expect_match(out, "Note: R\\^2 < 0", all = FALSE)
    expect_true(all(is.na(sm$diagnostics$ess) == nzchar(sm$diagnostics$note) |
                      !is.na(sm$diagnostics$ess)))
  }
})

test_that("a Gibbs fit whose draws are constant: ESS and R-hat NA with the reason", {
  skip_on_cran()
  withr::local_seed(8)
  X <- degenerate_data()$normal
  fit <- suppressWarnings(bnmf(X, rank = 2, keep = "draws", chains = 2, iter = 40))
  for (c in 1:2) {
    fit$draws[[c]]$W[] <- fit$draws[[c]]$W[, 1]
    fit$draws[[c]]$H[] <- fit$draws[[c]]$H[, 1]
  }
  fit$trace$tau[] <- 2
  for (post in c(TRUE, FALSE)) {
    fd <- bnmf:::factor_draw_diagnostics(fit, use_posterior = post &&
                                           requireNamespace("posterior", quietly = TRUE))
    expect_true(all(is.na(fd$ess)))
    expect_true(all(nzchar(fd$note)))
  }
  sm <- summary(fit)
  expect_true(is.na(sm$diagnostics$ess[sm$diagnostics$quantity == "tau"]))
  expect_match(sm$diagnostics$note[sm$diagnostics$quantity == "tau"], "constant")
  out <- utils::capture.output(print(sm))
  expect_identical(bad_lines(out, TRUE), character())
  expect_match(out, "note", all = FALSE)
})

test_that("select_rank(criterion = \"chib\") shows the smallest block ESS and the hint below 100", {
  skip_on_cran()
  withr::local_seed(9)
  X <- degenerate_data()$normal
  sel <- suppressWarnings(select_rank(X, ranks = 1:3, criterion = "chib", samples = 200))
  ess <- vapply(sel$marglik, function(m) min(m$blocks$ess), numeric(1), USE.NAMES = FALSE)
  s <- summary(sel)
  expect_equal(s$table$min_ess, ess)
  out <- utils::capture.output(print(sel))
  expect_match(out, "min_ess", all = FALSE)
  if (any(ess < 100)) {
    expect_match(out, "below 100 a few draws decide", all = FALSE)
  }
  expect_identical(out, utils::capture.output(print(sel)))
  out2 <- utils::capture.output(print(s))
  expect_match(out2, "min_ess", all = FALSE)
})

test_that("Chib's standard error sees autocorrelated heavy-tailed densities", {
  # log densities from a slowly mixing chain (AR(1), phi = 0.98, sd 1): the
  # average exp(v) has E = exp(1/2). The batch means of 40 draws see too little
  # of the autocorrelation; the log-scale spread of ten parts sees it. With 300
  # runs the coverage of +/- 2 se is known to about 0.025.
  withr::local_seed(10)
  batch <- function(v, B = 50) {
    e <- exp(v - max(v))
    bm <- colMeans(matrix(e[seq_len(length(e) %/% B * B)], length(e) %/% B))
    stats::sd(bm) / sqrt(B) / mean(e)
  }
  r <- replicate(300, {
    v <- as.numeric(stats::arima.sim(list(ar = 0.98), 2000)) * sqrt(1 - 0.98^2)
    c(bnmf:::log_mean_exp_se(v, 50), batch(v), bnmf:::log_mean_exp(v))
  })
  expect_equal(r[1, ], r[4, ])
  expect_true(all(r[2, ] >= r[3, ]))                 # never below the batch-means se
  cover_new <- mean(abs(r[1, ] - 0.5) <= 2 * r[2, ])
  cover_old <- mean(abs(r[1, ] - 0.5) <= 2 * r[3, ])
  expect_gt(cover_new - cover_old, 0.07)
  expect_gt(cover_new, 0.8)
  # no overflow or underflow of a part of the run far below the maximum
  v <- c(rep(-2000, 1000), rnorm(1000))
  se <- bnmf:::log_mean_exp_se(v, 50)
  expect_true(all(is.finite(se)))
})
