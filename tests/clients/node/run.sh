#!/usr/bin/env bash
# Runs the Node.js client suite (clients.test.mjs: node-redis and ioredis,
# RESP2 and RESP3) against a host it starts on a free loopback port:
#   run.sh server BUILD_DIR   shardfilter-server over a fresh store (plus a
#                             second one with --cluster-emulation for the
#                             ioredis Cluster tests: SF_CLUSTER_PORT)
#   run.sh module BUILD_DIR   redis-server --loadmodule shardfilter.so (plus
#                             a real Redis Cluster of 3 masters, each with
#                             the module, for ioredis Cluster during a
#                             reshard: SF_REAL_CLUSTER_PORTS)
# Installs the clients from the npm registry (package-lock.json pins them)
# when node_modules is missing. Stops what it started, whatever happens.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
host=${1:?usage: run.sh server|module BUILD_DIR}
build=$(cd "${2:?usage: run.sh server|module BUILD_DIR}" && pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "run.sh: node and npm are required" >&2
  exit 1
fi
if [ ! -d "$here/node_modules/ioredis" ] || [ ! -d "$here/node_modules/redis" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

work=$(mktemp -d)
pid=""
cluster_pid=""
real_pids=""
stop() {
  local p=$1
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  fi
}
cleanup() {
  stop "$pid"
  stop "$cluster_pid"
  for p in $real_pids; do stop "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=../../../tools/ports.sh
. "$here/../../../tools/ports.sh"
port=$(free_port)
cluster_port=""
case "$host" in
  server)
    "$build/tools/shardfilter-server" --db "$work/db" --port "$port" --bind 127.0.0.1 \
      >"$work/host.log" 2>&1 &
    pid=$!
    cluster_port=$(free_port)
    "$build/tools/shardfilter-server" --db "$work/cluster_db" --port "$cluster_port" \
      --bind 127.0.0.1 --cluster-emulation >"$work/cluster.log" 2>&1 &
    cluster_pid=$! ;;
  module)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$work" --loadmodule "$build/tools/shardfilter.so" >"$work/host.log" 2>&1 &
    pid=$!
    real_ports=""
    for i in 1 2 3; do
      p=$(free_cluster_port)
      mkdir -p "$work/cluster$i"
      redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$work/cluster$i" --cluster-enabled yes \
        --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
        --loadmodule "$build/tools/shardfilter.so" \
        >"$work/cluster$i/log" 2>&1 &
      real_pids="$real_pids $!"
      real_ports="$real_ports${real_ports:+,}$p"
    done ;;
  *) echo "run.sh: host must be server or module" >&2; exit 2 ;;
esac

wait_ready() {  # port pid log
  for _ in $(seq 100); do
    if redis-cli -p "$1" ping >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then cat "$3" >&2; exit 1; fi
    sleep 0.1
  done
}
wait_ready "$port" "$pid" "$work/host.log"
if [ -n "$cluster_port" ]; then
  wait_ready "$cluster_port" "$cluster_pid" "$work/cluster.log"
fi
real_cluster=""
if [ -n "$real_pids" ]; then
  addrs=""
  for p in ${real_ports//,/ }; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    addrs="$addrs 127.0.0.1:$p"
  done
  # shellcheck disable=SC2086
  redis-cli --cluster create $addrs --cluster-replicas 0 --cluster-yes >"$work/create.log" 2>&1 ||
    { cat "$work/create.log" >&2; exit 1; }
  for p in ${real_ports//,/ }; do
    for _ in $(seq 100); do
      [[ $(redis-cli -p "$p" cluster info) == *cluster_state:ok* ]] && break
      sleep 0.1
    done
  done
  real_cluster=$real_ports
fi

status=0
(cd "$here" && SF_PORT=$port SF_CLUSTER_PORT=$cluster_port \
  SF_REAL_CLUSTER_PORTS=$real_cluster node --test clients.test.mjs) ||
  status=$?
if [ $status -ne 0 ]; then
  echo "--- $host log ---" >&2
  tail -50 "$work/host.log" >&2
fi
exit $status
