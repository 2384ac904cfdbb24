// Database: catalog operations and errors, round trips of every type through
// checkpoints and journal replay, incremental checkpoints, durability none,
// read-only opens, drop, garbage collection, background checkpoints.
#include "shardfilter/engine/database.h"

#include <gtest/gtest.h>

#include <thread>

#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::RawStore;
using testing::Spec;
using testing::SplitMix64;
using testing::TempDir;

TEST(DatabaseCatalogTest, CreateGetListInfoDrop) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  auto f = db->Create("users", Spec(FilterType::kCuckoo, 10'000, 4));
  SF_ASSERT_OK(f.status());
  SF_ASSERT_OK(db->Create("b", Spec(FilterType::kBloom, 1000, 1)).status());
  EXPECT_EQ(db->List(), std::vector<std::string>({"b", "users"}));
  SF_ASSERT_OK((*f)->Add("alice"));
  auto g = db->Get("users");
  SF_ASSERT_OK(g.status());
  EXPECT_EQ(g->get(), f->get());
  EXPECT_TRUE((*g)->MayContain("alice"));
  auto info = db->Info("users");
  SF_ASSERT_OK(info.status());
  EXPECT_EQ(info->spec.shards, 4u);
  EXPECT_EQ(info->spec.type, FilterType::kCuckoo);
  EXPECT_EQ(*info->spec.durability, Durability::kJournal);
  EXPECT_EQ(info->stats.shards.size(), 4u);
  EXPECT_EQ(info->stats.total.items, 1u);
  SF_ASSERT_OK(db->Drop("users"));
  EXPECT_TRUE(db->Get("users").status().IsNotFound());
  EXPECT_TRUE(db->Info("users").status().IsNotFound());
  EXPECT_EQ((*f)->Add("bob").code(), StatusCode::kNotFound);  // dropped
  EXPECT_EQ(db->List(), std::vector<std::string>({"b"}));
  SF_ASSERT_OK(db->Close());
  // Drop is durable; a re-created name starts empty (no stale journal).
  db = MustOpen(Options(dir.db()));
  EXPECT_EQ(db->List(), std::vector<std::string>({"b"}));
  auto again = db->Create("users", Spec(FilterType::kCuckoo, 10'000, 4));
  SF_ASSERT_OK(again.status());
  EXPECT_FALSE((*again)->MayContain("alice"));
}

TEST(DatabaseCatalogTest, Errors) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  SF_ASSERT_OK(db->Create("x", Spec(FilterType::kBloom, 1000, 1)).status());
  auto dup = db->Create("x", Spec(FilterType::kCuckoo, 1000, 1));
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status().message().find("\"x\""), std::string::npos);
  EXPECT_TRUE(db->Get("nope").status().IsNotFound());
  EXPECT_TRUE(db->Drop("nope").IsNotFound());
  EXPECT_TRUE(db->Checkpoint("nope").status().IsNotFound());
  auto wrong = db->Get("x", FilterType::kCuckoo);
  EXPECT_EQ(wrong.status().code(), StatusCode::kWrongType);
  EXPECT_NE(wrong.status().message().find("is a bloom filter, not a cuckoo"),
            std::string::npos);
  SF_ASSERT_OK(db->Get("x", FilterType::kBloom).status());
  auto rm = (*db->Get("x"))->Remove("k");
  EXPECT_EQ(rm.code(), StatusCode::kNotSupported);
  EXPECT_TRUE(db->Create("", Spec(FilterType::kBloom, 10, 1))
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(db->Get("").status().IsInvalidArgument());
  std::string longest(kMaxFilterNameBytes, 'n');
  SF_ASSERT_OK(db->Create(longest, Spec(FilterType::kBloom, 10, 1)).status());
  auto too_long = db->Create(longest + "n", Spec(FilterType::kBloom, 10, 1));
  EXPECT_TRUE(too_long.status().IsInvalidArgument());
  EXPECT_NE(too_long.status().message().find("1024"), std::string::npos);
  // Arbitrary bytes, including NUL and 0xff, are names.
  std::string binary("a\0\xff", 3);
  SF_ASSERT_OK(db->Create(binary, Spec(FilterType::kBloom, 10, 1)).status());
  SF_ASSERT_OK((*db->Get(binary))->Add("k"));
  FilterSpec bad = Spec(FilterType::kBloom, 10, 3);
  EXPECT_TRUE(db->Create("bad", bad).status().IsInvalidArgument());
  EXPECT_TRUE(db->Get("bad").status().IsNotFound());  // nothing left behind
  SF_ASSERT_OK(db->Close());
  db = MustOpen(Options(dir.db()));
  EXPECT_TRUE((*db->Get(binary))->MayContain("k"));
  SF_EXPECT_OK(db->Get(longest).status());
}

TEST(DatabaseCatalogTest, OpenErrors) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.create_if_missing = false;
  EXPECT_TRUE(Database::Open(o).status().IsNotFound());
  o.read_only = true;
  EXPECT_TRUE(Database::Open(o).status().IsNotFound());
  DatabaseOptions chunk = Options(dir.db());
  chunk.chunk_bytes = 100;
  EXPECT_TRUE(Database::Open(chunk).status().IsInvalidArgument());
  auto db = MustOpen(Options(dir.db()));
  // The same directory cannot be opened twice for writing.
  EXPECT_FALSE(Database::Open(Options(dir.db())).ok());
}

class RoundTripTest : public ::testing::TestWithParam<FilterType> {
 protected:
  // Applies n adds (and removes of every third key for counting/cuckoo).
  void Mutate(ShardedFilter& f, uint64_t stream, int n) {
    uint64_t state = stream;
    std::vector<uint64_t> added;
    for (int i = 0; i < n; ++i) {
      uint64_t h = SplitMix64(&state);
      SF_ASSERT_OK(f.AddHash(h));
      added.push_back(h);
    }
    if (GetParam() == FilterType::kBloom) return;
    for (size_t i = 0; i < added.size(); i += 3)
      SF_ASSERT_OK(f.RemoveHash(added[i]));
    std::vector<uint64_t> batch(added.begin(), added.begin() + n / 4);
    SF_ASSERT_OK(f.AddHashes(batch));
  }

  // Reopens and checks every shard equals `expect` bit for bit.
  void ReopenAndCompare(const std::string& path, const ShardedFilter& expect,
                        uint64_t want_replayed_min,
                        uint64_t want_replayed_max) {
    auto db = MustOpen(Options(path));
    ASSERT_NE(db, nullptr);
    auto f = db->Get("f");
    SF_ASSERT_OK(f.status());
    ASSERT_EQ((*f)->shard_count(), expect.shard_count());
    for (uint32_t s = 0; s < expect.shard_count(); ++s) {
      EXPECT_TRUE((*f)->shard_filter(s).Equals(expect.shard_filter(s)))
          << "shard " << s;
    }
    uint64_t replayed = db->counters().replayed_ops;
    EXPECT_GE(replayed, want_replayed_min);
    EXPECT_LE(replayed, want_replayed_max);
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    EXPECT_TRUE(report->ok()) << report->problems[0];
  }
};

TEST_P(RoundTripTest, ThroughCheckpoint) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.chunk_bytes = 4096;  // many chunks per shard
  o.checkpoint_on_close = false;
  std::shared_ptr<ShardedFilter> f;
  {
    auto db = MustOpen(o);
    f = *db->Create("f", Spec(GetParam(), 40'000, 4));
    Mutate(*f, 1, 20'000);
    auto st = db->Checkpoint("f");
    SF_ASSERT_OK(st.status());
    EXPECT_EQ(st->shards_written, 4u);
    EXPECT_GT(st->chunks_written, 8u);
    SF_ASSERT_OK(db->Close());
  }
  ReopenAndCompare(dir.db(), *f, 0, 0);
}

TEST_P(RoundTripTest, ThroughJournalReplayOnly) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  std::shared_ptr<ShardedFilter> f;
  {
    auto db = MustOpen(o);
    f = *db->Create("f", Spec(GetParam(), 40'000, 4));
    Mutate(*f, 2, 10'000);
    EXPECT_GE(db->counters().journal_ops, 10'000u);
    SF_ASSERT_OK(db->Close());
  }
  ReopenAndCompare(dir.db(), *f, 10'000, 20'000);
}

TEST_P(RoundTripTest, CheckpointThenJournal) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  std::shared_ptr<ShardedFilter> f;
  {
    auto db = MustOpen(o);
    f = *db->Create("f", Spec(GetParam(), 40'000, 4));
    Mutate(*f, 3, 8'000);
    SF_ASSERT_OK(db->Checkpoint("f").status());
    Mutate(*f, 4, 3'000);
    SF_ASSERT_OK(db->Close());
  }
  // Only the ops after the checkpoint are replayed.
  ReopenAndCompare(dir.db(), *f, 3'000, 5'000);
}

TEST_P(RoundTripTest, SyncDurability) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  std::shared_ptr<ShardedFilter> f;
  {
    auto db = MustOpen(o);
    f = *db->Create("f", Spec(GetParam(), 4'000, 2, Durability::kSync));
    Mutate(*f, 5, 60);  // each call fsyncs: keep it short
    SF_ASSERT_OK(db->Close());
  }
  ReopenAndCompare(dir.db(), *f, 60, 200);
}

// DatabaseOptions::durability_override applies to this session only: it
// decides what is journalled, and leaves the stored spec unchanged.
TEST(DatabaseDurabilityTest, OverrideAppliesToTheSessionOnly) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  {
    auto db = MustOpen(o);
    FilterSpec spec = Spec(FilterType::kCuckoo, 10'000, 2, Durability::kNone);
    SF_ASSERT_OK(db->Create("f", spec).status());
    SF_ASSERT_OK(db->Close());
  }
  {
    // Stored "none", session "journal": adds survive a close without a
    // checkpoint because they were journalled.
    DatabaseOptions journal = o;
    journal.durability_override = Durability::kJournal;
    auto db = MustOpen(journal);
    auto f = *db->Get("f");
    EXPECT_EQ(f->durability(), Durability::kJournal);
    EXPECT_EQ(*f->spec().durability, Durability::kNone);
    for (int i = 0; i < 100; ++i) SF_ASSERT_OK(f->Add("k" + std::to_string(i)));
    EXPECT_EQ(db->counters().journal_ops, 100u);
    SF_ASSERT_OK(db->Close());
  }
  {
    // Session "none" over the same filter: nothing is journalled, and the
    // keys journalled by the previous session are there.
    DatabaseOptions none = o;
    none.durability_override = Durability::kNone;
    auto db = MustOpen(none);
    auto f = *db->Get("f");
    EXPECT_EQ(db->counters().replayed_ops, 100u);
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ(f->Count("k" + std::to_string(i)), 1u) << i;
    }
    SF_ASSERT_OK(f->Add("unjournalled"));
    EXPECT_EQ(db->counters().journal_ops, 0u);
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(o);
  auto f = *db->Get("f");
  EXPECT_EQ(f->durability(), Durability::kNone);  // the stored mode again
  EXPECT_EQ(f->Count("unjournalled"), 0u);        // it was never journalled
  EXPECT_EQ(f->Count("k7"), 1u);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, RoundTripTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

}  // namespace
}  // namespace shardfilter
