#!/bin/sh
# The layers' dependency rule (docs/design.md, "The tree, as a map"): no
# include points up. filters/ includes no other layer, persistence/ no
# engine/ or tools/, engine/ no tools/; and no installed header
# (filters/*.h, filters/detail/, engine/*.h, engine/detail/) includes a
# private one (*/internal/, persistence/). One convention for private
# headers (docs/design.md, "Public and internal"): detail/ is installed, not
# API; internal/ is never installed.
# Usage: layering_check.sh SOURCE_DIR. Exit 0 clean, 1 with the offending
# lines printed.
set -u
src=${1:?source dir}
cd "$src" || exit 2
bad=0
check() {  # check DIR PATTERN WHY
  hits=$(grep -rnE "^#include \"($2)" "$1" --include='*.h' --include='*.cc')
  if [ -n "$hits" ]; then
    echo "layering: $3:"
    echo "$hits"
    bad=1
  fi
}
check filters 'shardfilter/(persistence|engine)/|tools/' \
  "filters/ includes a layer above it"
check persistence 'shardfilter/engine/|tools/' \
  "persistence/ includes a layer above it"
check engine 'tools/' "engine/ includes tools/"
# The journals' files go through the journal component's Env
# (persistence/log/env.h): no raw file system call in engine/.
hits=$(grep -rnE '#include <(filesystem|fcntl\.h|sys/mman\.h|sys/stat\.h)>|std::filesystem|::(open|unlink|rename|fsync|fdatasync|mmap|munmap|fallocate|posix_fallocate|ftruncate)\(' \
  engine --include='*.h' --include='*.cc')
if [ -n "$hits" ]; then
  echo "layering: engine/ makes file system calls (use persistence/log/env.h):"
  echo "$hits"
  bad=1
fi
for h in filters/*.h filters/detail/*.h engine/*.h engine/detail/*.h; do
  hits=$(grep -nE '^#include "shardfilter/([a-z]+/internal|persistence)/' "$h")
  if [ -n "$hits" ]; then
    echo "layering: installed header $h includes an internal one:"
    echo "$hits"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "layering: clean"
exit "$bad"
