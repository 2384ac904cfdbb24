// Helpers of the in-process server tests (server_*_test.cc): a blocking
// loopback RESP client, request encoding, and a gate that holds journal
// syncs (persistence::SetJournalFaultForTesting).
#ifndef SHARDFILTER_TESTS_SERVER_TEST_UTIL_H_
#define SHARDFILTER_TESTS_SERVER_TEST_UTIL_H_

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <mutex>
#include <string>

#include "shardfilter/persistence/log/segment.h"

namespace shardfilter::testing {

// Holds every journal segment sync while closed. The hook runs under the
// journal's hook mutex, so while one sync waits every other segment sync
// and creation in the process waits too: filters that must not wait should
// journal in RocksDB's WAL (below DatabaseOptions::mapped_journal_min_bytes).
class SyncGate {
 public:
  SyncGate() {
    persistence::SetJournalFaultForTesting(
        [this](std::string_view what, const std::string&) {
          if (what != "sync") return Status::OK();
          std::unique_lock lock(mu_);
          ++waiting_;
          cv_.notify_all();
          cv_.wait(lock, [this] { return open_; });
          --waiting_;
          return Status::OK();
        });
  }
  ~SyncGate() {
    Open();
    persistence::SetJournalFaultForTesting(nullptr);
  }
  void Close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // True once a sync waits at the gate (false after 20 s).
  bool AwaitWaiter() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [this] { return waiting_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int waiting_ = 0;
};

// A blocking loopback client with a receive timeout.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Client() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Reads until `want` bytes arrived (or 10 s passed: what came).
  std::string Read(size_t want) {
    while (buffer_.size() < want && Fill()) {
    }
    std::string got = buffer_.substr(0, want);
    buffer_.erase(0, got.size());
    return got;
  }
  // One reply line without its CRLF ("" after 10 s or a close).
  std::string ReadLine() {
    size_t at;
    while ((at = buffer_.find("\r\n")) == std::string::npos && Fill()) {
    }
    if (at == std::string::npos) return "";
    std::string line = buffer_.substr(0, at);
    buffer_.erase(0, at + 2);
    return line;
  }
  // True when a reply is waiting to be read now.
  bool HasReply() {
    char c;
    return !buffer_.empty() || ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

 private:
  bool Fill() {
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    buffer_.append(buf, n);
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;  // received, not yet returned
};

inline std::string Cmd(std::initializer_list<std::string> args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) {
    s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  return s;
}

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_SERVER_TEST_UTIL_H_
