// `shardfilter cluster` against a real Redis Cluster: three redis-server
// masters with shardfilter.so on loopback ports (tests/redis_cluster.h).
// A multi-part filter that lost a part — deleted, expired alone, or flushed
// with its node — answers errors naming the part, never 0 for the items
// the part held; "not found" is only for a filter none of whose parts
// exists. ctest label "module": skipped where redis-server or the module
// is missing, a failure then when SF_REQUIRE_CLIENTS is set (as the module
// suite, tests/module/run_module_test.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "redis_cluster.h"
#include "shardfilter/engine/multi_part.h"

namespace shardfilter::testing {
namespace {

class CliClusterRedisTest : public CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    const std::string missing = RedisCluster::Missing();
    if (!missing.empty()) {
      if (std::getenv("SF_REQUIRE_CLIENTS") != nullptr) FAIL() << missing;
      GTEST_SKIP() << missing;
    }
    cluster_ = std::make_unique<RedisCluster>();
    Status s = cluster_->Start(dir_, 3);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    cluster_.reset();  // stops the servers before their directories go
    CliDirTest::TearDown();
  }
  CliRun Cluster(std::vector<std::string> args, const std::string& in = "",
                 int parts = 4) {
    args.insert(args.begin(), "cluster");
    args.insert(args.end(), {"--node", cluster_->Address(0), "--parts",
                             std::to_string(parts)});
    return Run(args, in);
  }
  static std::string Part(const std::string& name, uint32_t i,
                          uint32_t parts = 4) {
    return MultiPartFilter::Make(name, parts)->PartKey(i);
  }
  // A command on the master holding key.
  resp::Reply On(const std::string& key, std::vector<std::string> args) {
    int node = cluster_->NodeOf(key);
    EXPECT_GE(node, 0) << key;
    Result<resp::Reply> r = cluster_->Command(node < 0 ? 0 : node, args);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : resp::Reply{};
  }
  static std::string Keys(int from, int to) {
    std::string s;
    for (int i = from; i < to; ++i) s += "k" + std::to_string(i) + "\n";
    return s;
  }
  static int Zeros(const std::string& out) {
    int n = 0;
    for (size_t at = 0; at + 1 < out.size(); at += 2) n += out[at] == '0';
    return n;
  }
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  // A `parts`-part Bloom filter `name` holding k0..k(n-1).
  void Make(const std::string& name, int n, int parts = 4) {
    CliRun r = Cluster(
        {"create", name, "--type", "bloom", "--capacity", std::to_string(n)},
        "", parts);
    ASSERT_EQ(r.code, 0) << r.err;
    r = Cluster({"add", name, "--quiet"}, Keys(0, n), parts);
    ASSERT_EQ(r.code, 0) << r.err;
    r = Cluster({"exists", name}, Keys(0, n), parts);
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_EQ(Zeros(r.out), 0);
  }

  std::unique_ptr<RedisCluster> cluster_;
};

// Part 1 of 4 deleted: a quarter of 20,000 present keys would answer 0.
TEST_F(CliClusterRedisTest, DeletedPartIsAnErrorNotZeros) {
  Make("f", 20000);
  ASSERT_EQ(On(Part("f", 1), {"DEL", Part("f", 1)}).integer, 1);
  CliRun r = Cluster({"exists", "f"}, Keys(0, 20000));
  EXPECT_EQ(Zeros(r.out), 0) << "present keys answered 0";
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("part 1 (" + Part("f", 1) + ") is missing"),
            std::string::npos)
      << r.err;
  // A write neither succeeds nor brings the part back empty.
  r = Cluster({"add", "f", "k1", "k2", "k3", "new"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("is missing"), std::string::npos) << r.err;
  EXPECT_EQ(On(Part("f", 1), {"EXISTS", Part("f", 1)}).integer, 0);
  r = Cluster({"create", "f", "--type", "bloom", "--capacity", "20000"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(On(Part("f", 1), {"EXISTS", Part("f", 1)}).integer, 0);
  r = Cluster({"info", "f"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("is missing"), std::string::npos) << r.err;
}

// One part expired alone (its own PEXPIRE): damage, not absence.
TEST_F(CliClusterRedisTest, PartExpiredAloneIsDamage) {
  Make("f", 2000);
  const std::string p2 = Part("f", 2);
  ASSERT_EQ(On(p2, {"PEXPIRE", p2, "1"}).integer, 1);
  ASSERT_TRUE(RedisCluster::WaitFor(
                  [&] {
                    return On(p2, {"EXISTS", p2}).integer == 0;
                  },
                  "part 2 to expire")
                  .ok());
  CliRun r = Cluster({"exists", "f"}, Keys(0, 2000));
  EXPECT_EQ(Zeros(r.out), 0) << "present keys answered 0";
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("part 2 (" + p2 + ") is missing"), std::string::npos)
      << r.err;
  // Setting a deadline on what is left is refused, and changes nothing.
  r = Cluster({"expire", "f", "600"});
  EXPECT_EQ(r.code, 3) << r.err;
  for (uint32_t i : {0u, 1u, 3u}) {
    EXPECT_EQ(On(Part("f", i), {"PEXPIRETIME", Part("f", i)}).integer, -1);
  }
}

// FLUSHALL on a master holding some of an 8-part filter's parts (not the
// first or last, which a check of only those would notice): the parts it
// held are gone, the others are not. Only when no part is left is the
// filter "not found".
TEST_F(CliClusterRedisTest, FlushedNodeIsDamageThenNotFound) {
  Make("f", 8000, 8);
  std::vector<int> node_of;
  for (uint32_t i = 0; i < 8; ++i) {
    node_of.push_back(cluster_->NodeOf(Part("f", i, 8)));
    ASSERT_GE(node_of.back(), 0);
  }
  int node = node_of[0];
  for (uint32_t i = 1; i < 7; ++i) {
    if (node_of[i] != node_of[0] && node_of[i] != node_of[7]) node = node_of[i];
  }
  uint32_t first = 0;  // the first part on `node`
  while (node_of[first] != node) ++first;
  int elsewhere = 0;
  for (int n : node_of) elsewhere += n != node;
  ASSERT_GT(elsewhere, 0) << "every part on one node: pick another name";
  ASSERT_TRUE(cluster_->Command(node, {"FLUSHALL"}).ok());
  CliRun r = Cluster({"exists", "f"}, Keys(0, 8000), 8);
  EXPECT_EQ(Zeros(r.out), 0) << "present keys answered 0";
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("part " + std::to_string(first) + " (" +
                       Part("f", first, 8) + ")"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  EXPECT_EQ(Cluster({"add", "f", "x"}, "", 8).code, 3);
  for (int i = 0; i < cluster_->size(); ++i) {
    ASSERT_TRUE(cluster_->Command(i, {"FLUSHALL"}).ok());
  }
  r = Cluster({"exists", "f"}, Keys(0, 10), 8);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
}

// A part deleted and made again with other parameters is not a part.
TEST_F(CliClusterRedisTest, PartRecreatedWithOtherParametersIsDamage) {
  Make("f", 2000);
  const std::string p3 = Part("f", 3);
  ASSERT_EQ(On(p3, {"DEL", p3}).integer, 1);
  ASSERT_EQ(On(p3, {"SF.CREATE", p3, "bloom", "100"}).str, "OK");
  CliRun r = Cluster({"exists", "f"}, Keys(0, 2000));
  EXPECT_EQ(Zeros(r.out), 0) << "present keys answered 0";
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("part 3 (" + p3 + ") differs"), std::string::npos)
      << r.err;
}

// expire / persist set one deadline on every part, and take it away.
TEST_F(CliClusterRedisTest, ExpireAndPersistEveryPart) {
  Make("f", 2000);
  const int64_t before = NowMs();
  CliRun r = Cluster({"expire", "f", "3600"});
  ASSERT_EQ(r.code, 0) << r.err;
  const int64_t deadline =
      On(Part("f", 0), {"PEXPIRETIME", Part("f", 0)}).integer;
  EXPECT_GE(deadline, before + 3600 * 1000);
  EXPECT_LE(deadline, NowMs() + 3600 * 1000);
  for (uint32_t i = 1; i < 4; ++i) {
    EXPECT_EQ(On(Part("f", i), {"PEXPIRETIME", Part("f", i)}).integer, deadline)
        << i;
  }
  r = Cluster({"info", "f"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("expires: " + std::to_string(deadline)),
            std::string::npos)
      << r.out;
  r = Cluster({"persist", "f"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(On(Part("f", i), {"PEXPIRETIME", Part("f", i)}).integer, -1);
  }
  r = Cluster({"exists", "f"}, Keys(0, 2000));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Zeros(r.out), 0);
}

}  // namespace
}  // namespace shardfilter::testing
