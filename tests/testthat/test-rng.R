# The samplers' uniforms (src/rng.c): under L'Ecuyer-CMRG, the generator of
# bnmf()'s chains, the sweeps step R's recurrence in C from a copy of
# .Random.seed, 64 uniforms at a time (four at a time on processors with
# AVX2; BNMF_MRG_FILL=scalar: one at a time). These tests hold both fills to
# R's own generator, number for number.

unif_mix <- function(n, shape) .Call(C_unif, n, shape)
fills <- c("default", "scalar")
with_fill <- function(fill, code) {
  withr::with_envvar(c(BNMF_MRG_FILL = if (fill == "scalar") "scalar" else NA), code)
}

test_that("the inline L'Ecuyer-CMRG steps give R's uniforms and leave R's state", {
  local_rng_kinds()
  withr::local_seed(1)
  cases <- list(
    c("L'Ecuyer-CMRG", "Inversion", "Rejection"),
    c("L'Ecuyer-CMRG", "Box-Muller", "Rejection"),
    c("L'Ecuyer-CMRG", "Inversion", "Rounding"),
    c("Mersenne-Twister", "Inversion", "Rejection"),
    c("Knuth-TAOCP-2002", "Inversion", "Rejection")
  )
  for (fill in fills) for (k in cases) {
    suppressWarnings(RNGkind(k[1], k[2], k[3]))
    for (seed in 1:3) {
      set.seed(seed)
      # 1e5 uniforms, R's rgamma() (its normal and uniform draws) lent the
      # state, 1e5 more: the same numbers as R's, and the same state after
      x <- with_fill(fill, unif_mix(1e5, 0.5 + seed))
      after <- .Random.seed
      set.seed(seed)
      y <- c(stats::runif(1e5), stats::rgamma(1, 0.5 + seed), stats::runif(1e5))
      expect_identical(x, y, label = paste(fill, k[1], k[2], k[3], seed))
      expect_identical(after, .Random.seed, label = paste(fill, k[1], k[2], k[3], seed))
    }
  }
  # Runs that end inside a buffer of 64, at its end and just past it.
  RNGkind("L'Ecuyer-CMRG", "Inversion", "Rejection")
  for (fill in fills) for (n in c(0, 1, 3, 4, 63, 64, 65, 128, 200)) {
    set.seed(n)
    x <- with_fill(fill, unif_mix(n, 2))
    after <- .Random.seed
    set.seed(n)
    y <- c(stats::runif(n), stats::rgamma(1, 2), stats::runif(n))
    expect_identical(x, y, label = paste(fill, n))
    expect_identical(after, .Random.seed, label = paste(fill, n))
  }
  # The state carries on into R's next draw.
  RNGkind("L'Ecuyer-CMRG", "Inversion", "Rejection")
  set.seed(9)
  a <- c(unif_mix(10, 1), stats::rnorm(3))
  set.seed(9)
  expect_identical(a, c(stats::runif(10), stats::rgamma(1, 1), stats::runif(10), stats::rnorm(3)))
})

test_that("the L'Ecuyer-CMRG steps are R's at the ends of the moduli", {
  # States whose values sit at 0, 1 and m - 1 of each recursion, where the
  # products and their reductions are largest or smallest.
  local_rng_kinds()
  withr::local_seed(1)
  RNGkind("L'Ecuyer-CMRG")
  set.seed(1)
  code <- .Random.seed[1]
  m1 <- 4294967087
  m2 <- 4294944443
  as_int <- function(v) as.integer(ifelse(v > 2147483647, v - 4294967296, v))
  states <- list(
    c(m1 - 1, m1 - 1, m1 - 1, m2 - 1, m2 - 1, m2 - 1),
    c(0, 0, 1, 0, 0, 1),
    c(1, 0, 0, 1, 0, 0),
    c(m1 - 1, 0, m1 - 1, 0, m2 - 1, 0),
    c(12345, m1 - 2, 0, m2 - 2, 0, 67890)
  )
  for (fill in fills) for (st in states) {
    seed <- c(code, as_int(st))
    assign(".Random.seed", seed, envir = globalenv())
    x <- with_fill(fill, unif_mix(300, 1.5))
    after <- .Random.seed
    assign(".Random.seed", seed, envir = globalenv())
    y <- c(stats::runif(300), stats::rgamma(1, 1.5), stats::runif(300))
    expect_identical(x, y, label = paste(fill, paste(st, collapse = " ")))
    expect_identical(after, .Random.seed, label = paste(fill, paste(st, collapse = " ")))
  }
})

test_that("an invalid L'Ecuyer-CMRG .Random.seed is left to R", {
  local_rng_kinds()
  withr::local_seed(1)
  RNGkind("L'Ecuyer-CMRG")
  set.seed(2)
  bad <- .Random.seed
  bad[2:4] <- 0L   # the first recursion all zero: R draws fresh seeds
  assign(".Random.seed", bad, envir = globalenv())
  x <- unif_mix(100, 1)   # x[101] is the Gamma(1, 1) draw
  expect_true(all(x[-101] > 0 & x[-101] < 1) && x[101] > 0)
  expect_false(identical(.Random.seed[2:4], bad[2:4]))
})

test_that("Gibbs fits (NMF, NMTF), Chib's runs and rtnorm() are the same with R's unif_rand()", {
  local_rng_kinds()
  withr::local_seed(1)
  set.seed(3)
  I <- 60L
  J <- 40L
  X <- matrix(rexp(I * 3), I, 3) %*% matrix(rexp(3 * J), 3, J) + matrix(rnorm(I * J, sd = 0.2), I, J)
  X <- pmax(X, 0)
  Xm <- X
  Xm[sample(length(X), 300)] <- NA
  Xs <- X
  Xs[Xs < 1] <- 0
  Xs <- Matrix::Matrix(Xs, sparse = TRUE)
  fits <- function() {
    set.seed(4)
    list(
      dense = bnmf(X, rank = 3, iter = 60, progress = FALSE),
      ard = bnmf(X, rank = 4, prior = ard(), iter = 60, progress = FALSE),
      missing = bnmf(Xm, rank = 3, iter = 60, progress = FALSE),
      sparse = bnmf(Xs, rank = 3, iter = 60, keep = "draws", progress = FALSE),
      nmtf = bnmf(Xm, rank = c(2, 3), iter = 40, progress = FALSE),
      # (60 samples: a block with few effective draws warns; the numbers are compared)
      chib = unclass(suppressWarnings(
        marginal_likelihood(bnmf(X, rank = 2, iter = 60, progress = FALSE),
                            samples = 60, progress = FALSE),
        classes = "bnmf_warning_chib_ess")),
      rtnorm = {
        RNGkind("L'Ecuyer-CMRG")
        set.seed(5)
        r <- rtnorm(2e4, mean = seq(-3, 3, length.out = 2e4), lower = c(0, -1), upper = c(Inf, 4))
        RNGkind("Mersenne-Twister")
        r
      }
    )
  }
  inline <- fits()
  withr::with_envvar(c(BNMF_RNG_INLINE = "0"), r_unif <- fits())
  withr::with_envvar(c(BNMF_MRG_FILL = "scalar"), scalar <- fits())
  parts <- function(fit, nm) {
    if (nm %in% c("rtnorm", "chib")) fit[setdiff(names(fit), "time")]
    else fit[c("W", "H", "W_sd", "H_sd", "trace", "moments", "draws")]
  }
  for (nm in names(inline)) {
    expect_identical(parts(inline[[nm]], nm), parts(r_unif[[nm]], nm), label = nm)
    expect_identical(parts(scalar[[nm]], nm), parts(r_unif[[nm]], nm),
                     label = paste(nm, "(the scalar fill)"))
  }
})
