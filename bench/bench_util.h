// Shared pieces of the benchmarks: key streams, hashing as a user would do
// it, and the counters every filter benchmark reports.
#ifndef SHARDFILTER_BENCH_BENCH_UTIL_H_
#define SHARDFILTER_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::bench {

// A fresh directory under $TMPDIR (default /tmp) for a benchmark's store.
inline std::string TempPath(const char* stem = "sfbench") {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/" + stem + "_XXXXXX";
  return mkdtemp(tmpl.data()) ? tmpl : std::string("/tmp/") + stem;
}

// Benchmarks have no error path: a failed setup step aborts the run.
inline void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    abort();
  }
}

// 8-byte keys: present keys are 2i, absent keys 2i+1 (disjoint sets), both
// passed through a mixer so that memory access is random.
// A writable store at `path` that does not checkpoint on close (benchmarks
// time their own checkpoints); exits on failure.
inline std::unique_ptr<Database> OpenBenchStore(const std::string& path) {
  DatabaseOptions o;
  o.path = path;
  o.checkpoint_on_close = false;
  auto opened = Database::Open(o);
  Check(opened.status());
  return std::move(*opened);
}

// Seconds of wall time since t0.
inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

inline uint64_t PresentKey(uint64_t i) { return Remix(2 * i); }
inline uint64_t AbsentKey(uint64_t i) { return Remix(2 * i + 1); }

// The key bytes as a user hands them over (hashing is part of every
// measured operation, as in docs/performance.md's targets).
inline std::string_view KeyBytes(const uint64_t& k) {
  return std::string_view(reinterpret_cast<const char*>(&k), sizeof k);
}

// Sets ns/op-independent counters: bits per item, measured FPR, ops/s.
inline void ReportFilterCounters(benchmark::State& state, double bits_per_item,
                                 double measured_fpr) {
  // Averaged over threads: every thread reports the same filter's figure.
  state.counters["bits_per_item"] =
      benchmark::Counter(bits_per_item, benchmark::Counter::kAvgThreads);
  state.counters["fpr_pct"] =
      benchmark::Counter(measured_fpr * 100.0, benchmark::Counter::kAvgThreads);
  state.counters["ops_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace shardfilter::bench

#endif  // SHARDFILTER_BENCH_BENCH_UTIL_H_
