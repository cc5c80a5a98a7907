#!/usr/bin/env bash
# Builds bnmf with AddressSanitizer and UndefinedBehaviorSanitizer
# (-fsanitize=address,undefined -fno-omit-frame-pointer) into a temporary
# library, through a private R_MAKEVARS_USER file (the user's ~/.R/Makevars is
# not touched), and runs tools/memcheck-calls.R (every .Call routine: fuzzing
# cases and small fits of every code path) with the sanitizer runtime
# preloaded. Debian's R is not built with sanitizers: preloading libasan and
# ASAN_OPTIONS=detect_leaks=0 (R's own allocations at exit are not leaks of
# the package) make it work for package code. Passes with zero reports.
# Usage (from anywhere): bash tools/check-sanitizers.sh   (~1 minute)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cc=$(R CMD config CC)
libasan=$($cc -print-file-name=libasan.so)
[ -e "$libasan" ] || { echo "libasan not found (install the gcc sanitizer runtime)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib"
cat >"$work/Makevars" <<'MK'
CFLAGS = -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS = -fsanitize=address,undefined
MK
# Build from a clean copy of the sources, so that no object file is shared
# with (or left behind in) the working tree.
mkdir -p "$work/pkg"
(cd "$root" && tar --exclude=.git --exclude='src/*.o' --exclude='src/*.so' -cf - .) |
  tar -xf - -C "$work/pkg"
R_MAKEVARS_USER="$work/Makevars" R CMD INSTALL --preclean --no-test-load -l "$work/lib" "$work/pkg" \
  >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
grep -q "fsanitize=address" "$work/install.log" ||
  { echo "the sanitizer flags were not used:" >&2; cat "$work/install.log" >&2; exit 1; }
cd "$root"
status=0
# allocator_may_return_null: a request too large to allocate must come back as
# R's "cannot allocate" error (the fuzzing cases make such requests).
LD_PRELOAD="$libasan" \
ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:abort_on_error=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
R_LIBS="$work/lib" R --vanilla --no-echo -f tools/memcheck-calls.R \
  >"$work/run.log" 2>&1 || status=$?
cat "$work/run.log"
if [ "$status" -ne 0 ] || grep -qE "ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer" "$work/run.log"; then
  echo "sanitizers: FAILED (exit status $status)" >&2
  exit 1
fi
echo "sanitizers: OK (no AddressSanitizer or UndefinedBehaviorSanitizer report)"
