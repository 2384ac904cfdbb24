#!/usr/bin/env bash
# Builds and runs the whole test suite, as CI does (.ci/run calls this).
# Three trees, each printing its stages' wall times at the end:
#   build-ci/build  gcc Release, portable (baseline x86-64, as packaged):
#                   every ctest label (unit, concurrency, crash, server,
#                   module), the Node.js client suite against the server and
#                   the module, then the install test (a consumer project
#                   built with find_package and pkg-config against a
#                   temporary prefix) and the package test (.deb installed,
#                   service and module started, package removed);
#   build-tsan      gcc ThreadSanitizer: the concurrency tests;
#   build-clang     clang 14, AddressSanitizer + UBSan, assertions on
#                   (no NDEBUG), -Werror=thread-safety: the unit tests, then
#                   every libFuzzer target for a bounded time.
# Every tree uses Ninja, so both cores compile, and ccache when it is
# installed (a no-op on a fresh machine).
# Flags: --quick runs the Release tree's ctest only.
# Environment: SF_FUZZ_SECONDS (per fuzz target, default 15).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # Paths under the checkout's parent are hashed relative to the build
  # directory, so two clones share cache entries.
  CCACHE_BASEDIR=$(cd .. && pwd)
  export CCACHE_BASEDIR
fi

declare -a stage_names=() stage_secs=()
stage_start=0
stage() {
  finish_stage
  printf '\n== %s ==\n' "$*"
  stage_names+=("$*")
  stage_start=$SECONDS
}
finish_stage() {
  if [ ${#stage_names[@]} -gt ${#stage_secs[@]} ]; then
    stage_secs+=($((SECONDS - stage_start)))
  fi
}
report() {
  finish_stage
  printf '\n== stage times ==\n'
  local i
  for i in "${!stage_names[@]}"; do
    printf '%6ss  %s\n' "${stage_secs[$i]:-?}" "${stage_names[$i]}"
  done
}
trap report EXIT

configure() {  # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
}

rel=build-ci/build
stage "release (portable): build"
# Tests and benchmarks on explicitly: the install and package steps below
# turn them off in this same tree, and a rerun must not test stale binaries.
configure "$rel" -DCMAKE_BUILD_TYPE=Release -DSHARDFILTER_NATIVE=OFF \
  -DSHARDFILTER_BUILD_TESTS=ON -DSHARDFILTER_BUILD_BENCHMARKS=ON \
  -DSHARDFILTER_BUILD_TOOLS=ON
cmake --build "$rel" -j"$jobs"
stage "release: every test"
# The server and module suites skip (exit 77) when a client is missing;
# here every client is installed, so a skip is a failure.
SF_REQUIRE_CLIENTS=1 ctest --test-dir "$rel" --output-on-failure -j"$jobs" --timeout 600

[ "$quick" = 1 ] && exit 0

stage "release: instructions per call (callgrind, against bench/instruction_budgets.txt)"
bench/instructions.sh "$rel/bench/sf_instructions" bench/instruction_budgets.txt

stage "release: Node.js clients (node-redis, ioredis; RESP2, RESP3)"
tests/clients/node/run.sh server "$rel"
tests/clients/node/run.sh module "$rel"

# Both scripts reconfigure the same tree without tests and benchmarks (the
# libraries are not rebuilt) and install it / package it.
stage "release: install test (find_package, pkg-config)"
JOBS=$jobs tests/install/run.sh "$PWD" build-ci
stage "release: package test (.deb)"
JOBS=$jobs tests/package/run.sh "$PWD" build-ci

# Sanitizer trees skip benchmarks and build only the test programs they run.
san_targets() {  # label
  local label=$1 f n
  for f in tests/*_test.cc; do
    n=$(basename "$f" .cc)
    case "$label:$n" in
      concurrency:*_stress_test) echo "$n" ;;
      unit:*_stress_test|unit:*_crash_test) ;;
      unit:*) echo "$n" ;;
    esac
  done
}

stage "tsan: build"
# RelWithDebInfo without -DNDEBUG: assertions run in the sanitizer trees.
configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
  -DSHARDFILTER_SANITIZE=thread -DSHARDFILTER_BUILD_BENCHMARKS=OFF
mapfile -t targets < <(san_targets concurrency)
cmake --build build-tsan -j"$jobs" --target "${targets[@]}"
stage "tsan: concurrency tests"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L concurrency --timeout 900

stage "clang asan+ubsan+fuzz: build"
CXX=clang++-14 CC=clang-14 configure build-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DSHARDFILTER_FUZZ=ON \
  -DSHARDFILTER_BUILD_BENCHMARKS=OFF
mapfile -t targets < <(san_targets unit)
cmake --build build-clang -j"$jobs" --target "${targets[@]}" shardfilter_fuzz
stage "clang: unit tests (ASan + UBSan, assertions on)"
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
  LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
  ctest --test-dir build-clang --output-on-failure -j"$jobs" -L unit --timeout 900
stage "clang: fuzz every decoder (${SF_FUZZ_SECONDS:-15} s a target)"
tests/fuzz/run.sh build-clang "${SF_FUZZ_SECONDS:-15}"
