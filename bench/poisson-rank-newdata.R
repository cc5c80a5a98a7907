# Counts from known signatures (not the bundled ones): the rank chosen by
# cross-validation, the evidence (the ELBO of VB fits, Chib's estimate of
# Gibbs fits, 2000 samples a block) and BIC over 2:7, the signatures'
# cosine to the truth and the exposures of held-out samples
# (predict(newdata)) against theirs, for Poisson VB and Gibbs.
#   R_LIBS=<lib> Rscript bench/poisson-rank-newdata.R
suppressPackageStartupMessages(library(bnmf))
set.seed(7)
I <- 96; J <- 60; Jn <- 20; K <- 4
W <- matrix(rgamma(I * K, 0.3, 1), I, K)
W <- sweep(W, 2, colSums(W), "/")
H <- matrix(rgamma(K * (J + Jn), 1, 1 / 300), K, J + Jn)
X <- matrix(rpois(I * (J + Jn), W %*% H), I, J + Jn,
            dimnames = list(paste0("type", 1:I), paste0("s", 1:(J + Jn))))
train <- X[, 1:J]
new <- X[, J + 1:Jn]
cosine <- function(a, b) sum(a * b) / sqrt(sum(a^2) * sum(b^2))
cat("| fit | criterion | chosen rank |\n|---|---|---|\n")
for (m in c("vb", "gibbs")) {
  for (crit in if (m == "vb") c("cv", "evidence", "bic") else c("cv", "evidence")) {
    set.seed(1)
    extra <- if (m == "gibbs" && crit == "evidence") list(samples = 2000) else list()
    r <- suppressWarnings(do.call(select_rank, c(list(train, ranks = 2:7, criterion = crit,
                                      likelihood = "poisson", method = m, iter = 400), extra)))
    cat(sprintf("| %s | %s | %d |\n", m, crit, best(r)))
  }
}
cat("\n| fit | signature cosine (min, mean) | new exposures cosine (min, median) | exposure interval coverage |\n|---|---|---|---|\n")
for (m in c("vb", "gibbs")) {
  set.seed(2)
  fit <- suppressWarnings(bnmf(train, rank = K, likelihood = "poisson", method = m,
                               iter = if (m == "gibbs") 2000 else 1000))
  p <- bnmf:::match_factors(W, unname(fit$W))
  What <- fit$W[, p]
  sig <- vapply(1:K, function(k) cosine(W[, k], What[, k]), numeric(1))
  pr <- predict(fit, newdata = new, type = "coef", se.fit = TRUE)
  # exposures on the scale of signatures that sum to one, as the truth's
  sc <- colSums(fit$W)[p]
  E <- pr$fit[p, ] * sc
  S <- pr$se.fit[p, ] * sc
  Ht <- H[, J + 1:Jn]
  expo <- vapply(1:Jn, function(j) cosine(Ht[, j], E[, j]), numeric(1))
  cover <- mean(abs(E - Ht) <= 2 * S)
  cat(sprintf("| %s | %.3f, %.3f | %.3f, %.3f | %.2f |\n", m, min(sig), mean(sig), min(expo),
              stats::median(expo), cover))
}
