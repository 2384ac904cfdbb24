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

}  // namespace
}  // namespace shardfilter
