# The toy data of Laurberg et al. (2008) as Masood and Doshi-Velez use it
# (section 5.1): a rank-3 matrix with exactly two NMFs, embedded in a larger
# matrix. In the plane z = 1 of R^3 the cone of the rows (the orthant of the
# factorisation) cuts a regular hexagon O (vertices o_1..o_6 at radius 1);
# its edges are the rows of A (A p >= 0 iff p in cone(O)). The data columns
# are the vertices of the inner hexagon of the star of David (the
# intersection of the triangles o_1 o_3 o_5 and o_2 o_4 o_6). An NMF X = W H
# with W = A T, H = T^-1 P needs the triangle T between the inner hexagon and
# O: exactly the two triangles T1 = (o_1, o_3, o_5) and T2 = (o_2, o_4, o_6).
# Rows and columns are embedded by non-negative mixtures B (n x 6) and
# C (6 x n) holding the identity (so the facets and the vertices stay), then
# Uniform(-noise, noise) noise is added (the entries stay positive).
laurberg_toy <- function(n = 60, noise = 0.01) {
  ang <- (0:5) * pi / 3
  O <- rbind(cos(ang), sin(ang), 1)                    # outer hexagon, 3 x 6
  # Edge i joins o_i and o_{i+1}: a_i(p) = 1 - (n_i . (x, y)) / cos(30 deg).
  nrm <- rbind(cos(ang + pi / 6), sin(ang + pi / 6))
  A <- cbind(-t(nrm) / cos(pi / 6), 1)                # 6 x 3, rows >= 0 on cone(O)
  r_in <- 0.5 / cos(pi / 6)                           # inner hexagon: circumradius 1/sqrt(3)
  P <- rbind(r_in * cos(ang + pi / 6), r_in * sin(ang + pi / 6), 1)
  X0 <- A %*% P
  mix <- function(k) {
    M <- matrix(stats::rexp(6 * (k - 6)), k - 6, 6)
    M <- M * (matrix(stats::runif(6 * (k - 6)), k - 6, 6) < 0.5)
    M[rowSums(M) == 0, 1] <- 1
    rbind(diag(6), M / rowSums(M))
  }
  B <- mix(n)
  C <- t(mix(n))
  T1 <- O[, c(1, 3, 5)]
  T2 <- O[, c(2, 4, 6)]
  sol <- function(T) list(W = pmax(B %*% A %*% T, 0), H = pmax(solve(T, P) %*% C, 0))
  X <- B %*% X0 %*% C
  X <- X + matrix(stats::runif(length(X), -noise, noise), nrow(X))
  list(X = pmax(X, 0), solutions = list(sol(T1), sol(T2)))
}
