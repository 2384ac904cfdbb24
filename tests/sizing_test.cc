#include "shardfilter/filters/sizing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "shardfilter/filters/internal/poisson_mixture.h"
#include "test_util.h"

namespace shardfilter {
namespace {

TEST(ClassicSizing, MatchesFormulaFigures) {
  // m = ceil(-n ln p / ln^2 2), k = round(m/n ln 2).
  auto m1 = ClassicBloomBits(1'000'000, 0.01);
  ASSERT_TRUE(m1.ok());
  EXPECT_EQ(*m1, 9'585'059u);
  EXPECT_EQ(OptimalHashFunctions(*m1, 1'000'000), 7u);

  auto m2 = ClassicBloomBits(1'000'000, 0.001);
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(*m2, 14'377'588u);
  EXPECT_EQ(OptimalHashFunctions(*m2, 1'000'000), 10u);

  auto m3 = ClassicBloomBits(10'000'000, 0.01);
  ASSERT_TRUE(m3.ok());
  EXPECT_EQ(*m3, 95'850'584u);

  auto m4 = ClassicBloomBits(100'000'000, 0.01);
  ASSERT_TRUE(m4.ok());
  EXPECT_EQ(*m4, 958'505'838u);
  EXPECT_NEAR(*m4 / 8.0 / (1 << 20), 114.3, 0.05);  // MiB
}

TEST(ClassicSizing, FprFormula) {
  // (1 - e^{-kn/m})^k at the optimum is ~p.
  EXPECT_NEAR(ClassicBloomFpr(9'585'059, 1'000'000, 7), 0.01, 0.0005);
  EXPECT_NEAR(ClassicBloomFpr(14'377'588, 1'000'000, 10), 0.001, 0.00005);
  EXPECT_EQ(ClassicBloomFpr(1000, 0, 3), 0.0);
  EXPECT_NEAR(ClassicBloomFpr(1000, 1, 1), 1.0 - std::exp(-1.0 / 1000), 1e-15);
}

TEST(ClassicSizing, RejectsBadParameters) {
  EXPECT_TRUE(ClassicBloomBits(0, 0.01).status().IsInvalidArgument());
  EXPECT_TRUE(ClassicBloomBits(10, 0.0).status().IsInvalidArgument());
  EXPECT_TRUE(ClassicBloomBits(10, 1.0).status().IsInvalidArgument());
  EXPECT_TRUE(ClassicBloomBits(10, -0.5).status().IsInvalidArgument());
  EXPECT_TRUE(ClassicBloomBits(10, std::nan("")).status().IsInvalidArgument());
  EXPECT_TRUE(
      ClassicBloomBits(UINT64_MAX, 1e-300).status().IsInvalidArgument());
}

TEST(BlockedSizing, NeedsMoreBitsThanClassicAndMeetsTarget) {
  for (double p : {0.1, 0.01, 0.001, 0.0001}) {
    const uint64_t n = 1'000'000;
    auto classic = ClassicBloomBits(n, p);
    ASSERT_TRUE(classic.ok());
    auto s = BlockedBloomSizing(n, p, 0, 512, kDefaultMaxFilterBytes);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_GT(s->blocks * 512, *classic) << p;
    EXPECT_LE(s->expected_fpr, p);
    EXPECT_EQ(s->expected_fpr, BlockedFpr(s->blocks, 512, n, s->k));
    // Minimal: the rate bound of one block fewer misses the target.
    EXPECT_LE(BlockedFprBound(s->blocks, 512, n, s->k), p);
    EXPECT_GT(BlockedFprBound(s->blocks - 1, 512, n, s->k), p);
    // The blocked penalty is real but bounded (< 25% more bits here).
    EXPECT_LT(s->blocks * 512, *classic * 1.25) << p;
  }
}

TEST(BlockedSizing, OnePercentFigures) {
  auto s = BlockedBloomSizing(50'000'000, 0.01, 0, 512, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s.ok());
  const double bits_per_item = s->blocks * 512.0 / 50'000'000;
  EXPECT_GT(bits_per_item, 9.59);
  EXPECT_LT(bits_per_item, 10.7);  // the space target at 1%
  EXPECT_GE(s->k, 5u);
  EXPECT_LE(s->k, 8u);
}

TEST(BlockedSizing, FixedKAndCountingSlots) {
  auto s3 = BlockedBloomSizing(100'000, 0.01, 3, 512, kDefaultMaxFilterBytes);
  auto s7 = BlockedBloomSizing(100'000, 0.01, 7, 512, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s3.ok() && s7.ok());
  EXPECT_EQ(s3->k, 3u);
  EXPECT_GT(s3->blocks, s7->blocks);  // k=3 is far from optimal at 1%
  auto c = BlockedBloomSizing(100'000, 0.01, 0, 128, kDefaultMaxFilterBytes);
  ASSERT_TRUE(c.ok());
  // 128 counters per line: more variance per block, more slots per item.
  EXPECT_GT(c->blocks * 128, s7->blocks * 512);
  EXPECT_LE(c->expected_fpr, 0.01);
}

TEST(BlockedSizing, RejectsBadParametersAndMemoryLimit) {
  EXPECT_TRUE(BlockedBloomSizing(0, 0.01, 0, 512, kDefaultMaxFilterBytes)
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(BlockedBloomSizing(10, 0.01, 33, 512, kDefaultMaxFilterBytes)
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(BlockedBloomSizing(10, 1.5, 0, 512, kDefaultMaxFilterBytes)
                  .status()
                  .IsInvalidArgument());
  auto big = BlockedBloomSizing(1'000'000'000, 0.01, 0, 512, 1 << 20);
  EXPECT_TRUE(big.status().IsInvalidArgument());
  EXPECT_NE(big.status().message().find("memory limit"), std::string::npos);
}

// The mixture's weights sum to 1 with mean and variance lambda in both of
// its regimes, whatever lambda, at a bounded number of evaluations.
TEST(PoissonMixtureTest, MomentsAndBoundedCost) {
  for (double lambda : {0.25, 3.0, 57.5, 16383.0, 16384.0, 1e5, 3.3e7, 2.2e12,
                        1e15, 1e18, 1.8e19}) {
    SCOPED_TRACE(lambda);
    size_t calls = 0;
    const double mass = internal::PoissonMixture(lambda, [&](uint64_t) {
      ++calls;
      return 1.0;
    });
    EXPECT_NEAR(mass, 1.0, 1e-9);
    // Before the bound, 2.2e12 keys per block took ~3e7 calls, 1e18 ~2e10.
    EXPECT_LE(calls, 2u * (9 * 128 + 12));
    const double mean = internal::PoissonMixture(
        lambda, [&](uint64_t j) { return static_cast<double>(j) / lambda; });
    EXPECT_NEAR(mean, 1.0, 1e-9);
    const double var = internal::PoissonMixture(lambda, [&](uint64_t j) {
      const double d = static_cast<double>(j) - lambda;
      return d * d / lambda;
    });
    EXPECT_NEAR(var, 1.0, 1e-6);
  }
}

// The two regimes meet: the rate of a saturating block does not jump at
// the boundary (16384 keys per block).
TEST(PoissonMixtureTest, RegimesAgreeAtTheBoundary) {
  const uint64_t blocks = 100'000, n = 16384 * blocks;
  for (uint32_t k : {1u, 2u}) {
    const double below = BlockedFpr(blocks, 16384 * 4, n - 1, k);  // exact
    const double at = BlockedFpr(blocks, 16384 * 4, n, k);  // every 2nd j
    EXPECT_NEAR(at, below, 1e-9 * at) << k;
  }
}

// For k = 1 the blocked rate has a closed form: a query slot is set with
// probability 1 - (1 - 1/S)^J, and E[z^J] = exp(λ(z - 1)) for J ~
// Poisson(λ), so BlockedFpr = 1 - exp(-λ/S). Before the mixture's bound,
// λ = 1e13 gave 0.9835 instead of 1 (cancellation in j ln λ - λ -
// ln j!) after 3 s, and 1e15 took 24 s.
TEST(BlockedSizing, FprMatchesTheClosedFormAtAnyLoad) {
  for (double lambda : {0.5, 10.0, 1e3, 16383.0, 16384.0, 1e5, 1e7, 1e9, 4e9,
                        1e10, 1e13, 1e15, 1e18}) {
    const uint64_t n = static_cast<uint64_t>(lambda);
    const uint32_t slots = static_cast<uint32_t>(std::clamp<double>(
        lambda / 2, 1, std::numeric_limits<uint32_t>::max()));
    const double want = -std::expm1(-static_cast<double>(n) / slots);
    EXPECT_NEAR(BlockedFpr(1, slots, n, 1), want, 1e-9) << lambda;
  }
}

// A capacity far past the memory limit fails at once. A capacity of 2.2e12
// in a 6-byte limit (an export's spec, found by export_fuzz) took 3.4 s to
// refuse; 1e18 in one block, hours.
TEST(BlockedSizing, HugeCapacityInATinyLimitFailsQuickly) {
  for (uint64_t n : {2'203'318'223'048ull, 1'000'000'000'000'000'000ull}) {
    for (uint64_t max_bytes : {6ull, 64ull, 4096ull, 1ull << 20}) {
      for (uint32_t slots : {128u, 512u}) {
        auto s = BlockedBloomSizing(n, 0.5, 0, slots, max_bytes);
        EXPECT_TRUE(s.status().IsInvalidArgument()) << n << " " << max_bytes;
      }
      EXPECT_TRUE(SplitBlockBloomSizing(n, 0.5, max_bytes)
                      .status()
                      .IsInvalidArgument());
    }
  }
  EXPECT_GT(BlockedFpr(1, 128, 1'000'000'000'000'000'000ull, 1), 0.999);
  EXPECT_GT(SplitBlockFpr(1, 1'000'000'000'000'000'000ull), 0.999);
}

TEST(WordBlockedSizing, MeetsTargetMinimalAndNearTheSpread) {
  const uint64_t n = 1'000'000;
  for (double p : {0.1, 0.01, 0.001, 0.0001}) {
    auto s = WordBlockedBloomSizing(n, p, 0, kDefaultMaxFilterBytes);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_LE(s->expected_fpr, p);
    EXPECT_EQ(s->expected_fpr, WordBlockedFpr(s->blocks, n, s->k));
    // Minimal: the rate bound of one block fewer misses the target.
    EXPECT_LE(WordBlockedFprBound(s->blocks, n, s->k), p) << p;
    EXPECT_GT(WordBlockedFprBound(s->blocks - 1, n, s->k), p) << p;
    // Within 3% of the 512-bit spread (sizing.h's table).
    auto spread = BlockedBloomSizing(n, p, 0, 512, kDefaultMaxFilterBytes);
    ASSERT_TRUE(spread.ok());
    EXPECT_LT(s->blocks, spread->blocks * 1.03) << p;
  }
  // The figures of the table in sizing.h.
  auto s = WordBlockedBloomSizing(n, 0.01, 0, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->k, 6u);
  EXPECT_EQ(BlockedWordsPerKey(s->k), 2u);
  EXPECT_NEAR(s->blocks * 512.0 / n, 10.21, 0.01);
  EXPECT_LT(s->blocks * 512.0 / n, 10.7);  // the space target
  s = WordBlockedBloomSizing(n, 0.001, 0, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->k, 9u);
  EXPECT_NEAR(s->blocks * 512.0 / n, 15.84, 0.01);
}

// Sizings are remembered (a filter of many shards sizes one capacity many
// times): a repeat answers the same, and every argument is part of the key
// (a memory limit that the first call met but the second does not, another
// k, another rate).
TEST(WordBlockedSizing, RepeatsAnswerTheSameForEveryArgument) {
  const uint64_t n = 777'777;
  auto a = WordBlockedBloomSizing(n, 0.01, 0, kDefaultMaxFilterBytes);
  auto b = WordBlockedBloomSizing(n, 0.01, 0, kDefaultMaxFilterBytes);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->blocks, b->blocks);
  EXPECT_EQ(a->k, b->k);
  EXPECT_EQ(a->expected_fpr, b->expected_fpr);
  EXPECT_TRUE(WordBlockedBloomSizing(n, 0.01, 0, a->blocks * 64 - 64)
                  .status()
                  .IsInvalidArgument());
  auto k3 = WordBlockedBloomSizing(n, 0.01, 3, kDefaultMaxFilterBytes);
  ASSERT_TRUE(k3.ok());
  EXPECT_EQ(k3->k, 3u);
  auto tighter = WordBlockedBloomSizing(n, 0.001, 0, kDefaultMaxFilterBytes);
  ASSERT_TRUE(tighter.ok());
  EXPECT_GT(tighter->blocks, a->blocks);
  auto again = WordBlockedBloomSizing(n, 0.01, 0, kDefaultMaxFilterBytes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->blocks, a->blocks);
}

TEST(WordBlockedSizing, EveryForcedKIsMinimal) {
  const uint64_t n = 100'000;
  for (uint32_t k = 1; k <= 32; ++k) {
    auto s = WordBlockedBloomSizing(n, 0.01, k, kDefaultMaxFilterBytes);
    ASSERT_TRUE(s.ok()) << k;
    EXPECT_EQ(s->k, k);
    EXPECT_LE(s->expected_fpr, 0.01) << k;
    EXPECT_GT(WordBlockedFprBound(s->blocks - 1, n, k), 0.01) << k;
  }
}

TEST(WordBlockedSizing, FprModel) {
  EXPECT_EQ(WordBlockedFpr(100, 0, 6), 0.0);
  EXPECT_EQ(WordBlockedFpr(0, 10, 6), 1.0);
  // k = 1: one bit in one of the line's 512, so exactly
  // E[1 - (511/512)^N] = 1 - e^{-lambda/512}.
  for (uint64_t blocks : {10u, 1000u, 5000u}) {
    const double lambda = 1e5 / blocks;
    EXPECT_NEAR(WordBlockedFpr(blocks, 100'000, 1), -std::expm1(-lambda / 512),
                1e-12);
  }
  // The case checked by simulation in sizing.h.
  EXPECT_NEAR(WordBlockedFpr(19'500, 1'000'000, 6), 0.0108060, 1e-7);
  // Decreasing in the block count, increasing in the load.
  double prev = 1;
  for (uint64_t blocks = 1000; blocks <= 40'000; blocks += 1000) {
    const double f = WordBlockedFpr(blocks, 1'000'000, 9);
    EXPECT_LT(f, prev) << blocks;
    prev = f;
  }
  // Words per key and bits per word.
  EXPECT_EQ(BlockedWordsPerKey(1), 1u);
  EXPECT_EQ(BlockedWordsPerKey(2), 2u);
  EXPECT_EQ(BlockedWordsPerKey(8), 2u);
  EXPECT_EQ(BlockedWordsPerKey(9), 3u);
  EXPECT_EQ(BlockedWordsPerKey(32), 8u);
  EXPECT_EQ(BlockedBitsInWord(7, 0), 4u);
  EXPECT_EQ(BlockedBitsInWord(7, 1), 3u);
  EXPECT_EQ(BlockedBitsInWord(9, 2), 3u);
}

TEST(WordBlockedSizing, RejectsBadParametersAndMemoryLimit) {
  EXPECT_TRUE(WordBlockedBloomSizing(0, 0.01, 0, kDefaultMaxFilterBytes)
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(WordBlockedBloomSizing(10, 0.01, 33, kDefaultMaxFilterBytes)
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(WordBlockedBloomSizing(10, 0.0, 0, kDefaultMaxFilterBytes)
                  .status()
                  .IsInvalidArgument());
  auto big = WordBlockedBloomSizing(1'000'000'000, 0.01, 0, 1 << 20);
  EXPECT_TRUE(big.status().IsInvalidArgument());
  EXPECT_NE(big.status().message().find("memory limit"), std::string::npos);
}

// The realized-rate bound (sizing.h) lies above the mean by three
// standard deviations of the rate between key sets, which shrink as
// 1/sqrt(blocks) at a given load: it matters at a few blocks only.
TEST(RealizedRateBound, AboveTheMeanAndFadingWithTheBlockCount) {
  const double lambda = 20;
  for (uint64_t blocks : {5ull, 50ull, 5000ull, 500000ull}) {
    const uint64_t n = static_cast<uint64_t>(lambda * blocks);
    const double split = SplitBlockFpr(blocks, n);
    const double word = WordBlockedFpr(blocks * 2, n * 2, 6);
    const double counting = BlockedFpr(blocks, 128, n / 4, 6);
    EXPECT_GT(SplitBlockFprBound(blocks, n), split);
    EXPECT_GT(WordBlockedFprBound(blocks * 2, n * 2, 6), word);
    EXPECT_GT(BlockedFprBound(blocks, 128, n / 4, 6), counting);
    // 5 blocks: the bound is several times the mean; 5e5: within 1%.
    const double excess = SplitBlockFprBound(blocks, n) / split - 1;
    if (blocks == 5) {
      EXPECT_GT(excess, 1.0);
    }
    if (blocks == 500000) {
      EXPECT_LT(excess, 0.01);
    }
  }
  EXPECT_EQ(SplitBlockFprBound(10, 0), 0.0);
  EXPECT_EQ(WordBlockedFprBound(0, 10, 6), 1.0);
}

TEST(Cardinality, InvertsExpectedFill) {
  // After n items with k slots each in m slots, E[set] = m(1 - e^{-kn/m}).
  const uint64_t m = 1'000'000, n = 100'000;
  const uint32_t k = 7;
  const double set = m * -std::expm1(-double(k) * n / m);
  EXPECT_NEAR(EstimateCardinality(m, uint64_t(set), k), n, n * 0.001);
  EXPECT_EQ(EstimateCardinality(m, 0, k), 0.0);
  EXPECT_EQ(EstimateCardinality(m, m, k), double(m));
}

}  // namespace
}  // namespace shardfilter
