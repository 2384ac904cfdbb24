// What the crash tests' forked children and their parent share: a child
// reports on a pipe, one line per event ("A n", "E error", "OK", ...), and
// the parent reads the pipe to EOF (the child exited or was killed).
#ifndef SHARDFILTER_TESTS_CRASH_CHILD_UTIL_H_
#define SHARDFILTER_TESTS_CRASH_CHILD_UTIL_H_

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/database.h"

namespace shardfilter::testing {

// One line; atomic on a pipe (shorter than PIPE_BUF), so a kill never
// leaves half of it.
inline void Send(int fd, const std::string& line) {
  const std::string s = line + "\n";
  ssize_t n = write(fd, s.data(), s.size());
  (void)n;
}

// All of `text`, or the child exits with code 4.
inline void SendAll(int fd, const std::string& text) {
  for (size_t off = 0; off < text.size();) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n <= 0) _exit(4);
    off += static_cast<size_t>(n);
  }
}

// A verifier child's read-only open of the store at o.path and its filter
// `name`. On failure it sends "E <error>" and exits with code 3.
struct ReadOnlyFilter {
  std::unique_ptr<Database> db;
  std::shared_ptr<ShardedFilter> filter;
};
inline ReadOnlyFilter OpenReadOnlyOrExit(DatabaseOptions o,
                                         std::string_view name, int fd) {
  o.read_only = true;
  auto db = Database::Open(o);
  if (!db.ok()) {
    Send(fd, "E " + db.status().ToString());
    _exit(3);
  }
  auto f = (*db)->Get(name);
  if (!f.ok()) {
    Send(fd, "E " + f.status().ToString());
    _exit(3);
  }
  return {std::move(*db), std::move(*f)};
}

// Everything read from fd until EOF.
inline std::string Drain(int fd) {
  std::string all;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  return all;
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Forks `child(fd)` (which must not return: it _exits), reads its lines to
// EOF and reaps it. Empty when the pipe cannot be made.
template <typename Child>
std::vector<std::string> RunChild(Child&& child) {
  int p[2];
  if (pipe(p) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    child(p[1]);
  }
  close(p[1]);
  std::vector<std::string> lines = Lines(Drain(p[0]));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return lines;
}

// The parent's side of a kill: reads the child's lines until it reported
// "R" (ready) and `delay_ms` more passed (10 s at most without "R"), then
// SIGKILLs it, reads the pipe to EOF, closes it and reaps the child.
// Returns everything read; *killed: the child died of the signal (it had
// not exited on its own first).
inline std::string ReadUntilReadyThenKill(int fd, pid_t pid, int delay_ms,
                                          bool* killed) {
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool ready = false;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    pollfd pfd{fd, POLLIN, 0};
    const int wait = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)
            .count());
    if (poll(&pfd, 1, std::max(wait, 1)) <= 0) continue;
    char buf[1 << 16];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (!ready && text.find("R\n") != std::string::npos) {
      ready = true;
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(delay_ms);
    }
  }
  kill(pid, SIGKILL);
  text += Drain(fd);
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  *killed = WIFSIGNALED(status);
  return text;
}

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_CRASH_CHILD_UTIL_H_
