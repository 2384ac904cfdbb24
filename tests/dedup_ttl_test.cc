// DedupStore time windows with an injected clock: the exact boundary
// (remembered for more than W, forgotten within W + g), expiry of the
// RocksDB entries and the partition filters, re-insert after expiry, expiry
// while closed, and exactness against a model over random workloads.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>

#include "shardfilter/engine/dedup_store.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::TempDir;

constexpr uint64_t kWindow = 8000;  // W = 8 s, P = 8: g = 1 s

struct Clock {
  std::shared_ptr<std::atomic<uint64_t>> ms =
      std::make_shared<std::atomic<uint64_t>>(0);
  std::function<uint64_t()> fn() const {
    auto p = ms;
    return [p] { return p->load(); };
  }
  void Set(uint64_t t) { ms->store(t); }
};

DedupOptions TtlOptions(const Clock& c) {
  DedupOptions o;
  o.ttl_ms = kWindow;
  o.partitions = 8;
  o.expected_keys = 4000;
  o.clock = c.fn();
  return o;
}

DedupOptions ClockOnly(const Clock& c) {
  DedupOptions o;
  o.clock = c.fn();
  return o;
}

std::unique_ptr<DedupStore> OpenSet(Database& db, std::string_view name,
                                    const DedupOptions& o) {
  auto r = DedupStore::Open(db, name, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

bool Val(const Result<bool>& r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && *r;
}

TEST(DedupTtlTest, ExactBoundary) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  Clock c;
  c.Set(999);  // the last ms of bucket 0
  auto d = OpenSet(*db, "s", TtlOptions(c));
  EXPECT_EQ(d->ttl_ms(), kWindow);
  EXPECT_EQ(d->partitions(), 8u);
  ASSERT_TRUE(Val(d->InsertIfAbsent("late")));
  c.Set(1000);  // first ms of bucket 1
  ASSERT_TRUE(Val(d->InsertIfAbsent("early")));
  // Bucket 0 is live while the current bucket is <= 8, i.e. until t = 9000:
  // "late" (t = 999) is remembered 8001 ms > W.
  c.Set(8999);
  EXPECT_TRUE(Val(d->Contains("late")));
  EXPECT_FALSE(Val(d->InsertIfAbsent("late")));
  c.Set(9000);
  EXPECT_FALSE(Val(d->Contains("late")));
  EXPECT_TRUE(Val(d->Contains("early")));
  // "early" (t = 1000, bucket 1) is forgotten at t = 10000: W + g.
  c.Set(9999);
  EXPECT_TRUE(Val(d->Contains("early")));
  c.Set(10000);
  EXPECT_FALSE(Val(d->Contains("early")));
  EXPECT_TRUE(Val(d->InsertIfAbsent("early")));  // new again
  DedupStats st = d->Stats();
  EXPECT_EQ(st.current_bucket, 10u);
  EXPECT_EQ(st.expired_keys, 2u);  // both entries deleted from RocksDB
  EXPECT_EQ(st.partitions.size(), 9u);
}

TEST(DedupTtlTest, ExpiredPartitionsLeaveTheFilterAndRocksDb) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  Clock c;
  auto d = OpenSet(*db, "s", TtlOptions(c));
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(Val(d->InsertIfAbsent("k" + std::to_string(i))));
  }
  uint64_t items = 0;
  for (const auto& p : d->Stats().partitions) items += p.filter_items;
  EXPECT_EQ(items, 2000u);
  c.Set(20 * kWindow);
  auto expired = d->Expire();
  SF_ASSERT_OK(expired.status());
  EXPECT_EQ(*expired, 2000u);
  DedupStats st = d->Stats();
  items = 0;
  for (const auto& p : st.partitions) items += p.filter_items;
  EXPECT_EQ(items, 0u);  // every live filter is fresh
  // Lookups of the forgotten keys are answered by the filters alone.
  uint64_t reads = st.rocksdb_reads;
  for (int i = 0; i < 2000; ++i) {
    ASSERT_FALSE(Val(d->Contains("k" + std::to_string(i))));
  }
  EXPECT_EQ(d->Stats().rocksdb_reads, reads);
  // Reopen: nothing is loaded (the entries are gone from RocksDB).
  d.reset();
  d = OpenSet(*db, "s", ClockOnly(c));
  EXPECT_EQ(d->Stats().loaded_keys, 0u);
  EXPECT_EQ(d->ttl_ms(), kWindow);  // the stored window
}

TEST(DedupTtlTest, KeysExpireWhileClosed) {
  TempDir dir;
  Clock c;
  {
    auto db = MustOpen(Options(dir.db()));
    auto d = OpenSet(*db, "s", TtlOptions(c));
    ASSERT_TRUE(Val(d->InsertIfAbsent("old")));
    c.Set(5000);
    ASSERT_TRUE(Val(d->InsertIfAbsent("young")));
  }
  c.Set(9500);  // bucket 9: "old" (bucket 0) is gone, "young" (5) lives
  auto db = MustOpen(Options(dir.db()));
  auto d = OpenSet(*db, "s", TtlOptions(c));
  DedupStats st = d->Stats();
  EXPECT_EQ(st.loaded_keys, 1u);
  EXPECT_EQ(st.expired_keys, 1u);
  EXPECT_FALSE(Val(d->Contains("old")));
  EXPECT_TRUE(Val(d->Contains("young")));
}

TEST(DedupTtlTest, ClockGoingBackNeverForgetsEarly) {
  TempDir dir;
  Clock c;
  c.Set(50'000);
  auto db = MustOpen(Options(dir.db()));
  {
    auto d = OpenSet(*db, "s", TtlOptions(c));
    ASSERT_TRUE(Val(d->InsertIfAbsent("k")));
    c.Set(1000);  // back in time: the window does not move back
    EXPECT_TRUE(Val(d->Contains("k")));
    EXPECT_EQ(d->Stats().current_bucket, 50u);
  }
  auto d = OpenSet(*db, "s", TtlOptions(c));
  EXPECT_TRUE(Val(d->Contains("k")));  // reopened with the clock behind
  EXPECT_EQ(d->Stats().current_bucket, 50u);
}

TEST(DedupTtlTest, RandomWorkloadMatchesModel) {
  TempDir dir;
  auto db = MustOpen(Options(dir.db()));
  Clock c;
  DedupOptions o = TtlOptions(c);
  o.expected_keys = 500;  // overfill: chains inside partitions
  auto d = OpenSet(*db, "s", o);
  std::map<std::string, uint64_t> model;  // key -> bucket inserted
  std::mt19937_64 rng(7);
  uint64_t now = 0;
  auto live = [&](const std::string& k) {
    auto it = model.find(k);
    return it != model.end() && it->second + 8 >= now / 1000;
  };
  for (int step = 0; step < 30000; ++step) {
    if (rng() % 50 == 0) {
      now += rng() % 3000;
      c.Set(now);
    }
    if (step % 9000 == 8999) {  // reopen now and then
      d.reset();
      d = OpenSet(*db, "s", o);
    }
    std::string k = "k" + std::to_string(rng() % 2000);
    int op = rng() % 4;
    if (op == 0 || op == 1) {
      bool fresh = !live(k);
      ASSERT_EQ(Val(d->InsertIfAbsent(k)), fresh) << k << " t=" << now;
      if (fresh) model[k] = now / 1000;
    } else if (op == 2) {
      ASSERT_EQ(Val(d->Contains(k)), live(k)) << k << " t=" << now;
    } else {
      bool was = live(k);
      ASSERT_EQ(Val(d->Remove(k)), was) << k << " t=" << now;
      model.erase(k);
    }
  }
  EXPECT_GT(d->Stats().expired_partitions, 0u);
}

}  // namespace
}  // namespace shardfilter
