#!/usr/bin/env bash
# Sync-durability writes through shardfilter-server, and what they cost the
# other clients: CLIENTS connections send BF.ADD to a `sync` filter (each
# reply waits for an fsync) while one more connection sends BF.EXISTS to a
# journal filter. The fsyncs run on the SyncWorkers
# (tools/server/sync_workers.h), not on the event loop, so the reader should
# not wait behind the writers' syncs. Prints requests/s and p50 of both.
#
#   bench/server_sync_bench.sh [SERVER_BIN]   (default build/tools/shardfilter-server)
#
# Environment: PORT=7420 CLIENTS=50 WRITES=50000 READS=1000
#   DIR=<a directory on the disk to measure> (default: a fresh one under
#   $TMPDIR or /tmp, removed after; tmpfs makes fsync free: use a disk).
set -euo pipefail

SERVER_BIN=${1:-build/tools/shardfilter-server}
PORT=${PORT:-7420}
CLIENTS=${CLIENTS:-50}
WRITES=${WRITES:-50000}
READS=${READS:-1000}
DIR=${DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sf-sync-bench.XXXXXX")}
db=$DIR/db

"$SERVER_BIN" --db "$db" --port "$PORT" --durability sync --threads 2 \
  >"$DIR/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$db" "$DIR/server.log"' EXIT
for _ in $(seq 100); do
  [ "$(redis-cli -p "$PORT" PING 2>/dev/null)" = PONG ] && break
  sleep 0.1
done
redis-cli -p "$PORT" BF.RESERVE s 0.01 2000000 >/dev/null
redis-cli -p "$PORT" SF.CREATE j bloom CAPACITY 2000000 DURABILITY journal >/dev/null

summary() {  # the last line redis-benchmark -q prints (after its \r updates)
  tr '\r' '\n' | grep 'requests per second' | tail -1
}
redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$WRITES" -r 1000000 -q \
  BF.ADD s __rand_int__ >"$DIR/writes.txt" 2>&1 &
writers=$!
sleep 1
echo "reader (1 connection, BF.EXISTS of a journal filter) during the writes:"
redis-benchmark -p "$PORT" -c 1 -n "$READS" -q BF.EXISTS j x 2>&1 | summary
wait $writers
echo "writers ($CLIENTS connections, BF.ADD of a sync filter):"
summary <"$DIR/writes.txt"
rm -f "$DIR/writes.txt"
