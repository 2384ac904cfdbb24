#!/bin/sh
# The Redis module loads no store and no thread pool into redis-server: its
# dynamic dependencies are the C and C++ runtimes and libxxhash only (the
# engine inside is shardfilter_memory: no RocksDB, no oneTBB).
# Usage: module_needed_libs.sh path/to/shardfilter.so. Exit 0 clean, 1 with
# the libraries that should not be there printed.
set -u
so=${1:?module path}
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') || exit 2
[ -n "$needed" ] || { echo "no NEEDED entries read from $so"; exit 2; }
bad=$(echo "$needed" | grep -vE \
  '^(libc|libm|libgcc_s|libstdc\+\+|ld-linux-x86-64|libxxhash)\.so(\.[0-9]+)*$')
if [ -n "$bad" ]; then
  echo "shardfilter.so needs libraries a Redis module should not load:"
  echo "$bad"
  exit 1
fi
echo "NEEDED: $(echo "$needed" | tr '\n' ' ')"
