#!/usr/bin/env bash
# Installs what bnmf, its tests, vignettes and R CMD check need, from Debian's
# prebuilt r-cran-* packages (fast). Run as root on Debian/Ubuntu.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(
  r-cran-cli r-cran-clue r-cran-future r-cran-future.apply r-cran-matrix
  r-cran-testthat r-cran-withr r-cran-coda r-cran-posterior
  r-cran-knitr r-cran-rmarkdown r-cran-quadprog pandoc qpdf
  valgrind
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
