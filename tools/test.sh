#!/usr/bin/env bash
# Builds and runs the whole test suite, as CI does (.ci/run calls this).
# Stages (each prints its wall time at the end):
#   release  gcc Release tree (build/): every test (ctest labels unit,
#            concurrency, crash);
#   tsan     gcc ThreadSanitizer tree (build-tsan/): the concurrency tests;
#   asan     gcc AddressSanitizer + UBSan tree (build-asan/), assertions on
#            (no NDEBUG): the unit tests.
# Every tree uses Ninja, so both cores compile (the Makefile generator builds
# the targets of one `--build --target a b c` one after another), and ccache
# when it is installed (a no-op on a fresh machine).
# Flags: --quick runs the release stage only.
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

stage "release: build"
configure build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
stage "release: every test"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 600

[ "$quick" = 1 ] && exit 0

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
san_build() {  # dir sanitizer label
  local dir=$1 san=$2 label=$3
  # RelWithDebInfo without -DNDEBUG: assertions run in the sanitizer trees.
  configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
    -DSHARDFILTER_SANITIZE="$san" -DSHARDFILTER_BUILD_BENCHMARKS=OFF
  mapfile -t targets < <(san_targets "$label")
  [ ${#targets[@]} -eq 0 ] && return 0
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
}

stage "tsan: build"
san_build build-tsan thread concurrency
stage "tsan: concurrency tests"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L concurrency --timeout 900

stage "asan: build"
san_build build-asan address unit
stage "asan: unit tests"
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit --timeout 900
