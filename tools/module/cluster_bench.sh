#!/bin/sh
# Loads and queries one multi-part filter (docs/redis-module.md,
# "Multi-part filters") with `shardfilter cluster` against a Redis Cluster of
# 1 and of 3 masters, each redis-server loading shardfilter.so, started here
# on free loopback ports and stopped at the end.
#
#   tools/module/cluster_bench.sh build/tools/shardfilter.so \
#       build/tools/shardfilter [items] [parts]
#
# Prints items/s for `cluster add` and `cluster exists` of `items` keys
# (default 2M) into a Bloom filter of `parts` parts (default 16) at 1%.
# The CLI pipelines each part's SF.MADD/SF.MEXISTS of 500 items on the
# part's master and drives all masters at once. On a machine with fewer
# cores than masters + 1 the masters share cores: read the 3-master row as
# what the routing costs, not as what 3 machines give.
set -eu
module=$(realpath "${1:?usage: cluster_bench.sh <shardfilter.so> <shardfilter> [items] [parts]}")
cli=$(realpath "${2:?usage: cluster_bench.sh <shardfilter.so> <shardfilter> [items] [parts]}")
items=${3:-2000000}
parts=${4:-16}
dir=$(mktemp -d)
pids=
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
seq 1 "$items" | sed 's/^/item:/' > "$dir/keys"

# shellcheck source=../ports.sh
. "$(dirname "$0")/../ports.sh"

run() {  # $1: number of masters
  n=$1
  addrs=
  pids=
  for i in $(seq 1 "$n"); do
    port=$(free_cluster_port)
    mkdir -p "$dir/n$port"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --dir "$dir/n$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf \
      --loadmodule "$module" --logfile "$dir/n$port/redis.log" &
    pids="$pids $!"
    addrs="$addrs 127.0.0.1:$port"
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
  done
  first=${addrs# }
  first=${first%% *}
  if [ "$n" -eq 1 ]; then
    # `--cluster create` wants 3 masters: one node takes every slot itself.
    redis-cli -p "${first#*:}" cluster addslotsrange 0 16383 >/dev/null
  else
    # shellcheck disable=SC2086
    redis-cli --cluster create $addrs --cluster-replicas 0 --cluster-yes \
      >/dev/null
  fi
  until redis-cli -p "${first#*:}" cluster info | grep -q cluster_state:ok; do
    sleep 0.1
  done
  sleep 1
  "$cli" cluster create bench --node "$first" --parts "$parts" --type bloom \
    --capacity "$items" --fpp 0.01 >/dev/null
  t0=$(date +%s.%N)
  cpu0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  "$cli" cluster add bench --node "$first" --parts "$parts" --quiet < "$dir/keys"
  t1=$(date +%s.%N)
  # The CLI's CPU seconds (children's utime + stime, in clock ticks).
  cpu1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  "$cli" cluster exists bench --node "$first" --parts "$parts" < "$dir/keys" |
    grep -c '^1$' > "$dir/found"
  t2=$(date +%s.%N)
  python3 -c "
n=$items; a=$t1-$t0; q=$t2-$t1
cpu=($cpu1-$cpu0)/$(getconf CLK_TCK)
print('%d master(s), %d parts: add %.2f M items/s (%.2f s; the CLI used %.2f CPU s), exists %.2f M items/s (%.2f s), %s of %d present' % ($n, $parts, n/a/1e6, a, cpu, n/q/1e6, q, open('$dir/found').read().strip(), n))"
  for p in $pids; do kill "$p"; done
  wait 2>/dev/null || true
  pids=
}

run 1
run 3
