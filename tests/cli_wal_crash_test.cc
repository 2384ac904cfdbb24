// Damage inside RocksDB's write-ahead log is detected, never silently
// discarded; a torn tail (what a power loss leaves) still opens, with a
// prefix of the acknowledged writes.
//
// A child runs `add --ack` with keys only in the WAL (no checkpoint) and is
// SIGKILLed after its last ack; then copies of the store are damaged: one
// bit flipped in the middle of the live log (open: Corruption, exit 3;
// `verify`: the problem, exit 1), or the log cut inside its last record
// (opens; the earlier batches are all there: a prefix, no gap).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_child_util.h"

namespace shardfilter::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kBatch = 4096;  // the CLI's batch: one WAL record each
constexpr uint64_t kBatches = 4;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f),
                     std::istreambuf_iterator<char>());
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

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

class WalDamageTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/shardfilter_wal_crash.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    base_ = dir_ + "/base";
    std::string out;
    ASSERT_EQ(
        RunCliChild({"--db", base_, "create", "f", "--type", GetParam(),
                     "--capacity", "100000", "--fpp", "0.0001", "--shards", "4",
                     // Retained hashes keep the journal in RocksDB's WAL (the
                     // memory-mapped filter journal has its own damage tests).
                     "--retain-hashes"},
                    "", &out),
        0);
    const uint64_t acked =
        AddAndKill(base_, "f", KeyLines(0, kBatch * kBatches),
                   kBatch * kBatches, {"--durability", "journal"});
    ASSERT_EQ(acked, kBatch * kBatches);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A copy of the killed store.
  std::string Copy(const std::string& name) {
    const std::string to = dir_ + "/" + name;
    fs::copy(base_, to, fs::copy_options::recursive);
    return to;
  }
  std::string dir_, base_;
};

TEST_P(WalDamageTest, UndamagedLogHoldsEveryAck) {
  std::string out;
  ASSERT_EQ(RunCliChild({"--db", Copy("whole"), "exists", "f"},
                        KeyLines(0, kBatch * kBatches), &out),
            0);
  EXPECT_EQ(out.find('0'), std::string::npos);
}

TEST_P(WalDamageTest, FlippedBitInsideTheLogIsCorruption) {
  const std::string db = Copy("flipped");
  const std::string log = LiveLog(db);
  std::string bytes = ReadAll(log);
  ASSERT_GT(bytes.size(), kBatch * 8 * 2);
  bytes[bytes.size() / 2] ^= 0x10;
  WriteAll(log, bytes);
  std::string out, err;
  // Before: exists printed 0 for almost every key with exit 0.
  EXPECT_EQ(
      RunCliChild({"--db", db, "exists", "f"}, KeyLines(0, 10), &out, &err), 3)
      << out;
  EXPECT_NE(err.find("Corruption"), std::string::npos) << err;
  EXPECT_NE(err.find("write-ahead log"), std::string::npos) << err;
  // Before: verify said "problems 0", exit 0.
  EXPECT_EQ(RunCliChild({"--db", db, "verify"}, "", &out, &err), 1) << err;
  EXPECT_NE(out.find("problem: Corruption"), std::string::npos) << out;
  // A writable open refuses too: nothing is discarded.
  EXPECT_EQ(RunCliChild({"--db", db, "add", "f", "x"}, "", &out, &err), 3);
  EXPECT_EQ(ReadAll(log), bytes) << "the damaged log was changed";
}

TEST_P(WalDamageTest, TornTailOpensWithAPrefix) {
  const std::string db = Copy("torn");
  const std::string log = LiveLog(db);
  std::string bytes = ReadAll(log);
  // Cut inside the last record (the last batch's write).
  bytes.resize(bytes.size() - 100);
  WriteAll(log, bytes);
  std::string out, err;
  ASSERT_EQ(RunCliChild({"--db", db, "exists", "f"},
                        KeyLines(0, kBatch * (kBatches - 1)), &out, &err),
            0)
      << err;
  EXPECT_EQ(out.find('0'), std::string::npos) << "a gap before the torn tail";
  EXPECT_EQ(RunCliChild({"--db", db, "verify"}, "", &out, &err), 0) << out;
  // And the store is writable again.
  EXPECT_EQ(RunCliChild({"--db", db, "add", "f", "again"}, "", &out, &err), 0)
      << err;
}

INSTANTIATE_TEST_SUITE_P(Types, WalDamageTest,
                         ::testing::Values("bloom", "counting", "cuckoo"));

}  // namespace
}  // namespace shardfilter::testing
