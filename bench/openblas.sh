#!/usr/bin/env bash
# Run a command under OpenBLAS (one thread) without changing the machine's BLAS.
#
#   bench/openblas.sh Rscript bench/bench-sweep.R
#
# R on Debian/Ubuntu loads the BLAS through libblas.so.3. This script fetches
# Debian's libopenblas0-pthread package once (`apt-get download`, no install,
# no root needed), unpacks it with `dpkg -x` into a cache directory
# (BNMF_OPENBLAS_DIR, default ~/.cache/bnmf-openblas) and runs the command
# with R_LD_LIBRARY_PATH pointing there first, so R's own start-up script puts
# OpenBLAS's libblas.so.3 and liblapack.so.3 ahead of the system ones.
# OPENBLAS_NUM_THREADS defaults to 1 (set it to compare threads). Every bench
# script prints extSoftVersion()["BLAS"], so each table says what it measured.
set -euo pipefail
dir=${BNMF_OPENBLAS_DIR:-$HOME/.cache/bnmf-openblas}
lib=$dir/root/usr/lib/x86_64-linux-gnu/openblas-pthread
if [ ! -e "$lib/libblas.so.3" ]; then
  mkdir -p "$dir"
  # on a fresh machine apt may have no package lists yet: read them (root
  # only) and try once more
  (cd "$dir" && apt-get download libopenblas0-pthread >/dev/null 2>&1) ||
    { [ "$(id -u)" = "0" ] && apt-get update -qq >/dev/null 2>&1 &&
      (cd "$dir" && apt-get download libopenblas0-pthread >/dev/null 2>&1); } || {
    echo "openblas.sh: could not download libopenblas0-pthread with apt-get" >&2
    exit 1
  }
  for deb in "$dir"/libopenblas0-pthread_*.deb; do dpkg -x "$deb" "$dir/root"; done
fi
export R_LD_LIBRARY_PATH="$lib${R_LD_LIBRARY_PATH:+:$R_LD_LIBRARY_PATH}"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec "$@"
