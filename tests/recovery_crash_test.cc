// Crash recovery under kill -9, for every durability mode and filter type.
//
// The test process itself never opens RocksDB or starts TBB threads: it
// forks (1) a writer child that adds and removes keys, checkpoints at random
// moments, and reports every op's begin and acknowledgement through a pipe,
// which the parent SIGKILLs at a random moment (a third of the time right
// after a checkpoint began); then (2) a verifier child that opens the store
// read-only and reports the count of every key. The parent checks the
// counts against its model of acknowledged operations:
//   journal / sync: count == acked adds - acked removes, except the keys of
//     the one op in flight at the kill, which may be either side of it (so
//     no acknowledged op is lost, none is applied twice);
//   none: the state of the last acknowledged checkpoint, or of a later one
//     that was in flight at the kill.
// The key universe is small (kKeys) and the filter large, so a false
// positive touching these keys' counts is far below 1e-6 per run. The
// "growing" variants start the filter at capacity 16 (4 shards), so its
// chains grow while the writer runs and kills land mid-growth. A growing
// Bloom or counting filter's rate (1e-7, compound) keeps false positives as
// rare. A cuckoo chain cannot promise that (it ends where a link would need
// fingerprints wider than 16 bits, filter_spec.h), so the growing cuckoo
// filter uses 16-bit fingerprints at 1e-2 and the keys are chosen with
// pairwise distinct fingerprints: a key's count then never includes
// another key's copies, whatever the links' sizes.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "crash_child_util.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/filters/hash.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Drain;
using testing::Lines;
using testing::Options;
using testing::Send;
using testing::Spec;
using testing::TempDir;

constexpr int kKeys = 200;
constexpr int kIterationsPerType = 16;  // x 3 types = 48 kills per mode

// kKeys names whose 16-bit cuckoo fingerprints (CuckooFilter::Locate:
// the hash's low 16 bits, 0 read as 1) are pairwise distinct.
const std::vector<std::string>& KeyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    std::vector<bool> taken(1 << 16);
    for (int i = 0; static_cast<int>(out.size()) < kKeys; ++i) {
      std::string name = "key-" + std::to_string(i);
      uint32_t fp = HashKey(name, kDefaultSeed) & 0xFFFF;
      fp += fp == 0;
      if (taken[fp]) continue;
      taken[fp] = true;
      out.push_back(std::move(name));
    }
    return out;
  }();
  return names;
}

const std::string& KeyName(int k) { return KeyNames()[k]; }

// Cuckoo holds at most 2b copies per key; counting counters saturate at 15.
int MaxCount(FilterType t) { return t == FilterType::kBloom ? 1 : 4; }

DatabaseOptions StoreOptions(const std::string& path) {
  DatabaseOptions o = Options(path);
  o.checkpoint_on_close = false;
  o.chunk_bytes = 64 << 10;
  return o;
}

// The writer child. Never returns.
[[noreturn]] void RunWriter(const std::string& path, FilterType type,
                            Durability durability, bool grow, uint64_t seed,
                            int fd) {
  auto fail = [&](const Status& s) {
    Send(fd, "E " + s.ToString());
    _exit(3);
  };
  auto db = Database::Open(StoreOptions(path));
  if (!db.ok()) fail(db.status());
  auto f = (*db)->Get("f");
  if (!f.ok()) {
    FilterSpec spec = Spec(type, grow ? 16 : 200'000, 4, durability);
    spec.fpp = grow ? 1e-7 : 0.001;
    if (grow && type == FilterType::kCuckoo) {
      spec.fpp = 1e-2;
      spec.fingerprint_bits = 16;
    }
    f = (*db)->Create("f", spec);
    if (!f.ok()) fail(f.status());
  }
  ShardedFilter& filter = **f;
  std::vector<int> count(kKeys);
  for (int k = 0; k < kKeys; ++k) count[k] = filter.Count(KeyName(k));
  Send(fd, "R");
  std::mt19937_64 rng(seed);
  const bool removes = type != FilterType::kBloom;
  const int max = MaxCount(type);
  for (;;) {
    int r = static_cast<int>(rng() % 100);
    int k = static_cast<int>(rng() % kKeys);
    if (r < 4) {
      Send(fd, "CB");
      auto st = (*db)->Checkpoint("f");
      if (!st.ok()) fail(st.status());
      Send(fd, "CA");
    } else if (r < 30 && removes && count[k] > 0) {
      Send(fd, "B R " + std::to_string(k));
      Status s = filter.Remove(KeyName(k));
      if (s.code() == StatusCode::kNotSupported) {
        // Refused: copies in two links of a grown chain (shard_chain.h).
        Send(fd, "X");
        continue;
      }
      if (!s.ok()) fail(s);
      --count[k];
      Send(fd, "A R " + std::to_string(k));
    } else if (r < 36) {
      // A batch of up to 4 distinct keys, one journal write.
      std::vector<int> ks;
      std::string line;
      for (int j = 0; j < 4; ++j) {
        int b = static_cast<int>(rng() % kKeys);
        if (count[b] >= max || std::find(ks.begin(), ks.end(), b) != ks.end())
          continue;
        ks.push_back(b);
        line += " " + std::to_string(b);
      }
      if (ks.empty()) continue;
      std::vector<std::string> names;
      for (int b : ks) names.push_back(KeyName(b));
      std::vector<std::string_view> views(names.begin(), names.end());
      Send(fd, "B M" + line);
      Status s = filter.AddKeys(views);
      if (!s.ok()) fail(s);
      for (int b : ks) ++count[b];
      Send(fd, "A M" + line);
    } else if (count[k] < max) {
      Send(fd, "B A " + std::to_string(k));
      Status s = filter.Add(KeyName(k));
      if (!s.ok()) fail(s);
      ++count[k];
      Send(fd, "A A " + std::to_string(k));
    }
  }
}

// The verifier child: read-only open, one "k count" line per key. Never
// returns.
[[noreturn]] void RunVerifier(const std::string& path, int fd) {
  const auto [db, f] = testing::OpenReadOnlyOrExit(StoreOptions(path), "f", fd);
  std::string out;
  for (int k = 0; k < kKeys; ++k) {
    out += std::to_string(f->Count(KeyName(k))) + "\n";
  }
  uint32_t links = 0;
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    links += f->shard_links(s);
  }
  out += "L " + std::to_string(links) + "\n";
  out += "OK\n";
  testing::SendAll(fd, out);
  _exit(0);
}

// Runs the verifier; fills counts or returns the error line.
std::string Verify(const std::string& path, std::vector<int>* counts,
                   uint32_t* links) {
  const std::vector<std::string> lines =
      testing::RunChild([&](int fd) { RunVerifier(path, fd); });
  if (lines.size() != kKeys + 2 || lines.back() != "OK" ||
      lines[kKeys].rfind("L ", 0) != 0) {
    return lines.empty() ? "verifier said nothing" : lines.front();
  }
  counts->assign(kKeys, 0);
  for (int k = 0; k < kKeys; ++k) (*counts)[k] = std::stoi(lines[k]);
  *links = static_cast<uint32_t>(std::stoul(lines[kKeys].substr(2)));
  return "";
}

class CrashTest
    : public ::testing::TestWithParam<std::tuple<Durability, bool>> {};

TEST_P(CrashTest, AcknowledgedOpsSurviveKillNineExactlyOnce) {
  const Durability mode = std::get<0>(GetParam());
  const bool grow = std::get<1>(GetParam());
  std::mt19937_64 rng(0x5eed + static_cast<int>(mode) + (grow ? 100 : 0));
  int kills_during_checkpoint = 0, total_acked = 0;
  uint32_t max_links = 0;
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    TempDir dir;
    std::vector<int> model(kKeys, 0);  // the recovered state so far
    for (int iter = 0; iter < kIterationsPerType; ++iter) {
      SCOPED_TRACE(std::string(FilterTypeName(type)) + " iteration " +
                   std::to_string(iter));
      int p[2];
      ASSERT_EQ(pipe(p), 0);
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(p[0]);
        RunWriter(dir.db(), type, mode, grow, rng(), p[1]);
      }
      close(p[1]);
      // Read until the kill moment, then SIGKILL, then drain the rest.
      const bool at_checkpoint = iter % 3 == 0;
      const int delay_ms = static_cast<int>(5 + rng() % 60);
      std::string text;
      auto start = std::chrono::steady_clock::now();
      bool ready = false, triggered = false;
      auto deadline = start + std::chrono::seconds(5);
      for (;;) {
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline) break;
        pollfd pfd{p[0], POLLIN, 0};
        int wait = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                  now)
                .count());
        if (poll(&pfd, 1, std::max(wait, 1)) <= 0) continue;
        char buf[4096];
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n <= 0) break;  // child died on its own: reported below
        text.append(buf, n);
        if (!ready && text.find("R\n") != std::string::npos) {
          ready = true;
          if (!at_checkpoint) {
            deadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(delay_ms);
          } else {
            deadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(400);
          }
        }
        if (at_checkpoint && !triggered) {
          size_t cb = text.rfind("CB\n");
          if (cb != std::string::npos &&
              text.find("CA\n", cb) == std::string::npos) {
            triggered = true;
            deadline = std::chrono::steady_clock::now() +
                       std::chrono::microseconds(rng() % 3000);
          }
        }
      }
      kill(pid, SIGKILL);
      text += Drain(p[0]);
      close(p[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFSIGNALED(status))
          << "writer exited by itself: " << text.substr(0, 300);
      // Replay the report into the model.
      std::vector<int> acked = model;
      std::vector<int> at_cb, committed_cb = model;  // snapshots (none mode)
      bool cb_open = false;
      std::vector<std::pair<char, std::vector<int>>> inflight;
      for (const std::string& line : Lines(text)) {
        if (line.empty() || line == "R") continue;
        if (line == "X") {  // the op in flight was refused: changed nothing
          inflight.clear();
          continue;
        }
        ASSERT_NE(line[0], 'E') << line;
        if (line == "CB") {
          at_cb = acked;
          cb_open = true;
        } else if (line == "CA") {
          committed_cb = at_cb;
          cb_open = false;
        } else if (line.size() > 2 && (line[0] == 'B' || line[0] == 'A')) {
          std::istringstream in(line.substr(2));
          char op;
          in >> op;
          std::vector<int> ks;
          for (int k; in >> k;) ks.push_back(k);
          if (line[0] == 'B') {
            inflight = {{op, ks}};
          } else {
            for (int k : ks) acked[k] += op == 'R' ? -1 : 1;
            inflight.clear();
            ++total_acked;
          }
        }
      }
      if (at_checkpoint && cb_open) ++kills_during_checkpoint;
      std::vector<int> observed;
      uint32_t links = 0;
      std::string err = Verify(dir.db(), &observed, &links);
      max_links = std::max(max_links, links);
      ASSERT_EQ(err, "") << "store did not open cleanly";
      const int cap = MaxCount(type);
      if (mode == Durability::kNone) {
        // Either the last acknowledged checkpoint or the one in flight.
        auto matches = [&](const std::vector<int>& snap) {
          for (int k = 0; k < kKeys; ++k) {
            if (observed[k] != std::min(snap[k], cap)) return false;
          }
          return true;
        };
        bool ok = matches(committed_cb) || (cb_open && matches(at_cb));
        ASSERT_TRUE(ok) << "state matches no checkpoint";
      } else {
        std::map<int, int> slack_up, slack_down;
        for (const auto& [op, ks] : inflight) {
          for (int k : ks) (op == 'R' ? slack_down : slack_up)[k] = 1;
        }
        for (int k = 0; k < kKeys; ++k) {
          int want = std::min(acked[k], cap);
          int lo = want - slack_down[k];
          int hi = std::min(want + slack_up[k], cap);
          ASSERT_GE(observed[k], lo) << "key " << k << ": acknowledged op lost";
          ASSERT_LE(observed[k], hi) << "key " << k << ": op applied twice";
        }
      }
      model = observed;
    }
  }
  EXPECT_GT(total_acked, 100);
  // At least one kill landed while a checkpoint was running.
  EXPECT_GT(kills_during_checkpoint, 0);
  // The growing variants did grow (4 shards start with 4 links).
  if (grow) {
    EXPECT_GT(max_links, 8u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CrashTest,
    ::testing::Combine(::testing::Values(Durability::kNone,
                                         Durability::kJournal,
                                         Durability::kSync),
                       ::testing::Bool()),
    [](const auto& info) {
      return std::string(DurabilityName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "_growing" : "");
    });

}  // namespace
}  // namespace shardfilter
