#!/usr/bin/env bash
# Sets up (Debian packages), builds, and runs the small default: one grid point, SGD and flow.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
build/aimsweep single "$@"
