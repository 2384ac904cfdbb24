#!/bin/sh
# How much of a large M-command's time on Redis's main thread is filter
# work, i.e. what RedisModule_BlockClient + worker threads could take off
# the main thread (docs/redis-module.md, "Threading").
#
#   tools/module/mcommand_cost.sh build/tools/shardfilter.so [capacity] [fill]
#
# Reserves a 1% Bloom filter of `capacity` items (default 1e8, ~120 MB:
# far larger than the caches) and adds `fill` items (default 5M: enough to
# touch every page), plus a cache-resident one of 1e5 items. Then runs
# BF.MEXISTS and BF.MADD of 10, 100 and 1000 random items from one client
# (redis-benchmark -c 1 -P 1), server on CPU 0 and client on CPU 1, and
# prints Redis's own usec_per_call (INFO commandstats: the main thread's
# time inside the command, parsing excluded) for each filter.
set -eu
module=$(realpath "${1:?usage: mcommand_cost.sh <shardfilter.so> [capacity] [fill]}")
cap=${2:-100000000}
fill=${3:-5000000}
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 0 redis-server --port "$port" --save '' --dir "$dir" \
  --loadmodule "$module" --logfile "$dir/redis.log" &
pid=$!
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
cli() { redis-cli -p "$port" "$@"; }
cli BF.RESERVE big 0.01 "$cap" NONSCALING >/dev/null
cli BF.RESERVE small 0.01 100000 NONSCALING >/dev/null
items() {  # $1 count: that many __rand_int__ placeholders
  i=0; out=
  while [ $i -lt "$1" ]; do out="$out __rand_int__"; i=$((i + 1)); done
  echo "$out"
}
# shellcheck disable=SC2046
taskset -c 1 redis-benchmark -p "$port" -c 20 -P 16 -r 1000000000 \
  -n $((fill / 100)) -q BF.MADD big $(items 100) >/dev/null
# shellcheck disable=SC2046
taskset -c 1 redis-benchmark -p "$port" -c 20 -P 16 -r 1000000000 \
  -n 1000 -q BF.MADD small $(items 50) >/dev/null
echo "filter  command      items  usec_per_call  ns_per_item"
for key in small big; do
  for cmd in BF.MEXISTS BF.MADD; do
    for n in 10 100 1000; do
      cli CONFIG RESETSTAT >/dev/null
      reqs=$((200000 / n + 200))
      # shellcheck disable=SC2046
      taskset -c 1 redis-benchmark -p "$port" -c 1 -P 1 -r 1000000000 \
        -n "$reqs" -q "$cmd" "$key" $(items "$n") >/dev/null
      lc=$(echo "$cmd" | tr 'A-Z' 'a-z')
      usec=$(cli INFO commandstats | tr -d '\r' |
        sed -n "s/^cmdstat_$lc:.*usec_per_call=\([0-9.]*\).*/\1/p")
      python3 -c "print('%-7s %-12s %5d  %13.2f  %11.1f' % ('$key', '$cmd', $n, $usec, $usec * 1000 / $n))"
    done
  done
done
