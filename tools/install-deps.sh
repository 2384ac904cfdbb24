#!/usr/bin/env bash
# Installs, with apt-get, only the Debian 12 packages this project needs that
# are missing. Needs root (or sudo) only when something is missing.
set -euo pipefail
#   build:    compilers, CMake, Ninja, the libraries;
#   test:     clang 14 with its sanitizer and libFuzzer runtimes (the clang
#             tree), Redis (the module's host, redis-cli, redis-benchmark),
#             redis-py, dpkg-dev/adduser/systemd (the package test),
#             valgrind (instructions per call, bench/instructions.sh);
#   clients:  Node.js and npm when no node is on the PATH (the Node.js client
#             suite installs node-redis and ioredis from the npm registry).
pkgs=(build-essential cmake pkg-config ninja-build librocksdb-dev libtbb-dev
      libxxhash-dev libgtest-dev libgmock-dev libbenchmark-dev gnuplot-nox
      clang-14 libclang-rt-14-dev llvm-14 redis-server redis-tools python3-redis
      dpkg-dev adduser systemd binutils valgrind)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  pkgs+=(nodejs npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
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
