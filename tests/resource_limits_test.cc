// Resource limits and honest counting (issue 14): repeated keys never use
// capacity or grow a filter, copies are bounded, memory stays within the
// engine's budget.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/sharded_filter.h"
#include "store_test_util.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::Key;

// Case 1: a Bloom add that sets no new bit is "already present".
TEST(BloomAlreadyPresentTest, RepeatedKeyUsesNoCapacity) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 1000;
  spec.scalable = false;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto first = (*f)->Insert("same");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, AddOutcome::kAdded);
  for (int i = 1; i < 3000; ++i) {
    auto r = (*f)->Insert("same");
    ASSERT_TRUE(r.ok()) << "add #" << i + 1 << ": " << r.status().ToString();
    EXPECT_EQ(*r, AddOutcome::kAlreadyPresent);
    ASSERT_OK((*f)->Add("same"));
  }
  EXPECT_EQ((*f)->Stats().total.items, 1u);
  // The capacity is still there for 999 more distinct keys.
  for (uint64_t i = 0; i < 900; ++i) ASSERT_OK((*f)->Add(Key(1, i)));
}

TEST(BloomAlreadyPresentTest, BatchReportsOutcomes) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 1000;
  spec.scalable = false;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  std::vector<std::string> keys(3000, "same");
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<Status> per_item;
  std::vector<AddOutcome> outcomes;
  ASSERT_OK((*f)->AddKeys(views, &per_item, &outcomes));
  ASSERT_EQ(outcomes.size(), keys.size());
  size_t added = 0;
  for (AddOutcome o : outcomes) added += o == AddOutcome::kAdded;
  EXPECT_EQ(added, 1u);
  EXPECT_EQ((*f)->Stats().total.items, 1u);
}

TEST(BloomAlreadyPresentTest, ReAddingKeysNeverGrowsAScalableFilter) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 10'000;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 10'000; ++i) keys.push_back(Key(2, i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  const uint64_t capacity = (*f)->Stats().total.capacity;
  for (int round = 0; round < 6; ++round) {
    ASSERT_OK((*f)->AddKeys(views));
    for (const std::string& k : keys) ASSERT_OK((*f)->Add(k));
  }
  for (uint32_t s = 0; s < (*f)->shard_count(); ++s) {
    EXPECT_EQ((*f)->shard_links(s), 1u) << "shard " << s;
  }
  EXPECT_EQ((*f)->Stats().total.capacity, capacity);
  EXPECT_LE((*f)->Stats().total.items, 10'000u);
  for (const std::string& k : keys) ASSERT_TRUE((*f)->MayContain(k));
}

// Under journal durability a key found present is still journalled: its
// bits may belong to an add whose journal write has not completed.
TEST(BloomAlreadyPresentTest, DuplicateIsStillJournalled) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 1000;
  spec.durability = Durability::kJournal;
  auto f = (*db)->Create("b", spec);
  ASSERT_TRUE(f.ok());
  ASSERT_OK((*f)->Add("k"));
  const uint64_t ops = (*db)->counters().journal_ops;
  auto r = (*f)->Insert("k");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, AddOutcome::kAlreadyPresent);
  EXPECT_EQ((*db)->counters().journal_ops, ops + 1);
}

// Case 2 (and the Bloom side of case 1), adversarially: one key repeated
// 1e6 times into each type, scalable and not, never grows the filter.
// Before: a cuckoo filter appended a link twice as large every 8 copies
// (41 copies: 6.3M capacity, 64 MiB; 81: an attempt to allocate 51 GB),
// and a counting filter of capacity 1,000 grew to 7,000 for 5,000 copies.
class RepeatedKeyTest
    : public ::testing::TestWithParam<std::tuple<FilterType, bool>> {};

TEST_P(RepeatedKeyTest, OneKeyRepeatedNeverGrowsTheFilter) {
  const auto [type, scalable] = GetParam();
  FilterSpec spec;
  spec.type = type;
  spec.capacity = 100'000;
  spec.fpp = 0.001;
  spec.scalable = scalable;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const ShardedStats before = (*f)->Stats();
  uint64_t ok = 0, full = 0;
  Status last;
  for (int i = 0; i < 1'000'000; ++i) {
    Status s = (*f)->Add("same");
    if (s.ok()) {
      ++ok;
    } else {
      ASSERT_TRUE(s.IsFull()) << s.ToString();
      ++full;
      last = s;
    }
  }
  const ShardedStats after = (*f)->Stats();
  EXPECT_EQ(after.total.capacity, before.total.capacity);
  EXPECT_EQ(after.total.bytes, before.total.bytes);
  for (uint32_t s = 0; s < (*f)->shard_count(); ++s) {
    EXPECT_EQ((*f)->shard_links(s), 1u);
  }
  EXPECT_TRUE((*f)->MayContain("same"));
  switch (type) {
    case FilterType::kBloom:
      EXPECT_EQ(ok, 1'000'000u);
      EXPECT_EQ(after.total.items, 1u);
      break;
    case FilterType::kCuckoo:
      EXPECT_EQ(ok, 7u);  // 2 x 4-slot buckets - 1
      EXPECT_EQ((*f)->Count("same"), 7u);
      EXPECT_NE(last.message().find("already holds 7 copies"),
                std::string::npos)
          << last.ToString();
      break;
    case FilterType::kCountingBloom:
      EXPECT_EQ(ok, 15u);
      EXPECT_EQ((*f)->Count("same"), 15u);
      EXPECT_NE(last.message().find("already holds 15 copies"),
                std::string::npos)
          << last.ToString();
      break;
  }
  // Copies removed make room for copies again (cuckoo; a counting
  // filter's saturated counters are sticky: the count stays 15).
  if (type == FilterType::kCuckoo) {
    ASSERT_OK((*f)->Remove("same"));
    ASSERT_OK((*f)->Add("same"));
    EXPECT_TRUE((*f)->Add("same").IsFull());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, RepeatedKeyTest,
    ::testing::Combine(::testing::Values(FilterType::kBloom,
                                         FilterType::kCountingBloom,
                                         FilterType::kCuckoo),
                       ::testing::Bool()),
    [](const auto& info) {
      return std::string(FilterTypeName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "_scalable" : "_nonscaling");
    });

// A cuckoo table genuinely full of other keys still grows.
TEST(RepeatedKeyTest, CuckooFullOfOtherKeysStillGrows) {
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = 1000;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  for (uint64_t i = 0; i < 5000; ++i) ASSERT_OK((*f)->Add(Key(3, i)));
  EXPECT_GT((*f)->shard_links(0), 1u);
}

}  // namespace
}  // namespace shardfilter
