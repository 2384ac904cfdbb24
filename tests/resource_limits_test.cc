// Resource limits and honest counting: repeated keys never use capacity or
// grow a filter, copies are bounded, memory stays within the engine's
// budget.
//
// Over 400 lines: one case per limit, sharing their fixtures.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/memory_budget.h"
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
      EXPECT_EQ(after.total.items, 7u);  // refused adds take no fill (S7)
      EXPECT_NE(last.message().find("already holds 7 copies"),
                std::string::npos)
          << last.ToString();
      break;
    case FilterType::kCountingBloom:
      EXPECT_EQ(ok, 15u);
      EXPECT_EQ((*f)->Count("same"), 15u);
      EXPECT_EQ(after.total.items, 15u);  // refused adds take no fill (S7)
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

// Case 3: the memory budget is checked before any allocation. Before,
// `create --capacity 1e11` allocated and zeroed ~147 GB and was OOM-killed.
TEST(MemoryBudgetTest, HugeCreateIsRefusedWithoutAllocating) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    auto budget = std::make_shared<MemoryBudget>(uint64_t{1} << 30);  // 1 GiB
    FilterSpec spec;
    spec.type = type;
    spec.capacity = 100'000'000'000;
    auto f = ShardedFilter::Create(spec, budget);
    ASSERT_FALSE(f.ok()) << FilterTypeName(type);
    EXPECT_EQ(f.status().code(), StatusCode::kResourceExhausted)
        << f.status().ToString();
    EXPECT_NE(f.status().message().find("memory budget of 1073741824 bytes"),
              std::string::npos)
        << f.status().ToString();
    EXPECT_EQ(budget->used(), 0u);
  }
}

TEST(MemoryBudgetTest, FilterChargesItsTablesAndGivesThemBack) {
  auto budget = std::make_shared<MemoryBudget>(uint64_t{1} << 30);
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = 1'000'000;
  {
    auto f = ShardedFilter::Create(spec, budget);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(budget->used(), (*f)->Stats().total.bytes);
  }
  EXPECT_EQ(budget->used(), 0u);
}

// Distinct keys into a scalable filter with a small budget: growth stops
// with ResourceExhausted, memory stays under the budget, and every key
// acknowledged before is still present.
TEST(MemoryBudgetTest, GrowthStopsAtTheBudgetAndLosesNoKey) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    FilterSpec spec;
    spec.type = type;
    spec.capacity = 10'000;
    spec.shards = 1;
    auto probe = ShardedFilter::Create(spec);
    ASSERT_TRUE(probe.ok());
    const uint64_t first = (*probe)->Stats().total.bytes;
    // Room for link 0 and link 1 (2x), not link 2 (4x).
    auto budget = std::make_shared<MemoryBudget>(first * 4);
    auto f = ShardedFilter::Create(spec, budget);
    ASSERT_TRUE(f.ok());
    uint64_t acked = 0;
    Status last;
    for (uint64_t i = 0; i < 1'000'000; ++i) {
      last = (*f)->Add(Key(4, i));
      if (!last.ok()) break;
      ++acked;
    }
    EXPECT_EQ(last.code(), StatusCode::kResourceExhausted)
        << FilterTypeName(type) << ": " << last.ToString();
    EXPECT_LE(budget->used(), budget->limit());
    EXPECT_LE((*f)->Stats().total.bytes, budget->limit());
    EXPECT_EQ((*f)->shard_links(0), 2u);
    EXPECT_GE(acked, 30'000u);
    for (uint64_t i = 0; i < acked; ++i) {
      ASSERT_TRUE((*f)->MayContain(Key(4, i))) << i;
    }
    // The refused add changed nothing; later adds keep being refused.
    EXPECT_EQ((*f)->Add(Key(5, 0)).code(), StatusCode::kResourceExhausted);
  }
}

TEST(MemoryBudgetTest, DatabaseCreateImportAndOpenAreChecked) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  o.memory_budget = std::make_shared<MemoryBudget>(uint64_t{1} << 20);
  std::string exported;
  {
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok());
    FilterSpec big;
    big.type = FilterType::kBloom;
    big.capacity = 10'000'000;
    auto f = (*db)->Create("big", big);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kResourceExhausted);
    EXPECT_TRUE((*db)->List().empty());  // nothing changed
    FilterSpec small;
    small.type = FilterType::kBloom;
    small.capacity = 500'000;  // ~600 KiB
    auto s = (*db)->Create("small", small);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_OK((*s)->Add("k"));
    auto e = ExportFilter(**db, "small");
    ASSERT_TRUE(e.ok());
    exported = *e;
    // A second copy does not fit beside the first.
    Status imp = ImportFilter(**db, "copy", exported);
    EXPECT_EQ(imp.code(), StatusCode::kResourceExhausted) << imp.ToString();
    EXPECT_EQ((*db)->List().size(), 1u);
    ASSERT_OK((*db)->Close());
  }
  // A filter that does not fit is refused when it is loaded, naming it;
  // the store opens (the other filters serve) and nothing changes: a later
  // use, with room, loads it whole. Before: the whole open failed.
  auto budget = std::make_shared<MemoryBudget>(100'000);
  o.memory_budget = budget;
  {
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto f = (*db)->Get("small");
    EXPECT_EQ(f.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(f.status().message().find("small"), std::string::npos)
        << f.status().ToString();
    EXPECT_EQ((*db)->List(), std::vector<std::string>{"small"});
    EXPECT_TRUE((*db)->Unavailable().empty());  // over budget is not damage
    ASSERT_OK((*db)->Close());
  }
  o.memory_budget = std::make_shared<MemoryBudget>(uint64_t{1} << 20);
  {
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto f = (*db)->Get("small");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_TRUE((*f)->MayContain("k"));
    ASSERT_OK((*db)->Close());
  }
  // ... and the standalone loader too.
  auto loaded =
      LoadExportedFilter(exported, std::make_shared<MemoryBudget>(100'000));
  EXPECT_EQ(loaded.status().code(), StatusCode::kResourceExhausted);
}

TEST(MemoryBudgetTest, ParseByteSize) {
  EXPECT_EQ(*ParseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("4G"), uint64_t{4} << 30);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), uint64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("1000"), 1000u);
  EXPECT_EQ(*ParseByteSize("2kb"), 2048u);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("4X").ok());
  EXPECT_FALSE(ParseByteSize("G").ok());
  EXPECT_GT(MemoryBudget::AvailableMemory(), 0u);
  EXPECT_EQ(MemoryBudget::DefaultLimit(),
            static_cast<uint64_t>(MemoryBudget::AvailableMemory() *
                                  kDefaultBudgetShare));
}

// Case 6: ExportShardedFilter on a handle migrated to more shards indexed
// the old shard array with the new shard count (out of bounds).
TEST(MigratedHandleTest, ExportFollowsTheMigration) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok());
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 10'000;
  spec.shards = 1;
  spec.retain_hashes = true;
  auto h = (*db)->Create("f", spec);
  ASSERT_TRUE(h.ok());
  for (uint64_t i = 0; i < 5000; ++i) ASSERT_OK((*h)->Add(Key(6, i)));
  FilterSpec target = (*h)->spec();
  target.shards = 8;
  target.capacity = 40'000;
  auto p = (*db)->Migrate("f", target);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ((*h)->shard_count(), 8u);  // the handle forwards
  const std::string bytes = ExportShardedFilter(**h);
  auto loaded = LoadExportedFilter(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->shard_count(), 8u);
  for (uint64_t i = 0; i < 5000; ++i) {
    ASSERT_TRUE((*loaded)->MayContain(Key(6, i))) << i;
  }
  EXPECT_EQ(bytes, *ExportFilter(**db, "f"));
}

// As case 6, for filters whose adds take no sequence: a Bloom filter
// without a journal (its one-key adds run inline, ShardHead::last_seq). Its
// version follows its fill: an add that set a new bit moves it, one that
// set none (nothing to lose) does not; and for each type an add through
// the handle's inline path (one shard, one link) and through its batch
// moves it.
TEST(MigratedHandleTest, ReplaceRefusesLaterWritesOfEveryDurability) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    for (Durability durability : {Durability::kNone, Durability::kJournal}) {
      SCOPED_TRACE(std::string(FilterTypeName(type)) + " durability " +
                   std::to_string(static_cast<int>(durability)));
      testing::TempDir dir;
      DatabaseOptions o;
      o.path = dir.path();
      auto db = Database::Open(o);
      ASSERT_TRUE(db.ok());
      FilterSpec spec;
      spec.type = type;
      spec.capacity = 10'000;
      spec.durability = durability;
      auto h = (*db)->Create("f", spec);
      ASSERT_TRUE(h.ok());
      ASSERT_OK((*h)->Add("early"));
      auto v = (*db)->Version("f");
      ASSERT_TRUE(v.ok());
      if (type == FilterType::kBloom) {
        ASSERT_OK((*h)->Add("early"));  // no new bit: nothing to lose
        auto same = (*db)->Version("f");
        ASSERT_TRUE(same.ok());
        EXPECT_EQ(same->mutations, v->mutations);
      }
      ASSERT_OK((*h)->Add("late"));  // acknowledged after the derivation
      auto after_one = (*db)->Version("f");
      ASSERT_TRUE(after_one.ok());
      EXPECT_GT(after_one->mutations, v->mutations);
      const std::string_view batch[] = {"later", "latest"};
      ASSERT_OK((*h)->AddKeys(batch));
      auto after_batch = (*db)->Version("f");
      ASSERT_TRUE(after_batch.ok());
      EXPECT_GT(after_batch->mutations, after_one->mutations);
      auto built = ShardedFilter::Create(spec);
      ASSERT_TRUE(built.ok());
      ASSERT_OK((*built)->Add("early"));
      Status s = (*db)->ReplaceFilter("f", std::move(*built), false, *v);
      EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
      EXPECT_TRUE((*h)->MayContain("late"));
      EXPECT_TRUE((*h)->MayContain("latest"));
    }
  }
}

// Case 6: ReplaceFilter refuses a filter derived before later writes (it
// would drop them silently), and nothing changes.
TEST(MigratedHandleTest, ReplaceRefusesAFilterDerivedBeforeLaterWrites) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok());
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 10'000;
  auto h = (*db)->Create("f", spec);
  ASSERT_TRUE(h.ok());
  ASSERT_OK((*h)->Add("early"));
  auto v = (*db)->Version("f");
  ASSERT_TRUE(v.ok());
  auto built = ShardedFilter::Create(spec);
  ASSERT_TRUE(built.ok());
  ASSERT_OK((*built)->Add("early"));
  ASSERT_OK((*h)->Add("late"));  // acknowledged after the derivation
  Status s = (*db)->ReplaceFilter("f", std::move(*built), false, *v);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_NE(s.message().find("1 mutations were acknowledged since"),
            std::string::npos)
      << s.ToString();
  EXPECT_TRUE((*h)->MayContain("late"));
  // Derived again from the current state, it goes in.
  v = (*db)->Version("f");
  ASSERT_TRUE(v.ok());
  auto again = ShardedFilter::Create(spec);
  ASSERT_TRUE(again.ok());
  ASSERT_OK((*again)->Add("early"));
  ASSERT_OK((*again)->Add("late"));
  ASSERT_OK((*db)->ReplaceFilter("f", std::move(*again), false, *v));
  EXPECT_TRUE((*h)->MayContain("late"));
  // A version of the replaced filter no longer matches anything.
  auto third = ShardedFilter::Create(spec);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ((*db)->ReplaceFilter("f", std::move(*third), false, *v).code(),
            StatusCode::kAborted);
}

// Case 4: a Bloom source is a set. Before, the migration replayed every
// queued add verbatim into a counting / cuckoo target: a hot key added
// during the fill became as many copies (and filled its bucket pair: the
// migration failed).
TEST(BloomSourceMigrationTest, HotKeyStaysOneCopy) {
  for (FilterType to : {FilterType::kCuckoo, FilterType::kCountingBloom}) {
    testing::TempDir dir;
    DatabaseOptions o;
    o.path = dir.path();
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok());
    FilterSpec spec;
    spec.type = FilterType::kBloom;
    spec.capacity = 400'000;
    spec.retain_hashes = true;
    auto f = (*db)->Create("f", spec);
    ASSERT_TRUE(f.ok());
    std::vector<std::string> keys;
    for (uint64_t i = 0; i < 200'000; ++i) keys.push_back(Key(7, i));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    ASSERT_OK((*f)->AddKeys(views));
    for (int i = 0; i < 20; ++i) ASSERT_OK((*f)->Add("hot"));  // retained x21
    FilterSpec target = (*f)->spec();
    target.type = to;
    target.retain_hashes = false;
    ASSERT_OK((*db)->StartMigration("f", target));
    // The hot key and a new key, again and again while the target fills
    // (the source answers "already present" after the first time). Not
    // after the switch: the filter is then a multiset, each add a copy.
    int rounds = 0;
    for (; rounds < 200'000; ++rounds) {
      auto p = (*db)->GetMigration("f");
      ASSERT_TRUE(p.ok());
      if (p->phase != MigrationPhase::kFilling) break;
      ASSERT_OK((*f)->Add("hot"));
      ASSERT_OK((*f)->Add("new-hot"));
    }
    auto p = (*db)->WaitForMigration("f");
    ASSERT_TRUE(p.ok());
    ASSERT_OK(p->status);
    ASSERT_EQ((*f)->type(), to);
    EXPECT_EQ((*f)->Count("hot"), 1u)
        << FilterTypeName(to) << " rounds " << rounds;
    EXPECT_EQ((*f)->Count("new-hot"), 1u) << FilterTypeName(to);
    for (uint64_t i = 0; i < 200'000; i += 97) {
      ASSERT_TRUE((*f)->MayContain(Key(7, i)));
    }
  }
}

}  // namespace
}  // namespace shardfilter
