#!/usr/bin/env bash
# Installs, with apt-get, only the Debian 12 packages this project needs that
# are missing. Needs root (or sudo) only when something is missing.
set -euo pipefail
pkgs=(build-essential cmake pkg-config librocksdb-dev libtbb-dev libxxhash-dev
      libgtest-dev libgmock-dev libbenchmark-dev gnuplot-nox ninja-build)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
