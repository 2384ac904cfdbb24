#!/bin/bash
# Install test: configure, build and install shardfilter into a fresh prefix
# under <work-dir>, then build a user's project (consumer/) against that
# prefix only, with find_package(shardfilter CONFIG REQUIRED) and with
# pkg-config, run both, and compile every installed header on its own.
# Exits non-zero on any failure.
#
#   tests/install/run.sh <source-dir> <work-dir>
#
# The prefix is the only place shardfilter can come from: shardfilter_DIR
# and PKG_CONFIG_PATH point into it, and the script checks that every
# shardfilter header, CMake file, .pc file and shared library the consumers
# used is the prefix's (so a shardfilter installed in /usr, e.g. by the .deb,
# cannot make it pass).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <source-dir> <work-dir>" >&2
  exit 2
fi
src=$(realpath "$1")
mkdir -p "$2"
work=$(realpath "$2")
build=$work/build
prefix=$work/prefix
here=$src/tests/install
jobs=${JOBS:-2}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
fail() { echo "install test: FAIL: $*" >&2; exit 1; }
step() { echo "== install test: $*"; }

rm -rf "$prefix" "$work/consumer-cmake" "$work/consumer-pc" "$work/headers" \
  "$work/run"
mkdir -p "$work/headers" "$work/run"

step "configure, build, install to $prefix"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSHARDFILTER_NATIVE=OFF -DSHARDFILTER_BUILD_TOOLS=ON \
  -DSHARDFILTER_BUILD_TESTS=OFF -DSHARDFILTER_BUILD_BENCHMARKS=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" "${launcher[@]}" >"$work/configure.log" \
  || { cat "$work/configure.log"; fail "configure"; }
nice -n 5 ninja -C "$build" -j"$jobs" >"$work/build.log" \
  || { tail -50 "$work/build.log"; fail "build"; }
cmake --install "$build" >"$work/install.log" \
  || { cat "$work/install.log"; fail "install"; }

cfg=$(dirname "$(find "$prefix" -name shardfilterConfig.cmake -print -quit)")
pcdir=$(dirname "$(find "$prefix" -name shardfilter.pc -print -quit)")
[ -f "$cfg/shardfilterConfigVersion.cmake" ] || fail "no shardfilterConfigVersion.cmake"
[ -f "$pcdir/shardfilter-filters.pc" ] || fail "no shardfilter-filters.pc"
[ -x "$prefix/bin/shardfilter" ] || fail "no bin/shardfilter"
libdir=$(dirname "$(find "$prefix" -name 'libshardfilter.so.*.*.*' -print -quit)")
for lib in libshardfilter libshardfilter_filters; do
  [ -f "$libdir/$lib.a" ] || fail "no $lib.a"
  soname=$(readelf -d "$libdir/$lib.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  if [ -z "$soname" ] || [ ! -e "$libdir/$soname" ]; then
    fail "$lib.so: no SONAME or no link named after it"
  fi
  echo "   $lib.so SONAME $soname"
done
# Only public headers: no persistence/, no engine/internal/.
# (Outputs are captured before grep: under pipefail, grep -q leaving early
# kills the writer with SIGPIPE and the pipeline fails though it matched.)
internal=$(find "$prefix/include" -path '*/persistence/*' -o -path '*/engine/internal/*')
if [ -n "$internal" ]; then
  fail "internal headers installed"
fi

step "every installed header compiles on its own, leaks no xxHash macro"
n=0
while IFS= read -r h; do
  rel=${h#"$prefix/include/"}
  tu=$work/headers/$(echo "$rel" | tr '/.' '__').cc
  printf '#include <%s>\n#if defined(XXH_INLINE_ALL) || defined(XXH_VERSION_MAJOR) || defined(XXH_VECTOR)\n#error "%s leaks xxHash macros"\n#endif\n' \
    "$rel" "$rel" >"$tu"
  echo "$tu"
  n=$((n + 1))
done < <(find "$prefix/include" -name '*.h' | sort) >"$work/headers/list"
xargs -P "$jobs" -I{} c++ -std=c++20 -Wall -Wextra -Werror -I"$prefix/include" \
  -c {} -o /dev/null -MD -MF {}.d <"$work/headers/list" \
  || fail "an installed header does not compile on its own"
# And with clang where it is installed (CI installs it for the fuzz build):
# users build with either, many with -Werror. A g++-only warning group
# named in a header's pragma is an error there (-Wunknown-warning-option).
clang=$(command -v clang++-14 || command -v clang++ || true)
if [ -n "$clang" ]; then
  xargs -P "$jobs" -I{} "$clang" -std=c++20 -Wall -Wextra -Werror \
    -I"$prefix/include" -c {} -o /dev/null <"$work/headers/list" \
    || fail "an installed header does not compile on its own with $clang"
  echo "   also with $clang"
else
  echo "   no clang++: compiled with c++ only"
fi
# Every shardfilter header they pulled in is the prefix's.
deps=$(cat "$work"/headers/*.d | tr ' \\' '\n\n')
outside=$(grep 'shardfilter/' <<<"$deps" | grep -v "^$prefix/" || true)
if [ -n "$outside" ]; then
  echo "$outside"
  fail "a header came from outside the prefix"
fi
echo "   $(wc -l <"$work/headers/list") headers"

step "consumer with find_package(shardfilter CONFIG REQUIRED)"
cmake -S "$here/consumer" -B "$work/consumer-cmake" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -Dshardfilter_DIR="$cfg" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "${launcher[@]}" \
  >"$work/consumer-cmake.log" || { cat "$work/consumer-cmake.log"; fail "consumer configure"; }
grep -q "from $cfg" "$work/consumer-cmake.log" || fail "find_package found another shardfilter"
ninja -C "$work/consumer-cmake" -j"$jobs" >/dev/null || fail "consumer build"
for exe in consumer consumer_static; do
  libs=$(ldd "$work/consumer-cmake/$exe")
  outside=$(grep 'libshardfilter' <<<"$libs" | grep -v "$libdir/" || true)
  if [ -n "$outside" ]; then
    echo "$libs"
    fail "$exe loads a libshardfilter from outside the prefix"
  fi
done
libs=$(ldd "$work/consumer-cmake/consumer")
grep -q "$libdir/libshardfilter.so" <<<"$libs" \
  || { echo "$libs"; fail "consumer does not use the shared library"; }
libs=$(ldd "$work/consumer-cmake/consumer_filters")
if grep -q 'rocksdb\|tbb' <<<"$libs"; then
  fail "consumer_filters (shardfilter::filters) links RocksDB or oneTBB"
fi
"$work/consumer-cmake/consumer" "$(mktemp -d "$work/run/cmake.XXXX")" || fail "consumer run"
"$work/consumer-cmake/consumer_static" "$(mktemp -d "$work/run/static.XXXX")" || fail "consumer_static run"
"$work/consumer-cmake/consumer_filters" || fail "consumer_filters run"

step "consumer with pkg-config"
export PKG_CONFIG_PATH=$pcdir
[ "$(pkg-config --variable=prefix shardfilter)" = "$prefix" ] || fail "pkg-config found another shardfilter"
mkdir -p "$work/consumer-pc"
# shellcheck disable=SC2046
c++ -std=c++20 -O2 -o "$work/consumer-pc/consumer" "$here/consumer/main.cc" \
  $(pkg-config --cflags --libs shardfilter) \
  -Wl,-rpath,"$(pkg-config --variable=libdir shardfilter)" || fail "pkg-config consumer build"
# shellcheck disable=SC2046
c++ -std=c++20 -O2 -o "$work/consumer-pc/consumer_filters" \
  "$here/consumer/filters_main.cc" $(pkg-config --cflags --libs shardfilter-filters) \
  -Wl,-rpath,"$(pkg-config --variable=libdir shardfilter-filters)" || fail "pkg-config filters build"
"$work/consumer-pc/consumer" "$(mktemp -d "$work/run/pc.XXXX")" || fail "pkg-config consumer run"
"$work/consumer-pc/consumer_filters" || fail "pkg-config consumer_filters run"

"$prefix/bin/shardfilter" --version || fail "shardfilter --version"
echo "== install test: PASS"
