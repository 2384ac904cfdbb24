// Thread segments under kill -9 (engine/internal/filter_log.h L7,
// persistence/log/format.h T1-T3): a child runs three writer
// threads adding keys of their own (each key once, so an add that is lost
// shows as absent, unlike in MultiWriterCrashTest's 48 shared keys) to a
// journalled Bloom filter on mapped segments, and a fourth thread that
// checkpoints now and then (raising the generation and retiring segments,
// active ones included); every acknowledged add is reported on a pipe. The
// parent SIGKILLs it at a random moment, then a verifier child opens the
// store read-only and checks that every acknowledged key of every session
// so far is present (an FPR of 1e-4 makes a lost key show as absent with
// probability 0.9999). Odd sessions use 64 KiB segments, so writers switch
// segments and checkpoints retire them many times a session.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <sstream>
#include <thread>

#include "crash_child_util.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/log/segment.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Drain;
using testing::Lines;
using testing::Send;
using testing::TempDir;

constexpr int kWriters = 3;
constexpr int kSessions = 6;

std::string KeyName(int session, int t, int n) {
  return "s" + std::to_string(session) + "-t" + std::to_string(t) + "-" +
         std::to_string(n);
}

DatabaseOptions StoreOptions(const std::string& path) {
  DatabaseOptions o = testing::Options(path);
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;
  return o;
}

[[noreturn]] void RunWriter(const std::string& path, int session, uint64_t seed,
                            int fd) {
  auto fail = [&](const Status& s) {
    Send(fd, "E " + s.ToString());
    _exit(3);
  };
  if (session % 2 == 1) persistence::SetSegmentBytesForTesting(64 << 10);
  auto db = Database::Open(StoreOptions(path));
  if (!db.ok()) fail(db.status());
  auto f = (*db)->Get("f");
  if (!f.ok()) {
    FilterSpec spec = testing::Spec(FilterType::kBloom, 2'000'000, 8);
    spec.fpp = 1e-4;
    f = (*db)->Create("f", spec);
    if (!f.ok()) fail(f.status());
  }
  ShardedFilter& filter = **f;
  Send(fd, "R");
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0;; ++n) {
        Status s = filter.Add(KeyName(session, t, n));
        if (!s.ok()) fail(s);
        Send(fd, "A " + std::to_string(t) + " " + std::to_string(n));
      }
    });
  }
  threads.emplace_back([&] {
    std::mt19937_64 rng(seed);
    for (;;) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 5000));
      Status s = (*db)->Checkpoint("f").status();
      if (!s.ok()) fail(s);
    }
  });
  for (auto& th : threads) th.join();
  _exit(0);
}

// acked[s][t]: session s's thread t had its adds 0 .. acked - 1
// acknowledged. Reports "OK", or the first missing key, or the open's error.
std::string Verify(const std::string& path,
                   const std::vector<std::vector<int>>& acked) {
  const std::vector<std::string> lines = testing::RunChild([&](int fd) {
    const auto [db, f] =
        testing::OpenReadOnlyOrExit(StoreOptions(path), "f", fd);
    for (size_t s = 0; s < acked.size(); ++s) {
      for (int t = 0; t < kWriters; ++t) {
        for (int n = 0; n < acked[s][t]; ++n) {
          const std::string key = KeyName(static_cast<int>(s), t, n);
          if (!f->MayContain(key)) {
            Send(fd, "M " + key);
            _exit(0);
          }
        }
      }
    }
    Send(fd, "OK");
    _exit(0);
  });
  return lines.empty() ? "verifier said nothing" : lines.front();
}

TEST(ThreadJournalCrashTest, AcknowledgedAddsSurviveKillNine) {
  std::mt19937_64 rng(0x7e5e);
  TempDir dir;
  std::vector<std::vector<int>> acked;
  long total = 0;
  for (int session = 0; session < kSessions; ++session) {
    SCOPED_TRACE("session " + std::to_string(session));
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    const uint64_t seed = rng();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(p[0]);
      RunWriter(dir.db(), session, seed, p[1]);
    }
    close(p[1]);
    const int delay_ms = static_cast<int>(50 + rng() % 250);
    bool killed = false;
    const std::string text =
        testing::ReadUntilReadyThenKill(p[0], pid, delay_ms, &killed);
    ASSERT_TRUE(killed) << text.substr(0, 300);
    std::vector<int> mine(kWriters, 0);
    for (const std::string& line : Lines(text)) {
      if (line.empty() || line == "R") continue;
      ASSERT_NE(line[0], 'E') << line;
      std::istringstream in(line.substr(2));
      int t = 0, n = 0;
      in >> t >> n;
      // A thread's acks come in order: n acknowledged means 0 .. n too.
      ASSERT_EQ(n, mine[t]) << line;
      mine[t] = n + 1;
      ++total;
    }
    acked.push_back(mine);
    ASSERT_EQ(Verify(dir.db(), acked), "OK");
  }
  EXPECT_GT(total, 1000) << "the writers hardly ran";
  std::printf("%ld acknowledged adds over %d kills\n", total, kSessions);
}

}  // namespace
}  // namespace shardfilter
