// Online migration (engine/migration.h) and retained hashes: every type
// pair from retained hashes, folding, what cannot be done (and says why),
// rollback, forwarding handles, persistence of the result.
#include "shardfilter/engine/migration.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::Spec;
using testing::TempDir;

std::string Key(int i) { return "key-" + std::to_string(i); }

FilterSpec Retaining(FilterType t, uint64_t capacity, uint32_t shards) {
  FilterSpec s = Spec(t, capacity, shards);
  s.retain_hashes = true;
  return s;
}

// Measured rate over `n` keys never added.
double MeasureFpr(const ShardedFilter& f, int n) {
  int fp = 0;
  for (int i = 0; i < n; ++i) fp += f.MayContain("absent-" + std::to_string(i));
  return static_cast<double>(fp) / n;
}

const FilterType kTypes[] = {FilterType::kBloom, FilterType::kCountingBloom,
                             FilterType::kCuckoo};

class TypePair
    : public ::testing::TestWithParam<std::tuple<FilterType, FilterType>> {};

// Every (source, target) pair: rebuilt from retained hashes into another
// capacity, rate and shard count; every key present, counts kept where both
// types count, the target's rate within its target, and the result
// persisted and reopened.
TEST_P(TypePair, MigratesFromRetainedHashes) {
  const auto [from, to] = GetParam();
  TempDir dir;
  constexpr int kN = 20000;
  const bool removable = from != FilterType::kBloom;
  {
    auto db = MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto f = db->Create("f", Retaining(from, kN, 2));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    for (int i = 0; i < kN; ++i) ASSERT_OK((*f)->Add(Key(i)));
    // Keys 0..99 twice; keys 100..199 removed again.
    for (int i = 0; i < 100; ++i) ASSERT_OK((*f)->Add(Key(i)));
    if (removable) {
      for (int i = 100; i < 200; ++i) ASSERT_OK((*f)->Remove(Key(i)));
    }
  }
  auto db = MustOpen(Options(dir.db()));  // retained hashes survive reopen
  ASSERT_NE(db, nullptr);
  auto old_handle = db->Get("f");
  ASSERT_TRUE(old_handle.ok());
  FilterSpec target = Spec(to, 4 * kN, 4);
  target.fpp = 0.001;
  target.retain_hashes = true;
  auto p = db->Migrate("f", target);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->phase, MigrationPhase::kDone);
  EXPECT_EQ(p->source, MigrationSource::kRetainedHashes);
  EXPECT_GE(p->items_done, kN - (removable ? 100 : 0) - 1);
  auto now = db->Get("f");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)->type(), to);
  EXPECT_EQ((*now)->shard_count(), 4u);
  EXPECT_EQ((*now)->spec().capacity, 4u * kN);
  // The old handle forwards to the new filter.
  EXPECT_EQ((*old_handle)->type(), to);
  for (int i = 0; i < kN; ++i) {
    if (removable && i >= 100 && i < 200) continue;
    ASSERT_TRUE((*now)->MayContain(Key(i))) << Key(i);
    ASSERT_TRUE((*old_handle)->MayContain(Key(i))) << Key(i);
  }
  if (removable && to != FilterType::kBloom) {
    for (int i = 0; i < 100; ++i) EXPECT_GE((*now)->Count(Key(i)), 2u);
  }
  const double fpr = MeasureFpr(**now, 100000);
  EXPECT_LE(fpr, 0.001 * 1.5 + 0.0003) << "measured " << fpr;
  // The old handle's adds reach the new filter, journalled under it, and
  // the old handle's one-at-a-time queries see them (its shards' inline
  // query path is closed at the switch: Q1, engine/detail/shard_fast_path.h).
  ASSERT_OK((*old_handle)->Add("after"));
  for (int i = 0; i < 1000; ++i)
    ASSERT_OK((*old_handle)->Add("late-" + Key(i)));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE((*old_handle)->MayContain("late-" + Key(i))) << i;
  }
  ASSERT_TRUE(db->Close().ok());
  auto again = MustOpen(Options(dir.db()));
  ASSERT_NE(again, nullptr);
  auto f2 = again->Get("f");
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ((*f2)->type(), to);
  EXPECT_TRUE((*f2)->spec().retain_hashes);
  EXPECT_TRUE((*f2)->MayContain("after"));
  for (int i = 200; i < kN; ++i) ASSERT_TRUE((*f2)->MayContain(Key(i)));
  auto report = again->Verify();
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok()) << report->problems.front();
  EXPECT_EQ(report->orphan_values, 0u);
}

INSTANTIATE_TEST_SUITE_P(All, TypePair,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kTypes)));

// The old handle's one-at-a-time queries after the switch, for every type
// while each source shard still has its one link, so that the inline paths
// (Q1, engine/detail/shard_fast_path.h: a Bloom shard's table, a counting
// shard's counters, any shard's link) were open into the source's tables:
// the switch closes them, or the old handle would ask the source for keys
// added through it to the target.
TEST(Migration, OldHandleQueriesSeeAddsAfterTheSwitchFromOneLinkShards) {
  for (FilterType from : kTypes) {
    SCOPED_TRACE(static_cast<int>(from));
    TempDir dir;
    auto db = MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto f = db->Create("f", Retaining(from, 100'000, 1));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    for (int i = 0; i < 1000; ++i) ASSERT_OK((*f)->Add(Key(i)));
    ASSERT_EQ((*f)->shard_links(0), 1u);
    ASSERT_TRUE(
        db->Migrate("f", Retaining(FilterType::kBloom, 100'000, 2)).ok());
    for (int i = 0; i < 1000; ++i) ASSERT_OK((*f)->Add("late-" + Key(i)));
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE((*f)->MayContain("late-" + Key(i))) << i;
      ASSERT_TRUE((*f)->MayContain(Key(i))) << i;
    }
  }
}

TEST(Migration, MigratesTwiceAndBackFromRetainedHashes) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto f = db->Create("f", Retaining(FilterType::kCuckoo, 5000, 1));
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 5000; ++i) ASSERT_OK((*f)->Add(Key(i)));
  FilterSpec bloom = Retaining(FilterType::kBloom, 10000, 2);
  ASSERT_TRUE(db->Migrate("f", bloom).ok());
  FilterSpec cuckoo = Retaining(FilterType::kCuckoo, 8000, 4);
  auto p = db->Migrate("f", cuckoo);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE((*f)->MayContain(Key(i)));
  EXPECT_EQ((*f)->type(), FilterType::kCuckoo);  // through two forwards
  ASSERT_OK((*f)->Remove(Key(7)));
}

TEST(Migration, FoldsABloomFilterWithoutRetainedHashes) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  FilterSpec spec = Spec(FilterType::kBloom, 400000, 2);
  auto f = db->Create("f", spec);
  ASSERT_TRUE(f.ok());
  constexpr int kN = 50000;  // an eighth of the capacity: over-provisioned
  for (int i = 0; i < kN; ++i) ASSERT_OK((*f)->Add(Key(i)));
  const uint64_t bytes_before = (*f)->Stats().total.bytes;
  FilterSpec folded = FoldedSpec((*f)->spec(), 4);
  auto p = db->Migrate("f", folded);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->source, MigrationSource::kFold);
  EXPECT_EQ((*f)->spec().capacity, 100000u);
  EXPECT_EQ((*f)->Stats().total.bytes * 4, bytes_before);
  for (int i = 0; i < kN; ++i) ASSERT_TRUE((*f)->MayContain(Key(i)));
  // Half full at the folded capacity: the rate stays under the target.
  EXPECT_LE(MeasureFpr(**f, 100000), 0.01);
  ASSERT_TRUE(db->Close().ok());
  auto again = MustOpen(Options(dir.db()));
  auto f2 = again->Get("f");
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ((*f2)->spec().capacity, 100000u);
  for (int i = 0; i < kN; ++i) ASSERT_TRUE((*f2)->MayContain(Key(i)));
}

TEST(Migration, RefusesWhatItCannotDoAndSaysWhy) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_TRUE(db->Create("plain", Spec(FilterType::kCuckoo, 1000, 1)).ok());
  ASSERT_TRUE(db->Create("bloom", Spec(FilterType::kBloom, 1000, 1)).ok());
  ASSERT_TRUE(db->Create("kept", Retaining(FilterType::kBloom, 1000, 1)).ok());
  Status s = db->StartMigration("plain", Spec(FilterType::kCuckoo, 5000, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("retain"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("--keys"), std::string::npos) << s.ToString();
  s = db->StartMigration("bloom", Spec(FilterType::kBloom, 300, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = db->StartMigration("bloom", Spec(FilterType::kCuckoo, 500, 1),
                         MigrationSource::kFold);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  FilterSpec reseeded = Retaining(FilterType::kBloom, 2000, 1);
  reseeded.seed = 42;
  s = db->StartMigration("kept", reseeded);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("seed"), std::string::npos);
  s = db->StartMigration("plain", Retaining(FilterType::kCuckoo, 500, 1),
                         MigrationSource::kRetainedHashes);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db->StartMigration("nope", Spec(FilterType::kBloom, 10, 1)).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(db->GetMigration("plain").status().code(), StatusCode::kNotFound);
  FilterSpec bad = Spec(FilterType::kBloom, 0, 1);
  EXPECT_EQ(db->StartMigration("kept", bad).code(),
            StatusCode::kInvalidArgument);
  // Explicit durability none with retained hashes, and standalone filters.
  FilterSpec none = Retaining(FilterType::kBloom, 10, 1);
  none.durability = Durability::kNone;
  EXPECT_EQ(db->Create("x", none).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardedFilter::Create(Retaining(FilterType::kBloom, 10, 1))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(Migration, ATargetTooSmallFailsAndTheSourceServesOn) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto f = db->Create("f", Retaining(FilterType::kCuckoo, 4000, 1));
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 4000; ++i) ASSERT_OK((*f)->Add(Key(i)));
  FilterSpec small = Retaining(FilterType::kCuckoo, 500, 1);
  small.scalable = false;
  auto p = db->Migrate("f", small);
  EXPECT_FALSE(p.ok());
  auto g = db->GetMigration("f");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->phase, MigrationPhase::kFailed);
  EXPECT_EQ(g->status.code(), StatusCode::kFull) << g->status.ToString();
  EXPECT_EQ((*f)->spec().capacity, 4000u);
  for (int i = 0; i < 4000; ++i) ASSERT_TRUE((*f)->MayContain(Key(i)));
  ASSERT_OK((*f)->Add("still-writable"));
  ASSERT_TRUE(db->Close().ok());
  auto again = MustOpen(Options(dir.db()));
  auto f2 = again->Get("f");
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ((*f2)->spec().capacity, 4000u);
  EXPECT_TRUE((*f2)->MayContain("still-writable"));
  auto report = again->Verify();
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok());
}

TEST(Migration, ReadOnlyStoreRefuses) {
  TempDir dir;
  {
    auto db = MustOpen(Options(dir.db()));
    ASSERT_TRUE(db->Create("f", Retaining(FilterType::kBloom, 100, 1)).ok());
  }
  DatabaseOptions o = Options(dir.db());
  o.read_only = true;
  auto db = MustOpen(o);
  EXPECT_EQ(
      db->StartMigration("f", Retaining(FilterType::kBloom, 200, 1)).code(),
      StatusCode::kNotSupported);
}

TEST(Migration, DropAfterMigrationReachesTheNewFilter) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto f = db->Create("f", Retaining(FilterType::kBloom, 1000, 1));
  ASSERT_TRUE(f.ok());
  ASSERT_OK((*f)->Add("a"));
  ASSERT_TRUE(db->Migrate("f", Retaining(FilterType::kCuckoo, 2000, 2)).ok());
  ASSERT_OK(db->Drop("f"));
  EXPECT_EQ((*f)->Add("b").code(), StatusCode::kNotFound);
  EXPECT_EQ(db->Get("f").status().code(), StatusCode::kNotFound);
  // The name can be created afresh, without the old hashes.
  auto g = db->Create("f", Retaining(FilterType::kBloom, 1000, 1));
  ASSERT_TRUE(g.ok());
  auto p = db->Migrate("f", Retaining(FilterType::kBloom, 2000, 1));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->items_done, 0u);
}

// Retained hashes whose count fell to 0 are removed by a compaction
// (retained_hashes.cc R1), so that under churn (add, remove, add other
// keys...) the family stays bounded, and the multiset read back is
// unchanged: the keys still held migrate whole.
TEST(RetainedHashGc, CountsOfZeroAreCollectedAndTheRestSurvive) {
  for (FilterType type : {FilterType::kCountingBloom, FilterType::kCuckoo}) {
    TempDir dir;
    DatabaseOptions o = Options(dir.db());
    auto db = MustOpen(o);
    auto f = *db->Create("f", Retaining(type, 50'000, 4));
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 4000; ++i) {
        ASSERT_OK(f->Add(Key(round * 10'000 + i)));
      }
      for (int i = 0; i < 4000; ++i) {
        if (round < 2 || i % 2 == 0) {
          ASSERT_OK(f->Remove(Key(round * 10'000 + i)));
        }
      }
      SF_ASSERT_OK(db->Compact());
    }
    // Two compactions: the first merges each key's operands into a value,
    // the second passes that value (of count 0) to the filter.
    SF_ASSERT_OK(db->Compact());
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    EXPECT_TRUE(report->ok());
    EXPECT_EQ(report->retained_hashes, 2000u)
        << "12,000 hashes were added, 10,000 of them removed";
    // What is left is exactly what the filter holds: a migration from the
    // retained hashes finds every remaining key.
    FilterSpec target = Retaining(FilterType::kCuckoo, 10'000, 2);
    auto m = db->Migrate("f", target);
    SF_ASSERT_OK(m.status());
    auto g = *db->Get("f");
    EXPECT_EQ(g->Stats().total.items, 2000u);
    for (int i = 1; i < 4000; i += 2) {
      EXPECT_EQ(g->Count(Key(20'000 + i)), 1u) << i;
    }
  }
}

}  // namespace
}  // namespace shardfilter
