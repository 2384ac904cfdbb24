// Online expansion (engine/internal/shard_chain.h): the chain rule, growth
// 64x past the initial capacity with the FPR measured at every doubling, no
// false negatives, Full on a non-scaling filter, and the chain blob's
// strict decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/persistence/chain_blob.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using internal::ChainTargetFpp;
using internal::LinkCapacity;
using internal::LinkFpp;
using testing::SplitMix64;

class ExpansionTest : public ::testing::TestWithParam<FilterType> {};

FilterSpec Scalable(FilterType type, uint64_t capacity, uint32_t shards) {
  FilterSpec s;
  s.type = type;
  s.capacity = capacity;
  s.fpp = 0.01;
  s.shards = shards;
  return s;
}

// Fraction of `queries` hashes of a stream no key came from that test
// positive.
double MeasureFpr(const ShardedFilter& f, uint64_t seed, uint64_t queries) {
  uint64_t state = seed, hits = 0;
  std::vector<uint64_t> batch(queries);
  for (uint64_t& h : batch) h = SplitMix64(&state);
  std::vector<uint8_t> out(queries);
  f.MayContainHashes(batch, out);
  for (uint8_t o : out) hits += o;
  return static_cast<double>(hits) / static_cast<double>(queries);
}

TEST(ExpansionRuleTest, CompoundTargetStaysUnderTheDeclaredRate) {
  FilterSpec s = Scalable(FilterType::kBloom, 1000, 1);
  s.expansion = 2;
  double sum = 0;
  for (uint32_t i = 0; i < internal::kMaxLinks; ++i) {
    EXPECT_EQ(LinkFpp(s, i), std::ldexp(0.01, -static_cast<int>(i) - 1));
    EXPECT_EQ(LinkCapacity(s, i), 1000ull << i);
    sum += LinkFpp(s, i);
    EXPECT_LT(sum, s.fpp);
    EXPECT_DOUBLE_EQ(ChainTargetFpp(s, i + 1),
                     s.fpp * (1 - std::ldexp(1, -static_cast<int>(i) - 1)));
  }
  s.scalable = false;
  EXPECT_EQ(LinkFpp(s, 0), 0.01);
  s.scalable = true;
  s.expansion = 16;
  s.capacity = 8;
  EXPECT_EQ(LinkCapacity(s, 15), 8ull << 60);
  EXPECT_EQ(LinkCapacity(s, 16), 0u);  // overflow is reported, not wrapped
}

TEST(ExpansionRuleTest, ExpansionIsValidated) {
  FilterSpec s = Scalable(FilterType::kBloom, 1000, 1);
  s.expansion = 17;
  EXPECT_TRUE(ShardedFilter::Create(s).status().IsInvalidArgument());
  s.expansion = 0;  // the default
  auto f = ShardedFilter::Create(s);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->spec().expansion, 2u);
  EXPECT_TRUE((*f)->spec().scalable);
}

// Growth: a scalable filter grown 64x past its initial capacity; at every
// doubling, every key added is present and the FPR measured over 2e5
// never-added hashes is at most the target plus four standard errors.
TEST_P(ExpansionTest, GrowsSixtyFourTimesWithTheFprUnderTarget) {
  constexpr uint64_t kInitial = 4096, kQueries = 200'000;
  auto f = ShardedFilter::Create(Scalable(GetParam(), kInitial, 2));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ShardedFilter& filter = **f;
  const double p = filter.spec().fpp;
  const double margin = 4 * std::sqrt(p / kQueries);
  std::vector<uint64_t> added;
  uint64_t state = 7;
  std::printf("%-8s %9s %6s %10s %8s %9s\n", FilterTypeName(GetParam()),
              "items", "links", "fpr", "target", "bits/key");
  for (uint64_t n = kInitial; n <= 64 * kInitial; n *= 2) {
    std::vector<uint64_t> batch;
    while (added.size() + batch.size() < n) batch.push_back(SplitMix64(&state));
    std::vector<Status> per_item;
    // Half by batch, half one at a time: both paths grow the chain.
    std::span<const uint64_t> all(batch);
    const size_t half = batch.size() / 2;
    ASSERT_OK(filter.AddHashes(all.first(half), &per_item));
    for (uint64_t h : all.subspan(half)) ASSERT_OK(filter.AddHash(h));
    added.insert(added.end(), batch.begin(), batch.end());
    std::vector<uint8_t> out(added.size());
    filter.MayContainHashes(added, out);
    for (size_t i = 0; i < added.size(); ++i) {
      ASSERT_TRUE(out[i]) << "false negative, key " << i << " at " << n;
    }
    const double fpr = MeasureFpr(filter, 1'000'003 + n, kQueries);
    ShardedStats st = filter.Stats();
    uint32_t links = 0;
    for (const ShardStats& s : st.shards) links += s.links;
    std::printf("%-8s %9llu %6.1f %10.5f %8.4f %9.2f\n", "",
                static_cast<unsigned long long>(n), links / 2.0, fpr, p,
                st.total.bytes * 8.0 / n);
    EXPECT_LE(fpr, p + margin) << n << " items";
    EXPECT_GE(st.total.capacity, n);
    EXPECT_EQ(st.total.target_fpr, p);
    for (const ShardStats& s : st.shards) {
      EXPECT_LT(s.filter.target_fpr, p);
      EXPECT_GE(s.filter.capacity, s.filter.items == 0 ? 0 : 1u);
    }
  }
  // 64x: each shard holds ~32 x its first link, i.e. 6 links (1+2+..+32 =
  // 63 < 64 once the split's headroom is counted: 5 or 6).
  for (uint32_t s = 0; s < 2; ++s) EXPECT_GE(filter.shard_links(s), 5u);
}

TEST_P(ExpansionTest, ExpansionOneAddsLinksOfTheSameSize) {
  FilterSpec spec = Scalable(GetParam(), 500, 1);
  spec.expansion = 1;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  uint64_t state = 3;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back(SplitMix64(&state));
  for (uint64_t h : keys) ASSERT_OK((*f)->AddHash(h));
  ASSERT_GE((*f)->shard_links(0), 4u);
  for (uint32_t i = 0; i < (*f)->shard_links(0); ++i) {
    EXPECT_EQ((*f)->shard_filter(0, i).capacity(), 500u);
  }
  for (uint64_t h : keys) ASSERT_TRUE((*f)->MayContainHash(h));
  if (GetParam() != FilterType::kBloom) {
    // Removes find the key in whichever link holds it. A key that tests
    // positive in two links (rate < p) is refused, never taken from the
    // wrong link: no other key ever goes missing (shard_chain.h).
    int refused = 0;
    std::vector<uint64_t> kept;
    for (uint64_t h : keys) {
      Status st = (*f)->RemoveHash(h);
      if (st.code() == StatusCode::kNotSupported) {
        ++refused;
        kept.push_back(h);
      } else {
        ASSERT_OK(st);
      }
    }
    EXPECT_LE(refused, 60);
    EXPECT_EQ((*f)->Stats().total.items, static_cast<uint64_t>(refused));
    for (uint64_t h : kept) EXPECT_TRUE((*f)->MayContainHash(h));
  }
}

// A non-scaling filter at capacity: Full, and nothing changes.
TEST_P(ExpansionTest, NonScalingFilterAtCapacityIsFullAndUnchanged) {
  FilterSpec spec = Scalable(GetParam(), 1000, 1);
  spec.scalable = false;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  uint64_t state = 11;
  // Bloom: a hash whose bits are all set already (a false positive of the
  // filling filter) is "already present" and uses no capacity, so fill
  // until the filter says Full; then probe with hashes it does not hold.
  int added = 0;
  for (int i = 0; i < 2000; ++i) {
    Status s = (*f)->AddHash(SplitMix64(&state));
    if (s.IsFull()) break;
    ASSERT_OK(s);
    ++added;
  }
  EXPECT_GE(added, 1000);
  auto absent = [&] {
    uint64_t h;
    do h = SplitMix64(&state);
    while ((*f)->MayContainHash(h));
    return h;
  };
  const std::string before = (*f)->shard_filter(0).Serialize();
  const uint64_t extra = absent();
  Status s = (*f)->AddHash(extra);
  EXPECT_TRUE(s.IsFull()) << s.ToString();
  std::vector<Status> per_item;
  std::vector<uint64_t> more = {absent(), absent()};
  EXPECT_TRUE((*f)->AddHashes(more, &per_item).IsFull());
  EXPECT_TRUE(per_item[0].IsFull() && per_item[1].IsFull());
  EXPECT_EQ((*f)->shard_links(0), 1u);
  EXPECT_EQ((*f)->shard_filter(0).Serialize(), before);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ExpansionTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

// ---- The chain blob (persistence/chain_blob.h) ----

std::string TwoLinkBlob(FilterSpec spec) {
  auto f = ShardedFilter::Create(spec);
  EXPECT_TRUE(f.ok());
  uint64_t state = 5;
  while ((*f)->shard_links(0) < 2) {
    EXPECT_OK((*f)->AddHash(SplitMix64(&state)));
  }
  std::string a = (*f)->shard_filter(0, 0).Serialize();
  std::string b = (*f)->shard_filter(0, 1).Serialize();
  return persistence::EncodeChainBlob({{a, 100}, {b, 3}});
}

TEST(ChainBlobTest, RoundTripsAndPinsTheHeader) {
  FilterSpec spec = Scalable(FilterType::kBloom, 100, 1);
  std::string blob = TwoLinkBlob(spec);
  EXPECT_EQ(blob.substr(0, 8), std::string("SFCH\x01\x02\x00\x00", 8));
  auto links = persistence::DecodeChainBlob(blob, "b");
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  ASSERT_EQ(links->size(), 2u);
  EXPECT_EQ((*links)[0].fill, 100u);
  EXPECT_EQ((*links)[1].fill, 3u);
  FilterSpec resolved = spec;
  resolved.expansion = 2;
  auto chain = internal::DecodeChain(resolved, blob, "b");
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ(chain->links[1]->capacity(), 200u);
}

TEST(ChainBlobTest, EveryHeaderByteIsChecked) {
  std::string blob = TwoLinkBlob(Scalable(FilterType::kBloom, 100, 1));
  const size_t header = 8 + 2 * 16 + 8;
  for (size_t i = 0; i < header; ++i) {
    std::string bad = blob;
    bad[i] ^= 0x01;
    auto r = persistence::DecodeChainBlob(bad, "b");
    ASSERT_FALSE(r.ok()) << "byte " << i;
    if (i == 4) {
      EXPECT_TRUE(r.status().IsCorruption() || r.status().IsNotSupported());
    } else {
      EXPECT_TRUE(r.status().IsCorruption()) << i << r.status().ToString();
    }
  }
  std::string future = blob;
  future[4] = 9;
  EXPECT_TRUE(
      persistence::DecodeChainBlob(future, "b").status().IsNotSupported());
  for (size_t cut :
       {size_t{0}, size_t{7}, header - 1, header + 5, blob.size() - 1}) {
    EXPECT_TRUE(persistence::DecodeChainBlob(blob.substr(0, cut), "b")
                    .status()
                    .IsCorruption())
        << cut;
  }
  EXPECT_TRUE(
      persistence::DecodeChainBlob(blob + "x", "b").status().IsCorruption());
}

TEST(ChainBlobTest, LinksMustFollowTheRule) {
  FilterSpec spec = Scalable(FilterType::kCountingBloom, 100, 1);
  spec.expansion = 2;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  uint64_t state = 9;
  while ((*f)->shard_links(0) < 2) ASSERT_OK((*f)->AddHash(SplitMix64(&state)));
  std::string a = (*f)->shard_filter(0, 0).Serialize();
  std::string b = (*f)->shard_filter(0, 1).Serialize();
  // Swapped links: link 0 has link 1's capacity and rate.
  auto r = internal::DecodeChain(
      spec, persistence::EncodeChainBlob({{b, 0}, {a, 0}}), "s");
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // A fill above the link's capacity.
  r = internal::DecodeChain(spec, persistence::EncodeChainBlob({{a, 101}}),
                            "s");
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // Two links where the descriptor says non-scaling (link 0 then has the
  // full rate, so check the link count first).
  FilterSpec flat = spec;
  flat.scalable = false;
  r = internal::DecodeChain(
      flat, persistence::EncodeChainBlob({{a, 0}, {b, 0}}), "s");
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // Wrong link count in the header (checksum recomputed by the encoder):
  // one link whose length is the two envelopes'.
  std::string both = a + b;
  r = internal::DecodeChain(spec, persistence::EncodeChainBlob({{both, 0}}),
                            "s");
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace shardfilter
