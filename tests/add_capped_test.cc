// Filter::AddHashCapped (filters/filter.h): the one-pass add the engine's
// copy bound (DESIGN.md invariant 8) uses. For every type: *held is the
// count before the add, an add at the cap is Full and changes nothing, and
// below the cap it is AddHash.
#include <gtest/gtest.h>

#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/filter.h"
#include "test_util.h"

namespace shardfilter {
namespace {

class AddCappedTest : public ::testing::TestWithParam<FilterType> {};

TEST_P(AddCappedTest, HeldCountsCopiesAndTheCapChangesNothing) {
  FilterParams p;
  p.type = GetParam();
  p.capacity = 10'000;
  auto f = CreateFilter(p);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const uint64_t h = (*f)->Hash("the key");
  const uint32_t cap = GetParam() == FilterType::kBloom ? 1 : 3;
  for (uint32_t i = 0; i < cap; ++i) {
    uint32_t held = 99;
    ASSERT_OK((*f)->AddHashCapped(h, cap, &held));
    EXPECT_EQ(held, i);
    EXPECT_EQ((*f)->CountHash(h), i + 1);
  }
  const std::string before = (*f)->Serialize();
  uint32_t held = 99;
  Status st = (*f)->AddHashCapped(h, cap, &held);
  EXPECT_TRUE(st.IsFull()) << st.ToString();
  EXPECT_EQ(held, cap);
  EXPECT_EQ((*f)->Serialize(), before);  // nothing changed
  // Other keys are unaffected by one key's cap.
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t k = (*f)->Hash(testing::Key(1, i));
    uint32_t n = 0;
    ASSERT_OK((*f)->AddHashCapped(k, cap + 100, &n));
    EXPECT_TRUE((*f)->MayContainHash(k));
  }
}

// The counting filter's sole-writer adds (their caller excludes every
// other writer): the capped one as AddHashCapped, and the one the sharded
// engine makes (AddHashUnlessSaturatedSoleWriter), capped where the
// counters saturate: both take a key to 15 copies and refuse the 16th
// with nothing changed; the second refuses any key whose counters are all
// at 15, which is a count of 15.
TEST(CountingSoleWriterAdd, StopsWhereTheCountersSaturate) {
  auto f = CountingBloomFilter::Create({.capacity = 10'000});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const uint64_t a = (*f)->Hash("a"), b = (*f)->Hash("b");
  for (uint32_t i = 0; i < internal::kCounterMax; ++i) {
    uint32_t held = 99;
    ASSERT_TRUE((*f)->AddHashCappedSoleWriter(a, internal::kCounterMax, &held));
    EXPECT_EQ(held, i);
    ASSERT_TRUE((*f)->AddHashUnlessSaturatedSoleWriter(b)) << i;
    EXPECT_EQ((*f)->CountHash(b), i + 1);
  }
  const std::string before = (*f)->Serialize();
  uint32_t held = 99;
  EXPECT_FALSE((*f)->AddHashCappedSoleWriter(a, internal::kCounterMax, &held));
  EXPECT_EQ(held, internal::kCounterMax);
  EXPECT_FALSE((*f)->AddHashUnlessSaturatedSoleWriter(a));
  EXPECT_FALSE((*f)->AddHashUnlessSaturatedSoleWriter(b));
  EXPECT_EQ((*f)->Serialize(), before);  // nothing changed
  EXPECT_EQ((*f)->Counts().items, 2u * internal::kCounterMax);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, AddCappedTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

}  // namespace
}  // namespace shardfilter
