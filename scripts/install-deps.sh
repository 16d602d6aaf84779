#!/usr/bin/env bash
# Installs what aimsweep needs to build, test and run, from Debian 12 packages.
# As root it installs them; otherwise it prints the command to run.
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config git
  clang clang-tidy clang-format
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  libsqlite3-dev sqlite3
  libgsl-dev
  libyaml-dev
  librandom123-dev
  parallel
  python3 python3-numpy python3-scipy python3-matplotlib
  chromium
  slurm-wlm munge bc
)
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
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
