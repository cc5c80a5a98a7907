# Plain-R references of the particle model (SILF likelihood, Dirichlet(1)
# columns of W, exponential H), written for the tests.

silf_plain <- function(y, eps, beta) {
  if (y <= (1 - beta) * eps) 0 else if (y <= (1 + beta) * eps)
    (y - (1 - beta) * eps)^2 / (4 * beta * eps) else y - eps
}

# The objective over the observed (non-NA) entries of X.
objective_plain <- function(X, W, H, objective) {
  X <- as.matrix(X)
  WH <- W %*% H
  o <- !is.na(X)
  X <- X[o]
  WH <- WH[o]
  switch(objective,
         frobenius = sum((X - WH)^2),
         kl = sum(ifelse(X > 0, X * log(X / WH), 0) - X + WH),
         is = sum(X / WH - log(X / WH) - 1))
}

# log p(W, H | X) up to a constant: -C SILF(f) + 0 (Dirichlet(1)) - rate sum(H)
log_post_plain <- function(X, W, H, lik, rate) {
  -lik$C * silf_plain(objective_plain(X, W, H, lik$objective), lik$epsilon, lik$beta) -
    rate * sum(H)
}

