#!/bin/sh
# Comments, scripts and docs state invariants, contracts and reasons, not
# the project's history: no tracked text file names one of this project's
# working sessions or issues by number ("session" or "issue" followed by a
# number, also when a line break falls between the word and the number).
# History belongs in commit messages; measured figures in
# docs/performance.md, the one file not checked. External citations stay:
# `RedisBloom#34`, `github.com/OWNER/REPO/issues/N` and "<project> issue N"
# for a project named in EXTERNAL below (add a name there to cite another).
# Usage: history_check.sh SOURCE_DIR (tracked files when SOURCE_DIR is a
# git checkout, else every file outside build*/ and .git/). Exit 0 clean,
# 1 with the offending lines printed.
#   history_check.sh --self-test   plants lines in a scratch repository and
#                                  checks what is found (exit 77: no git).
set -u
EXTERNAL='redisbloom|redis|rocksdb|xxhash|fastfilter_cpp|fastfilter|cuckoofilter|gcc|llvm|clang|glibc|linux|valgrind|googletest|benchmark|onetbb|tbb|hiredis|redis-py|ioredis|jedis|debian|ubuntu|cmake|ninja|libfuzzer|cpython|node'

# Prints FILE:LINE: TEXT for each offending line of the files named on
# stdin, one per line.
scan() {
  xargs awk -v ext="$EXTERNAL" -v q="'" '
    # 1 when `l` (lower case) holds a session or issue number that is not
    # the citation of an external project.
    function cites(l, rest, off, pre) {
      rest = l; off = 0
      while (match(rest, /(sessions?|issues?) #?[0-9]/)) {
        pre = substr(l, 1, off + RSTART - 1)
        if (pre !~ /[a-z0-9_]$/ && pre !~ extpre) return 1
        off += RSTART + RLENGTH - 1
        rest = substr(rest, RSTART + RLENGTH)
      }
      return 0
    }
    BEGIN { extpre = "(^|[^a-z0-9_])(" ext ")(" q "s)? $" }
    FNR == 1 { tail = 0 }
    {
      l = tolower($0)
      if (cites(l)) {
        print FILENAME ":" FNR ": " $0
      } else if (tail && l ~ /^[ \t]*((\/\/+|#+|\*|--)[ \t]*)?#?[0-9]/) {
        # The word ended the previous line; the number starts this one.
        print FILENAME ":" FNR - 1 ": " prev
        print FILENAME ":" FNR ": " $0
      }
      tail = 0
      if (match(l, /(sessions?|issues?)( #)?[ \t]*$/)) {
        pre = substr(l, 1, RSTART - 1)
        tail = pre !~ /[a-z0-9_]$/ && pre !~ extpre
      }
      prev = $0
    }'
}

# The files to check, relative to the current directory, one per line.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Text files only (-I), tracked, as they are in the working tree.
    git grep -I -l -e '' -- . ':(exclude)docs/performance.md'
  else
    find . \( -path './.git' -o -path './build*' \) -prune -o -type f -print |
      sed 's|^\./||' | grep -v -x 'docs/performance.md' |
      while read -r f; do grep -I -q '' "$f" 2>/dev/null && echo "$f"; done
  fi
}

check() {
  hits=$(list_files | scan)
  if [ -n "$hits" ]; then
    echo "history_check: project sessions or issues cited by number (state the"
    echo "invariant, contract or reason instead; history goes in the commit"
    echo "message, figures in docs/performance.md):"
    echo "$hits"
    return 1
  fi
  echo "history_check: clean"
}

self_test() {
  command -v git >/dev/null || { echo "history_check: git missing" >&2; exit 77; }
  tmp=$(mktemp -d) || exit 2
  trap 'rm -rf "$tmp"' EXIT
  cd "$tmp" && git init -q . || exit 2
  mkdir -p docs src
  # The planted lines are built from parts, so that this script itself
  # holds none of them.
  s=Sess; i=iss
  printf '// fixed for %sue 53 by the lead\n' "$i" >src/a.cc
  printf '# %sion 20, 5e7 keys: 1.2x\n' "$s" >src/b.sh
  printf '// the counting add (%sue\n// 15: within 1.5x)\nint x;\n' "$i" >src/c.h
  printf 'see %sues #7 and 8\n' "$i" >docs/d.md
  printf 'Figures of %sion 12 and %sue 15.\n' "$s" "$i" >docs/performance.md
  cat >src/ok.cc <<EOF
// RedisBloom#34; redis#1234; github.com/RedisBloom/RedisBloom/issues/34
// RedisBloom ${i}ue 34, RocksDB's ${i}ue #1234: external citations.
commands::Session session;  // one session per connection
int t${i}ue 3;
EOF
  git add -A || exit 2
  out=$(check)
  status=$?
  bad=0
  [ "$status" -eq 1 ] || { echo "self-test: planted lines: exit $status, not 1"; bad=1; }
  for want in 'src/a.cc:1:' 'src/b.sh:1:' 'src/c.h:1:' 'src/c.h:2:' 'docs/d.md:1:'; do
    case "$out" in
      *"$want"*) ;;
      *) echo "self-test: $want not reported"; bad=1 ;;
    esac
  done
  case "$out" in
    *docs/performance.md:*|*src/ok.cc:*|*src/c.h:3:*)
      echo "self-test: an allowed line was reported"; bad=1 ;;
  esac
  git rm -q --cached src/a.cc src/b.sh src/c.h docs/d.md || exit 2
  out=$(check)
  status=$?
  [ "$status" -eq 0 ] || { echo "self-test: allowed lines only: exit $status, not 0"; bad=1; }
  if [ "$bad" -ne 0 ]; then
    echo "$out"
    exit 1
  fi
  echo "history_check: self-test passed"
  exit 0
}

if [ "${1:-}" = --self-test ]; then self_test; fi
src=${1:?usage: history_check.sh SOURCE_DIR | --self-test}
cd "$src" || exit 2
check
