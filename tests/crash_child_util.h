// What the crash tests' forked children and their parent share: a child
// reports on a pipe, one line per event ("A n", "E error", "OK", ...), and
// the parent reads the pipe to EOF (the child exited or was killed).
#ifndef SHARDFILTER_TESTS_CRASH_CHILD_UTIL_H_
#define SHARDFILTER_TESTS_CRASH_CHILD_UTIL_H_

#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

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

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_CRASH_CHILD_UTIL_H_
