#!/usr/bin/env bash
# Static checks: a clang build with -Werror of everything (build-clang/, which also writes the
# compile_commands.json), then clang-tidy with the checks of .clang-tidy over the sources of
# src/, and clang-format --dry-run over every tracked C file. Exits nonzero on any warning or
# finding. scripts/test.sh runs it.
# usage: scripts/lint.sh [FILE.c...]   (default: every .c under src/ but LINT_SKIP)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
LINT_SKIP=${LINT_SKIP-} # a path prefix under src/ to leave out of the default file list
CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DAIMSWEEP_WERROR=ON \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
grep -q 'CMAKE_C_COMPILER:FILEPATH=.*clang' build-clang/CMakeCache.txt || {
    echo "lint: build-clang/ was configured with another compiler; remove it" >&2
    exit 1
}
cmake --build build-clang -j"$jobs"
if [ $# -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(find src -name '*.c' | sort | { if [ -n "$LINT_SKIP" ]; then grep -v "^$LINT_SKIP"; else cat; fi; })
fi
# The layout: every tracked C file as .clang-format writes it.
mapfile -t cfiles < <(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests -name '*.[ch]')
if ! clang-format --dry-run --Werror "${cfiles[@]}" 2>/dev/null; then
    echo "lint: these files differ from .clang-format's layout (run clang-format -i on them):" >&2
    for f in "${cfiles[@]}"; do
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "  $f" >&2
    done
    exit 1
fi
echo "lint: clang-format clean over ${#cfiles[@]} files"
echo "lint: clang-tidy over ${#files[@]} files"
printf '%s\n' "${files[@]}" | xargs -P"$jobs" -n4 clang-tidy -p build-clang --quiet 2> >(grep -v "warnings generated" >&2)
echo "lint: clean"
