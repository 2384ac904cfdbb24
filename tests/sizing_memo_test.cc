// The sizing memo (filters/internal/sizing_memo.h): a memoized sizing
// equals the uncached search in every bit (M2), over a grid of capacities,
// rates, byte limits and layouts, on its first call and on later ones; the
// memo holds at most its fixed number of entries (M1).
#include "shardfilter/filters/internal/sizing_memo.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <string>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter {
namespace {

using internal::SizingKey;
using internal::SizingMemo;

// Equal results, or the same error.
void ExpectSame(const Result<BlockedSizing>& want,
                const Result<BlockedSizing>& got, const std::string& what) {
  ASSERT_EQ(want.ok(), got.ok()) << what;
  if (!want.ok()) {
    EXPECT_EQ(want.status().code(), got.status().code()) << what;
    EXPECT_EQ(want.status().message(), got.status().message()) << what;
    return;
  }
  EXPECT_EQ(want->blocks, got->blocks) << what;
  EXPECT_EQ(want->k, got->k) << what;
  EXPECT_EQ(std::bit_cast<uint64_t>(want->expected_fpr),
            std::bit_cast<uint64_t>(got->expected_fpr))
      << what;
}

constexpr uint64_t kCapacities[] = {1,     7,      100,       500,
                                    1'000, 12'345, 1'000'000, 1'000'000'000};
constexpr double kRates[] = {0.3, 0.02, 0.01, 0.005, 0.001, 1e-5};
constexpr uint64_t kMaxBytes[] = {UINT64_MAX, uint64_t{1} << 30, 4096, 64};

TEST(SizingMemoTest, SplitBlockEqualsTheSearch) {
  for (uint64_t n : kCapacities) {
    for (double p : kRates) {
      for (uint64_t max : kMaxBytes) {
        const std::string what = "split n=" + std::to_string(n) +
                                 " p=" + FormatRate(p) +
                                 " max=" + std::to_string(max);
        const auto want = internal::ComputeSplitBlockSizing(n, p, max);
        ExpectSame(want, SplitBlockBloomSizing(n, p, max), what + " (first)");
        ExpectSame(want, SplitBlockBloomSizing(n, p, max), what + " (again)");
      }
    }
  }
}

TEST(SizingMemoTest, WordBlockedEqualsTheSearch) {
  for (uint64_t n : kCapacities) {
    for (double p : kRates) {
      for (uint64_t max : kMaxBytes) {
        for (uint32_t k : {0u, 3u, 9u, 33u}) {
          const std::string what =
              "word n=" + std::to_string(n) + " p=" + FormatRate(p) +
              " k=" + std::to_string(k) + " max=" + std::to_string(max);
          const auto want = internal::ComputeWordBlockedSizing(n, p, k, max);
          ExpectSame(want, WordBlockedBloomSizing(n, p, k, max),
                     what + " (first)");
          ExpectSame(want, WordBlockedBloomSizing(n, p, k, max),
                     what + " (again)");
        }
      }
    }
  }
}

TEST(SizingMemoTest, CountingBlockedEqualsTheSearch) {
  for (uint64_t n : kCapacities) {
    for (double p : kRates) {
      for (uint64_t max : kMaxBytes) {
        for (uint32_t k : {0u, 6u, 40u}) {
          for (uint32_t slots : {128u, 512u, 0u}) {
            const std::string what =
                "blocked n=" + std::to_string(n) + " p=" + FormatRate(p) +
                " k=" + std::to_string(k) + " slots=" + std::to_string(slots) +
                " max=" + std::to_string(max);
            const auto want =
                internal::ComputeBlockedSizing(n, p, k, slots, max);
            ExpectSame(want, BlockedBloomSizing(n, p, k, slots, max),
                       what + " (first)");
            ExpectSame(want, BlockedBloomSizing(n, p, k, slots, max),
                       what + " (again)");
          }
        }
      }
    }
  }
}

// A filter's plan (layout choice and table) through the memo is the plan
// of the searches: the same table bytes as the search's result, for every
// layout.
TEST(SizingMemoTest, BloomTableBytesFollowTheSearch) {
  // Tables of fewer than 512 blocks: no rounding for folds (bloom_filter.cc).
  for (uint64_t n : {100u, 500u, 2'000u}) {
    for (double p : {0.01, 0.005, 0.001}) {
      BloomOptions o;
      o.capacity = n;
      o.fpp = p;
      o.layout = BloomLayout::kSplitBlock;
      const auto split = internal::ComputeSplitBlockSizing(n, p, o.max_bytes);
      ASSERT_TRUE(split.ok());
      EXPECT_EQ(*BloomFilter::TableBytes(o), split->blocks * 32)
          << n << " " << p;
      o.layout = BloomLayout::kBlocked;
      const auto word =
          internal::ComputeWordBlockedSizing(n, p, 0, o.max_bytes);
      ASSERT_TRUE(word.ok());
      EXPECT_EQ(*BloomFilter::TableBytes(o), word->blocks * 64)
          << n << " " << p;
    }
  }
}

// Mixed keys and values for the memo's own tests.
SizingKey Key(uint64_t i) { return SizingKey{{i % 3 + 1, i, ~i, i * 7}}; }
BlockedSizing Value(uint64_t i) {
  BlockedSizing v;
  v.blocks = i * 3 + 1;
  v.k = static_cast<uint32_t>(i % 33);
  v.expected_fpr = 1.0 / static_cast<double>(i + 2);
  return v;
}

TEST(SizingMemoTest, FindsWhatWasPut) {
  auto memo = std::make_unique<SizingMemo>();
  BlockedSizing out;
  EXPECT_FALSE(memo->Find(Key(5), &out));
  memo->Put(Key(5), Value(5));
  ASSERT_TRUE(memo->Find(Key(5), &out));
  EXPECT_EQ(out.blocks, Value(5).blocks);
  EXPECT_EQ(out.k, Value(5).k);
  EXPECT_EQ(out.expected_fpr, Value(5).expected_fpr);
  // A key differing in any one word is another key.
  for (int w = 0; w < 4; ++w) {
    SizingKey other = Key(5);
    other.words[w] ^= 1;
    EXPECT_FALSE(memo->Find(other, &out)) << w;
  }
}

// M1: however many distinct keys are put, at most kSlots are held, and
// every one held answers its own value.
TEST(SizingMemoTest, HoldsAtMostItsSlots) {
  auto memo = std::make_unique<SizingMemo>();
  constexpr uint64_t kKeys = 8 * SizingMemo::kSlots;
  for (uint64_t i = 0; i < kKeys; ++i) memo->Put(Key(i), Value(i));
  uint64_t held = 0;
  for (uint64_t i = 0; i < kKeys; ++i) {
    BlockedSizing out;
    if (!memo->Find(Key(i), &out)) continue;
    ++held;
    EXPECT_EQ(out.blocks, Value(i).blocks) << i;
  }
  EXPECT_LE(held, SizingMemo::kSlots);
  EXPECT_GT(held, SizingMemo::kSlots / 2);  // the hash spreads the keys
  EXPECT_EQ(sizeof(SizingMemo), SizingMemo::kSlots * 64);
}

}  // namespace
}  // namespace shardfilter
