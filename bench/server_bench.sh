#!/usr/bin/env bash
# redis-benchmark against shardfilter-server (durability none and journal)
# and, as a baseline anyone can rerun, plain Redis SADD/SISMEMBER, in the
# same run. Prints one markdown table row per (target, command, pipeline).
#
#   bench/server_bench.sh [BUILD_DIR]      (default: build)
#
# Environment:
#   CLIENTS=50 REQUESTS=200000 PIPELINES="1 16 64"
#   CAPACITIES="1000000 100000000"  filter capacity (1% error): cache-resident
#                                   and larger than the caches
#   SERVER_CPU=0 CLIENT_CPU=1       taskset pinning: on a 2-core machine the
#                                   client would otherwise compete with the
#                                   server for the same core
#   REDIS=1                         also run redis-server's SADD/SISMEMBER
#   REDISBLOOM_SO=/path/redisbloom.so  also run the same BF/CF rows against
#                                   redis-server with that module loaded
#                                   (RedisBloom, built by you; no RDB)
#   RB_AOF="off"                    RedisBloom's persistence, one run each:
#                                   off (appendonly no), or an appendfsync
#                                   policy with appendonly yes: no, everysec,
#                                   always (compare with the journal rows)
#   DURABILITIES="none journal"     shardfilter's rows
# Reported per row: requests/s, p99 latency (ms), and the server's CPU time
# per request (us, from /proc/PID/stat utime+stime over the row).
set -euo pipefail

BUILD=${1:-build}
SERVER_BIN=$BUILD/tools/shardfilter-server
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
PIPELINES=${PIPELINES:-"1 16 64"}
CAPACITIES=${CAPACITIES:-"1000000 100000000"}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
REDIS=${REDIS:-1}
RB_AOF=${RB_AOF:-off}
DURABILITIES=${DURABILITIES:-"none journal"}
PORT=${PORT:-17379}
TICKS=$(getconf CLK_TCK)

command -v redis-benchmark >/dev/null || { echo "needs redis-tools" >&2; exit 2; }
[ -x "$SERVER_BIN" ] || { echo "build $SERVER_BIN first" >&2; exit 2; }

WORK=$(mktemp -d /tmp/sfbench.XXXXXX)
SERVER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

wait_port() {
  for _ in $(seq 100); do
    redis-cli -p "$PORT" PING >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on $PORT did not start" >&2
  exit 1
}

# run_row TARGET LABEL PIPELINE N ARGS...
run_row() {
  local target=$1 label=$2 pipeline=$3 n=$4
  shift 4
  local t0 t1 out rps p99
  t0=$(cpu_ticks "$SERVER_PID")
  out=$(taskset -c "$CLIENT_CPU" redis-benchmark -p "$PORT" -c "$CLIENTS" \
        -n "$n" -P "$pipeline" -r 100000000 --csv "$@" 2>/dev/null | tail -1)
  t1=$(cpu_ticks "$SERVER_PID")
  # --csv: "test","rps","avg","min","p50","p95","p99","max"
  rps=$(echo "$out" | awk -F'"' '{print $4}')
  p99=$(echo "$out" | awk -F'"' '{print $14}')
  local us
  us=$(awk -v d=$((t1 - t0)) -v hz="$TICKS" -v n="$n" \
       'BEGIN { printf "%.2f", d / hz * 1e6 / n }')
  printf '| %s | %s | %s | %s | %s | %s |\n' "$target" "$label" "$pipeline" \
    "$rps" "$p99" "$us"
}

items10() { for _ in $(seq 10); do printf '__rand_int__ '; done; }

# filter_rows TARGET CAPACITY: the BF/CF rows against the server on $PORT.
filter_rows() {
  local target=$1 cap=$2
  redis-cli -p "$PORT" BF.RESERVE bf 0.01 "$cap" >/dev/null
  redis-cli -p "$PORT" CF.RESERVE cf "$cap" BUCKETSIZE 4 >/dev/null
  for p in $PIPELINES; do
    run_row "$target" "BF.ADD" "$p" "$REQUESTS" BF.ADD bf __rand_int__
    run_row "$target" "BF.EXISTS" "$p" "$REQUESTS" BF.EXISTS bf __rand_int__
    # shellcheck disable=SC2046
    run_row "$target" "BF.MADD x10" "$p" $((REQUESTS / 5)) BF.MADD bf $(items10)
    # shellcheck disable=SC2046
    run_row "$target" "BF.MEXISTS x10" "$p" $((REQUESTS / 5)) BF.MEXISTS bf $(items10)
    run_row "$target" "CF.ADD" "$p" "$REQUESTS" CF.ADD cf __rand_int__
    run_row "$target" "CF.EXISTS" "$p" "$REQUESTS" CF.EXISTS cf __rand_int__
  done
}

echo "| target | command | -P | requests/s | p99 ms | server CPU us/req |"
echo "|---|---|---|---|---|---|"

for durability in $DURABILITIES; do
  for cap in $CAPACITIES; do
    rm -rf "$WORK/db"
    taskset -c "$SERVER_CPU" "$SERVER_BIN" --db "$WORK/db" --port "$PORT" \
      --threads 1 --durability "$durability" --checkpoint-interval-ms 0 \
      --max-filter-bytes 4gb >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    wait_port
    filter_rows "shardfilter $durability, cap $cap" "$cap"
    redis-cli -p "$PORT" SHUTDOWN >/dev/null 2>&1 || true
    wait "$SERVER_PID" || true
    SERVER_PID=""
  done
done

if [ -n "${REDISBLOOM_SO:-}" ]; then
  for aof in $RB_AOF; do
    if [ "$aof" = off ]; then
      persistence=(--appendonly no)
      label=""
    else
      persistence=(--appendonly yes --appendfsync "$aof")
      label=" (appendfsync $aof)"
    fi
    for cap in $CAPACITIES; do
      rm -rf "$WORK/appendonlydir"
      taskset -c "$SERVER_CPU" redis-server --port "$PORT" --save "" \
        "${persistence[@]}" --daemonize no --dir "$WORK" \
        --loadmodule "$(realpath "$REDISBLOOM_SO")" >"$WORK/redis.log" 2>&1 &
      SERVER_PID=$!
      wait_port
      filter_rows "redis-server 7.0 + RedisBloom$label, cap $cap" "$cap"
      redis-cli -p "$PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
      wait "$SERVER_PID" || true
      SERVER_PID=""
    done
  done
fi

if [ "$REDIS" = 1 ] && command -v redis-server >/dev/null; then
  taskset -c "$SERVER_CPU" redis-server --port "$PORT" --save "" \
    --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
  SERVER_PID=$!
  wait_port
  for p in $PIPELINES; do
    run_row "redis-server 7.0" "SADD" "$p" "$REQUESTS" SADD set __rand_int__
    run_row "redis-server 7.0" "SISMEMBER" "$p" "$REQUESTS" SISMEMBER set __rand_int__
  done
  redis-cli -p "$PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait "$SERVER_PID" || true
  SERVER_PID=""
fi
