# update() of fits that cannot be continued (update.bnmf, which continues the
# Gibbs, ICM, VB and NP fits, is in R/fit.R beside the fit's constructor).

#' @export
update.bnmf_particles <- function(object, ...) {
  abort_input("`update()` does not apply to a particle fit: fit again with more `particles`.")
}

#' @export
update.bnmf_hmc <- function(object, ...) {
  abort_input("`update()` does not apply to an HMC fit: fit again with a larger `iter`.")
}

# ---- the Poisson model (likelihood = "poisson") -----------------------------

#' @export
update.bnmf_poisson <- function(object, ...) {
  abort_input("`update()` does not apply to a Poisson fit yet: fit again with a larger `iter`.")
}
