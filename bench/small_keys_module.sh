#!/bin/sh
# Many small keys in redis-server with shardfilter.so: N keys, each
# `BF.RESERVE k 0.01 500` (or `CF.RESERVE k 500` with KIND=cf) and then
# ADDS adds, through `redis-cli --pipe`. Prints the wall time of the
# reserves and of the adds, RSS and used_memory per key, MEMORY USAGE of one
# key, and the wall time of DEBUG RELOAD (save the RDB, empty, load it).
# Wall times on a shared machine vary; compare runs made in turn.
#
#   bench/small_keys_module.sh build/tools/shardfilter.so [N] [ADDS]
#   KIND=cf bench/small_keys_module.sh build/tools/shardfilter.so 20000 20
set -eu
module=$(realpath "${1:?usage: small_keys_module.sh <shardfilter.so> [N] [ADDS]}")
n=${2:-20000}
adds=${3:-20}
kind=${KIND:-bf}
command -v redis-server >/dev/null || { echo "redis-server missing" >&2; exit 77; }
command -v redis-cli >/dev/null || { echo "redis-cli missing" >&2; exit 77; }
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

python3 - "$n" "$adds" "$kind" "$dir" <<'EOF'
import sys
n, adds, kind, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def cmd(*a):
    out = [b"*%d\r\n" % len(a)]
    for x in a:
        out.append(b"$%d\r\n%s\r\n" % (len(x), x))
    return b"".join(out)
with open(d + "/reserve.resp", "wb") as f:
    for u in range(n):
        k = b"rec:bloom:%d" % u
        f.write(cmd(b"BF.RESERVE", k, b"0.01", b"500") if kind == "bf"
                else cmd(b"CF.RESERVE", k, b"500"))
with open(d + "/adds.resp", "wb") as f:
    for u in range(n):
        k = b"rec:bloom:%d" % u
        for i in range(adds):
            f.write(cmd(b"BF.ADD" if kind == "bf" else b"CF.ADD", k,
                        b"item:%d:%d" % (u, i)))
EOF

redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --enable-debug-command yes --logfile "$dir/redis.log" \
  --loadmodule "$module" &
pid=$!
i=0
until redis-cli -p "$port" ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 200 ] || { echo "redis-server did not start" >&2; exit 1; }
  sleep 0.05
done
rss() { awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$pid/status"; }
used() { redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }
now() { date +%s.%N; }
rss0=$(rss)
used0=$(used)
t0=$(now)
redis-cli -p "$port" --pipe <"$dir/reserve.resp" >"$dir/reserve.out"
t1=$(now)
redis-cli -p "$port" --pipe <"$dir/adds.resp" >"$dir/adds.out"
t2=$(now)
keys=$(redis-cli -p "$port" dbsize)
[ "$keys" = "$n" ] || { echo "dbsize $keys, expected $n" >&2; cat "$dir/reserve.out" >&2; exit 1; }
rss1=$(rss)
used1=$(used)
usage=$(redis-cli -p "$port" memory usage rec:bloom:7)
t3=$(now)
redis-cli -p "$port" debug reload >/dev/null
t4=$(now)
keys=$(redis-cli -p "$port" dbsize)
[ "$keys" = "$n" ] || { echo "after DEBUG RELOAD: dbsize $keys" >&2; exit 1; }
awk -v n="$n" -v a="$adds" -v k="$kind" -v t0="$t0" -v t1="$t1" -v t2="$t2" \
    -v t3="$t3" -v t4="$t4" -v r0="$rss0" -v r1="$rss1" -v u0="$used0" \
    -v u1="$used1" -v mu="$usage" 'BEGIN {
  printf "keys %d (%s, capacity 500), adds %d each\n", n, k, a
  printf "reserves          %.2f s\n", t1 - t0
  printf "adds              %.2f s\n", t2 - t1
  printf "RSS per key       %.0f B\n", (r1 - r0) / n
  printf "used_memory/key   %.0f B\n", (u1 - u0) / n
  printf "MEMORY USAGE      %d B (one key)\n", mu
  printf "DEBUG RELOAD      %.2f s\n", t4 - t3
}'
