#!/bin/bash
# Package test: build the Debian package from a portable tree
# (SHARDFILTER_NATIVE=OFF, installed under /usr), check its contents and
# dependencies, install it with apt-get, use the CLI on a temporary store,
# check the systemd unit, exercise the server and the Redis module when the
# package has them, then remove and purge it and check that
# /var/lib/shardfilter (the users' data) is still there.
#
#   tests/package/run.sh <source-dir> <work-dir>
#
# Needs root (or sudo) for apt-get, and an apt that can resolve the
# package's dependencies (librocksdb7.8, libtbb12, libxxhash0, adduser).
# Exits non-zero on any failure. The .deb is left in <work-dir>/build.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <source-dir> <work-dir>" >&2
  exit 2
fi
src=$(realpath "$1")
mkdir -p "$2"
work=$(realpath "$2")
build=$work/build
jobs=${JOBS:-2}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
fail() { echo "package test: FAIL: $*" >&2; exit 1; }
step() { echo "== package test: $*"; }
skip() { echo "== package test: SKIP: $*"; }
as_root=()
if [ "$(id -u)" -ne 0 ]; then as_root=(sudo); fi
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

step "configure, build, cpack -G DEB"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSHARDFILTER_NATIVE=OFF -DCMAKE_INSTALL_PREFIX=/usr \
  -DSHARDFILTER_BUILD_TOOLS=ON -DSHARDFILTER_BUILD_TESTS=OFF \
  -DSHARDFILTER_BUILD_BENCHMARKS=OFF "${launcher[@]}" >"$work/configure.log" \
  || { cat "$work/configure.log"; fail "configure"; }
nice -n 5 ninja -C "$build" -j"$jobs" >"$work/build.log" \
  || { tail -50 "$work/build.log"; fail "build"; }
rm -f "$build"/shardfilter_*.deb
(cd "$build" && cpack -G DEB >"$work/cpack.log" 2>&1) \
  || { cat "$work/cpack.log"; fail "cpack"; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
deb=$build/shardfilter_${version}_amd64.deb
[ -f "$deb" ] || { ls "$build"; fail "no $deb"; }
echo "   $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

step "contents and control fields"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
for f in /usr/bin/shardfilter \
  /usr/include/shardfilter/engine/database.h \
  /usr/include/shardfilter/filters/bloom_filter.h \
  /usr/include/shardfilter/filters/detail/xxh3_short.h \
  /usr/lib/x86_64-linux-gnu/libshardfilter.a \
  /usr/lib/x86_64-linux-gnu/libshardfilter_filters.a \
  /usr/lib/x86_64-linux-gnu/libshardfilter.so \
  /usr/lib/x86_64-linux-gnu/cmake/shardfilter/shardfilterConfig.cmake \
  /usr/lib/x86_64-linux-gnu/cmake/shardfilter/shardfilterConfigVersion.cmake \
  /usr/lib/x86_64-linux-gnu/pkgconfig/shardfilter.pc \
  /usr/lib/x86_64-linux-gnu/pkgconfig/shardfilter-filters.pc; do
  grep -qx "$f" "$work/contents" || fail "$f missing from the package"
done
grep -q '^/usr/lib/x86_64-linux-gnu/libshardfilter.so.[0-9.]*$' "$work/contents" \
  || fail "no versioned libshardfilter.so"
if grep -q '/persistence/\|/engine/internal/' "$work/contents"; then
  fail "internal headers in the package"
fi
depends=$(dpkg-deb -f "$deb" Depends)
echo "   Depends: $depends"
for d in librocksdb libtbb libxxhash adduser; do
  [[ $depends == *"$d"* ]] || fail "Depends lacks $d"
done
# The CLI runs on a baseline x86-64 (the packaged build is portable): AVX
# registers only in the kernels that are called once CPUID says the CPU
# has AVX2 (filters/detail/split_block.h: names ending in Avx2), and
# AVX-512 ones only in those called once it says it has AVX-512
# (filters/counting_bloom_filter.cc: names ending in Avx512). (Captured
# first: grep -q leaving early would SIGPIPE objdump, and under pipefail
# the check would pass without looking.)
objdump -d --no-show-raw-insn -C "$build/tools/shardfilter" \
  "$build"/libshardfilter*.so.*.*.* >"$work/disasm.txt" || fail "objdump"
awk '/^[0-9a-f]+ <.*>:$/ { fn = $0; next }
     /%zmm/ && fn !~ /Avx512\(/ { print fn; exit }' "$work/disasm.txt" \
  >"$work/avx512_outside.txt"
if [ -s "$work/avx512_outside.txt" ]; then
  fail "AVX-512 registers outside the CPUID-dispatched kernels: $(cat "$work/avx512_outside.txt") (SHARDFILTER_NATIVE leaked?)"
fi
awk '/^[0-9a-f]+ <.*>:$/ { fn = $0; next }
     /%ymm/ && fn !~ /Avx2\(|Avx512\(/ { print fn; exit }' "$work/disasm.txt" \
  >"$work/avx_outside.txt"
if [ -s "$work/avx_outside.txt" ]; then
  fail "AVX registers outside the CPUID-dispatched kernels: $(cat "$work/avx_outside.txt") (SHARDFILTER_NATIVE leaked?)"
fi
grep -c '%ymm' "$work/disasm.txt" >"$work/avx_count.txt" || true
if [ "$(cat "$work/avx_count.txt")" = 0 ]; then
  fail "no AVX2 kernel in the library (the dispatched split-block kernels are missing)"
fi
rm -f "$work/disasm.txt" "$work/avx_outside.txt" "$work/avx_count.txt"
has_server=0
has_module=0
grep -qx /usr/bin/shardfilter-server "$work/contents" && has_server=1
grep -q '^/usr/lib/redis/modules/.*\.so$' "$work/contents" && has_module=1

step "systemd unit (syntax, with a stand-in ExecStart)"
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$work/unit"
  sed -e 's|^ExecStart=.*|ExecStart=/bin/true|' \
    -e 's|^EnvironmentFile=|EnvironmentFile=-|' \
    "$src/packaging/shardfilter-server.service" \
    >"$work/unit/shardfilter-server.service"
  # It exits 0 on unknown keys and bad values, printing "FILE:LINE: ...":
  # any such line fails the test.
  systemd-analyze verify "$work/unit/shardfilter-server.service" \
    >"$work/unit/verify.log" 2>&1 || { cat "$work/unit/verify.log"; fail "systemd-analyze verify"; }
  if grep -q 'shardfilter-server.service:[0-9]*:' "$work/unit/verify.log"; then
    cat "$work/unit/verify.log"
    fail "systemd-analyze verify: the unit has errors"
  fi
  echo "   systemd-analyze verify: clean"
else
  skip "systemd-analyze not available"
fi

step "apt-get install ./$(basename "$deb")"
(cd "$build" && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y "./$(basename "$deb")") >"$work/apt-install.log" 2>&1 \
  || { cat "$work/apt-install.log"; fail "apt-get install"; }
[ "$(command -v shardfilter)" = /usr/bin/shardfilter ] || fail "shardfilter not on PATH"
out=$(shardfilter --version)
[ "$out" = "shardfilter $version" ] || fail "--version says '$out'"
echo "   $out"
getent passwd shardfilter >/dev/null || fail "no shardfilter user"
[ -d /var/lib/shardfilter ] || fail "no /var/lib/shardfilter"
[ "$(stat -c %U /var/lib/shardfilter)" = shardfilter ] || fail "/var/lib/shardfilter not owned by shardfilter"

step "CLI on a temporary store"
store=$(mktemp -d "$work/store.XXXX")
shardfilter create users --type bloom --capacity 1000 --fpp 0.01 --db "$store" >/dev/null
shardfilter add users alice bob --db "$store" >/dev/null
[ "$(shardfilter exists users alice --db "$store")" = 1 ] || fail "exists alice"
echo "   create + add + exists ok"
# Data the package must never delete: the server's store (it owns
# /var/lib/shardfilter itself, so nothing else may be put there first: a
# non-empty directory that is not a store is refused), or without a server
# a CLI store below it.
if [ -n "$(ls -A /var/lib/shardfilter)" ]; then
  fail "/var/lib/shardfilter is not empty before the test: $(ls -A /var/lib/shardfilter | tr '\n' ' ')"
fi
kept=/var/lib/shardfilter/CURRENT

if [ "$has_server" = 1 ]; then
  step "server: unit verify, start with the unit's command line, redis-cli"
  unit=/usr/lib/systemd/system/shardfilter-server.service
  [ -f "$unit" ] || unit=/lib/systemd/system/shardfilter-server.service
  [ -f "$unit" ] || fail "no shardfilter-server.service"
  [ -f /etc/shardfilter/server.conf ] || fail "no /etc/shardfilter/server.conf"
  if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify "$unit" >"$work/unit-installed.log" 2>&1 || true
    if grep -q 'shardfilter-server.service:[0-9]*:' "$work/unit-installed.log"; then
      cat "$work/unit-installed.log"
      fail "systemd-analyze verify $unit"
    fi
  fi
  if [ -d /run/systemd/system ]; then
    "${as_root[@]}" systemctl restart shardfilter-server.service
  else
    # No systemd (a container): the unit's ExecStart, as its user.
    # shellcheck disable=SC1091
    . /etc/shardfilter/server.conf
    # shellcheck disable=SC2086
    "${as_root[@]}" runuser -u shardfilter -- /usr/bin/shardfilter-server \
      $SHARDFILTER_SERVER_ARGS >"$work/server.log" 2>&1 &
    pids+=($!)
  fi
  port=$(sed -n 's/.*--port \([0-9]*\).*/\1/p' /etc/shardfilter/server.conf)
  [ -n "$port" ] || port=6379
  for _ in $(seq 50); do
    [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break
    sleep 0.2
  done
  [ "$(redis-cli -p "$port" PING)" = PONG ] || { cat "$work/server.log" || true; fail "server PING"; }
  redis-cli -p "$port" BF.ADD pkgtest alice >/dev/null || fail "BF.ADD"
  [ "$(redis-cli -p "$port" BF.EXISTS pkgtest alice)" = 1 ] || fail "BF.EXISTS"
  echo "   PING, BF.ADD, BF.EXISTS ok on port $port"
  if [ -d /run/systemd/system ]; then
    "${as_root[@]}" systemctl stop shardfilter-server.service
  else
    redis-cli -p "$port" SHUTDOWN >/dev/null 2>&1 || true  # checkpoint, exit 0
    wait "${pids[-1]}" || fail "server exit status $? after SHUTDOWN"
  fi
else
  kept=/var/lib/shardfilter/package-test/CURRENT
  "${as_root[@]}" runuser -u shardfilter -- shardfilter create kept --type bloom \
    --capacity 100 --fpp 0.01 --db /var/lib/shardfilter/package-test >/dev/null
  "${as_root[@]}" runuser -u shardfilter -- shardfilter add kept alice \
    --db /var/lib/shardfilter/package-test >/dev/null
  skip "no shardfilter-server in this package (target not built): server and unit-on-disk checks"
fi

if [ "$has_module" = 1 ]; then
  step "module: redis-server --loadmodule"
  module=$(grep -m1 '^/usr/lib/redis/modules/.*\.so$' "$work/contents")
  mport=6391
  redis-server --port "$mport" --save '' --appendonly no \
    --loadmodule "$module" >"$work/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do
    [ "$(redis-cli -p "$mport" PING 2>/dev/null)" = PONG ] && break
    sleep 0.2
  done
  redis-cli -p "$mport" BF.ADD pkgtest alice >/dev/null || { cat "$work/redis.log"; fail "module BF.ADD"; }
  [ "$(redis-cli -p "$mport" BF.EXISTS pkgtest alice)" = 1 ] || fail "module BF.EXISTS"
  redis-cli -p "$mport" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  echo "   $module loaded; BF.ADD, BF.EXISTS ok"
else
  skip "no Redis module in this package (target not built)"
fi

step "apt-get remove, then purge: /var/lib/shardfilter stays"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get remove -y shardfilter \
  >"$work/apt-remove.log" 2>&1 || { cat "$work/apt-remove.log"; fail "apt-get remove"; }
[ ! -e /usr/bin/shardfilter ] || fail "/usr/bin/shardfilter still there after remove"
[ -f "$kept" ] || fail "remove deleted $kept"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get purge -y shardfilter \
  >"$work/apt-purge.log" 2>&1 || { cat "$work/apt-purge.log"; fail "apt-get purge"; }
[ -f "$kept" ] || fail "purge deleted $kept"
echo "   /var/lib/shardfilter kept: $(ls /var/lib/shardfilter | tr '\n' ' ')"
# Leave the machine as found, apart from the kept data directory and user.
# (it was empty when the test began).
"${as_root[@]}" find /var/lib/shardfilter -mindepth 1 -delete
echo "== package test: PASS"
