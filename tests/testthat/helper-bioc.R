# Fits that stop at `iter` on purpose (short runs in tests) warn with class
# bnmf_warning_convergence; muffle only that warning.
muffle_convergence <- function(expr) {
  withCallingHandlers(expr, bnmf_warning_convergence = function(w) invokeRestart("muffleWarning"))
}
