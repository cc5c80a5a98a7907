# Park's (2021) section 4.1 simulation, shared by bench/poisson-sim.R and
# bench/dsnmf-defaults.R: one truth (seed 2024; F = T = 300, K = 4, masks on
# W and H) and `n_data` Poisson data sets drawn from it.
park_sim_data <- function(n_data) {
  set.seed(2024)
  Fn <- 300; Tn <- 300; K0 <- 4
  piW <- c(0.3, 0.2, 0.3, 1); piH <- c(0.4, 0.5, 0.45, 1)
  shape <- c(1.6, 1.4, 1.2, 1)
  W0 <- matrix(rgamma(Fn * K0, rep(shape, each = Fn), 1), Fn, K0)
  H0 <- matrix(rgamma(K0 * Tn, shape, 1), K0, Tn)
  SW0 <- matrix(rbinom(Fn * K0, 1, rep(piW, each = Fn)), Fn, K0)
  SH0 <- matrix(rbinom(K0 * Tn, 1, piH), K0, Tn)
  A0 <- W0 * SW0
  B0 <- H0 * SH0
  EX <- A0 %*% B0
  list(Fn = Fn, Tn = Tn, K0 = K0, SW0 = SW0, SH0 = SH0, A0 = A0, B0 = B0, EX = EX,
       data_sets = lapply(seq_len(n_data), function(i) matrix(rpois(Fn * Tn, EX), Fn, Tn)))
}
