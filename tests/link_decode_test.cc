// DecodeLinkFilter checks a stored link against bounds of the descriptor's
// promise, not against today's sizing formulas (issue 19: "derived values
// re-checked with exact equality"): a link sized by another headroom rule
// still loads; one with another seed, less than the promised capacity or a
// looser rate is Corruption.
#include <gtest/gtest.h>

#include "shardfilter/engine/internal/filter_factory.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter::internal {
namespace {

FilterSpec Resolved(FilterType type, uint64_t capacity, uint32_t shards) {
  FilterSpec s;
  s.type = type;
  s.capacity = capacity;
  s.shards = shards;
  s.fpp = 0.01;
  auto r = ResolveSpec(s, Durability::kNone);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

std::string BloomBlob(uint64_t capacity, double fpp, uint64_t seed) {
  BloomOptions o;
  o.capacity = capacity;
  o.fpp = fpp;
  o.seed = seed;
  auto f = BloomFilter::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return (*f)->Serialize();
}

TEST(LinkDecodeTest, TodaysLinkDecodes) {
  const FilterSpec spec = Resolved(FilterType::kBloom, 100'000, 4);
  auto link = MakeShardFilter(spec);
  ASSERT_TRUE(link.ok());
  auto back = DecodeLinkFilter(spec, 0, (*link)->Serialize(), "f shard 0");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->capacity(), LinkCapacity(spec, 0));
}

// A link written with more headroom than ShardCapacity gives today (as if
// the formula changed between versions): its own capacity is what it has.
// Before, any difference from LinkCapacity was Corruption.
TEST(LinkDecodeTest, LinkSizedByAnotherHeadroomRuleLoads) {
  const FilterSpec spec = Resolved(FilterType::kBloom, 100'000, 4);
  const uint64_t other = LinkCapacity(spec, 0) + 1000;
  auto back = DecodeLinkFilter(spec, 0, BloomBlob(other, 0.005, spec.seed),
                               "f shard 0");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->capacity(), other);
}

TEST(LinkDecodeTest, BrokenPromisesAreCorruption) {
  const FilterSpec spec = Resolved(FilterType::kBloom, 100'000, 4);
  const uint64_t cap = LinkCapacity(spec, 0);
  struct Case {
    const char* what;
    std::string blob;
  } cases[] = {
      {"another seed", BloomBlob(cap, 0.005, spec.seed + 1)},
      {"less than the shard's share",
       BloomBlob(100'000 / 4 - 1, 0.005, spec.seed)},
      {"a looser rate than the target", BloomBlob(cap, 0.02, spec.seed)},
  };
  for (const Case& c : cases) {
    auto back = DecodeLinkFilter(spec, 0, c.blob, "f shard 0");
    ASSERT_FALSE(back.ok()) << c.what;
    EXPECT_TRUE(back.status().IsCorruption())
        << c.what << ": " << back.status().ToString();
  }
  // A link of another type than the descriptor's.
  CuckooOptions co;
  co.capacity = cap;
  co.fpp = 0.005;
  co.seed = spec.seed;
  auto cuckoo = CuckooFilter::Create(co);
  ASSERT_TRUE(cuckoo.ok());
  auto back = DecodeLinkFilter(spec, 0, (*cuckoo)->Serialize(), "f shard 0");
  ASSERT_FALSE(back.ok());
  EXPECT_TRUE(back.status().IsCorruption()) << back.status().ToString();
  EXPECT_NE(back.status().message().find("cuckoo"), std::string::npos)
      << back.status().ToString();
}

// Link i's share grows by the expansion: link 1 of a scalable filter must
// hold at least twice the shard's share (expansion 2).
TEST(LinkDecodeTest, LaterLinksMustHoldTheirExpandedShare) {
  const FilterSpec spec = Resolved(FilterType::kBloom, 100'000, 4);
  ASSERT_TRUE(spec.scalable);
  const uint64_t share = 100'000 / 4;
  EXPECT_FALSE(
      DecodeLinkFilter(spec, 1,
                       BloomBlob(share * spec.expansion - 1, 0.002, spec.seed),
                       "f shard 0 link 1")
          .ok());
  EXPECT_TRUE(DecodeLinkFilter(
                  spec, 1, BloomBlob(LinkCapacity(spec, 1), 0.002, spec.seed),
                  "f shard 0 link 1")
                  .ok());
}

}  // namespace
}  // namespace shardfilter::internal
