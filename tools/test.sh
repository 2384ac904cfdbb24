#!/usr/bin/env bash
# Builds and runs the whole test suite, as CI does (.ci/run calls this):
#   1. Release build, every test (ctest: unit, concurrency, crash labels);
#   2. ThreadSanitizer build, the concurrency tests (label "concurrency");
#   3. AddressSanitizer + UBSan build, the unit tests (label "unit").
# Flags: --quick runs step 1 only. Build trees: build/, build-tsan/, build-asan/.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

step() { printf '\n== %s ==\n' "$*"; }

step "Release build and full test suite"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 600

[ "$quick" = 1 ] && exit 0

# Sanitizer builds skip benchmarks, and only build the test
# programs they run.
san_build() {  # dir sanitizer label
  local dir=$1 san=$2 label=$3
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DSHARDFILTER_SANITIZE="$san" \
    -DSHARDFILTER_BUILD_BENCHMARKS=OFF >/dev/null
  local targets=()
  for f in tests/*_test.cc; do
    local n; n=$(basename "$f" .cc)
    case "$label:$n" in
      concurrency:*_stress_test) targets+=("$n") ;;
      unit:*_stress_test|unit:*_crash_test) ;;
      unit:*) targets+=("$n") ;;
    esac
  done
  [ ${#targets[@]} -eq 0 ] && return 0
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L "$label" --timeout 900
}

step "ThreadSanitizer: concurrency tests"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" san_build build-tsan thread concurrency

step "AddressSanitizer + UBSan: unit tests"
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" san_build build-asan address unit
