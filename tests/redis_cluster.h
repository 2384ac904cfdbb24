// A real Redis Cluster for tests: `masters` redis-server processes on
// loopback ports, each loading shardfilter.so, the slots split evenly
// (CLUSTER ADDSLOTSRANGE + CLUSTER MEET, no replicas), each server's data
// and log in its own directory under `dir`. Started by Start, which waits
// until every node reports cluster_state:ok and a slot map of every
// master; the processes are stopped (SIGTERM, then SIGKILL) by the
// destructor, each by its pid.
//
// Needs redis-server on PATH (Redis 7.0 or newer: the module's minimum)
// and the module's path: RedisCluster::Module() is $SF_MODULE_SO, else the
// SF_MODULE_SO compile definition (tests/CMakeLists.txt).
#ifndef SHARDFILTER_TESTS_REDIS_CLUSTER_H_
#define SHARDFILTER_TESTS_REDIS_CLUSTER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/filters/status.h"
#include "tools/cluster/node_connection.h"
#include "tools/resp/reply_reader.h"

namespace shardfilter::testing {

class RedisCluster {
 public:
  struct Node {
    pid_t pid = -1;
    int port = 0;
    std::string dir;
  };

  RedisCluster() = default;
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  ~RedisCluster() {
    for (Node& n : nodes_) Stop(n);
  }

  // The module to load ("" when this build has none).
  static std::string Module() {
    if (const char* m = std::getenv("SF_MODULE_SO"); m != nullptr) return m;
#ifdef SF_MODULE_SO
    return SF_MODULE_SO;
#else
    return "";
#endif
  }
  // Why the cluster cannot run here ("" when it can).
  static std::string Missing() {
    const std::string module = Module();
    if (module.empty()) return "no shardfilter.so in this build";
    if (!std::filesystem::exists(module)) return module + " is not built";
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
    for (size_t at = 0; at <= dirs.size();) {
      size_t end = dirs.find(':', at);
      if (end == std::string::npos) end = dirs.size();
      std::string exe = dirs.substr(at, end - at) + "/redis-server";
      if (::access(exe.c_str(), X_OK) == 0) return "";
      at = end + 1;
    }
    return "redis-server is not installed (apt-get install redis-server)";
  }

  Status Start(const std::string& dir, int masters) {
    for (int i = 0; i < masters; ++i) {
      Node n;
      n.dir = dir + "/node" + std::to_string(i);
      std::filesystem::create_directories(n.dir);
      Status s = Status::IOError("no free port pair");
      // A port taken by another test between the check and the bind makes
      // the server exit: try another.
      for (int attempt = 0; attempt < 20 && !s.ok(); ++attempt) {
        n.port = FreeClusterPort();
        s = Launch(n);
      }
      if (!s.ok()) return s;
      nodes_.push_back(n);
    }
    const int per = 16384 / masters;
    for (int i = 0; i < masters; ++i) {
      int from = i * per, to = i + 1 == masters ? 16383 : (i + 1) * per - 1;
      Result<resp::Reply> r =
          Command(i, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(from),
                      std::to_string(to)});
      if (!r.ok()) return r.status();
      if (r->is_error()) return Status::IOError("ADDSLOTSRANGE: " + r->str);
    }
    for (int i = 1; i < masters; ++i) {
      Result<resp::Reply> r = Command(
          0, {"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[i].port)});
      if (!r.ok()) return r.status();
    }
    // Every node must see the whole map before a client asks any of them.
    return WaitFor(
        [&] {
          for (int i = 0; i < masters; ++i) {
            Result<resp::Reply> info = Command(i, {"CLUSTER", "INFO"});
            Result<resp::Reply> slots = Command(i, {"CLUSTER", "SLOTS"});
            if (!info.ok() || !slots.ok() ||
                info->str.find("cluster_state:ok") == std::string::npos ||
                slots->elements.size() != static_cast<size_t>(masters)) {
              return false;
            }
          }
          return true;
        },
        "cluster_state:ok on every node");
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  std::string Address(int i) const {
    return "127.0.0.1:" + std::to_string(nodes_[i].port);
  }

  // One command on node i, answered or an IOError.
  Result<resp::Reply> Command(int i, std::vector<std::string> args) {
    cluster::NodeConnection c;
    if (Status s = c.Connect({"127.0.0.1", nodes_[i].port}, 10000); !s.ok()) {
      return s;
    }
    std::vector<std::string_view> views(args.begin(), args.end());
    c.Append(views);
    std::vector<resp::Reply> replies;
    if (Status s = c.RoundTrip(1, &replies, 10000); !s.ok()) return s;
    return std::move(replies[0]);
  }
  // The node whose slots hold key, from node 0's slot map (-1: none).
  int NodeOf(const std::string& key) {
    Result<resp::Reply> slot = Command(0, {"CLUSTER", "KEYSLOT", key});
    Result<resp::Reply> slots = Command(0, {"CLUSTER", "SLOTS"});
    if (!slot.ok() || !slots.ok()) return -1;
    for (const resp::Reply& range : slots->elements) {
      if (range.elements.size() < 3 ||
          slot->integer < range.elements[0].integer ||
          slot->integer > range.elements[1].integer) {
        continue;
      }
      int port = static_cast<int>(range.elements[2].elements[1].integer);
      for (int j = 0; j < size(); ++j) {
        if (nodes_[j].port == port) return j;
      }
    }
    return -1;
  }
  // Waits until done() holds, for at most 60 s (a loaded machine is slow,
  // never wrong).
  static Status WaitFor(const std::function<bool()>& done,
                        const std::string& what) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::IOError("timed out waiting for " + what);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::OK();
  }
  std::string Log(int i) const {
    std::ifstream f(nodes_[i].dir + "/redis.log");
    std::string text((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
    return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
  }

 private:
  // A port p with p and its cluster bus port p + 10000 both free now.
  static int FreeClusterPort() {
    static std::mt19937 rng(std::random_device{}());
    for (;;) {
      int p = std::uniform_int_distribution<int>(20000, 45000)(rng);
      bool free = true;
      for (int q : {p, p + 10000}) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(q));
        free &= ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
      }
      if (free) return p;
    }
  }

  // Starts n's server and waits until it answers PING or exits.
  Status Launch(Node& n) {
    const std::string module = Module();
    std::vector<std::string> args = {"redis-server",
                                     "--port",
                                     std::to_string(n.port),
                                     "--bind",
                                     "127.0.0.1",
                                     "--dir",
                                     n.dir,
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--logfile",
                                     n.dir + "/redis.log",
                                     "--cluster-enabled",
                                     "yes",
                                     "--cluster-config-file",
                                     n.dir + "/nodes.conf",
                                     "--cluster-node-timeout",
                                     "5000",
                                     "--loadmodule",
                                     module};
    std::filesystem::remove(n.dir + "/nodes.conf");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    n.pid = ::fork();
    if (n.pid < 0) return Status::IOError("fork failed");
    if (n.pid == 0) {
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    Status up = WaitFor(
        [&] {
          int status = 0;
          if (::waitpid(n.pid, &status, WNOHANG) == n.pid) {
            n.pid = -1;
            return true;  // exited: reported below
          }
          cluster::NodeConnection c;
          if (!c.Connect({"127.0.0.1", n.port}, 1000).ok()) return false;
          c.Append({"PING"});
          std::vector<resp::Reply> r;
          return c.RoundTrip(1, &r, 1000).ok() && r[0].str == "PONG";
        },
        "redis-server on port " + std::to_string(n.port));
    if (!up.ok()) {
      Stop(n);
      return up;
    }
    if (n.pid < 0) {
      std::ifstream f(n.dir + "/redis.log");
      std::string log((std::istreambuf_iterator<char>(f)),
                      std::istreambuf_iterator<char>());
      return Status::IOError("redis-server exited at start: " + log);
    }
    return Status::OK();
  }

  static void Stop(Node& n) {
    if (n.pid <= 0) return;
    ::kill(n.pid, SIGTERM);
    for (int i = 0; i < 400; ++i) {
      if (::waitpid(n.pid, nullptr, WNOHANG) == n.pid) {
        n.pid = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(n.pid, SIGKILL);
    ::waitpid(n.pid, nullptr, 0);
    n.pid = -1;
  }

  std::vector<Node> nodes_;
};

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_REDIS_CLUSTER_H_
