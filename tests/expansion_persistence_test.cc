// Expansion and persistence: a filter reopened mid-growth (part of its
// chains in the checkpoint, the rest only in the journal) Equals the one
// that was running; the descriptor stores scalable and expansion strictly.
#include <gtest/gtest.h>

#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Options;
using testing::SplitMix64;
using testing::TempDir;

class ExpansionPersistenceTest : public ::testing::TestWithParam<FilterType> {};

TEST_P(ExpansionPersistenceTest, ReopenedMidGrowthEqualsTheRunningFilter) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  o.chunk_bytes = 4096;  // multi-chunk chain blobs
  auto db = testing::MustOpen(o);
  FilterSpec spec;
  spec.type = GetParam();
  spec.capacity = 2000;
  spec.shards = 2;
  spec.durability = Durability::kJournal;
  auto f = db->Create("g", spec);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  uint64_t state = 21;
  std::vector<uint64_t> keys;
  auto add = [&](int n) {
    for (int i = 0; i < n; ++i) {
      keys.push_back(SplitMix64(&state));
      SF_ASSERT_OK((*f)->AddHash(keys.back()));
    }
  };
  add(6000);  // grown: ~3x the first links
  std::vector<bool> removed(keys.size(), false);
  if (GetParam() != FilterType::kBloom) {
    for (int i = 0; i < 500; ++i) {
      Status st = (*f)->RemoveHash(keys[i]);
      if (st.code() == StatusCode::kNotSupported) continue;  // ambiguous
      SF_ASSERT_OK(st);
      removed[i] = true;
    }
  }
  auto ck = db->Checkpoint("g");
  SF_ASSERT_OK(ck.status());
  const uint32_t links_at_checkpoint = (*f)->shard_links(0);
  add(20000);  // more links, only in the journal
  std::vector<uint64_t> batch;
  for (int i = 0; i < 3000; ++i) batch.push_back(SplitMix64(&state));
  SF_ASSERT_OK((*f)->AddHashes(batch));
  keys.insert(keys.end(), batch.begin(), batch.end());
  ASSERT_GT((*f)->shard_links(0), links_at_checkpoint);
  std::shared_ptr<ShardedFilter> before = *f;
  SF_ASSERT_OK(db->Close());
  db = testing::MustOpen(o);
  auto g = db->Get("g");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE((*g)->Equals(*before));
  EXPECT_TRUE((*g)->spec().scalable);
  EXPECT_EQ((*g)->spec().expansion, 2u);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i < removed.size() && removed[i]) continue;
    ASSERT_TRUE((*g)->MayContainHash(keys[i])) << i;
  }
  // Checkpointed again (all links in the blob) and reopened: still equal.
  SF_ASSERT_OK(db->Checkpoint("g").status());
  auto report = db->Verify();
  SF_ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok()) << report->problems.front();
  SF_ASSERT_OK(db->Close());
  db = testing::MustOpen(o);
  g = db->Get("g");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE((*g)->Equals(*before));
  Result<FilterInfo> info = db->Info("g");
  ASSERT_TRUE(info.ok());
  EXPECT_GT(info->stats.shards[0].links, 1u);
  EXPECT_GT(info->stats.total.capacity, spec.capacity);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ExpansionPersistenceTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

TEST(ExpansionDescriptorTest, ScalableAndExpansionRoundTripStrictly) {
  persistence::FilterDescriptor d;
  d.type = FilterType::kCuckoo;
  d.capacity = 10;
  d.fpp = 0.01;
  d.scalable = true;
  d.expansion = 4;
  d.shards.resize(1);
  std::string v = persistence::EncodeDescriptor(d);
  // Payload byte 2 (flags) and 3 (expansion) follow the 2-byte frame.
  EXPECT_EQ(static_cast<uint8_t>(v[2 + 2]), 2);
  EXPECT_EQ(static_cast<uint8_t>(v[2 + 3]), 4);
  auto back = persistence::DecodeDescriptor(v, "f");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, d);
  auto reframe = [](std::string value, size_t at, uint8_t byte) {
    std::string payload = value.substr(2, value.size() - 10);
    payload[at] = static_cast<char>(byte);
    return persistence::FrameValue(persistence::ValueKind::kDescriptor,
                                   payload);
  };
  for (uint8_t e : {0, 17, 255}) {
    EXPECT_TRUE(persistence::DecodeDescriptor(reframe(v, 3, e), "f")
                    .status()
                    .IsCorruption())
        << int{e};
  }
  // Flags bits 0-6 are classic, scalable, retain_hashes, auto and split
  // layouts, the multiply shard router and the power-of-two cuckoo
  // geometry (this descriptor is a cuckoo filter's); the rest unknown.
  EXPECT_TRUE(persistence::DecodeDescriptor(reframe(v, 2, 128), "f")
                  .status()
                  .IsCorruption());
  auto pow2 = persistence::DecodeDescriptor(reframe(v, 2, 64), "f");
  ASSERT_TRUE(pow2.ok());
  EXPECT_TRUE(pow2->cuckoo_pow2_buckets);
  auto retained = persistence::DecodeDescriptor(reframe(v, 2, 4), "f");
  ASSERT_TRUE(retained.ok());
  EXPECT_TRUE(retained->retain_hashes);
}

}  // namespace
}  // namespace shardfilter
