#!/usr/bin/env bash
# Installs what aimsweep needs from Debian 12 packages. As root it installs them; otherwise it
# prints the command to run.
# usage: scripts/install-deps.sh [run|test]
#   run   to build, run sweeps, query and plot (what scripts/demo.sh needs)
#   test  (default) all of that and what the tests and static checks need: clang tools,
#         Slurm and munge, GNU parallel, iproute2 for the two-node test, Chromium for the
#         report test
set -euo pipefail
RUN=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  libsqlite3-dev sqlite3
  libgsl-dev
  libyaml-dev
  librandom123-dev
  libjansson-dev zlib1g-dev
  python3 python3-numpy python3-scipy python3-matplotlib python3-pandas
)
TEST=(
  clang clang-tidy clang-format
  parallel
  slurm-wlm munge bc man-db chromium
  iproute2 util-linux procps
)
case "${1:-test}" in
  run) PACKAGES=("${RUN[@]}") ;;
  test) PACKAGES=("${RUN[@]}" "${TEST[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [run|test]" >&2; exit 2 ;;
esac
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "aimsweep needs these Debian packages; as root run:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
