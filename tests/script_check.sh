#!/bin/sh
# The project's shell scripts that set pipefail pipe nothing into a reader
# that stops early (grep -q, grep -m, head): the reader exits at its first
# match, the writer still writing dies of SIGPIPE, and under pipefail the
# pipeline reports failure though it matched. An `if` then takes the wrong
# branch at random (CI stop 24 failed on `ldd ... | grep -q`; a check like
# `objdump ... | grep -q '%ymm'` passed without looking). Capture the output
# first (x=$(cmd); grep -q ... <<<"$x"), or use find -print -quit.
# Usage: script_check.sh SOURCE_DIR. Exit 0 clean, 1 with the lines printed.
set -u
src=${1:?source dir}
cd "$src" || exit 2
bad=0
for f in $(git ls-files '*.sh' .ci/run 2>/dev/null || find . -name '*.sh'); do
  grep -qE '^[[:space:]]*set .*pipefail' "$f" || continue
  hits=$(grep -nE '\|[[:space:]]*(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head)([[:space:]]|$)' "$f" |
    grep -vE '^[0-9]+:[[:space:]]*#')
  if [ -n "$hits" ]; then
    echo "script_check: $f pipes into a reader that stops early (SIGPIPE under pipefail):"
    echo "$hits"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "script_check: clean"
exit "$bad"
