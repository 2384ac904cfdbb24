// `shardfilter cluster` (tools/cli/cli_cluster.cc) and its cluster client
// (tools/cluster/) against fake cluster nodes in this process
// (tests/fake_cluster.h): the redirections of a slot being migrated (ASK),
// one already moved (MOVED, with a stale CLUSTER SLOTS), a connection lost
// mid-batch, WAIT short of replicas, and a filter with a part missing,
// foreign or changed. A real Redis Cluster runs in
// tests/cli_cluster_redis_test.cc and tests/module/module_test.py.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "fake_cluster.h"
#include "shardfilter/engine/multi_part.h"
#include "tools/commands/key_slot.h"

namespace shardfilter::testing {
namespace {

class CliClusterTest : public CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    a_ = std::make_unique<FakeNode>(&cluster_, 0);
    b_ = std::make_unique<FakeNode>(&cluster_, 1);
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    CliDirTest::TearDown();
  }
  std::string Node() const {
    return "127.0.0.1:" + std::to_string(cluster_.ports[0]);
  }
  CliRun Cluster(std::vector<std::string> args, const std::string& in = "") {
    args.insert(args.begin(), "cluster");
    args.insert(args.end(), {"--node", Node(), "--parts", "4"});
    return Run(args, in);
  }
  static std::string Keys(int from, int to) {
    std::string s;
    for (int i = from; i < to; ++i) s += "k" + std::to_string(i) + "\n";
    return s;
  }
  static std::string Ones(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "1\n";
    return s;
  }
  // The key of part i of the 4-part filter `name`.
  static std::string Part(const std::string& name, uint32_t i) {
    return MultiPartFilter::Make(name, 4)->PartKey(i);
  }
  bool Has(const std::string& key) {
    std::lock_guard<std::mutex> l(cluster_.mu);
    return cluster_.data.count(key) != 0;
  }
  void Erase(const std::string& key) {
    std::lock_guard<std::mutex> l(cluster_.mu);
    cluster_.data.erase(key);
  }
  static int Count(const std::string& text, const std::string& line) {
    int n = 0;
    for (size_t at = 0; (at = text.find(line, at)) != std::string::npos;) {
      if (at == 0 || text[at - 1] == '\n') ++n;
      at += line.size();
    }
    return n;
  }
  // Creates the 4-part "f" and adds k0..k999.
  void MakeF() {
    ASSERT_EQ(
        Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"}).code,
        0);
    ASSERT_EQ(Cluster({"add", "f"}, Keys(0, 1000)).code, 0);
  }
  // The slot of the part 0 key of filter "f" (4 parts).
  int Part0Slot() {
    std::lock_guard<std::mutex> l(cluster_.mu);
    for (const auto& [key, items] : cluster_.data) {
      if (key.find(".0}") != std::string::npos) return commands::KeySlot(key);
    }
    return -1;
  }

  FakeCluster cluster_;
  std::unique_ptr<FakeNode> a_, b_;
};

TEST_F(CliClusterTest, CreateAddExistsInfo) {
  CliRun r = Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 parts of 250 items"), std::string::npos) << r.out;
  EXPECT_EQ(cluster_.data.size(), 4u);
  r = Cluster({"add", "f"}, Keys(0, 1000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("added 1000 of 1000 keys (1000 new)"), std::string::npos)
      << r.err;
  size_t total = 0;
  for (const auto& [key, k] : cluster_.data) {
    total += k.items.size();
    EXPECT_GT(k.items.size(), 150u) << key;  // routing spreads the items
  }
  EXPECT_EQ(total, 1000u);
  r = Cluster({"exists", "f"}, Keys(0, 1000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, Ones(1000));
  r = Cluster({"exists", "f", "k5", "absent"});
  EXPECT_EQ(r.out, "1\n0\n");
  r = Cluster({"info", "f"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("items: 1000"), std::string::npos) << r.out;
  // Creating again touches nothing.
  r = Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
}

TEST_F(CliClusterTest, FollowsAskDuringAMigration) {
  ASSERT_EQ(
      Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"}).code,
      0);
  cluster_.special_slot = Part0Slot();
  cluster_.mode = SlotMode::kAsk;
  CliRun r = Cluster({"add", "f"}, Keys(0, 2000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(cluster_.asking_served.load(), 0);
  r = Cluster({"exists", "f"}, Keys(0, 2000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, Ones(2000));
}

TEST_F(CliClusterTest, FollowsMovedWithAStaleSlotMap) {
  ASSERT_EQ(
      Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"}).code,
      0);
  cluster_.special_slot = Part0Slot();
  cluster_.mode = SlotMode::kMoved;
  CliRun r = Cluster({"add", "f"}, Keys(0, 2000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(" MOVED"), std::string::npos);
  EXPECT_GT(cluster_.served_by_b.load(), 0);
  EXPECT_EQ(Cluster({"exists", "f"}, Keys(0, 2000)).out, Ones(2000));
}

TEST_F(CliClusterTest, ResendsAfterALostConnection) {
  ASSERT_EQ(
      Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"}).code,
      0);
  cluster_.drop_after = 3;  // node 0 hangs up in the middle of a batch
  CliRun r = Cluster({"add", "f"}, Keys(0, 3000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 reconnects"), std::string::npos) << r.err;
  EXPECT_EQ(Cluster({"exists", "f"}, Keys(0, 3000)).out, Ones(3000));
}

TEST_F(CliClusterTest, WaitShortOfReplicasIsAFailure) {
  ASSERT_EQ(
      Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"}).code,
      0);
  cluster_.wait_reply = 0;
  CliRun r = Cluster({"add", "f", "--wait-replicas", "1"}, Keys(0, 100));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOTREPLICATED WAIT answered 0 of 1"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("100 keys failed"), std::string::npos) << r.err;
  cluster_.wait_reply = 1;
  r = Cluster({"add", "f", "--wait-replicas", "1"}, Keys(0, 100));
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(CliClusterTest, WrongPartsAndMissingFilter) {
  CliRun r = Cluster({"add", "f", "x"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  ASSERT_EQ(Run({"cluster", "create", "f", "--node", Node(), "--parts", "5",
                 "--type", "bloom", "--capacity", "100"})
                .code,
            0);
  r = Cluster({"exists", "f", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("more than 4 parts"), std::string::npos) << r.err;
  EXPECT_EQ(cluster_.data.size(), 5u);  // nothing created or removed
}

TEST_F(CliClusterTest, DropDeletesThePartsOnlyWhenEveryOneIsAFilter) {
  ASSERT_EQ(
      Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"}).code,
      0);
  ASSERT_EQ(
      Cluster({"create", "g", "--type", "bloom", "--capacity", "1000"}).code,
      0);
  // A part's key holding something else: nothing is deleted.
  std::string part2;
  for (const auto& [key, items] : cluster_.data) {
    if (key.find(".2}f") != std::string::npos) part2 = key;
  }
  ASSERT_FALSE(part2.empty());
  cluster_.not_filters.insert(part2);
  CliRun r = Cluster({"drop", "f"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("cannot be read: SF.INFO: WRONGTYPE"), std::string::npos)
      << r.err;
  EXPECT_EQ(cluster_.data.size(), 8u);
  cluster_.not_filters.clear();
  // Wrong --parts: nothing deleted either.
  r = Run({"cluster", "drop", "f", "--node", Node(), "--parts", "3"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(cluster_.data.size(), 8u);
  r = Cluster({"drop", "f"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 of 4 parts deleted"), std::string::npos) << r.out;
  EXPECT_EQ(cluster_.data.size(), 4u);  // g's parts are untouched
  for (const auto& [key, items] : cluster_.data) {
    EXPECT_NE(key.find("}g"), std::string::npos) << key;
  }
  r = Cluster({"drop", "f"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  EXPECT_EQ(
      Run({"cluster", "drop", "f", "extra", "--node", Node(), "--parts", "4"})
          .code,
      2);
}

TEST_F(CliClusterTest, UsageErrors) {
  auto code = [&](std::vector<std::string> args) { return Run(args).code; };
  EXPECT_EQ(code({"cluster", "add", "f", "--parts", "2"}), 2);  // no --node
  EXPECT_EQ(code({"cluster", "add", "f", "--node", Node()}), 2);
  EXPECT_EQ(code({"cluster", "add", "f", "--node", "nohost", "--parts", "2"}),
            2);
  EXPECT_EQ(code({"cluster", "add", "f", "--node", "h:0", "--parts", "2"}), 2);
  EXPECT_EQ(code({"cluster", "add", "f", "--node", Node(), "--parts", "0"}), 2);
  EXPECT_EQ(code({"cluster", "add", "f", "--node", Node(), "--parts", "16385"}),
            2);
  EXPECT_EQ(code({"cluster", "frob", "f", "--node", Node(), "--parts", "2"}),
            2);
  EXPECT_EQ(code({"cluster", "create", "f", "--node", Node(), "--parts", "2"}),
            2);  // no --type / --capacity
  // Nothing listens: a clear error, exit 3.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(fd);
  CliRun r = Run({"cluster", "exists", "f", "x", "--node",
                  "127.0.0.1:" + std::to_string(port), "--parts", "2"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("connecting to 127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_TRUE(cluster_.data.empty());
}

// A deleted part: every command is an error naming it, never 0 answers
// for its items, and nothing recreates it.
TEST_F(CliClusterTest, MissingPartIsAnErrorNotZeros) {
  MakeF();
  Erase(Part("f", 1));
  CliRun r = Cluster({"exists", "f"}, Keys(0, 1000));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(Count(r.out, "0\n"), 0) << "answers for a damaged filter";
  EXPECT_NE(r.err.find("damaged"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("part 1 (" + Part("f", 1) + ") is missing"),
            std::string::npos)
      << r.err;
  r = Cluster({"add", "f"}, Keys(1000, 2000));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("part 1 (" + Part("f", 1) + ") is missing"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Has(Part("f", 1)));
  r = Cluster({"info", "f"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("is missing"), std::string::npos) << r.err;
  r = Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_FALSE(Has(Part("f", 1))) << "create filled in the missing part";
  // drop refuses a damaged filter unless told, then removes what is left.
  r = Cluster({"drop", "f"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(cluster_.data.size(), 3u);
  r = Cluster({"drop", "f", "--damaged"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(cluster_.data.empty());
}

// Part 0 missing: create must not make it again beside the other three.
TEST_F(CliClusterTest, CreateNeverFillsInAMissingPart) {
  MakeF();
  Erase(Part("f", 0));
  CliRun r = Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("already"), std::string::npos) << r.err;
  EXPECT_FALSE(Has(Part("f", 0)));
  EXPECT_EQ(cluster_.data.size(), 3u);
}

// One part cannot be created: the parts made are removed again, so no
// filter with a missing part is left behind.
TEST_F(CliClusterTest, CreateThatFailsLeavesNoPartBehind) {
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    cluster_.refuse_create = Part("f", 2);
  }
  CliRun r = Cluster({"create", "f", "--type", "bloom", "--capacity", "1000"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("creating part 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 of the 3 parts this command made were removed"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(cluster_.data.empty());
}

// A create that replicas did not acknowledge is a failed create, and the
// parts it made on the masters are removed again.
TEST_F(CliClusterTest, CreateShortOfReplicasLeavesNoPartBehind) {
  cluster_.wait_reply = 0;
  CliRun r = Cluster({"create", "f", "--type", "bloom", "--capacity", "1000",
                      "--wait-replicas", "1"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("NOTREPLICATED"), std::string::npos) << r.err;
  EXPECT_TRUE(cluster_.data.empty());
}

// "not found" only when no part exists.
TEST_F(CliClusterTest, NotFoundOnlyWhenNoPartExists) {
  for (const char* cmd : {"exists", "add", "info", "drop", "persist"}) {
    CliRun r = Cluster({cmd, "nothing"}, "x\n");
    EXPECT_EQ(r.code, 3) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("not found"), std::string::npos) << cmd << r.err;
  }
  EXPECT_TRUE(cluster_.data.empty());
}

// A part lost between the check and the query: its round is an error.
TEST_F(CliClusterTest, PartLostDuringARunIsAnError) {
  MakeF();
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    cluster_.vanish_before_read = Part("f", 2);
  }
  CliRun r = Cluster({"exists", "f"}, Keys(0, 1000));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(Count(r.out, "0\n"), 0);
  EXPECT_NE(r.err.find("part 2 (" + Part("f", 2) + ") is missing"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Has(Part("f", 2)));
}

// A part re-created with other parameters is not the filter's part.
TEST_F(CliClusterTest, PartWithOtherParametersIsDamage) {
  MakeF();
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    cluster_.data[Part("f", 3)] = FakeKey{{}, "bloom", "100", -1};
  }
  for (const char* cmd : {"exists", "add", "info", "drop", "expire"}) {
    std::vector<std::string> args = {cmd, "f"};
    if (std::string(cmd) == "expire") args.push_back("60");
    CliRun r = Cluster(args, "k1\n");
    EXPECT_EQ(r.code, 3) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("part 3 (" + Part("f", 3) + ") differs"),
              std::string::npos)
        << cmd << ": " << r.err;
  }
  EXPECT_EQ(cluster_.data.size(), 4u);
}

// A key of a part's name holding something else: an error, never 0s.
TEST_F(CliClusterTest, PartHoldingSomethingElseIsAnError) {
  MakeF();
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    cluster_.not_filters.insert(Part("f", 1));
  }
  CliRun r = Cluster({"exists", "f"}, Keys(0, 1000));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("WRONGTYPE"), std::string::npos) << r.err;
}

// expire / persist set every part's deadline, or none when one is missing;
// parts with different deadlines are reported.
TEST_F(CliClusterTest, ExpireAndPersistEveryPart) {
  MakeF();
  CliRun r = Cluster({"expire", "f", "3600"});
  ASSERT_EQ(r.code, 0) << r.err;
  int64_t deadline = -1;
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    deadline = cluster_.data[Part("f", 0)].deadline_ms;
    for (const auto& [key, k] : cluster_.data) {
      EXPECT_EQ(k.deadline_ms, deadline) << key;
    }
  }
  EXPECT_GT(deadline, 0);
  r = Cluster({"info", "f"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("expires: " + std::to_string(deadline)),
            std::string::npos)
      << r.out;
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    cluster_.data[Part("f", 2)].deadline_ms = -1;  // PERSIST on one part
  }
  r = Cluster({"info", "f"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("deadlines of 'f''s parts differ"), std::string::npos)
      << r.err;
  r = Cluster({"persist", "f"});
  ASSERT_EQ(r.code, 0) << r.err;
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    for (const auto& [key, k] : cluster_.data) {
      EXPECT_EQ(k.deadline_ms, -1) << key;
    }
  }
  r = Cluster({"info", "f"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("expires: never"), std::string::npos) << r.out;
  // One part gone: no deadline is set on the others.
  Erase(Part("f", 1));
  r = Cluster({"expire", "f", "60"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("is missing"), std::string::npos) << r.err;
  {
    std::lock_guard<std::mutex> l(cluster_.mu);
    for (const auto& [key, k] : cluster_.data) {
      EXPECT_EQ(k.deadline_ms, -1) << key;
    }
  }
  EXPECT_EQ(Cluster({"expire", "f", "0"}).code, 2);
  EXPECT_EQ(Cluster({"expire", "f"}).code, 2);
  EXPECT_EQ(Cluster({"persist", "f", "9"}).code, 2);
}

}  // namespace
}  // namespace shardfilter::testing
