// DedupStore under kill -9. The parent never opens RocksDB: it forks a
// writer child that opens the set (durability journal with the default or
// a small journal file, whose halves then move into RocksDB during the
// run, or durability sync), runs
// InsertIfAbsent (single and batched) over random keys from a small
// universe, and reports through a pipe "B <key>" before each call and
// "A <key> <0|1>" after it returns; the parent SIGKILLs it at a random
// moment. Then a verifier child reopens the store and reports whether each
// key is present (Contains) and what a fresh InsertIfAbsent says. Checked:
//   - every key acknowledged (new or duplicate) is present: nothing lost;
//   - a key acknowledged as new before the crash is a duplicate after it
//     (never reported new twice);
//   - a key never begun is absent.
// Keys in flight at the kill may be either way. ~10 s in all.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "shardfilter/engine/dedup_store.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Options;
using testing::TempDir;

constexpr int kKeys = 3000;

void Send(int fd, const std::string& s) {
  std::string line = s + "\n";
  ssize_t n = write(fd, line.data(), line.size());  // < PIPE_BUF: atomic
  (void)n;
}

std::string KeyName(int k) { return "key-" + std::to_string(k); }

[[noreturn]] void RunWriter(const std::string& path, Durability dur,
                            uint64_t journal_bytes, uint64_t seed, int fd) {
  auto fail = [&](const Status& s) {
    Send(fd, "E " + s.ToString());
    _exit(3);
  };
  auto db = Database::Open(Options(path));
  if (!db.ok()) fail(db.status());
  DedupOptions o;
  o.durability = dur;
  o.journal_bytes = journal_bytes;
  o.expected_keys = 2000;  // overfilled over the runs: chains too
  auto d = DedupStore::Open(**db, "s", o);
  if (!d.ok()) fail(d.status());
  Send(fd, "R");
  std::mt19937_64 rng(seed);
  for (;;) {
    if (rng() % 4 == 0) {
      std::vector<std::string> keys(1 + rng() % 16);
      std::string begin = "B";
      for (auto& k : keys) {
        k = KeyName(rng() % kKeys);
        begin += " " + k;
      }
      Send(fd, begin);
      std::vector<std::string_view> views(keys.begin(), keys.end());
      std::vector<uint8_t> out;
      Status s = (*d)->InsertIfAbsentBatch(views, &out);
      if (!s.ok()) fail(s);
      std::string ack = "A";
      for (size_t i = 0; i < keys.size(); ++i) {
        ack += " " + keys[i] + " " + std::to_string(out[i]);
      }
      Send(fd, ack);
    } else {
      std::string k = KeyName(rng() % kKeys);
      Send(fd, "B " + k);
      auto r = (*d)->InsertIfAbsent(k);
      if (!r.ok()) fail(r.status());
      Send(fd, "A " + k + (*r ? " 1" : " 0"));
    }
  }
}

// Reads everything the child wrote until it is killed or exits.
std::string Drain(int fd) {
  std::string all;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return all;
    all.append(buf, n);
  }
}

struct Model {
  std::set<std::string> acked;      // acknowledged (new or duplicate)
  std::set<std::string> acked_new;  // acknowledged as new
  std::set<std::string> begun;
  std::set<std::string> in_flight;  // begun, not acknowledged
};

void Apply(const std::string& log, Model* m) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == 'R') continue;
    ASSERT_NE(line[0], 'E') << line;
    std::istringstream words(line.substr(1));
    if (line[0] == 'B') {
      std::string k;
      while (words >> k) {
        m->begun.insert(k);
        m->in_flight.insert(k);
      }
    } else if (line[0] == 'A' && line.back() != ' ') {
      std::string k, v;
      while (words >> k >> v) {
        // A new key is acknowledged new only once, ever.
        if (v == "1") {
          ASSERT_TRUE(m->acked_new.insert(k).second) << "new twice: " << k;
        }
        m->acked.insert(k);
        m->in_flight.erase(k);
      }
    }
  }
}

TEST(DedupCrashTest, NoAcknowledgedKeyLostNoKeyNewTwice) {
  TempDir dir;
  Model m;
  std::mt19937_64 rng(2024);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(8);
  int kills = 0;
  while (std::chrono::steady_clock::now() < deadline || kills < 6) {
    Durability dur = kills % 3 == 1 ? Durability::kSync : Durability::kJournal;
    uint64_t journal_bytes = kills % 3 == 2 ? 128 << 10 : 16 << 20;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      RunWriter(dir.db(), dur, journal_bytes, rng(), fds[1]);
    }
    close(fds[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    std::string log = Drain(fds[0]);
    close(fds[0]);
    ASSERT_EQ(log.find("E "), std::string::npos) << log.substr(0, 300);
    // Keep only whole lines: a line cut by the kill is not an ack.
    log.resize(log.rfind('\n') == std::string::npos ? 0 : log.rfind('\n') + 1);
    Apply(log, &m);
    ++kills;
    // Verify in a child (the parent stays free of RocksDB and threads).
    ASSERT_EQ(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
      close(fds[0]);
      auto db = Database::Open(Options(dir.db()));
      if (!db.ok()) _exit(3);
      auto d = DedupStore::Open(**db, "s", {});
      if (!d.ok()) _exit(4);
      std::string report;
      for (int k = 0; k < kKeys; ++k) {
        auto c = (*d)->Contains(KeyName(k));
        if (!c.ok()) _exit(5);
        report += *c ? '1' : '0';
      }
      ssize_t n = write(fds[1], report.data(), report.size());
      _exit(n == static_cast<ssize_t>(report.size()) ? 0 : 6);
    }
    close(fds[1]);
    std::string present = Drain(fds[0]);
    close(fds[0]);
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    ASSERT_EQ(present.size(), static_cast<size_t>(kKeys));
    for (int k = 0; k < kKeys; ++k) {
      std::string key = KeyName(k);
      if (m.acked.count(key)) {
        ASSERT_EQ(present[k], '1') << "acknowledged key lost: " << key;
      } else if (!m.begun.count(key)) {
        ASSERT_EQ(present[k], '0') << "never-inserted key present: " << key;
      }
      // An in-flight key that made it counts as inserted from now on: a
      // later run must report it as a duplicate, never new.
      if (present[k] == '1') m.acked.insert(key);
    }
    // Every key that is present may never again be acknowledged new (the
    // Apply of the next run's log asserts that via acked_new).
    for (int k = 0; k < kKeys; ++k) {
      if (present[k] == '1') m.acked_new.insert(KeyName(k));
    }
    m.in_flight.clear();
  }
  EXPECT_GE(kills, 4);
  EXPECT_GT(m.acked_new.size(), 100u);
}

}  // namespace
}  // namespace shardfilter
