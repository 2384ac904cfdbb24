#!/bin/sh
# redis-benchmark rows against redis-server + shardfilter.so (and, when
# REDISBLOOM_SO points at a locally built redisbloom.so, against Redis +
# RedisBloom in the same run), plus plain SADD/SISMEMBER as a baseline
# anyone can rerun.
#
#   tools/module/bench.sh build/tools/shardfilter.so [requests] [capacity]
#
# Server pinned to CPU 0, client to CPU 1 (taskset), 50 clients; rows at
# pipeline 1, 16 and 64. The filter is reserved with `capacity` items at 1%
# (default 1e6: cache-resident on most machines; use 1e8 for a filter far
# larger than the caches) and pre-filled by the BF.ADD row itself.
#
# PREFILL=N first adds N random items to each filter (BF.MADD / CF.INSERT
# of 10, pipelined), so that every page of the table is resident before the
# rows run. Without it, a fresh 1e8 filter's untouched pages read as the
# kernel's one shared zero page: a query of RedisBloom's (k probes spread
# over the whole table) then hits that page in the L1 cache, which is not
# what a filter in use costs. The prefill's items are "p<n>", never
# those of the rows: redis-benchmark's random sequence is the same in
# every run, so each CF.ADD row adds another copy of the same items, and
# a cuckoo filter holds at most 2b copies of one item (then `Filter is
# full`: docs/server.md).
set -eu
module=$(realpath "${1:?usage: bench.sh <shardfilter.so> [requests] [capacity]}")
n=${2:-1000000}
cap=${3:-1000000}
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

run_server() {  # $1: module .so (or "")
  if [ -n "$1" ]; then
    taskset -c 0 redis-server --port "$port" --save '' --dir "$dir" \
      --loadmodule "$1" --logfile "$dir/redis.log" &
  else
    taskset -c 0 redis-server --port "$port" --save '' --dir "$dir" \
      --logfile "$dir/redis.log" &
  fi
  pid=$!
  i=0
  until redis-cli -p "$port" ping >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "server did not start"; exit 1; }
    sleep 0.1
  done
}
stop_server() { redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; wait "$pid" 2>/dev/null || true; pid=; }

bench() {  # $1 label, $2 pipeline, rest: command
  label=$1; p=$2; shift 2
  out=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -n "$n" -P "$p" -r 100000000 -q --csv "$@" 2>/dev/null | tail -1)
  printf '%-28s P%-3s %s\n' "$label" "$p" "$out"
}

rows() {
  redis-cli -p "$port" BF.RESERVE bf 0.01 "$cap" >/dev/null
  redis-cli -p "$port" CF.RESERVE cf "$cap" >/dev/null
  if [ "${PREFILL:-0}" -gt 0 ]; then
    fill=$((PREFILL / 10))
    taskset -c 1 redis-benchmark -p "$port" -c 50 -n "$fill" -P 64 -r 100000000 -q \
      BF.MADD bf p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ >/dev/null 2>&1
    taskset -c 1 redis-benchmark -p "$port" -c 50 -n "$fill" -P 64 -r 100000000 -q \
      CF.INSERT cf ITEMS p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ p__rand_int__ >/dev/null 2>&1
    echo "$1 prefilled: bf $(redis-cli -p "$port" BF.CARD bf) items, cf $(redis-cli -p "$port" CF.INFO cf | sed -n '/Number of items inserted/{n;p}') items"
  fi
  for p in 1 16 64; do
    bench "$1 BF.ADD" "$p" BF.ADD bf __rand_int__
    bench "$1 BF.EXISTS" "$p" BF.EXISTS bf __rand_int__
    bench "$1 BF.MADD x10" "$p" BF.MADD bf __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__
    bench "$1 BF.MEXISTS x10" "$p" BF.MEXISTS bf __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__
    bench "$1 CF.ADD" "$p" CF.ADD cf __rand_int__
    bench "$1 CF.EXISTS" "$p" CF.EXISTS cf __rand_int__
  done
  echo "$1 server CPU (user+sys, s): $(ps -o times= -p "$pid")"
}

echo "requests per row: $n, capacity: $cap, prefill: ${PREFILL:-0}"
run_server "$module"; rows shardfilter; stop_server
if [ -n "${REDISBLOOM_SO:-}" ]; then
  run_server "$(realpath "$REDISBLOOM_SO")"; rows redisbloom; stop_server
fi
run_server ""
for p in 1 16 64; do
  bench "plain SADD" "$p" SADD s __rand_int__
  bench "plain SISMEMBER" "$p" SISMEMBER s __rand_int__
done
stop_server
