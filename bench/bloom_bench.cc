// Bloom (split block, word-blocked, classic) and counting Bloom filters: ns/op
// for add and for queries of present, absent and mixed (50/50) keys, one at a
// time and batched (256 keys per call: hash all, prefetch 16 ahead, probe), on
// 1 and 2 threads sharing one filter, at 1e6 items (in cache) and 5e7 items
// (DRAM-bound), p = 1%. Hashing of the 8-byte key is in every op.
//
//   build/bench/bloom_bench --benchmark_counters_tabular=true
//
// Counters: s_per_key (per key and thread, also for batches; "9.8n" = 9.8 ns),
// ops_per_s (keys/s over all threads), bits_per_item and fpr_pct (measured over
// 1e6 absent keys). Query benchmarks share one prebuilt filter per (kind,
// items), built once. Add benchmarks start from an empty filter sized for
// `items` and add at most min(items, 4e6) distinct new keys in total, so that
// every add does the real work (new bits) and the filter never passes its
// capacity.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/detail/split_block.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/memory_advice.h"

#if SHARDFILTER_SPLIT_AVX2
#define SHARDFILTER_FLOOR_TARGET SHARDFILTER_TARGET_AVX2
#else
#define SHARDFILTER_FLOOR_TARGET
#endif

namespace shardfilter::bench {
namespace {

// kSplit: the split-block layout, the default at 1% (BloomLayout::kAuto).
enum Kind { kBlocked = 0, kClassic = 1, kCounting = 2, kSplit = 3 };
enum Mode { kPresent = 0, kAbsent = 1, kMixed = 2 };
constexpr size_t kBatch = 256;
constexpr double kFpp = 0.01;

std::unique_ptr<Filter> MakeFilter(int kind, uint64_t n) {
  if (kind == kCounting) {
    return std::move(
        CountingBloomFilter::Create({.capacity = n, .fpp = kFpp}).value());
  }
  BloomOptions o;
  o.capacity = n;
  o.fpp = kFpp;
  o.layout = kind == kBlocked ? BloomLayout::kBlocked
             : kind == kSplit ? BloomLayout::kSplitBlock
                              : BloomLayout::kClassic;
  return std::move(BloomFilter::Create(o).value());
}

struct Prebuilt {
  std::unique_ptr<Filter> filter;
  double bits_per_item = 0;
  double fpr = 0;
};

// Filled to capacity with PresentKey(0..n), FPR measured once.
const Prebuilt& GetPrebuilt(int kind, uint64_t n) {
  static std::mutex mu;
  static std::map<std::pair<int, uint64_t>, Prebuilt> cache;
  std::lock_guard<std::mutex> lock(mu);
  Prebuilt& p = cache[{kind, n}];
  if (p.filter == nullptr) {
    p.filter = MakeFilter(kind, n);
    std::vector<uint64_t> hashes;
    hashes.reserve(1 << 16);
    for (uint64_t i = 0; i < n;) {
      hashes.clear();
      for (; i < n && hashes.size() < (1 << 16); ++i) {
        const uint64_t key = PresentKey(i);
        hashes.push_back(p.filter->Hash(KeyBytes(key)));
      }
      (void)p.filter->AddHashes(hashes, nullptr);
    }
    const uint64_t probes = 1'000'000;
    std::vector<uint8_t> out(probes);
    hashes.resize(probes);
    for (uint64_t i = 0; i < probes; ++i) {
      const uint64_t key = AbsentKey(i);
      hashes[i] = p.filter->Hash(KeyBytes(key));
    }
    p.filter->MayContainHashes(hashes, out);
    uint64_t fp = 0;
    for (uint8_t o : out) fp += o;
    p.fpr = static_cast<double>(fp) / probes;
    p.bits_per_item = p.filter->Stats().bits_per_item;
  }
  return p;
}

void SetRates(benchmark::State& state, uint64_t keys, double bits_per_item,
              double fpr) {
  ReportFilterCounters(state, bits_per_item, fpr);
  // Filter properties: the same in every thread, so averaged, not summed.
  state.counters["bits_per_item"] =
      benchmark::Counter(bits_per_item, benchmark::Counter::kAvgThreads);
  state.counters["fpr_pct"] =
      benchmark::Counter(fpr * 100, benchmark::Counter::kAvgThreads);
  // Keys per second over all threads.
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(keys),
                                                   benchmark::Counter::kIsRate);
  // Seconds per key and thread, shown with an SI prefix ("12.3n" = 12.3 ns).
  state.counters["s_per_key"] = benchmark::Counter(
      static_cast<double>(keys), benchmark::Counter::kIsRate |
                                     benchmark::Counter::kInvert |
                                     benchmark::Counter::kAvgThreads);
}

// The key of query number i for a mode: present keys cycle over the filled
// set; absent keys never were added; mixed picks by a bit of i's mix.
inline uint64_t QueryKey(int mode, uint64_t i, uint64_t n) {
  if (mode == kPresent) return PresentKey(i % n);
  if (mode == kAbsent) return AbsentKey(i);
  return (Remix(i) & 1) ? PresentKey(i % n) : AbsentKey(i);
}

// The keys of the one-at-a-time loop for (mode, n): QueryKey(mode, i, n)
// for i < n, generated once and read sequentially, as reference harnesses
// do. Generating them per query (a Remix, and a 64-bit division for i % n)
// put enough instructions into every query to cost ~10 ns at 5e7 items,
// where a loop of independent queries runs as fast as the CPU overlaps
// their misses (see docs/design.md). Never freed, so pointers stay valid.
const uint64_t* QueryKeys(int mode, uint64_t n) {
  static std::mutex mu;
  static std::map<std::pair<int, uint64_t>, std::vector<uint64_t>> cache;
  std::lock_guard<std::mutex> l(mu);
  std::vector<uint64_t>& keys = cache[{mode, n}];
  if (keys.empty()) {
    keys.resize(n);
    for (uint64_t i = 0; i < n; ++i) keys[i] = QueryKey(mode, i, n);
  }
  return keys.data();
}

// Keys per benchmark iteration of the one-at-a-time loop: a plain inner
// loop, with its state in locals (a per-query DoNotOptimize's memory
// clobber would reload the filter's parameters every query).
constexpr size_t kRun = 1024;

// Args: kind, items, mode, batch.
template <typename F>
void QueryLoop(benchmark::State& state, F& f, int mode, uint64_t n,
               bool batch) {
  uint64_t i = static_cast<uint64_t>(state.thread_index()) << 40;
  uint64_t keys = 0;
  if (!batch) {
    const uint64_t* key_array = QueryKeys(mode, n);
    const F* filter = &f;
    uint64_t j = static_cast<uint64_t>(state.thread_index()) * 7919 % n;
    uint64_t found = 0;
    for (auto _ : state) {
      for (size_t r = 0; r < kRun; ++r) {
        found += filter->MayContain(KeyBytes(key_array[j]));
        if (++j == n) j = 0;
      }
    }
    benchmark::DoNotOptimize(found);
    keys = state.iterations() * kRun;
  } else {
    uint64_t key_values[kBatch];
    std::string_view views[kBatch];
    uint8_t out[kBatch];
    for (auto _ : state) {
      for (size_t j = 0; j < kBatch; ++j) {
        key_values[j] = QueryKey(mode, i++, n);
        views[j] = KeyBytes(key_values[j]);
      }
      f.MayContainKeys(views, out);
      benchmark::DoNotOptimize(out);
    }
    keys = state.iterations() * kBatch;
  }
  state.SetItemsProcessed(static_cast<int64_t>(keys));
  state.counters["keys"] = static_cast<double>(keys);
}

void BM_Query(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const uint64_t n = static_cast<uint64_t>(state.range(1));
  const int mode = static_cast<int>(state.range(2));
  const bool batch = state.range(3) != 0;
  const Prebuilt& p = GetPrebuilt(kind, n);
  if (kind == kCounting) {
    QueryLoop(state, static_cast<CountingBloomFilter&>(*p.filter), mode, n,
              batch);
  } else {
    QueryLoop(state, static_cast<BloomFilter&>(*p.filter), mode, n, batch);
  }
  SetRates(state, state.iterations() * (batch ? kBatch : kRun), p.bits_per_item,
           p.fpr);
}

// Written by thread 0 outside the timed loop; the loop's start and end
// barriers order those writes against the other threads' uses.
std::unique_ptr<Filter> g_add_filter;
double g_add_bits_per_item = 0;

template <typename F>
void AddLoop(benchmark::State& state, bool batch) {
  uint64_t i = static_cast<uint64_t>(state.thread_index()) << 40;
  F* f = nullptr;
  uint64_t key_values[kBatch];
  std::string_view views[kBatch];
  for (auto _ : state) {
    // The loop's start barrier orders thread 0's setup before this read.
    if (f == nullptr) f = static_cast<F*>(g_add_filter.get());
    if (!batch) {
      const uint64_t key = PresentKey(i++);
      f->Add(KeyBytes(key));
    } else {
      for (size_t j = 0; j < kBatch; ++j) {
        key_values[j] = PresentKey(i++);
        views[j] = KeyBytes(key_values[j]);
      }
      f->AddKeys(views);
    }
  }
}

// Args: kind, items, batch. Iterations fixed at registration (see top).
void BM_Add(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const uint64_t n = static_cast<uint64_t>(state.range(1));
  const bool batch = state.range(2) != 0;
  if (state.thread_index() == 0) {
    g_add_filter = MakeFilter(kind, n);
    g_add_bits_per_item = g_add_filter->Stats().bits_per_item;
  }
  if (kind == kCounting) {
    AddLoop<CountingBloomFilter>(state, batch);
  } else {
    AddLoop<BloomFilter>(state, batch);
  }
  // After the loop's end barrier no thread uses the filter any more.
  const uint64_t keys = state.iterations() * (batch ? kBatch : 1);
  SetRates(state, keys, g_add_bits_per_item, 0);
  if (state.thread_index() == 0) g_add_filter.reset();
}

constexpr int64_t kSmall = 1'000'000;
constexpr int64_t kLarge = 50'000'000;

// The floor of a one-at-a-time split-block add on this machine: the same
// XXH3 of the same 8-byte keys (KeyHasher, as the filter's), the same block
// (SplitBlockOffset) and lane bits over a zeroed table of the filter's
// size and placement (AllocateFilterTable: huge pages), with no filter
// around it, the block written in one of these ways (arg 0):
//   0  plain, non-atomic: one 32-byte load, OR and store (AVX2; scalar
//      words without it), what a single-threaded filter does
//      (fastfilter's SimdBlockFilterFixed): two concurrent adds to one
//      block could lose each other's bits
//   1, 2, 4  that many locked ORs (fetch_or) into the block's words, no
//      all-set check; 4 is what a concurrent add of this layout needs (its
//      eight bits span the block's four 64-bit words, and x86 has no wider
//      atomic OR)
//   5  the library's add kernel on the raw table (SplitAdd: an all-set
//      check, then the four locked ORs)
//   6  the filter itself (BloomFilter::Add: kernel 5, the layout's branch
//      and the `items` statistic's locked add)
// Arg 1: items (the filter's capacity at 1%). Keys come from an array, in
// runs of kRun per iteration, as BM_Query's one-at-a-time loop: a key
// generated per add (BM_Add's Remix) and the framework's step between adds
// hid the difference between variants 0 and 4 (45-50 ns both at 5e7).
//   build/bench/bloom_bench --benchmark_filter=BM_AddFloor
struct FloorTable {
  std::atomic<uint64_t>* words;
  uint64_t blocks;
};

template <int kVariant>
[[gnu::always_inline]] SHARDFILTER_FLOOR_TARGET inline uint64_t FloorAdd(
    const FloorTable& t, const KeyHasher& hasher, uint64_t key) {
  const uint64_t h = hasher(KeyBytes(key));
  std::atomic<uint64_t>* const block =
      t.words + internal::SplitBlockOffset(h, t.blocks) / sizeof(uint64_t);
  const auto h32 = static_cast<uint32_t>(h);
  if constexpr (kVariant == 0) {
#if SHARDFILTER_SPLIT_AVX2
    auto* v = reinterpret_cast<__m256i*>(block);
    _mm256_store_si256(
        v, _mm256_or_si256(_mm256_load_si256(v), internal::SplitMaskAvx2(h32)));
#else
    auto* w = reinterpret_cast<uint64_t*>(block);
    for (uint32_t i = 0; i < internal::kSplitBlockWords; ++i) {
      w[i] |= internal::SplitWordMask(h32, i);
    }
#endif
    return 0;
  } else if constexpr (kVariant == 5) {
    return internal::SplitAdd(block, h32);
  } else {
    for (int i = 0; i < kVariant; ++i) {
      block[i].fetch_or(internal::SplitWordMask(h32, i),
                        std::memory_order_relaxed);
    }
    return 0;
  }
}

// kRun adds from keys[at]; AVX2 where the kernels are (variant 0's vector
// OR needs it; the CPU was asked first).
template <int kVariant>
SHARDFILTER_FLOOR_TARGET uint64_t FloorRun(const FloorTable& t,
                                           const KeyHasher& hasher,
                                           const uint64_t* keys) {
  uint64_t added = 0;
  for (size_t r = 0; r < kRun; ++r) {
    added += FloorAdd<kVariant>(t, hasher, keys[r]);
  }
  return added;
}

// The floors' loops are compiled for AVX2 where the kernels are
// (SHARDFILTER_FLOOR_TARGET): on a CPU without it they are skipped, not run.
bool SkippedWithoutAvx2(benchmark::State& state) {
#if SHARDFILTER_SPLIT_AVX2
  if (!internal::CpuHasAvx2()) {
    state.SkipWithError("the floor's loop is compiled for AVX2");
    return true;
  }
#endif
  (void)state;
  return false;
}

// The add floors' keys: PresentKey(0 .. kFloorKeys), made once.
constexpr uint64_t kFloorKeys = 4'000'000;  // as BM_Add's, at most
const std::vector<uint64_t>& FloorKeys() {
  static const std::vector<uint64_t> keys = [] {
    std::vector<uint64_t> k(kFloorKeys);
    for (uint64_t i = 0; i < kFloorKeys; ++i) k[i] = PresentKey(i);
    return k;
  }();
  return keys;
}

void BM_AddFloor(benchmark::State& state) {
  const int variant = static_cast<int>(state.range(0));
  const uint64_t n = static_cast<uint64_t>(state.range(1));
  if (SkippedWithoutAvx2(state)) return;
  const std::vector<uint64_t>& keys = FloorKeys();
  std::unique_ptr<Filter> made = MakeFilter(kSplit, n);
  auto& filter = static_cast<BloomFilter&>(*made);
  const uint64_t bytes = filter.Stats().bytes;
  void* mem = AllocateFilterTable(bytes);
  Check(mem != nullptr ? Status::OK() : Status::ResourceExhausted("table"));
  std::memset(mem, 0, bytes);
  const FloorTable t{static_cast<std::atomic<uint64_t>*>(mem),
                     bytes / internal::kSplitBlockBytes};
  const KeyHasher hasher(kDefaultSeed);
  uint64_t i = 0, added = 0;
  for (auto _ : state) {
    if (i + kRun > kFloorKeys) i = 0;  // later rounds find their bits set
    const uint64_t* run = keys.data() + i;
    switch (variant) {
      case 0:
        added += FloorRun<0>(t, hasher, run);
        break;
      case 1:
        added += FloorRun<1>(t, hasher, run);
        break;
      case 2:
        added += FloorRun<2>(t, hasher, run);
        break;
      case 4:
        added += FloorRun<4>(t, hasher, run);
        break;
      case 5:
        added += FloorRun<5>(t, hasher, run);
        break;
      default:
        for (size_t r = 0; r < kRun; ++r) {
          added += filter.Add(KeyBytes(run[r]));
        }
    }
    i += kRun;
  }
  benchmark::DoNotOptimize(added);
  FreeTable(mem);
  SetRates(state, state.iterations() * kRun, bytes * 8.0 / n, 0);
}
BENCHMARK(BM_AddFloor)
    ->ArgNames({"variant", "items"})
    ->ArgsProduct({{0, 1, 2, 4, 5, 6}, {1'000'000, 50'000'000}})
    ->Iterations(4'000'000 / kRun)
    ->UseRealTime();

// The floor of a one-at-a-time counting add against the Bloom add (the
// target: the counting add within 1.5x of the Bloom add;
// docs/performance.md, "The targets and where each stands"), at 5e7 items
// (at 1e6 the counting add already runs under the Bloom add's time, and a
// loop of 4e6 adds would overfill a 1e6 Bloom filter until its adds find
// their bits set), per key from an array (kRun per iteration) with the
// filters' XXH3, on tables of the filters' sizes and placement
// (AllocateFilterTable) at 1%: the counting table's 64-byte blocks of
// 4-bit counters at 44 bits per item, the split-block Bloom's 32-byte
// blocks at 10.5. Arg 0:
//   0  counting block read, added to and written back, plain (two 32-byte
//      loads, adds and stores; the increment a stand-in mask): what any
//      add of that layout does, minus its exclusion of other writers
//   1  0 under a lock of the filter's kind: a spin lock (locked exchange,
//      release store) on one of 1024 stripe lines chosen by the block, as
//      CountingBloomFilter's
//   5  1 with the block written back as the filter does, eight relaxed
//      64-bit atomic stores (lock-free readers load the words atomically)
//   6  1 with the filter's kernel (CountersAddAvx2: the key's eight
//      counter positions, their nibble increment, the saturation test, the
//      write-back in two vector stores)
//   2  the counting filter itself (CountingBloomFilter::Add)
//   3  the Bloom block's four locked ORs (BM_AddFloor's variant 4)
//   4  the Bloom filter itself (BloomFilter::Add)
// The filters' tables hold as many other keys first, so that every page
// is touched before the timing, as the floors' are by their memset. At
// 5e7 each add waits on DRAM and a loop of them runs as fast as the CPU
// overlaps consecutive adds' misses, so work that does not wait on the
// miss still costs time: it fills the window. Measured (native, medians
// of 5 interleaved repetitions, ns per add): 0 21.7, 1 27.7, 5 34.0, 6
// 47.0, 2 52.5; 3 26.0, 4 23.8. The layout and its lock (1) are 1.16x the
// Bloom add (4): the tables do not rule out the 1.5x target; the kernel's
// arithmetic (6 against 5: 13 ns) and scalar stores (5 against 1: 6 ns)
// are what a kernel must avoid.
//   build/bench/bloom_bench --benchmark_filter=BM_CountingAddFloor
struct alignas(64) FloorStripe {
  std::atomic<uint32_t> lock{0};
};

#if SHARDFILTER_SPLIT_AVX2
// Variant 5's write-back: the block's eight words stored one by one with
// relaxed 64-bit atomic stores, each extracted from the vector (what a
// kernel costs that does not write the block back in two vector stores).
SHARDFILTER_FLOOR_TARGET inline void EightAtomicStores(
    std::atomic<uint64_t>* block, __m256i lo, __m256i hi) {
  const __m128i w01 = _mm256_castsi256_si128(lo);
  const __m128i w23 = _mm256_extracti128_si256(lo, 1);
  const __m128i w45 = _mm256_castsi256_si128(hi);
  const __m128i w67 = _mm256_extracti128_si256(hi, 1);
  constexpr auto kR = std::memory_order_relaxed;
  block[0].store(static_cast<uint64_t>(_mm_cvtsi128_si64(w01)), kR);
  block[1].store(static_cast<uint64_t>(_mm_extract_epi64(w01, 1)), kR);
  block[2].store(static_cast<uint64_t>(_mm_cvtsi128_si64(w23)), kR);
  block[3].store(static_cast<uint64_t>(_mm_extract_epi64(w23, 1)), kR);
  block[4].store(static_cast<uint64_t>(_mm_cvtsi128_si64(w45)), kR);
  block[5].store(static_cast<uint64_t>(_mm_extract_epi64(w45, 1)), kR);
  block[6].store(static_cast<uint64_t>(_mm_cvtsi128_si64(w67)), kR);
  block[7].store(static_cast<uint64_t>(_mm_extract_epi64(w67, 1)), kR);
}
#endif

template <int kVariant>
SHARDFILTER_FLOOR_TARGET uint64_t CountingFloorRun(char* table, uint64_t blocks,
                                                   FloorStripe* stripes,
                                                   const KeyHasher& hasher,
                                                   const uint64_t* keys) {
  uint64_t sum = 0;
  for (size_t r = 0; r < kRun; ++r) {
    const uint64_t h = hasher(KeyBytes(keys[r]));
    const uint64_t b = (h >> 32) * blocks >> 32;
    char* const block = table + b * 64;
    std::atomic<uint32_t>* lock = nullptr;
    if constexpr (kVariant == 1 || kVariant >= 5) {
      lock = &stripes[b & 1023].lock;
      __builtin_prefetch(block, 1);
      while (lock->exchange(1, std::memory_order_acquire) != 0) {
      }
    }
#if SHARDFILTER_SPLIT_AVX2
    if constexpr (kVariant == 6) {
      internal::CountersAddAvx2(reinterpret_cast<std::atomic<uint64_t>*>(block),
                                internal::kProbeMultipliers.data(),
                                static_cast<uint32_t>(h));
    } else {
      const __m256i inc = internal::SplitMaskAvx2(static_cast<uint32_t>(h));
      auto* v = reinterpret_cast<__m256i*>(block);
      if constexpr (kVariant == 5) {
        EightAtomicStores(reinterpret_cast<std::atomic<uint64_t>*>(block),
                          _mm256_add_epi32(_mm256_load_si256(v), inc),
                          _mm256_add_epi32(_mm256_load_si256(v + 1), inc));
      } else {
        _mm256_store_si256(v, _mm256_add_epi32(_mm256_load_si256(v), inc));
        _mm256_store_si256(v + 1,
                           _mm256_add_epi32(_mm256_load_si256(v + 1), inc));
      }
    }
#else
    auto* w = reinterpret_cast<uint64_t*>(block);
    for (uint32_t i = 0; i < 8; ++i) w[i] += h >> (i * 4) & 0x1111;
#endif
    if constexpr (kVariant == 1 || kVariant >= 5) {
      lock->store(0, std::memory_order_release);
    }
    sum += static_cast<uint8_t>(block[0]);
  }
  return sum;
}

void BM_CountingAddFloor(benchmark::State& state) {
  const int variant = static_cast<int>(state.range(0));
  const uint64_t n = static_cast<uint64_t>(state.range(1));
  if (SkippedWithoutAvx2(state)) return;
  const std::vector<uint64_t>& keys = FloorKeys();
  const bool counting = variant != 3 && variant != 4;
  std::unique_ptr<Filter> made = MakeFilter(counting ? kCounting : kSplit, n);
  const uint64_t bytes = made->Stats().bytes;
  void* mem = nullptr;
  if (variant != 2 && variant != 4) {
    mem = AllocateFilterTable(bytes);
    Check(mem != nullptr ? Status::OK() : Status::ResourceExhausted("table"));
    std::memset(mem, 0, bytes);
  }
  if (variant == 2 || variant == 4) {
    // Every page of the filter's table touched before the timing, as the
    // floors' tables are by their memset: as many other keys as the timed
    // loop adds (first touches cost 7-14% of a 5e7 run otherwise).
    for (uint64_t k = 0; k < kFloorKeys; ++k) {
      const uint64_t other = PresentKey(kFloorKeys + k);
      if (counting) {
        static_cast<CountingBloomFilter&>(*made).Add(KeyBytes(other));
      } else {
        static_cast<BloomFilter&>(*made).Add(KeyBytes(other));
      }
    }
  }
  auto stripes = std::make_unique<FloorStripe[]>(1024);
  const KeyHasher hasher(kDefaultSeed);
  const FloorTable bloom{static_cast<std::atomic<uint64_t>*>(mem),
                         bytes / internal::kSplitBlockBytes};
  // The floors' loops (one call per kRun adds).
  using FloorRunFn = uint64_t (*)(char*, uint64_t, FloorStripe*,
                                  const KeyHasher&, const uint64_t*);
  const FloorRunFn floor_run = variant == 0   ? &CountingFloorRun<0>
                               : variant == 1 ? &CountingFloorRun<1>
                               : variant == 5 ? &CountingFloorRun<5>
                               : variant == 6 ? &CountingFloorRun<6>
                                              : nullptr;
  uint64_t i = 0, sum = 0;
  for (auto _ : state) {
    if (i + kRun > kFloorKeys) i = 0;
    const uint64_t* run = keys.data() + i;
    auto* table = static_cast<char*>(mem);
    if (floor_run != nullptr) {
      sum += floor_run(table, bytes / 64, stripes.get(), hasher, run);
      i += kRun;
      continue;
    }
    switch (variant) {
      case 2:
        for (size_t r = 0; r < kRun; ++r) {
          static_cast<CountingBloomFilter&>(*made).Add(KeyBytes(run[r]));
        }
        break;
      case 3:
        sum += FloorRun<4>(bloom, hasher, run);
        break;
      default:
        for (size_t r = 0; r < kRun; ++r) {
          sum += static_cast<BloomFilter&>(*made).Add(KeyBytes(run[r]));
        }
    }
    i += kRun;
  }
  benchmark::DoNotOptimize(sum);
  if (mem != nullptr) FreeTable(mem);
  SetRates(state, state.iterations() * kRun, bytes * 8.0 / n, 0);
}
BENCHMARK(BM_CountingAddFloor)
    ->ArgNames({"variant", "items"})
    ->ArgsProduct({{0, 1, 5, 6, 2, 3, 4}, {50'000'000}})
    ->Iterations(4'000'000 / kRun)
    ->UseRealTime();

// The floor of a one-at-a-time query of a one-block layout on this
// machine: per key from an array (kRun per iteration, as BM_Query's loop)
// a mix, a block of `block` bytes at a random position of a table of the
// filter's size and placement (AllocateFilterTable), one AVX2 load of each
// 32-byte half and a test: no hash, no filter. Arg 0: the filter whose
// table size and block it takes (kSplit: 32-byte blocks at 10.5 bits per
// item; kCounting: 64-byte blocks of 4-bit counters at 44 bits per item);
// arg 1: items. What the counting query's target (1.3x the Bloom query)
// asks of the table sizes alone: at 1e6 the counting table (5.5 MB)
// misses this VM's cache where the Bloom one (1.3 MB) fits.
//   build/bench/bloom_bench --benchmark_filter=BM_QueryFloor
template <uint32_t kBlock>
SHARDFILTER_FLOOR_TARGET uint64_t QueryFloorRun(const char* table,
                                                uint64_t blocks,
                                                const uint64_t* keys) {
  uint64_t found = 0;
  for (size_t r = 0; r < kRun; ++r) {
    const uint64_t h = Remix(keys[r]);
    const char* b = table + ((h >> 32) * blocks >> 32) * kBlock;
#if SHARDFILTER_SPLIT_AVX2
    __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
    if constexpr (kBlock == 64) {
      v = _mm256_and_si256(
          v, _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32)));
    }
    found += _mm256_testc_si256(v, _mm256_set1_epi64x(static_cast<int64_t>(h)));
#else
    uint64_t w = 0;
    std::memcpy(&w, b, 8);
    if constexpr (kBlock == 64) {
      uint64_t x = 0;
      std::memcpy(&x, b + 32, 8);
      w &= x;
    }
    found += (w & h) == h;
#endif
  }
  return found;
}

void BM_QueryFloor(benchmark::State& state) {
  if (SkippedWithoutAvx2(state)) return;
  const int kind = static_cast<int>(state.range(0));
  const uint64_t n = static_cast<uint64_t>(state.range(1));
  const uint64_t bytes = MakeFilter(kind, n)->Stats().bytes;
  const uint32_t block = kind == kCounting ? 64 : 32;
  void* mem = AllocateFilterTable(bytes);
  Check(mem != nullptr ? Status::OK() : Status::ResourceExhausted("table"));
  auto* table = static_cast<char*>(mem);
  for (uint64_t at = 0, x = 1; at + 8 <= bytes; at += 8) {
    x = Remix(x + at);
    std::memcpy(table + at, &x, 8);
  }
  const uint64_t* keys = QueryKeys(kAbsent, n);
  uint64_t i = 0, found = 0;
  for (auto _ : state) {
    if (i + kRun > n) i = 0;
    found += block == 64 ? QueryFloorRun<64>(table, bytes / 64, keys + i)
                         : QueryFloorRun<32>(table, bytes / 32, keys + i);
    i += kRun;
  }
  benchmark::DoNotOptimize(found);
  FreeTable(mem);
  SetRates(state, state.iterations() * kRun, bytes * 8.0 / n, 0);
}
BENCHMARK(BM_QueryFloor)
    ->ArgNames({"kind", "items"})
    ->ArgsProduct({{kSplit, kCounting}, {kSmall, kLarge}})
    ->UseRealTime();

void QueryArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "items", "mode", "batch"});
  for (int kind : {kSplit, kBlocked, kClassic, kCounting}) {
    for (int64_t n : {kSmall, kLarge}) {
      for (int mode : {kPresent, kAbsent, kMixed}) {
        for (int batch : {0, 1}) b->Args({kind, n, mode, batch});
      }
    }
  }
  b->Threads(1)->Threads(2)->UseRealTime();
}

BENCHMARK(BM_Query)->Apply(QueryArgs);

void RegisterAdds() {
  for (int threads : {1, 2}) {
    for (int kind : {kSplit, kBlocked, kClassic, kCounting}) {
      for (int64_t n : {kSmall, kLarge}) {
        for (int batch : {0, 1}) {
          const int64_t total = std::min<int64_t>(n, 4'000'000);
          const int64_t iters = total / (batch ? kBatch : 1) / threads;
          benchmark::RegisterBenchmark("BM_Add", BM_Add)
              ->ArgNames({"kind", "items", "batch"})
              ->Args({kind, n, batch})
              ->Iterations(iters)
              ->Threads(threads)
              ->UseRealTime();
        }
      }
    }
  }
}

const bool kRegistered = (RegisterAdds(), true);

}  // namespace
}  // namespace shardfilter::bench

BENCHMARK_MAIN();
