// ShardedFilter in memory: shard routing, FPR against an unsharded filter of
// the same size, batch == single-key results, stats, type errors.
#include "shardfilter/engine/sharded_filter.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shardfilter/filters/bloom_filter.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::SplitMix64;

class ShardedTypedTest : public ::testing::TestWithParam<FilterType> {};

FilterSpec SpecFor(FilterType type, uint64_t capacity, uint32_t shards) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = capacity;
  spec.fpp = 0.01;
  spec.shards = shards;
  return spec;
}

double MeasureFpr(const ShardedFilter& f, uint64_t seed, uint64_t queries) {
  uint64_t state = seed, positives = 0;
  for (uint64_t i = 0; i < queries; ++i) {
    positives += f.MayContainHash(SplitMix64(&state));
  }
  return static_cast<double>(positives) / static_cast<double>(queries);
}

TEST(ShardedFilterTest, DefaultShardCountRule) {
  EXPECT_EQ(DefaultShardCount(1), 1u);
  EXPECT_EQ(DefaultShardCount(999'999), 1u);
  EXPECT_EQ(DefaultShardCount(1'000'000), 2u);
  EXPECT_EQ(DefaultShardCount(5'000'000), 8u);
  EXPECT_EQ(DefaultShardCount(100'000'000), 128u);
  EXPECT_EQ(DefaultShardCount(1'000'000'000'000ULL), 256u);
}

TEST(ShardedFilterTest, RejectsBadShardCounts) {
  for (uint32_t shards : {3u, 512u, 6u}) {
    auto f = ShardedFilter::Create(SpecFor(FilterType::kBloom, 1000, shards));
    EXPECT_TRUE(f.status().IsInvalidArgument()) << shards;
  }
  FilterSpec bad = SpecFor(FilterType::kBloom, 1000, 1);
  bad.fpp = 1.5;
  EXPECT_TRUE(ShardedFilter::Create(bad).status().IsInvalidArgument());
}

TEST_P(ShardedTypedTest, FprMatchesUnshardedFilterOfSameSize) {
  constexpr uint64_t kItems = 200'000;
  auto many = ShardedFilter::Create(SpecFor(GetParam(), kItems, 16));
  SF_ASSERT_OK(many.status());
  // Shards are sized with headroom for the uneven split (filter_spec.h):
  // compare with one filter of their total size.
  auto one = ShardedFilter::Create(
      SpecFor(GetParam(), 16 * (*many)->shard_filter(0).capacity(), 1));
  SF_ASSERT_OK(one.status());
  uint64_t state = 1;
  for (uint64_t i = 0; i < kItems; ++i) {
    uint64_t h = SplitMix64(&state);
    SF_ASSERT_OK((*one)->AddHash(h));
    SF_ASSERT_OK((*many)->AddHash(h));
  }
  // Same total size (within the shards' rounding).
  double b1 = (*one)->Stats().total.bytes, b16 = (*many)->Stats().total.bytes;
  // (Cuckoo tables round their bucket counts: up to ~4% apart.)
  EXPECT_LT(std::abs(b16 - b1) / b1, 0.05);
  double f1 = MeasureFpr(**one, 99, 1'000'000);
  double f16 = MeasureFpr(**many, 99, 1'000'000);
  // At p ~ 1% over 1e6 queries the standard error is ~0.0001: allow 15%.
  EXPECT_LE(f16, 0.01 * 1.15);
  EXPECT_LT(std::abs(f16 - f1), 0.15 * std::max(f1, 0.001))
      << "sharded " << f16 << " unsharded " << f1;
  // Shards are evenly loaded (Remix bits are independent of the filter's).
  for (const ShardStats& s : (*many)->Stats().shards) {
    if (GetParam() == FilterType::kBloom) continue;  // items = new bits
    EXPECT_NEAR(static_cast<double>(s.filter.items), kItems / 16.0,
                6 * std::sqrt(kItems / 16.0));
  }
}

TEST_P(ShardedTypedTest, BatchResultsEqualSingleKeyResults) {
  auto single = ShardedFilter::Create(SpecFor(GetParam(), 50'000, 8));
  auto batch = ShardedFilter::Create(SpecFor(GetParam(), 50'000, 8));
  SF_ASSERT_OK(single.status());
  SF_ASSERT_OK(batch.status());
  std::vector<uint64_t> hashes(30'000);
  uint64_t state = 5;
  for (uint64_t& h : hashes) h = SplitMix64(&state);
  for (uint64_t h : hashes) SF_ASSERT_OK((*single)->AddHash(h));
  std::vector<Status> per_item;
  SF_ASSERT_OK((*batch)->AddHashes(hashes, &per_item));
  ASSERT_EQ(per_item.size(), hashes.size());
  EXPECT_TRUE((*single)->Equals(**batch));
  // Queries: present and absent keys interleaved, answers in input order.
  std::vector<uint64_t> queries;
  for (size_t i = 0; i < 20'000; ++i) {
    queries.push_back(i % 2 ? hashes[i] : SplitMix64(&state));
  }
  std::vector<uint8_t> out(queries.size());
  (*batch)->MayContainHashes(queries, out);
  for (size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(out[i], (*single)->MayContainHash(queries[i]) ? 1 : 0) << i;
    if (i % 2) {
      ASSERT_EQ(out[i], 1);
    }
  }
  std::vector<std::string> keys = {"a", "bb", "ccc"};
  std::vector<std::string_view> views(keys.begin(), keys.end());
  SF_ASSERT_OK((*batch)->AddKeys(views));
  std::vector<uint8_t> kout(3);
  (*batch)->MayContainKeys(views, kout);
  EXPECT_EQ(kout, std::vector<uint8_t>({1, 1, 1}));
  EXPECT_TRUE((*batch)->MayContain("bb"));
}

// Batches much smaller than the shard count are grouped by sorting, not
// by counting (GroupByShard), and prefetched across shard groups: every
// size from 1 to 31 items on 256 shards must give the single-item answers,
// per item and in input order, copies of one key included.
// Counts() is Stats() without the table scan: every count and size
// agrees, the scanned figures are left 0 (cuckoo's come from counters).
TEST_P(ShardedTypedTest, CountsAgreeWithStatsWithoutTheScan) {
  FilterSpec spec = SpecFor(GetParam(), 20'000, 4);
  spec.expansion = 2;
  auto f = ShardedFilter::Create(spec);
  SF_ASSERT_OK(f.status());
  uint64_t state = 5;
  for (int i = 0; i < 50'000; ++i) (*f)->AddHash(SplitMix64(&state)).ok();
  const ShardedStats full = (*f)->Stats();
  const ShardedStats counts = (*f)->Counts();
  EXPECT_EQ(counts.total.capacity, full.total.capacity);
  EXPECT_EQ(counts.total.bytes, full.total.bytes);
  EXPECT_EQ(counts.total.slots, full.total.slots);
  EXPECT_EQ(counts.total.items, full.total.items);
  EXPECT_EQ(counts.total.deletes, full.total.deletes);
  EXPECT_EQ(counts.total.k, full.total.k);
  ASSERT_EQ(counts.shards.size(), full.shards.size());
  for (size_t i = 0; i < full.shards.size(); ++i) {
    EXPECT_EQ(counts.shards[i].links, full.shards[i].links);
    EXPECT_EQ(counts.shards[i].filter.items, full.shards[i].filter.items);
  }
  EXPECT_GT(full.total.estimated_fpr, 0.0);
  if (GetParam() != FilterType::kCuckoo) {
    EXPECT_EQ(counts.total.estimated_fpr, 0.0);
    EXPECT_EQ(counts.total.fill_ratio, 0.0);
  }
}

// Batches below and above ShardedFilter::kSmallBatchItems (the small ones
// run item by item) report the same per-item statuses, outcomes and first
// failure as the same items added one at a time: a non-scaling filter
// that fills mid-batch, an item repeated within the batch, and Bloom
// removes refused item by item.
TEST(ShardedFilterTest, BatchResultsMatchSingleItemsAcrossTheSmallBatchSize) {
  for (size_t n : {size_t{6}, size_t{40}}) {
    for (FilterType type : {FilterType::kBloom, FilterType::kCuckoo,
                            FilterType::kCountingBloom}) {
      FilterSpec spec = SpecFor(type, 64, 1);
      spec.scalable = false;
      auto single = ShardedFilter::Create(spec);
      auto batch = ShardedFilter::Create(spec);
      SF_ASSERT_OK(single.status());
      SF_ASSERT_OK(batch.status());
      uint64_t state = 99 + n;
      // Leave room for 3 more items (a Bloom filter counts distinct keys).
      const uint64_t room = 3;
      for (uint64_t i = 0; i + room < (*single)->Stats().total.capacity; ++i) {
        const uint64_t h = SplitMix64(&state);
        SF_ASSERT_OK((*single)->AddHash(h));
        SF_ASSERT_OK((*batch)->AddHash(h));
      }
      std::vector<uint64_t> hashes(n);
      for (uint64_t& h : hashes) h = SplitMix64(&state);
      hashes[1] = hashes[0];  // repeated within the batch
      std::vector<Status> want_status;
      std::vector<AddOutcome> want_outcome;
      Status want_first;
      for (uint64_t h : hashes) {
        Result<AddOutcome> r = (*single)->InsertHash(h);
        want_status.push_back(r.status());
        want_outcome.push_back(r.ok() ? *r : AddOutcome::kAdded);
        if (!r.ok() && want_first.ok()) want_first = r.status();
      }
      ASSERT_FALSE(want_first.ok()) << "the batch should fill the filter";
      std::vector<Status> per_item;
      std::vector<AddOutcome> outcomes;
      Status first = (*batch)->AddHashes(hashes, &per_item, &outcomes);
      EXPECT_EQ(first.code(), want_first.code()) << "n " << n;
      ASSERT_EQ(per_item.size(), n);
      ASSERT_EQ(outcomes.size(), n);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(per_item[i].code(), want_status[i].code())
            << "n " << n << " item " << i << " type " << static_cast<int>(type);
        if (per_item[i].ok()) {
          EXPECT_EQ(outcomes[i], want_outcome[i]) << "n " << n << " item " << i;
          EXPECT_TRUE((*batch)->MayContainHash(hashes[i]));
        }
      }
      EXPECT_TRUE((*single)->Equals(**batch)) << "n " << n;
      if (type == FilterType::kBloom) {
        std::vector<Status> removes;
        EXPECT_TRUE((*batch)->RemoveHashes(hashes, &removes).IsNotSupported());
        ASSERT_EQ(removes.size(), n);
        for (const Status& r : removes) EXPECT_TRUE(r.IsNotSupported());
      }
    }
  }
}

TEST_P(ShardedTypedTest, SmallBatchesOverManyShardsMatchSingleItems) {
  auto single = ShardedFilter::Create(SpecFor(GetParam(), 200'000, 256));
  auto batch = ShardedFilter::Create(SpecFor(GetParam(), 200'000, 256));
  SF_ASSERT_OK(single.status());
  SF_ASSERT_OK(batch.status());
  uint64_t state = 17;
  std::vector<uint64_t> added;
  for (size_t n = 1; n < 32; ++n) {
    std::vector<uint64_t> hashes(n);
    for (uint64_t& h : hashes) h = SplitMix64(&state);
    if (n > 2) hashes[n - 1] = hashes[0];  // a second copy in one batch
    for (uint64_t h : hashes) SF_ASSERT_OK((*single)->AddHash(h));
    std::vector<Status> per_item;
    SF_ASSERT_OK((*batch)->AddHashes(hashes, &per_item));
    ASSERT_EQ(per_item.size(), n);
    added.insert(added.end(), hashes.begin(), hashes.end());
    // Present and absent keys interleaved, answers in input order.
    std::vector<uint64_t> queries;
    for (size_t i = 0; i < n; ++i) {
      queries.push_back(i % 2 ? added[SplitMix64(&state) % added.size()]
                              : SplitMix64(&state));
    }
    std::vector<uint8_t> out(n);
    (*batch)->MayContainHashes(queries, out);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], (*single)->MayContainHash(queries[i]) ? 1 : 0)
          << "batch " << n << " item " << i;
      if (i % 2) {
        ASSERT_EQ(out[i], 1) << "false negative";
      }
    }
  }
  EXPECT_TRUE((*single)->Equals(**batch));
  if (GetParam() == FilterType::kBloom) return;
  EXPECT_EQ((*batch)->CountHash(added[2]), (*single)->CountHash(added[2]));
  // Removes of a small batch report per item, in input order.
  const uint64_t absent = SplitMix64(&state);
  std::vector<uint64_t> removes = {added[5], absent, added[7]};
  std::vector<Status> per_item;
  EXPECT_TRUE((*batch)->RemoveHashes(removes, &per_item).IsNotFound());
  ASSERT_EQ(per_item.size(), 3u);
  SF_EXPECT_OK(per_item[0]);
  EXPECT_TRUE(per_item[1].IsNotFound());
  SF_EXPECT_OK(per_item[2]);
}

TEST_P(ShardedTypedTest, RemoveBatchReportsPerItemInOrder) {
  auto f = ShardedFilter::Create(SpecFor(GetParam(), 10'000, 4));
  SF_ASSERT_OK(f.status());
  std::vector<uint64_t> hashes = {11, 22, 33, 44};
  if (GetParam() == FilterType::kBloom) {
    EXPECT_EQ((*f)->RemoveHash(11).code(), StatusCode::kNotSupported);
    std::vector<Status> per_item;
    Status s = (*f)->RemoveHashes(hashes, &per_item);
    EXPECT_EQ(s.code(), StatusCode::kNotSupported);
    EXPECT_NE(s.message().find("Bloom"), std::string::npos);
    return;
  }
  SF_ASSERT_OK((*f)->AddHash(22));
  SF_ASSERT_OK((*f)->AddHash(44));
  SF_ASSERT_OK((*f)->AddHash(44));
  std::vector<Status> per_item;
  Status s = (*f)->RemoveHashes(hashes, &per_item);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();  // the first failure: item 0
  ASSERT_EQ(per_item.size(), 4u);
  EXPECT_TRUE(per_item[0].IsNotFound());
  SF_EXPECT_OK(per_item[1]);
  EXPECT_TRUE(per_item[2].IsNotFound());
  SF_EXPECT_OK(per_item[3]);
  EXPECT_EQ((*f)->CountHash(44), 1u);
  EXPECT_EQ((*f)->CountHash(22), 0u);
}

TEST_P(ShardedTypedTest, StatsAggregateShards) {
  auto f = ShardedFilter::Create(SpecFor(GetParam(), 40'000, 4));
  SF_ASSERT_OK(f.status());
  uint64_t state = 3;
  for (int i = 0; i < 20'000; ++i)
    SF_ASSERT_OK((*f)->AddHash(SplitMix64(&state)));
  ShardedStats st = (*f)->Stats();
  ASSERT_EQ(st.shards.size(), 4u);
  uint64_t bytes = 0, items = 0;
  for (const ShardStats& s : st.shards) {
    bytes += s.filter.bytes;
    items += s.filter.items;
    EXPECT_TRUE(s.dirty);
    // A sequence per op only where something needs it (here, standalone:
    // no journal): counting and cuckoo ops take one (S3), Bloom adds none.
    if (GetParam() == FilterType::kBloom) {
      EXPECT_EQ(s.last_sequence, 0u);
    } else {
      EXPECT_GT(s.last_sequence, 0u);
    }
  }
  EXPECT_EQ(st.total.bytes, bytes);
  EXPECT_EQ(st.total.items, items);
  EXPECT_EQ(st.total.capacity, 40'000u);
  EXPECT_GT(st.total.estimated_fpr, 0.0);
  EXPECT_LT(st.total.estimated_fpr, 0.01);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ShardedTypedTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

// The inline queries of a one-link shard (Q1, engine/detail/
// shard_fast_path.h: a lone split-block Bloom link's table, a lone counting
// link's counters, any lone link's `link`) ask link 0 alone, so the growth
// that appends link 1 must close them, or keys added there would be
// reported absent: one-at-a-time queries see the keys of every link, on
// one shard and on 16.
TEST_P(ShardedTypedTest, OneLinkQueriesSeeEveryLinkAfterGrowth) {
  for (uint32_t shards : {1u, 16u}) {
    SCOPED_TRACE(shards);
    const int n = 1000 * static_cast<int>(shards);  // 1000 per shard
    auto f = ShardedFilter::Create(SpecFor(GetParam(), n, shards));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    if (GetParam() == FilterType::kBloom) {  // the table path, then
      ASSERT_EQ(
          static_cast<const BloomFilter&>((*f)->shard_filter(0, 0)).layout(),
          BloomLayout::kSplitBlock);
    }
    if (GetParam() == FilterType::kCountingBloom) {  // the counters path
      ASSERT_LE(
          static_cast<const CountingBloomFilter&>((*f)->shard_filter(0, 0)).k(),
          8u);
    }
    for (int i = 0; i < n / 2; ++i)
      ASSERT_OK((*f)->Add("k" + std::to_string(i)));
    for (int i = 0; i < n / 2; ++i) {
      ASSERT_TRUE((*f)->MayContain("k" + std::to_string(i))) << i;
    }
    for (int i = n / 2; i < 6 * n; ++i) {
      ASSERT_OK((*f)->Add("k" + std::to_string(i)));
    }
    for (uint32_t s = 0; s < shards; ++s) EXPECT_GT((*f)->shard_links(s), 1u);
    for (int i = 0; i < 6 * n; ++i) {
      ASSERT_TRUE((*f)->MayContain("k" + std::to_string(i))) << i;
    }
  }
}

}  // namespace
}  // namespace shardfilter
