// MultiPartFilter (engine/multi_part.h): part keys, item routing, limits.
// The routing is a wire contract (docs/redis-module.md): the golden values
// below pin it, so a change that would send items to other parts of an
// existing filter fails here.
#include "shardfilter/engine/multi_part.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace shardfilter {
namespace {

TEST(MultiPartTest, PartKeysCarryOneTagPerPart) {
  auto f = MultiPartFilter::Make("urls", 4);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->tag().size(), 16u);
  // Golden: hex16(XXH3_64("urls", seed 0)).
  EXPECT_EQ(f->tag(), "950c35a270aa27a8");
  EXPECT_EQ(f->PartKey(0), "{950c35a270aa27a8.0}urls");
  EXPECT_EQ(f->PartKey(3), "{950c35a270aa27a8.3}urls");
  std::set<std::string> keys;
  for (uint32_t i = 0; i < 4; ++i) keys.insert(f->PartKey(i));
  EXPECT_EQ(keys.size(), 4u);
}

TEST(MultiPartTest, NamesWithBracesKeepOurTagFirst) {
  auto f = MultiPartFilter::Make("{user}:seen", 2);
  ASSERT_TRUE(f.ok());
  std::string k = f->PartKey(1);
  // The first '{' ... '}' is ours: Redis Cluster hashes "tag.1" only.
  EXPECT_EQ(k.find('{'), 0u);
  EXPECT_EQ(k.substr(1, k.find('}') - 1), f->tag() + ".1");
  EXPECT_EQ(k.substr(k.find('}') + 1), "{user}:seen");
}

TEST(MultiPartTest, RoutingIsStableAndEven) {
  auto f = MultiPartFilter::Make("urls", 16);
  ASSERT_TRUE(f.ok());
  // Golden: ((XXH3_64(item, kDefaultSeed + 1) >> 32) * 16) >> 32.
  EXPECT_EQ(f->PartOf("a"), 14u);
  EXPECT_EQ(f->PartOf("hello"), 15u);
  EXPECT_EQ(f->PartOf("https://example.com/x"), 13u);
  EXPECT_EQ(f->PartOf("item:1"), 10u);
  for (const char* item : {"a", "hello", "https://example.com/x"}) {
    uint64_t h = HashKey(item, kDefaultSeed + 1);
    EXPECT_EQ(f->PartOf(item), ((h >> 32) * 16) >> 32) << item;
  }
  std::vector<uint64_t> counts(16, 0);
  const int n = 160000;
  for (int i = 0; i < n; ++i) {
    uint32_t p = f->PartOf("item:" + std::to_string(i));
    ASSERT_LT(p, 16u);
    ++counts[p];
  }
  // Each part gets n/16 = 10000 +- 5 sigma (sigma ~ 97).
  for (uint64_t c : counts) {
    EXPECT_NEAR(static_cast<double>(c), 10000.0, 500.0);
  }
}

TEST(MultiPartTest, RoutingIsIndependentOfThePartsOwnHash) {
  // Items of one part must still spread over that part's whole table: the
  // bits the filter takes from HashKey(item, seed) are not constrained by
  // the routing, which hashes with seed + 1.
  auto f = MultiPartFilter::Make("x", 2);
  ASSERT_TRUE(f.ok());
  std::vector<uint64_t> top(4, 0);
  for (int i = 0; i < 40000; ++i) {
    std::string item = std::to_string(i);
    if (f->PartOf(item) != 0) continue;
    ++top[HashKey(item, kDefaultSeed) >> 62];
  }
  uint64_t total = top[0] + top[1] + top[2] + top[3];
  for (uint64_t c : top) {
    EXPECT_NEAR(static_cast<double>(c), total / 4.0, total * 0.03);
  }
}

TEST(MultiPartTest, OneRouteForEverySeedChoice) {
  auto a = MultiPartFilter::Make("n", 8, 1);
  auto b = MultiPartFilter::Make("n", 8, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  int same = 0;
  for (int i = 0; i < 8000; ++i) {
    std::string item = std::to_string(i);
    same += a->PartOf(item) == b->PartOf(item);
  }
  EXPECT_LT(same, 1500);  // ~1000 expected by chance: seeds matter
}

TEST(MultiPartTest, BadParametersAreRefused) {
  EXPECT_FALSE(MultiPartFilter::Make("", 2).ok());
  EXPECT_FALSE(MultiPartFilter::Make("n", 0).ok());
  EXPECT_FALSE(MultiPartFilter::Make("n", kMaxFilterParts + 1).ok());
  EXPECT_TRUE(MultiPartFilter::Make("n", kMaxFilterParts).ok());
  std::string longest(1024 - kPartKeyOverhead, 'x');
  auto f = MultiPartFilter::Make(longest, kMaxFilterParts);
  ASSERT_TRUE(f.ok());
  EXPECT_LE(f->PartKey(kMaxFilterParts - 1).size(), 1024u);
  auto bad = MultiPartFilter::Make(longest + "x", 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(MultiPartTest, PartCapacityRoundsUp) {
  auto f = MultiPartFilter::Make("n", 3);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->PartCapacity(10), 4u);
  EXPECT_EQ(f->PartCapacity(9), 3u);
  EXPECT_EQ(f->PartCapacity(1), 1u);
  EXPECT_EQ(f->PartCapacity(0), 1u);
}

TEST(MultiPartTest, SuggestedPartsKeepEachPartMovable) {
  EXPECT_EQ(SuggestedParts(0), 1u);
  EXPECT_EQ(SuggestedParts(kMaxPartBytes), 1u);
  EXPECT_EQ(SuggestedParts(kMaxPartBytes + 1), 2u);
  EXPECT_EQ(SuggestedParts(4ull << 30), 16u);  // 4 GiB -> 16 x 256 MiB
  EXPECT_EQ(SuggestedParts(~0ull), kMaxFilterParts);
}

}  // namespace
}  // namespace shardfilter
