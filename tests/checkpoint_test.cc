// Checkpoints: incremental (only dirty shards are written, asserted on the
// counters), durability none, read-only opens, garbage of interrupted
// checkpoints, background checkpoints, Verify.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Options;
using testing::RawStore;
using testing::Spec;
using testing::SplitMix64;
using testing::TempDir;

// A hash that routes to `shard`.
uint64_t HashInShard(const ShardedFilter& f, uint32_t shard, uint64_t* state) {
  for (;;) {
    uint64_t h = SplitMix64(state);
    if (f.ShardOf(h) == shard) return h;
  }
}

TEST(CheckpointTest, IncrementalWritesOnlyChangedShards) {
  TempDir dir;
  auto db = testing::MustOpen(Options(dir.db()));
  auto f = *db->Create("f", Spec(FilterType::kCountingBloom, 80'000, 8));
  uint64_t state = 1;
  for (int i = 0; i < 20'000; ++i) SF_ASSERT_OK(f->AddHash(SplitMix64(&state)));
  auto full = db->Checkpoint("f");
  SF_ASSERT_OK(full.status());
  EXPECT_EQ(full->shards_written, 8u);
  EXPECT_EQ(full->shards_skipped, 0u);
  uint64_t shard_bytes = full->bytes_written / 8;
  // Touch shards 3 and 6 only.
  SF_ASSERT_OK(f->AddHash(HashInShard(*f, 3, &state)));
  uint64_t in6 = HashInShard(*f, 6, &state);
  SF_ASSERT_OK(f->AddHash(in6));
  SF_ASSERT_OK(f->AddHash(in6));
  SF_ASSERT_OK(f->RemoveHash(in6));
  auto inc = db->Checkpoint("f");
  SF_ASSERT_OK(inc.status());
  EXPECT_EQ(inc->shards_written, 2u);
  EXPECT_EQ(inc->shards_skipped, 6u);
  EXPECT_EQ(inc->bytes_written, 2 * shard_bytes);
  EXPECT_GT(inc->max_lock_hold_ns, 0u);
  auto stats = f->Stats();
  EXPECT_EQ(stats.shards[3].checkpoint_generation, 2u);
  EXPECT_EQ(stats.shards[0].checkpoint_generation, 1u);
  EXPECT_FALSE(stats.shards[3].dirty);
  // Nothing changed: nothing written.
  auto none = db->Checkpoint("f");
  SF_ASSERT_OK(none.status());
  EXPECT_EQ(none->shards_written, 0u);
  EXPECT_EQ(none->bytes_written, 0u);
  EXPECT_EQ(db->counters().shards_written, 10u);
  // The journal was truncated by the checkpoints; old generations are gone.
  SF_ASSERT_OK(db->Close());
  RawStore raw(dir.db());
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw.Scan("journal").size(), 0u);
  for (const auto& [key, value] : raw.Scan("shards")) {
    auto k = persistence::ParseChunkKey(key);
    ASSERT_TRUE(k.has_value());
    EXPECT_EQ(k->number, (k->shard == 3 || k->shard == 6) ? 2u : 1u);
  }
}

TEST(CheckpointTest, DurabilityNoneKeepsStateOfLastCheckpoint) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  o.default_durability = Durability::kNone;
  {
    auto db = testing::MustOpen(o);
    FilterSpec spec = Spec(FilterType::kBloom, 10'000, 2);
    spec.durability.reset();  // inherit the store default
    auto f = *db->Create("f", spec);
    EXPECT_EQ(f->durability(), Durability::kNone);
    SF_ASSERT_OK(f->Add("before"));
    SF_ASSERT_OK(db->Checkpoint("f").status());
    SF_ASSERT_OK(f->Add("after"));
    EXPECT_EQ(db->counters().journal_ops, 0u);
    SF_ASSERT_OK(db->Close());
  }
  auto db = testing::MustOpen(o);
  auto f = *db->Get("f");
  EXPECT_TRUE(f->MayContain("before"));
  EXPECT_FALSE(f->MayContain("after"));
}

TEST(CheckpointTest, ReadOnlyOpenReplaysInMemoryAndWritesNothing) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  {
    auto db = testing::MustOpen(o);
    auto f = *db->Create("f", Spec(FilterType::kCuckoo, 10'000, 2));
    for (int i = 0; i < 100; ++i) SF_ASSERT_OK(f->Add(std::to_string(i)));
    SF_ASSERT_OK(db->Close());
  }
  DatabaseOptions ro = o;
  ro.read_only = true;
  ro.checkpoint_on_close = true;  // ignored when read-only
  {
    auto db = testing::MustOpen(ro);
    EXPECT_TRUE(db->read_only());
    auto f = *db->Get("f");
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(f->MayContain(std::to_string(i)));
    EXPECT_EQ(db->counters().replayed_ops, 100u);
    EXPECT_EQ(f->Add("x").code(), StatusCode::kNotSupported);
    EXPECT_EQ(f->Remove("1").code(), StatusCode::kNotSupported);
    EXPECT_EQ(f->AddHashes(std::vector<uint64_t>{1, 2}).code(),
              StatusCode::kNotSupported);
    EXPECT_EQ(db->Create("g", Spec(FilterType::kBloom, 10, 1)).status().code(),
              StatusCode::kNotSupported);
    EXPECT_EQ(db->Drop("f").code(), StatusCode::kNotSupported);
    EXPECT_EQ(db->Checkpoint("f").status().code(), StatusCode::kNotSupported);
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    EXPECT_TRUE(report->ok());
    EXPECT_EQ(report->journal_entries, 100u);
    SF_ASSERT_OK(db->Close());
  }
  // Nothing was written: the journal is still all there (replayed when
  // the filter is first used: Database D4).
  auto db = testing::MustOpen(o);
  SF_ASSERT_OK(db->Get("f").status());
  EXPECT_EQ(db->counters().replayed_ops, 100u);
}

// A store holding a 2-shard Bloom filter "f" with "a" checkpointed (and,
// with `journalled`, "b" in the journal only); closed without a final
// checkpoint.
void MakeCheckpointedStore(const DatabaseOptions& o, const char* journalled) {
  auto db = testing::MustOpen(o);
  auto f = *db->Create("f", Spec(FilterType::kBloom, 10'000, 2));
  SF_ASSERT_OK(f->Add("a"));
  SF_ASSERT_OK(db->Checkpoint("f").status());
  if (journalled != nullptr) SF_ASSERT_OK(f->Add(journalled));
  SF_ASSERT_OK(db->Close());
}

TEST(CheckpointTest, InterruptedCheckpointIsCollectedOnOpen) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  MakeCheckpointedStore(o, "b");
  {
    // What a crash between writing generation 2's chunks and the commit
    // leaves behind.
    RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    raw.Put("shards", persistence::ChunkKey("f", 0, 2, 0),
            persistence::EncodeChunk("half-written"));
    raw.Put("shards", persistence::ChunkKey("f", 1, 7, 3),
            persistence::EncodeChunk("debris"));
  }
  {
    DatabaseOptions ro = o;
    ro.read_only = true;
    auto db = testing::MustOpen(ro);
    auto report = *db->Verify();
    EXPECT_TRUE(report.ok());
    EXPECT_EQ(report.orphan_values, 2u);
    EXPECT_TRUE((*db->Get("f"))->MayContain("b"));
  }
  // A writable open collects it before any filter loads (D4 loads none).
  auto db = testing::MustOpen(o);
  auto report = *db->Verify();
  EXPECT_EQ(report.orphan_values, 0u);
  EXPECT_TRUE(db->Loaded().empty());
  auto f = *db->Get("f");
  EXPECT_TRUE(f->MayContain("a"));
  EXPECT_TRUE(f->MayContain("b"));
}

// Every kind of debris Verify counts is collected by a writable open,
// without loading a filter; the keys of a filter whose descriptor does not
// decode are not debris (store_garbage.cc G3).
TEST(CheckpointTest, WritableOpenCollectsEveryKindOfDebris) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  MakeCheckpointedStore(o, nullptr);
  {
    RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    // An import killed before its descriptor was put.
    raw.Put("shards", persistence::ChunkKey("g", 0, 1, 0),
            persistence::EncodeChunk("imported"));
    raw.Put("journal", persistence::JournalKey("g", 0, 1), "j");
    // A chunk past the committed count of f's committed generation.
    raw.Put("shards", persistence::ChunkKey("f", 0, 1, 1000),
            persistence::EncodeChunk("extra"));
    // A journal entry f's last checkpoint made obsolete.
    raw.Put("journal", persistence::JournalKey("f", 1, 0), "old");
    // A filter whose descriptor is damaged: its chunk is its data.
    std::string damaged = raw.Scan("catalog").at(0).second;  // f's
    damaged.back() ^= 1;
    raw.Put("catalog", "h", damaged);
    raw.Put("shards", persistence::ChunkKey("h", 0, 1, 0),
            persistence::EncodeChunk("h's data"));
  }
  {
    auto db = testing::MustOpen(o);
    EXPECT_TRUE(db->Loaded().empty());
    auto verified = db->Verify();
    SF_ASSERT_OK(verified.status());
    const VerifyReport& report = *verified;
    EXPECT_EQ(report.orphan_values, 1u);  // h's chunk, kept (G3)
    ASSERT_EQ(report.problems.size(), 1u);
    EXPECT_NE(report.problems[0].find("h"), std::string::npos);
    EXPECT_TRUE((*db->Get("f"))->MayContain("a"));
    SF_ASSERT_OK(db->Close());
  }
  RawStore raw(dir.db());
  ASSERT_TRUE(raw.ok());
  int h_chunks = 0, g_keys = 0;
  for (const auto& [k, v] : raw.Scan("shards")) {
    auto key = persistence::ParseChunkKey(k);
    ASSERT_TRUE(key.has_value());
    h_chunks += key->name == "h";
    g_keys += key->name == "g";
  }
  for (const auto& [k, v] : raw.Scan("journal")) {
    auto key = persistence::ParseJournalKey(k);
    ASSERT_TRUE(key.has_value());
    g_keys += key->name == "g";
  }
  EXPECT_EQ(h_chunks, 1);
  EXPECT_EQ(g_keys, 0);
}

TEST(CheckpointTest, BackgroundCheckpoints) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_interval_ms = 10;
  auto db = testing::MustOpen(o);
  auto f = *db->Create("f", Spec(FilterType::kBloom, 10'000, 4));
  SF_ASSERT_OK(f->Add("k"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (db->counters().shards_written == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(db->counters().shards_written, 1u);
  SF_EXPECT_OK(db->background_status());
  EXPECT_EQ(db->counters().background_errors, 0u);
  SF_ASSERT_OK(db->Close());
  EXPECT_EQ(f->Add("z").code(), StatusCode::kNotSupported);  // closed
}

}  // namespace
}  // namespace shardfilter
