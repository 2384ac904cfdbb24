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

// Four parts as a client sees them: all there, same parameters.
std::vector<PartView> WholeParts() {
  std::vector<PartView> v(4);
  for (PartView& p : v) {
    p.exists = true;
    p.identity = "type=bloom declared_capacity=250";
  }
  return v;
}

TEST(MultiPartTest, CheckPartsAcceptsOnlyTheWholeFilter) {
  auto f = MultiPartFilter::Make("urls", 4);
  ASSERT_TRUE(f.ok());
  std::vector<PartView> v = WholeParts();
  EXPECT_TRUE(CheckParts(*f, v, false).ok());
  // A missing part is damage, never a smaller filter; it is named.
  v[1].exists = false;
  Status s = CheckParts(*f, v, false);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("damaged"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("part 1 ({950c35a270aa27a8.1}urls) is missing"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(s.message().find("--parts"), std::string::npos) << s.ToString();
  // Part 0 gone: the same (the first part is not special).
  v = WholeParts();
  v[0].exists = false;
  EXPECT_EQ(CheckParts(*f, v, false).code(), StatusCode::kCorruption);
  // The last parts gone: damage, or maybe a --parts too large.
  v = WholeParts();
  v[2].exists = v[3].exists = false;
  s = CheckParts(*f, v, false);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("2 of 4 parts are missing: part 2"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("or it has 2 parts"), std::string::npos);
  // "not found" only when no part exists.
  for (PartView& p : v) p.exists = false;
  EXPECT_EQ(CheckParts(*f, v, false).code(), StatusCode::kNotFound);
  // A part N: --parts is too small, whatever else.
  EXPECT_EQ(CheckParts(*f, v, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckParts(*f, WholeParts(), true).code(),
            StatusCode::kInvalidArgument);
}

TEST(MultiPartTest, CheckPartsRefusesForeignAndChangedParts) {
  auto f = MultiPartFilter::Make("urls", 4);
  ASSERT_TRUE(f.ok());
  std::vector<PartView> v = WholeParts();
  v[2].readable = Status(StatusCode::kWrongType, "WRONGTYPE not a filter");
  Status s = CheckParts(*f, v, false);
  EXPECT_EQ(s.code(), StatusCode::kWrongType);
  EXPECT_NE(s.message().find("part 2 ({950c35a270aa27a8.2}urls) cannot be "
                             "read: WRONGTYPE"),
            std::string::npos)
      << s.ToString();
  v = WholeParts();
  v[3].identity = "type=bloom declared_capacity=100";
  s = CheckParts(*f, v, false);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("part 3 ({950c35a270aa27a8.3}urls) differs from "
                             "part 0"),
            std::string::npos)
      << s.ToString();
  // Many missing parts: the first few are named, the rest counted.
  auto big = MultiPartFilter::Make("urls", 64);
  std::vector<PartView> many(64);
  many[0].exists = true;
  s = CheckParts(*big, many, false);
  EXPECT_NE(s.message().find("63 of 64 parts are missing"), std::string::npos);
  EXPECT_NE(
      s.message().find(" and " + std::to_string(63 - kMaxPartsNamed) + " more"),
      std::string::npos)
      << s.ToString();
}

TEST(MultiPartTest, SameDeadlineComparesExistingParts) {
  std::vector<PartView> v = WholeParts();
  EXPECT_TRUE(SameDeadline(v));
  for (PartView& p : v) p.deadline_ms = 1700000000000;
  EXPECT_TRUE(SameDeadline(v));
  v[2].deadline_ms = -1;
  EXPECT_FALSE(SameDeadline(v));
  v[2].exists = false;  // a missing part has no deadline to compare
  EXPECT_TRUE(SameDeadline(v));
}

}  // namespace
}  // namespace shardfilter
