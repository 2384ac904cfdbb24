// SIGKILL during `shardfilter migrate` leaves the source intact: a child
// runs the migration of a filter of 200k keys (alternating targets and
// sources of keys) and is killed at a random moment; a fresh child then
// checks that every key is present, the store verifies clean, and the
// filter is either the source or the whole target. The parent never opens
// the store itself (children run every RunCli), so that no RocksDB or
// oneTBB thread exists at fork time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/cli/cli.h"

namespace shardfilter::tools {
namespace {

constexpr int kKeys = 200'000;

struct Result {
  int code = -1;
  std::string out;
};

// Runs `shardfilter ARGS` in a child with `in` as stdin; kills it after
// kill_ms when kill_ms >= 0 (then code is -1).
Result RunChild(const std::vector<std::string>& args, const std::string& in,
                int kill_ms = -1) {
  int p[2];
  if (pipe(p) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    std::vector<const char*> argv = {"shardfilter"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::istringstream input(in);
    std::ostringstream out, err;
    int code =
        RunCli(static_cast<int>(argv.size()), argv.data(), input, out, err);
    std::string all = std::to_string(code) + "\n" + out.str() + err.str();
    for (size_t off = 0; off < all.size();) {
      ssize_t n = write(p[1], all.data() + off, all.size() - off);
      if (n <= 0) break;
      off += n;
    }
    _exit(0);
  }
  close(p[1]);
  if (kill_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_ms));
    kill(pid, SIGKILL);
  }
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) all.append(buf, n);
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  if (WIFEXITED(status) && !all.empty()) {
    size_t nl = all.find('\n');
    r.code = std::stoi(all.substr(0, nl));
    r.out = all.substr(nl + 1);
  }
  return r;
}

TEST(CliMigrateCrashTest, KillLeavesTheSourceIntact) {
  char tmpl[] = "/tmp/shardfilter_migrate_crash.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, db = dir + "/db", keys = dir + "/keys.txt";
  std::string all;
  for (int i = 0; i < kKeys; ++i) all += "k" + std::to_string(i) + "\n";
  std::ofstream(keys) << all;
  Result r =
      RunChild({"--db", db, "create", "f", "--type", "cuckoo", "--capacity",
                "250000", "--fpp", "0.001", "--retain-hashes"},
               "");
  ASSERT_EQ(r.code, 0) << r.out;
  r = RunChild({"--db", db, "import", "f", keys, "--quiet"}, "");
  ASSERT_EQ(r.code, 0) << r.out;
  std::string sample;
  for (int i = 0; i < kKeys; i += 7) sample += "k" + std::to_string(i) + "\n";
  std::mt19937 rng(1130);
  const char* types[] = {"bloom", "counting", "cuckoo"};
  int completed = 0;
  for (int round = 0; round < 10; ++round) {
    std::vector<std::string> args = {
        "--db",     db,
        "migrate",  "f",
        "--type",   types[round % 3],
        "--shards", std::to_string(1 << (round % 3)),
        "--quiet"};
    if (round % 2 == 1) {  // from keys (a new seed) instead of hashes
      args.insert(args.end(), {keys, "--seed", std::to_string(round)});
    }
    // Kills spread from the start of the run to past its end; the last
    // round is not killed, so the installed target is checked too.
    const int kill_ms =
        round == 9 ? -1 : round * 150 + static_cast<int>(rng() % 150);
    r = RunChild(args, "", kill_ms);
    completed += r.code == 0;
    // Every key present, the store clean, whatever the moment of the kill.
    Result e = RunChild({"--db", db, "exists", "f"}, sample);
    ASSERT_EQ(e.code, 0) << "round " << round << ": " << e.out;
    ASSERT_EQ(e.out.find('0'), std::string::npos)
        << "round " << round << ": a key is missing";
    Result v = RunChild({"--db", db, "verify"}, "");
    ASSERT_EQ(v.code, 0) << "round " << round << ": " << v.out;
  }
  std::printf("%d of 10 migrations finished before the kill\n", completed);
  EXPECT_GE(completed, 1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace shardfilter::tools
