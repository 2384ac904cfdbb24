// StripedCounter (engine/internal/striped_counter.h): adds from more threads
// than it has slots (so some threads share a slot) are all counted, and
// reads during the adds never exceed the total and never go back (each
// slot's value only grows, and coherence orders one slot's loads) (TSan in
// CI).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shardfilter/engine/internal/striped_counter.h"

namespace shardfilter::internal {
namespace {

TEST(StripedCounterStressTest, EveryThreadsAddsAreCounted) {
  StripedCounter c;
  constexpr int kThreads = 24, kAdds = 20000;
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
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) c.Add(i % 2 == 0 ? 1 : 5);
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_FALSE(overcounted.load());
  EXPECT_EQ(c.Load(), uint64_t{kThreads} * (kAdds / 2) * 6);
}

}  // namespace
}  // namespace shardfilter::internal
