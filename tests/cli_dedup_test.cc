// `shardfilter dedup`: prints only unseen keys, remembers them across runs,
// keeps sets apart, honours the window, reports statistics, and rejects bad
// flags and oversized keys. Driven in process through RunCli.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "store_test_util.h"
#include "tools/cli/cli.h"

namespace shardfilter::tools {
namespace {

struct DedupRun {
  int code = -1;
  std::string out, err;
};

DedupRun Dedup(const std::string& db, std::vector<std::string> args,
               const std::string& in) {
  std::vector<std::string> all = {"shardfilter", "--db", db, "dedup"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const auto& a : all) argv.push_back(a.c_str());
  std::istringstream input(in);
  std::ostringstream out, err;
  DedupRun r;
  r.code = RunCli(static_cast<int>(argv.size()), argv.data(), input, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(CliDedupTest, PrintsOnlyNewKeysAndRemembersAcrossRuns) {
  testing::TempDir dir;
  DedupRun r = Dedup(dir.db(), {}, "a\nb\na\r\n\nc\n\n");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "a\nb\n\nc\n");  // the empty line is the empty key
  EXPECT_NE(r.err.find("6 keys, 4 new, 2 duplicates"), std::string::npos)
      << r.err;
  r = Dedup(dir.db(), {}, "c\nd\na\n");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "d\n");
  EXPECT_NE(r.err.find("loaded 4 keys"), std::string::npos) << r.err;
  // Another set knows nothing of these.
  r = Dedup(dir.db(), {"other", "--quiet"}, "a\nd\n");
  EXPECT_EQ(r.out, "a\nd\n");
  EXPECT_EQ(r.err, "");
}

TEST(CliDedupTest, ManyKeysAcrossBatches) {
  testing::TempDir dir;
  std::string in, want;
  for (int i = 0; i < 10000; ++i) in += std::to_string(i % 7000) + "\n";
  for (int i = 0; i < 7000; ++i) want += std::to_string(i) + "\n";
  DedupRun r =
      Dedup(dir.db(), {"--expected", "1000", "--durability", "none"}, in);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, want);
  r = Dedup(dir.db(), {"--durability", "sync"}, in);
  EXPECT_EQ(r.out, "");  // none: still survives a clean exit
}

TEST(CliDedupTest, TtlIsFixedAtCreation) {
  testing::TempDir dir;
  DedupRun r = Dedup(dir.db(), {"w", "--ttl", "3600"}, "x\n");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "x\n");
  r = Dedup(dir.db(), {"w"}, "x\n");  // the stored window applies
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");
  r = Dedup(dir.db(), {"w", "--ttl", "60"}, "x\n");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("cannot change"), std::string::npos) << r.err;
}

TEST(CliDedupTest, BadInput) {
  testing::TempDir dir;
  EXPECT_EQ(Dedup(dir.db(), {"--fpp", "2"}, "").code, kExitUsage);
  EXPECT_EQ(Dedup(dir.db(), {"--ttl", "0"}, "").code, kExitUsage);
  EXPECT_EQ(Dedup(dir.db(), {"--durability", "x"}, "").code, kExitUsage);
  EXPECT_EQ(Dedup(dir.db(), {"a", "b"}, "").code, kExitUsage);
  EXPECT_EQ(Dedup(dir.db(), {"--json"}, "").code, kExitUsage);
  DedupRun r = Dedup(dir.db(), {}, "ok\n" + std::string(5000, 'k') + "\n");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.out, "");  // the batch with the oversized key wrote nothing
  r = Dedup(dir.db(), {}, "ok\n");
  EXPECT_EQ(r.out, "ok\n");
  r = Dedup(dir.db(), {"--help"}, "");
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("Usage: shardfilter dedup"), std::string::npos);
}

}  // namespace
}  // namespace shardfilter::tools
