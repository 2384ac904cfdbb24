// The journal component's Env (persistence/log/env.h): every file
// operation of the memory-mapped logs goes through the store's
// rocksdb::FileSystem, so one fault-injecting file system
// (tests/fault_fs.h) covers RocksDB's files and the journals alike: a
// simulated power loss drops what no sync covered from the write-ahead
// log, the filter journal's segments and the dedup sets' logs at once, and
// a failed or held sync of a segment is the file system's.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fault_fs.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/persistence/test_env.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

namespace fs = std::filesystem;
using persistence::internal::SetStoreEnvForTesting;
using testing::FaultEnv;
using testing::MustOpen;
using testing::Spec;
using testing::TempDir;

using testing::EnvScope;

DatabaseOptions Options(const std::string& path) {
  DatabaseOptions o = testing::Options(path);
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;  // the memory-mapped journal
  return o;
}

// The child's side of PowerLossDropsWhatNoSyncCoveredFromEveryLog: never
// returns. Acknowledges ops into both logs after a synced commit, then the
// power goes off while everything is still open (as a crash leaves it: no
// close flushes or clears a log), and the disk is put back to what the
// syncs covered. Exit 0, or 2 naming what failed.
[[noreturn]] void WriteThenLosePower(const std::string& path,
                                     const DedupOptions& journal) {
  auto check = [](const Status& s, const char* what) {
    if (s.ok()) return;
    std::fprintf(stderr, "child: %s: %s\n", what, s.ToString().c_str());
    _exit(2);
  };
  FaultEnv fe;
  SetStoreEnvForTesting(fe.env.get());
  auto db = Database::Open(Options(path));
  check(db.status(), "open");
  auto f = (*db)->Create(
      "f", Spec(FilterType::kCountingBloom, 100'000, 2, Durability::kJournal));
  check(f.status(), "create");
  for (int i = 0; i < 100; ++i)
    check((*f)->Add("kept" + std::to_string(i)), "add");
  auto set = DedupStore::Open(**db, "s", journal);
  check(set.status(), "dedup open");
  for (int i = 0; i < 50; ++i) {
    check((*set)->InsertIfAbsent("kept" + std::to_string(i)).status(),
          "insert");
  }
  check((*set)->Flush(), "flush");  // into RocksDB (WAL on, unsynced)
  // A synced commit: the filter's checkpoint, and the log before it.
  check((*db)->Checkpoint("f").status(), "checkpoint");
  for (int i = 0; i < 100; ++i)
    check((*f)->Add("lost" + std::to_string(i)), "add");
  for (int i = 0; i < 50; ++i) {
    check((*set)->InsertIfAbsent("lost" + std::to_string(i)).status(),
          "insert");
  }
  // Acknowledged: in both logs' page cache (a kill -9 would keep them).
  fe.fs->PowerOff();
  fe.fs->DropUnsyncedData();
  std::fflush(nullptr);
  _exit(0);
}

// Durability journal keeps what a sync covered and promises no more after
// a power loss: a checkpointed filter and a flushed dedup set keep that
// state; the ops after it, whose records were only in the page cache of
// their memory-mapped logs (a filter's segments, a dedup set's log), are
// gone with the RocksDB writes no sync covered, and the store opens
// without damage. Before, the dedup log was written outside the file
// system the fault injection sees: its records outlived the simulated
// power loss (a real one may drop them).
TEST(JournalEnvTest, PowerLossDropsWhatNoSyncCoveredFromEveryLog) {
  TempDir dir;
  DedupOptions journal;
  journal.durability = Durability::kJournal;
  journal.journal_bytes = 128 << 10;
  journal.expected_keys = 10'000;
  std::fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) WriteThenLosePower(dir.db(), journal);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  persistence::SetBootIdForTesting("after-the-power-loss");
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  auto f = db->Get("f");
  SF_ASSERT_OK(f.status());
  int lost_present = 0;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ((*f)->Count("kept" + std::to_string(i)), 1u) << i;
    lost_present += (*f)->Count("lost" + std::to_string(i)) != 0;
  }
  EXPECT_LE(lost_present, 2) << "segment records no sync covered survived";
  DedupOptions reopen = journal;
  reopen.create_if_missing = false;
  auto set = DedupStore::Open(*db, "s", reopen);
  SF_ASSERT_OK(set.status());
  for (int i = 0; i < 50; ++i) {
    auto kept = (*set)->Contains("kept" + std::to_string(i));
    SF_ASSERT_OK(kept.status());
    EXPECT_TRUE(*kept) << i;
    auto lost = (*set)->Contains("lost" + std::to_string(i));
    SF_ASSERT_OK(lost.status());
    EXPECT_FALSE(*lost) << "dedup log record no sync covered survived: " << i;
  }
  SF_ASSERT_OK((*set)->Close());
  auto report = db->Verify();
  SF_ASSERT_OK(report.status());
  for (const std::string& p : report->problems) ADD_FAILURE() << p;
  persistence::SetBootIdForTesting("");
}

// A segment's fdatasync is the file system's: one that fails there stops
// the filter's writes (engine/internal/filter_log.h L4) with the file
// system's error, and nothing acknowledged before is lost. Before, the
// segments were synced outside the file system (raw fdatasync): the
// injected failure never reached them and the write was acknowledged.
TEST(JournalEnvTest, FailedSegmentSyncIsTheFileSystems) {
  TempDir dir;
  FaultEnv fe;
  {
    EnvScope scope(fe);
    auto db = MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto f = *db->Create(
        "f", Spec(FilterType::kCuckoo, 100'000, 1, Durability::kSync));
    for (int i = 0; i < 20; ++i) SF_ASSERT_OK(f->Add("k" + std::to_string(i)));
    fe.fs->FailSyncs(".sfj");
    const Status failed = f->Add("not-acknowledged");
    EXPECT_EQ(failed.code(), StatusCode::kIOError) << failed.ToString();
    EXPECT_NE(failed.message().find("injected"), std::string::npos)
        << failed.ToString();
    EXPECT_EQ(f->Add("later").code(), StatusCode::kIOError);  // stopped
    fe.fs->FailSyncs("");
    (void)db->Close();
  }
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  auto f = db->Get("f");
  SF_ASSERT_OK(f.status());
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ((*f)->Count("k" + std::to_string(i)), 1u) << i;
  }
  EXPECT_EQ((*f)->Count("not-acknowledged"), 0u);
}

std::string ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The Env's own contract: a mapped file appears under its name whole
// (filled, synced, renamed), reads back through a read-only mapping,
// answers the absent cases as documented, and a removed file's space is
// released without the mapping faulting.
TEST(JournalEnvTest, EnvMakesReadsListsAndRemovesFiles) {
  TempDir dir;
  persistence::Env& env = testing::LogEnv();
  const std::string path = dir.path() + "/a/b/file";
  auto file = env.CreateMapped(
      path, 8192, [](char* p) { std::memcpy(p, "head", 4); },
      persistence::MapOptions());
  SF_ASSERT_OK(file.status());
  ASSERT_EQ((*file)->size(), 8192u);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  std::memcpy((*file)->data() + 4096, "record", 6);
  SF_ASSERT_OK((*file)->Sync());
  const std::string bytes = ReadFile(path);
  ASSERT_EQ(bytes.size(), 8192u);
  EXPECT_EQ(bytes.substr(0, 4), "head");
  EXPECT_EQ(bytes.substr(4096, 6), "record");
  EXPECT_EQ(bytes[5000], '\0');
  auto read = env.OpenReadOnly(path);
  SF_ASSERT_OK(read.status());
  EXPECT_EQ((*read)->bytes(), bytes);
  auto children = env.Children(dir.path() + "/a/b");
  SF_ASSERT_OK(children.status());
  EXPECT_EQ(*children, std::vector<std::string>{"file"});
  // Absent: NotFound to read, nothing to list or remove.
  EXPECT_TRUE(env.OpenReadOnly(path + "-none").status().IsNotFound());
  auto none = env.Children(dir.path() + "/none");
  SF_ASSERT_OK(none.status());
  EXPECT_TRUE(none->empty());
  SF_ASSERT_OK(env.Remove(path + "-none"));
  // Removed while mapped: the space goes, the mapping reads zeros.
  SF_ASSERT_OK(env.Remove(path));
  EXPECT_FALSE(fs::exists(path));
  (*file)->ReleaseSpace();
  EXPECT_EQ((*file)->data()[4096], '\0');
  SF_ASSERT_OK(env.RemoveTree(dir.path() + "/a/b"));
  EXPECT_FALSE(fs::exists(dir.path() + "/a/b"));
  SF_ASSERT_OK(env.RemoveTree(dir.path() + "/a/b"));
}

}  // namespace
}  // namespace shardfilter
