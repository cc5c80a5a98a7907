library(testthat)
library(bnmf)

test_check("bnmf")
