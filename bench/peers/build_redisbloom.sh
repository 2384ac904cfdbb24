#!/usr/bin/env bash
# Builds RedisBloom's redisbloom.so from a checkout under PEERS_DIR, offline,
# for the server and module benchmarks that compare against it
# (bench/server_bench.sh, tools/module/bench.sh: REDISBLOOM_SO=...).
#
#   PEERS_DIR=/path bench/peers/build_redisbloom.sh [--out DIR] [--no-check]
#
# Prints the path of redisbloom.so on stdout (everything else goes to
# stderr), so that
#   REDISBLOOM_SO=$(PEERS_DIR=/path bench/peers/build_redisbloom.sh)
# works. The checkout is $PEERS_DIR/RedisBloom (v2.8.20, the version Debian's
# redis-server 7.0 loads) with two of its git submodules populated:
# deps/t-digest-c and deps/RedisModulesSDK (bench/peers/README.md says how
# to get them without network). Nothing is written into the checkout.
#
# Why not RedisBloom's own `make`: it includes the deps/readies submodule
# (a make framework), which runs `git submodule update` (network) when a
# submodule is empty and asks Python for the platform; and v2.8.20 pins a
# readies commit that GitHub's readies repository may not hold. The module
# itself is the eleven C files and the t-digest library that its Makefile
# lists; this script compiles exactly those, with the flags that Makefile
# and readies' mk/cc.defs give a release build (no NDEBUG: asserts stay on,
# as upstream), and t-digest-c as build/t-digest-c/Makefile configures it
# (RedisBloom's allocator header). The one readies file the sources include,
# readies/cetara/diag/gdb.h (src/common.h, when NDEBUG is not defined),
# defines only the _BB breakpoint macro, and only under DEBUG; when
# deps/readies is not populated, an empty header of that name stands in
# for it (the script checks that no source uses _BB).
#
# After the build the module is loaded into redis-server on a free port
# (when redis-server is installed) and answers MODULE LIST, BF.ADD,
# BF.EXISTS, CF.ADD and CF.EXISTS, or the script fails. --no-check skips it.
set -euo pipefail

out=""
check=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --no-check) check=0; shift ;;
    -h|--help) sed -n '2,32p' "$0" | cut -c3-; exit 0 ;;
    *) echo "build_redisbloom.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "build_redisbloom.sh: $*" >&2; exit 1; }
say() { echo "build_redisbloom.sh: $*" >&2; }

[ -n "${PEERS_DIR:-}" ] || die "set PEERS_DIR to the directory holding the RedisBloom checkout (bench/peers/README.md)"
src="$PEERS_DIR/RedisBloom"
[ -f "$src/src/rebloom.c" ] || die "no RedisBloom checkout at $src (expected $src/src/rebloom.c): git clone https://github.com/RedisBloom/RedisBloom $src && git -C $src checkout v2.8.20"

# The version the sources declare (src/version.h), e.g. 2.8.20.
version_part() {
  sed -n "s/^#define REBLOOM_VERSION_$1 \\([0-9]*\\).*/\\1/p;T;q" "$src/src/version.h"
}
version="$(version_part MAJOR).$(version_part MINOR).$(version_part PATCH)"
[ "$version" = "2.8.20" ] || say "warning: $src declares version $version; the benchmarks were measured with 2.8.20"

# Each submodule the build needs, by a file it must hold.
missing=0
for need in "deps/t-digest-c:src/tdigest.c" "deps/RedisModulesSDK:redismodule.h"; do
  sub="${need%%:*}"
  file="${need#*:}"
  if [ ! -f "$src/$sub/$file" ]; then
    pinned=""
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
      pinned=$(git -C "$src" ls-tree HEAD "$sub" | awk '{print $3}')
    fi
    url=$(git config -f "$src/.gitmodules" --get "submodule.$sub.url" 2>/dev/null || true)
    say "missing submodule $sub (no $src/$sub/$file): it is ${url:-a git submodule} at commit ${pinned:-<see git ls-tree HEAD $sub>}"
    missing=1
  fi
done
if [ "$missing" = 1 ]; then
  die "populate the submodules above: with network, git -C $src submodule update --init deps/t-digest-c deps/RedisModulesSDK; offline, see bench/peers/README.md (deps/readies is not needed)"
fi

cc="${CC:-cc}"
command -v "$cc" >/dev/null || die "no C compiler ($cc)"
if [ -z "$out" ]; then
  out="${TMPDIR:-/tmp}/shardfilter-redisbloom-$version"
fi
case "$(realpath -m "$out")/" in
  "$(realpath "$src")"/*) die "--out $out is inside the checkout; choose a directory outside it" ;;
esac
mkdir -p "$out/obj"
out="$(realpath "$out")"

# Release flags of RedisBloom's Makefile and readies' mk/cc.defs.
common_flags=(-O3 -g -fPIC -pthread -fno-strict-aliasing -fcommon
  -Wno-unused-function -Wno-unused-variable -Wno-sign-compare
  -Werror=incompatible-pointer-types -Werror=implicit-function-declaration)
module_flags=(-std=gnu99 -D_GNU_SOURCE -DREDIS_MODULE_TARGET -DREDISMODULE_SDK_RLEC
  -I"$src" -I"$src/src" -I"$src/deps/RedisModulesSDK" -I"$src/deps"
  -I"$src/deps/murmur2" -I"$src/deps/t-digest-c/src")
# t-digest-c with RedisBloom's allocator (build/t-digest-c/Makefile): the
# include is relative to deps/t-digest-c/src.
tdigest_flags=(-std=c99 -DNDEBUG
  '-DTD_MALLOC_INCLUDE="../../../src/td_redismodule_malloc.h"'
  -I"$src/deps/t-digest-c/src")
sources=(deps/bloom/bloom.c deps/murmur2/MurmurHash2.c deps/rmutil/util.c
  src/rebloom.c src/sb.c src/cf.c src/rm_topk.c src/rm_tdigest.c src/topk.c
  src/rm_cms.c src/cms.c)

# src/common.h includes readies/cetara/diag/gdb.h (see the top).
if [ ! -f "$src/deps/readies/cetara/diag/gdb.h" ]; then
  if grep -rqw -e _BB -e __via_gdb "$src/src" "$src/deps/bloom" "$src/deps/rmutil" \
      "$src/deps/murmur2"; then
    die "the sources use readies' _BB: populate deps/readies (bench/peers/README.md)"
  fi
  mkdir -p "$out/include/readies/cetara/diag"
  printf '%s\n' \
    "/* Stands in for readies' cetara/diag/gdb.h (bench/peers/build_redisbloom.sh):" \
    "   that header defines only _BB, and only in DEBUG builds. */" \
    "#pragma once" >"$out/include/readies/cetara/diag/gdb.h"
  module_flags+=(-I"$out/include")
fi

objects=()
compile() {  # compile <source relative to $src> <flags...>
  local rel="$1"; shift
  local obj="$out/obj/${rel//\//_}.o"
  "$cc" "${common_flags[@]}" "$@" -c "$src/$rel" -o "$obj"
  objects+=("$obj")
}
say "compiling RedisBloom $version from $src into $out"
compile deps/t-digest-c/src/tdigest.c "${tdigest_flags[@]}"
for s in "${sources[@]}"; do
  [ -f "$src/$s" ] || die "$src/$s is missing: this script lists the sources of v2.8.20's Makefile (_SOURCES)"
  compile "$s" "${module_flags[@]}"
done
"$cc" -shared -flto -pthread -Wl,-Bsymbolic,-Bsymbolic-functions \
  -o "$out/redisbloom.so" "${objects[@]}" -lm
so="$out/redisbloom.so"

if [ "$check" = 1 ]; then
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    say "NOT CHECKED: redis-server / redis-cli not found, the module was built but never loaded (--no-check silences this)"
  else
    port=""
    for p in $(shuf -i 20000-60000 -n 20); do
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
    done
    [ -n "$port" ] || die "no free port found to check the module"
    dir=$(mktemp -d "${TMPDIR:-/tmp}/redisbloom-check.XXXXXX")
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir" --loadmodule "$so" >"$dir/redis.log" 2>&1 &
    pid=$!
    stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"; }
    trap stop EXIT
    up=0
    for _ in $(seq 1 100); do
      if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = "PONG" ]; then up=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if [ "$up" != 1 ]; then
      cat "$dir/redis.log" >&2
      die "redis-server did not come up with $so loaded (its log is above)"
    fi
    cli() { redis-cli -p "$port" "$@"; }
    modules=$(cli MODULE LIST | tr '\n' ' ')
    want_ver=$(( $(version_part MAJOR) * 10000 + $(version_part MINOR) * 100 + $(version_part PATCH) ))
    grep -q "bf ver $want_ver" <<<"$modules" \
      || die "MODULE LIST does not show bf version $want_ver: $modules"
    answers="$(cli BF.ADD k a) $(cli BF.EXISTS k a) $(cli BF.EXISTS k b) $(cli CF.ADD c a) $(cli CF.EXISTS c a) $(cli CF.EXISTS c b)"
    [ "$answers" = "1 1 0 1 1 0" ] \
      || die "BF.ADD/BF.EXISTS/CF.ADD/CF.EXISTS answered '$answers', expected '1 1 0 1 1 0'"
    say "checked: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') loads it (bf ver $want_ver), BF and CF answer"
  fi
fi
echo "$so"
