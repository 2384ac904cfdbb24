// Crash test of `shardfilter add --ack`: a child process runs the CLI with
// keys streaming in through a pipe; the parent reads "ack N" lines, kills
// the child with SIGKILL mid-stream, and checks in a fresh process that
// every acknowledged key is present (DESIGN.md invariants 1 and 4).
//
// The parent never opens the store itself: every RunCli call happens in a
// forked child, so that no RocksDB or oneTBB thread exists at fork time.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "tools/cli/cli.h"

namespace shardfilter::tools {
namespace {

struct Child {
  pid_t pid = -1;
  int in = -1;   // write end: the child's stdin
  int out = -1;  // read end: the child's stdout
};

// Forks a child that runs `shardfilter ARGS...` on pipes for stdin and
// stdout (stderr is inherited).
Child Spawn(const std::vector<std::string>& args) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    std::vector<const char*> argv = {"shardfilter"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    int code = RunCli(static_cast<int>(argv.size()), argv.data(), std::cin,
                      std::cout, std::cerr);
    std::cout.flush();
    _exit(code);
  }
  close(to_child[0]);
  close(from_child[1]);
  return {pid, to_child[1], from_child[0]};
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) return;  // the child died: EPIPE
    done += static_cast<size_t>(n);
  }
}

std::string Keys(uint64_t begin, uint64_t end) {
  std::string text;
  for (uint64_t i = begin; i < end; ++i) {
    text += "key-" + std::to_string(i) + "\n";
  }
  return text;
}

// Runs a child to completion with `input`; returns its exit code and stdout.
int RunChild(const std::vector<std::string>& args, const std::string& input,
             std::string* output) {
  Child c = Spawn(args);
  EXPECT_GT(c.pid, 0);
  std::thread feeder([&] {
    WriteAll(c.in, input);
    close(c.in);
  });
  output->clear();
  char buf[65536];
  for (ssize_t n; (n = read(c.out, buf, sizeof buf)) > 0;)
    output->append(buf, n);
  close(c.out);
  feeder.join();
  return Wait(c.pid);
}

class CliCrashTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/shardfilter_cli_crash.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/store";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_, db_;
};

TEST_P(CliCrashTest, AckedKeysSurviveKill9) {
  const std::string durability = GetParam();
  std::string out;
  ASSERT_EQ(
      RunChild({"--db", db_, "create", "f", "--type", "counting", "--capacity",
                "4M", "--fpp", "0.001", "--durability", durability},
               "", &out),
      0);
  constexpr uint64_t kKeys = 2'000'000;
  Child c = Spawn({"--db", db_, "add", "f", "--ack", "--quiet"});
  ASSERT_GT(c.pid, 0);
  std::thread feeder([&] {
    for (uint64_t i = 0; i < kKeys; i += 100'000) {
      WriteAll(c.in, Keys(i, i + 100'000));
    }
    close(c.in);
  });
  // Read acks until a few dozen batches are in, then kill without warning.
  FILE* acks = fdopen(c.out, "r");
  ASSERT_NE(acks, nullptr);
  uint64_t acked = 0;
  int lines = 0;
  char line[64];
  while (lines < 40 && std::fgets(line, sizeof line, acks) != nullptr) {
    uint64_t n = 0;
    ASSERT_EQ(std::sscanf(line, "ack %" SCNu64, &n), 1) << line;
    ASSERT_GT(n, acked);
    acked = n;
    ++lines;
  }
  kill(c.pid, SIGKILL);
  EXPECT_EQ(Wait(c.pid), 128 + SIGKILL);
  std::fclose(acks);
  feeder.join();
  ASSERT_GT(acked, 0u);
  ASSERT_LT(acked, kKeys) << "the child finished before the kill";

  // Recovery in a fresh process: every acknowledged key is present.
  ASSERT_EQ(RunChild({"--db", db_, "exists", "f"}, Keys(0, acked), &out), 0);
  ASSERT_EQ(out.size(), acked * 2);
  EXPECT_EQ(out.find('0'), std::string::npos)
      << "a false negative after recovery, " << acked << " keys acked";
  EXPECT_EQ(RunChild({"--db", db_, "verify"}, "", &out), 0) << out;
}

INSTANTIATE_TEST_SUITE_P(Durability, CliCrashTest,
                         ::testing::Values("journal", "sync"));

}  // namespace
}  // namespace shardfilter::tools
