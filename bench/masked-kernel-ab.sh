#!/usr/bin/env bash
# Two versions of the masked-row kernel (bnmf_cond_sub_gather and
# bnmf_cond_row_sub, src/gauss_cond.c) timed side by side in one process.
#
#   bench/masked-kernel-ab.sh REV_A REV_B [rounds = 31]   (from the package root)
#
# REV_A and REV_B are git revisions; "." is the working tree. Builds
# src/gauss_cond.c of each (with R's headers and C flags, against that
# version's src/), plus bench/kernel-ab/driver.c, renames each version's
# global symbols (A_..., B_...), links both with src/ of REV_A
# and libR, and runs bench/kernel-ab/main.c: 1000 synthetic rows per call,
# the two versions alternated, `rounds` calls each, for ICM and VB at
# K = 20 with 50 and 200 of 1000 entries missing, and K = 50 with 200
# (BNMF_AB_CASES overrides: "K:n:nm ..."). Whole-process pairs
# (bench/sweep-pairs.R) carry the noise of the other parts of a sweep and
# of R's start; here one process sees both versions within milliseconds of
# each other, so a few per cent show. The rest of the sweep (products,
# complete rows) is not in it: confirm a change with sweep-pairs.R. An
# A / A run (bench/masked-kernel-ab.sh HEAD HEAD) shows the machine's noise.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bench/masked-kernel-ab.sh REV_A REV_B [rounds]" >&2
  exit 2
fi
[ -f src/gauss_cond.c ] || { echo "run from the package root" >&2; exit 2; }
rounds=${3:-31}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(pwd)
export_src() { # revision, directory
  mkdir -p "$2"
  if [ "$1" = "." ]; then cp src/*.c src/*.h "$2"/
  else git archive "$1" src | tar -x -C "$tmp" && cp "$tmp"/src/*.c "$tmp"/src/*.h "$2"/ && rm -rf "$tmp"/src
  fi
}
export_src "$1" "$tmp/A"
export_src "$2" "$tmp/B"
log=$tmp/build.log
build() { "$@" >> "$log" 2>&1 || { cat "$log" >&2; exit 1; }; }
CC=$(R CMD config CC)
# OpenMP flags as R builds packages with them (not a `R CMD config` variable)
OMP=$(sed -n 's/^SHLIB_OPENMP_CFLAGS *= *//p' "$(R RHOME)/etc/Makeconf")
CFLAGS="$(R CMD config CFLAGS) $(R CMD config --cppflags) -DNDEBUG -fpic"
for v in A B; do
  build $CC $CFLAGS -I"$tmp/$v" -c "$tmp/$v/gauss_cond.c" -o "$tmp/$v/gc.o"
  build $CC $CFLAGS -I"$tmp/$v" -c "$here/bench/kernel-ab/driver.c" -o "$tmp/$v/driver.o"
  build ld -r "$tmp/$v/gc.o" "$tmp/$v/driver.o" -o "$tmp/$v/both.o"
  nm --defined-only -g "$tmp/$v/both.o" | awk -v p=$v '{print $3" "p"_"$3}' > "$tmp/$v/syms"
  objcopy --redefine-syms="$tmp/$v/syms" "$tmp/$v/both.o" "$tmp/$v/ab.o"
done
# the rest of the package, from REV_A (the kernel calls into it: the
# truncated normal's moments, erfcx)
mkdir -p "$tmp/rest"
for f in "$tmp"/A/*.c; do
  b=$(basename "$f" .c)
  case $b in init) continue ;; esac
  build $CC $CFLAGS $OMP -I"$tmp/A" -c "$f" -o "$tmp/rest/$b.o"
done
build $CC $CFLAGS -o "$tmp/ab" "$here/bench/kernel-ab/main.c" "$tmp/A/ab.o" "$tmp/B/ab.o" \
  "$tmp"/rest/*.o $OMP -L"$(R RHOME)/lib" -lR \
  $(R CMD config LAPACK_LIBS) $(R CMD config BLAS_LIBS) $(R CMD config FLIBS) -lm
echo "## Masked-row kernel, A = $1 ($(git rev-parse --short "${1/#./HEAD}")$([ "$1" = . ] && echo ', working tree')), B = $2 ($(git rev-parse --short "${2/#./HEAD}")$([ "$2" = . ] && echo ', working tree'))"
echo
echo "- $(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'); $rounds rounds of 1000 rows each, A and B alternated"
echo "- us a row (gather and passes), median (range) over rounds; B / A per round"
echo
echo "| rule | K | missing | A, us | B, us | B / A | results |"
echo "|---|---:|---:|---:|---:|---:|---|"
cases=${BNMF_AB_CASES:-"20:1000:50 20:1000:200 50:1000:200"}
for c in $cases; do
  IFS=: read -r K n nm <<< "$c"
  for rule in 1 2; do
    LD_LIBRARY_PATH="$(R RHOME)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/ab" "$K" "$n" "$nm" "$rounds" "$rule"
  done
done
