// Concurrent adds (single and batched) and lock-free queries while every
// shard's chain grows: no acknowledged key is ever reported absent, and the
// chains end with at most their capacity per link. Scaled down under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shardfilter/engine/sharded_filter.h"
#include "test_util.h"

namespace shardfilter {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kPerWriter = 8'000;
#else
constexpr uint64_t kPerWriter = 60'000;
#endif
constexpr int kWriters = 3, kReaders = 2;

uint64_t KeyHash(int writer, uint64_t i) {
  uint64_t state = (static_cast<uint64_t>(writer) << 40) ^ (i * 0x9E37u);
  return testing::SplitMix64(&state);
}

class ExpansionStressTest : public ::testing::TestWithParam<FilterType> {};

TEST_P(ExpansionStressTest, QueriesNeverMissAcknowledgedKeysWhileGrowing) {
  FilterSpec spec;
  spec.type = GetParam();
  spec.capacity = 256;  // grows ~8 links per shard
  spec.fpp = 0.01;
  spec.shards = 4;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  ShardedFilter& filter = **f;
  std::atomic<uint64_t> done[kWriters] = {};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0}, failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t i = 0; i < kPerWriter;) {
        if (i % 3 == 0 && i + 16 <= kPerWriter) {
          std::vector<uint64_t> batch;
          for (int j = 0; j < 16; ++j) batch.push_back(KeyHash(w, i + j));
          if (!filter.AddHashes(batch).ok()) failures.fetch_add(1);
          i += 16;
        } else {
          if (!filter.AddHash(KeyHash(w, i)).ok()) failures.fetch_add(1);
          ++i;
        }
        // Release: a reader that acquires i sees every add below it done.
        done[w].store(i, std::memory_order_release);
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      uint64_t state = 77 + r;
      std::vector<uint64_t> batch(32);
      std::vector<uint8_t> out(32);
      while (!stop.load(std::memory_order_relaxed)) {
        int w = static_cast<int>(testing::SplitMix64(&state) % kWriters);
        uint64_t n = done[w].load(std::memory_order_acquire);
        if (n == 0) continue;
        for (uint64_t& h : batch) {
          h = KeyHash(w, testing::SplitMix64(&state) % n);
        }
        filter.MayContainHashes(batch, out);
        for (size_t j = 0; j < batch.size(); ++j) {
          if (!out[j] || !filter.MayContainHash(batch[j])) misses.fetch_add(1);
        }
        if (r == 0) (void)filter.Stats();
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  stop.store(true);
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(misses.load(), 0u);
  for (int w = 0; w < kWriters; ++w) {
    for (uint64_t i = 0; i < kPerWriter; ++i) {
      ASSERT_TRUE(filter.MayContainHash(KeyHash(w, i))) << w << " " << i;
    }
  }
  for (uint32_t s = 0; s < filter.shard_count(); ++s) {
    EXPECT_GT(filter.shard_links(s), 3u);
    ShardStats st = filter.Stats().shards[s];
    EXPECT_LE(st.filter.target_fpr, spec.fpp);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ExpansionStressTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

}  // namespace
}  // namespace shardfilter
