// TieredFilter: no false negatives, the compound FPR is the product of the
// levels' (and the levels are independent), the exact level removes every
// false positive, statistics add up, removes, persistence and errors.
#include "shardfilter/engine/tiered_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Key;
using testing::TempDir;

constexpr uint64_t kPresent = 1, kAbsent = 2;

FilterSpec Level(FilterType type, uint64_t capacity, double fpp,
                 uint32_t shards = 4) {
  FilterSpec s;
  s.type = type;
  s.capacity = capacity;
  s.fpp = fpp;
  s.shards = shards;
  // The level-product tests measure each level at its declared rate; a
  // scalable level would run at half of it.
  s.scalable = false;
  return s;
}

TieredSpec Bloom2(uint64_t n, bool exact) {
  TieredSpec t;
  t.levels = {Level(FilterType::kBloom, n, 0.1),
              Level(FilterType::kBloom, n, 0.01)};
  t.exact_level = exact;
  return t;
}

std::shared_ptr<TieredFilter> MustCreate(const TieredSpec& spec) {
  auto t = TieredFilter::Create(spec);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : nullptr;
}

// Adds keys [0, n) of stream kPresent in batches.
void Fill(TieredFilter& t, uint64_t n) {
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < n; ++i) keys.push_back(Key(kPresent, i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  SF_ASSERT_OK(t.AddKeys(views));
}

// Positives among `n` absent keys, queried in batches of 64 Ki.
uint64_t AbsentPositives(const TieredFilter& t, uint64_t n) {
  uint64_t positives = 0;
  std::vector<std::string> keys;
  std::vector<std::string_view> views;
  std::vector<uint8_t> out;
  for (uint64_t base = 0; base < n; base += 65536) {
    keys.clear();
    for (uint64_t i = base; i < std::min(n, base + 65536); ++i) {
      keys.push_back(Key(kAbsent, i));
    }
    views.assign(keys.begin(), keys.end());
    out.assign(views.size(), 0);
    EXPECT_OK(t.ContainsKeys(views, out));
    for (uint8_t b : out) positives += b;
  }
  return positives;
}

TEST(TieredFilterTest, NoFalseNegatives) {
  for (bool exact : {false, true}) {
    auto t = MustCreate(Bloom2(50'000, exact));
    ASSERT_NE(t, nullptr);
    Fill(*t, 50'000);
    for (uint64_t i = 0; i < 50'000; ++i) {
      Result<bool> r = t->Contains(Key(kPresent, i));
      ASSERT_TRUE(r.ok() && *r) << "key " << i << " exact " << exact;
    }
  }
}

// 1e6 absent queries against levels of 10% and 1% at capacity: the compound
// rate is the product (1e-3, ~1000 expected, sd ~32). Margin: 25% over the
// product of the targets (> 7 sd), and within 20% of the product of the
// levels' measured rates, which only holds if the levels are independent.
TEST(TieredFilterTest, CompoundFprIsTheProductOfIndependentLevels) {
  constexpr uint64_t kN = 200'000, kQueries = 1'000'000;
  auto t = MustCreate(Bloom2(kN, false));
  ASSERT_NE(t, nullptr);
  Fill(*t, kN);
  uint64_t positives = AbsentPositives(*t, kQueries);
  double compound = static_cast<double>(positives) / kQueries;
  TieredStats st = t->Stats();
  ASSERT_EQ(st.levels.size(), 2u);
  double l0 = st.levels[0].measured_fpr;
  EXPECT_LE(l0, 0.1 * 1.05);
  EXPECT_GT(l0, 0.05);
  // Level 1's own rate over the keys level 0 passed.
  double l1 = static_cast<double>(positives) / st.levels[1].reached;
  EXPECT_LE(l1, 0.01 * 1.25);
  EXPECT_NEAR(st.compound_target_fpr, 1e-3, 1e-12);
  EXPECT_LE(compound, st.compound_target_fpr * 1.25);
  EXPECT_NEAR(compound, l0 * l1, 0.2 * l0 * l1);
  // Far below the finest level alone: shared hash bits would make level 1
  // pass what level 0 passed, and the compound rate ~0.01.
  EXPECT_LT(compound, 0.2 * 0.01);
  EXPECT_EQ(st.levels[1].measured_fpr, -1);  // unknowable without exact
}

// The control of the test above: two levels over the same hash (same seed,
// same spec) are one filter twice, and the "compound" rate is the single
// level's. ResolveTieredSpec refuses to build that.
TEST(TieredFilterTest, SharedSeedsWouldBreakTheProduct) {
  FilterSpec spec = Level(FilterType::kBloom, 100'000, 0.01);
  spec.seed = 42;
  auto a = ShardedFilter::Create(spec);
  auto b = ShardedFilter::Create(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  for (uint64_t i = 0; i < 100'000; ++i) {
    SF_ASSERT_OK((*a)->Add(Key(kPresent, i)));
    SF_ASSERT_OK((*b)->Add(Key(kPresent, i)));
  }
  uint64_t both = 0;
  for (uint64_t i = 0; i < 200'000; ++i) {
    std::string k = Key(kAbsent, i);
    both += (*a)->MayContain(k) && (*b)->MayContain(k);
  }
  EXPECT_GT(static_cast<double>(both) / 200'000, 0.005);  // not 1e-4
  TieredSpec t;
  t.levels = {spec, spec};
  auto r = TieredFilter::Create(t);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
}

TEST(TieredFilterTest, DerivedSeedsAreDistinctAndDocumented) {
  auto t = MustCreate(Bloom2(1000, false));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level(0).seed(), LevelSeed(kDefaultSeed, 0));
  EXPECT_EQ(t->level(1).seed(), LevelSeed(kDefaultSeed, 1));
  EXPECT_NE(t->level(0).seed(), t->level(1).seed());
  EXPECT_EQ(LevelSeed(7, 2), Remix(9));
}

TEST(TieredFilterTest, ExactLevelHasNoFalsePositivesAndStatsAddUp) {
  constexpr uint64_t kN = 100'000, kQueries = 1'000'000;
  auto t = MustCreate(Bloom2(kN, true));
  ASSERT_NE(t, nullptr);
  Fill(*t, kN);
  EXPECT_EQ(AbsentPositives(*t, kQueries), 0u);
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(*t->Contains(Key(kPresent, i)));
  }
  TieredStats st = t->Stats();
  EXPECT_EQ(st.queries, kQueries + 1000);
  EXPECT_EQ(st.exact_found, 1000u);
  EXPECT_GT(st.exact_absent, 500u);  // ~1e-3 x 1e6 false positives caught
  EXPECT_EQ(st.levels[0].reached, st.queries);
  EXPECT_EQ(st.levels[1].reached, st.levels[0].passed);
  EXPECT_EQ(st.exact_reached, st.levels[1].passed);
  EXPECT_EQ(st.levels[0].settled + st.levels[1].settled + st.exact_absent +
                st.exact_found,
            st.queries);
  EXPECT_LE(st.compound_measured_fpr, 1.25e-3);
  EXPECT_GT(st.levels[1].measured_fpr, 0.0);  // knowable with exact level
  EXPECT_LE(st.levels[1].measured_fpr, 0.0125);
  EXPECT_EQ(st.filter_bytes, st.levels[0].bytes + st.levels[1].bytes);
}

TEST(TieredFilterTest, BatchAndSingleAgree) {
  auto t = MustCreate(Bloom2(10'000, true));
  ASSERT_NE(t, nullptr);
  Fill(*t, 5'000);
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 10'000; ++i) keys.push_back(Key(kPresent, i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint8_t> out(views.size());
  SF_ASSERT_OK(t->ContainsKeys(views, out));
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(out[i] != 0, *t->Contains(keys[i])) << i;
    ASSERT_EQ(out[i] != 0, i < 5'000) << i;
  }
}

TEST(TieredFilterTest, RemoveNeedsExactLevelAndRemovableLevels) {
  TieredSpec spec;
  spec.levels = {Level(FilterType::kCountingBloom, 10'000, 0.1),
                 Level(FilterType::kCuckoo, 10'000, 0.01)};
  spec.exact_level = true;
  auto t = MustCreate(spec);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->supports_remove());
  SF_ASSERT_OK(t->Add("a"));
  SF_ASSERT_OK(t->Add("a"));
  SF_ASSERT_OK(t->Add("b"));
  EXPECT_TRUE(t->Remove("zzz").IsNotFound());
  SF_ASSERT_OK(t->Remove("a"));
  EXPECT_TRUE(*t->Contains("a"));  // one copy left
  SF_ASSERT_OK(t->Remove("a"));
  EXPECT_FALSE(*t->Contains("a"));
  EXPECT_TRUE(t->Remove("a").IsNotFound());
  EXPECT_TRUE(*t->Contains("b"));
  EXPECT_EQ(t->level(1).Count("a"), 0u);

  auto bloom = MustCreate(Bloom2(1000, true));
  EXPECT_TRUE(bloom->Remove("a").IsNotSupported());
  spec.exact_level = false;
  auto no_exact = MustCreate(spec);
  EXPECT_TRUE(no_exact->Remove("a").IsNotSupported());
}

TEST(TieredFilterTest, BadSpecsAreRefused) {
  TieredSpec empty;
  EXPECT_TRUE(TieredFilter::Create(empty).status().IsInvalidArgument());
  TieredSpec many;
  many.levels.assign(kMaxTieredLevels + 1, Level(FilterType::kBloom, 10, 0.5));
  EXPECT_TRUE(TieredFilter::Create(many).status().IsInvalidArgument());
  TieredSpec bad = Bloom2(1000, false);
  bad.levels[1].fpp = 1.5;
  Status s = TieredFilter::Create(bad).status();
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("tiered level 1"), std::string::npos)
      << s.ToString();
  bad = Bloom2(1000, false);
  bad.levels[0].shards = 3;
  EXPECT_TRUE(TieredFilter::Create(bad).status().IsInvalidArgument());
}

TEST(TieredFilterTest, FullCuckooLevelUndoesEarlierLevels) {
  TieredSpec spec;
  spec.levels = {Level(FilterType::kCuckoo, 1'000'000, 0.01, 1),
                 Level(FilterType::kCuckoo, 64, 0.01, 1)};
  spec.exact_level = true;
  auto t = MustCreate(spec);
  ASSERT_NE(t, nullptr);
  uint64_t added = 0;
  Status s;
  for (uint64_t i = 0; i < 100'000 && s.ok(); ++i) {
    s = t->Add(Key(kPresent, i));
    if (s.ok()) ++added;
  }
  ASSERT_TRUE(s.IsFull()) << s.ToString();
  EXPECT_EQ(t->level(0).Stats().total.items, added);  // the failed add undone
  for (uint64_t i = 0; i < added; ++i)
    ASSERT_TRUE(*t->Contains(Key(kPresent, i)));
}

}  // namespace
}  // namespace shardfilter
