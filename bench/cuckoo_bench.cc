// CuckooFilter benchmarks: ns/op of add, query (present / absent) and
// remove at 1e6 and 5e7 items, load 50% and 95%, 1 and 2 threads; a mixed
// 90% query / 10% insert workload. Every op hashes an 8-byte key (XXH3).
// Counters: bits_per_item (table bits / items held), fpr_pct (measured on
// 1e6 absent keys), ops_per_s, and ns_per_op for the phase benchmarks.
//
//   build-cuckoo/bench/cuckoo_bench --benchmark_min_time=0.2 \
//       --benchmark_filter='/1000000/' --benchmark_counters_tabular=true
//
// Targets (12-bit fingerprints, b = 4, 2-core machine): <= 13 bits/item at
// 95% with FPR <= 0.2%; at 5e7 query <= 45 ns, insert <= 110 ns up to 95%,
// remove <= 50 ns; at 1e6 query <= 10 ns; 2 threads of the mixed workload
// >= 1.6x one thread. Big filters are built once (static cache).
//
// Over 400 lines: each phase benchmark shares the fill and key helpers.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/hash.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace shardfilter::bench {
namespace {

std::unique_ptr<CuckooFilter> NewFilter(uint64_t n) {
  CuckooOptions o;
  o.capacity = n;
  o.fingerprint_bits = 12;
  o.bucket_size = 4;
  return std::move(CuckooFilter::Create(o)).value();
}

// Items for a load in percent of the slots (95% of slots is 1.01 x the
// capacity, which is sized for 94%).
uint64_t ItemsFor(const CuckooFilter& f, int load_pct) {
  return f.num_buckets() * f.bucket_size() * load_pct / 100;
}

// The keys of the one-at-a-time benchmarks, generated once into arrays and
// read sequentially, as the reference implementation's harness does (a
// vector of random 64-bit keys). Generating a key per op (PresentKey, a
// Remix: two multiplies and shifts) puts ~12 more instructions into every
// op, and at 5e7 items, where a loop of independent ops runs as fast as
// the CPU overlaps their misses, that cost 2 ns per query, 10 per remove
// and 25 per insert (measured in one run). The keys are the same values;
// hashing them (XXH3) is still part of every op. Grown under a lock,
// before the timed loops, to the largest count asked for; never shrunk,
// so pointers stay valid.
struct KeyArrays {
  const uint64_t* present;
  const uint64_t* absent;
};
KeyArrays Keys(uint64_t count) {
  static std::mutex mu;
  static std::unique_ptr<uint64_t[]> present, absent;
  static uint64_t size = 0;
  std::lock_guard<std::mutex> l(mu);
  if (count > size) {
    size = std::max<uint64_t>(count, 1 << 20);
    present.reset(new uint64_t[size]);
    absent.reset(new uint64_t[size]);
    for (uint64_t i = 0; i < size; ++i) {
      present[i] = PresentKey(i);
      absent[i] = AbsentKey(i);
    }
  }
  return {present.get(), absent.get()};
}

// Adds PresentKey(first..last) with `threads` threads, from the key array;
// returns seconds and the number added (stops a thread at its first Full).
std::pair<double, uint64_t> Fill(CuckooFilter& f, uint64_t first, uint64_t last,
                                 int threads) {
  const uint64_t* keys = Keys(last).present;
  std::vector<std::thread> ts;
  std::vector<uint64_t> added(threads, 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&added, &f, keys, first, last, threads, t] {
      // Everything the loop uses is a local (captured by value, or counted
      // in n): the filter's lock release is a compiler barrier, after which
      // anything reachable through memory (a [&] closure, the shared
      // vector, benchmark::DoNotOptimize's clobber) is loaded again, and at
      // 5e7 items a loop of independent ops runs at the speed of its
      // instruction count (measured: ~20 ns per op).
      CuckooFilter* const filter = &f;
      uint64_t n = 0;
      for (uint64_t i = first + t; i < last; i += threads) {
        if (!filter->Add(KeyBytes(keys[i])).ok()) break;
        ++n;
      }
      added[t] = n;
    });
  }
  for (auto& th : ts) th.join();
  const double s = SecondsSince(t0);
  uint64_t total = 0;
  for (uint64_t a : added) total += a;
  return {s, total};
}

double MeasureFpr(const CuckooFilter& f) {
  const uint64_t probes = 1'000'000;
  uint64_t hits = 0;
  for (uint64_t i = 0; i < probes; ++i) {
    const uint64_t k = AbsentKey(i);
    hits += f.MayContain(KeyBytes(k));
  }
  return static_cast<double>(hits) / probes;
}

struct Built {
  std::unique_ptr<CuckooFilter> filter;
  uint64_t items = 0;
  double fpr = 0;
  double bits_per_item = 0;
};

// The static cache: one filter per (n, load), built on first use.
Built& Cached(uint64_t n, int load_pct) {
  static std::mutex mu;
  static std::map<std::pair<uint64_t, int>, Built> cache;
  std::lock_guard<std::mutex> l(mu);
  Built& b = cache[{n, load_pct}];
  if (!b.filter) {
    b.filter = NewFilter(n);
    b.items = Fill(*b.filter, 0, ItemsFor(*b.filter, load_pct), 2).second;
    b.fpr = MeasureFpr(*b.filter);
    b.bits_per_item = b.filter->Stats().bytes * 8.0 / b.items;
  }
  return b;
}

void SetCounters(benchmark::State& state, const Built& b) {
  state.counters["bits_per_item"] =
      benchmark::Counter(b.bits_per_item, benchmark::Counter::kAvgThreads);
  state.counters["fpr_pct"] =
      benchmark::Counter(b.fpr * 100, benchmark::Counter::kAvgThreads);
  state.counters["load_pct"] =
      benchmark::Counter(100.0 * b.items / b.filter->Stats().slots,
                         benchmark::Counter::kAvgThreads);
}

// The floor of a one-at-a-time query on this machine: the same XXH3 of the
// same 8-byte keys, the same index math (FastRange64, AltBucket's
// (H(fp) - i1) mod n) and the same two unaligned 8-byte bucket loads with
// the same SWAR test, over a table of the same size (huge pages, random
// contents), but without the filter around it: no layout dispatch, every
// parameter in a register. What the filter's query costs beyond this is
// its own code. args: n (the filter's capacity), variant:
//  0 bare: no seqlock (not safe against moves: the floor of the layout);
//  1 seqlock: the filter's validated read (invariants 4-6 of
//    cuckoo_filter.h): one version word of 1024 (the pair's lower stripe)
//    loaded before the buckets and checked after, the retry branch;
//  2 one line: as 1, but both buckets in one 64-byte line (ten 6-byte
//    buckets a line): one miss per query, the block-local pair of a
//    Morton- or vacuum-style layout (what that layout's load factor
//    allows is another matter: docs/performance.md, "Tried and not
//    kept").
// Measured in 5 interleaved rounds against efficient/cuckoofilter's query
// in one process (its 31.7-31.9 ns at 5e7, 4.7-5.1 at 1e6): bare 33.0-34.5
// / 6.5-6.7, seqlock 46.3-46.8 / 7.4-7.5, one line 50.0 / 8.7; the
// filter 47.8-51.0 / 8.9-9.8. At 5e7 the seqlock, not the second miss, is
// the gap: a loop of independent queries is bound by how many of them
// the CPU's window holds, and the validation's instructions shrink it.
template <int kVariant>
uint64_t QueryFloorRun(const char* table, uint64_t nb, const uint64_t* keys,
                       uint64_t count, uint64_t* next,
                       const std::atomic<uint64_t>* versions) {
  constexpr uint64_t kOnes = 0x1001001001ULL, kHighs = kOnes << 11;
  const uint64_t lines = nb / 10 + 1;
  uint64_t found = 0, i = *next;
  for (int r = 0; r < 256; ++r) {
    const uint64_t h = HashKey(KeyBytes(keys[i]), kDefaultSeed);
    if (++i == count) i = 0;
    const uint64_t fp = (h & 0xFFF) + ((h & 0xFFF) == 0);
    uint64_t o1, o2, s1, s2;
    if constexpr (kVariant == 2) {
      const uint64_t line = FastRange64(h & ~uint64_t{0xFFFF}, lines);
      const uint64_t j1 = (((h >> 12) & 15) * 10) >> 4;  // 0..9
      const uint64_t j2 = (j1 + 1 + fp % 9) % 10;        // another one
      o1 = line * 64 + j1 * 6;
      o2 = line * 64 + j2 * 6;
      s1 = s2 = line;
    } else {
      const uint64_t i1 = FastRange64(h & ~uint64_t{0xFFFF}, nb);
      const uint64_t t = FastRange64(fp * 0x9E3779B97F4A7C15ULL, nb);
      const uint64_t i2 = t >= i1 ? t - i1 : t + nb - i1;
      o1 = i1 * 6;
      o2 = i2 * 6;
      s1 = i1 >> 3;
      s2 = i2 >> 3;
    }
    const std::atomic<uint64_t>& v = versions[std::min(s1, s2) & 1023];
    for (;;) {
      uint64_t v1 = 0;
      if constexpr (kVariant != 0) v1 = v.load(std::memory_order_acquire);
      uint64_t b1, b2;
      std::memcpy(&b1, table + o1, 8);
      std::memcpy(&b2, table + o2, 8);
      const uint64_t x1 = b1 ^ (fp * kOnes), x2 = b2 ^ (fp * kOnes);
      const bool hit =
          ((((x1 - kOnes) & ~x1) | ((x2 - kOnes) & ~x2)) & kHighs) != 0;
      if constexpr (kVariant == 0) {
        found += hit;
        break;
      } else {
        std::atomic_thread_fence(std::memory_order_acquire);
        const uint64_t v2 = v.load(std::memory_order_relaxed);
        if (hit | (((v1 & 1) | (v1 ^ v2)) == 0)) {
          found += hit;
          break;
        }
      }
    }
  }
  *next = i;
  return found;
}

void BM_QueryFloor(benchmark::State& state) {
  const uint64_t nb = NewFilter(state.range(0))->num_buckets();
  const int variant = static_cast<int>(state.range(1));
  // Variant 2's lines hold ten buckets each (the same buckets, 7% more
  // bytes).
  const uint64_t bytes = variant == 2 ? (nb / 10 + 1) * 64 + 8 : nb * 6 + 8;
  const uint64_t huge = 2 << 20;
  char* table = static_cast<char*>(
      std::aligned_alloc(huge, (bytes + huge - 1) / huge * huge));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(table, bytes, MADV_HUGEPAGE);
#endif
  for (uint64_t at = 0, x = 1; at + 8 <= bytes; at += 8) {
    x = Remix(x + at);
    std::memcpy(table + at, &x, 8);
  }
  std::vector<std::atomic<uint64_t>> versions(1024);
  const uint64_t count = ItemsFor(*NewFilter(state.range(0)), 95);
  const uint64_t* keys = Keys(count).absent;
  uint64_t i = 0, found = 0;
  for (auto _ : state) {
    found +=
        variant == 0
            ? QueryFloorRun<0>(table, nb, keys, count, &i, versions.data())
        : variant == 1
            ? QueryFloorRun<1>(table, nb, keys, count, &i, versions.data())
            : QueryFloorRun<2>(table, nb, keys, count, &i, versions.data());
  }
  benchmark::DoNotOptimize(found);
  std::free(table);
  const double ops = static_cast<double>(state.iterations()) * 256;
  state.counters["ops_per_s"] =
      benchmark::Counter(ops, benchmark::Counter::kIsRate);
  state.counters["ns_per_op"] = benchmark::Counter(
      ops * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// A floor for one-at-a-time concurrent writes (insert or remove): per key
// the hash, the bucket, one locked exchange on a stripe lock (1024 of
// them, cache-resident), a load and a store of the bucket's word, and the
// unlock; nothing else. Measured at 5e7: 34-40 ns, so one lock per write
// does not by itself keep consecutive writes' misses from overlapping on
// this CPU. arg: n.
void BM_WriteFloor(benchmark::State& state) {
  const uint64_t nb = NewFilter(state.range(0))->num_buckets();
  const uint64_t words = nb * 6 / 8 + 2;
  const uint64_t huge = 2 << 20;
  auto* table = static_cast<uint64_t*>(
      std::aligned_alloc(huge, (words * 8 + huge - 1) / huge * huge));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(table, words * 8, MADV_HUGEPAGE);
#endif
  std::memset(table, 0, words * 8);
  std::vector<std::atomic<uint32_t>> locks(1024);
  const uint64_t count = ItemsFor(*NewFilter(state.range(0)), 95);
  const uint64_t* keys = Keys(count).present;
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t h = HashKey(KeyBytes(keys[i]), kDefaultSeed);
    if (++i == count) i = 0;
    const uint64_t b = FastRange64(h & ~uint64_t{0xFFFF}, nb);
    std::atomic<uint32_t>& l = locks[(b >> 3) & 1023];
    while (l.exchange(1, std::memory_order_acquire) != 0) {
    }
    uint64_t& w = table[b * 6 / 8];
    w ^= h | 1;
    l.store(0, std::memory_order_release);
  }
  benchmark::DoNotOptimize(table[0]);
  std::free(table);
}

// args: n, load %, present (1) / absent (0). Google Benchmark threads.
void BM_Query(benchmark::State& state) {
  Built& b = Cached(state.range(0), static_cast<int>(state.range(1)));
  const bool present = state.range(2) != 0;
  const CuckooFilter& f = *b.filter;
  const KeyArrays ka = Keys(b.items);
  const uint64_t* keys = present ? ka.present : ka.absent;
  // A wrapping index, not i % items: a 64-bit division would cost more
  // than an L3-resident query.
  const uint64_t items = b.items;  // a local: see Fill
  uint64_t i = state.thread_index() * 7919 % items, found = 0;
  // Keys in runs of kRun per benchmark iteration, in a plain loop: the
  // framework's iteration step between every two queries changed the code
  // GCC generates for the query enough to cost ~10 ns at 5e7.
  constexpr uint64_t kRun = 1024;
  for (auto _ : state) {
    const uint64_t end = std::min(i + kRun, items);
    for (; i < end; ++i) found += f.MayContain(KeyBytes(keys[i]));
    if (i == items) i = 0;
  }
  benchmark::DoNotOptimize(found);
  SetCounters(state, b);
  state.counters["ops_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kRun,
                         benchmark::Counter::kIsRate);
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kRun * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The batch API on the same keys: MayContainKeys hashes a chunk, then
// prefetches both buckets of the key a window ahead, so a batch keeps many
// misses in flight whatever the CPU's reorder window. args: n, load %,
// present. ns_per_key is real time per key.
void BM_QueryBatch(benchmark::State& state) {
  constexpr size_t kBatch = 256;
  Built& b = Cached(state.range(0), static_cast<int>(state.range(1)));
  const bool present = state.range(2) != 0;
  const CuckooFilter& f = *b.filter;
  const KeyArrays ka = Keys(b.items);
  const uint64_t* keys = present ? ka.present : ka.absent;
  std::string_view views[kBatch];
  uint8_t out[kBatch];
  uint64_t i = 0;
  for (auto _ : state) {
    for (size_t j = 0; j < kBatch; ++j) {
      views[j] = KeyBytes(keys[i]);
      if (++i == b.items) i = 0;
    }
    f.MayContainKeys(views, out);
    benchmark::DoNotOptimize(out);
  }
  SetCounters(state, b);
  const double n_keys = static_cast<double>(state.iterations()) * kBatch;
  state.counters["ops_per_s"] =
      benchmark::Counter(n_keys, benchmark::Counter::kIsRate);
  state.counters["ns_per_key"] = benchmark::Counter(
      n_keys * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void SetPhaseCounters(benchmark::State& state, double seconds, uint64_t ops) {
  state.counters["ns_per_op"] = seconds * 1e9 / static_cast<double>(ops);
  state.counters["ops_per_s"] = static_cast<double>(ops) / seconds;
}

// Insert cost averaged over a fill from empty to the load. args: n, load %,
// threads. Manual time: one iteration = one whole fill of a new filter.
// One fill per iteration of a new filter up to the load with fill(f, want)
// -> (seconds, added); counters over all iterations. args: n, load %, ...
template <typename FillFn>
void RunFills(benchmark::State& state, FillFn&& fill) {
  double seconds = 0;
  uint64_t ops = 0;
  Built last;
  for (auto _ : state) {
    auto f = NewFilter(state.range(0));
    const uint64_t want = ItemsFor(*f, static_cast<int>(state.range(1)));
    auto [s, added] = fill(*f, want);
    state.SetIterationTime(s);
    seconds += s;
    ops += added;
    last.items = added;
    last.filter = std::move(f);
  }
  last.bits_per_item = last.filter->Stats().bytes * 8.0 / last.items;
  last.fpr = MeasureFpr(*last.filter);
  SetCounters(state, last);
  SetPhaseCounters(state, seconds, ops);
}

void BM_Add(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(2));
  RunFills(state, [&](CuckooFilter& f, uint64_t want) {
    return Fill(f, 0, want, threads);
  });
}

// Removes 1e6 (at most half) of the present keys, timed, and adds them back
// untimed. args: n, load %, threads.
void BM_Remove(benchmark::State& state) {
  Built& b = Cached(state.range(0), static_cast<int>(state.range(1)));
  const int threads = static_cast<int>(state.range(2));
  const uint64_t m = std::min<uint64_t>(1'000'000, b.items / 2);
  CuckooFilter& f = *b.filter;
  const uint64_t* keys = Keys(b.items).present;
  double seconds = 0;
  uint64_t ops = 0, round = 0;
  for (auto _ : state) {
    const uint64_t first = (round++ * m) % (b.items - m);
    std::vector<std::thread> ts;
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<uint64_t> removed{0};
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&removed, &f, keys, first, m, threads, t] {
        CuckooFilter* const filter = &f;  // locals only, as in Fill
        uint64_t n = 0;
        for (uint64_t i = first + t; i < first + m; i += threads) {
          n += filter->Remove(KeyBytes(keys[i])).ok();
        }
        removed += n;
      });
    }
    for (auto& th : ts) th.join();
    if (removed != m) state.SkipWithError("a present key was not removed");
    const double s = SecondsSince(t0);
    state.SetIterationTime(s);
    seconds += s;
    ops += m;
    Fill(f, first, first + m, 2);  // restore (untimed)
  }
  SetCounters(state, b);
  SetPhaseCounters(state, seconds, ops);
}

// The batch forms of the two phases above, one thread: AddKeys from empty
// to the load, and RemoveKeys of 1e6 present keys (added back untimed),
// in calls of 256 keys (prefetching a window ahead). args: n, load %.
void BM_AddBatch(benchmark::State& state) {
  constexpr size_t kBatch = 256;
  RunFills(state, [&](CuckooFilter& f, uint64_t want) {
    const uint64_t* keys = Keys(want).present;
    std::string_view views[kBatch];
    uint64_t added = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < want; i += kBatch) {
      const size_t m = std::min<uint64_t>(kBatch, want - i);
      for (size_t j = 0; j < m; ++j) views[j] = KeyBytes(keys[i + j]);
      size_t n = 0;
      Status st = f.AddKeys(std::span(views, m), &n);
      added += n;
      if (!st.ok()) break;
    }
    const double s = SecondsSince(t0);
    return std::pair<double, uint64_t>(s, added);
  });
}

void BM_RemoveBatch(benchmark::State& state) {
  constexpr size_t kBatch = 256;
  Built& b = Cached(state.range(0), static_cast<int>(state.range(1)));
  const uint64_t m = std::min<uint64_t>(1'000'000, b.items / 2);
  CuckooFilter& f = *b.filter;
  double seconds = 0;
  uint64_t ops = 0, round = 0, removed = 0;
  const uint64_t* keys = Keys(b.items).present;
  std::string_view views[kBatch];
  uint8_t out[kBatch];
  for (auto _ : state) {
    const uint64_t first = (round++ * m) % (b.items - m);
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = first; i < first + m; i += kBatch) {
      const size_t c = std::min<uint64_t>(kBatch, first + m - i);
      for (size_t j = 0; j < c; ++j) views[j] = KeyBytes(keys[i + j]);
      f.RemoveKeys(std::span(views, c), std::span(out, c));
      for (size_t j = 0; j < c; ++j) removed += out[j];
    }
    const double s = SecondsSince(t0);
    state.SetIterationTime(s);
    seconds += s;
    ops += m;
    Fill(f, first, first + m, 2);  // restore (untimed)
  }
  if (removed != ops) state.SkipWithError("a present key was not removed");
  SetCounters(state, b);
  SetPhaseCounters(state, seconds, ops);
}

// 90% queries (half present, half absent) / 10% inserts of new keys, on a
// fresh copy of the 50%-load filter. args: n, threads. One iteration = 2n
// ops across the threads (inserts take the load from 50% to ~70%).
void BM_Mixed(benchmark::State& state) {
  const uint64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  Built& b = Cached(n, 50);
  const std::string pristine = b.filter->Serialize();
  const uint64_t ops = 2 * n;
  double seconds = 0;
  uint64_t total = 0;
  for (auto _ : state) {
    auto f = std::move(CuckooFilter::Deserialize(pristine)).value();
    std::vector<std::thread> ts;
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        uint64_t found = 0, next_new = b.items + t, present = t, r = 0;
        for (uint64_t i = t; i < ops; i += threads) {
          if (r == 0) {
            const uint64_t k = PresentKey(next_new);
            next_new += threads;
            benchmark::DoNotOptimize(f->Add(KeyBytes(k)).ok());
          } else {
            uint64_t k = AbsentKey(i);
            if (r & 1) {
              k = PresentKey(present);
              if (++present == b.items) present = 0;
            }
            found += f->MayContain(KeyBytes(k));
          }
          if (++r == 10) r = 0;
        }
        benchmark::DoNotOptimize(found);
      });
    }
    for (auto& th : ts) th.join();
    const double s = SecondsSince(t0);
    state.SetIterationTime(s);
    seconds += s;
    total += ops;
  }
  SetCounters(state, b);
  SetPhaseCounters(state, seconds, total);
}

constexpr int64_t kSizes[] = {1'000'000, 50'000'000};

void QueryArgs(benchmark::internal::Benchmark* bm) {
  bm->ArgNames({"n", "load", "present"});
  for (int64_t n : kSizes) {
    for (int64_t load : {50, 95}) {
      for (int64_t present : {1, 0}) bm->Args({n, load, present});
    }
  }
}
void LoadArgs(benchmark::internal::Benchmark* bm) {
  bm->ArgNames({"n", "load"});
  for (int64_t n : kSizes) {
    for (int64_t load : {50, 95}) bm->Args({n, load});
  }
}

void PhaseArgs(benchmark::internal::Benchmark* bm) {
  bm->ArgNames({"n", "load", "threads"});
  for (int64_t n : kSizes) {
    for (int64_t load : {50, 95}) {
      for (int64_t threads : {1, 2}) bm->Args({n, load, threads});
    }
  }
}

BENCHMARK(BM_Query)->Apply(QueryArgs)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_QueryBatch)->Apply(QueryArgs)->UseRealTime();
BENCHMARK(BM_QueryFloor)
    ->ArgNames({"n", "variant"})
    ->ArgsProduct({{1'000'000, 50'000'000}, {0, 1, 2}})
    ->UseRealTime();
BENCHMARK(BM_WriteFloor)
    ->ArgName("n")
    ->Arg(1'000'000)
    ->Arg(50'000'000)
    ->UseRealTime();
BENCHMARK(BM_Add)->Apply(PhaseArgs)->UseManualTime()->Unit(
    benchmark::kMillisecond);
BENCHMARK(BM_Remove)->Apply(PhaseArgs)->UseManualTime()->Unit(
    benchmark::kMillisecond);
BENCHMARK(BM_AddBatch)
    ->Apply(LoadArgs)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RemoveBatch)
    ->Apply(LoadArgs)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Mixed)
    ->ArgNames({"n", "threads"})
    ->Args({1'000'000, 1})
    ->Args({1'000'000, 2})
    ->Args({50'000'000, 1})
    ->Args({50'000'000, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardfilter::bench

BENCHMARK_MAIN();
