#!/usr/bin/env bash
# Runs the benchmarks whose figures the README quotes, and writes them to
# bench-results/ (one file per program). Usage, from a Release build tree:
#   bench/readme_figures.sh [BUILD_DIR]      (default: build)
# Takes ~10 minutes on 2 cores. Compare figures only within one run: the
# machine's timings drift from run to run.
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build}
out=bench-results
mkdir -p "$out"
common=(--benchmark_min_time=0.3 --benchmark_counters_tabular=true)
run() {  # name filter
  local name=$1 filter=$2
  echo "== $name: $filter" | tee -a "$out/$name.txt"
  "$b/bench/$name" "${common[@]}" --benchmark_filter="$filter" 2>/dev/null | tee -a "$out/$name.txt"
}
rm -f "$out"/*.txt
uptime | tee "$out/load.txt"
# Blocked Bloom (kind 0), classic (1), counting (2): query present (mode 0),
# absent (1), mixed (2); one at a time (batch 0) and batched (batch 1).
run bloom_bench 'BM_Query/kind:0/.*threads:1$'
run bloom_bench 'BM_Query/kind:0/items:.*/mode:1/.*threads:2$'
run bloom_bench 'BM_Query/kind:(1|2)/items:50000000/mode:1/.*threads:1$'
run bloom_bench 'BM_Add/kind:(0|2)/.*threads:1$'
run bloom_bench 'BM_Add/kind:0/.*threads:2$'
run cuckoo_bench 'BM_Query/.*threads:1$|BM_Query/n:50000000/load:95/.*threads:2$'
run cuckoo_bench 'BM_Add/.*threads:1|BM_Remove/.*threads:1|BM_Mixed'
run sharded_bench '.'
run persistence_bench '.'
for extra in dedup_bench tiered_bench; do
  if [ -x "$b/bench/$extra" ]; then run "$extra" '.'; fi
done
uptime | tee -a "$out/load.txt"
