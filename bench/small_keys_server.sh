#!/bin/sh
# Many small keys in shardfilter-server: N keys, each `BF.RESERVE k 0.01 500`
# and `EXPIRE k 86400` (TTL=0: no EXPIRE), then ADDS adds each, through
# `redis-cli --pipe`. Prints the load rates (commands/s), the wall time of a
# full `redis-cli --scan` (SCAN at redis-cli's default COUNT 10), of DBSIZE
# and of INFO keyspace, its line, and RSS per key. Wall times on a shared
# machine vary; compare runs made in turn.
#
#   bench/small_keys_server.sh build/tools/shardfilter-server [N] [ADDS]
#   TTL=0 bench/small_keys_server.sh build/tools/shardfilter-server 100000 20
#
# Environment: TTL=86400 (seconds; 0: none), THREADS (the server's event
# loops; default: its own), DURABILITY=journal.
set -eu
server=$(realpath "${1:?usage: small_keys_server.sh <shardfilter-server> [N] [ADDS]}")
n=${2:-20000}
adds=${3:-20}
ttl=${TTL:-86400}
durability=${DURABILITY:-journal}
command -v redis-cli >/dev/null || { echo "redis-cli missing" >&2; exit 77; }
command -v python3 >/dev/null || { echo "python3 missing" >&2; exit 77; }
[ -x "$server" ] || { echo "$server is not executable" >&2; exit 2; }
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

python3 - "$n" "$adds" "$ttl" "$dir" <<'EOF'
import sys
n, adds, ttl, d = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def cmd(*a):
    out = [b"*%d\r\n" % len(a)]
    for x in a:
        out.append(b"$%d\r\n%s\r\n" % (len(x), x))
    return b"".join(out)
with open(d + "/reserve.resp", "wb") as f:
    for u in range(n):
        k = b"rec:bloom:%d" % u
        f.write(cmd(b"BF.RESERVE", k, b"0.01", b"500"))
        if ttl > 0:
            f.write(cmd(b"EXPIRE", k, b"%d" % ttl))
with open(d + "/adds.resp", "wb") as f:
    for u in range(n):
        k = b"rec:bloom:%d" % u
        for i in range(adds):
            f.write(cmd(b"BF.ADD", k, b"item:%d:%d" % (u, i)))
EOF

set -- --db "$dir/db" --port "$port" --bind 127.0.0.1 --durability "$durability"
[ -n "${THREADS:-}" ] && set -- "$@" --threads "$THREADS"
"$server" "$@" >"$dir/server.log" 2>&1 &
pid=$!
i=0
until redis-cli -p "$port" ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 200 ] || { echo "shardfilter-server did not start" >&2; cat "$dir/server.log" >&2; exit 1; }
  sleep 0.05
done
rss() { awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$pid/status"; }
now() { date +%s.%N; }
per_key=1
[ "$ttl" -gt 0 ] && per_key=2
rss0=$(rss)
t0=$(now)
redis-cli -p "$port" --pipe <"$dir/reserve.resp" >"$dir/reserve.out"
t1=$(now)
redis-cli -p "$port" --pipe <"$dir/adds.resp" >"$dir/adds.out"
t2=$(now)
rss1=$(rss)
keys=$(redis-cli -p "$port" dbsize)
t3=$(now)
[ "$keys" = "$n" ] || { echo "dbsize $keys, expected $n" >&2; cat "$dir/reserve.out" >&2; exit 1; }
scanned=$(redis-cli -p "$port" --scan | wc -l)
t4=$(now)
[ "$scanned" -ge "$n" ] || { echo "--scan listed $scanned keys, expected $n" >&2; exit 1; }
info=$(redis-cli -p "$port" info keyspace | tr -d '\r' | grep '^db0:' || true)
t5=$(now)
awk -v n="$n" -v a="$adds" -v pk="$per_key" -v t0="$t0" -v t1="$t1" \
    -v t2="$t2" -v t3="$t3" -v t4="$t4" -v t5="$t5" -v r0="$rss0" \
    -v r1="$rss1" -v s="$scanned" -v info="$info" 'BEGIN {
  printf "keys %d (bf, capacity 500, %s), adds %d each\n", n, (pk == 2 ? "EXPIRE each" : "no TTL"), a
  printf "reserves%s   %.2f s (%.0f commands/s)\n", (pk == 2 ? "+expires" : "        "), t1 - t0, n * pk / (t1 - t0)
  printf "adds               %.2f s (%.0f commands/s)\n", t2 - t1, n * a / (t2 - t1)
  printf "RSS per key        %.0f B\n", (r1 - r0) / n
  printf "DBSIZE             %.3f s (redis-cli round trip included)\n", t3 - t2
  printf "--scan (COUNT 10)  %.2f s, %d keys\n", t4 - t3, s
  printf "INFO keyspace      %.3f s: %s\n", t5 - t4, info
}'
