// The CLI's side of issue 14 (resource limits and honest counting): what
// `add` reports for keys already present, copy bounds, the memory budget.
#include <gtest/gtest.h>

#include <string>

#include "cli_test_util.h"
#include "shardfilter/engine/database.h"

namespace shardfilter {
namespace {

class CliLimitsTest : public testing::CliDirTest {
 protected:
  testing::CliRun Sf(std::vector<std::string> args,
                     const std::string& in = "") {
    args.insert(args.begin(), {"--db", Path("db")});
    return Run(args, in);
  }
  static std::string Lines(const std::string& key, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += key + "\n";
    return s;
  }
  static std::string Field(const std::string& info, const std::string& row) {
    size_t at = info.find("\n" + row + " ");
    if (at == std::string::npos) return "";
    at = info.find_first_not_of(' ', at + row.size() + 1);
    return info.substr(at, info.find('\n', at) - at);
  }
};

// Case 1: 3,000 adds of one key into a non-scaling Bloom filter of
// capacity 1,000: before, 1,000 succeeded and 2,000 failed with Full.
TEST_F(CliLimitsTest, BloomRepeatedKeyIsAlreadyPresentNotFull) {
  ASSERT_EQ(Sf({"create", "b", "--type", "bloom", "--capacity", "1000", "--fpp",
                "0.01", "--nonscaling"})
                .code,
            0);
  auto r = Sf({"add", "b"}, Lines("same", 3000));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("3000 keys, 1 added, 0 failed, 2999 already present"),
            std::string::npos)
      << r.err;
  auto info = Sf({"info", "b"});
  EXPECT_EQ(Field(info.out, "items"), "1") << info.out;
}

TEST_F(CliLimitsTest, BloomReAddingAFileKeepsOneLink) {
  ASSERT_EQ(Sf({"create", "s", "--type", "bloom", "--capacity", "10000",
                "--fpp", "0.01"})
                .code,
            0);
  std::string keys;
  for (int i = 0; i < 10000; ++i) keys += std::to_string(i) + "\n";
  for (int round = 0; round < 6; ++round) {
    ASSERT_EQ(Sf({"add", "s", "--quiet"}, keys).code, 0);
  }
  auto info = Sf({"info", "s"});
  EXPECT_EQ(Field(info.out, "current_capacity"), "10000") << info.out;
}

// Case 2: before, 41 copies grew the filter to 6.3M capacity and 64 MiB,
// and 81 copies tried to allocate 51 GB (OOM-killed).
TEST_F(CliLimitsTest, CuckooCopiesAreBoundedAndNeverGrow) {
  ASSERT_EQ(Sf({"create", "cu", "--type", "cuckoo", "--capacity", "100000",
                "--fpp", "0.001"})
                .code,
            0);
  const std::string before = Sf({"info", "cu"}).out;
  auto r = Sf({"add", "cu"}, Lines("same", 81));
  EXPECT_EQ(r.code, 1) << r.err;  // some keys failed
  EXPECT_NE(r.err.find("81 keys, 7 added, 74 failed (Full)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("key #8 'same': Full: the key already holds 7 copies"),
            std::string::npos)
      << r.err;
  const std::string after = Sf({"info", "cu"}).out;
  EXPECT_EQ(Field(after, "current_capacity"), "100000") << after;
  EXPECT_EQ(Field(after, "bytes"), Field(before, "bytes"));
  EXPECT_EQ(Field(after, "items"), "7");
}

// Case 3 at the CLI: a create past the memory budget is refused (exit 3)
// before anything is allocated, and changes nothing.
TEST_F(CliLimitsTest, CreatePastTheMemoryBudgetIsRefused) {
  auto r = Sf({"create", "huge", "--type", "bloom", "--capacity", "1e11",
               "--fpp", "0.01", "--memory-budget", "4G"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("ResourceExhausted: creating filter"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("memory budget of 4294967296 bytes"), std::string::npos)
      << r.err;
  EXPECT_EQ(Sf({"list"}).out, "");
  // With the default budget (half of this machine's memory) too.
  r = Sf({"create", "huge", "--type", "cuckoo", "--capacity", "1e11", "--fpp",
          "0.01"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("ResourceExhausted"), std::string::npos) << r.err;
  r = Sf({"create", "x", "--type", "bloom", "--capacity", "10", "--fpp", "0.01",
          "--memory-budget", "lots"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--memory-budget"), std::string::npos) << r.err;
}

TEST_F(CliLimitsTest, AddStopsGrowingAtTheMemoryBudget) {
  ASSERT_EQ(Sf({"create", "s", "--type", "bloom", "--capacity", "10000",
                "--fpp", "0.01", "--shards", "1"})
                .code,
            0);
  std::string keys;
  for (int i = 0; i < 200000; ++i) keys += std::to_string(i) + "\n";
  auto r = Sf({"add", "s", "--memory-budget", "64k"}, keys);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("ResourceExhausted: growing a shard's chain"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace shardfilter
