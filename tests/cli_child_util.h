// Runs the shardfilter CLI (tools/cli/cli.h) in forked children, for crash
// tests: the test process itself never opens RocksDB or starts TBB threads,
// so that nothing is running at fork time. As tests/cli_crash_test.cc.
#ifndef SHARDFILTER_TESTS_CLI_CHILD_UTIL_H_
#define SHARDFILTER_TESTS_CLI_CHILD_UTIL_H_

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "tools/cli/cli.h"

namespace shardfilter::testing {

struct Child {
  pid_t pid = -1;
  int in = -1;   // write end: the child's stdin
  int out = -1;  // read end: the child's stdout
};

// Forks a child that runs `shardfilter ARGS...` on pipes for stdin and
// stdout (stderr goes to `err_fd` when >= 0, else is inherited).
inline Child SpawnCli(const std::vector<std::string>& args, int err_fd = -1) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    if (err_fd >= 0) dup2(err_fd, 2);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    std::vector<const char*> argv = {"shardfilter"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    int code = tools::RunCli(static_cast<int>(argv.size()), argv.data(),
                             std::cin, std::cout, std::cerr);
    std::cout.flush();
    std::cerr.flush();
    _exit(code);
  }
  close(to_child[0]);
  close(from_child[1]);
  return {pid, to_child[1], from_child[0]};
}

// Exit code, or 128 + signal.
inline int WaitChild(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline void WriteAllFd(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) return;  // the child died: EPIPE
    done += static_cast<size_t>(n);
  }
}

// "key-<begin>\n" .. "key-<end - 1>\n".
inline std::string KeyLines(uint64_t begin, uint64_t end) {
  std::string text;
  for (uint64_t i = begin; i < end; ++i) {
    text += "key-" + std::to_string(i) + "\n";
  }
  return text;
}

// Runs a child to completion with `input`; returns its exit code, its
// stdout in *output and (when err is given) its stderr in *err.
inline int RunCliChild(const std::vector<std::string>& args,
                       const std::string& input, std::string* output,
                       std::string* err = nullptr) {
  int err_pipe[2] = {-1, -1};
  if (err != nullptr && pipe(err_pipe) != 0) return -1;
  Child c = SpawnCli(args, err_pipe[1]);
  if (err != nullptr) close(err_pipe[1]);
  EXPECT_GT(c.pid, 0);
  std::thread feeder([&] {
    WriteAllFd(c.in, input);
    close(c.in);
  });
  std::string e;
  std::thread err_reader([&] {
    if (err == nullptr) return;
    char buf[4096];
    for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) > 0;)
      e.append(buf, n);
    close(err_pipe[0]);
  });
  output->clear();
  char buf[65536];
  for (ssize_t n; (n = read(c.out, buf, sizeof buf)) > 0;)
    output->append(buf, n);
  close(c.out);
  feeder.join();
  err_reader.join();
  if (err != nullptr) *err = e;
  return WaitChild(c.pid);
}

// Starts `add NAME --ack` (plus `extra` flags) with `keys` on stdin, keeps
// stdin open, reads ack lines until one reaches `until`, then SIGKILLs the
// child. Returns the last acknowledged count.
inline uint64_t AddAndKill(const std::string& db, const std::string& name,
                           const std::string& keys, uint64_t until,
                           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--db", db, "add", name, "--ack", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  Child c = SpawnCli(args);
  EXPECT_GT(c.pid, 0);
  WriteAllFd(c.in, keys);  // stdin stays open: the child waits for more
  FILE* acks = fdopen(c.out, "r");
  uint64_t acked = 0;
  char line[64];
  while (acked < until && std::fgets(line, sizeof line, acks) != nullptr) {
    uint64_t n = 0;
    if (std::sscanf(line, "ack %" SCNu64, &n) == 1) acked = n;
  }
  kill(c.pid, SIGKILL);
  WaitChild(c.pid);
  std::fclose(acks);
  close(c.in);
  return acked;
}

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_CLI_CHILD_UTIL_H_
