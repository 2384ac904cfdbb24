// The sizing memo under concurrent readers and writers (M3 in
// filters/internal/sizing_memo.h): threads put and find keys that share
// slots (many more keys than slots), and every hit is the value put for
// exactly that key, never a mix of two entries. Under ThreadSanitizer
// (label "concurrency") it also checks that the seqlock's words race
// only as atomics.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "shardfilter/filters/internal/sizing_memo.h"

namespace shardfilter {
namespace {

using internal::SizingKey;
using internal::SizingMemo;

// Every word of the value follows from the key, so a torn entry (the key of
// one and a value word of another) shows.
SizingKey Key(uint64_t i) { return SizingKey{{i % 3 + 1, i, i ^ 0x5555, i}}; }
BlockedSizing Value(uint64_t i) {
  BlockedSizing v;
  v.blocks = i * 3 + 1;
  v.k = static_cast<uint32_t>(i % 33);
  v.expected_fpr = static_cast<double>(i) + 0.5;
  return v;
}

TEST(SizingMemoStressTest, HitsAreNeverTorn) {
  auto memo = std::make_unique<SizingMemo>();
  constexpr uint64_t kKeys = 4 * SizingMemo::kSlots;
  constexpr int kThreads = 4;
  constexpr uint64_t kRounds = 200'000;
  std::atomic<uint64_t> hits{0}, torn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = 0x9E3779B97F4A7C15ULL * (t + 1);
      for (uint64_t r = 0; r < kRounds; ++r) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const uint64_t i = x % kKeys;
        BlockedSizing out;
        if (memo->Find(Key(i), &out)) {
          hits.fetch_add(1, std::memory_order_relaxed);
          const BlockedSizing want = Value(i);
          if (out.blocks != want.blocks || out.k != want.k ||
              out.expected_fpr != want.expected_fpr) {
            torn.fetch_add(1, std::memory_order_relaxed);
          }
        } else {
          memo->Put(Key(i), Value(i));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
}

}  // namespace
}  // namespace shardfilter
