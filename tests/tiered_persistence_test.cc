// Persistent tiered filters: round trips through Close / reopen, the stored
// encodings, errors, and the blacklist scenario of
// tools/examples/blacklist_example.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/tiered_internal.h"
#include "shardfilter/engine/tiered_filter.h"
#include "shardfilter/persistence/tiered_table.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using persistence::TieredDescriptor;
using testing::Key;
using testing::MustOpen;
using testing::Options;
using testing::TempDir;

constexpr uint64_t kPresent = 1, kAbsent = 2;

TieredSpec Spec(FilterType type, uint64_t n, bool exact,
                Durability d = Durability::kJournal) {
  TieredSpec t;
  FilterSpec a, b;
  a.type = b.type = type;
  a.capacity = b.capacity = n;
  a.fpp = 0.1;
  b.fpp = 0.01;
  a.shards = 2;
  b.shards = 4;
  // The tier's sizing math is stated at each level's declared rate; a
  // scalable level would run at half of it (and cost its memory).
  a.scalable = b.scalable = false;
  t.levels = {a, b};
  t.exact_level = exact;
  t.durability = d;
  return t;
}

TEST(TieredPersistenceTest, RoundTripThroughCloseAndJournalReplay) {
  for (bool checkpoint_on_close : {true, false}) {
    TempDir dir;
    DatabaseOptions o = Options(dir.db());
    o.checkpoint_on_close = checkpoint_on_close;
    {
      auto db = MustOpen(o);
      ASSERT_NE(db, nullptr);
      auto t = TieredFilter::Create(db.get(), "bl",
                                    Spec(FilterType::kBloom, 10'000, true));
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      for (uint64_t i = 0; i < 5'000; ++i) {
        SF_ASSERT_OK((*t)->Add(Key(kPresent, i)));
      }
      SF_ASSERT_OK(db->Close());
    }
    auto db = MustOpen(o);
    ASSERT_NE(db, nullptr);
    auto t = TieredFilter::Open(db.get(), "bl");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE((*t)->has_exact_level());
    EXPECT_EQ((*t)->level_count(), 2u);
    EXPECT_EQ((*t)->level(1).spec().fpp, 0.01);
    for (uint64_t i = 0; i < 5'000; ++i) {
      ASSERT_TRUE(*(*t)->Contains(Key(kPresent, i))) << i;
      ASSERT_FALSE(*(*t)->Contains(Key(kAbsent, i))) << i;
    }
    // Open returns the one object per database and name.
    EXPECT_EQ(TieredFilter::Open(db.get(), "bl")->get(), t->get());
    // The levels are ordinary, listed catalog filters.
    std::vector<std::string> names = db->List();
    ASSERT_EQ(names.size(), 2u);
    EXPECT_EQ(names[0], TieredFilter::LevelName("bl", 0));
  }
}

TEST(TieredPersistenceTest, RemovableRoundTrip) {
  TempDir dir;
  {
    auto db = MustOpen(Options(dir.db()));
    auto t = TieredFilter::Create(db.get(), "c",
                                  Spec(FilterType::kCuckoo, 1000, true));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    SF_ASSERT_OK((*t)->Add("x"));
    SF_ASSERT_OK((*t)->Add("x"));
    SF_ASSERT_OK((*t)->Add("y"));
    SF_ASSERT_OK((*t)->Remove("y"));
  }
  auto db = MustOpen(Options(dir.db()));
  auto t = TieredFilter::Open(db.get(), "c");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(*(*t)->Contains("y"));
  SF_ASSERT_OK((*t)->Remove("x"));
  EXPECT_TRUE(*(*t)->Contains("x"));  // added twice
  SF_ASSERT_OK((*t)->Remove("x"));
  EXPECT_FALSE(*(*t)->Contains("x"));
  EXPECT_EQ((*t)->level(0).Count("x"), 0u);
}

TEST(TieredPersistenceTest, Errors) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  EXPECT_TRUE(TieredFilter::Open(db.get(), "t").status().IsNotFound());
  EXPECT_TRUE(TieredFilter::Drop(db.get(), "t").IsNotFound());
  EXPECT_TRUE(
      TieredFilter::Create(db.get(), "", Spec(FilterType::kBloom, 10, false))
          .status()
          .IsInvalidArgument());
  TieredSpec empty;
  EXPECT_TRUE(
      TieredFilter::Create(db.get(), "t", empty).status().IsInvalidArgument());
  ASSERT_TRUE(
      TieredFilter::Create(db.get(), "t", Spec(FilterType::kBloom, 10, true))
          .ok());
  EXPECT_EQ(
      TieredFilter::Create(db.get(), "t", Spec(FilterType::kBloom, 10, true))
          .status()
          .code(),
      StatusCode::kAlreadyExists);
  // A plain filter is not a tiered one.
  ASSERT_TRUE(db->Create("plain", FilterSpec{}).ok());
  EXPECT_TRUE(TieredFilter::Open(db.get(), "plain").status().IsNotFound());
  // Durability none: no removes.
  auto none = TieredFilter::Create(
      db.get(), "n", Spec(FilterType::kCuckoo, 10, true, Durability::kNone));
  ASSERT_TRUE(none.ok());
  SF_ASSERT_OK((*none)->Add("k"));
  EXPECT_TRUE((*none)->Remove("k").IsNotSupported());
  // A level dropped behind the tiered filter's back (damage: the public
  // Drop refuses level names, LevelNamesAreReservedToTheTieredFilter).
  SF_ASSERT_OK(
      internal::TieredAccess::DropLevel(*db, TieredFilter::LevelName("t", 1)));
  Status s = TieredFilter::Open(db.get(), "t").status();
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  // ... recreated with another type.
  ASSERT_TRUE(internal::TieredAccess::CreateLevel(
                  *db, TieredFilter::LevelName("t", 1),
                  testing::Spec(FilterType::kCuckoo, 10, 1))
                  .ok());
  s = TieredFilter::Open(db.get(), "t").status();
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  SF_ASSERT_OK(TieredFilter::Drop(db.get(), "t"));
  EXPECT_TRUE(TieredFilter::Open(db.get(), "t").status().IsNotFound());
  EXPECT_FALSE(db->Get(TieredFilter::LevelName("t", 0)).ok());
  // After Close, the exact level answers NotSupported, never a crash.
  auto t =
      TieredFilter::Create(db.get(), "z", Spec(FilterType::kBloom, 10, true));
  ASSERT_TRUE(t.ok());
  SF_ASSERT_OK((*t)->Add("k"));
  SF_ASSERT_OK(db->Close());
  EXPECT_TRUE((*t)->Contains("k").status().IsNotSupported());
  EXPECT_FALSE((*t)->Add("k2").ok());
  EXPECT_TRUE(TieredFilter::Open(db.get(), "z").status().IsNotSupported());
}

// A level's catalog name ("<name>\0level/<i>") is the tiered filter's own:
// nobody else may create, drop, import or expire one. Before, a caller
// could drop a level (breaking the tiered filter) or create a filter of
// such a name, which a later TieredFilter::Create of <name> then deleted
// as crash debris.
TEST(TieredPersistenceTest, LevelNamesAreReservedToTheTieredFilter) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  ASSERT_NE(db, nullptr);
  const std::string level0 = TieredFilter::LevelName("t", 0);
  FilterSpec plain;
  plain.capacity = 1000;
  auto made = db->Create(level0, plain);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(made.status().message().find("reserved"), std::string::npos);
  auto other = db->Create(std::string("x\0level/9y", 11), plain);
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);

  auto t = TieredFilter::Create(db.get(), "t",
                                Spec(FilterType::kBloom, 1000, false));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SF_ASSERT_OK((*t)->Add("k"));
  EXPECT_EQ(db->Drop(level0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db->SetExpiry(level0, 1).code(), StatusCode::kInvalidArgument);
  auto exported = ExportFilter(*db, "t");  // not a plain filter: no export
  EXPECT_FALSE(exported.ok());
  auto plain_f = db->Create("p", plain);
  ASSERT_TRUE(plain_f.ok());
  SF_ASSERT_OK((*plain_f)->Add("k"));
  auto bytes = ExportFilter(*db, "p");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(ImportFilter(*db, level0, *bytes).code(),
            StatusCode::kInvalidArgument);
  // The level is untouched: the tiered filter still answers, and its own
  // Drop removes its levels.
  auto again = TieredFilter::Open(db.get(), "t");
  ASSERT_TRUE(again.ok());
  auto has = (*again)->Contains("k");
  ASSERT_TRUE(has.ok());
  EXPECT_TRUE(*has);
  EXPECT_TRUE(db->Get(level0).ok());
  SF_ASSERT_OK(TieredFilter::Drop(db.get(), "t"));
  EXPECT_EQ(db->Get(level0).status().code(), StatusCode::kNotFound);
}

TEST(TieredPersistenceTest, ReadOnlyOpenAnswersAndRefusesWrites) {
  TempDir dir;
  {
    auto db = MustOpen(Options(dir.db()));
    auto t = TieredFilter::Create(db.get(), "r",
                                  Spec(FilterType::kBloom, 100, true));
    ASSERT_TRUE(t.ok());
    SF_ASSERT_OK((*t)->Add("k"));
  }
  DatabaseOptions o = Options(dir.db());
  o.read_only = true;
  auto db = MustOpen(o);
  auto t = TieredFilter::Open(db.get(), "r");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(*(*t)->Contains("k"));
  EXPECT_TRUE((*t)->Add("k2").IsNotSupported());
  EXPECT_TRUE(TieredFilter::Drop(db.get(), "r").IsNotSupported());
}

// Pinned encodings: a change of the stored bytes is never an accident.
TEST(TieredPersistenceTest, EncodingsArePinnedAndChecked) {
  TieredDescriptor d;
  d.exact_level = true;
  d.durability = 1;
  d.base_seed = 7;
  d.levels = {{FilterType::kBloom, 11}, {FilterType::kCuckoo, 12}};
  std::string v = persistence::EncodeTieredDescriptor(d);
  EXPECT_EQ(v.size(), 2u + 12 + 2 * 9 + 8);
  EXPECT_EQ(v.substr(0, 6), std::string("\x01\x08\x01\x01\x02\x00", 6));
  auto back = persistence::DecodeTieredDescriptor(v, "n");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, d);
  v[5] ^= 1;
  EXPECT_TRUE(
      persistence::DecodeTieredDescriptor(v, "n").status().IsCorruption());

  std::string rk = persistence::ExactKey("bl", "key");
  EXPECT_EQ(rk, std::string("\xF7Tk\x00\x02"
                            "blkey",
                            10));
  std::string e = persistence::EncodeExactEntry(rk, 3);
  ASSERT_EQ(e.size(), 14u);
  EXPECT_EQ(e.substr(0, 6), std::string("\x01\x09\x03\x00\x00\x00", 6));
  EXPECT_EQ(*persistence::DecodeExactEntry(rk, e, "x"), 3u);
  // Bound to its key: the same value under another key fails.
  std::string other = persistence::ExactKey("bl", "kez");
  EXPECT_TRUE(
      persistence::DecodeExactEntry(other, e, "x").status().IsCorruption());
  e[0] = 9;
  EXPECT_TRUE(
      persistence::DecodeExactEntry(rk, e, "x").status().IsNotSupported());
}

// The blacklist of tools/examples/blacklist_example, scaled down: coarse levels
// that stay in cache, an exact level in RocksDB, a 90%-absent query stream.
TEST(TieredPersistenceTest, BlacklistScenarioIsExact) {
  constexpr uint64_t kBlacklisted = 50'000, kQueries = 200'000;
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  TieredSpec spec = Spec(FilterType::kBloom, kBlacklisted, true);
  auto t = TieredFilter::Create(db.get(), "blacklist", spec);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < kBlacklisted; ++i) keys.push_back(Key(kPresent, i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  SF_ASSERT_OK((*t)->AddKeys(views));
  uint64_t wrong = 0, blocked = 0;
  for (uint64_t q = 0; q < kQueries; ++q) {
    bool bad = q % 10 == 0;  // 10% of the stream is blacklisted
    std::string k = bad ? Key(kPresent, q / 10) : Key(kAbsent, q);
    Result<bool> r = (*t)->Contains(k);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    wrong += (*r != bad);
    blocked += *r;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(blocked, kQueries / 10);
  TieredStats st = (*t)->Stats();
  // ~90% of the absent 90% stop at the first (10%) level.
  EXPECT_GT(st.levels[0].settled, kQueries * 9 / 10 * 85 / 100);
  EXPECT_EQ(st.exact_found, kQueries / 10);
  EXPECT_LT(st.exact_absent, kQueries / 500);
  EXPECT_LT(st.filter_bytes, 200'000u);  // ~1.5 + 9.6 bits per key
}

}  // namespace
}  // namespace shardfilter
