// A full disk (ENOSPC) or a failing one (EIO) at any point never loses an
// acknowledged op, never aborts the process, and the store opens and works
// again once the fault is gone; a simulated power loss (tests/fault_fs.h
// drops every byte not synced) keeps every acknowledged op in durability
// sync, and a prefix of the ops after the last sync in durability journal
// (DESIGN.md invariant 4).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault_fs.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/test_env.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using persistence::internal::SetStoreEnvForTesting;
using testing::FaultEnv;
using testing::FaultFs;
using testing::Spec;
using testing::TempDir;

// These faults are injected into RocksDB's file system, so every filter
// journals there (DatabaseOptions::journal_in_rocksdb): the memory-mapped
// filter journal's own faults (no room, failed sync, power loss) are
// tests/filter_journal_test.cc's.
DatabaseOptions Options(const std::string& path) {
  DatabaseOptions o = testing::Options(path);
  o.journal_in_rocksdb = true;
  return o;
}

std::string Key(int i) { return "key-" + std::to_string(i); }

using testing::EnvScope;

struct Param {
  FilterType type;
  Durability durability;
};

class DiskFullTest : public ::testing::TestWithParam<Param> {};

// Each round: writes until the budget runs out at a random byte (WAL,
// checkpoint chunks, SST flushes or the MANIFEST), goes on writing and
// checkpointing a while against the full disk, closes, frees the space and
// reopens: every acknowledged key is there and the store takes writes.
TEST_P(DiskFullTest, NoSpaceAtRandomPointsLosesNothingAcknowledged) {
  const Param p = GetParam();
  std::mt19937_64 rng(static_cast<uint64_t>(p.type) * 31 +
                      static_cast<uint64_t>(p.durability));
  const int rounds = p.durability == Durability::kSync ? 3 : 6;
  for (int round = 0; round < rounds; ++round) {
    TempDir dir;
    FaultEnv fe;
    std::set<int> acked;
    int next = 0;
    {
      EnvScope scope(fe);
      DatabaseOptions o = Options(dir.db());
      o.chunk_bytes = 16 << 10;  // many chunk writes per checkpoint
      auto db = testing::MustOpen(o);
      ASSERT_NE(db, nullptr);
      auto f = db->Create("f", Spec(p.type, 200'000, 4, p.durability));
      SF_ASSERT_OK(f.status());
      fe.fs->SetBudget(
          static_cast<int64_t>(rng() % (3 << 20)),
          rng() % 3 ? FaultFs::Fault::kNoSpace : FaultFs::Fault::kIoError);
      int after_failure = 0;
      for (int batch = 0; batch < 400 && after_failure < 40; ++batch) {
        if (rng() % 8 == 0) {
          std::vector<std::string> keys;
          for (int i = 0; i < 64; ++i) keys.push_back(Key(next + i));
          std::vector<std::string_view> views(keys.begin(), keys.end());
          std::vector<Status> per;
          Status s = (*f)->AddKeys(views, &per);
          for (int i = 0; i < 64; ++i) {
            if (per[i].ok()) acked.insert(next + i);
          }
          next += 64;
          if (!s.ok()) ++after_failure;
        } else {
          Status s = (*f)->Add(Key(next));
          if (s.ok()) acked.insert(next);
          ++next;
          if (!s.ok()) ++after_failure;
        }
        if (rng() % 40 == 0) {
          auto cp = db->Checkpoint("f");  // may fail: the disk is full
          if (!cp.ok()) ++after_failure;
        }
      }
      (void)db->Close();  // may fail too (its final checkpoint)
    }
    fe.fs->Heal();
    // Space freed: the store opens (with the fault env, now healthy, and
    // with the default one), holds every ack, and takes writes again.
    auto db = testing::MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr) << "round " << round;
    auto f = db->Get("f");
    SF_ASSERT_OK(f.status());
    for (int k : acked) {
      ASSERT_TRUE((*f)->MayContain(Key(k)))
          << "acknowledged key " << k << " lost, round " << round << ", "
          << fe.fs->failures() << " injected failures";
    }
    SF_EXPECT_OK((*f)->Add("after"));
    SF_EXPECT_OK(db->Checkpoint("f").status());
    SF_EXPECT_OK(db->Close());
  }
}

// Within one process: after the disk filled, writes fail with a clear
// error (IOError naming "No space"), and once space is freed the same
// Database takes writes again (RocksDB's background error is resumed).
TEST_P(DiskFullTest, SameDatabaseWorksAgainOnceSpaceIsFreed) {
  const Param p = GetParam();
  for (FaultFs::Fault fault :
       {FaultFs::Fault::kNoSpace, FaultFs::Fault::kIoError}) {
    TempDir dir;
    FaultEnv fe;
    EnvScope scope(fe);
    auto db = testing::MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto f = db->Create("f", Spec(p.type, 200'000, 4, p.durability));
    SF_ASSERT_OK(f.status());
    SF_ASSERT_OK((*f)->Add("before"));
    fe.fs->SetBudget(0, fault);
    Status s = (*f)->Add("full");
    if (s.ok()) s = db->Checkpoint("f").status();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
    if (fault == FaultFs::Fault::kNoSpace) {
      EXPECT_NE(s.ToString().find("disk is full"), std::string::npos)
          << s.ToString();
    }
    // The disk stays bad a while: RocksDB's recovery thread retries and
    // logs each failure.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    fe.fs->Heal();
    // A full disk: RocksDB recovers by itself (its SstFileManager polls for
    // space, then flushes) and the same Database takes writes again. An
    // EIO is a fatal background error in RocksDB 7.8 (DB::Resume returns
    // it): that Database keeps failing writes, cleanly, until reopened.
    if (fault == FaultFs::Fault::kNoSpace) {
      const auto t0 = std::chrono::steady_clock::now();
      Status healed;
      do {
        healed = (*f)->Add("healed");
        if (!healed.ok()) {
          // A failed journal write stops the filter until a checkpoint
          // heals it (engine/internal/filter_log.h L5); the background
          // checkpointer or, here, an explicit one.
          (void)db->Checkpoint("f");
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      } while (!healed.ok() && std::chrono::steady_clock::now() - t0 <
                                   std::chrono::seconds(30));
      SF_ASSERT_OK(healed);
      SF_EXPECT_OK(db->Checkpoint("f").status());
      SF_EXPECT_OK(db->Close());
    } else {
      EXPECT_FALSE((*f)->Add("still failing").ok());
      (void)db->Close();
      auto reopened = testing::MustOpen(Options(dir.db()));
      ASSERT_NE(reopened, nullptr);
      auto g = reopened->Get("f");
      SF_ASSERT_OK(g.status());
      SF_ASSERT_OK((*g)->Add("healed"));
      SF_EXPECT_OK(reopened->Close());
    }
    auto again = testing::MustOpen(Options(dir.db()));
    ASSERT_NE(again, nullptr);
    auto g = again->Get("f");
    SF_ASSERT_OK(g.status());
    EXPECT_TRUE((*g)->MayContain("before"));
    EXPECT_TRUE((*g)->MayContain("healed"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndModes, DiskFullTest,
    ::testing::Values(Param{FilterType::kBloom, Durability::kJournal},
                      Param{FilterType::kCountingBloom, Durability::kJournal},
                      Param{FilterType::kCuckoo, Durability::kJournal},
                      Param{FilterType::kBloom, Durability::kSync},
                      Param{FilterType::kCuckoo, Durability::kSync}));

class PowerLossTest : public ::testing::TestWithParam<FilterType> {};

// Durability sync: every op acknowledged before the power went off is
// there afterwards.
TEST_P(PowerLossTest, SyncKeepsEveryAcknowledgedOp) {
  std::mt19937_64 rng(static_cast<uint64_t>(GetParam()) + 100);
  for (int round = 0; round < 4; ++round) {
    TempDir dir;
    FaultEnv fe;
    int acked = 0;
    {
      EnvScope scope(fe);
      DatabaseOptions o = Options(dir.db());
      o.checkpoint_on_close = false;
      auto db = testing::MustOpen(o);
      ASSERT_NE(db, nullptr);
      auto f = db->Create("f", Spec(GetParam(), 100'000, 4, Durability::kSync));
      SF_ASSERT_OK(f.status());
      const int off_at = 50 + static_cast<int>(rng() % 300);
      for (int i = 0; i < off_at + 50; ++i) {
        if (i == off_at) fe.fs->PowerOff();
        Status s = (*f)->Add(Key(i));
        ASSERT_TRUE(s.ok()) << s.ToString();
        if (i < off_at) acked = i + 1;
        if (i == off_at / 2) SF_ASSERT_OK(db->Checkpoint("f").status());
      }
      (void)db->Close();
    }
    fe.fs->DropUnsyncedData();
    auto db = testing::MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr) << "round " << round;
    auto f = db->Get("f");
    SF_ASSERT_OK(f.status());
    for (int i = 0; i < acked; ++i) {
      ASSERT_TRUE((*f)->MayContain(Key(i))) << "acked key " << i << " lost";
    }
  }
}

// Durability journal: what survives is the last checkpoint plus a prefix
// of the later batches (each batch is one WAL record): no gap.
TEST_P(PowerLossTest, JournalKeepsAPrefix) {
  std::mt19937_64 rng(static_cast<uint64_t>(GetParam()) + 200);
  constexpr int kBatch = 64;
  for (int round = 0; round < 4; ++round) {
    TempDir dir;
    FaultEnv fe;
    int batches = 0;
    {
      EnvScope scope(fe);
      DatabaseOptions o = Options(dir.db());
      o.checkpoint_on_close = false;
      auto db = testing::MustOpen(o);
      ASSERT_NE(db, nullptr);
      FilterSpec spec = Spec(GetParam(), 200'000, 4, Durability::kJournal);
      spec.fpp = 1e-5;
      auto f = db->Create("f", spec);
      SF_ASSERT_OK(f.status());
      const int off_at = 20 + static_cast<int>(rng() % 60);
      const int checkpoint_at = static_cast<int>(rng() % off_at);
      for (int b = 0; b < off_at; ++b) {
        std::vector<std::string> keys;
        for (int i = 0; i < kBatch; ++i) keys.push_back(Key(b * kBatch + i));
        std::vector<std::string_view> views(keys.begin(), keys.end());
        SF_ASSERT_OK((*f)->AddKeys(views));
        if (b == checkpoint_at) SF_ASSERT_OK(db->Checkpoint("f").status());
      }
      batches = off_at;
      fe.fs->PowerOff();
      (void)db->Close();
    }
    fe.fs->DropUnsyncedData();
    auto db = testing::MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr) << "round " << round;
    auto f = db->Get("f");
    SF_ASSERT_OK(f.status());
    bool gap = false;
    for (int b = 0; b < batches; ++b) {
      int present = 0;
      for (int i = 0; i < kBatch; ++i) {
        present += (*f)->MayContain(Key(b * kBatch + i)) ? 1 : 0;
      }
      if (!gap && present == kBatch) continue;
      if (!gap) {
        gap = true;  // the first batch the power loss cost: later ones too
        EXPECT_LE(present, 2) << "batch " << b << " half there";
        continue;
      }
      EXPECT_LE(present, 2) << "batch " << b << " survived after a lost one";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PowerLossTest,
                         shardfilter::testing::AllFilterTypes());

}  // namespace
}  // namespace shardfilter
