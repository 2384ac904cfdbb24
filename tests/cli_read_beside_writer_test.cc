// Read-only commands beside a process that holds the store for writing see
// one consistent state or get Busy naming the holder (DESIGN.md invariant 7;
// docs/design.md "Readers beside a writer"). Every CLI run happens in a
// forked child (tests/cli_child_util.h).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli_child_util.h"

namespace shardfilter::testing {
namespace {

class ReadBesideWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/shardfilter_rw.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/db";
    std::string out;
    ASSERT_EQ(RunCliChild({"--db", db_, "create", "f", "--type", "cuckoo",
                           "--capacity", "100000", "--fpp", "0.0001"},
                          "", &out),
              0);
    ASSERT_EQ(RunCliChild({"--db", db_, "add", "f", "--quiet"},
                          KeyLines(0, 3000), &out),
              0);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Reads lines from the child's stdout until `n` were read.
  static void ReadLines(int fd, int n) {
    int seen = 0;
    char c;
    while (seen < n && read(fd, &c, 1) == 1) seen += c == '\n';
  }
  std::string dir_, db_;
};

TEST_F(ReadBesideWriterTest, ReaderGetsBusyNamingTheWriter) {
  Child writer = SpawnCli({"--db", db_, "add", "f", "--ack", "--quiet"});
  ASSERT_GT(writer.pid, 0);
  WriteAllFd(writer.in, KeyLines(3000, 3000 + 4096));
  ReadLines(writer.out, 1);  // "ack 4096": it holds the store
  std::string out, err;
  // Before: exists opened anyway (and could read the writer's half-done
  // recovery: zeros for present keys, or "IOError ... .log").
  EXPECT_EQ(
      RunCliChild({"--db", db_, "exists", "f"}, KeyLines(0, 3000), &out, &err),
      3);
  EXPECT_NE(err.find("Busy"), std::string::npos) << err;
  EXPECT_NE(err.find("process " + std::to_string(writer.pid)),
            std::string::npos)
      << err;
  EXPECT_EQ(RunCliChild({"--db", db_, "verify"}, "", &out, &err), 3) << err;
  EXPECT_NE(err.find("open for writing"), std::string::npos) << err;
  close(writer.in);
  EXPECT_EQ(WaitChild(writer.pid), 0);
  close(writer.out);
  ASSERT_EQ(RunCliChild({"--db", db_, "exists", "f"}, KeyLines(0, 3000 + 4096),
                        &out, &err),
            0)
      << err;
  EXPECT_EQ(out.find('0'), std::string::npos);
}

TEST_F(ReadBesideWriterTest, WriterWaitsForTheReader) {
  Child reader = SpawnCli({"--db", db_, "exists", "f"});
  ASSERT_GT(reader.pid, 0);
  WriteAllFd(reader.in, KeyLines(0, 4096));
  ReadLines(reader.out, 4096);  // it answered: the store is open
  std::string out, err;
  EXPECT_EQ(RunCliChild({"--db", db_, "add", "f", "x"}, "", &out, &err), 3);
  EXPECT_NE(err.find("another process"), std::string::npos) << err;
  close(reader.in);
  EXPECT_EQ(WaitChild(reader.pid), 0);
  close(reader.out);
  EXPECT_EQ(RunCliChild({"--db", db_, "add", "f", "x"}, "", &out, &err), 0)
      << err;
}

// Opens that race: a writer starts (its open recovers and rewrites files)
// while `exists` runs. Every answer is whole (exit 0, every key present) or
// Busy (exit 3); never a 0 for a present key with exit 0, never IOError.
TEST_F(ReadBesideWriterTest, RacingOpensNeverGiveAPartialState) {
  const std::string present = KeyLines(0, 3000);
  int whole = 0, busy = 0;
  for (int i = 0; i < 30; ++i) {
    Child writer = SpawnCli({"--db", db_, "add", "f", "one-more"});
    close(writer.in);
    std::string out, err;
    const int code =
        RunCliChild({"--db", db_, "exists", "f"}, present, &out, &err);
    WaitChild(writer.pid);
    close(writer.out);
    if (code == 0) {
      ++whole;
      ASSERT_EQ(out.find('0'), std::string::npos) << "a partial state";
      ASSERT_EQ(out.size(), 6000u);
    } else {
      ++busy;
      ASSERT_EQ(code, 3) << err;
      EXPECT_TRUE(err.find("Busy") != std::string::npos ||
                  err.find("another process") != std::string::npos)
          << err;
    }
  }
  std::printf("exists: %d whole answers, %d Busy\n", whole, busy);
}

}  // namespace
}  // namespace shardfilter::testing
