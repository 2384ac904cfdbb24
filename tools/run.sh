#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release, and runs the
# shardfilter CLI on an embedded store (a RocksDB directory, ./data by
# default): creates one filter of each type, loads keys, queries them,
# checkpoints, reopens, verifies, and prints the filters' figures; then the
# in-memory demo of every filter type (measured FPR against target, bits per
# key, throughput); then shardfilter-server on the same store, on a free
# loopback port, driven with redis-cli (RedisBloom's BF.*/CF.* commands), and
# stopped cleanly with SHUTDOWN (a checkpoint, exit 0).
#   tools/run.sh [DB_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target shardfilter shardfilter-server
sf=build/tools/shardfilter
db=${1:-./data}
n=1000000

say() { printf '\n$ %s\n' "$*"; }
run() { say "$*"; "$@"; }

for f in demo_urls demo_counts demo_cuckoo server_urls server_seen server_counts; do
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

# The server: the same store, now reached by any Redis client.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "build/tools/shardfilter-server --db $db --port $port &"
build/tools/shardfilter-server --db "$db" --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { say "redis-cli -p $port $*"; redis-cli -p "$port" "$@"; }
cli BF.EXISTS demo_urls https://example.com/page/42    # the CLI's filter, served
cli BF.RESERVE server_urls 0.01 100000
cli BF.MADD server_urls a b c
cli BF.ADD server_urls a                               # 0: already present
cli BF.MEXISTS server_urls a b zz
cli BF.INFO server_urls
cli CF.ADD server_seen alice
cli CF.COUNT server_seen alice
cli TYPE server_seen
cli SF.CREATE server_counts counting 100000 ERROR 0.001 SHARDS 4   # shardfilter's own commands
cli SF.MADD server_counts alice bob alice
cli SF.REMOVE server_counts alice
cli SF.COUNT server_counts alice
cli SF.INFO server_counts
cli EXPIRE server_counts 86400                         # a deadline kept in the store
cli TTL server_counts
cli DBSIZE
cli SHUTDOWN || true                                   # checkpoints, exits 0
rc=0
wait "$server" || rc=$?
trap - EXIT
say "server stopped (exit $rc)"
[ "$rc" -eq 0 ] || exit 1
run "$sf" --db "$db" exists server_urls a zz
