#!/usr/bin/env bash
# Memory check under valgrind: installs bnmf into a temporary library and runs
# tools/memcheck-calls.R (every .Call routine: fuzzing cases and small fits of
# every code path) under
#   R -d "valgrind --leak-check=full --error-exitcode=1"
# Passes with zero valgrind errors and no definitely lost blocks. R itself
# keeps "possibly lost" and "still reachable" blocks at exit; only definite
# leaks count.
# Usage (from anywhere): bash tools/check-valgrind.sh   (~2-4 minutes)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib"
# Build from a clean copy of the sources, so that no object file is shared
# with (or left behind in) the working tree.
mkdir -p "$work/pkg"
(cd "$root" && tar --exclude=.git --exclude='src/*.o' --exclude='src/*.so' -cf - .) |
  tar -xf - -C "$work/pkg"
R CMD INSTALL --no-test-load -l "$work/lib" "$work/pkg" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
log="$work/valgrind.log"
cd "$root"
status=0
R_LIBS="$work/lib" R --vanilla --no-echo \
  -d "valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 --track-origins=yes --log-file=$log" \
  -f tools/memcheck-calls.R || status=$?
cat "$log" | grep -E "ERROR SUMMARY|definitely lost|indirectly lost|Invalid|uninitialised|bnmf" | head -n 40 || true
if [ "$status" -ne 0 ]; then
  echo "valgrind: FAILED (exit status $status); full log:" >&2
  cat "$log" >&2
  exit 1
fi
if ! grep -q "ERROR SUMMARY: 0 errors" "$log"; then
  echo "valgrind: errors reported" >&2; cat "$log" >&2; exit 1
fi
if grep -E "definitely lost: [1-9]" "$log" >/dev/null; then
  echo "valgrind: definitely lost blocks" >&2; cat "$log" >&2; exit 1
fi
echo "valgrind: OK (0 errors, no definitely lost blocks)"
