// Instructions per one-at-a-time call, counted by callgrind, so that a
// regression in the per-call paths shows without timing noise.
// bench/instructions.sh runs each scenario below under
//   valgrind --tool=callgrind --toggle-collect=sf_ic_<scenario>
// and divides the instructions counted inside the scenario's loop by its
// calls (kOps; kCreateOps for the creates and loads). Only the loop is
// counted: building and filling the filter happen before it. The loop
// includes hashing an 8-byte key, the call and the loop's own bookkeeping,
// as the figures do. The reserve_* and load_* scenarios make and
// free a small filter per call (the Redis module's BF.RESERVE / CF.RESERVE
// of 500 items, and the decode of its RDB value), after one of the same
// spec was made before the loop.
//
// Build without AVX-512 (the package's portable build is what CI uses):
// Debian's valgrind 3.19 cannot decode it.
//
//   build/bench/sf_instructions <scenario>     (one scenario, for valgrind)
//   build/bench/sf_instructions --list
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "bench_util.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter::bench {
namespace {

constexpr uint64_t kOps = 100'000;
constexpr uint64_t kCapacity = 1'000'000;
// Creates and loads per scenario: each costs thousands of instructions.
constexpr uint64_t kCreateOps = 1'000;

// Keeps results alive so the compiler cannot drop the calls.
volatile uint64_t g_sink;

template <typename F, typename Options>
std::unique_ptr<F> Make() {
  Options o;
  o.capacity = kCapacity;
  o.fpp = 0.01;
  auto f = F::Create(o);
  if (!f.ok()) abort();
  return std::move(*f);
}
// The default layout (kAuto: split block at 1%).
std::unique_ptr<BloomFilter> MakeBloom() {
  return Make<BloomFilter, BloomOptions>();
}
// The word-blocked layout (kBlocked), the default before split block.
std::unique_ptr<BloomFilter> MakeBlockedBloom() {
  BloomOptions o;
  o.capacity = kCapacity;
  o.fpp = 0.01;
  o.layout = BloomLayout::kBlocked;
  auto f = BloomFilter::Create(o);
  if (!f.ok()) abort();
  return std::move(*f);
}
std::unique_ptr<CuckooFilter> MakeCuckoo() {
  return Make<CuckooFilter, CuckooOptions>();
}
std::unique_ptr<CountingBloomFilter> MakeCounting() {
  return Make<CountingBloomFilter, CountingBloomOptions>();
}

// The query loop every query scenario counts: hash an absent 8-byte key,
// ask, sum the answers.
template <typename F>
[[gnu::always_inline]] inline void QueryLoop(const F& f) {
  uint64_t hits = 0;
  for (uint64_t i = 0; i < kOps; ++i) {
    const uint64_t k = AbsentKey(i);
    hits += f.MayContain(KeyBytes(k));
  }
  g_sink = hits;
}

std::shared_ptr<ShardedFilter> MakeHandle(FilterType type, uint32_t shards) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = kCapacity;
  spec.shards = shards;
  auto f = ShardedFilter::Create(spec);
  if (!f.ok()) abort();
  return std::move(*f);
}

// What the Redis module makes of `BF.RESERVE k 0.01 500` (its
// ToFilterSpec: one shard, scaling, expansion 2, MAX-FILTER-BYTES 1 GiB) or
// of `CF.RESERVE k 500` (buckets of 2).
FilterSpec ReserveSpec(FilterType type) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = 500;
  spec.fpp = 0.01;
  spec.expansion = 2;
  spec.max_bytes = uint64_t{1} << 30;
  spec.durability = Durability::kNone;
  if (type == FilterType::kCuckoo) spec.bucket_size = 2;
  return spec;
}

template <typename F>
void FillHalf(F& f) {
  for (uint64_t i = 0; i < kCapacity / 2; ++i)
    (void)f.Add(KeyBytes(PresentKey(i)));
}

}  // namespace
}  // namespace shardfilter::bench

using namespace shardfilter;         // NOLINT: a benchmark program
using namespace shardfilter::bench;  // NOLINT

// The counted loops: one per scenario, never inlined nor cloned (a
// constprop clone would escape --toggle-collect), named for
// --toggle-collect.
#if defined(__clang__)
#define SF_COUNTED_LOOP __attribute__((noinline))
#else
#define SF_COUNTED_LOOP __attribute__((noinline, noclone))
#endif
extern "C" {
SF_COUNTED_LOOP void sf_ic_bloom_query(const BloomFilter& f) { QueryLoop(f); }
SF_COUNTED_LOOP void sf_ic_bloom_query_kernel(const BloomFilter& f,
                                              const uint64_t* h) {
  uint64_t hits = 0;
  for (uint64_t i = 0; i < kOps; ++i) hits += f.MayContainHashInline(h[i]);
  g_sink = hits;
}
SF_COUNTED_LOOP void sf_ic_cuckoo_query(const CuckooFilter& f) { QueryLoop(f); }
SF_COUNTED_LOOP void sf_ic_counting_query(const CountingBloomFilter& f) {
  QueryLoop(f);
}
SF_COUNTED_LOOP void sf_ic_handle_query(const ShardedFilter& f) {
  QueryLoop(f);
}
SF_COUNTED_LOOP void sf_ic_raw_add(Filter& f) {
  uint64_t ok = 0;
  for (uint64_t i = 0; i < kOps; ++i) {
    const uint64_t k = PresentKey(i);
    ok += f.AddHash(f.Hash(KeyBytes(k))).ok();
  }
  g_sink = ok;
}
SF_COUNTED_LOOP void sf_ic_handle_add(ShardedFilter& f) {
  uint64_t ok = 0;
  for (uint64_t i = 0; i < kOps; ++i) {
    const uint64_t k = PresentKey(i);
    ok += f.Add(KeyBytes(k)).ok();
  }
  g_sink = ok;
}
// A filter made and freed per call (BF.RESERVE, then DEL).
SF_COUNTED_LOOP void sf_ic_create(const FilterSpec& spec) {
  uint64_t ok = 0;
  for (uint64_t i = 0; i < kCreateOps; ++i) {
    ok += ShardedFilter::Create(spec).ok();
  }
  g_sink = ok;
}
// An export decoded and freed per call (the module's RDB load, RESTORE).
SF_COUNTED_LOOP void sf_ic_load(const std::string& bytes) {
  uint64_t ok = 0;
  for (uint64_t i = 0; i < kCreateOps; ++i) {
    ok += LoadExportedFilter(bytes).ok();
  }
  g_sink = ok;
}
}

namespace {

// A filter of durability journal in a fresh store (under $TMPDIR, removed
// after), its journal memory-mapped, then the counted add loop.
void JournalAdd(FilterType type, uint32_t shards) {
  const char* base = getenv("TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/sf_ic_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) abort();
  {
    DatabaseOptions o;
    o.path = dir + "/db";
    o.checkpoint_on_close = false;
    o.mapped_journal_min_bytes = 0;
    auto db = Database::Open(o);
    if (!db.ok()) abort();
    FilterSpec spec;
    spec.type = type;
    spec.capacity = kCapacity;
    spec.shards = shards;
    spec.durability = Durability::kJournal;
    auto f = (*db)->Create("f", spec);
    if (!f.ok()) abort();
    sf_ic_handle_add(**f);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

struct Scenario {
  const char* name;
  const char* function;  // the counted loop
  void (*run)();
  uint64_t ops = kOps;  // calls the loop makes
};

// One filter of `spec` made before the counted loop (what the process has
// seen once), then the loop's creates of the same spec.
void Create(const FilterSpec& spec) {
  if (!ShardedFilter::Create(spec).ok()) abort();
  sf_ic_create(spec);
}
// The export of a filter of `spec` holding 20 keys, decoded once before
// the counted loop, then the loop's decodes.
void Load(const FilterSpec& spec) {
  auto f = ShardedFilter::Create(spec);
  if (!f.ok()) abort();
  for (uint64_t i = 0; i < 20; ++i) (void)(*f)->Add(KeyBytes(PresentKey(i)));
  const std::string bytes = ExportShardedFilter(**f);
  if (!LoadExportedFilter(bytes).ok()) abort();
  sf_ic_load(bytes);
}

// A Bloom filter half full, then the counted query loop: with the hash
// (sf_ic_bloom_query) or over precomputed hashes (the kernel alone).
void BloomQuery(std::unique_ptr<BloomFilter> f) {
  FillHalf(*f);
  sf_ic_bloom_query(*f);
}
void BloomQueryKernel(std::unique_ptr<BloomFilter> f) {
  FillHalf(*f);
  std::unique_ptr<uint64_t[]> h(new uint64_t[kOps]);
  for (uint64_t i = 0; i < kOps; ++i) h[i] = f->Hash(KeyBytes(AbsentKey(i)));
  sf_ic_bloom_query_kernel(*f, h.get());
}

const Scenario kScenarios[] = {
    {"bloom_query", "sf_ic_bloom_query", [] { BloomQuery(MakeBloom()); }},
    {"bloom_query_kernel", "sf_ic_bloom_query_kernel",
     [] { BloomQueryKernel(MakeBloom()); }},
    {"blocked_bloom_query", "sf_ic_bloom_query",
     [] { BloomQuery(MakeBlockedBloom()); }},
    {"blocked_bloom_query_kernel", "sf_ic_bloom_query_kernel",
     [] { BloomQueryKernel(MakeBlockedBloom()); }},
    {"cuckoo_query", "sf_ic_cuckoo_query",
     [] {
       auto f = MakeCuckoo();
       for (uint64_t i = 0; i < kCapacity / 2; ++i)
         (void)f->Add(KeyBytes(PresentKey(i)));
       sf_ic_cuckoo_query(*f);
     }},
    {"counting_query", "sf_ic_counting_query",
     [] {
       auto f = MakeCounting();
       for (uint64_t i = 0; i < kCapacity / 2; ++i)
         (void)f->Add(KeyBytes(PresentKey(i)));
       sf_ic_counting_query(*f);
     }},
#define SF_HANDLE_QUERY(label, type, shards)          \
  {                                                   \
    "handle_query_" label, "sf_ic_handle_query", [] { \
      auto f = MakeHandle(type, shards);              \
      FillHalf(*f);                                   \
      sf_ic_handle_query(*f);                         \
    }                                                 \
  }
    SF_HANDLE_QUERY("bloom_1", FilterType::kBloom, 1),
    SF_HANDLE_QUERY("bloom_16", FilterType::kBloom, 16),
    SF_HANDLE_QUERY("counting_16", FilterType::kCountingBloom, 16),
    SF_HANDLE_QUERY("cuckoo_16", FilterType::kCuckoo, 16),
#undef SF_HANDLE_QUERY
    {"bloom_add", "sf_ic_raw_add", [] { sf_ic_raw_add(*MakeBloom()); }},
    {"blocked_bloom_add", "sf_ic_raw_add",
     [] { sf_ic_raw_add(*MakeBlockedBloom()); }},
    {"counting_add", "sf_ic_raw_add", [] { sf_ic_raw_add(*MakeCounting()); }},
    {"cuckoo_add", "sf_ic_raw_add", [] { sf_ic_raw_add(*MakeCuckoo()); }},
#define SF_HANDLE_ADD(label, type, shards)        \
  {                                               \
    "handle_add_" label, "sf_ic_handle_add", [] { \
      auto f = MakeHandle(type, shards);          \
      sf_ic_handle_add(*f);                       \
    }                                             \
  }
    SF_HANDLE_ADD("bloom_1", FilterType::kBloom, 1),
    SF_HANDLE_ADD("bloom_16", FilterType::kBloom, 16),
    SF_HANDLE_ADD("counting_16", FilterType::kCountingBloom, 16),
    SF_HANDLE_ADD("cuckoo_1", FilterType::kCuckoo, 1),
    SF_HANDLE_ADD("cuckoo_16", FilterType::kCuckoo, 16),
#undef SF_HANDLE_ADD
// The handle's add on a filter of durability journal whose journal is
// memory-mapped (engine/internal/filter_log.h): Bloom through its thread's
// segment (L7), counting and cuckoo through their shards' segments.
#define SF_JOURNAL_ADD(label, type, shards)                                    \
  {                                                                            \
    "journal_add_" label, "sf_ic_handle_add", [] { JournalAdd(type, shards); } \
  }
    SF_JOURNAL_ADD("bloom_16", FilterType::kBloom, 16),
    SF_JOURNAL_ADD("counting_16", FilterType::kCountingBloom, 16),
    SF_JOURNAL_ADD("cuckoo_16", FilterType::kCuckoo, 16),
#undef SF_JOURNAL_ADD
    {"reserve_bloom_500", "sf_ic_create",
     [] { Create(ReserveSpec(FilterType::kBloom)); }, kCreateOps},
    {"reserve_cuckoo_500", "sf_ic_create",
     [] { Create(ReserveSpec(FilterType::kCuckoo)); }, kCreateOps},
    {"load_bloom_500", "sf_ic_load",
     [] { Load(ReserveSpec(FilterType::kBloom)); }, kCreateOps},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Scenario& s : kScenarios) {
      std::printf("%s %s %llu\n", s.name, s.function,
                  static_cast<unsigned long long>(s.ops));
    }
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <scenario> | --list\n", argv[0]);
    return 2;
  }
  for (const Scenario& s : kScenarios) {
    if (std::strcmp(argv[1], s.name) == 0) {
      s.run();
      return 0;
    }
  }
  std::fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
