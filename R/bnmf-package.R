#' bnmf: Bayesian non-negative matrix factorisation
#'
#' The posterior over non-negative factorisations `X ~ W H`: uncertainty on
#' every entry, exact samplers with a C core, and the posterior mode. Start
#' with [bnmf()] and `vignette("bnmf")`.
#'
#' @keywords internal
#' @docType package
#' @name bnmf-package
#' @useDynLib bnmf, .registration = TRUE, .fixes = "C_"
#' @importClassesFrom Matrix dgCMatrix
#' @importFrom stats coef fitted predict residuals logLik sigma nobs update
NULL
