// DedupStore under concurrency: threads insert overlapping key sets (single
// and batched, with concurrent Contains and, in one test, TTL rotation);
// every key must be reported new exactly once across all threads. Each
// test runs with the default journal, a small one (its halves move into
// RocksDB while threads commit) and none (a RocksDB write per call). One
// test adds removes and re-inserts against per-thread models. Scaled down
// under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "shardfilter/engine/dedup_store.h"
#include "store_test_util.h"

#if defined(__SANITIZE_THREAD__)
// RocksDB and oneTBB come from Debian uninstrumented. Only their own
// modules are suppressed here: no frame of ours. RocksDB's group commit
// (the leader copies its followers' WriteBatches into a reused batch and the
// WAL, synchronised by atomics TSan cannot see) is handled at our boundary:
// Store::Write and DedupTable::Write do not record accesses inside the
// RocksDB call (filters/detail/tsan.h, TsanIgnoreAccesses); TBB's
// fork/join edges are stated by engine/internal/parallel.h.
extern "C" const char* __tsan_default_suppressions() {
  // Interceptors (memcpy, memcmp) called by RocksDB's memtable and WAL
  // code directly.
  return "called_from_lib:librocksdb.so\n"
         "race:librocksdb.so\n";
}
#endif

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::TempDir;

#if defined(__SANITIZE_THREAD__)
constexpr int kKeys = 3000;
#else
constexpr int kKeys = 40000;
#endif
constexpr int kThreads = 4;

std::string KeyName(int k) { return "key-" + std::to_string(k); }

// Each thread walks the whole universe from its own offset, in its own
// mode (single or batch), so every key is inserted kThreads times at
// about the same moment by different threads.
void Hammer(DedupStore& d, std::vector<std::atomic<int>>& news) {
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool batch = t % 2 == 1;
      std::vector<std::string> keys;
      for (int i = 0; i < kKeys; ++i) {
        int k = (i + t * 7) % kKeys;
        if (!batch) {
          auto r = d.InsertIfAbsent(KeyName(k));
          if (!r.ok()) ++errors;
          if (r.ok() && *r) news[k].fetch_add(1);
          if (i % 16 == 0 && !d.Contains(KeyName(k)).value()) ++errors;
          continue;
        }
        keys.push_back(KeyName(k));
        if (keys.size() == 32 || i + 1 == kKeys) {
          std::vector<std::string_view> views(keys.begin(), keys.end());
          std::vector<uint8_t> out;
          if (!d.InsertIfAbsentBatch(views, &out).ok()) ++errors;
          for (size_t j = 0; j < out.size(); ++j) {
            if (out[j]) news[std::stoi(keys[j].substr(4))].fetch_add(1);
          }
          keys.clear();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
}

class DedupStressTest : public ::testing::TestWithParam<uint64_t> {};

INSTANTIATE_TEST_SUITE_P(Journal, DedupStressTest,
                         ::testing::Values(uint64_t{16} << 20,
                                           uint64_t{128} << 10, uint64_t{0}));

TEST_P(DedupStressTest, EachKeyNewExactlyOnce) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  DedupOptions o;
  o.journal_bytes = GetParam();
  o.expected_keys = kKeys / 4;  // chains grow while threads insert
  o.lock_stripes = 64;
  auto d = DedupStore::Open(*db, "s", o);
  SF_ASSERT_OK(d.status());
  std::vector<std::atomic<int>> news(kKeys);
  Hammer(**d, news);
  for (int k = 0; k < kKeys; ++k) {
    ASSERT_EQ(news[k].load(), 1) << KeyName(k);
  }
  DedupStats st = (*d)->Stats();
  EXPECT_EQ(st.new_keys, static_cast<uint64_t>(kKeys));
  EXPECT_EQ(st.duplicates, static_cast<uint64_t>(kKeys) * (kThreads - 1));
}

TEST_P(DedupStressTest, RotationDuringInsertsKeepsExactness) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto ms = std::make_shared<std::atomic<uint64_t>>(0);
  DedupOptions o;
  o.journal_bytes = GetParam();
  // A window far longer than the run, cut into many small partitions: the
  // clock thread rotates often, but no key can expire during the test.
  o.ttl_ms = 64'000'000'000;  // g = 1e9 ms
  o.partitions = 64;
  o.expected_keys = kKeys * 10;
  o.clock = [ms] { return ms->load(); };
  auto d = DedupStore::Open(*db, "s", o);
  SF_ASSERT_OK(d.status());
  std::atomic<bool> stop{false};
  std::thread clock([&] {
    // At most 40 of the 64 partitions: nothing expires.
    for (int step = 0; step < 160 && !stop.load(); ++step) {
      ms->fetch_add(250'000'000);  // a quarter of a partition
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::vector<std::atomic<int>> news(kKeys);
  Hammer(**d, news);
  stop = true;
  clock.join();
  for (int k = 0; k < kKeys; ++k) {
    ASSERT_EQ(news[k].load(), 1) << KeyName(k);
  }
  EXPECT_GT((*d)->Stats().current_bucket, 0u);
}

// Each thread owns a key range and inserts, removes and re-inserts in it
// against its own model, while a reader checks keys that stay present
// throughout; then a reopen must hold exactly the models' keys.
TEST_P(DedupStressTest, RemovesAndReinsertsStayExact) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  DedupOptions o;
  o.journal_bytes = GetParam();
  o.expected_keys = kKeys;
  constexpr int kPerThread = kKeys / kThreads;
  std::vector<std::set<int>> models(kThreads);
  {
    auto d = DedupStore::Open(*db, "s", o);
    SF_ASSERT_OK(d.status());
    for (int k = 0; k < kKeys; k += 8) {  // the reader's keys
      ASSERT_TRUE((*d)->InsertIfAbsent(KeyName(k)).value());
      models[k / kPerThread].insert(k);
    }
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    std::thread reader([&] {
      while (!stop.load()) {
        for (int k = 0; k < kKeys && !stop.load(); k += 8) {
          auto c = (*d)->Contains(KeyName(k));
          if (!c.ok() || !*c) ++errors;
        }
      }
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        std::set<int>& m = models[t];
        for (int step = 0; step < kPerThread * 4; ++step) {
          int k = t * kPerThread + static_cast<int>(rng() % kPerThread);
          if (k % 8 == 0) continue;  // the reader's
          const bool remove = rng() % 3 == 0;
          auto r = remove ? (*d)->Remove(KeyName(k))
                          : (*d)->InsertIfAbsent(KeyName(k));
          if (!r.ok()) {
            ++errors;
            continue;
          }
          const bool present = m.count(k) == 1;
          // Remove answers "was present", InsertIfAbsent "was absent".
          if (remove) {
            if (*r != present) ++errors;
            m.erase(k);
          } else {
            if (*r == present) ++errors;
            m.insert(k);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    stop = true;
    reader.join();
    EXPECT_EQ(errors.load(), 0);
  }
  auto d = DedupStore::Open(*db, "s", o);
  SF_ASSERT_OK(d.status());
  for (int k = 0; k < kKeys; ++k) {
    bool want = models[k / kPerThread].count(k) == 1;
    ASSERT_EQ((*d)->Contains(KeyName(k)).value(), want) << KeyName(k);
  }
}

}  // namespace
}  // namespace shardfilter
