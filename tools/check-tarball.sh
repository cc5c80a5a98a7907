#!/usr/bin/env bash
# R CMD build and R CMD check --as-cran --no-manual of bnmf, from a clean
# copy of the sources in a scratch directory (so that it can run while
# other jobs read the working tree). Prints the check's log; exits 0 only
# when the check's status is OK (no ERROR, WARNING or NOTE).
# Usage (from anywhere): bash tools/check-tarball.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bnmf"
(cd "$root" && tar --exclude=.git --exclude='src/*.o' --exclude='src/*.so' \
   --exclude='bnmf_*.tar.gz' -cf - .) | tar -xf - -C "$work/bnmf"
cd "$work"
echo "== R CMD build (${SECONDS} s into the check)"
R CMD build --no-manual bnmf >build.log 2>&1 || { cat build.log; exit 1; }
tarball=$(ls -t bnmf_*.tar.gz | head -n 1)
# The incoming-feasibility check (a NOTE for every new submission) and the
# network clock lookup need the wider network; everything else runs as on
# CRAN. R CMD check runs the tests as CRAN does, without NOT_CRAN (the
# tests that skip on CRAN run in the suite of .ci/run).
echo "== R CMD check (${SECONDS} s into the check)"
env -u NOT_CRAN _R_CHECK_CRAN_INCOMING_=false _R_CHECK_CRAN_INCOMING_REMOTE_=false \
  _R_CHECK_SYSTEM_CLOCK_=false R CMD check --as-cran --no-manual "$tarball" >check.out 2>&1 || true
echo "== done (${SECONDS} s into the check)"
log=bnmf.Rcheck/00check.log
if [ ! -f "$log" ]; then
  tail -n 40 check.out
  echo "R CMD check did not run (see its output above)" >&2
  exit 1
fi
tail -n 25 "$log"
if grep -qE "^Status: OK" "$log"; then
  echo "R CMD check: OK"
else
  echo "R CMD check did not come out clean (see the log above)" >&2
  grep -nE "(ERROR|WARNING|NOTE)" "$log" >&2 || true
  # the tests' output, when they failed
  for f in bnmf.Rcheck/tests/*.Rout.fail; do [ -f "$f" ] && tail -n 60 "$f" >&2; done
  exit 1
fi
