// Crash recovery under kill -9 with several writers per shard, for every
// filter type, durability journal and sync.
//
// A writer child runs 4 threads on a filter of 1 or 2 shards; every thread
// adds and removes keys of one shared universe (so ops of different threads
// on one key depend on each other: a remove may succeed only because of
// another thread's add) and reports each op's begin ("B t op k") and
// acknowledgement ("A t op k") through a pipe; one thread checkpoints now
// and then. The parent SIGKILLs it at a random moment, then a verifier
// child opens the store read-only and reports every key's count. Checked
// against the acknowledged ops:
//   - a key with no op in flight at the kill: count == acked adds - acked
//     removes exactly (counting, cuckoo; Bloom: present if ever added), so
//     no acknowledged op is lost and none is applied twice;
//   - a key with ops in flight: between the two sides of those ops.
// It fails when an op can be acknowledged before a lower seq of its shard
// is journalled (engine/internal/filter_log.h L2): replay would apply seq
// n+1 without n.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "crash_child_util.h"
#include "shardfilter/engine/database.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Drain;
using testing::Lines;
using testing::Send;
using testing::Spec;
using testing::TempDir;

constexpr int kKeys = 48;
constexpr int kThreads = 4;
constexpr int kIterations = 6;  // per type and mode

std::string KeyName(int k) { return "mw-" + std::to_string(k); }

// Odd sessions journal these small filters in RocksDB (FilterLog L6's
// default), even ones map segments: replay merges both by seq.
DatabaseOptions StoreOptions(const std::string& path, int session) {
  DatabaseOptions o = testing::Options(path);
  o.checkpoint_on_close = false;
  if (session % 2 == 0) o.mapped_journal_min_bytes = 0;
  return o;
}

[[noreturn]] void RunWriter(const std::string& path, FilterType type,
                            Durability mode, uint32_t shards, uint64_t seed,
                            int session, int fd) {
  auto fail = [&](const Status& s) {
    Send(fd, "E " + s.ToString());
    _exit(3);
  };
  auto db = Database::Open(StoreOptions(path, session));
  if (!db.ok()) fail(db.status());
  auto f = (*db)->Get("f");
  if (!f.ok()) {
    FilterSpec spec = Spec(type, 100'000, shards, mode);
    spec.fpp = 1e-4;
    spec.scalable = false;
    f = (*db)->Create("f", spec);
    if (!f.ok()) fail(f.status());
  }
  ShardedFilter& filter = **f;
  // Each thread removes only copies it added itself (at most one per key
  // per thread: a cuckoo key holds 4 copies at most, within 2b).
  std::vector<std::vector<int>> own(kThreads, std::vector<int>(kKeys, 0));
  // What recovery left is handed out, one copy per thread and key.
  for (int k = 0; k < kKeys; ++k) {
    const int c = static_cast<int>(filter.Count(KeyName(k)));
    if (type == FilterType::kBloom) continue;
    if (c > kThreads) fail(Status::Corruption("too many copies recovered"));
    for (int t = 0; t < c; ++t) own[t][k] = 1;
  }
  Send(fd, "R");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + t);
      const std::string tag = std::to_string(t) + " ";
      for (;;) {
        const int k = static_cast<int>(rng() % kKeys);
        const int r = static_cast<int>(rng() % 100);
        if (t == 0 && r < 2) {
          auto st = (*db)->Checkpoint("f");
          if (!st.ok()) fail(st.status());
          continue;
        }
        if (type == FilterType::kBloom) {  // adds only, any key, repeated
          Send(fd, "B " + tag + "A " + std::to_string(k));
          Status s = filter.Add(KeyName(k));
          if (!s.ok()) fail(s);
          Send(fd, "A " + tag + "A " + std::to_string(k));
        } else if (own[t][k] > 0) {
          Send(fd, "B " + tag + "R " + std::to_string(k));
          Status s = filter.Remove(KeyName(k));
          if (!s.ok()) fail(s);
          --own[t][k];
          Send(fd, "A " + tag + "R " + std::to_string(k));
        } else if (own[t][k] == 0) {
          Send(fd, "B " + tag + "A " + std::to_string(k));
          Status s = filter.Add(KeyName(k));
          if (!s.ok()) fail(s);
          ++own[t][k];
          Send(fd, "A " + tag + "A " + std::to_string(k));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  _exit(0);
}

[[noreturn]] void RunVerifier(const std::string& path, int fd) {
  const auto [db, f] =
      testing::OpenReadOnlyOrExit(StoreOptions(path, 0), "f", fd);
  std::string out;
  for (int k = 0; k < kKeys; ++k) {
    out += std::to_string(f->Count(KeyName(k))) + "\n";
  }
  out += "OK\n";
  testing::SendAll(fd, out);
  _exit(0);
}

std::string Verify(const std::string& path, std::vector<int>* counts) {
  const std::vector<std::string> lines =
      testing::RunChild([&](int fd) { RunVerifier(path, fd); });
  if (lines.size() != kKeys + 1 || lines.back() != "OK") {
    return lines.empty() ? "verifier said nothing" : lines.front();
  }
  counts->assign(kKeys, 0);
  for (int k = 0; k < kKeys; ++k) (*counts)[k] = std::stoi(lines[k]);
  return "";
}

class MultiWriterCrashTest
    : public ::testing::TestWithParam<std::tuple<Durability, FilterType>> {};

TEST_P(MultiWriterCrashTest, AcknowledgedOpsSurviveExactlyOnce) {
  const Durability mode = std::get<0>(GetParam());
  const FilterType type = std::get<1>(GetParam());
  std::mt19937_64 rng(0xc4a5 + static_cast<int>(mode) * 7 +
                      static_cast<int>(type));
  const uint32_t shards = type == FilterType::kCuckoo ? 1 : 2;
  TempDir dir;
  std::vector<int> model(kKeys, 0);  // the recovered state so far
  int acked_total = 0, uncertain_total = 0;
  for (int iter = 0; iter < kIterations; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(p[0]);
      RunWriter(dir.db(), type, mode, shards, rng(), iter, p[1]);
    }
    close(p[1]);
    const int delay_ms = static_cast<int>(20 + rng() % 150);
    bool killed = false;
    const std::string text =
        testing::ReadUntilReadyThenKill(p[0], pid, delay_ms, &killed);
    ASSERT_TRUE(killed) << text.substr(0, 300);
    std::vector<int> expected = model;
    std::vector<int> lo_slack(kKeys, 0), hi_slack(kKeys, 0);
    std::map<int, std::pair<char, int>> inflight;  // thread -> (op, key)
    for (const std::string& line : Lines(text)) {
      if (line.empty() || line == "R") continue;
      ASSERT_NE(line[0], 'E') << line;
      std::istringstream in(line.substr(2));
      int t, k;
      char op;
      in >> t >> op >> k;
      if (line[0] == 'B') {
        inflight[t] = {op, k};
      } else {
        expected[k] += op == 'R' ? -1 : 1;
        inflight.erase(t);
        ++acked_total;
      }
    }
    for (const auto& [t, ok] : inflight) {
      (ok.first == 'R' ? lo_slack : hi_slack)[ok.second] += 1;
      ++uncertain_total;
    }
    std::vector<int> observed;
    std::string err = Verify(dir.db(), &observed);
    ASSERT_EQ(err, "") << "store did not open cleanly";
    for (int k = 0; k < kKeys; ++k) {
      if (type == FilterType::kBloom) {
        if (expected[k] > 0) {
          ASSERT_EQ(observed[k], 1) << "acknowledged add lost, key " << k;
        }
        continue;
      }
      ASSERT_GE(observed[k], expected[k] - lo_slack[k])
          << "acknowledged op lost, key " << k;
      ASSERT_LE(observed[k], expected[k] + hi_slack[k])
          << "op applied twice or unacknowledged op kept, key " << k;
    }
    model = observed;
  }
  // sync acknowledges an fdatasync at a time: a loaded machine runs few.
  EXPECT_GT(acked_total, mode == Durability::kSync ? 20 : 100)
      << "the writers hardly ran";
  std::printf("%s %s: %d acked ops over %d kills, %d in flight\n",
              FilterTypeName(type), DurabilityName(mode), acked_total,
              kIterations, uncertain_total);
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndTypes, MultiWriterCrashTest,
    ::testing::Combine(
        ::testing::Values(Durability::kJournal, Durability::kSync),
        ::testing::Values(FilterType::kBloom, FilterType::kCountingBloom,
                          FilterType::kCuckoo)),
    [](const auto& info) {
      return std::string(DurabilityName(std::get<0>(info.param))) + "_" +
             std::string(FilterTypeName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace shardfilter
