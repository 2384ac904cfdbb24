// A full disk never aborts the CLI, on a real full disk: a 30 MB tmpfs
// (needs root to mount; skipped otherwise). `add --durability journal
// --ack` until the disk fills exits 3 with "the disk is full", never 134
// (RocksDB's own info-log writer asserts on a failed write, reached from
// SstFileManagerImpl::ClearError: persistence/info_log.h); every
// acknowledged key is present, `checkpoint` and `import` on the full disk
// exit 3 (not 134), and once the tmpfs grows the store takes writes
// again.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_child_util.h"

namespace shardfilter::testing {
namespace {

namespace fs = std::filesystem;

class DiskFullCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/shardfilter_disk_full.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=30m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs (not root?)";
    }
    mounted_ = true;
    db_ = dir_ + "/db";
  }
  void TearDown() override {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_, db_;
  bool mounted_ = false;
};

TEST_F(DiskFullCliTest, FullDiskIsExit3AndLosesNoAck) {
  std::string out, err;
  // Retained hashes keep the journal in RocksDB (its WAL and info log are
  // what filled the disk); a filter journal segment that cannot be made is
  // filter_journal_test's NoRoomForTheJournalChangesNothing.
  ASSERT_EQ(
      RunCliChild({"--db", db_, "create", "f", "--type", "cuckoo", "--capacity",
                   "10M", "--fpp", "0.001", "--retain-hashes"},
                  "", &out, &err),
      0)
      << err;
  constexpr uint64_t kKeys = 3'000'000;
  const int code = RunCliChild(
      {"--db", db_, "add", "f", "--durability", "journal", "--ack", "--quiet"},
      KeyLines(0, kKeys), &out, &err);
  EXPECT_EQ(code, 3) << err;  // before: 134 (abort)
  EXPECT_NE(err.find("disk is full"), std::string::npos) << err;
  uint64_t acked = 0;
  for (size_t at = out.rfind("ack "); at != std::string::npos;) {
    std::sscanf(out.c_str() + at, "ack %" SCNu64, &acked);
    break;
  }
  ASSERT_GT(acked, 0u);
  // Read-only commands work on the full disk and see every ack.
  ASSERT_EQ(
      RunCliChild({"--db", db_, "exists", "f"}, KeyLines(0, acked), &out, &err),
      0)
      << err;
  EXPECT_EQ(out.find('0'), std::string::npos) << "an acknowledged key lost";
  // Writers on the full disk fail cleanly.
  for (const std::vector<std::string>& c :
       {std::vector<std::string>{"checkpoint"}, {"import", "f"}}) {
    std::vector<std::string> args = {"--db", db_};
    args.insert(args.end(), c.begin(), c.end());
    const int rc =
        RunCliChild(args, KeyLines(kKeys, kKeys + 200'000), &out, &err);
    EXPECT_TRUE(rc == 0 || rc == 3) << c[0] << " exit " << rc << ": " << err;
  }
  // Space freed: the store opens for writing and takes writes.
  ASSERT_EQ(mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, "size=200m"), 0);
  EXPECT_EQ(RunCliChild({"--db", db_, "add", "f", "again"}, "", &out, &err), 0)
      << err;
  EXPECT_EQ(RunCliChild({"--db", db_, "checkpoint"}, "", &out, &err), 0) << err;
  ASSERT_EQ(
      RunCliChild({"--db", db_, "exists", "f"}, KeyLines(0, acked), &out, &err),
      0);
  EXPECT_EQ(out.find('0'), std::string::npos);
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 0) << out;
}

}  // namespace
}  // namespace shardfilter::testing
