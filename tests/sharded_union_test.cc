// ShardedFilter::UnionWith and Database::Union (SF.UNION): no false
// negative, the FPR of the union at the target, every bad input refused
// with nothing changed, the union durable once Union returns.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/migration.h"
#include "shardfilter/engine/sharded_filter.h"
#include "store_test_util.h"

namespace shardfilter::testing {
namespace {

FilterSpec Bloom(uint64_t capacity, uint32_t shards, bool scalable = true) {
  FilterSpec s = Spec(FilterType::kBloom, capacity, shards);
  s.scalable = scalable;
  return s;
}

std::unique_ptr<ShardedFilter> Make(const FilterSpec& spec) {
  auto f = ShardedFilter::Create(spec);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

void AddRange(ShardedFilter& f, const std::string& prefix, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(f.Add(prefix + std::to_string(i)).ok());
  }
}

TEST(ShardedUnionTest, HoldsBothSetsAtTheTargetRate) {
  const FilterSpec spec = Bloom(100'000, 4, /*scalable=*/false);
  auto a = Make(spec), b = Make(spec);
  AddRange(*a, "a", 50'000);
  AddRange(*b, "b", 50'000);
  ASSERT_TRUE(a->UnionWith(*b).ok());
  for (int i = 0; i < 50'000; ++i) {
    ASSERT_TRUE(a->MayContain("a" + std::to_string(i)));
    ASSERT_TRUE(a->MayContain("b" + std::to_string(i))) << i;
  }
  // 100,000 distinct keys in a filter sized for them: the target rate.
  int fp = 0;
  constexpr int kProbes = 200'000;
  for (int i = 0; i < kProbes; ++i)
    fp += a->MayContain("x" + std::to_string(i));
  const double fpr = static_cast<double>(fp) / kProbes;
  EXPECT_LT(fpr, 0.01 * 1.5) << fpr;
  EXPECT_GT(fpr, 0.01 * 0.5) << fpr;  // the bits really are shared
  // The source is unchanged.
  EXPECT_FALSE(b->MayContain("a1") && b->MayContain("a2") &&
               b->MayContain("a3"));
}

TEST(ShardedUnionTest, RefusesOtherShapesAndTypesAndChangesNothing) {
  auto a = Make(Bloom(10'000, 2));
  AddRange(*a, "a", 1000);
  auto before = Make(Bloom(10'000, 2));
  AddRange(*before, "a", 1000);
  ASSERT_TRUE(a->Equals(*before));

  auto other_capacity = Make(Bloom(20'000, 2));
  auto other_shards = Make(Bloom(10'000, 4));
  FilterSpec fpp = Bloom(10'000, 2);
  fpp.fpp = 0.001;
  auto other_fpp = Make(fpp);
  FilterSpec seeded = Bloom(10'000, 2);
  seeded.seed = 12345;
  auto other_seed = Make(seeded);
  auto counting = Make(Spec(FilterType::kCountingBloom, 10'000, 2));
  auto cuckoo = Make(Spec(FilterType::kCuckoo, 10'000, 2));
  for (ShardedFilter* f : {other_capacity.get(), other_shards.get(),
                           other_fpp.get(), other_seed.get()}) {
    AddRange(*f, "o", 100);
    const Status s = a->UnionWith(*f);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_TRUE(a->Equals(*before));
  }
  for (ShardedFilter* f : {counting.get(), cuckoo.get()}) {
    EXPECT_TRUE(a->UnionWith(*f).IsInvalidArgument());
    EXPECT_TRUE(f->UnionWith(*a).IsInvalidArgument());
  }
  EXPECT_TRUE(a->Equals(*before));
  // A filter with itself: nothing to do.
  EXPECT_TRUE(a->UnionWith(*a).ok());
  EXPECT_TRUE(a->Equals(*before));
}

TEST(ShardedUnionTest, TheSourceMustNotHaveGrownFurther) {
  const FilterSpec spec = Bloom(1000, 1);  // scaling, expansion 2
  auto small = Make(spec), grown = Make(spec);
  AddRange(*small, "s", 100);
  AddRange(*grown, "g", 5000);  // several links
  ASSERT_GT(grown->Stats().shards[0].links, 1u);
  const Status s = small->UnionWith(*grown);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("grown further"), std::string::npos);
  EXPECT_FALSE(small->MayContain("g1") && small->MayContain("g2") &&
               small->MayContain("g3") && small->MayContain("g4"));
  // The other way round: the grown one takes the smaller one's links.
  ASSERT_TRUE(grown->UnionWith(*small).ok());
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(grown->MayContain("s" + std::to_string(i)));
  }
}

TEST(ShardedUnionTest, FillFollowsTheKeysSoTheUnionGrowsWhenFull) {
  const FilterSpec spec = Bloom(1000, 1);
  auto a = Make(spec), b = Make(spec);
  AddRange(*a, "a", 900);
  AddRange(*b, "b", 900);
  ASSERT_EQ(a->Stats().shards[0].links, 1u);
  // A union with a copy of itself implies no new key: nothing changes.
  auto a2 = Make(spec);
  AddRange(*a2, "a", 900);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->UnionWith(*a2).ok());
  const uint64_t fill = a->Stats().shards[0].filter.items;
  ASSERT_TRUE(a->Add("new 1").ok());
  EXPECT_EQ(a->Stats().shards[0].links, 1u) << fill;
  ASSERT_TRUE(a->UnionWith(*b).ok());
  // Link 0's bits now imply ~1800 keys, over its capacity of 1000: the
  // next new key goes to a new link, so link 0's rate stays at its target.
  ASSERT_TRUE(a->Add("new key").ok());
  EXPECT_EQ(a->Stats().shards[0].links, 2u);
  // A non-scaling filter says Full instead.
  auto c = Make(Bloom(1000, 1, false)), d = Make(Bloom(1000, 1, false));
  AddRange(*c, "c", 900);
  AddRange(*d, "d", 900);
  ASSERT_TRUE(c->UnionWith(*d).ok());
  EXPECT_EQ(c->Add("new key").code(), StatusCode::kFull);
}

TEST(ShardedUnionTest, ConcurrentAddsOnBothSidesLoseNothing) {
  const FilterSpec spec = Bloom(200'000, 8, false);
  auto a = Make(spec), b = Make(spec);
  AddRange(*b, "before", 20'000);  // acknowledged before the union
  std::atomic<bool> stop{false};
  std::thread writer_a([&] {
    for (int i = 0; i < 30'000; ++i)
      ASSERT_TRUE(a->Add("a" + std::to_string(i)).ok());
  });
  std::thread writer_b([&] {
    for (int i = 0; i < 30'000; ++i)
      ASSERT_TRUE(b->Add("b" + std::to_string(i)).ok());
  });
  std::thread reader([&] {
    while (!stop.load()) (void)a->MayContain("before1");
  });
  for (int round = 0; round < 5; ++round) ASSERT_TRUE(a->UnionWith(*b).ok());
  writer_a.join();
  writer_b.join();
  stop = true;
  reader.join();
  for (int i = 0; i < 20'000; ++i) {
    ASSERT_TRUE(a->MayContain("before" + std::to_string(i))) << i;
  }
  for (int i = 0; i < 30'000; ++i) {
    ASSERT_TRUE(a->MayContain("a" + std::to_string(i))) << i;
  }
}

class DatabaseUnionTest : public ::testing::Test {
 protected:
  DatabaseOptions Opts() {
    DatabaseOptions o = Options(dir_.db());
    o.checkpoint_on_close = false;  // a close is as a crash: no checkpoint
    return o;
  }
  TempDir dir_;
};

TEST_F(DatabaseUnionTest, TheUnionIsDurableWhenUnionReturns) {
  for (Durability d : {Durability::kNone, Durability::kJournal}) {
    TempDir dir;
    DatabaseOptions o = Options(dir.db());
    o.checkpoint_on_close = false;
    {
      auto db = MustOpen(o);
      FilterSpec spec = Bloom(10'000, 2);
      spec.durability = d;
      auto dest = *db->Create("dest", spec);
      auto src = *db->Create("src", spec);
      AddRange(*src, "s", 2000);
      ASSERT_TRUE(db->Checkpoint("src").ok());  // src's own keys survive
      const std::string_view sources[] = {"src"};
      ASSERT_TRUE(db->Union("dest", sources).ok());
      // Journalled adds after the union replay on top of its checkpoint.
      ASSERT_TRUE(dest->Add("after").ok());
      ASSERT_TRUE(db->Close().ok());
    }
    auto db = MustOpen(o);
    auto dest = db->Get("dest");
    ASSERT_TRUE(dest.ok());
    for (int i = 0; i < 2000; ++i) {
      ASSERT_TRUE((*dest)->MayContain("s" + std::to_string(i)))
          << i << " durability " << static_cast<int>(d);
    }
    if (d == Durability::kJournal) {
      EXPECT_TRUE((*dest)->MayContain("after"));
    }
  }
}

TEST_F(DatabaseUnionTest, EveryBadSourceIsFoundBeforeAnythingChanges) {
  auto db = MustOpen(Opts());
  auto dest = *db->Create("dest", Bloom(10'000, 2));
  auto good = *db->Create("good", Bloom(10'000, 2));
  ASSERT_TRUE(db->Create("bigger", Bloom(20'000, 2)).ok());
  ASSERT_TRUE(db->Create("cuckoo", Spec(FilterType::kCuckoo, 10'000, 2)).ok());
  AddRange(*good, "g", 500);
  {
    const std::string_view sources[] = {"good", "missing"};
    EXPECT_TRUE(db->Union("dest", sources).IsNotFound());
  }
  {
    const std::string_view sources[] = {"good", "bigger"};
    EXPECT_TRUE(db->Union("dest", sources).IsInvalidArgument());
  }
  {
    const std::string_view sources[] = {"good", "cuckoo"};
    EXPECT_TRUE(db->Union("dest", sources).IsInvalidArgument());
  }
  EXPECT_EQ(dest->Stats().total.items, 0u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(dest->MayContain("g" + std::to_string(i)) &&
                 dest->MayContain("g" + std::to_string(i + 10)) &&
                 dest->MayContain("g" + std::to_string(i + 20)));
  }
  {
    const std::string_view sources[] = {"good"};
    EXPECT_TRUE(db->Union("missing", sources).IsNotFound());
  }
  // A destination that retains hashes: a migration would lose the keys.
  FilterSpec retained = Bloom(10'000, 2);
  retained.retain_hashes = true;
  ASSERT_TRUE(db->Create("retained", retained).ok());
  {
    const std::string_view sources[] = {"good"};
    EXPECT_TRUE(db->Union("retained", sources).IsNotSupported());
  }
  // Several sources at once.
  auto other = *db->Create("other", Bloom(10'000, 2));
  AddRange(*other, "o", 500);
  const std::string_view sources[] = {"good", "other"};
  ASSERT_TRUE(db->Union("dest", sources).ok());
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(dest->MayContain("g" + std::to_string(i)));
    ASSERT_TRUE(dest->MayContain("o" + std::to_string(i)));
  }
}

TEST_F(DatabaseUnionTest, NotIntoAFilterBeingMigrated) {
  auto db = MustOpen(Opts());
  auto dest = *db->Create("dest", Bloom(400'000, 2));
  auto src = *db->Create("src", Bloom(400'000, 2));
  AddRange(*dest, "d", 20'000);
  AddRange(*src, "s", 1000);
  // A fold records the ops it replays into its target; a union is none.
  ASSERT_TRUE(db->StartMigration("dest", FoldedSpec(dest->spec(), 4)).ok());
  const std::string_view sources[] = {"src"};
  const Status s = db->Union("dest", sources);
  // Before the migration records ops: done, and the fold copies its bits;
  // while it runs: refused; once switched: the folded filter has another
  // shape. Never a union whose keys the target misses.
  EXPECT_TRUE(s.ok() || s.IsNotSupported() || s.IsInvalidArgument())
      << s.ToString();
  if (s.IsNotSupported()) {
    EXPECT_NE(s.message().find("being migrated"), std::string::npos);
  }
  ASSERT_TRUE(db->WaitForMigration("dest").ok());
  auto after = db->Get("dest");
  ASSERT_TRUE(after.ok());
  for (int i = 0; i < 20'000; ++i) {
    ASSERT_TRUE((*after)->MayContain("d" + std::to_string(i)));
  }
  if (s.ok()) {
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE((*after)->MayContain("s" + std::to_string(i))) << i;
    }
  }
}

}  // namespace
}  // namespace shardfilter::testing
