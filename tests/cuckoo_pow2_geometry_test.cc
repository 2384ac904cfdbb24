// The power-of-two cuckoo geometry (FilterSpec::cuckoo_pow2_buckets,
// RedisBloom's CF.RESERVE): link 0 has nextpow2(capacity / b) buckets of
// 8-bit slots split over the shards, link i expansion^i times that, each
// link holds its slots; the flag survives the descriptor and a reopen, and
// a build without the flag refuses such a descriptor; the golden export
// (tests/data/golden-cuckoo-pow2) keeps loading.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/sizing.h"
#include "shardfilter/persistence/spec_codec.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Options;
using testing::SplitMix64;
using testing::TempDir;

FilterSpec Pow2(uint64_t capacity, uint32_t bucket_size, uint32_t shards = 1) {
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = capacity;
  spec.bucket_size = bucket_size;
  spec.shards = shards;
  spec.expansion = 1;
  spec.cuckoo_pow2_buckets = true;
  return spec;
}

const CuckooFilter& Link(const ShardedFilter& f, uint32_t shard,
                         uint32_t link) {
  return static_cast<const CuckooFilter&>(f.shard_filter(shard, link));
}

TEST(CuckooPow2GeometryTest, LinkZeroHasRedisBloomsBucketCount) {
  struct Case {
    uint64_t capacity;
    uint32_t bucket_size;
    uint64_t buckets;
  } cases[] = {{1024, 2, 512}, {500, 2, 256}, {1000, 4, 256}, {100, 8, 16},
               {100, 2, 64},   {4, 2, 2},     {1025, 4, 256}, {3, 2, 1}};
  for (const Case& c : cases) {
    auto f = ShardedFilter::Create(Pow2(c.capacity, c.bucket_size));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const CuckooFilter& link = Link(**f, 0, 0);
    EXPECT_EQ(link.num_buckets(), c.buckets) << c.capacity;
    EXPECT_EQ(link.bucket_size(), c.bucket_size);
    EXPECT_EQ(link.fingerprint_bits(), 8u);
    EXPECT_EQ(link.capacity(), c.buckets * c.bucket_size);
    EXPECT_EQ(link.Counts().bytes, (c.buckets * c.bucket_size + 7) / 8 * 8 + 8)
        << "one byte per slot in 64-bit words, plus the padding word";
    EXPECT_DOUBLE_EQ((*f)->spec().fpp, CuckooFpr(8, c.bucket_size, 1.0));
  }
  // 500 items: 512 bytes of table, as RedisBloom.
  auto f = ShardedFilter::Create(Pow2(500, 2));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(Link(**f, 0, 0).num_buckets() * 2, 512u);
}

TEST(CuckooPow2GeometryTest, ShardsSplitTheBucketsEvenly) {
  auto f = ShardedFilter::Create(Pow2(uint64_t{1} << 20, 2, 4));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(Link(**f, s, 0).num_buckets(), uint64_t{1} << 17);
  }
}

TEST(CuckooPow2GeometryTest, LinksGrowByExpansionUpTo32) {
  FilterSpec spec = Pow2(4, 2);
  spec.expansion = 2;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  uint64_t state = 7;
  for (int i = 0; i < 200; ++i) SF_ASSERT_OK((*f)->AddHash(SplitMix64(&state)));
  const uint32_t links = (*f)->shard_links(0);
  ASSERT_GT(links, 2u);
  for (uint32_t i = 0; i < links; ++i) {
    EXPECT_EQ(Link(**f, 0, i).num_buckets(), uint64_t{2} << i) << i;
    EXPECT_EQ(Link(**f, 0, i).fingerprint_bits(), 8u);
  }
  // Expansion 1: 32 links of 2 buckets, then Full.
  auto g = ShardedFilter::Create(Pow2(4, 2));
  ASSERT_TRUE(g.ok());
  Status st;
  for (int i = 0; i < 100000 && st.ok(); ++i) {
    st = (*g)->AddHash(SplitMix64(&state));
  }
  EXPECT_TRUE(st.IsFull()) << st.ToString();
  EXPECT_EQ((*g)->shard_links(0), internal::kMaxLinks);
  EXPECT_EQ(Link(**g, 0, internal::kMaxLinks - 1).num_buckets(), 2u);
}

TEST(CuckooPow2GeometryTest, RefusesOtherWidthsAndTypes) {
  FilterSpec spec = Pow2(100, 2);
  spec.fingerprint_bits = 12;
  EXPECT_TRUE(ShardedFilter::Create(spec).status().IsInvalidArgument());
  spec = Pow2(100, 3);
  EXPECT_TRUE(ShardedFilter::Create(spec).status().IsInvalidArgument());
  spec = Pow2(100, 2);
  spec.type = FilterType::kBloom;
  EXPECT_TRUE(ShardedFilter::Create(spec).status().IsInvalidArgument());
}

// Links in the checkpoint and links only in the journal (replay grows the
// same chain) both come back.
TEST(CuckooPow2GeometryTest, SurvivesAReopenWithItsLinks) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  auto db = testing::MustOpen(o);
  FilterSpec spec = Pow2(64, 2);
  spec.durability = Durability::kJournal;
  auto f = db->Create("c", spec);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  uint64_t state = 3;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 150; ++i) {
    keys.push_back(SplitMix64(&state));
    SF_ASSERT_OK((*f)->AddHash(keys.back()));
  }
  ASSERT_GT((*f)->shard_links(0), 1u);
  SF_ASSERT_OK(db->Checkpoint("c").status());
  const uint32_t checkpointed = (*f)->shard_links(0);
  for (int i = 0; i < 300; ++i) {
    keys.push_back(SplitMix64(&state));
    SF_ASSERT_OK((*f)->AddHash(keys.back()));
  }
  ASSERT_GT((*f)->shard_links(0), checkpointed);
  std::shared_ptr<ShardedFilter> before = *f;
  SF_ASSERT_OK(db->Close());
  db = testing::MustOpen(o);
  auto g = db->Get("c");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE((*g)->spec().cuckoo_pow2_buckets);
  EXPECT_TRUE((*g)->Equals(*before));
  EXPECT_EQ(Link(**g, 0, 0).num_buckets(), 32u);
  for (uint64_t k : keys) EXPECT_TRUE((*g)->MayContainHash(k));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The golden export (tests/data/golden-cuckoo-pow2/README.md) loads with
// its geometry and every key.
TEST(CuckooPow2GeometryTest, GoldenExportLoads) {
  const std::string dir = SF_GOLDEN_POW2_DIR;
  const std::string bytes = ReadFile(dir + "/cf-pow2.sfx");
  ASSERT_FALSE(bytes.empty());
  std::set<std::string> removed;
  std::istringstream lines(ReadFile(dir + "/cf-pow2.removed"));
  for (std::string key; std::getline(lines, key);) removed.insert(key);
  ASSERT_FALSE(removed.empty());
  auto f = LoadExportedFilter(bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const FilterSpec& spec = (*f)->spec();
  EXPECT_TRUE(spec.cuckoo_pow2_buckets);
  EXPECT_EQ(spec.fingerprint_bits, 8u);
  EXPECT_EQ(spec.bucket_size, 2u);
  EXPECT_EQ(spec.expansion, 2u);
  ASSERT_EQ((*f)->shard_count(), 2u);
  for (uint32_t s = 0; s < 2; ++s) {
    ASSERT_GT((*f)->shard_links(s), 1u);
    for (uint32_t i = 0; i < (*f)->shard_links(s); ++i) {
      EXPECT_EQ(Link(**f, s, i).num_buckets(), uint64_t{16} << i);
    }
  }
  uint64_t held = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string key = "k" + std::to_string(i);
    if (removed.count(key) != 0) continue;
    ++held;
    EXPECT_TRUE((*f)->MayContain(key)) << key;
  }
  EXPECT_EQ((*f)->Counts().total.items, held);
}

TEST(CuckooPow2GeometryTest, DescriptorFlagIsBit6AndOlderRulesRefuseIt) {
  FilterSpec spec = Pow2(1000, 2);
  auto resolved = internal::ResolveSpec(spec, Durability::kNone);
  ASSERT_TRUE(resolved.ok());
  persistence::FilterDescriptor d = internal::DescriptorFromSpec(*resolved);
  const persistence::SpecHead head =
      persistence::EncodeSpecHead(d, persistence::kDescriptorSpecRules);
  EXPECT_EQ(head.flags & persistence::kSpecFlagCuckooPow2, 64);
  auto back =
      persistence::DecodeDescriptor(persistence::EncodeDescriptor(d), "c");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(internal::SpecFromDescriptor(*back).cuckoo_pow2_buckets);
  // A build from before the flag allows bits 0..5 only: Corruption
  // ("unknown flags"), so it never misreads the geometry.
  const persistence::SpecRules older{
      static_cast<uint8_t>(persistence::kDescriptorSpecRules.allowed_flags &
                           ~persistence::kSpecFlagCuckooPow2),
      false};
  persistence::StoredSpec s = d;
  Status st = persistence::DecodeSpecHead(head, older, "c", &s);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("unknown flags"), std::string::npos);
  // The flag on a Bloom filter is Corruption.
  persistence::SpecHead bloom = head;
  bloom.type = static_cast<uint8_t>(FilterType::kBloom);
  st = persistence::DecodeSpecHead(bloom, persistence::kDescriptorSpecRules,
                                   "c", &s);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
}

}  // namespace
}  // namespace shardfilter
