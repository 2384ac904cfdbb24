// Cuckoo section of the sizing math (filters/sizing.h).
#include <gtest/gtest.h>

#include <cmath>

#include "shardfilter/filters/sizing.h"
#include "test_util.h"

namespace shardfilter {
namespace {

TEST(CuckooSizingTest, FprFormula) {
  // 1 - (1 - s)^(2 b load) ~ 2 b load / 2^f, s = 2^-f (1 + 2^(1-f)): the
  // chance that a slot's fingerprint matches, fingerprint 1 (0 mapped to
  // it) being twice as likely as the others.
  EXPECT_EQ(CuckooSlotMatch(8), (1.0 / 256) * (1 + 1.0 / 128));
  EXPECT_NEAR(CuckooFpr(12, 4, 0.95), 0.001855, 1e-6);
  EXPECT_NEAR(CuckooFpr(12, 4, 0.94), 0.001835, 1e-6);
  EXPECT_NEAR(CuckooFpr(8, 4, 0.94), 0.029227, 1e-6);
  EXPECT_NEAR(CuckooFpr(16, 4, 0.94), 1.1474e-4, 1e-8);
  EXPECT_NEAR(CuckooFpr(12, 4, 1.0),
              1 - std::pow(1 - (1.0 / 4096) * (1 + 1.0 / 2048), 8), 1e-15);
  EXPECT_EQ(CuckooFpr(12, 4, 0.0), 0.0);
}

TEST(CuckooSizingTest, DesignLoadsAndBytes) {
  EXPECT_EQ(CuckooDesignLoad(2), 0.80);
  EXPECT_EQ(CuckooDesignLoad(4), 0.94);
  EXPECT_EQ(CuckooDesignLoad(8), 0.96);
  EXPECT_EQ(CuckooDesignLoad(3), 0.0);
  EXPECT_EQ(CuckooTableBytes(5, 4, 12), 32u);  // 240 bits -> 4 words
  EXPECT_EQ(CuckooTableBytes(4, 4, 16), 32u);
  EXPECT_EQ(CuckooTableBytes(~uint64_t{0}, 8, 16), ~uint64_t{0});
}

TEST(CuckooSizingTest, ChoosesTheCheapestWidth) {
  auto s = CuckooFilterSizing(1'000'000, 0.01, 0, 4, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fingerprint_bits, 12u);
  EXPECT_EQ(s->buckets, 265'958u);  // ceil(1e6 / 3.76), not a power of two
  EXPECT_NEAR(s->load_at_capacity, 0.94, 1e-5);
  EXPECT_LE(s->expected_fpr, 0.01);
  EXPECT_LE(s->table_bytes * 8.0 / 1e6, 13.0);  // 12.77 bits per item
  auto s2 = CuckooFilterSizing(1'000'000, 0.001, 0, 4, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->fingerprint_bits, 16u);  // 12 bits would need load 0.51
  auto s3 = CuckooFilterSizing(1'000'000, 0.03, 0, 4, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(s3->fingerprint_bits, 8u);
}

TEST(CuckooSizingTest, NarrowExplicitWidthLowersTheLoad) {
  // 8 bits at 1% with b = 4: load = ln(0.99) / (8 ln(1 - s)) = 0.3185,
  // s = CuckooSlotMatch(8).
  auto s = CuckooFilterSizing(1'000'000, 0.01, 8, 4, kDefaultMaxFilterBytes);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fingerprint_bits, 8u);
  EXPECT_NEAR(s->load_at_capacity, 0.3185, 1e-3);
  EXPECT_LE(s->expected_fpr, 0.01);
  EXPECT_GT(s->expected_fpr, 0.0099);
}

TEST(CuckooSizingTest, RateHoldsAtCapacityEverywhere) {
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint32_t f : {0u, 8u, 12u, 16u}) {
      for (double p : {0.1, 0.01, 0.003, 0.0001}) {
        for (uint64_t n : {1ull, 7ull, 1000ull, 123457ull}) {
          auto s = CuckooFilterSizing(n, p, f, b, kDefaultMaxFilterBytes);
          ASSERT_TRUE(s.ok()) << s.status().ToString();
          EXPECT_LE(s->expected_fpr, p);
          EXPECT_LE(s->load_at_capacity, CuckooDesignLoad(b) + 1e-12);
          EXPECT_EQ(s->expected_fpr,
                    CuckooFpr(s->fingerprint_bits, b,
                              static_cast<double>(n) / (s->buckets * b)));
        }
      }
    }
  }
}

TEST(CuckooSizingTest, RejectsBadParameters) {
  const uint64_t mb = kDefaultMaxFilterBytes;
  EXPECT_TRUE(
      CuckooFilterSizing(0, 0.01, 0, 4, mb).status().IsInvalidArgument());
  EXPECT_TRUE(CuckooFilterSizing(10, 0, 0, 4, mb).status().IsInvalidArgument());
  EXPECT_TRUE(
      CuckooFilterSizing(10, 0.01, 9, 4, mb).status().IsInvalidArgument());
  EXPECT_TRUE(
      CuckooFilterSizing(10, 0.01, 0, 5, mb).status().IsInvalidArgument());
  EXPECT_TRUE(CuckooFilterSizing(1'000'000, 0.01, 0, 4, 1000)
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(CuckooFilterSizing(UINT64_MAX, 0.01, 0, 4, UINT64_MAX)
                  .status()
                  .IsInvalidArgument());
}

}  // namespace
}  // namespace shardfilter
