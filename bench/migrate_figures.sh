#!/usr/bin/env bash
# Throughput of `shardfilter import` and `shardfilter migrate` (keys/s), the
# figures the README quotes. Usage, from a Release build tree:
#   bench/migrate_figures.sh [BUILD_DIR] [KEYS]     (defaults: build, 10000000)
# Uses a store and a key file under $TMPDIR (default /tmp), removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build}
n=${2:-10000000}
sf="$b/tools/shardfilter"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sfmigrate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
db="$tmp/db"
seq -f 'https://example.com/page/%.0f' 1 "$n" > "$tmp/keys.txt"
rate() {  # label, then the command; prints keys/s from wall time
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$tmp/out.txt"
  t1=$(date +%s.%N)
  awk -v l="$label" -v n="$n" -v a="$t0" -v b="$t1" \
    'BEGIN { printf "%-58s %8.2f s  %6.2f M keys/s\n", l, b - a, n / (b - a) / 1e6 }'
  grep -E '^(measured_fpr|target_fpr|keys_per_second|verified|missing) ' \
    "$tmp/out.txt" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/' || true
}
echo "keys: $n ($(uptime | sed 's/.*load/load/'))"
"$sf" --db "$db" create c --type cuckoo --capacity "$n" --fpp 0.001 \
  --retain-hashes > /dev/null
rate "import, cuckoo with retained hashes (journal)" \
  "$sf" --db "$db" import c "$tmp/keys.txt" --quiet
"$sf" --db "$db" create b --type bloom --capacity "$((2 * n))" --fpp 0.01 \
  --durability none > /dev/null
rate "import, bloom (durability none)" \
  "$sf" --db "$db" import b "$tmp/keys.txt" --quiet
rate "migrate cuckoo -> bloom 2x, from retained hashes" \
  "$sf" --db "$db" migrate c --type bloom --capacity "$((2 * n))" --fpp 0.001 --quiet
rate "migrate bloom -> cuckoo, new seed, from the key file" \
  "$sf" --db "$db" migrate b "$tmp/keys.txt" --type cuckoo --seed 7 --quiet
"$sf" --db "$db" create f --type bloom --capacity "$((8 * n))" --fpp 0.01 \
  --durability none > /dev/null
"$sf" --db "$db" import f "$tmp/keys.txt" --quiet
rate "migrate bloom by folding to a quarter (no keys)" \
  "$sf" --db "$db" migrate f --fold 4 --quiet
