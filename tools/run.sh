#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release, and runs the
# shardfilter CLI on an embedded store (a RocksDB directory, ./data by
# default): creates one filter of each type, loads keys, queries them,
# checkpoints, reopens, verifies, and prints the filters' figures; then the
# in-memory demo of every filter type (measured FPR against target, bits per
# key, throughput).
#   tools/run.sh [DB_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target shardfilter
sf=build/tools/shardfilter
db=${1:-./data}
n=1000000

say() { printf '\n$ %s\n' "$*"; }
run() { say "$*"; "$@"; }

for f in demo_urls demo_counts demo_cuckoo; do
  "$sf" --db "$db" drop "$f" >/dev/null 2>&1 || true
done
run "$sf" --db "$db" create demo_urls --type bloom --capacity $n --fpp 0.01
run "$sf" --db "$db" create demo_counts --type counting --capacity $n --fpp 0.01
run "$sf" --db "$db" create demo_cuckoo --type cuckoo --capacity $n --fpp 0.001 --retain-hashes
for f in demo_urls demo_counts demo_cuckoo; do
  say "seq -f 'https://example.com/page/%.0f' 1 $n | $sf --db $db add $f"
  seq -f 'https://example.com/page/%.0f' 1 $n | "$sf" --db "$db" add "$f"
done
say "$sf --db $db exists demo_urls https://example.com/page/42 https://example.com/nope"
"$sf" --db "$db" exists demo_urls https://example.com/page/42 https://example.com/nope
run "$sf" --db "$db" remove demo_cuckoo https://example.com/page/42
run "$sf" --db "$db" exists demo_cuckoo https://example.com/page/42 https://example.com/page/43
say "seq -f 'https://other.org/%.0f' 1 $n | $sf --db $db exists demo_urls | sort | uniq -c   # measured false positives"
seq -f 'https://other.org/%.0f' 1 $n | "$sf" --db "$db" exists demo_urls | sort | uniq -c
say "seq 1 5 | $sf --db $db dedup demo_seen   # prints only keys this store never saw"
seq 1 5 | "$sf" --db "$db" dedup demo_seen
say "seq 3 8 | $sf --db $db dedup demo_seen   # 1-5 are remembered (also across runs of this script)"
seq 3 8 | "$sf" --db "$db" dedup demo_seen
say "$sf --db $db migrate demo_cuckoo --capacity $((4 * n)) --shards 4   # rebuilt from its retained hashes"
"$sf" --db "$db" migrate demo_cuckoo --capacity $((4 * n)) --shards 4
run "$sf" --db "$db" exists demo_cuckoo https://example.com/page/42 https://example.com/page/43
run "$sf" --db "$db" checkpoint
run "$sf" --db "$db" list
run "$sf" --db "$db" info demo_urls
run "$sf" --db "$db" verify
run "$sf" demo
