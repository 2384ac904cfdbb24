// Database::Unload: a loaded filter's memory goes back to the budget and
// its next use loads it again, exactly as it was (every acknowledged add,
// every count), under every durability and journal path; a filter anyone
// else holds is never unloaded.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/memory_budget.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::TempDir;

std::string K(int set, int i) {
  return "key-" + std::to_string(set) + "-" + std::to_string(i);
}

struct Case {
  FilterType type;
  Durability durability;
  bool mapped;  // memory-mapped journal segments, else RocksDB's family
};

std::string Name(const Case& c) {
  return std::string(FilterTypeName(c.type)) + "/" +
         DurabilityName(c.durability) + (c.mapped ? "/mapped" : "/rocksdb");
}

class UnloadTest : public ::testing::TestWithParam<Case> {};

// Adds, unloads, reloads, adds and removes more, unloads again, then
// reopens the store: every state matches what was acknowledged.
TEST_P(UnloadTest, ReloadsExactlyWhatWasAcknowledged) {
  const Case c = GetParam();
  TempDir dir;
  auto budget = std::make_shared<MemoryBudget>(uint64_t{1} << 30);
  DatabaseOptions o;
  o.path = dir.db();
  o.memory_budget = budget;
  o.mapped_journal_min_bytes = c.mapped ? 0 : UINT64_MAX;
  const bool multiset = c.type != FilterType::kBloom;
  // Each sync add waits for an fsync: fewer of them.
  const int n = c.durability == Durability::kSync ? 200 : 3000;
  {
    auto db = MustOpen(o);
    ASSERT_NE(db, nullptr);
    FilterSpec spec = testing::Spec(c.type, 20000, 4, c.durability);
    {
      auto f = db->Create("f", spec);
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      for (int i = 0; i < n; ++i) SF_ASSERT_OK((*f)->Add(K(0, i)));
      if (multiset) SF_ASSERT_OK((*f)->Add(K(0, 7)));  // a second copy
    }
    const uint64_t held = budget->used();
    ASSERT_GT(held, 0u);
    auto freed = db->Unload("f");
    ASSERT_TRUE(freed.ok()) << Name(c) << ": " << freed.status().ToString();
    EXPECT_EQ(*freed, held);
    EXPECT_EQ(budget->used(), 0u);
    EXPECT_TRUE(db->Loaded().empty());
    EXPECT_EQ(db->List(), std::vector<std::string>{"f"});
    {
      auto f = db->Get("f");
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      // A load charges the stored blobs' lengths: the tables, plus their
      // small headers.
      EXPECT_GE(budget->used(), held);
      EXPECT_LE(budget->used(), held + 4096);
      for (int i = 0; i < n; ++i) {
        ASSERT_TRUE((*f)->MayContain(K(0, i))) << Name(c) << " " << i;
      }
      if (multiset) {
        EXPECT_EQ((*f)->Count(K(0, 7)), 2u) << Name(c);
        SF_ASSERT_OK((*f)->Remove(K(0, 8)));
      }
      for (int i = 0; i < n; ++i) SF_ASSERT_OK((*f)->Add(K(1, i)));
    }
    ASSERT_TRUE(db->Unload("f").ok());
    auto f = db->Get("f");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE((*f)->MayContain(K(1, i))) << Name(c) << " " << i;
    }
    if (multiset) {
      EXPECT_EQ((*f)->Count(K(0, 8)), 0u) << Name(c);
    }
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  auto f = db->Get("f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (int set = 0; set < 2; ++set) {
    for (int i = 0; i < n; ++i) {
      if (multiset && set == 0 && i == 8) continue;
      ASSERT_TRUE((*f)->MayContain(K(set, i))) << Name(c) << " " << i;
    }
  }
  if (multiset) {
    EXPECT_EQ((*f)->Count(K(0, 7)), 2u) << Name(c);
    EXPECT_EQ((*f)->Count(K(0, 8)), 0u) << Name(c);
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (FilterType t :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    for (Durability d :
         {Durability::kNone, Durability::kJournal, Durability::kSync}) {
      for (bool mapped : {true, false}) out.push_back({t, d, mapped});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllPaths, UnloadTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) {
                           std::string n = Name(info.param);
                           for (char& ch : n) {
                             if (ch == '/') ch = '_';
                           }
                           return n;
                         });

TEST(UnloadRefusalTest, AHeldFilterIsNotUnloaded) {
  TempDir dir;
  auto budget = std::make_shared<MemoryBudget>(uint64_t{1} << 30);
  DatabaseOptions o;
  o.path = dir.db();
  o.memory_budget = budget;
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  auto f = db->Create("f", testing::Spec(FilterType::kBloom, 1000, 1));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const uint64_t held = budget->used();
  EXPECT_TRUE(db->Unload("f").status().IsBusy());
  EXPECT_EQ(budget->used(), held);
  EXPECT_EQ(db->Loaded().size(), 1u);
  SF_ASSERT_OK((*f)->Add("a"));  // still the live filter
  f = Status::NotFound("released");
  EXPECT_TRUE(db->Unload("f").ok());
  EXPECT_TRUE(db->Unload("f").status().IsNotFound());  // not loaded now
  EXPECT_TRUE(db->Unload("nothing").status().IsNotFound());
  auto again = db->Get("f");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->MayContain("a"));
}

// Writers take and release handles while another thread unloads over and
// over: no acknowledged add is ever lost.
TEST(UnloadRefusalTest, UnloadsBetweenUsesLoseNothing) {
  TempDir dir;
  DatabaseOptions o;
  o.path = dir.db();
  o.mapped_journal_min_bytes = 0;
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(
      db->Create("f", testing::Spec(FilterType::kCuckoo, 50000, 4)).ok());
  std::atomic<int> acked{0};
  std::atomic<bool> stop{false};
  std::thread unloader([&] {
    int unloaded = 0;
    while (!stop.load() || unloaded == 0) {
      if (db->Unload("f").ok()) ++unloaded;
    }
  });
  for (int i = 0; i < 2000; ++i) {
    auto f = db->Get("f");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    SF_ASSERT_OK((*f)->Add(K(2, i)));
    acked.store(i + 1);
  }
  stop.store(true);
  unloader.join();
  auto f = db->Get("f");
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < acked.load(); ++i) {
    ASSERT_TRUE((*f)->MayContain(K(2, i))) << i;
  }
}

}  // namespace
}  // namespace shardfilter
