#!/usr/bin/env bash
# The side-by-side with the peers (bench/peers/README.md): builds this
# checkout's library with -march=native and the harness against the peers'
# checkouts under PEERS_DIR, out of the source tree, runs it and prints
# README.md's performance table (markdown, on stdout; progress on stderr).
#
#   PEERS_DIR=/path bench/peers/run.sh [--rounds N] [--sizes 1e6,5e7]
#       [--only CELLS] [--min-time SECONDS] [--seed S] [--raw FILE]
#       [--list] [--build-dir DIR] [--jobs J]
#
# PEERS_DIR holds fastfilter_cpp/, cuckoofilter/ and rocksdb/ (git clones
# at the commits below; another commit is measured, with a warning).
# Defaults: 7 rounds, sizes 1e6 and 5e7 (about half an hour, 1.5 GB), cells
# of at least 1 s. --only takes comma-separated globs over the cells
# <row>.<op>.<size> (a row's id alone selects all of its cells; --list
# prints them). The build directory defaults to build/peers (ignored by
# git) and must not be a tracked part of the source tree.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# The commits the README's figures were measured with.
declare -A want=([fastfilter_cpp]=924e5608 [cuckoofilter]=917583d6 [rocksdb]=1dfa7297)
declare -A url=([fastfilter_cpp]=https://github.com/FastFilter/fastfilter_cpp
                [cuckoofilter]=https://github.com/efficient/cuckoofilter
                [rocksdb]=https://github.com/facebook/rocksdb)
declare -A needs=([fastfilter_cpp]=src/bloom/simd-block-fixed-fpp.h
                  [cuckoofilter]=src/cuckoofilter.h
                  [rocksdb]=util/bloom_impl.h)

die() { echo "run.sh: $*" >&2; exit 2; }

build_dir="$repo/build/peers"
jobs="${JOBS:-2}"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build_dir="$2"; shift 2 ;;
    --build-dir=*) build_dir="${1#--build-dir=}"; shift ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a value"; jobs="$2"; shift 2 ;;
    --jobs=*) jobs="${1#--jobs=}"; shift ;;
    -h|--help) sed -n '2,16p' "$0" | cut -c3-; exit 0 ;;
    --list) args+=("$1"); shift ;;
    --rounds|--sizes|--only|--min-time|--seed|--raw)
      [ $# -ge 2 ] || die "$1 needs a value"
      args+=("$1" "$2"); shift 2 ;;
    --rounds=*|--sizes=*|--only=*|--min-time=*|--seed=*|--raw=*) args+=("$1"); shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[ -n "${PEERS_DIR:-}" ] || die "set PEERS_DIR to the directory holding the peers' checkouts (bench/peers/README.md)"
[ -d "$PEERS_DIR" ] || die "PEERS_DIR=$PEERS_DIR is not a directory"
PEERS_DIR="$(cd "$PEERS_DIR" && pwd)"

commits=()
for peer in fastfilter_cpp cuckoofilter rocksdb; do
  dir="$PEERS_DIR/$peer"
  if [ ! -f "$dir/${needs[$peer]}" ]; then
    die "missing checkout $dir (no $dir/${needs[$peer]}): git clone ${url[$peer]} $dir && git -C $dir checkout ${want[$peer]}"
  fi
  have=$(git -C "$dir" rev-parse --short=8 HEAD 2>/dev/null || echo "")
  if [ -z "$have" ]; then
    echo "run.sh: warning: $dir is not a git checkout; its commit is unknown (the figures were measured at ${want[$peer]})" >&2
    have="unknown"
  elif [ "$have" != "${want[$peer]}" ]; then
    echo "run.sh: warning: $dir is at $have, the figures were measured at ${want[$peer]}" >&2
  fi
  commits+=("$have")
done

# Out of the source tree: anywhere outside it, or inside it where git
# ignores it (build/).
build_dir="$(realpath -m "$build_dir")"
case "$build_dir/" in
  "$repo"/*)
    git -C "$repo" check-ignore -q "$build_dir" \
      || die "--build-dir $build_dir is inside the source tree and not ignored by git; use build/... or a directory under \$TMPDIR"
    ;;
esac
mkdir -p "$build_dir"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$build_dir" "${generator[@]}" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DPEERS_DIR="$PEERS_DIR" >&2
else
  cmake -S "$here" -B "$build_dir" -DPEERS_DIR="$PEERS_DIR" >&2
fi
cmake --build "$build_dir" --target side_by_side -j "$jobs" >&2

# The peers' tables come from malloc: on huge pages, as shardfilter
# advises its own tables.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1}"
for a in "${args[@]}"; do
  [ "$a" = "--list" ] && exec "$build_dir/side_by_side" "${args[@]}"
done

lib=$(git -C "$repo" describe --always --dirty --abbrev=8 2>/dev/null || echo "unknown")
cpu=$(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo 2>/dev/null)
echo "shardfilter \`$lib\` (-march=native); fastfilter_cpp \`${commits[0]}\`, efficient/cuckoofilter \`${commits[1]}\`, RocksDB \`${commits[2]}\`'s \`util/bloom_impl.h\`; $(nproc) CPUs (${cpu:-unknown}), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; $(date -u '+%Y-%m-%d %H:%M UTC')."
echo
exec "$build_dir/side_by_side" "${args[@]}"
