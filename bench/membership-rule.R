# Which rule should assign a sample to a factor (membership(),
# consensus_matrix(), summary())? The adjusted Rand index of each candidate
# rule against known groups, for bnmf's default fit (VB), Gibbs and ICM (3
# seeds each) and the NMF package's brunet (nrun = 5), on golub (rank 3,
# ALL-B / ALL-T / AML; linear scale as bundled, and log2), leukemia (rank 2,
# B / T; log scale) and bladderbatch (the 1000 probes of largest variance,
# rank 3, Biopsy / Cancer / Normal; log scale, RMA).
#
#   R_LIBS=<lib> Rscript bench/membership-rule.R            # about 3 min
#   R_LIBS=<lib> Rscript bench/membership-rule.R fits.rds   # fits cached there
#
# Needs the Bioconductor data package bladderbatch (Debian:
# r-bioc-bladderbatch) and the NMF package; neither is a dependency of bnmf.
# Writes markdown to stdout.

suppressPackageStartupMessages({
  library(bnmf)
  library(NMF)
  library(Biobase)
  library(bladderbatch)
})

# Adjusted Rand index (Hubert and Arabie 1985) of two partitions.
ari <- function(a, b) {
  tab <- table(a, b)
  c2 <- function(n) n * (n - 1) / 2
  s_ij <- sum(c2(tab))
  s_a <- sum(c2(rowSums(tab)))
  s_b <- sum(c2(colSums(tab)))
  expected <- s_a * s_b / c2(sum(tab))
  top <- (s_a + s_b) / 2
  if (top == expected) return(if (s_ij == expected) 1 else 0)
  (s_ij - expected) / (top - expected)
}

# The candidate rules: each a function of (W, H) giving every sample's factor.
# C[k, j] = sum(W[, k]) * H[k, j] is factor k's contribution to sample j
# (its share of the column sums of W H); every rule but "raw coef" is
# unchanged when W[, k] is multiplied by c and H[k, ] divided by c.
contribution <- function(W, H) H * colSums(W)
pick <- function(S) max.col(t(S), ties.method = "first")
tiny <- .Machine$double.xmin
excess_rule <- function(W, H, q) {
  C <- contribution(W, H)
  E <- C - apply(C, 1L, stats::quantile, q, names = FALSE)
  d <- pick(E)
  flat <- colSums(E > 0) == 0
  d[flat] <- pick(C[, flat, drop = FALSE])
  d
}
rules <- list(
  # (a) the current rule: the largest contribution
  "a contribution" = function(W, H) pick(contribution(W, H)),
  # (b) the contribution relative to the factor's mean over the samples
  "b relative to mean" = function(W, H) {
    C <- contribution(W, H)
    pick(C / pmax(rowMeans(C), tiny))
  },
  # (b') relative to the factor's median over the samples
  "b' relative to median" = function(W, H) {
    C <- contribution(W, H)
    pick(C / pmax(apply(C, 1L, stats::median), tiny))
  },
  # (c) row z-scores of C
  "c z-score of C" = function(W, H) {
    C <- contribution(W, H)
    pick((C - rowMeans(C)) / pmax(apply(C, 1L, stats::sd), tiny))
  },
  # (c') row z-scores of log C (floored at 1e-6 of the row's maximum)
  "c' z-score of log C" = function(W, H) {
    C <- contribution(W, H)
    L <- log(pmax(C, 1e-6 * apply(C, 1L, max), tiny))
    pick((L - rowMeans(L)) / pmax(apply(L, 1L, stats::sd), tiny))
  },
  # (e) the contribution above the factor's smallest contribution over the
  # samples (where every factor is at its minimum, the largest contribution):
  # bnmf's rule from 0.1.0 on
  "e excess over min" = function(W, H) excess_rule(W, H, 0),
  # (e') above the factor's 10% quantile
  "e' excess over q10" = function(W, H) excess_rule(W, H, 0.1),
  # (f) the contribution minus the factor's mean contribution
  "f excess over mean" = function(W, H) {
    C <- contribution(W, H)
    pick(C - rowMeans(C))
  },
  # (d) the NMF package's predict(): the largest raw coefficient (not
  # scale-free: it depends on how the fit splits each factor's scale)
  "d raw coef (NMF)" = function(W, H) pick(H)
)

# ---- data ----
data(bladderdata, package = "bladderbatch")
bx <- exprs(bladderEset)
bx <- bx[order(-apply(bx, 1L, stats::var))[1:1000], ]
sets <- list(
  golub = list(X = golub, rank = 3, labels = golub_samples$type),
  "golub log2" = list(X = log2(golub), rank = 3, labels = golub_samples$type),
  leukemia = list(X = leukemia, rank = 2, labels = leukemia_samples$cell_type),
  bladderbatch = list(X = bx, rank = 3, labels = pData(bladderEset)$cancer)
)
seeds <- 1:3

# ---- fits (each a list(W, H), plus brunet's own predict()) ----
args <- commandArgs(trailingOnly = TRUE)
cache <- if (length(args)) args[[1L]] else NULL
fit_all <- function() {
  out <- list()
  for (d in names(sets)) {
    s <- sets[[d]]
    for (m in c("vb", "gibbs", "icm")) {
      for (seed in seeds) {
        set.seed(seed)
        f <- factors(bnmf(s$X, rank = s$rank, method = m))
        out[[length(out) + 1L]] <- list(data = d, method = m, seed = seed,
                                        W = unname(f$W), H = unname(f$H))
      }
    }
    for (seed in seeds) {
      n <- nmf(s$X, s$rank, "brunet", nrun = 5, seed = seed, .options = "-p")
      out[[length(out) + 1L]] <- list(data = d, method = "brunet", seed = seed,
                                      W = unname(basis(n)), H = unname(coef(n)),
                                      own = as.integer(predict(n)))
    }
  }
  out
}
fits <- if (!is.null(cache) && file.exists(cache)) readRDS(cache) else fit_all()
if (!is.null(cache) && !file.exists(cache)) saveRDS(fits, cache)

# ---- the table ----
rows <- lapply(fits, function(f) {
  lab <- sets[[f$data]]$labels
  r <- vapply(rules, function(rule) ari(rule(f$W, f$H), lab), numeric(1))
  if (!is.null(f$own)) r <- c(r, "brunet predict()" = ari(f$own, lab))
  data.frame(data = f$data, method = f$method, seed = f$seed, t(r), check.names = FALSE)
})
res <- do.call(rbind, lapply(rows, function(r) {
  r[setdiff(c(names(rules), "brunet predict()"), names(r))] <- NA_real_
  r
}))
key <- interaction(res$data, res$method, drop = TRUE, lex.order = FALSE)
cols <- c(names(rules), "brunet predict()")
fmt <- function(v) {
  v <- v[!is.na(v)]
  if (!length(v)) return("")
  if (length(unique(round(v, 2))) == 1L) return(sprintf("%.2f", v[1L]))
  sprintf("%.2f (%.2f-%.2f)", mean(v), min(v), max(v))
}
cat(sprintf("Adjusted Rand index against the known groups: mean (range) over %d seeds\n\n",
            length(seeds)))
cat("| data | fit |", paste(cols, collapse = " | "), "|\n")
cat("|---|---|", paste(rep("---", length(cols)), collapse = "|"), "|\n")
for (d in names(sets)) for (m in c("vb", "gibbs", "icm", "brunet")) {
  r <- res[res$data == d & res$method == m, ]
  cat("|", d, "|", m, "|", paste(vapply(cols, function(cl) fmt(r[[cl]]), ""), collapse = " | "),
      "|\n")
}
cat("\nMean over data sets (golub linear and log2 both counted) and fits:\n\n")
cat("| fit |", paste(cols[seq_along(rules)], collapse = " | "), "|\n")
cat("|---|", paste(rep("---", length(rules)), collapse = "|"), "|\n")
for (m in c("vb", "gibbs", "icm", "brunet")) {
  r <- res[res$method == m, ]
  cat("|", m, "|", paste(sprintf("%.2f", colMeans(r[names(rules)])), collapse = " | "), "|\n")
}

cat("\nThe floor of rule (e) at other quantiles of the factor's contributions over the",
    "samples: mean over data sets and fits\n\n")
qs <- c(0, 0.02, 0.05, 0.1, 0.2, 0.25)
fl <- do.call(rbind, lapply(fits, function(f) {
  lab <- sets[[f$data]]$labels
  data.frame(data = f$data, method = f$method,
             t(vapply(qs, function(q) ari(excess_rule(f$W, f$H, q), lab), numeric(1))))
}))
cat("| fit |", paste(sprintf("q = %g", qs), collapse = " | "), "|\n")
cat("|---|", paste(rep("---", length(qs)), collapse = "|"), "|\n")
for (m in c("vb", "gibbs", "icm", "brunet")) {
  r <- fl[fl$method == m, -(1:2)]
  cat("|", m, "|", paste(sprintf("%.2f", colMeans(r)), collapse = " | "), "|\n")
}
for (d in names(sets)) {
  r <- fl[fl$data == d, -(1:2)]
  cat("|", d, "(all fits) |", paste(sprintf("%.2f", colMeans(r)), collapse = " | "), "|\n")
}
# the package's own rule agrees with (e)
stopifnot(all(vapply(fits, function(f) {
  identical(bnmf:::dominant_factor(f$W, f$H), excess_rule(f$W, f$H, 0))
}, logical(1))))
