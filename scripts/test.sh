#!/usr/bin/env bash
# Sets up (Debian packages), builds with warnings as errors and runs every test; then builds
# with AddressSanitizer and UBSan and runs the unit tests again; then the static checks
# (scripts/lint.sh: a clang -Werror build and clang-tidy).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DAIMSWEEP_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DAIMSWEEP_WERROR=ON -DAIMSWEEP_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit -LE slow
bash scripts/lint.sh
