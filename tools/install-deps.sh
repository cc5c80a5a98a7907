#!/usr/bin/env bash
# Installs what bnmf, its tests, vignettes and R CMD check need.
# Where apt exists (Debian/Ubuntu, run as root): Debian's prebuilt r-cran-* and
# r-bioc-* packages (fast). Anywhere else (macOS, Windows with Rtools' bash,
# other Linux): tools/install-deps.R, which installs the missing packages from
# CRAN and the suggested Bioconductor packages from Bioconductor when reachable.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  exec Rscript "$here/install-deps.R"
fi
export DEBIAN_FRONTEND=noninteractive
pkgs=(
  r-cran-cli r-cran-clue r-cran-future r-cran-future.apply r-cran-generics r-cran-matrix
  r-cran-testthat r-cran-withr r-cran-coda r-cran-posterior
  r-cran-knitr r-cran-rmarkdown r-cran-quadprog r-cran-cluster pandoc qpdf
  valgrind
  r-cran-nmf r-bioc-biobase r-bioc-summarizedexperiment
  r-bioc-singlecellexperiment r-bioc-delayedarray r-bioc-s4vectors
  r-bioc-rhdf5 r-bioc-hdf5array
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
