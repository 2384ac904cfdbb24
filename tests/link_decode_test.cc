// DecodeLinkFilter checks a stored link against bounds of the descriptor's
// promise, not against today's sizing formulas by exact equality: a link
// sized by another headroom rule still loads; one with another seed, less
// than the promised capacity or a looser rate is Corruption.
#include <gtest/gtest.h>

#include <cstring>

#include "fuzz/fuzz_fixup.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/persistence/chain_blob.h"

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

// ---- A link's parameters agree with its table ----

// Param offsets in each type's envelope (docs/format-bloom.md,
// docs/format-cuckoo.md); params start after the 20-byte envelope header.
constexpr size_t kParams = 20;
constexpr size_t kBloomK = kParams + 1, kBloomCapacity = kParams + 12,
                 kBloomFpp = kParams + 20;
constexpr size_t kCuckooCapacity = kParams + 24, kCuckooFpp = kParams + 32;

// `bytes` with the 8 bytes at `at` replaced by `v` (or the byte, for a
// 1-byte field) and the envelope's checksum recomputed: what a forger does.
template <typename T>
std::string Forge(std::string bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);  // little-endian host
  fuzz::FixEnvelope(&bytes, 0, bytes.size());
  return bytes;
}

std::string CountingBlob(uint64_t capacity, double fpp) {
  CountingBloomOptions o;
  o.capacity = capacity;
  o.fpp = fpp;
  auto f = CountingBloomFilter::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return (*f)->Serialize();
}

std::string CuckooBlob(uint64_t capacity, double fpp) {
  CuckooOptions o;
  o.capacity = capacity;
  o.fpp = fpp;
  auto f = CuckooFilter::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return (*f)->Serialize();
}

// Decodes `bytes` and expects Corruption naming `field`.
void ExpectCorruptionNaming(const std::string& bytes, const char* field,
                            const char* what) {
  auto r = DeserializeFilter(bytes);
  ASSERT_FALSE(r.ok()) << what << ": accepted";
  EXPECT_TRUE(r.status().IsCorruption())
      << what << ": " << r.status().ToString();
  EXPECT_NE(r.status().message().find(field), std::string::npos)
      << what << ": " << r.status().ToString();
}

// A dump whose link claims capacity 2^60 (checksums recomputed) was
// accepted: the chain never grew (its fill never reached the capacity) and
// the table, filled far past what it was sized for, answered 1 for
// everything.
TEST(LinkDecodeTest, CapacityBeyondWhatTheTableHoldsIsCorruption) {
  const std::string bloom = BloomBlob(1000, 0.005, 7);
  ASSERT_TRUE(DeserializeFilter(bloom).ok());
  ExpectCorruptionNaming(Forge(bloom, kBloomCapacity, uint64_t{1} << 60),
                         "capacity", "bloom capacity 2^60");
  ExpectCorruptionNaming(Forge(bloom, kBloomCapacity, uint64_t{2000}),
                         "capacity", "bloom capacity x2");
  BloomOptions classic;
  classic.capacity = 1000;
  classic.fpp = 0.01;
  classic.layout = BloomLayout::kClassic;
  auto c = BloomFilter::Create(classic);
  ASSERT_TRUE(c.ok());
  ExpectCorruptionNaming(
      Forge((*c)->Serialize(), kBloomCapacity, uint64_t{1} << 60), "capacity",
      "classic capacity 2^60");
  BloomOptions blocked = classic;
  blocked.layout = BloomLayout::kBlocked;
  auto b = BloomFilter::Create(blocked);
  ASSERT_TRUE(b.ok());
  ExpectCorruptionNaming(
      Forge((*b)->Serialize(), kBloomCapacity, uint64_t{1} << 60), "capacity",
      "blocked capacity 2^60");
  const std::string counting = CountingBlob(1000, 0.01);
  ASSERT_TRUE(DeserializeFilter(counting).ok());
  ExpectCorruptionNaming(Forge(counting, kBloomCapacity, uint64_t{1} << 60),
                         "capacity", "counting capacity 2^60");
  const std::string cuckoo = CuckooBlob(1000, 0.01);
  ASSERT_TRUE(DeserializeFilter(cuckoo).ok());
  ExpectCorruptionNaming(Forge(cuckoo, kCuckooCapacity, uint64_t{1} << 60),
                         "capacity", "cuckoo capacity 2^60");
}

// A rate the table cannot give at its capacity, or a k that does not give
// it, is as false as an inflated capacity.
TEST(LinkDecodeTest, RateOrKTheTableCannotGiveIsCorruption) {
  const std::string bloom = BloomBlob(1000, 0.005, 7);
  ExpectCorruptionNaming(Forge(bloom, kBloomFpp, 1e-6), "rate",
                         "bloom rate 1e-6");
  const std::string counting = CountingBlob(1000, 0.01);
  ExpectCorruptionNaming(Forge(counting, kBloomFpp, 1e-6), "rate",
                         "counting rate 1e-6");
  ExpectCorruptionNaming(Forge(CuckooBlob(1000, 0.01), kCuckooFpp, 1e-9),
                         "rate", "cuckoo rate 1e-9");
  BloomOptions blocked;
  blocked.capacity = 1000;
  blocked.fpp = 0.01;
  blocked.layout = BloomLayout::kBlocked;
  auto b = BloomFilter::Create(blocked);
  ASSERT_TRUE(b.ok());
  ASSERT_GT((*b)->k(), 2u);
  ExpectCorruptionNaming(Forge((*b)->Serialize(), kBloomK, uint8_t{1}), "k",
                         "blocked k = 1");
}

// A chain's links promise at most the filter's target together: link rates
// that each stay under it but sum above it are Corruption.
TEST(LinkDecodeTest, ChainWhoseRatesSumAboveTheTargetIsCorruption) {
  FilterSpec spec = Resolved(FilterType::kBloom, 1000, 1);
  const std::string link0 = BloomBlob(LinkCapacity(spec, 0), 0.005, spec.seed);
  const std::string loose =
      BloomBlob(LinkCapacity(spec, 1), 0.008, spec.seed);  // <= 0.01 alone
  auto fine = DecodeChain(
      spec,
      persistence::EncodeChainBlob(
          {{link0, 0},
           {BloomBlob(LinkCapacity(spec, 1), 0.0025, spec.seed), 0}}),
      "f shard 0");
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  auto r =
      DecodeChain(spec, persistence::EncodeChainBlob({{link0, 0}, {loose, 0}}),
                  "f shard 0");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("rate"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace shardfilter::internal
