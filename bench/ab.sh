#!/bin/sh
# Interleaved A/B of two Google Benchmark binaries (this VM's speed drifts by
# up to 2x over an hour, so only binaries run in turn are compared): runs
# A, then B, ROUNDS times over the benchmarks FILTER selects, and prints each
# benchmark's items_per_second (or ops_per_s, its last counter) per round
# and its median, in M/s.
#
#   bench/ab.sh ROUNDS FILTER BINARY_A BINARY_B [extra benchmark flags]
#   bench/ab.sh 5 'BM_DurableAdd/type:1/durability:1/iterations:4000000/real_time/threads:[12]$' \
#       old/bench/persistence_bench build-ci/build/bench/persistence_bench
set -eu
rounds=${1:?usage: ab.sh ROUNDS FILTER BINARY_A BINARY_B [flags]}
filter=$2
a=$3
b=$4
shift 4
i=0
while [ "$i" -lt "$rounds" ]; do
  for side in A B; do
    bin=$a
    [ "$side" = B ] && bin=$b
    "$bin" --benchmark_filter="$filter" --benchmark_min_time=0.3 "$@" 2>/dev/null |
      awk -v side="$side" '/(items_per_second|ops_per_s)=/ {
        # the last such counter (other counters may follow it)
        for (f = 1; f <= NF; f++) if ($f ~ /^(items_per_second|ops_per_s)=/) v = $f
        sub("^(items_per_second|ops_per_s)=", "", v); unit = substr(v, length(v) - 2)
        n = v + 0
        if (unit == "k/s") n /= 1000; else if (unit == "G/s") n *= 1000
        else if (unit != "M/s") n /= 1e6
        print $1, side, n }'
  done
  i=$((i + 1))
done | sort -k1,1 -k2,2 -s | awk '
  function flush() {
    if (key == "") return
    # median of vals[1..n] (insertion sort: n is small)
    for (x = 2; x <= n; x++) { t = vals[x]; y = x - 1
      while (y > 0 && vals[y] > t) { vals[y + 1] = vals[y]; y-- } vals[y + 1] = t }
    m = (n % 2) ? vals[(n + 1) / 2] : (vals[n / 2] + vals[n / 2 + 1]) / 2
    printf "%s %s median %.3f M/s  [%s]\n", name, side, m, list
  }
  { k = $1 " " $2
    if (k != key) { flush(); key = k; name = $1; side = $2; n = 0; list = "" }
    vals[++n] = $3; list = list (n > 1 ? " " : "") sprintf("%.3f", $3) }
  END { flush() }'
