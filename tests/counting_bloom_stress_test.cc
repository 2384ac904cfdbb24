// Concurrency stress of CountingBloomFilter: threads add and remove
// disjoint key sets (and churn a shared set) while others query. Checked:
// a kept key is always present once its add is published, nothing is lost
// after join, and the item count is exact. Runs under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shardfilter/filters/counting_bloom_filter.h"
#include "test_util.h"

#if defined(__SANITIZE_THREAD__)
#define SF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SF_TSAN 1
#endif
#endif

namespace shardfilter {
namespace {

using ::shardfilter::testing::SplitMix64;

#ifdef SF_TSAN
constexpr uint64_t kPerThread = 10'000;
#else
constexpr uint64_t kPerThread = 150'000;
#endif

uint64_t HashOf(uint64_t stream, uint64_t i) {
  uint64_t s = (stream << 40) ^ i;
  return SplitMix64(&s);
}

class CountingStressTest : public ::testing::TestWithParam<int> {};

TEST_P(CountingStressTest, DisjointAddRemoveLosesNothing) {
  const int threads = GetParam();
  // Small stripe count relative to the work: writers do meet on stripes.
  auto created = CountingBloomFilter::Create(
      {.capacity = kPerThread * threads, .fpp = 0.01});
  ASSERT_TRUE(created.ok());
  CountingBloomFilter& f = **created;
  std::vector<std::atomic<uint64_t>> published(threads);
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      uint64_t rng = 7 + t;
      std::vector<uint64_t> batch;
      for (uint64_t i = 0; i < kPerThread; ++i) {
        // Keys: stream t is kept; stream 100 + t is added then removed;
        // stream 1000 is shared churn (every thread adds then removes it).
        f.AddHashInline(HashOf(t, i));
        f.AddHashInline(HashOf(100 + t, i));
        f.AddHashInline(HashOf(1000, i % 64));
        if (f.RemoveHash(HashOf(100 + t, i)).ok() == false) ++failures;
        if (f.RemoveHash(HashOf(1000, i % 64)).ok() == false) ++failures;
        published[t].store(i + 1, std::memory_order_release);
        if (!f.MayContainHashInline(HashOf(t, SplitMix64(&rng) % (i + 1)))) {
          ++failures;
        }
        const int other = static_cast<int>(SplitMix64(&rng) % threads);
        const uint64_t seen = published[other].load(std::memory_order_acquire);
        if (seen > 0 &&
            f.CountHash(HashOf(other, SplitMix64(&rng) % seen)) == 0) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0u);
  for (int t = 0; t < threads; ++t) {
    for (uint64_t i = 0; i < kPerThread; ++i) {
      ASSERT_TRUE(f.MayContainHash(HashOf(t, i))) << t << " " << i;
    }
  }
  const FilterStats s = f.Stats();
  EXPECT_EQ(s.items, kPerThread * threads);
  EXPECT_EQ(s.deletes, 2 * kPerThread * threads);
}

INSTANTIATE_TEST_SUITE_P(Threads, CountingStressTest,
                         ::testing::Values(2, 4, 8));

// Concurrent batched adds of the same keys from every thread: counts add up
// exactly (each key's update is atomic under its stripe lock).
TEST(CountingStress, ConcurrentSameKeyCounts) {
  auto created = CountingBloomFilter::Create({.capacity = 1000});
  ASSERT_TRUE(created.ok());
  CountingBloomFilter& f = **created;
  std::vector<uint64_t> hashes;
  for (uint64_t i = 0; i < 100; ++i) hashes.push_back(HashOf(2000, i));
  constexpr int kThreads = 4, kRounds = 3;  // 12 copies each, below 15
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) (void)f.AddHashes(hashes, nullptr);
    });
  }
  for (auto& th : pool) th.join();
  for (uint64_t h : hashes) EXPECT_GE(f.CountHash(h), 12u);
  EXPECT_EQ(f.Stats().items, 100u * kThreads * kRounds);
}

}  // namespace
}  // namespace shardfilter
