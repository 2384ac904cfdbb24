// Query throughput of a sharded filter against an unsharded one of the same
// total size (in memory; the shard router costs one multiply per key), single
// keys and batches; one-at-a-time adds of every type.
//
//   build/bench/sharded_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench_util.h"
#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/detail/split_block.h"
#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/hash.h"

namespace shardfilter::bench {
namespace {

constexpr uint64_t kCapacity = 20'000'000;  // ~24 MiB blocked Bloom: > LLC
// Keys per iteration of a one-at-a-time loop over a key array (bloom_bench's).
constexpr size_t kRun = 1024;

// Adds the hashes of PresentKey(0 .. n) through add(batch), in batches of
// 65,536 and exactly n: a scalable filter past its capacity grows a second
// link, which every query of an absent key then reads too (whole batches
// overshot 2e7 by 54,016, and the 1-shard row measured a two-link chain:
// twice the raw filter's time).
template <typename AddBatch>
void FillExactly(uint64_t n, AddBatch&& add) {
  std::vector<uint64_t> batch(1 << 16);
  for (uint64_t i = 0; i < n; i += batch.size()) {
    batch.resize(std::min<uint64_t>(batch.size(), n - i));
    for (size_t j = 0; j < batch.size(); ++j) batch[j] = PresentKey(i + j);
    add(std::span<const uint64_t>(batch));
  }
}

// Aborts unless every shard still has one link (FillExactly's point).
void CheckOneLink(const ShardedFilter& f) {
  for (const ShardStats& s : f.Stats().shards) {
    if (s.links != 1) abort();
  }
}

// A handle (shards >= 1) or the raw filter its shards' link 0 is (shards
// 0: the same capacity at link 0's rate).
struct Target {
  std::shared_ptr<ShardedFilter> handle;
  std::unique_ptr<Filter> raw;
};

Target MakeTarget(FilterType type, uint32_t shards, uint64_t capacity) {
  Target t;
  if (shards == 0) {
    FilterParams p;
    p.type = type;
    p.capacity = capacity;
    p.fpp = 0.005;  // a scalable 1% filter's link 0
    auto f = CreateFilter(p);
    if (!f.ok()) abort();
    t.raw = std::move(*f);
  } else {
    FilterSpec spec;
    spec.type = type;
    spec.capacity = capacity;
    spec.shards = shards;
    auto f = ShardedFilter::Create(spec);
    if (!f.ok()) abort();
    t.handle = std::move(*f);
  }
  return t;
}

// A Bloom handle of `shards` shards holding exactly kCapacity keys (built
// once per shard count).
std::shared_ptr<ShardedFilter> Build(uint32_t shards) {
  static std::vector<std::shared_ptr<ShardedFilter>> cache(kMaxShards + 1);
  if (cache[shards]) return cache[shards];
  std::shared_ptr<ShardedFilter> f =
      MakeTarget(FilterType::kBloom, shards, kCapacity).handle;
  FillExactly(kCapacity, [&](std::span<const uint64_t> batch) {
    if (!f->AddHashes(batch).ok()) abort();
  });
  CheckOneLink(*f);
  cache[shards] = f;
  return f;
}

void BM_Query(benchmark::State& state) {
  auto f = Build(static_cast<uint32_t>(state.range(0)));
  uint64_t i = 0, positives = 0;
  for (auto _ : state) {
    uint64_t k = AbsentKey(i++);
    positives += f->MayContain(KeyBytes(k));
  }
  ReportFilterCounters(state, f->Stats().total.bits_per_item,
                       static_cast<double>(positives) / i);
}
BENCHMARK(BM_Query)->ArgName("shards")->Arg(1)->Arg(16)->Arg(256);

// The raw filter the sharded one's single link is (a scalable 1% filter's
// link 0 runs at 0.5%): the one-at-a-time query the layers above add to.
void BM_RawBloomQuery(benchmark::State& state) {
  static std::unique_ptr<BloomFilter> raw = [] {
    BloomOptions o;
    o.capacity = kCapacity;
    o.fpp = 0.005;
    auto f = BloomFilter::Create(o);
    if (!f.ok()) abort();
    for (uint64_t i = 0; i < kCapacity; ++i) {
      (*f)->AddHashInline(PresentKey(i));  // as Build: hashes given
    }
    return std::move(*f);
  }();
  uint64_t i = 0, positives = 0;
  for (auto _ : state) {
    uint64_t k = AbsentKey(i++);
    positives += raw->MayContain(KeyBytes(k));
  }
  ReportFilterCounters(state, raw->Stats().bits_per_item,
                       static_cast<double>(positives) / i);
}
BENCHMARK(BM_RawBloomQuery);

// The same for counting and cuckoo filters: one-at-a-time queries of
// absent keys through the handle (1 or 16 shards, filled to exactly its
// capacity, one link per shard) against the raw filter a shard's link 0
// is (the same capacity at link 0's rate, 0.5%, filled the same), asked
// through its own typed call. arg 0 the type (2 counting, 3 cuckoo), arg 1
// the shards (0: the raw filter).
//   build/bench/sharded_bench --benchmark_filter=TypedQuery
// The raw filter's query loop, instantiated per type: its inline query in
// the loop itself (through a function pointer the raw side would pay a
// call the handle's inline path does not).
template <typename F>
uint64_t RawQueries(benchmark::State& state, const Filter& filter,
                    uint64_t* asked) {
  const F& f = static_cast<const F&>(filter);
  uint64_t i = 0, positives = 0;
  for (auto _ : state) positives += f.MayContain(KeyBytes(AbsentKey(i++)));
  *asked = i;
  return positives;
}

void BM_TypedQuery(benchmark::State& state) {
  const auto type = static_cast<FilterType>(state.range(0));
  const auto shards = static_cast<uint32_t>(state.range(1));
  Target t = MakeTarget(type, shards, kCapacity);
  uint64_t i = 0, positives = 0;
  if (t.raw) {
    FillExactly(kCapacity, [&](std::span<const uint64_t> batch) {
      for (uint64_t h : batch) {
        if (!t.raw->AddHash(h).ok()) abort();
      }
    });
    positives = type == FilterType::kCuckoo
                    ? RawQueries<CuckooFilter>(state, *t.raw, &i)
                    : RawQueries<CountingBloomFilter>(state, *t.raw, &i);
  } else {
    FillExactly(kCapacity, [&](std::span<const uint64_t> batch) {
      if (!t.handle->AddHashes(batch).ok()) abort();
    });
    CheckOneLink(*t.handle);  // one link, as the raw filter
    for (auto _ : state)
      positives += t.handle->MayContain(KeyBytes(AbsentKey(i++)));
  }
  ReportFilterCounters(state,
                       t.raw ? t.raw->Stats().bits_per_item
                             : t.handle->Stats().total.bits_per_item,
                       static_cast<double>(positives) / i);
}
BENCHMARK(BM_TypedQuery)
    ->ArgNames({"type", "shards"})
    ->ArgsProduct({{2, 3}, {0, 1, 16}});

void BM_QueryBatch(benchmark::State& state) {
  auto f = Build(static_cast<uint32_t>(state.range(0)));
  std::vector<uint64_t> hashes(state.range(1));
  std::vector<uint8_t> out(hashes.size());
  uint64_t i = 0, positives = 0, queries = 0;
  for (auto _ : state) {
    for (uint64_t& h : hashes) h = f->Hash(KeyBytes(AbsentKey(i++)));
    f->MayContainHashes(hashes, out);
    for (uint8_t b : out) positives += b;
    queries += hashes.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(queries));
  state.counters["fpr_pct"] = 100.0 * positives / queries;
}
BENCHMARK(BM_QueryBatch)
    ->ArgNames({"shards", "batch"})
    ->Args({1, 1024})
    ->Args({16, 1024})
    ->Args({16, 65536})
    ->Args({256, 65536});

// Batched adds (AddHashes: what BF.MADD / SF.MADD of the server and the
// module run) of fresh keys into a filter far larger than the caches,
// pre-filled to 10% so every page is touched. The apply loop prefetches a
// few items ahead, across shard groups (ShardedFilter::BatchPrefetch); with
// 128 shards a batch of 1000 has ~8 items per shard. arg 0 the type
// (1 Bloom, 2 counting, 3 cuckoo), arg 1 the shards, arg 2 the batch.
//   build/bench/sharded_bench --benchmark_filter=AddBatch
constexpr uint64_t kBatchAddCapacity = 50'000'000;

std::shared_ptr<ShardedFilter> BuildForBatchAdds(FilterType type,
                                                 uint32_t shards) {
  std::shared_ptr<ShardedFilter> f =
      MakeTarget(type, shards, kBatchAddCapacity).handle;
  FillExactly(kBatchAddCapacity / 10, [&](std::span<const uint64_t> batch) {
    if (!f->AddHashes(batch).ok()) abort();
  });
  return f;
}

void BM_AddBatch(benchmark::State& state) {
  const auto type = static_cast<FilterType>(state.range(0));
  auto f = BuildForBatchAdds(type, static_cast<uint32_t>(state.range(1)));
  std::vector<uint64_t> hashes(static_cast<size_t>(state.range(2)));
  uint64_t i = kBatchAddCapacity, added = 0;
  for (auto _ : state) {
    for (uint64_t& h : hashes) h = PresentKey(i++);
    if (!f->AddHashes(hashes).ok()) abort();
    added += hashes.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(added));
  state.counters["ns_per_item"] = benchmark::Counter(
      static_cast<double>(added),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AddBatch)
    ->ArgNames({"type", "shards", "batch"})
    ->Args({1, 1, 1000})
    ->Args({1, 128, 1000})
    ->Args({1, 128, 10})
    ->Args({2, 128, 1000})
    ->Args({3, 128, 1000})
    ->Unit(benchmark::kMicrosecond);

// One-at-a-time adds of every type, the path users call (a ShardedFilter
// handle: hash, shard router, chain with its copy bound) against the raw
// filter its shard's first link is (same capacity, link 0's rate), 8-byte
// keys, durability none. Each filter is filled to 90% of its capacity and
// then replaced (the replacement is not timed), so the load swings between
// 0 and 90% as a server's keys do. arg 0 the type (1 Bloom, 2 counting,
// 3 cuckoo), arg 1 the shards (0: the raw filter), arg 2 the capacity: 2^22
// (a Bloom table of ~6 MB, at the edge of this VM's ~4 MiB of usable cache)
// or 5e7 (far larger than the caches: each add waits on DRAM, and a loop of
// them runs only as fast as the CPU overlaps consecutive adds' misses).
//   build/bench/sharded_bench --benchmark_filter=OneAdd

// The raw filter's one-at-a-time add is its type's own inline call, in a
// loop instantiated per type (no call between the loop and the add), not
// Filter::AddHash (a virtual call returning a Status, the hash computed out
// of line): against that path a Bloom handle looks 1.1x its raw filter
// where it measures 1.45x (portable build; docs/performance.md, "The
// sharded handle against its link").
template <typename F>
bool RawAdd(F& f, std::string_view key) {
  if constexpr (std::is_same_v<F, CuckooFilter>) {
    return f.Add(key).ok();
  } else {
    f.Add(key);  // Bloom: whether a bit was new
    return true;
  }
}

// The timed loop of BM_OneAdd: `add(target, key)` one key at a time, each
// target filled to 90% of `capacity` and then replaced (not timed).
template <typename AddOne>
void RunAdds(benchmark::State& state, FilterType type, uint32_t shards,
             uint64_t capacity, AddOne&& add) {
  Target t = MakeTarget(type, shards, capacity);
  uint64_t i = 0, n = 0, failed = 0;
  for (auto _ : state) {
    failed += !add(t, KeyBytes(PresentKey(i++)));
    if (++n == capacity * 9 / 10) {
      state.PauseTiming();
      t = MakeTarget(type, shards, capacity);
      n = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["failed"] = static_cast<double>(failed);
}

void BM_OneAdd(benchmark::State& state) {
  const auto type = static_cast<FilterType>(state.range(0));
  const auto shards = static_cast<uint32_t>(state.range(1));
  const auto capacity = static_cast<uint64_t>(state.range(2));
  auto raw = [&](auto* typed) {
    using F = std::remove_pointer_t<decltype(typed)>;
    RunAdds(state, type, shards, capacity, [](Target& t, std::string_view k) {
      return RawAdd(static_cast<F&>(*t.raw), k);
    });
  };
  if (shards != 0) {
    RunAdds(state, type, shards, capacity, [](Target& t, std::string_view k) {
      return t.handle->Add(k).ok();
    });
  } else if (type == FilterType::kBloom) {
    raw(static_cast<BloomFilter*>(nullptr));
  } else if (type == FilterType::kCountingBloom) {
    raw(static_cast<CountingBloomFilter*>(nullptr));
  } else {
    raw(static_cast<CuckooFilter*>(nullptr));
  }
}
BENCHMARK(BM_OneAdd)
    ->ArgNames({"type", "shards", "items"})
    ->ArgsProduct({{1, 2, 3},
                   {0, 1, 2, 4, 16},
                   {int64_t{1} << 22, 50'000'000}});

// The four timed loops, each in a function of its own: in one function the
// handle's inline add (three types' paths) and the raw add would share one
// register allocation, and a change to the handle's path would move the
// raw loop's time (by 10%, measured).
[[gnu::noinline]] uint64_t HandleAdds(ShardedFilter& h, const uint64_t* keys,
                                      uint64_t b, uint64_t e) {
  uint64_t failed = 0;
  for (uint64_t i = b; i < e; ++i) failed += !h.Add(KeyBytes(keys[i])).ok();
  return failed;
}
template <typename F>
[[gnu::noinline]] uint64_t LinkAdds(F& link, const uint64_t* keys, uint64_t b,
                                    uint64_t e) {
  uint64_t failed = 0;
  for (uint64_t i = b; i < e; ++i) failed += !RawAdd(link, KeyBytes(keys[i]));
  return failed;
}
// A cuckoo link's capped add, as the handle makes it: a key's copies
// bounded at 2b - 1 (DESIGN.md invariant 8; the raw Add has no bound), so
// the add reads both of the key's buckets before it inserts.
[[gnu::noinline]] uint64_t LinkCappedAdds(CuckooFilter& link,
                                          const uint64_t* keys, uint64_t b,
                                          uint64_t e) {
  const uint32_t cap = 2 * link.bucket_size() - 1;
  uint64_t failed = 0;
  for (uint64_t i = b; i < e; ++i) {
    uint32_t held = 0;
    const uint64_t h = link.Hash(KeyBytes(keys[i]));
    failed += !(link.AddHashCappedInline(h, cap, &held) ||
                link.AddHashCapped(h, cap, &held).ok());
  }
  return failed;
}
[[gnu::noinline]] uint64_t HandleQueries(const ShardedFilter& h,
                                         const uint64_t* keys, uint64_t b,
                                         uint64_t e) {
  uint64_t found = 0;
  for (uint64_t i = b; i < e; ++i) found += h.MayContain(KeyBytes(keys[i]));
  return found;
}
template <typename F>
[[gnu::noinline]] uint64_t LinkQueries(const F& link, const uint64_t* keys,
                                       uint64_t b, uint64_t e) {
  uint64_t found = 0;
  for (uint64_t i = b; i < e; ++i) found += link.MayContain(KeyBytes(keys[i]));
  return found;
}
// The least any handle's query can do over its link's (the `floor` side
// of BM_HandleAgainstLink's queries, Bloom and counting). A loop over a raw
// filter keeps its table, block count and multipliers in registers; a
// handle cannot, since its link may change between two calls (growth adds
// a link, a migration forwards, Drop frees it). So per query it loads the
// link's table again (acquire, pairing with the store that installs it),
// takes a slow path when it is gone (FloorSlowQuery), and loads the table's
// geometry with it. What the handle does beyond this (its routing, the entry's
// type checks) is its own cost; what this costs over the link is any such
// handle's. (BM_HandleQueryFloor below builds the same floor for Bloom with
// routing over 16 shards, on tables of its own.)
struct ReloadedLink {
  std::atomic<const std::atomic<uint64_t>*> table{nullptr};
  uint64_t blocks = 0;
  const uint32_t* mult = nullptr;  // counting: its lane multipliers
  uint32_t k = 0;                  // counting
};
// Never taken (no floor's table is cleared: ReloadedQueries,
// BM_HandleQueryFloor): the call's presence in the loop is what counts, one
// that may write any memory, as the handle's slow path (noipa: the compiler may
// assume nothing else of it).
[[gnu::noipa]] bool FloorSlowQuery(uint64_t hash) {
  benchmark::DoNotOptimize(hash);
  benchmark::ClobberMemory();
  return (hash & 1) != 0;
}
template <typename F>
[[gnu::noinline]] uint64_t ReloadedQueries(const ReloadedLink& link,
                                           const KeyHasher& hasher,
                                           const uint64_t* keys, uint64_t b,
                                           uint64_t e) {
  uint64_t found = 0;
  for (uint64_t i = b; i < e; ++i) {
    const uint64_t h = hasher(KeyBytes(keys[i]));
    const std::atomic<uint64_t>* t = link.table.load(std::memory_order_acquire);
    if (t == nullptr) [[unlikely]] {
      found += FloorSlowQuery(h);
    } else if constexpr (std::is_same_v<F, BloomFilter>) {
      found += internal::SplitMayContain(
          t + internal::SplitBlockOffset(h, link.blocks) / sizeof(uint64_t),
          static_cast<uint32_t>(h));
    } else {
      found += CountingBloomFilter::MayContainInTable(t, link.blocks, link.mult,
                                                      link.k, h);
    }
  }
  return found;
}

// A one-shard handle against its own link 0, on the same table: one
// filter (capacity `items`, scalable 1%, no journal) is filled with
// PresentKey(0 .. items) in chunks of items / 64 keys that alternate between
// the handle's Add and the raw add of its link 0 (the filter object the
// shard holds, through the raw filter's own one-at-a-time call); then
// whole passes of absent keys (at least 2^24 queries) are asked in chunks
// that alternate the same way. Both sides touch the same memory at the
// same fill, interleaved, so their ratio is the handle's own cost
// (counters add_ratio and query_ratio; ns per op in handle_* and link_*).
// Two tables allocated apart, as in BM_OneAdd and BM_TypedQuery, or in two
// cells of a side-by-side, sit in different physical memory, and on this
// VM that alone moved a raw cuckoo query at 5e7 between 58 and 71 ns
// (docs/performance.md, "The sharded handle against its link"). Every
// present key is asked through the handle afterwards (a miss aborts: no
// false negatives). arg 0 the type (1 Bloom, 2 counting, 3 cuckoo), arg 1
// the items. A cuckoo filter's adds alternate among three sides: the
// handle's add bounds a key's copies (invariant 8) and so reads both
// buckets first, which the raw Add does not, and the link's own capped
// add is the like-for-like figure (add_ratio_capped): against the
// uncapped add alone the handle's cuckoo add looks a third slower than
// its own cost (native, 5e7: 1.36-1.38x against 1.06-1.07x over the
// capped add). Bloom and counting queries alternate among three sides
// too, the third the floor of any handle's query (ReloadedQueries): its ratio
// to the link (floor_query_ratio) is what no handle that follows its link
// from call to call can beat, and handle over floor is this handle's own.
//   build/bench/sharded_bench --benchmark_filter=HandleAgainstLink
template <typename F>
void HandleAgainstLink(benchmark::State& state, FilterType type,
                       uint64_t items) {
  using Clock = std::chrono::steady_clock;
  const uint64_t chunk = std::max<uint64_t>(items / 64, 1);
  // Whole passes over the absent keys, at least 2^24 queries.
  const uint64_t queries =
      items * std::max<uint64_t>(1, (uint64_t{1} << 24) / items);
  // Cuckoo: a third side, the link's capped add (LinkCappedAdds).
  constexpr bool kCapped = std::is_same_v<F, CuckooFilter>;
  constexpr uint64_t kSides = kCapped ? 3 : 2;
  // Bloom and counting: a third query side, the floor (ReloadedQueries).
  // Counting only where its query runs the table kernel (k <= 8, below).
  constexpr bool kFloor = !kCapped;
  double add_ns[3] = {0, 0, 0}, query_ns[3] = {0, 0, 0};
  uint64_t adds[3] = {0, 0, 0}, asked[3] = {0, 0, 0}, positives = 0, failed = 0;
  double bits_per_item = 0;
  // The keys come from arrays, as in the side-by-side with the peers
  // (docs/performance.md): a loop that computes each key runs more
  // instructions per op on both sides, which hides part of the handle's
  // own (a Bloom query at 5e7 measured 1.03x its link with computed keys,
  // 1.12-1.20x from arrays).
  std::vector<uint64_t> present_keys(items), absent_keys(items);
  for (uint64_t i = 0; i < items; ++i) {
    present_keys[i] = PresentKey(i);
    absent_keys[i] = AbsentKey(i);
  }
  const uint64_t* const present = present_keys.data();
  const uint64_t* const absent = absent_keys.data();
  for (auto _ : state) {
    std::shared_ptr<ShardedFilter> h = MakeTarget(type, 1, items).handle;
    F& link =
        static_cast<F&>(*internal::ShardedFilterAccess::shard(*h, 0).link(0));
    for (uint64_t b = 0, c = 0; b < items; b += chunk, ++c) {
      const uint64_t e = std::min(items, b + chunk);
      // 0 link, 1 handle, 2 the link's capped add (cuckoo).
      const int side = static_cast<int>(c % kSides);
      const auto t0 = Clock::now();
      if (side == 1) {
        failed += HandleAdds(*h, present, b, e);
      } else if (side == 0) {
        failed += LinkAdds(link, present, b, e);
      } else if constexpr (kCapped) {
        failed += LinkCappedAdds(link, present, b, e);
      }
      add_ns[side] +=
          std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      adds[side] += e - b;
    }
    ReloadedLink reloaded;
    const KeyHasher hasher(link.seed());
    // The floor hashes as the link does, or its answers would not be the
    // link's (the same kernel on the same table).
    if (hasher(KeyBytes(absent[0])) != link.Hash(KeyBytes(absent[0]))) {
      abort();
    }
    uint64_t query_sides = 2;
    if constexpr (std::is_same_v<F, BloomFilter>) {
      if (link.split_table() != nullptr) {
        reloaded.table.store(link.split_table(), std::memory_order_release);
        reloaded.blocks = link.num_blocks();
        query_sides = 3;
      }
    } else if constexpr (std::is_same_v<F, CountingBloomFilter>) {
      if (CountingBloomFilter::kTableQuery && link.k() <= 8) {
        reloaded.table.store(link.table_data(), std::memory_order_release);
        reloaded.blocks = link.num_blocks();
        reloaded.mult = link.lane_multipliers();
        reloaded.k = link.k();
        query_sides = 3;
      }
    }
    for (uint64_t q = 0, c = 0; q < queries; ++c) {
      const uint64_t b = q % items, e = std::min(items, b + chunk);
      q += e - b;
      // 0 link, 1 handle, 2 the floor.
      const int side = static_cast<int>(c % query_sides);
      const auto t0 = Clock::now();
      uint64_t found = 0;
      if (side == 1) {
        found = HandleQueries(*h, absent, b, e);
      } else if (side == 0) {
        found = LinkQueries(link, absent, b, e);
      } else if constexpr (kFloor) {
        found = ReloadedQueries<F>(reloaded, hasher, absent, b, e);
      }
      query_ns[side] +=
          std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      asked[side] += e - b;
      positives += found;
    }
    state.PauseTiming();
    if (internal::ShardedFilterAccess::shard(*h, 0).link_count.load() != 1) {
      abort();  // a second link would be read by every handle query
    }
    for (uint64_t i = 0; i < items; ++i) {
      if (!h->MayContain(KeyBytes(present[i]))) abort();
    }
    bits_per_item = h->Stats().total.bits_per_item;
    state.ResumeTiming();
  }
  const double ha = add_ns[1] / adds[1], la = add_ns[0] / adds[0];
  const double hq = query_ns[1] / asked[1], lq = query_ns[0] / asked[0];
  state.counters["handle_add_ns"] = ha;
  state.counters["link_add_ns"] = la;
  state.counters["add_ratio"] = ha / la;
  if constexpr (kCapped) {
    const double ca = add_ns[2] / adds[2];
    state.counters["link_capped_add_ns"] = ca;
    state.counters["add_ratio_capped"] = ha / ca;
  }
  state.counters["handle_query_ns"] = hq;
  state.counters["link_query_ns"] = lq;
  state.counters["query_ratio"] = hq / lq;
  if (asked[2] != 0) {
    const double fq = query_ns[2] / asked[2];
    state.counters["floor_query_ns"] = fq;
    state.counters["floor_query_ratio"] = fq / lq;
  }
  state.counters["failed"] = static_cast<double>(failed);
  state.counters["bits_per_item"] = bits_per_item;
  state.counters["fpr_pct"] =
      100.0 * static_cast<double>(positives) /
      static_cast<double>(asked[0] + asked[1] + asked[2]);
}
void BM_HandleAgainstLink(benchmark::State& state) {
  const auto type = static_cast<FilterType>(state.range(0));
  const auto items = static_cast<uint64_t>(state.range(1));
  if (type == FilterType::kBloom) {
    HandleAgainstLink<BloomFilter>(state, type, items);
  } else if (type == FilterType::kCountingBloom) {
    HandleAgainstLink<CountingBloomFilter>(state, type, items);
  } else {
    HandleAgainstLink<CuckooFilter>(state, type, items);
  }
}
BENCHMARK(BM_HandleAgainstLink)
    ->ArgNames({"type", "items"})
    ->ArgsProduct({{1, 2, 3}, {1'000'000, 50'000'000}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// One-at-a-time Bloom adds of new keys by one or two threads into one
// handle (1 or 16 shards, capacity 5e7: each add waits on DRAM), each thread
// its own keys, 4e6 adds per thread (so the handle stays on link 0, far
// from full). What the threads share is each shard's first lines (its fill
// count, its dirty flag, its lock word): compare threads:2 with threads:1
// (items_per_second is the adds of both threads).
//   build/bench/sharded_bench --benchmark_filter=ConcurrentAdd
std::shared_ptr<ShardedFilter> g_concurrent;
void BM_ConcurrentAdd(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_concurrent = MakeTarget(FilterType::kBloom,
                              static_cast<uint32_t>(state.range(0)), 50'000'000)
                       .handle;
  }
  uint64_t i = static_cast<uint64_t>(state.thread_index()) << 40;
  uint64_t failed = 0;
  for (auto _ : state) {
    // The loop's start is a barrier: thread 0's handle is visible here.
    failed += !g_concurrent->Add(KeyBytes(PresentKey(i++))).ok();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["failed"] = static_cast<double>(failed);
  if (state.thread_index() == 0) {
    CheckOneLink(*g_concurrent);
    g_concurrent.reset();  // after the loop's closing barrier
  }
}
BENCHMARK(BM_ConcurrentAdd)
    ->ArgName("shards")
    ->Arg(1)
    ->Arg(16)
    ->Iterations(4'000'000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// One-at-a-time adds of keys already present (a dedup service's common
// add: "seen it?"), Bloom: the handle (1 or 16 shards) against the raw
// filter its link 0 is, each holding the first half of its capacity (so
// the handle's shards stay on the inline one-link path), asked for those
// keys again in order. Every add finds its bits set (kAlreadyPresent).
//   build/bench/sharded_bench --benchmark_filter=RepeatAdd
void BM_RepeatAdd(benchmark::State& state) {
  const auto shards = static_cast<uint32_t>(state.range(0));
  const uint64_t held = kCapacity / 2;
  Target t = MakeTarget(FilterType::kBloom, shards, kCapacity);
  auto* raw = static_cast<BloomFilter*>(t.raw.get());  // null: a handle
  for (uint64_t i = 0; i < held; ++i) {
    if (t.raw) {
      raw->Add(KeyBytes(PresentKey(i)));
    } else if (!t.handle->Add(KeyBytes(PresentKey(i))).ok()) {
      abort();
    }
  }
  uint64_t i = 0, added = 0;
  if (t.raw) {
    for (auto _ : state) {
      added += raw->Add(KeyBytes(PresentKey(i)));
      if (++i == held) i = 0;
    }
  } else {
    for (auto _ : state) {
      auto r = t.handle->Insert(KeyBytes(PresentKey(i)));
      added += !r.ok() || *r != AddOutcome::kAlreadyPresent;
      if (++i == held) i = 0;
    }
  }
  if (added != 0) abort();  // every key was present
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RepeatAdd)->ArgName("shards")->Arg(0)->Arg(1)->Arg(16);

// What a growable filter's one-at-a-time query costs over a fixed one's
// (the target: a Database handle's MayContain within 1.15x of its raw
// link's; docs/performance.md, "The targets and where each stands"), on
// one table (the raw filter's: the same memory, bits and keys), in a
// caller's loop over an array of absent keys as BM_Query's in
// bloom_bench. Arg 0, the variant:
//   0  the raw layout: XXH3, block, lane test, with the table, its size and
//      the seed in the loop's registers (what a fixed filter's loop
//      compiles to: nothing in it can change them)
//   1  plus what a filter that may grow must do per call: load its table
//      pointer afresh (a relaxed atomic load; an add to a second link must
//      be seen by every query after it, so it cannot be hoisted) and, when
//      it is gone, call a slow path. The compiler must then reload the
//      seed and the table size on every call too: it treats an atomic load
//      as touching any memory, and the call may write any.
//   2  variant 1 over 16 shards (16 slices of the table): the router's
//      multiply and shift, and the shard's own pointer and size
//   3, 4  a ShardedFilter handle of 1 and 16 shards, filled to `items`
//   5  the raw filter (BloomFilter::MayContain) on the table of 0-2
// Arg 1: items. A loop of independent queries runs as fast as the CPU
// overlaps their misses, so each instruction per call costs time at 5e7
// (bloom_bench's BM_QueryFloor); 1 against 0 is the least a growable
// filter pays on top of the raw filter, 3 and 4 against 1 and 2 what the
// library pays on top of that. Native builds (AVX2 inline): elsewhere the
// kernels are a call, and all variants pay it.
//   build-native/bench/sharded_bench --benchmark_filter=HandleQueryFloor
struct FloorShard {
  std::atomic<const std::atomic<uint64_t>*> table{nullptr};
  uint64_t blocks = 0;
};
struct FloorHandle {
  explicit FloorHandle(uint64_t seed) : hasher(seed) {}
  KeyHasher hasher;
  uint32_t shift = 64;  // 64 - log2(shards); 64: one shard
  const FloorShard* shards = nullptr;
};

template <int kVariant>
uint64_t HandleFloorRun(const FloorHandle& h, const uint64_t* keys) {
  uint64_t found = 0;
  if constexpr (kVariant == 0) {
    const KeyHasher hasher = h.hasher;
    const std::atomic<uint64_t>* const t =
        h.shards[0].table.load(std::memory_order_relaxed);
    const uint64_t blocks = h.shards[0].blocks;
    for (size_t r = 0; r < kRun; ++r) {
      const uint64_t hash = hasher(KeyBytes(keys[r]));
      found += internal::SplitMayContain(
          t + internal::SplitBlockOffset(hash, blocks) / sizeof(uint64_t),
          static_cast<uint32_t>(hash));
    }
    return found;
  }
  for (size_t r = 0; r < kRun; ++r) {
    const uint64_t hash = h.hasher(KeyBytes(keys[r]));
    uint32_t shard = 0;
    if constexpr (kVariant == 2) {
      if (h.shift < 64) {
        shard = static_cast<uint32_t>((hash * kRouterMultiplier) >> h.shift);
      }
    }
    const FloorShard& s = h.shards[shard];
    const std::atomic<uint64_t>* const t =
        s.table.load(std::memory_order_relaxed);
    if (t == nullptr) [[unlikely]] {
      found += FloorSlowQuery(hash);
      continue;
    }
    found += internal::SplitMayContain(
        t + internal::SplitBlockOffset(hash, s.blocks) / sizeof(uint64_t),
        static_cast<uint32_t>(hash));
  }
  return found;
}

template <typename F>
uint64_t HandleFloorTargetRun(const F& f, const uint64_t* keys) {
  uint64_t found = 0;
  for (size_t r = 0; r < kRun; ++r) found += f.MayContain(KeyBytes(keys[r]));
  return found;
}

void BM_HandleQueryFloor(benchmark::State& state) {
  const int variant = static_cast<int>(state.range(0));
  const auto n = static_cast<uint64_t>(state.range(1));
  struct Built {
    std::unique_ptr<BloomFilter> raw;
    std::shared_ptr<ShardedFilter> handle[2];  // 1 and 16 shards
    std::vector<uint64_t> keys;                // absent
  };
  static std::map<uint64_t, Built> cache;
  Built& b = cache[n];
  if (b.raw == nullptr) {
    BloomOptions o;
    o.capacity = n;
    o.fpp = 0.005;  // a scalable 1% filter's link 0
    auto raw = BloomFilter::Create(o);
    if (!raw.ok() || (*raw)->split_table() == nullptr) abort();
    b.raw = std::move(*raw);
    FillExactly(n, [&](std::span<const uint64_t> batch) {
      for (uint64_t h : batch) b.raw->AddHashInline(h);
    });
    for (uint32_t i = 0; i < 2; ++i) {
      b.handle[i] = MakeTarget(FilterType::kBloom, i == 0 ? 1 : 16, n).handle;
      FillExactly(n, [&](std::span<const uint64_t> batch) {
        if (!b.handle[i]->AddHashes(batch).ok()) abort();
      });
      CheckOneLink(*b.handle[i]);
    }
    b.keys.resize(n);
    for (uint64_t i = 0; i < n; ++i) b.keys[i] = AbsentKey(i);
  }
  constexpr uint32_t kFloorShards = 16;
  // On the heap and escaped, as a handle is: after an atomic load or a
  // call the compiler must read its fields again.
  auto shards = std::make_unique<FloorShard[]>(kFloorShards);
  auto handle = std::make_unique<FloorHandle>(b.raw->seed());
  FloorHandle& h = *handle;
  benchmark::DoNotOptimize(handle.get());
  h.shards = shards.get();
  const uint64_t blocks = b.raw->num_blocks();
  const uint32_t slices = variant == 2 ? kFloorShards : 1;
  for (uint32_t i = 0; i < slices; ++i) {
    shards[i].blocks = blocks / slices;
    shards[i].table.store(b.raw->split_table() + i * (blocks / slices) *
                                                     internal::kSplitBlockWords,
                          std::memory_order_relaxed);
  }
  h.shift = variant == 2 ? 60 : 64;
  uint64_t i = 0, found = 0;
  for (auto _ : state) {
    if (i + kRun > n) i = 0;
    const uint64_t* run = b.keys.data() + i;
    switch (variant) {
      case 0:
        found += HandleFloorRun<0>(h, run);
        break;
      case 1:
        found += HandleFloorRun<1>(h, run);
        break;
      case 2:
        found += HandleFloorRun<2>(h, run);
        break;
      case 3:
      case 4:
        found += HandleFloorTargetRun(*b.handle[variant - 3], run);
        break;
      default:
        found += HandleFloorTargetRun(*b.raw, run);
    }
    i += kRun;
  }
  benchmark::DoNotOptimize(found);
  state.counters["ns_per_query"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kRun) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_HandleQueryFloor)
    ->ArgNames({"variant", "items"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1'000'000, 50'000'000}})
    ->UseRealTime();

// The scaling floor of writers that share per-shard state (the target "two
// journalled writers at 1.7x one", docs/performance.md): each op ORs a bit
// into a random word of a 64 MiB table (a locked OR, as a Bloom add's) and,
// for the key's shard (one of 16), a locked add to each of `lines` cache
// lines of that shard's own, nothing else. With random keys a shard's lines
// were last written by the other thread about half the time, so each such
// line is a transfer between cores. A writer of this library writes per op:
// the shard's first line (its fill and sequence;
// engine/detail/shard_fast_path.h), and with a memory-mapped journal the log
// shard's line (the reservation and watermark) and the record's line
// (16-byte records, four to a line; engine/internal/filter_log.h): 1 without
// a journal, 3 with one. Compare threads:2 with threads:1 for each `lines`.
//   build/bench/sharded_bench --benchmark_filter=SharedLinesFloor
struct alignas(64) FloorLine {
  std::atomic<uint64_t> n{0};
};
void BM_SharedLinesFloor(benchmark::State& state) {
  constexpr uint64_t kWords = (uint64_t{64} << 20) / 8;
  constexpr uint32_t kShards = 16, kMaxLines = 3;
  static std::vector<std::atomic<uint64_t>> table(kWords);
  static FloorLine lines[kShards][kMaxLines];
  const auto per_op = static_cast<uint32_t>(state.range(0));
  uint64_t i = static_cast<uint64_t>(state.thread_index()) << 48;
  for (auto _ : state) {
    const uint64_t h = Remix(i++);
    table[(h >> 8) % kWords].fetch_or(uint64_t{1} << (h & 63),
                                      std::memory_order_relaxed);
    FloorLine* shard = lines[(h >> 40) % kShards];
    for (uint32_t l = 0; l < per_op; ++l) {
      shard[l].n.fetch_add(1, std::memory_order_relaxed);
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SharedLinesFloor)
    ->ArgName("lines")
    ->DenseRange(0, 3)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

}  // namespace
}  // namespace shardfilter::bench

BENCHMARK_MAIN();
