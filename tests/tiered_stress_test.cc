// Concurrency stress of TieredFilter: writers add (and, for removable
// filters, add-then-remove) while readers query keys whose adds were
// acknowledged; no false negative may ever be seen, and a removed key of
// the exact level must be absent. Standalone and persistent (journal,
// background checkpoints). Scaled down under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/tiered_filter.h"
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
  return "race:librocksdb.so\n";
}
#endif

namespace shardfilter {
namespace {

using testing::Key;

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kPerWriter = 3'000;
#else
constexpr uint64_t kPerWriter = 40'000;
#endif
constexpr int kWriters = 2, kReaders = 2;

TieredSpec Spec(FilterType type, bool exact) {
  TieredSpec t;
  FilterSpec a, b;
  a.type = b.type = type;
  a.capacity = b.capacity = kWriters * kPerWriter * 2;
  a.fpp = 0.1;
  b.fpp = 0.01;
  a.shards = 4;
  b.shards = 8;
  t.levels = {a, b};
  t.exact_level = exact;
  t.durability = Durability::kJournal;
  return t;
}

// Writer w adds keys (w, i) in order and publishes i + 1 as acknowledged;
// with `removes` it also adds and removes keys of stream 100 + w and checks
// they are gone. Readers query random acknowledged keys.
void Stress(TieredFilter& t, bool removes, uint64_t per_writer = kPerWriter) {
  std::atomic<uint64_t> acked[kWriters];
  for (auto& a : acked) a.store(0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> false_negatives{0}, errors{0}, ghosts{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t i = 0; i < per_writer; ++i) {
        if (!t.Add(Key(w + 1, i)).ok()) errors.fetch_add(1);
        // Release: a reader that sees i + 1 sees the add's effects.
        acked[w].store(i + 1, std::memory_order_release);
        if (removes && i % 8 == 0) {
          std::string k = Key(100 + w, i);
          if (!t.Add(k).ok() || !t.Remove(k).ok()) errors.fetch_add(1);
          Result<bool> r = t.Contains(k);
          if (!r.ok() || *r) ghosts.fetch_add(1);
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      uint64_t state = 1234 + r;
      std::vector<std::string> keys(64);
      std::vector<std::string_view> views(64);
      std::vector<uint8_t> out(64);
      while (!stop.load(std::memory_order_relaxed)) {
        int w = static_cast<int>(testing::SplitMix64(&state) % kWriters);
        uint64_t n = acked[w].load(std::memory_order_acquire);
        if (n == 0) continue;
        for (size_t j = 0; j < keys.size(); ++j) {
          keys[j] = Key(w + 1, testing::SplitMix64(&state) % n);
          views[j] = keys[j];
        }
        if (!t.ContainsKeys(views, out).ok()) errors.fetch_add(1);
        for (uint8_t b : out) false_negatives.fetch_add(b == 0);
        Result<bool> one = t.Contains(keys[0]);
        if (!one.ok() || !*one) false_negatives.fetch_add(1);
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  stop.store(true);
  for (size_t i = kWriters; i < threads.size(); ++i) threads[i].join();
  EXPECT_EQ(false_negatives.load(), 0u);
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(ghosts.load(), 0u);
  for (int w = 0; w < kWriters; ++w) {
    for (uint64_t i = 0; i < per_writer; ++i) {
      ASSERT_TRUE(*t.Contains(Key(w + 1, i)));
    }
  }
}

TEST(TieredStressTest, StandaloneBloomWithExactLevel) {
  auto t = TieredFilter::Create(Spec(FilterType::kBloom, true));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Stress(**t, false);
}

TEST(TieredStressTest, StandaloneCuckooAddsAndRemoves) {
  auto t = TieredFilter::Create(Spec(FilterType::kCuckoo, true));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Stress(**t, true);
}

TEST(TieredStressTest, PersistentCountingWithBackgroundCheckpoints) {
  testing::TempDir dir;
  DatabaseOptions o = testing::Options(dir.db());
  o.checkpoint_interval_ms = 20;
  auto db = testing::MustOpen(o);
  ASSERT_NE(db, nullptr);
  auto t = TieredFilter::Create(db.get(), "s",
                                Spec(FilterType::kCountingBloom, true));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Stress(**t, true, kPerWriter / 8);  // every add writes RocksDB 3 times
  SF_ASSERT_OK(db->background_status());
}

}  // namespace
}  // namespace shardfilter
