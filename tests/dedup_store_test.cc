// DedupStore: exactness against std::set over random workloads (single and
// batch forms, every filter type, filters overfilled into chains), reopen,
// bad input, old stores, corruption and the pinned value format. TTL
// expiry is in dedup_ttl_test.cc.
#include "shardfilter/engine/dedup_store.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "shardfilter/persistence/dedup_table.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::RawStore;
using testing::TempDir;

std::unique_ptr<DedupStore> MustOpenSet(Database& db, std::string_view name,
                                        const DedupOptions& o) {
  auto s = DedupStore::Open(db, name, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

bool Ok(const Result<bool>& r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && *r;
}

// Random inserts, removes and lookups, single and batched, checked one by
// one against a std::set. `keys` bounds the universe so that duplicates,
// removes of present keys and re-inserts all happen often.
void RunWorkload(DedupStore& d, std::set<std::string>& model, uint64_t seed,
                 int steps, int keys) {
  std::mt19937_64 rng(seed);
  auto key = [&] { return "k" + std::to_string(rng() % keys); };
  for (int step = 0; step < steps; ++step) {
    int op = rng() % 6;
    if (op < 3) {
      std::string k = key();
      bool expect_new = !model.count(k);
      if (op == 0) {
        ASSERT_EQ(Ok(d.InsertIfAbsent(k)), expect_new) << k;
        model.insert(k);
      } else if (op == 1) {
        ASSERT_EQ(Ok(d.Contains(k)), !expect_new) << k;
      } else {
        ASSERT_EQ(Ok(d.Remove(k)), !expect_new) << k;
        model.erase(k);
      }
      continue;
    }
    std::vector<std::string> batch(1 + rng() % 64);
    for (auto& k : batch) k = key();
    std::vector<std::string_view> views(batch.begin(), batch.end());
    std::vector<uint8_t> out;
    if (op == 3) {
      SF_ASSERT_OK(d.InsertIfAbsentBatch(views, &out));
      for (size_t i = 0; i < batch.size(); ++i) {
        ASSERT_EQ(out[i], model.insert(batch[i]).second ? 1 : 0) << batch[i];
      }
    } else if (op == 4) {
      SF_ASSERT_OK(d.ContainsBatch(views, &out));
      for (size_t i = 0; i < batch.size(); ++i) {
        ASSERT_EQ(out[i], model.count(batch[i]) ? 1 : 0) << batch[i];
      }
    } else {
      SF_ASSERT_OK(d.RemoveBatch(views, &out));
      for (size_t i = 0; i < batch.size(); ++i) {
        ASSERT_EQ(out[i], model.erase(batch[i]) ? 1 : 0) << batch[i];
      }
    }
  }
}

class DedupTypeTest : public ::testing::TestWithParam<FilterType> {};

TEST_P(DedupTypeTest, ExactAgainstStdSetWithChainedFilters) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  DedupOptions o;
  o.filter_type = GetParam();
  o.expected_keys = 300;  // the universe is 3000: chains must grow
  o.lock_stripes = 16;
  auto d = MustOpenSet(*db, "s", o);
  ASSERT_NE(d, nullptr);
  std::set<std::string> model;
  RunWorkload(*d, model, 42, 20000, 3000);
  DedupStats st = d->Stats();
  EXPECT_GT(st.reads_avoided, 0u);
  EXPECT_GT(st.duplicates, 0u);
  ASSERT_EQ(st.partitions.size(), 1u);
  // Overfilled: a cuckoo filter reports Full and the slot chains another
  // one; Bloom types never refuse an add (their FPR rises instead).
  if (GetParam() == FilterType::kCuckoo) {
    EXPECT_GT(st.partitions[0].filters, 1u);
  }
  // Reopen: the filters are rebuilt from the exact set.
  d.reset();
  d = MustOpenSet(*db, "s", o);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->Stats().loaded_keys, model.size());
  RunWorkload(*d, model, 43, 5000, 3000);
}

INSTANTIATE_TEST_SUITE_P(Types, DedupTypeTest,
                         shardfilter::testing::AllFilterTypes());

TEST(DedupStoreTest, FilterAvoidsReadsAndCountsFalsePositives) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  DedupOptions o;
  o.expected_keys = 20000;
  o.fpp = 0.01;
  auto d = MustOpenSet(*db, "s", o);
  for (int i = 0; i < 10000; ++i)
    ASSERT_TRUE(Ok(d->InsertIfAbsent(std::to_string(i))));
  for (int i = 0; i < 10000; ++i)
    ASSERT_FALSE(Ok(d->InsertIfAbsent(std::to_string(i))));
  DedupStats st = d->Stats();
  EXPECT_EQ(st.inserts, 20000u);
  EXPECT_EQ(st.new_keys, 10000u);
  EXPECT_EQ(st.duplicates, 10000u);
  // Every duplicate was read; most new keys were not.
  EXPECT_GE(st.rocksdb_reads, 10000u);
  EXPECT_EQ(st.rocksdb_reads + st.reads_avoided, 20000u);
  EXPECT_EQ(st.rocksdb_reads - 10000u, st.filter_false_positives);
  EXPECT_LT(st.observed_fpr, 0.03);
  EXPECT_GT(st.reads_avoided, 9000u);
}

TEST(DedupStoreTest, RepeatedKeysInOneBatch) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto d = MustOpenSet(*db, "s", {});
  std::vector<std::string_view> keys = {"a", "b", "a", "", "b", ""};
  std::vector<uint8_t> out;
  SF_ASSERT_OK(d->InsertIfAbsentBatch(keys, &out));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 1, 0, 1, 0, 0}));
  SF_ASSERT_OK(d->RemoveBatch(keys, &out));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 1, 0, 1, 0, 0}));
  SF_ASSERT_OK(d->ContainsBatch(keys, &out));
  EXPECT_EQ(out, (std::vector<uint8_t>(6, 0)));
}

TEST(DedupStoreTest, SetsAreIndependentAndListed) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto a = MustOpenSet(*db, "a", {});
  auto b = MustOpenSet(*db, "ab", {});
  ASSERT_TRUE(Ok(a->InsertIfAbsent("x")));
  ASSERT_TRUE(Ok(b->InsertIfAbsent("x")));
  ASSERT_FALSE(Ok(b->Contains("y")));
  auto names = DedupStore::List(*db);
  SF_ASSERT_OK(names.status());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "ab"}));
  a.reset();
  SF_ASSERT_OK(DedupStore::Drop(*db, "a"));
  EXPECT_TRUE(DedupStore::Drop(*db, "a").IsNotFound());
  a = MustOpenSet(*db, "a", {});
  EXPECT_TRUE(Ok(a->InsertIfAbsent("x")));  // dropped: new again
  EXPECT_FALSE(Ok(b->InsertIfAbsent("x")));
}

TEST(DedupStoreTest, ReopenKeepsTheSetUnderEachDurability) {
  for (Durability dur :
       {Durability::kNone, Durability::kJournal, Durability::kSync}) {
    TempDir dir;
    {
      auto db = MustOpen(Options(dir.db()));
      DedupOptions o;
      o.durability = dur;
      auto d = MustOpenSet(*db, "s", o);
      EXPECT_EQ(d->durability(), dur);
      for (int i = 0; i < 500; ++i)
        ASSERT_TRUE(Ok(d->InsertIfAbsent("k" + std::to_string(i))));
      ASSERT_TRUE(Ok(d->Remove("k7")));
      SF_ASSERT_OK(d->Close());
      SF_ASSERT_OK(db->Close());
    }
    auto db = MustOpen(Options(dir.db()));
    auto d = MustOpenSet(*db, "s", {});
    EXPECT_EQ(d->Stats().loaded_keys, 499u) << DurabilityName(dur);
    EXPECT_FALSE(Ok(d->InsertIfAbsent("k1")));
    EXPECT_TRUE(Ok(d->InsertIfAbsent("k7")));
    EXPECT_FALSE(Ok(d->Contains("k500")));
  }
}

TEST(DedupStoreTest, BadInputChangesNothing) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  auto d = MustOpenSet(*db, "s", {});
  std::string big(kMaxDedupKeyBytes + 1, 'x');
  std::string max(kMaxDedupKeyBytes, 'x');
  EXPECT_TRUE(d->InsertIfAbsent(big).status().IsInvalidArgument());
  EXPECT_TRUE(d->Contains(big).status().IsInvalidArgument());
  EXPECT_TRUE(d->Remove(big).status().IsInvalidArgument());
  std::vector<std::string_view> keys = {"ok", big};
  std::vector<uint8_t> out;
  EXPECT_TRUE(d->InsertIfAbsentBatch(keys, &out).IsInvalidArgument());
  EXPECT_FALSE(Ok(d->Contains("ok")));  // the batch wrote nothing
  EXPECT_TRUE(Ok(d->InsertIfAbsent(max)));
  EXPECT_EQ(d->Stats().inserts, 1u);

  auto bad = [&](DedupOptions o, std::string_view name = "t") {
    auto r = DedupStore::Open(*db, name, o);
    return !r.ok() && r.status().IsInvalidArgument();
  };
  DedupOptions o;
  EXPECT_TRUE(bad(o, ""));
  EXPECT_TRUE(bad(o, std::string(1025, 'n')));
  o.fpp = 0;
  EXPECT_TRUE(bad(o));
  o = {};
  o.fpp = 1;
  EXPECT_TRUE(bad(o));
  o = {};
  o.expected_keys = 0;
  EXPECT_TRUE(bad(o));
  o = {};
  o.lock_stripes = 3;
  EXPECT_TRUE(bad(o));
  o = {};
  o.ttl_ms = 1001;  // not a multiple of 8 partitions
  EXPECT_TRUE(bad(o));
  o = {};
  o.partitions = 5000;
  EXPECT_TRUE(bad(o));
  o = {};
  o.ttl_ms = 8000;
  EXPECT_TRUE(DedupStore::Open(*db, "s", o).status().IsBusy());  // still open
  d.reset();
  EXPECT_TRUE(bad(o, "s"));  // "s" was created without TTL
  auto names = DedupStore::List(*db);
  EXPECT_EQ(*names, std::vector<std::string>{"s"});  // nothing created
  o = {};
  o.create_if_missing = false;
  EXPECT_TRUE(DedupStore::Open(*db, "nope", o).status().IsNotFound());
}

TEST(DedupStoreTest, OldStoresOpenAndReadOnlyHasNoSets) {
  TempDir dir;
  {
    auto db = MustOpen(Options(dir.db()));
    auto f = db->Create("f", testing::Spec(FilterType::kBloom, 1000, 1));
    SF_ASSERT_OK(f.status());
  }
  {
    RawStore raw(dir.db());  // the pre-dedup layout: four families only
    ASSERT_TRUE(raw.ok());
  }
  DatabaseOptions ro = Options(dir.db());
  ro.read_only = true;
  {
    auto db = MustOpen(ro);
    EXPECT_TRUE(DedupStore::List(*db)->empty());
    EXPECT_TRUE(DedupStore::Open(*db, "s", {}).status().IsNotFound());
  }
  {
    auto db = MustOpen(Options(dir.db()));
    auto d = MustOpenSet(*db, "s", {});
    EXPECT_TRUE(Ok(d->InsertIfAbsent("x")));
  }
  auto db = MustOpen(ro);
  auto d = MustOpenSet(*db, "s", {});
  EXPECT_TRUE(Ok(d->Contains("x")));
  EXPECT_TRUE(d->InsertIfAbsent("y").status().IsNotSupported());
  EXPECT_TRUE(db->Get("f").ok());  // the filters are still there
}

TEST(DedupStoreTest, PinnedValueBytesAndCorruption) {
  using persistence::DedupEntry;
  std::string v = persistence::EncodeDedupEntry({0x0102030405060708, 3});
  ASSERT_EQ(v.size(), 26u);
  EXPECT_EQ(v.substr(0, 10),
            std::string("\x01\x04\x08\x07\x06\x05\x04\x03\x02\x01", 10));
  EXPECT_EQ(persistence::DedupEntryKey("s", "k"),
            std::string("\0\x01s\x01k", 5));
  EXPECT_EQ(persistence::DedupTimeKey("s", 2, "k"),
            std::string("\0\x01s\0\0\0\0\0\0\0\x02k", 12));
  std::string flipped = v;
  flipped[5] ^= 1;
  EXPECT_TRUE(
      persistence::DecodeDedupEntry(flipped, "x").status().IsCorruption());
  std::string future = v;
  future[0] = 9;
  EXPECT_TRUE(
      persistence::DecodeDedupEntry(future, "x").status().IsNotSupported());
  // Without TTL the entry is compact: version 2, kind 4, XXH3 (10 bytes).
  std::string c = persistence::EncodeDedupEntry({});
  ASSERT_EQ(c.size(), 10u);
  EXPECT_EQ(c.substr(0, 2), std::string("\x02\x04", 2));
  auto back = persistence::DecodeDedupEntry(c, "x");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, DedupEntry{});
  for (size_t i = 1; i < c.size(); ++i) {
    std::string bad = c;
    bad[i] ^= 1;
    EXPECT_TRUE(persistence::DecodeDedupEntry(bad, "x").status().IsCorruption())
        << i;
  }
  EXPECT_TRUE(
      persistence::DecodeDedupEntry(c + "y", "x").status().IsCorruption());
  std::string later = c;
  later[0] = 3;
  EXPECT_TRUE(
      persistence::DecodeDedupEntry(later, "x").status().IsNotSupported());

  TempDir dir;
  {
    auto db = MustOpen(Options(dir.db()));
    auto d = MustOpenSet(*db, "s", {});
    ASSERT_TRUE(Ok(d->InsertIfAbsent("k")));
  }
  {
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, {}},
        {"catalog", {}},
        {"shards", {}},
        {"journal", {}},
        {"dedup", {}},
        {"dedup_time", {}}};
    ASSERT_TRUE(rocksdb::DB::Open({}, dir.db(), cfs, &h, &raw).ok());
    ASSERT_TRUE(
        raw->Put({}, h[4], persistence::DedupEntryKey("s", "k"), flipped).ok());
    for (auto* x : h) raw->DestroyColumnFamilyHandle(x).PermitUncheckedError();
    delete raw;
  }
  auto db = MustOpen(Options(dir.db()));
  auto r = DedupStore::Open(*db, "s", {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
}

}  // namespace
}  // namespace shardfilter
