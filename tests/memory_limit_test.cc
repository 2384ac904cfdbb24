// Memory limits are classified by status code at their source: a filter
// over its own FilterSpec::max_bytes is TooLarge (it never fits), the
// process budget is ResourceExhausted (it may fit once memory is freed),
// and a request that can never be valid stays InvalidArgument. Hosts
// answer each by its code (no message is matched anywhere).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/engine/memory_budget.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::TempDir;

FilterSpec Sized(FilterType type, uint64_t capacity, uint32_t shards,
                 uint64_t max_bytes) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = capacity;
  spec.fpp = 0.01;
  spec.shards = shards;
  spec.max_bytes = max_bytes;
  return spec;
}

constexpr FilterType kTypes[] = {FilterType::kBloom, FilterType::kCountingBloom,
                                 FilterType::kCuckoo};

// Before: InvalidArgument ("... needs more than the memory limit of N
// bytes"), which the hosts reclassified by searching the message.
TEST(MemoryLimitTest, StandaloneFilterOverMaxBytesIsTooLarge) {
  for (FilterType type : kTypes) {
    auto budget = std::make_shared<MemoryBudget>(uint64_t{1} << 40);
    auto f = ShardedFilter::Create(Sized(type, 10'000'000, 4, 1 << 20), budget);
    ASSERT_FALSE(f.ok()) << FilterTypeName(type);
    EXPECT_EQ(f.status().code(), StatusCode::kTooLarge)
        << f.status().ToString();
    EXPECT_EQ(budget->used(), 0u);
  }
}

TEST(MemoryLimitTest, DatabaseCreateOverMaxBytesIsTooLargeAndCreatesNothing) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  for (FilterType type : kTypes) {
    auto f = db->Create("big", Sized(type, 10'000'000, 8, 1 << 20));
    ASSERT_FALSE(f.ok()) << FilterTypeName(type);
    EXPECT_EQ(f.status().code(), StatusCode::kTooLarge)
        << f.status().ToString();
    EXPECT_TRUE(db->List().empty());
  }
}

// A dedup set's filters are sized from max_filter_bytes too.
TEST(MemoryLimitTest, DedupSetOverItsFilterLimitIsTooLarge) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  DedupOptions o;
  o.expected_keys = 100'000'000;
  o.max_filter_bytes = 1 << 20;
  auto d = DedupStore::Open(*db, "seen", o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kTooLarge) << d.status().ToString();
  auto sets = DedupStore::List(*db);
  EXPECT_TRUE(!sets.ok() || sets->empty());
}

// What is invalid whatever the limit keeps its code: a rate out of range,
// and a table past what the structure can address (2^32 blocks) under a
// tiny limit.
TEST(MemoryLimitTest, InvalidRequestsStayInvalidArgument) {
  for (FilterType type : kTypes) {
    FilterSpec bad_rate = Sized(type, 1000, 1, 1 << 20);
    bad_rate.fpp = 1.5;
    EXPECT_TRUE(ShardedFilter::Create(bad_rate).status().IsInvalidArgument())
        << FilterTypeName(type);
  }
  FilterSpec huge = Sized(FilterType::kBloom, uint64_t{1} << 60, 1, 64);
  huge.fpp = 0.5;
  const Status s = ShardedFilter::Create(huge).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
}

// The auto Bloom layout never picks the split-block layout past its 2^32
// blocks when the blocked layout (blocks twice the size) can be built.
// Before: "split-block Bloom filter would need more than 2^32 blocks".
TEST(MemoryLimitTest, AutoLayoutFallsBackToBlockedPastSplitBlockLimit) {
  BloomOptions o;
  o.capacity = 100'000'000'000;
  o.fpp = 0.005;
  o.max_bytes = uint64_t{300} << 30;
  auto bytes = BloomFilter::TableBytes(o);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_GT(*bytes, uint64_t{128} << 30);
  EXPECT_LE(*bytes, o.max_bytes);
}

// Growth stopped by max_bytes is the filter being full (RedisBloom's
// "non scaling filter is full"), not a memory error.
TEST(MemoryLimitTest, GrowthStopsAtMaxBytesAsFull) {
  auto f = ShardedFilter::Create(Sized(FilterType::kBloom, 1000, 1, 8192));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  Status last;
  for (int i = 0; i < 100'000 && last.ok(); ++i) {
    last = (*f)->Add("k" + std::to_string(i));
  }
  EXPECT_TRUE(last.IsFull()) << last.ToString();
}

}  // namespace
}  // namespace shardfilter
