// A sharded filter's shard tables, each below the huge-page threshold
// (kHugePageTableBytes) but together above it, are cut from one region on
// huge pages (filters/internal/table_arena.h): made, loaded from a
// checkpoint or imported, for every type; the region lives until the last
// table cut from it is freed; and nothing changes where the policy is off
// (advice off, a host allocator, one shard, a small whole). Huge-page
// advice is read back from /proc/self/smaps ("hg" in VmFlags).
#include "shardfilter/filters/internal/table_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/memory_advice.h"
#include "store_test_util.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using internal::LiveTableArenas;
using internal::TableArenaSlotsInUse;

// 20M keys at 1% over 16 shards: 1.5 MB split-block tables, 25 MB in all.
constexpr uint64_t kCapacity = 20'000'000;
constexpr uint32_t kShards = 16;

FilterSpec Spec(FilterType type, uint64_t capacity = kCapacity,
                uint32_t shards = kShards) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = capacity;
  spec.shards = shards;
  spec.durability = Durability::kNone;
  return spec;
}

using testing::VmFlagsOf;

bool HugeAdvised(const void* p) {
  return VmFlagsOf(p).find(" hg") != std::string::npos;
}

// Whether this machine shows the advice at all (a large table's mapping).
bool AdviceVisible() {
  if (VmFlagsOf(&errno).empty()) return false;
  void* big = AllocateFilterTable(size_t{8} << 20);
  const bool seen = HugeAdvised(big);
  FreeTable(big);
  return seen;
}

const std::atomic<uint64_t>* SplitTable(const ShardedFilter& f, uint32_t i) {
  return static_cast<const BloomFilter&>(f.shard_filter(i)).split_table();
}

TEST(TableArenaTest, ShardTablesShareOneHugePageRegion) {
  if (!AdviceVisible()) GTEST_SKIP() << "no huge-page advice to read back";
  const uint64_t arenas = LiveTableArenas();
  auto made = ShardedFilter::Create(Spec(FilterType::kBloom));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::unique_ptr<ShardedFilter> f = std::move(*made);
  const uint64_t bytes = f->shard_filter(0).Stats().bytes;
  ASSERT_LT(bytes, kHugePageTableBytes);  // each alone: no advice
  ASSERT_GE(bytes * kShards, kHugePageTableBytes);
  EXPECT_EQ(LiveTableArenas(), arenas + 1);
  std::vector<uintptr_t> at;
  for (uint32_t i = 0; i < kShards; ++i) {
    const auto* t = SplitTable(*f, i);
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(HugeAdvised(t)) << "shard " << i << ": " << VmFlagsOf(t);
    at.push_back(reinterpret_cast<uintptr_t>(t));
  }
  // Back to back, cache-line aligned: one region of 16 tables.
  std::sort(at.begin(), at.end());
  for (uint32_t i = 0; i < kShards; ++i) {
    EXPECT_EQ(at[i] % 64, 0u);
    if (i > 0) {
      EXPECT_EQ(at[i] - at[i - 1], (bytes + 63) / 64 * 64);
    }
  }
  // Every key answers, through the cut tables.
  for (uint64_t k = 0; k < 10'000; ++k) ASSERT_OK(f->AddHash(k * 7919 + 1));
  for (uint64_t k = 0; k < 10'000; ++k) {
    ASSERT_TRUE(f->MayContainHash(k * 7919 + 1));
  }
  f.reset();
  EXPECT_EQ(LiveTableArenas(), arenas);
}

TEST(TableArenaTest, EveryTypeCutsEveryShardsFirstLink) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    SCOPED_TRACE(FilterTypeName(type));
    // Counting tables are ~5x a Bloom one's: fewer keys keep them small.
    const uint64_t capacity =
        type == FilterType::kCountingBloom ? 4'000'000 : kCapacity;
    const uint64_t slots = TableArenaSlotsInUse();
    const uint64_t arenas = LiveTableArenas();
    auto f = ShardedFilter::Create(Spec(type, capacity));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_LT((*f)->shard_filter(0).Stats().bytes, kHugePageTableBytes);
    EXPECT_EQ(LiveTableArenas(), arenas + 1);
    EXPECT_EQ(TableArenaSlotsInUse(), slots + kShards);
    f->reset();
    EXPECT_EQ(TableArenaSlotsInUse(), slots);
    EXPECT_EQ(LiveTableArenas(), arenas);
  }
}

// The region outlives the creator while any table cut from it lives: two
// filters, each freed in turn, the other still answering.
TEST(TableArenaTest, RegionLivesWhileAnyTableDoes) {
  const uint64_t arenas = LiveTableArenas();
  auto a = ShardedFilter::Create(Spec(FilterType::kBloom));
  auto b = ShardedFilter::Create(Spec(FilterType::kCuckoo));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(LiveTableArenas(), arenas + 2);
  for (uint64_t k = 1; k <= 5000; ++k) {
    ASSERT_OK((*a)->AddHash(k));
    ASSERT_OK((*b)->AddHash(k));
  }
  a->reset();
  EXPECT_EQ(LiveTableArenas(), arenas + 1);
  for (uint64_t k = 1; k <= 5000; ++k) ASSERT_TRUE((*b)->MayContainHash(k));
  b->reset();
  EXPECT_EQ(LiveTableArenas(), arenas);
}

// Loaded from a checkpoint (shards decoded in parallel tasks) and from the
// journal of a shard never checkpointed: the same region.
TEST(TableArenaTest, LoadedFiltersCutTheirShardsToo) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  o.checkpoint_on_close = false;
  {
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    FilterSpec spec = Spec(FilterType::kBloom);
    spec.durability = Durability::kJournal;
    auto h = (*db)->Create("checkpointed", spec);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    auto j = (*db)->Create("journalled", spec);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    for (uint64_t k = 1; k <= 20'000; ++k) ASSERT_OK((*h)->AddHash(k));
    ASSERT_TRUE((*db)->CheckpointAll().ok());
    for (uint64_t k = 1; k <= 20'000; ++k) ASSERT_OK((*j)->AddHash(k));
    ASSERT_OK((*db)->Close());
  }
  const uint64_t slots = TableArenaSlotsInUse();
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (const char* name : {"checkpointed", "journalled"}) {
    SCOPED_TRACE(name);
    auto h = (*db)->Get(name);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    for (uint64_t k = 1; k <= 20'000; ++k) {
      ASSERT_TRUE((*h)->MayContainHash(k)) << k;
    }
  }
  EXPECT_EQ(TableArenaSlotsInUse(), slots + 2 * kShards);
}

// Where the policy is off nothing is cut: advice off (the Redis module
// before a fork), a host allocator, one shard, a whole below the threshold.
void* CountingAlloc(size_t bytes) { return std::malloc(bytes); }
void CountingFree(void* p) { std::free(p); }

TEST(TableArenaTest, NothingIsCutWhereThePolicyIsOff) {
  const uint64_t arenas = LiveTableArenas();
  const uint64_t slots = TableArenaSlotsInUse();
  {
    SetHugePageAdvice(false);
    auto f = ShardedFilter::Create(Spec(FilterType::kBloom));
    SetHugePageAdvice(true);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(LiveTableArenas(), arenas);
  }
  {
    SetTableAllocator(&CountingAlloc, &CountingFree);
    auto f = ShardedFilter::Create(Spec(FilterType::kBloom));
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(LiveTableArenas(), arenas);
    f->reset();  // freed by the allocator in force
    SetTableAllocator(nullptr, nullptr);
  }
  for (auto [capacity, shards] :
       {std::pair<uint64_t, uint32_t>{kCapacity, 1}, {1'000'000, kShards}}) {
    auto f = ShardedFilter::Create(Spec(FilterType::kBloom, capacity, shards));
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(LiveTableArenas(), arenas) << capacity << " " << shards;
  }
  EXPECT_EQ(TableArenaSlotsInUse(), slots);
}

}  // namespace
}  // namespace shardfilter
