// The filter journal under a simulated power loss with checkpoints,
// segment rotations and syncs held at chosen points (tests/fault_fs.h: a
// FaultEnv drops every byte no completed sync covered, in RocksDB's files
// and in the journal's segments alike). Durability sync promises that
// every acknowledged op survives (DESIGN.md invariant 4).
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "fault_fs.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/persistence/log/segment.h"
#include "shardfilter/persistence/test_env.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using persistence::internal::SetStoreEnvForTesting;
using testing::FaultEnv;
using testing::MustOpen;
using testing::Spec;
using testing::TempDir;

using testing::EnvScope;

struct SmallSegments {
  SmallSegments() { persistence::SetSegmentBytesForTesting(64 << 10); }
  ~SmallSegments() { persistence::SetSegmentBytesForTesting(0); }
};

DatabaseOptions Options(const std::string& path) {
  DatabaseOptions o = testing::Options(path);
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;  // the memory-mapped journal (L6)
  return o;
}

std::vector<uint64_t> Hashes(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> h(n);
  for (uint64_t& x : h) x = rng();
  return h;
}

// Group commit against a checkpoint's Retire (engine/internal/filter_log.h
// L3): a syncer reads the shard's segment list, then fdatasyncs without the
// lock. Meanwhile a checkpoint commits and retires the two oldest segments,
// and another writer's batch fills two new ones and waits for that sync.
// The syncer must leave both to the next sync, whatever the list lost
// meanwhile: a segment skipped would hold acknowledged records no sync
// covered, and after the power loss replay would stop at that gap.
TEST(JournalPowerLossTest, GroupCommitRacingRetireKeepsEveryAck) {
  SmallSegments small;
  TempDir dir;
  FaultEnv fe;
  std::unique_ptr<ShardedFilter> want;
  std::vector<uint64_t> late;
  {
    EnvScope scope(fe);
    auto db = MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto f = *db->Create(
        "f", Spec(FilterType::kCountingBloom, 200'000, 1, Durability::kSync));
    FilterSpec plain = f->spec();
    plain.durability.reset();
    want = ShardedFilter::Create(plain).value();
    std::mt19937_64 rng(7);
    // Three records of 7,000 hashes, one 64 KiB segment each: A and B
    // full, C active. Seqs 1..3.
    for (int i = 0; i < 3; ++i) {
      const auto h = Hashes(rng, 7000);
      SF_ASSERT_OK(f->AddHashes(h));
      SF_ASSERT_OK(want->AddHashes(h));
    }
    // The checkpoint copies the shard at seq 3; its commit (a synced
    // RocksDB write) is held.
    fe.fs->HoldSyncs(".log");
    std::thread checkpoint([&] { SF_EXPECT_OK(db->Checkpoint("f").status()); });
    fe.fs->WaitForHeldSyncs(".log");
    // Seq 4 lands in C; its writer becomes the syncer, reads [A, B, C] and
    // is held before its fdatasync of C.
    fe.fs->HoldSyncs(".sfj");
    const uint64_t single = rng();
    SF_ASSERT_OK(want->AddHash(single));
    std::thread syncer([&] { SF_EXPECT_OK(f->AddHash(single)); });
    fe.fs->WaitForHeldSyncs(".sfj");
    // The commit: A and B retired, the list is [C].
    fe.fs->ReleaseSyncs(".log");
    checkpoint.join();
    // Seqs 5 and 6: records of 16,384 and 7,000 hashes, each in a new
    // segment (D, E); the writer then waits for the held sync.
    late = Hashes(rng, 16384 + 7000);
    SF_ASSERT_OK(want->AddHashes(late));
    std::thread writer([&] { SF_EXPECT_OK(f->AddHashes(late)); });
    internal::FilterLog* log = internal::ShardedFilterAccess::log(*f);
    ASSERT_NE(log, nullptr);
    while (log->watermark(0) < 6) std::this_thread::yield();
    fe.fs->ReleaseSyncs(".sfj");
    syncer.join();
    writer.join();
    // Every op above was acknowledged.
    fe.fs->PowerOff();
    (void)db->Close();
  }
  fe.fs->DropUnsyncedData();
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  auto f = db->Get("f");
  SF_ASSERT_OK(f.status());
  size_t lost = 0;
  for (uint64_t h : late) lost += (*f)->MayContainHash(h) ? 0 : 1;
  EXPECT_EQ(lost, 0u) << "acknowledged adds lost of " << late.size();
  EXPECT_TRUE((*f)->Equals(*want));
}

}  // namespace
}  // namespace shardfilter
