#!/usr/bin/env bash
# The memory-safety checks of bnmf, in order of cost:
#   1. tools/check-protect.R     PROTECT lint of src/*.c (and its self-test)
#   2. tools/check-sanitizers.sh ASan + UBSan build, every .Call routine
#   3. tools/check-valgrind.sh   valgrind memcheck, every .Call routine
# and tools/check-clones.sh: the AVX2 clones (masked-row kernels, Gibbs's latent
# entries and running moments) give the same bits as the default build.
# .ci/run runs all four.
# Usage (from anywhere): bash tools/check-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
Rscript tools/check-protect.R --self-test >/dev/null
Rscript tools/check-protect.R
bash tools/check-sanitizers.sh | tail -n 3
bash tools/check-valgrind.sh | tail -n 4
bash tools/check-clones.sh
