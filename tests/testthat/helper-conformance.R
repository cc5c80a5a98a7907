# The conformance grid: every model x method x generic, on dense and sparse
# data. Each cell is "ok" (the call returned), "refused" (a classed
# `bnmf_error`), or "bare" (any other error: a bug). A new model, method or
# generic joins by adding a row to conformance_fits() or conformance_calls().

# Small data every model accepts: counts (so that the Poisson fits run),
# with row and column names.
conformance_data <- function(sparse = FALSE) {
  set.seed(11)
  W <- matrix(rgamma(14 * 2, 2, 1), 14, 2)
  H <- matrix(rgamma(2 * 10, 2, 1), 2, 10)
  X <- matrix(rpois(140, 3 * W %*% H), 14, 10,
              dimnames = list(paste0("g", 1:14), paste0("s", 1:10)))
  if (sparse) X <- Matrix::Matrix(X, sparse = TRUE)
  X
}

# The fits: model, method, and the call that makes it (small and fast).
conformance_fits <- function() {
  f <- function(model, method, ...) list(model = model, method = method, args = list(...))
  list(
    f("nmf", "gibbs", rank = 2, method = "gibbs", iter = 40),
    f("nmf", "icm", rank = 2, method = "icm", iter = 30),
    f("nmf", "vb", rank = 2, method = "vb", iter = 30),
    f("nmf", "np", rank = 2, method = "np", iter = 30),
    f("nmf", "particles", rank = 2, method = "particles", particles = 3, iter = 30),
    f("nmf", "hmc", rank = 2, method = "hmc", iter = 20),
    f("nmf", "svgd", rank = 2, method = "svgd", iter = 10, particles = 3),
    f("nmf", "dsgd", rank = 2, method = "dsgd", iter = 10, particles = 3),
    f("nmf", "rrt", rank = 2, method = "rrt", iter = 3,
      control = rrt_control(max_failures = 5, solver_iter = 50)),
    f("nmtf", "gibbs", rank = c(2, 2), method = "gibbs", iter = 40),
    f("nmtf", "icm", rank = c(2, 2), method = "icm", iter = 30),
    f("nmtf", "vb", rank = c(2, 2), method = "vb", iter = 30),
    f("nmtf", "np", rank = c(2, 2), method = "np", iter = 30),
    f("poisson", "vb", rank = 2, method = "vb", likelihood = "poisson", iter = 30),
    f("poisson", "gibbs", rank = 2, method = "gibbs", likelihood = "poisson", iter = 40),
    f("poisson-ard", "vb", rank = 3, method = "vb", likelihood = "poisson", prior = ard(),
      iter = 30),
    f("poisson-blocks", "vb", rank = 2, method = "vb", likelihood = "poisson", blocks = 3,
      iter = 30),
    f("poisson-ard-blocks", "vb", rank = 3, method = "vb", likelihood = "poisson",
      prior = ard(), blocks = 3, iter = 30),
    f("poisson-blocks", "gibbs", rank = 2, method = "gibbs", likelihood = "poisson", blocks = 3,
      iter = 40),
    f("poisson-ard-blocks", "gibbs", rank = 3, method = "gibbs", likelihood = "poisson",
      prior = ard(), blocks = 3, iter = 40),
    f("gaussian-blocks", "vb", rank = 2, method = "vb", blocks = 3, iter = 30),
    f("gaussian-blocks", "icm", rank = 2, method = "icm", blocks = 3, iter = 30),
    f("gaussian-blocks", "gibbs", rank = 2, method = "gibbs", blocks = 3, iter = 40),
    f("poisson-ard", "gibbs", rank = 3, method = "gibbs", likelihood = "poisson", prior = ard(),
      iter = 40),
    f("poisson", "ssvi", rank = 2, method = "ssvi", likelihood = "poisson", sparsity = "both",
      iter = 20)
  )
}

# The generics, each a function of the fit and the data it was fitted to.
conformance_calls <- function() {
  newdata <- function(X) {
    Y <- as.matrix(X)[, 1:3, drop = FALSE]
    colnames(Y) <- paste0("new", 1:3)
    Y
  }
  dev <- function(expr) {
    grDevices::pdf(NULL)
    on.exit(grDevices::dev.off())
    force(expr)
  }
  list(
    print = function(fit, X) utils::capture.output(print(fit)),
    summary = function(fit, X) utils::capture.output(print(summary(fit))),
    factors = function(fit, X) factors(fit),
    basis = function(fit, X) basis(fit),
    coef = function(fit, X) coef(fit),
    fitted = function(fit, X) fitted(fit),
    predict = function(fit, X) predict(fit),
    predict_ij = function(fit, X) predict(fit, i = 1:3, j = 1:3),
    residuals = function(fit, X) residuals(fit),
    plot = function(fit, X) dev(plot(fit)),
    plot_types = function(fit, X) {
      # every type a fit's plot() offers, each drawn or refused with a class
      types <- eval(formals(utils::getS3method("plot", class(fit)[class(fit) %in%
        sub("^plot\\.", "", as.character(utils::methods("plot")))][1L]))$type)
      for (t in types) {
        tryCatch(dev(plot(fit, type = t)), bnmf_error = function(e) NULL)
      }
    },
    nmf_basis = function(fit, X) {
      if (!requireNamespace("NMF", quietly = TRUE)) return(basis(fit))
      b <- NMF::basis(fit)
      stopifnot(identical(b, basis(fit)), identical(NMF::nbasis(fit), ncol(b)))
      b
    },
    membership = function(fit, X) membership(fit),
    markers = function(fit, X) markers(fit, n = 3),
    consensus_matrix = function(fit, X) consensus_matrix(fit),
    covering_number = function(fit, X) covering_number(fit),
    as_reduced_dim = function(fit, X) as_reduced_dim(fit),
    rds = function(fit, X) {
      f <- tempfile(fileext = ".rds")
      on.exit(unlink(f))
      saveRDS(fit, f)
      g <- readRDS(f)
      stopifnot(identical(g, fit))
      g
    },
    predict_newdata = function(fit, X) predict(fit, newdata = newdata(X)),
    predict_newdata_coef = function(fit, X) predict(fit, newdata = newdata(X), type = "coef"),
    predict_se = function(fit, X) predict(fit, newdata = newdata(X), se.fit = TRUE),
    logLik = function(fit, X) logLik(fit),
    AIC = function(fit, X) AIC(fit),
    BIC = function(fit, X) BIC(fit),
    sigma = function(fit, X) sigma(fit),
    nobs = function(fit, X) nobs(fit),
    update = function(fit, X) update(fit, iter = 5),
    as_draws = function(fit, X) posterior::as_draws(fit),
    as.mcmc = function(fit, X) coda::as.mcmc(fit),
    marginal_likelihood = function(fit, X) marginal_likelihood(fit, samples = 50),
    elbo = function(fit, X) elbo(fit),
    tidy = function(fit, X) tidy(fit),
    tidy_H = function(fit, X) tidy(fit, matrix = "H"),
    glance = function(fit, X) glance(fit),
    augment = function(fit, X) augment(fit),
    as.data.frame = function(fit, X) as.data.frame(fit)
  )
}

# The cells that must work: generic -> "model method" pairs (or "*" for
# every fit). Every other cell may also be refused with a classed error.
conformance_required <- function() {
  every <- "*"
  list(
    print = every, summary = every, factors = every, basis = every, coef = every,
    fitted = every, predict = every, residuals = every, plot = every, plot_types = every,
    nmf_basis = every,
    membership = every, markers = every, consensus_matrix = every,
    covering_number = every, as_reduced_dim = every, rds = every, predict_ij = every,
    tidy = every, tidy_H = every, glance = every, augment = every, as.data.frame = every,
    predict_newdata = c("nmf gibbs", "nmf icm", "nmf vb", "nmf np", "nmf particles", "nmf rrt",
                        "nmtf gibbs", "nmtf vb", "nmtf icm", "poisson vb", "poisson gibbs",
                        "poisson ssvi", "poisson-ard vb", "poisson-ard gibbs",
                        "poisson-blocks vb", "poisson-ard-blocks vb", "gaussian-blocks vb",
                        "gaussian-blocks icm", "gaussian-blocks gibbs", "poisson-blocks gibbs",
                        "poisson-ard-blocks gibbs"),
    logLik = c("nmf gibbs", "nmf icm", "nmf vb", "nmf rrt", "nmtf gibbs", "nmtf vb", "nmtf icm",
               "poisson vb", "poisson gibbs", "poisson ssvi", "poisson-ard vb",
               "poisson-ard gibbs", "poisson-blocks vb", "poisson-ard-blocks vb",
               "gaussian-blocks vb", "gaussian-blocks icm", "gaussian-blocks gibbs",
               "poisson-blocks gibbs", "poisson-ard-blocks gibbs"),
    update = c("nmf gibbs", "nmf icm", "nmf vb", "nmf np", "nmtf gibbs", "nmtf vb", "nmtf icm",
               "poisson vb", "poisson gibbs", "poisson-ard vb", "poisson-ard gibbs",
               "poisson-blocks vb", "poisson-ard-blocks vb", "gaussian-blocks vb",
               "gaussian-blocks icm", "gaussian-blocks gibbs", "poisson-blocks gibbs",
               "poisson-ard-blocks gibbs"),
    as_draws = c("nmf gibbs", "nmtf gibbs", "poisson gibbs", "poisson-ard gibbs", "nmf hmc",
                 "gaussian-blocks gibbs", "poisson-blocks gibbs", "poisson-ard-blocks gibbs"),
    as.mcmc = c("nmf gibbs", "nmtf gibbs", "poisson gibbs", "poisson-ard gibbs", "nmf hmc",
                "gaussian-blocks gibbs", "poisson-blocks gibbs", "poisson-ard-blocks gibbs")
  )
}

# Run one call: "ok", "refused: <class>", or "bare: <message>".
conformance_cell <- function(call, fit, X) {
  tryCatch({
    suppressWarnings(call(fit, X))
    "ok"
  }, bnmf_error = function(e) paste0("refused: ", class(e)[1L]),
  error = function(e) paste0("bare: ", conditionMessage(e)))
}

# The whole grid as a data frame (one row per fit x generic x data kind).
# Kinds: "dense", "sparse", and "limited": sparse data with the limit of
# dense results (getOption("bnmf.max_dense")) below the size of X, as for an
# atlas too large for any I x J result, where everything of size
# O(nnz + (I + J) K) must still work.
conformance_grid <- function(kinds = c("dense", "sparse", "limited"),
                             calls = conformance_calls()) {
  rows <- list()
  for (kind in kinds) {
    X <- conformance_data(sparse = kind != "dense")
    old <- options(bnmf.max_dense = if (kind == "limited") 50 else NULL)
    on.exit(options(old), add = TRUE)
    for (spec in conformance_fits()) {
      set.seed(3)
      fit <- tryCatch(suppressWarnings(do.call(bnmf, c(list(X), spec$args))),
                      error = function(e) e)
      for (g in names(calls)) {
        status <- if (inherits(fit, "error")) {
          paste0(if (inherits(fit, "bnmf_error")) paste0("refused fit: ", class(fit)[1L], ": ") else
            "bare fit: ", conditionMessage(fit))
        } else {
          conformance_cell(calls[[g]], fit, X)
        }
        rows[[length(rows) + 1L]] <- data.frame(
          kind = kind, model = spec$model, method = spec$method, generic = g,
          status = status, stringsAsFactors = FALSE)
      }
    }
  }
  do.call(rbind, rows)
}

conformance_is_required <- function(grid, required = conformance_required()) {
  key <- paste(grid$model, grid$method)
  mapply(function(g, k) {
    r <- required[[g]]
    !is.null(r) && (identical(r, "*") || k %in% r)
  }, grid$generic, key)
}

# Whether a cell meets its requirement: it works; or, with the limit of
# dense results below the size of X, it is refused as too dense where its
# answer is dense (I x J or J x J), or the fit itself is (a method that
# works on a dense copy of X).
conformance_met <- function(grid) {
  dense_answer <- grid$generic %in% c("predict", "residuals", "consensus_matrix", "predict_se",
                                      "augment")
  grid$status == "ok" |
    grid$kind == "limited" & dense_answer & grid$status == "refused: bnmf_error_dense" |
    grid$kind == "limited" & startsWith(grid$status, "refused fit: bnmf_error_dense")
}
