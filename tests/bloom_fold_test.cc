// BloomFilter::Fold: a folded filter holds every key of the original (no
// false negative), its rate at capacity / factor stays near the original's
// target, MissingFoldedBits verifies it, and bad requests are refused
// without changing anything.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "shardfilter/filters/bloom_filter.h"

namespace shardfilter {
namespace {

std::unique_ptr<BloomFilter> Make(uint64_t capacity, double fpp,
                                  BloomLayout layout = BloomLayout::kBlocked) {
  BloomOptions o;
  o.capacity = capacity;
  o.fpp = fpp;
  o.layout = layout;
  auto f = BloomFilter::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

double Fpr(const BloomFilter& f, int probes) {
  int fp = 0;
  for (int i = 0; i < probes; ++i)
    fp += f.MayContain("absent-" + std::to_string(i));
  return static_cast<double>(fp) / probes;
}

TEST(BloomFold, FoldedFilterKeepsEveryKeyAtTheSameRate) {
  for (auto [layout, factor] : {std::pair{BloomLayout::kBlocked, 2u},
                                std::pair{BloomLayout::kBlocked, 4u},
                                std::pair{BloomLayout::kBlocked, 8u},
                                std::pair{BloomLayout::kSplitBlock, 4u}}) {
    SCOPED_TRACE(factor);
    SCOPED_TRACE(BloomLayoutName(layout));
    auto big = Make(800'000, 0.01, layout);
    ASSERT_NE(big, nullptr);
    ASSERT_EQ(big->layout(), layout);
    const uint64_t n = 800'000 / factor;  // the folded filter's capacity
    for (uint64_t i = 0; i < n; ++i) big->Add("key-" + std::to_string(i));
    auto folded = big->Fold(factor, n);
    ASSERT_TRUE(folded.ok()) << folded.status().ToString();
    EXPECT_EQ((*folded)->num_bits() * factor, big->num_bits());
    EXPECT_EQ((*folded)->capacity(), n);
    EXPECT_EQ((*folded)->k(), big->k());
    EXPECT_EQ((*folded)->layout(), layout);
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_TRUE((*folded)->MayContain("key-" + std::to_string(i))) << i;
    }
    EXPECT_EQ((*folded)->MissingFoldedBits(*big), 0u);
    // Full at its capacity, the fold measures the original's target rate
    // (same bits per item and k), within sampling noise.
    const double fpr = Fpr(**folded, 200'000);
    EXPECT_LE(fpr, 0.01 * 1.2) << fpr;
    EXPECT_GE(fpr, 0.01 * 0.7) << fpr;
    // Round trip of the folded filter.
    auto back = BloomFilter::Deserialize((*folded)->Serialize());
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE((*back)->Equals(**folded));
  }
}

TEST(BloomFold, VerificationSeesAMissingBit) {
  auto big = Make(100'000, 0.01);
  for (int i = 0; i < 1000; ++i) big->Add("key-" + std::to_string(i));
  auto folded = big->Fold(2, 50'000);
  ASSERT_TRUE(folded.ok());
  // A key added to the source after the fold is not in the folded copy.
  big->Add("late-key");
  EXPECT_GT((*folded)->MissingFoldedBits(*big), 0u);
  auto other = Make(100'000, 0.01, BloomLayout::kClassic);
  EXPECT_EQ((*folded)->MissingFoldedBits(*other), UINT64_MAX);
}

TEST(BloomFold, BadRequestsAreRefused) {
  auto f = Make(100'000, 0.01);
  for (uint32_t bad : {0u, 1u, 3u, 6u}) {
    EXPECT_EQ(f->Fold(bad, 1000).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(f->Fold(2, 0).status().code(), StatusCode::kInvalidArgument);
  auto classic = Make(100'000, 0.01, BloomLayout::kClassic);
  EXPECT_EQ(classic->Fold(2, 50'000).status().code(),
            StatusCode::kNotSupported);
  // More than the block count allows (sizes are rounded up to a multiple of
  // min(64, blocks / 256) blocks: a tiny filter folds by nothing).
  auto tiny = Make(10, 0.01);
  EXPECT_EQ(tiny->Fold(2, 5).status().code(), StatusCode::kNotSupported);
}

TEST(BloomFold, SizesAreFoldableAtLittleCost) {
  // Block counts are multiples of 64 from 16384 blocks (1 MiB) on.
  for (uint64_t n : {1'000'000ull, 3'333'333ull, 10'000'000ull}) {
    auto f = Make(n, 0.01);
    const uint64_t blocks = f->num_bits() / 512;
    EXPECT_EQ(blocks % 64, 0u) << n;
    EXPECT_TRUE(f->Fold(64, n / 64).ok());
  }
}

}  // namespace
}  // namespace shardfilter
