// The side-by-side's measuring rules, shared by every structure through
// FilterAPI (filter_api.h):
//
// - Keys are 8-byte integers read from arrays: present keys Remix(2i),
//   absent keys Remix(2i + 1) (a bijection, so the sets are disjoint and
//   the keys random). A loop that computed each key would run more
//   instructions per operation, and at DRAM sizes a loop of one-at-a-time
//   calls runs only as fast as the CPU overlaps consecutive calls' misses.
// - One-at-a-time calls, no barrier between them: results are summed.
// - A unit is one structure at one size: it fills a fresh table with
//   `inserts` keys, one Add at a time (the add cells: every fill is timed,
//   fills are repeated on fresh tables until they add up to min_time),
//   queries every inserted key again (a false negative is counted, never
//   ignored), then times queries of absent keys for at least min_time (the
//   FPR is measured on them), the batch form the same way, and last
//   removes every inserted key (timed; a failed remove is counted).
// - Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so a round
//   in which the thread was descheduled does not count the time it waited;
//   the wall time is kept beside it for the report.
#ifndef SHARDFILTER_BENCH_PEERS_HARNESS_H_
#define SHARDFILTER_BENCH_PEERS_HARNESS_H_

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "filter_api.h"

namespace sbs {

// The murmur3 / splitmix64 finalizer: a bijection of 64-bit integers.
inline constexpr uint64_t Remix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}
inline uint64_t PresentKey(uint64_t i) { return Remix(2 * i); }
inline uint64_t AbsentKey(uint64_t i) { return Remix(2 * i + 1); }

inline double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
inline double WallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU and wall time of one timed stretch.
struct Stopwatch {
  double cpu0 = CpuSeconds(), wall0 = WallSeconds();
  double cpu() const { return CpuSeconds() - cpu0; }
  double wall() const { return WallSeconds() - wall0; }
};

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Where results no figure needs go: GCC finds the timed loops free of side
// effects and drops a call whose result is unused, noinline or not.
inline volatile uint64_t g_sink;

// What one unit is asked to do.
struct UnitSpec {
  uint64_t capacity = 0;  // what the structure is sized for
  uint64_t inserts = 0;   // keys added: present[0 .. inserts)
  bool time_add = false;  // repeat fills until min_time (else one, untimed)
  bool query = false;     // absent keys, one at a time
  bool batch = false;     // absent keys, the batch form
  bool remove = false;    // every inserted key, one at a time
  bool dep = false;       // the floor's dependent loads
  double min_time = 1.0;  // seconds of thread CPU time per timed cell
  const uint64_t* present = nullptr;  // >= inserts keys
  const uint64_t* absent = nullptr;   // >= inserts keys
};

// What it measured. ns: ns per op by cell ("add", "add10" (the fill's last
// 10%), "query", "batch", "remove", "dep").
struct UnitResult {
  std::map<std::string, double> ns;
  double fpr = kNaN;            // positives / absent keys queried
  double bits_per_item = kNaN;  // Bytes * 8 / inserts
  double load = kNaN;           // inserts / Slots (cuckoo tables)
  uint64_t checked = 0;         // inserted keys queried again
  uint64_t false_negatives = 0;
  uint64_t failed_adds = 0;
  uint64_t failed_removes = 0;
  double cpu = 0, wall = 0;  // over the timed cells, for the report
};

// One structure of the side-by-side. Its cells are "<id>.<op>.<size>".
struct Row {
  std::string id;
  UnitResult (*run)(const UnitSpec&) = nullptr;
  bool every_size = true;  // false: at the largest size only
  // Capacity and inserts at size n; null: n and n.
  uint64_t (*capacity)(uint64_t n) = nullptr;
  uint64_t (*inserts)(uint64_t n) = nullptr;
  // Null: at every size it is run at; else only where it returns true.
  bool (*applies)(uint64_t n) = nullptr;
  bool batch = false;   // a batched query cell at the largest size
  bool remove = false;  // a remove cell at the largest size
  bool floor = false;   // not a filter: "query" and "dep" cells only
};

inline std::vector<Row>& Rows() {
  static std::vector<Row> rows;
  return rows;
}
// Called by each structure's translation unit (*_rows.cc) at static
// initialization.
inline bool RegisterRow(Row row) {
  Rows().push_back(std::move(row));
  return true;
}

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "side_by_side: %s\n", what.c_str());
  std::exit(2);
}

// The timed loops: out of line, one instance per structure, the calls
// inline in them and the loop state in locals.
template <typename A>
[[gnu::noinline]] uint64_t AddRange(typename A::Table* t, const uint64_t* keys,
                                    uint64_t b, uint64_t e) {
  uint64_t failed = 0;
  for (uint64_t i = b; i < e; ++i) failed += !A::Add(keys[i], t);
  return failed;
}
template <typename A>
[[gnu::noinline]] uint64_t ContainRange(const typename A::Table* t,
                                        const uint64_t* keys, uint64_t b,
                                        uint64_t e) {
  uint64_t found = 0;
  for (uint64_t i = b; i < e; ++i) found += A::Contain(keys[i], t);
  return found;
}
template <typename A>
[[gnu::noinline]] uint64_t RemoveRange(typename A::Table* t,
                                       const uint64_t* keys, uint64_t b,
                                       uint64_t e) {
  uint64_t failed = 0;
  for (uint64_t i = b; i < e; ++i) failed += !A::Remove(keys[i], t);
  return failed;
}
template <typename A>
[[gnu::noinline]] uint64_t ContainBatches(const typename A::Table* t,
                                          const uint64_t* keys, uint64_t b,
                                          uint64_t e) {
  uint64_t found = 0;
  uint8_t out[kMaxBatch];
  for (uint64_t i = b; i < e; i += kMaxBatch) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kMaxBatch, e - i));
    A::ContainBatch(keys + i, n, out, t);
    for (size_t j = 0; j < n; ++j) found += out[j];
  }
  return found;
}

// Runs `loop(b, e)` over keys [0, n) in chunks, round and round, until the
// thread's CPU time reaches min_time; returns positives and counts ops,
// CPU and wall seconds. Chunks of 64 batches (or all n keys), so that
// batched loops get whole batches; the clock is read once per chunk.
template <typename Loop>
uint64_t Repeat(uint64_t n, double min_time, Loop loop, uint64_t* ops,
                double* cpu, double* wall) {
  const uint64_t chunk = std::min<uint64_t>(n, 64 * kMaxBatch);
  uint64_t found = 0, done = 0, b = 0;
  Stopwatch sw;
  double elapsed = 0;
  do {
    const uint64_t e = std::min(n, b + chunk);
    found += loop(b, e);
    done += e - b;
    b = e == n ? 0 : e;
    elapsed = sw.cpu();
  } while (elapsed < min_time);
  *ops = done;
  *cpu = elapsed;
  *wall = sw.wall();
  return found;
}

template <Adaptor A>
UnitResult RunUnit(const UnitSpec& s) {
  using Table = typename A::Table;
  UnitResult r;
  const uint64_t n = s.inserts;
  const uint64_t split = n - n / 10;  // the last 10% of the fill apart
  std::shared_ptr<Table> table;
  double add_cpu = 0, add10_cpu = 0;
  uint64_t fills = 0;
  do {
    table.reset();  // the previous table is gone before the next is made
    table = A::Construct(s.capacity);
    Table* t = table.get();
    Stopwatch sw;
    const double c0 = CpuSeconds();
    r.failed_adds += AddRange<A>(t, s.present, 0, split);
    const double c1 = CpuSeconds();
    r.failed_adds += AddRange<A>(t, s.present, split, n);
    const double c2 = CpuSeconds();
    add_cpu += c2 - c0;
    add10_cpu += c2 - c1;
    r.wall += sw.wall();
    ++fills;
  } while (s.time_add && add_cpu < s.min_time);
  if (s.time_add) {
    r.ns["add"] = 1e9 * add_cpu / static_cast<double>(fills * n);
    if (n - split > 0) {
      r.ns["add10"] = 1e9 * add10_cpu / static_cast<double>(fills * (n - split));
    }
    r.cpu += add_cpu;
  } else {
    r.wall = 0;
  }
  Table* t = table.get();
  r.bits_per_item = 8.0 * static_cast<double>(A::Bytes(*t)) / static_cast<double>(n);
  if (const uint64_t slots = A::Slots(*t); slots > 0) {
    r.load = static_cast<double>(n) / static_cast<double>(slots);
  }
  r.checked = n;
  r.false_negatives = n - ContainRange<A>(t, s.present, 0, n);

  uint64_t ops = 0;
  double cpu = 0, wall = 0;
  if (s.query) {
    const uint64_t found = Repeat(
        n, s.min_time,
        [&](uint64_t b, uint64_t e) { return ContainRange<A>(t, s.absent, b, e); },
        &ops, &cpu, &wall);
    r.ns["query"] = 1e9 * cpu / static_cast<double>(ops);
    r.fpr = static_cast<double>(found) / static_cast<double>(ops);
    r.cpu += cpu;
    r.wall += wall;
  }
  if constexpr (A::kBatch) {
    if (s.batch) {
      g_sink = Repeat(
          n, s.min_time,
          [&](uint64_t b, uint64_t e) {
            return ContainBatches<A>(t, s.absent, b, e);
          },
          &ops, &cpu, &wall);
      r.ns["batch"] = 1e9 * cpu / static_cast<double>(ops);
      r.cpu += cpu;
      r.wall += wall;
    }
  }
  if constexpr (A::kRemove) {
    if (s.remove) {
      Stopwatch sw;
      const double c0 = CpuSeconds();
      r.failed_removes += RemoveRange<A>(t, s.present, 0, n);
      const double c = CpuSeconds() - c0;
      r.ns["remove"] = 1e9 * c / static_cast<double>(n);
      r.cpu += c;
      r.wall += sw.wall();
    }
  }
  return r;
}

// A row of the structure FilterAPI<Tag> adapts, measured by RunUnit.
template <typename Tag>
Row MakeRow(const char* id) {
  Row r;
  r.id = id;
  r.run = &RunUnit<FilterAPI<Tag>>;
  return r;
}

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_HARNESS_H_
