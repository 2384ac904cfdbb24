#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time over its
# seed corpus; fails when any target finds a crash, a leak, a timeout or
# runs out of memory.
#
#   tests/fuzz/run.sh <fuzz-build-dir> <seconds-per-target> [target...]
#
# The build: CXX=clang++-14 cmake -S . -B <dir> -G Ninja -DSHARDFILTER_FUZZ=ON
#   -DSHARDFILTER_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" && ninja -C <dir> shardfilter_fuzz
# Each target runs on a temporary copy of tests/fuzz/corpus/<target>/ (the
# repository is never written); new inputs are discarded, a crashing input
# is kept under $FUZZ_ARTIFACTS (default: a temporary directory, printed) to
# be added to the corpus once the bug is fixed.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 <fuzz-build-dir> <seconds-per-target> [target...]" >&2
  exit 2
fi
build=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sf_fuzz_XXXXXX")
artifacts=${FUZZ_ARTIFACTS:-$work/artifacts}
mkdir -p "$artifacts"
trap 'rm -rf "$work/corpus"' EXIT

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for t in "$build"/tests/fuzz/*_fuzz; do
    [ -x "$t" ] && targets+=("$(basename "$t")")
  done
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "no fuzz targets under $build/tests/fuzz (built with SHARDFILTER_FUZZ=ON?)" >&2
  exit 2
fi

failed=()
for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  mkdir -p "$corpus"
  if [ -d "$here/corpus/$t" ]; then cp -r "$here/corpus/$t/." "$corpus/"; fi
  start=$(date +%s)
  # -rss_limit_mb also bounds any single allocation (malloc_limit_mb
  # defaults to it): an allocation a stored length can trigger must be
  # checked first (DESIGN.md invariant 8). -timeout catches hangs.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$build/tests/fuzz/$t" -max_total_time="$secs" -rss_limit_mb=2048 \
    -timeout=20 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
    "$corpus" > "$work/$t.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" |
          grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1)
  echo "$t: exit $rc, ${execs:-?} runs, ${cov:-cov: ?}, $(( $(date +%s) - start )) s"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    grep -E -A30 'ERROR|runtime error|fuzz invariant|deadly signal|out-of-memory|timeout' \
      "$work/$t.log" | head -60
    echo "  full log: $work/$t.log; input: $(ls "$artifacts/$t-"* 2>/dev/null)"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all ${#targets[@]} fuzz targets clean (${secs} s each)"
