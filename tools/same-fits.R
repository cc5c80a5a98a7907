# Same seed, same fits: runs a fixed set of fits with the bnmf installed in a
# given library and saves them, or compares two such files entry by entry.
# Used to show that a change of the internals leaves every result unchanged.
#
#   Rscript tools/same-fits.R run LIB OUT.rds      # fits with the bnmf in LIB
#   Rscript tools/same-fits.R compare A.rds B.rds  # identical, entry by entry?
#
# Every case records the fit (timings and the call removed) and the session's
# random number state after the call, so that a change in how many random
# numbers a call consumes is seen too.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 3L || !args[1L] %in% c("run", "compare")) {
  stop("usage: same-fits.R run LIB OUT.rds | compare A.rds B.rds")
}

strip <- function(x) {
  if (is.function(x) || is.environment(x)) return(NULL)
  timing <- c("call", "init_time", "solve_time", "elapsed", "time", "timing", "time_offer")
  if (is.data.frame(x)) return(x[setdiff(names(x), timing)])
  if (is.list(x) && !is.data.frame(x)) {
    drop <- names(x) %in% timing | grepl("^time_", names(x))
    if (any(drop)) x <- x[!drop]
    cls <- class(x)
    # a fit's numbers, not its class (whose model part versions may add)
    if (inherits(x, "bnmf")) cls <- "bnmf"
    x <- lapply(x, strip)
    if (!identical(cls, "list")) class(x) <- cls
  }
  x
}

if (args[1L] == "run") {
  .libPaths(c(args[2L], .libPaths()))
  suppressPackageStartupMessages({
    library(bnmf, lib.loc = args[2L])
    library(Matrix)
  })
  set.seed(42)
  X <- leukemia[1:60, 1:40]
  Xna <- X
  Xna[sample(length(X), 200)] <- NA
  Xs <- Matrix::rsparsematrix(50, 30, 0.3, rand.x = function(n) rexp(n))
  Xsna <- Xs
  Xsna@x[c(3, 10, 50)] <- NA
  data_sets <- list(dense = X, na = Xna, sparse = Xs, sparse_na = Xsna)
  cases <- list()
  add <- function(name, expr) {
    set.seed(1)
    val <- tryCatch(expr, error = function(e) structure(conditionMessage(e), class = "failed"))
    cases[[name]] <<- list(value = strip(val), seed = .Random.seed)
  }
  for (d in names(data_sets)) {
    Y <- data_sets[[d]]
    for (m in c("gibbs", "icm", "vb", "np")) {
      it <- if (m == "gibbs") 200 else 100
      add(paste(m, d), bnmf(Y, rank = 3, method = m, iter = it))
      if (m != "np") {
        add(paste(m, "ard", d), bnmf(Y, rank = 4, method = m, iter = it, prior = ard()))
      }
    }
    add(paste("np kl", d), bnmf(Y, rank = 3, method = "np", loss = "kl", iter = 100))
    add(paste("gibbs draws chains", d),
        bnmf(Y, rank = 2, iter = 100, chains = 2, keep = "draws"))
  }
  # K >= 16 with missing entries: ICM and VB update masked rows without
  # their own Gram matrix (bnmf_cond_row_sub)
  Y <- matrix(rexp(120 * 17), 120) %*% matrix(rexp(17 * 90), 17) + matrix(rnorm(120 * 90), 120)
  Y[sample(length(Y), 0.25 * length(Y))] <- NA
  Ys <- Matrix::Matrix(ifelse(is.na(Y) | Y > 4, Y, 0), sparse = TRUE)
  for (m in c("icm", "vb")) {
    add(paste(m, "K = 17, na"), bnmf(Y, rank = 17, method = m, iter = 30, tol = 0))
    add(paste(m, "K = 17, na, ard"), bnmf(Y, rank = 17, method = m, iter = 30, tol = 0,
                                           prior = ard()))
    add(paste(m, "K = 17, sparse na"), bnmf(Ys, rank = 17, method = m, iter = 30, tol = 0))
  }
  add("gibbs update", update(bnmf(Xna, rank = 3, iter = 100), iter = 50))
  add("vb update", update(bnmf(X, rank = 3, method = "vb", iter = 20), iter = 30))
  add("gibbs formula", bnmf(X ~ nmf(2, prior = exponential(2)), iter = 100,
                            noise = gamma_prior(2, 1)))
  add("chib", marginal_likelihood(bnmf(X[1:20, 1:10], rank = 2, iter = 200),
                                  samples = 300, progress = FALSE))
  add("rank bic", select_rank(X, ranks = 1:3, criterion = "bic"))
  add("rank cv", select_rank(Xna, ranks = 1:2, criterion = "cv", method = "vb", folds = 3))
  add("rank ard", select_rank(X, ranks = 1:4, criterion = "ard", method = "vb"))
  add("particles random", bnmf(X * 100, rank = 3, method = "particles", particles = 5,
                               init = "random", iter = 200))
  add("particles qtransform", bnmf(X * 100, rank = 3, method = "particles", particles = 5,
                                   iter = 200))
  add("hmc", bnmf(X[1:20, 1:10] * 100, rank = 2, method = "hmc", iter = 60, chains = 2))
  # The other models and methods: NMTF, Poisson (VB, Gibbs, DS-NMF), SVGD,
  # DSGD and RRT
  C <- matrix(rpois(40 * 30, 3), 40, 30)
  Cs <- Matrix::Matrix(C * (C > 3), sparse = TRUE)
  for (d in c("dense", "na", "sparse")) {
    Y <- data_sets[[d]]
    for (m in c("gibbs", "vb", "icm", "np")) {
      add(paste("nmtf", m, d), bnmf(Y, rank = c(3, 2), method = m,
                                    iter = if (m == "gibbs") 100 else 50))
    }
  }
  add("nmtf ard vb", bnmf(X, rank = c(4, 3), method = "vb", prior = ard(), iter = 50))
  for (Y in list(dense = C, sparse = Cs)) {
    add(paste("poisson vb", nrow(Y) * inherits(Y, "Matrix")),
        bnmf(Y, rank = 3, likelihood = "poisson", method = "vb", iter = 60, chains = 2))
    add(paste("poisson gibbs", nrow(Y) * inherits(Y, "Matrix")),
        bnmf(Y, rank = 3, likelihood = "poisson", method = "gibbs", iter = 60, chains = 2,
             keep = "draws"))
  }
  add("ds-nmf ssvi", bnmf(C, rank = 3, likelihood = "poisson", method = "ssvi",
                          sparsity = "both", iter = 30))
  add("svgd", bnmf(X * 100, rank = 2, method = "svgd", iter = 20, particles = 3))
  add("dsgd", bnmf(X * 100, rank = 2, method = "dsgd", iter = 20, particles = 3))
  add("rrt", bnmf(X[1:20, 1:15] * 100, rank = 2, method = "rrt", iter = 20,
                  control = rrt_control(max_failures = 20, solver_iter = 100)))
  future::plan(future::multisession, workers = 2)
  for (d in c("dense", "sparse_na")) {
    add(paste("gibbs chains multisession", d),
        bnmf(data_sets[[d]], rank = 2, iter = 100, chains = 2, keep = "draws"))
    add(paste("icm chains multisession", d),
        bnmf(data_sets[[d]], rank = 2, method = "icm", iter = 50, chains = 2))
  }
  add("rank cv multisession", select_rank(Xna, ranks = 1:2, criterion = "cv", method = "vb",
                                          folds = 3))
  add("hmc multisession", bnmf(X[1:20, 1:10] * 100, rank = 2, method = "hmc", iter = 60,
                               chains = 2))
  future::plan(future::sequential)
  saveRDS(cases, args[3L])
  cat(sprintf("%d cases saved to %s\n", length(cases), args[3L]))
} else {
  a <- readRDS(args[2L])
  b <- readRDS(args[3L])
  for (nm in union(names(a), names(b))) {
    if (is.null(a[[nm]]) || is.null(b[[nm]])) {
      cat(sprintf("%-40s only in one file\n", nm))
      next
    }
    # Fields a version adds (kept for update(), say) are listed, not
    # compared, at any depth.
    extra <- character()
    common <- function(va, vb, path) {
      if (!is.list(va) || !is.list(vb) || is.data.frame(va)) return(list(va, vb))
      if (is.null(names(va)) || is.null(names(vb))) {
        # unnamed lists of the same length (chains): element by element
        if (length(va) != length(vb) || !is.null(names(va)) || !is.null(names(vb))) {
          return(list(va, vb))
        }
        out <- lapply(seq_along(va), function(k) common(va[[k]], vb[[k]], sprintf("%s[[%d]]$", path, k)))
        ca <- class(va); cb <- class(vb)
        va <- lapply(out, `[[`, 1L); vb <- lapply(out, `[[`, 2L)
        class(va) <- ca; class(vb) <- cb
        return(list(va, vb))
      }
      new <- c(setdiff(names(va), names(vb)), setdiff(names(vb), names(va)))
      if (length(new)) extra <<- c(extra, paste0(path, new))
      both <- intersect(names(va), names(vb))
      ca <- class(va); cb <- class(vb)
      out <- lapply(both, function(f) common(va[[f]], vb[[f]], paste0(path, f, "$")))
      va <- stats::setNames(lapply(out, `[[`, 1L), both)
      vb <- stats::setNames(lapply(out, `[[`, 2L), both)
      class(va) <- ca; class(vb) <- cb
      list(va, vb)
    }
    ab <- common(strip(a[[nm]]$value), strip(b[[nm]]$value), "")
    a[[nm]]$value <- ab[[1L]]
    b[[nm]]$value <- ab[[2L]]
    fit_same <- isTRUE(all.equal(a[[nm]]$value, b[[nm]]$value, tolerance = 0,
                                 check.attributes = TRUE))
    seed_same <- identical(a[[nm]]$seed, b[[nm]]$seed)
    note <- if (!fit_same) {
      paste(utils::head(all.equal(a[[nm]]$value, b[[nm]]$value, tolerance = 0), 2),
            collapse = "; ")
    } else ""
    cat(sprintf("%-40s fit %s  rng %s  %s%s\n", nm, if (fit_same) "same" else "DIFFERS",
                if (seed_same) "same" else "DIFFERS", substr(note, 1, 80),
                if (length(extra)) paste0(" (fields in one only: ", paste(extra, collapse = ", "), ")") else ""))
  }
}
