// Per-thread counter stripes (filters/detail/thread_stripe.h): adds from
// more threads than there are owned stripes (so some threads take the
// shared one) are all counted; reads during the adds never exceed the
// total and never go back; a stripe given back by an ending thread keeps
// its count for the next owner; an OptionalStripedCount is exact striped
// or not; and a Bloom filter's `items`, bumped through them by every add
// that set a new bit, stays exact, large or small (TSan in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/detail/thread_stripe.h"

namespace shardfilter::internal {
namespace {

TEST(ThreadStripeStressTest, EveryThreadsAddsAreCounted) {
  ThreadStripedCount c;
  // More threads than owned stripes, all alive at once: some share.
  constexpr int kThreads = kOwnedStripes + 12, kAdds = 100000;
  std::atomic<bool> done{false};
  std::atomic<bool> overcounted{false};  // or went back
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const uint64_t now = c.Load();
      if (now > uint64_t{kThreads} * kAdds * 3 || now < last) {
        overcounted = true;
      }
      last = now;
      // Leaves the cores to the writers (their overlap is the point).
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  // Every writer claims its stripe first (all alive: none is given back).
  // The shared stripe's writers then add alone, started together, while
  // the owners sleep: both cores run shared writers at once, so a lost
  // update there would show.
  std::atomic<int> claimed{0}, shared_ready{0};
  std::atomic<int> shared_count{0};
  std::mutex mu;
  std::condition_variable cv;
  int shared_left = -1;  // GUARDED_BY(mu); -1 until every writer claimed
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      const bool shared = ThisThreadStripe() == kSharedStripe;
      if (shared) shared_count.fetch_add(1);
      if (claimed.fetch_add(1) + 1 == kThreads) {
        std::lock_guard<std::mutex> l(mu);
        shared_left = shared_count.load();
        cv.notify_all();
      }
      if (shared) {
        shared_ready.fetch_add(1);
        while (claimed.load() < kThreads ||
               shared_ready.load() < shared_count.load()) {
          std::this_thread::yield();
        }
      } else {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return shared_left == 0; });
      }
      for (int i = 0; i < kAdds; ++i) c.Add(i % 2 == 0 ? 1 : 5);
      if (shared) {
        std::unique_lock<std::mutex> l(mu);
        // Once the last claimer has set the count.
        cv.wait(l, [&] { return shared_left >= 0; });
        if (--shared_left == 0) cv.notify_all();
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_FALSE(overcounted.load());
  EXPECT_EQ(c.Load(), uint64_t{kThreads} * (kAdds / 2) * 6);
}

TEST(ThreadStripeStressTest, SharedAddsFromAnyThreadAreCounted) {
  // AddShared races the owners' plain stores: it must never land on an
  // owned stripe (an owner's store would overwrite it).
  ThreadStripedCount c;
  constexpr int kThreads = 4, kAdds = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) {
        if ((i + t) % 3 == 0) {
          c.AddShared(2);
        } else {
          c.Add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  uint64_t want = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kAdds; ++i) want += (i + t) % 3 == 0 ? 2 : 1;
  }
  EXPECT_EQ(c.Load(), want);
}

TEST(ThreadStripeStressTest, StripesOutliveTheirThreadsAndAreReused) {
  ThreadStripedCount c;
  const uint32_t before = ClaimedCounterStripes();
  // Waves of short-lived threads, each wave as many as the owned stripes:
  // without the release at thread end the second wave would find none
  // free; without the hand-over's ordering a new owner could start from
  // a stale value and lose the previous owner's adds.
  constexpr int kWaves = 6, kAdds = 3000;
  std::atomic<int> owned{0};
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < kOwnedStripes; ++t) {
      threads.emplace_back([&] {
        if (ThisThreadStripe() < kOwnedStripes) owned.fetch_add(1);
        for (int i = 0; i < kAdds; ++i) c.Add(1);
      });
    }
    for (auto& t : threads) t.join();
  }
  EXPECT_EQ(c.Load(), uint64_t{kWaves} * kOwnedStripes * kAdds);
  // Every wave found at least the stripes free before it (a wave's
  // threads are joined, so their stripes are back, before the next).
  EXPECT_GE(owned.load(), kWaves * static_cast<int>(kOwnedStripes - before));
  EXPECT_EQ(ClaimedCounterStripes(), before);
}

// OptionalStripedCount, striped or one word: the owners' plain stores,
// the unowned threads' and AddShared's locked adds all count, from more
// threads than owned stripes.
TEST(ThreadStripeStressTest, OptionalStripedCountIsExactEitherWay) {
  for (const bool striped : {true, false}) {
    OptionalStripedCount c(striped);
    EXPECT_EQ(c.striped(), striped);
    constexpr int kThreads = kOwnedStripes + 4, kAdds = 20000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kAdds; ++i) {
          if ((i + t) % 5 == 0) {
            c.AddShared(3);
          } else {
            c.Add(1);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    uint64_t want = 0;
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kAdds; ++i) want += (i + t) % 5 == 0 ? 3 : 1;
    }
    EXPECT_EQ(c.Load(), want) << "striped " << striped;
    c.Reset(7);
    EXPECT_EQ(c.Load(), 7u);
  }
}

// A Bloom filter's items, striped (a large table) or one word (a small
// one, BloomFilter::kStripedItemsMinBytes).
class BloomItemsTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(BloomItemsTest, ExactUnderManyWriters) {
  BloomOptions o;
  o.capacity = GetParam();
  o.fpp = 0.001;
  auto r = BloomFilter::Create(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  BloomFilter& f = **r;
  constexpr int kThreads = kOwnedStripes + 4, kKeys = 10000;
  std::atomic<uint64_t> new_bits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t mine = 0;
      for (int i = 0; i < kKeys; ++i) {
        // Overlapping key ranges: some adds find the key present.
        const std::string key = std::to_string((t / 2) * kKeys + i);
        mine += f.Add(key);
      }
      new_bits.fetch_add(mine);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(f.Stats().items, new_bits.load());
}

INSTANTIATE_TEST_SUITE_P(LargeAndSmall, BloomItemsTest,
                         ::testing::Values(uint64_t{400000}, uint64_t{500}));

}  // namespace
}  // namespace shardfilter::internal
