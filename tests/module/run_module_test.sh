#!/bin/sh
# Integration test of shardfilter.so inside redis-server (ctest label
# "module"). Usage: run_module_test.sh <shardfilter.so> [test name ...]
#
# Needs Debian's redis-server (7.0) and python3-redis; exits 77 (skipped)
# when either is missing. Uses the system python3 (/usr/bin/python3), where
# Debian installs python3-redis, whatever python3 is first on PATH.
set -eu
module=${1:?usage: run_module_test.sh <shardfilter.so> [test ...]}
shift
here=$(dirname "$0")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! command -v redis-server >/dev/null 2>&1; then
  echo "SKIP: redis-server not installed (apt-get install redis-server)"
  exit $([ -n "${SF_REQUIRE_CLIENTS:-}" ] && echo 1 || echo 77)
fi
if ! "$py" -c 'import redis' 2>/dev/null; then
  echo "SKIP: python3-redis not installed (apt-get install python3-redis)"
  exit $([ -n "${SF_REQUIRE_CLIENTS:-}" ] && echo 1 || echo 77)
fi
exec "$py" "$here/module_test.py" "$module" "$@"
