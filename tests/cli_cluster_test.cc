// `shardfilter cluster` (tools/cli_cluster.cc) and its cluster client
// (tools/cluster/) against fake cluster nodes in this process: two loopback
// RESP servers that share one exact item store and answer as Redis Cluster
// masters do, including the redirections of a slot being migrated (ASK),
// one already moved (MOVED, with a stale CLUSTER SLOTS), a connection lost
// mid-batch, and WAIT short of replicas. The real Redis Cluster runs in
// tests/module/module_test.py (test_cluster, test_cluster_failover).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"
#include "tools/commands/key_slot.h"
#include "tools/resp/request_parser.h"

namespace shardfilter::testing {
namespace {

enum class SlotMode { kNormal, kAsk, kMoved };

// What the fake cluster holds and how its special slot behaves.
struct FakeCluster {
  std::mutex mu;
  std::map<std::string, std::set<std::string>> data;
  // Keys that hold something other than a filter (SF.INFO: WRONGTYPE).
  std::set<std::string> not_filters;
  int special_slot = -1;
  SlotMode mode = SlotMode::kNormal;
  int ports[2] = {0, 0};
  int wait_reply = 1;
  std::atomic<int> drop_after{-1};  // node 0 closes after this many commands
  std::atomic<int> served_by_b{0};
  std::atomic<int> asking_served{0};
};

class FakeNode {
 public:
  FakeNode(FakeCluster* c, int index) : c_(c), index_(index) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 16);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    c_->ports[index] = ntohs(a.sin_port);
    ::pipe(stop_);
    thread_ = std::thread([this] { Loop(); });
  }
  ~FakeNode() {
    char b = 0;
    (void)!::write(stop_[1], &b, 1);
    thread_.join();
    for (auto& [fd, conn] : conns_) ::close(fd);
    ::close(listen_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }

 private:
  struct Conn {
    std::string in;
    bool asking = false;
    resp::RequestParser parser;
  };

  std::string Addr(int node) const {
    return "127.0.0.1:" + std::to_string(c_->ports[node]);
  }

  // The reply to one request; false: close the connection instead.
  bool Answer(Conn& conn, std::span<const std::string_view> args,
              std::string* out) {
    std::string cmd(args[0]);
    for (char& ch : cmd) ch = static_cast<char>(std::toupper(ch));
    if (cmd == "CLUSTER") {  // SLOTS: node 0 owns every slot (stale or not)
      *out += "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" +
              std::to_string(c_->ports[0]) + "\r\n";
      return true;
    }
    if (cmd == "ASKING") {
      conn.asking = true;
      *out += "+OK\r\n";
      return true;
    }
    if (cmd == "WAIT") {
      *out += ":" + std::to_string(c_->wait_reply) + "\r\n";
      return true;
    }
    if (index_ == 0 && c_->drop_after.load() >= 0 &&
        c_->drop_after.fetch_sub(1) == 0) {
      return false;
    }
    bool asking = conn.asking;
    conn.asking = false;
    std::string key(args[1]);
    int slot = commands::KeySlot(key);
    if (slot == c_->special_slot && c_->mode != SlotMode::kNormal) {
      if (index_ == 0) {
        *out += std::string(c_->mode == SlotMode::kAsk ? "-ASK " : "-MOVED ") +
                std::to_string(slot) + " " + Addr(1) + "\r\n";
        return true;
      }
      if (c_->mode == SlotMode::kAsk && !asking) {
        *out += "-MOVED " + std::to_string(slot) + " " + Addr(0) + "\r\n";
        return true;
      }
      ++c_->served_by_b;
      if (asking) ++c_->asking_served;
    } else if (index_ == 1) {
      *out += "-MOVED " + std::to_string(slot) + " " + Addr(0) + "\r\n";
      return true;
    }
    std::lock_guard<std::mutex> l(c_->mu);
    auto it = c_->data.find(key);
    if (cmd == "EXISTS") {
      *out += it != c_->data.end() ? ":1\r\n" : ":0\r\n";
    } else if (cmd == "SF.CREATE") {
      if (it != c_->data.end()) {
        *out += "-ERR item exists\r\n";
      } else {
        c_->data[key];
        *out += "+OK\r\n";
      }
    } else if (cmd == "DEL") {
      const bool had = it != c_->data.end();
      if (had) c_->data.erase(it);
      *out += had ? ":1\r\n" : ":0\r\n";
    } else if (cmd == "SF.INFO" && c_->not_filters.count(key) != 0) {
      *out +=
          "-WRONGTYPE Operation against a key holding the wrong kind of "
          "value\r\n";
    } else if (cmd == "SF.INFO") {
      *out += "*4\r\n$5\r\nbytes\r\n:1000\r\n$5\r\nitems\r\n:" +
              std::to_string(it == c_->data.end() ? 0 : it->second.size()) +
              "\r\n";
    } else if (cmd == "SF.MADD" || cmd == "SF.MEXISTS") {
      if (it == c_->data.end()) {
        *out += "-ERR not found\r\n";
        return true;
      }
      *out += "*" + std::to_string(args.size() - 2) + "\r\n";
      for (size_t i = 2; i < args.size(); ++i) {
        std::string item(args[i]);
        bool had = it->second.count(item) != 0;
        if (cmd == "SF.MADD") it->second.insert(item);
        *out += (cmd == "SF.MADD" ? !had : had) ? ":1\r\n" : ":0\r\n";
      }
    } else {
      *out += "-ERR unknown command\r\n";
    }
    return true;
  }

  void Loop() {
    for (;;) {
      std::vector<pollfd> fds = {{stop_[0], POLLIN, 0}, {listen_, POLLIN, 0}};
      for (auto& [fd, conn] : conns_) fds.push_back({fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), -1);
      if (fds[0].revents) return;
      if (fds[1].revents) {
        int fd = ::accept(listen_, nullptr, nullptr);
        if (fd >= 0) conns_[fd] = std::make_unique<Conn>();
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        int fd = fds[i].fd;
        Conn& conn = *conns_[fd];
        char buf[65536];
        ssize_t n = ::read(fd, buf, sizeof buf);
        bool keep = n > 0;
        if (keep) conn.in.append(buf, static_cast<size_t>(n));
        std::string out;
        while (keep && conn.parser.Parse(conn.in, true) ==
                           resp::ParseStatus::kCommand) {
          std::vector<std::string_view> args(conn.parser.args().begin(),
                                             conn.parser.args().end());
          keep = Answer(conn, args, &out);
          size_t used = conn.parser.consumed();
          conn.in.erase(0, used);
          conn.parser.Reset();
        }
        for (size_t at = 0; keep && at < out.size();) {
          ssize_t w = ::write(fd, out.data() + at, out.size() - at);
          if (w <= 0) break;
          at += static_cast<size_t>(w);
        }
        if (!keep) {
          ::close(fd);
          conns_.erase(fd);
        }
      }
    }
  }

  FakeCluster* c_;
  int index_;
  int listen_ = -1;
  int stop_[2] = {-1, -1};
  std::map<int, std::unique_ptr<Conn>> conns_;
  std::thread thread_;
};

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
  for (const auto& [key, items] : cluster_.data) {
    total += items.size();
    EXPECT_GT(items.size(), 150u) << key;  // routing spreads the items
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
  EXPECT_NE(r.err.find("item exists"), std::string::npos) << r.err;
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
  EXPECT_NE(r.err.find("has no 4 parts"), std::string::npos) << r.err;
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
  EXPECT_NE(r.err.find("is not a filter"), std::string::npos) << r.err;
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
  EXPECT_NE(r.err.find("has no 4 parts"), std::string::npos) << r.err;
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

}  // namespace
}  // namespace shardfilter::testing
