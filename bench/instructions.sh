#!/bin/sh
# Instructions per one-at-a-time call, by callgrind (no timing noise): runs
# every scenario of sf_instructions (bench/instructions_main.cc) under
#   valgrind --tool=callgrind --toggle-collect=<its loop>
# and prints instructions per call. With a budget file (lines "scenario
# max"), exits 1 when a scenario needs more than its budget: a regression
# in the per-call paths, found without timing.
#
#   bench/instructions.sh build/bench/sf_instructions [bench/instruction_budgets.txt]
#   bench/instructions.sh --check-budgets bench/instruction_budgets.txt
#
# The budget file is checked first (the second form checks only that, a
# unit test): every line that is not blank or a comment must be
# "scenario integer", each scenario once: a comment line that lost its
# '#' would read as a second budget, and a two-line budget makes the check
# compare strings ("100.0" > "58<newline>58" is false: a silent pass).
# Needs valgrind, and a build without AVX-512 (SHARDFILTER_NATIVE=OFF; the
# CI and package builds): Debian's valgrind 3.19 cannot decode it.
set -u
check_budgets() {
  bad=$(awk '/^[[:space:]]*(#|$)/ { next }
             NF != 2 || $2 !~ /^[0-9]+$/ { print FILENAME ":" FNR ": not \"scenario integer\": " $0; next }
             seen[$1]++ { print FILENAME ":" FNR ": " $1 " has a second budget" }' "$1") || return 1
  if [ -n "$bad" ]; then
    echo "instructions.sh: malformed budget file:" >&2
    echo "$bad" >&2
    return 1
  fi
}
if [ "${1:-}" = --check-budgets ]; then
  check_budgets "${2:?usage: instructions.sh --check-budgets BUDGETS}" || exit 1
  echo "instructions.sh: $2 is well formed"
  exit 0
fi
bin=${1:?usage: instructions.sh SF_INSTRUCTIONS [BUDGETS]}
budgets=${2:-}
if [ -n "$budgets" ]; then check_budgets "$budgets" || exit 1; fi
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind missing" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
printf '%-24s %12s %8s\n' scenario instructions budget
"$bin" --list | while read -r name fn ops; do
  valgrind --tool=callgrind --callgrind-out-file="$tmp/$name.out" \
    --toggle-collect="$fn" "$bin" "$name" >/dev/null 2>"$tmp/$name.err" || {
    echo "instructions.sh: $name failed:" >&2; cat "$tmp/$name.err" >&2; exit 1; }
  total=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$tmp/$name.out")
  per=$(awk -v t="$total" -v n="$ops" 'BEGIN { printf "%.1f", t / n }')
  max=""
  if [ -n "$budgets" ]; then
    max=$(awk -v s="$name" '$1 == s { print $2 }' "$budgets")
  fi
  printf '%-24s %12s %8s\n' "$name" "$per" "${max:--}"
  if [ -n "$budgets" ] && [ -z "$max" ]; then
    echo "instructions.sh: $name has no budget in $budgets" >&2
    echo fail >"$tmp/failed"
  fi
  if [ -n "$max" ] && awk -v p="$per" -v m="$max" 'BEGIN { exit !(p > m) }'; then
    echo "instructions.sh: $name needs $per instructions per call, over its budget of $max" >&2
    echo fail >"$tmp/failed"
  fi
done || status=1
[ -e "$tmp/failed" ] && status=1
exit $status
