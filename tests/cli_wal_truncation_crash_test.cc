// A RocksDB write-ahead log cut to half its length (docs/design.md, "A
// write-ahead log cut short"). Under durability sync every acknowledged
// write was synced, so no power loss can take it: the dedup set or filter
// that lost some is unavailable with an error naming the lost sequences,
// verify reports it (exit 1), the rest of the store works. Under durability
// journal a torn tail is the allowed prefix: the store opens, and verify
// notes the torn tail (exit 0).
//
// Children run the CLI (tests/cli_child_util.h); the filter's writers are
// SIGKILLed after their last ack, so that no checkpoint at close moves the
// ops out of the log.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_child_util.h"

namespace shardfilter::testing {
namespace {

namespace fs = std::filesystem;

// Three of the CLI's batches of 4,096 keys: a filter's batch is one log
// record, so half the log ends inside the second (an even number of
// records of one size would be cut between two).
constexpr uint64_t kKeys = 3 * 4096;

// The newest *.log of the store.
std::string LiveLog(const std::string& db) {
  std::string best;
  for (const auto& e : fs::directory_iterator(db)) {
    if (e.path().extension() == ".log" && e.path().string() > best) {
      best = e.path().string();
    }
  }
  return best;
}

// Cuts the live log to half its length; returns the length it had.
uint64_t CutLogInHalf(const std::string& db) {
  const std::string log = LiveLog(db);
  EXPECT_FALSE(log.empty()) << "no write-ahead log in " << db;
  const uint64_t size = fs::file_size(log);
  fs::resize_file(log, size / 2);
  return size;
}

class WalTruncationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/shardfilter_wal_cut.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A filter small enough to journal in RocksDB (under 1 MiB), `kKeys`
  // adds acknowledged under `durability`, then the writer killed.
  void FilterInTheLog(const std::string& durability) {
    std::string out;
    ASSERT_EQ(
        RunCliChild({"--db", db_, "create", "f", "--type", "counting",
                     "--capacity", "100000", "--fpp", "0.01", "--shards", "4"},
                    "", &out),
        0)
        << out;
    ASSERT_EQ(AddAndKill(db_, "f", KeyLines(0, kKeys), kKeys,
                         {"--durability", durability}),
              kKeys);
  }
  std::string dir_, db_;
};

TEST_F(WalTruncationTest, SyncDedupSetIsUnavailableAndVerifyNamesTheLoss) {
  std::string out, err;
  ASSERT_EQ(RunCliChild({"--db", db_, "dedup", "s", "--durability", "sync"},
                        KeyLines(0, kKeys), &out, &err),
            0)
      << err;
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), static_cast<long>(kKeys));
  CutLogInHalf(db_);
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 1) << out;
  EXPECT_NE(out.find("problem: Corruption: dedup set \"s\" lost writes "
                     "acknowledged under durability sync"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("sequences "), std::string::npos) << out;
  // The set refuses to answer: it would call the keys it lost new.
  EXPECT_EQ(
      RunCliChild({"--db", db_, "dedup", "s"}, KeyLines(0, kKeys), &out, &err),
      3)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 0)
      << "keys answered as new by a set that lost writes";
  EXPECT_NE(err.find("lost writes acknowledged under durability sync"),
            std::string::npos)
      << err;
  // That open was writable: it recorded the loss, which stays.
  EXPECT_EQ(
      RunCliChild({"--db", db_, "dedup", "s"}, KeyLines(0, 10), &out, &err), 3);
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 1) << out;
  EXPECT_NE(out.find("dedup set \"s\" lost writes"), std::string::npos) << out;
  // One damaged set, not a damaged store (DESIGN.md invariant 6).
  EXPECT_EQ(RunCliChild({"--db", db_, "dedup", "other"}, "a\nb\n", &out, &err),
            0)
      << err;
  EXPECT_EQ(out, "a\nb\n");
}

TEST_F(WalTruncationTest, SyncFilterIsUnavailableAndVerifyNamesTheLoss) {
  FilterInTheLog("sync");
  CutLogInHalf(db_);
  std::string out, err;
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 1) << out;
  EXPECT_NE(out.find("problem: Corruption: filter \"f\" lost writes "
                     "acknowledged under durability sync"),
            std::string::npos)
      << out;
  // An error, never "absent" for the keys it lost (DESIGN.md invariant 9).
  EXPECT_EQ(
      RunCliChild({"--db", db_, "exists", "f"}, KeyLines(0, 10), &out, &err), 3)
      << out;
  EXPECT_NE(err.find("lost writes acknowledged under durability sync"),
            std::string::npos)
      << err;
  EXPECT_EQ(RunCliChild({"--db", db_, "list"}, "", &out, &err), 1) << err;
  EXPECT_NE(err.find("filter \"f\" lost writes"), std::string::npos) << err;
  // A writable open records the loss; the filter stays unavailable, the
  // store takes new filters.
  EXPECT_EQ(RunCliChild({"--db", db_, "create", "g", "--type", "bloom",
                         "--capacity", "1000", "--fpp", "0.01"},
                        "", &out, &err),
            0)
      << err;
  EXPECT_EQ(RunCliChild({"--db", db_, "add", "f", "x"}, "", &out, &err), 3);
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 1) << out;
  // Dropped, the name can hold a new filter.
  EXPECT_EQ(RunCliChild({"--db", db_, "drop", "f"}, "", &out, &err), 0) << err;
  EXPECT_EQ(RunCliChild({"--db", db_, "create", "f", "--type", "bloom",
                         "--capacity", "1000", "--fpp", "0.01"},
                        "", &out, &err),
            0)
      << err;
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 0) << out;
}

TEST_F(WalTruncationTest, JournalTornTailOpensAndVerifyNotesIt) {
  FilterInTheLog("journal");
  CutLogInHalf(db_);
  std::string out, err;
  // The allowed prefix: verify passes and says what it found.
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 0) << out;
  EXPECT_NE(out.find("problems 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("notes 1\nnote: "), std::string::npos) << out;
  EXPECT_NE(out.find("the write-ahead log ends inside a record"),
            std::string::npos)
      << out;
  // It opens, with a prefix of the adds (no gap), and is writable.
  ASSERT_EQ(
      RunCliChild({"--db", db_, "exists", "f"}, KeyLines(0, 100), &out, &err),
      0)
      << err;
  EXPECT_EQ(out.find('0'), std::string::npos) << out;
  EXPECT_EQ(RunCliChild({"--db", db_, "add", "f", "again"}, "", &out, &err), 0)
      << err;
}

}  // namespace
}  // namespace shardfilter::testing
