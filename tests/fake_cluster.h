// Fake Redis Cluster masters for tests/cli_cluster_test.cc: two loopback
// RESP servers in this process that share one exact item store and answer
// as Redis Cluster masters running shardfilter.so do, for the commands
// `shardfilter cluster` sends. Node 0 owns every slot; a chosen slot can
// answer as one being migrated to node 1 (ASK) or already moved there
// (MOVED, with a stale CLUSTER SLOTS). Faults on demand: a connection lost
// mid-batch, WAIT short of replicas, a key of a part's name holding
// something else, a key that vanishes just before it is read, a create
// refused for lack of memory.
//
// What the module does and a test relies on: SF.MEXISTS of a missing key
// answers 0 for every item (as RedisBloom's BF.MEXISTS); SF.MADD and
// SF.INFO of a missing key answer "ERR not found"; TYPE answers "none" for
// a missing key; PEXPIRETIME answers -2 (missing) or -1 (no deadline).
#ifndef SHARDFILTER_TESTS_FAKE_CLUSTER_H_
#define SHARDFILTER_TESTS_FAKE_CLUSTER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tools/commands/key_slot.h"
#include "tools/resp/request_parser.h"

namespace shardfilter::testing {

enum class SlotMode { kNormal, kAsk, kMoved };

// One key of the fake cluster: a filter's items, its SF.CREATE spec
// (type and capacity) and its deadline (-1: none).
struct FakeKey {
  std::set<std::string> items;
  std::string type = "bloom";
  std::string capacity = "100";
  int64_t deadline_ms = -1;
};

// What the fake cluster holds and how its special slot behaves.
struct FakeCluster {
  std::mutex mu;
  std::map<std::string, FakeKey> data;
  // Keys that hold something other than a filter (TYPE "string";
  // SF.* commands: WRONGTYPE).
  std::set<std::string> not_filters;
  // Erased just before the first SF.MADD / SF.MEXISTS that reads it.
  std::string vanish_before_read;
  // SF.CREATE of this key answers an out-of-memory error.
  std::string refuse_create;
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
    (void)!::pipe(stop_);
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
  static std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
  static std::string Bulk(std::string_view s) {
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
  }

  // The reply of a command on a key, under c_->mu.
  void Keyed(const std::string& cmd, std::span<const std::string_view> args,
             std::string* out) {
    std::string key(args[1]);
    if ((cmd == "SF.MADD" || cmd == "SF.MEXISTS") &&
        key == c_->vanish_before_read) {
      c_->data.erase(key);
      c_->vanish_before_read.clear();
    }
    auto it = c_->data.find(key);
    const bool exists = it != c_->data.end();
    const bool filter = exists && c_->not_filters.count(key) == 0;
    if (cmd == "EXISTS") {
      *out += Int(exists ? 1 : 0);
    } else if (cmd == "TYPE") {
      *out += !exists ? "+none\r\n" : filter ? "+shardfltr\r\n" : "+string\r\n";
    } else if (cmd == "PEXPIRETIME") {
      *out += Int(exists ? it->second.deadline_ms : -2);
    } else if (cmd == "PEXPIREAT" || cmd == "PERSIST") {
      if (!exists) {
        *out += Int(0);
      } else if (cmd == "PERSIST") {
        *out += Int(it->second.deadline_ms >= 0 ? 1 : 0);
        it->second.deadline_ms = -1;
      } else {
        it->second.deadline_ms = std::stoll(std::string(args[2]));
        *out += Int(1);
      }
    } else if (cmd == "DEL") {
      if (exists) c_->data.erase(it);
      *out += Int(exists ? 1 : 0);
    } else if (cmd == "SF.CREATE") {
      if (key == c_->refuse_create) {
        *out += "-ERR Insufficient memory: over maxmemory\r\n";
      } else if (exists) {
        *out += "-ERR item exists\r\n";
      } else {
        FakeKey& k = c_->data[key];
        k.type = std::string(args[2]);
        k.capacity = std::string(args[3]);
        *out += "+OK\r\n";
      }
    } else if (exists && !filter) {
      *out +=
          "-WRONGTYPE Operation against a key holding the wrong kind of "
          "value\r\n";
    } else if (cmd == "SF.INFO") {
      if (!exists) {
        *out += "-ERR not found\r\n";
        return;
      }
      *out += "*10\r\n+type\r\n" + Bulk(it->second.type) +
              "+declared_capacity\r\n" + Int(std::stoll(it->second.capacity)) +
              "+error_rate\r\n" + Bulk("0.01") + "+bytes\r\n" + Int(1000) +
              "+items\r\n" + Int(static_cast<int64_t>(it->second.items.size()));
    } else if (cmd == "SF.MADD" && !exists) {
      *out += "-ERR not found\r\n";
    } else if (cmd == "SF.MADD" || cmd == "SF.MEXISTS") {
      *out += "*" + std::to_string(args.size() - 2) + "\r\n";
      for (size_t i = 2; i < args.size(); ++i) {
        std::string item(args[i]);
        // A missing key: SF.MEXISTS answers 0s, as the module does.
        bool had = exists && it->second.items.count(item) != 0;
        if (cmd == "SF.MADD") it->second.items.insert(item);
        *out += Int((cmd == "SF.MADD" ? !had : had) ? 1 : 0);
      }
    } else {
      *out += "-ERR unknown command '" + cmd + "'\r\n";
    }
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
      *out += Int(c_->wait_reply);
      return true;
    }
    if (index_ == 0 && c_->drop_after.load() >= 0 &&
        c_->drop_after.fetch_sub(1) == 0) {
      return false;
    }
    bool asking = conn.asking;
    conn.asking = false;
    int slot = commands::KeySlot(args[1]);
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
    Keyed(cmd, args, out);
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

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_FAKE_CLUSTER_H_
