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

// The refusal speaks of the filter asked for, not of one shard: its
// capacity, the bytes all its shards need and its limit (max_bytes, the
// server's --max-filter-bytes), never a shard's share of them.
TEST(MemoryLimitTest, TooLargeNamesTheFiltersCapacityAndLimit) {
  FilterSpec spec =
      Sized(FilterType::kBloom, uint64_t{1} << 40, 256, uint64_t{1} << 30);
  Status s = ShardedFilter::Create(spec).status();
  ASSERT_EQ(s.code(), StatusCode::kTooLarge) << s.ToString();
  EXPECT_NE(s.message().find("capacity 1099511627776 at rate 0.01 "),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("limit of 1073741824 bytes"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("in 256 shards"), std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("4194304"), std::string::npos) << s.message();
  // The bytes needed are the whole filter's: 256 shards of ~6.5 GB.
  const size_t at = s.message().find(" needs ");
  ASSERT_NE(at, std::string::npos) << s.message();
  EXPECT_GT(std::stoull(s.message().substr(at + 7)), uint64_t{1} << 40);
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
  // In the set's filter's terms, not a shard's.
  EXPECT_NE(d.status().message().find("capacity 100000000 "), std::string::npos)
      << d.status().message();
  EXPECT_NE(d.status().message().find("limit of 1048576 bytes"),
            std::string::npos)
      << d.status().message();
  auto sets = DedupStore::List(*db);
  EXPECT_TRUE(!sets.ok() || sets->empty());
}

// A migration's target is refused before anything starts, in the
// target's terms as a create's would be.
TEST(MemoryLimitTest, MigrationTargetOverMaxBytesNamesTheTarget) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  FilterSpec from = Sized(FilterType::kBloom, 1000, 4, 1 << 20);
  from.retain_hashes = true;
  auto f = db->Create("f", from);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Add("a").ok());
  FilterSpec target = Sized(FilterType::kBloom, 100'000'000, 16, 1 << 20);
  target.retain_hashes = true;
  const Status s = db->StartMigration("f", target);
  ASSERT_EQ(s.code(), StatusCode::kTooLarge) << s.ToString();
  EXPECT_NE(s.message().find("capacity 100000000 "), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("in 16 shards"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("limit of 1048576 bytes"), std::string::npos)
      << s.message();
  EXPECT_FALSE(db->GetMigration("f").ok());
  auto now = db->Get("f");
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_EQ((*now)->spec().capacity, 1000u);
  EXPECT_TRUE((*now)->MayContain("a"));
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
