// Crash safety of online migration: a writer child adds keys in batches
// (reporting each acknowledged batch through a pipe), starts migrations of
// its filter into random other types, shard counts and capacities while it
// writes, and checkpoints now and then; the parent SIGKILLs it at a random
// moment. A verifier child then opens the store and checks that every
// acknowledged key of every round is present, that the filter is whole
// (the source or the target spec, never a half-built one: Verify finds no
// problem), and that a writable open leaves no orphan value.
//
// The test process itself never opens RocksDB or starts threads before
// forking; children inherit the parent's record of acknowledged keys.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "crash_child_util.h"
#include "shardfilter/engine/database.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Options;
using testing::Send;
using testing::Spec;
using testing::TempDir;

constexpr int kRounds = 12;
constexpr int kBatch = 64;

std::string Key(int round, uint64_t i) {
  return "r" + std::to_string(round) + "-" + std::to_string(i);
}

FilterSpec RandomSpec(std::mt19937_64& rng) {
  const FilterType types[] = {FilterType::kBloom, FilterType::kCountingBloom,
                              FilterType::kCuckoo};
  FilterSpec s =
      Spec(types[rng() % 3], 100'000 + rng() % 200'000, 1u << (rng() % 3));
  s.fpp = 0.001;
  s.retain_hashes = true;
  return s;
}

[[noreturn]] void RunWriter(const std::string& path, int round, uint64_t seed,
                            int fd) {
  auto fail = [&](const Status& s) {
    Send(fd, "E " + s.ToString());
    _exit(3);
  };
  std::mt19937_64 rng(seed);
  DatabaseOptions o = Options(path);
  o.checkpoint_on_close = false;
  auto db = Database::Open(o);
  if (!db.ok()) fail(db.status());
  auto f = (*db)->Get("f");
  if (!f.ok()) {
    f = (*db)->Create("f", RandomSpec(rng));
    if (!f.ok()) fail(f.status());
  }
  std::shared_ptr<ShardedFilter> filter = *f;
  Send(fd, "R");
  bool migrating = false;
  for (uint64_t i = 0;; i += kBatch) {
    std::vector<std::string> keys;
    for (int j = 0; j < kBatch; ++j) keys.push_back(Key(round, i + j));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    Status s = filter->AddKeys(views);
    if (!s.ok()) fail(s);
    Send(fd, "A " + std::to_string(i + kBatch));
    const int r = static_cast<int>(rng() % 100);
    if (migrating) {
      auto p = (*db)->GetMigration("f");
      if (!p.ok()) fail(p.status());
      if (p->finished()) {
        if (!p->status.ok()) fail(p->status);
        migrating = false;
        Send(fd, "D");
      }
    } else if (r < 5) {
      s = (*db)->StartMigration("f", RandomSpec(rng));
      if (!s.ok()) fail(s);
      migrating = true;
      Send(fd, "M");
    } else if (r < 8) {
      auto c = (*db)->Checkpoint("f");
      if (!c.ok()) fail(c.status());
    }
  }
}

// Verifier: every acknowledged key present, a whole filter, no problem
// found by Verify; then a writable open collects any debris.
[[noreturn]] void RunVerifier(const std::string& path,
                              const std::vector<uint64_t>& acked, int fd) {
  auto fail = [&](const std::string& what) {
    Send(fd, "E " + what);
    _exit(3);
  };
  {
    DatabaseOptions o = Options(path);
    o.read_only = true;
    auto db = Database::Open(o);
    if (!db.ok()) fail(db.status().ToString());
    auto f = (*db)->Get("f");
    if (!f.ok()) fail(f.status().ToString());
    uint64_t missing = 0;
    for (size_t r = 0; r < acked.size(); ++r) {
      for (uint64_t i = 0; i < acked[r]; ++i) {
        missing += !(*f)->MayContain(Key(static_cast<int>(r), i));
      }
    }
    if (missing != 0) fail(std::to_string(missing) + " acked keys missing");
    auto v = (*db)->Verify();
    if (!v.ok()) fail(v.status().ToString());
    if (!v->ok()) fail("verify: " + v->problems.front());
  }
  DatabaseOptions o = Options(path);
  o.checkpoint_on_close = false;
  auto db = Database::Open(o);
  if (!db.ok()) fail(db.status().ToString());
  auto v = (*db)->Verify();
  if (!v.ok()) fail(v.status().ToString());
  if (v->orphan_values != 0) {
    fail(std::to_string(v->orphan_values) + " orphan values after reopen");
  }
  Send(fd, "OK");
  _exit(0);
}

std::vector<std::string> ReadLines(int fd, int kill_after_ms, pid_t pid) {
  std::string all;
  auto start = std::chrono::steady_clock::now();
  bool ready = false, killed = false;
  char buf[4096];
  for (;;) {
    if (ready && !killed) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
      if (ms >= kill_after_ms) {
        kill(pid, SIGKILL);
        killed = true;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    all.append(buf, n);
    if (!ready && all.find("R\n") != std::string::npos) {
      ready = true;
      start = std::chrono::steady_clock::now();
    }
  }
  std::vector<std::string> lines;
  std::istringstream in(all);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(MigrationCrashTest, KillDuringMigrationsLosesNoAcknowledgedKey) {
  TempDir dir;
  std::mt19937_64 rng(20261130);
  std::vector<uint64_t> acked;
  int migrations = 0, finished = 0;
  for (int round = 0; round < kRounds; ++round) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    const uint64_t seed = rng();
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      RunWriter(dir.db(), round, seed, p[1]);
    }
    close(p[1]);
    const int kill_after = 100 + static_cast<int>(rng() % 900);
    std::vector<std::string> lines = ReadLines(p[0], kill_after, pid);
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    uint64_t n = 0;
    for (const std::string& l : lines) {
      ASSERT_NE(l[0], 'E') << "round " << round << ": " << l;
      if (l[0] == 'A') n = std::stoull(l.substr(2));
      migrations += l == "M";
      finished += l == "D";
    }
    acked.push_back(n);
    ASSERT_TRUE(WIFSIGNALED(status)) << "round " << round;
    // Verify in a child (RocksDB and TBB stay out of this process).
    ASSERT_EQ(pipe(p), 0);
    pid = fork();
    if (pid == 0) {
      close(p[0]);
      RunVerifier(dir.db(), acked, p[1]);
    }
    close(p[1]);
    std::vector<std::string> out = ReadLines(p[0], 1 << 30, pid);
    close(p[0]);
    waitpid(pid, &status, 0);
    ASSERT_FALSE(out.empty()) << "round " << round << ": verifier died";
    ASSERT_EQ(out.back(), "OK") << "round " << round << ": " << out.back();
  }
  // The kills must have landed during migrations, not only between them.
  EXPECT_GT(migrations, finished) << migrations << " started";
  std::printf("%d migrations started, %d finished before a kill\n", migrations,
              finished);
}

}  // namespace
}  // namespace shardfilter
