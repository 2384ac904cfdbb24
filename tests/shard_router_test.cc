// The shard router (FilterSpec::router, engine/sharded_filter.h): new
// filters spread keys by one multiply, filters stored before the router
// was recorded keep Remix, every format carries the choice, and operations
// that pair shards of two filters refuse to pair different routers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/sharded_filter.h"
#include "store_test_util.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::SplitMix64;

FilterSpec Spec(ShardRouter router, uint32_t shards = 16) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 100'000;
  spec.shards = shards;
  spec.router = router;
  return spec;
}

TEST(ShardRouterTest, NewFiltersUseTheMultiplyRouter) {
  EXPECT_EQ(FilterSpec{}.router, ShardRouter::kMultiply);
  auto f = ShardedFilter::Create(Spec(FilterSpec{}.router));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  uint64_t state = 7;
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t h = SplitMix64(&state);
    ASSERT_EQ((*f)->ShardOf(h), (h * kRouterMultiplier) >> 60) << h;
  }
}

TEST(ShardRouterTest, RemixRouterRoutesAsBefore) {
  auto f = ShardedFilter::Create(Spec(ShardRouter::kRemix));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  uint64_t state = 7;
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t h = SplitMix64(&state);
    ASSERT_EQ((*f)->ShardOf(h), Remix(h) >> 60) << h;
  }
}

// Keys added one at a time (the inline paths: InlineFastPath routes by the
// multiply, and a Remix filter's inline entries send every call to the
// slow path) are found by batch queries (which route by the filter's own
// router), and keys added in batches by one-at-a-time queries, for every
// type and both routers: a path that routed a Remix filter's key by the
// multiply would look in the wrong shard and miss it.
TEST(ShardRouterTest, OneAtATimeAndBatchPathsAgreeOnTheShard) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    for (ShardRouter router : {ShardRouter::kMultiply, ShardRouter::kRemix}) {
      for (uint32_t shards : {1u, 16u}) {
        SCOPED_TRACE(::testing::Message()
                     << "type " << static_cast<int>(type) << " router "
                     << static_cast<int>(router) << " shards " << shards);
        FilterSpec spec = Spec(router, shards);
        spec.type = type;
        auto made = ShardedFilter::Create(spec);
        ASSERT_TRUE(made.ok()) << made.status().ToString();
        ShardedFilter& f = **made;
        uint64_t state = 11;
        std::vector<uint64_t> single(2'000), batch(2'000);
        for (uint64_t& h : single) h = SplitMix64(&state);
        for (uint64_t& h : batch) h = SplitMix64(&state);
        for (uint64_t h : single) ASSERT_TRUE(f.AddHash(h).ok());
        ASSERT_TRUE(f.AddHashes(batch).ok());
        std::vector<uint8_t> found(single.size());
        f.MayContainHashes(single, found);
        for (size_t i = 0; i < single.size(); ++i) {
          ASSERT_TRUE(found[i]) << "added one at a time, asked in a batch";
          ASSERT_TRUE(f.MayContainHash(single[i]));
          ASSERT_GE(f.CountHash(single[i]), 1u);
        }
        for (uint64_t h : batch) {
          ASSERT_TRUE(f.MayContainHash(h)) << "added in a batch, asked alone";
        }
        if (type != FilterType::kBloom) {
          // A remove finds the copy where the add put it.
          for (uint64_t h : single) ASSERT_TRUE(f.RemoveHash(h).ok());
          for (uint64_t h : batch) ASSERT_TRUE(f.MayContainHash(h));
        }
      }
    }
  }
}

TEST(ShardRouterTest, UnknownRouterIsRefused) {
  auto f = ShardedFilter::Create(Spec(static_cast<ShardRouter>(7)));
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(f.status().IsInvalidArgument()) << f.status().ToString();
}

// The keys of real hashes (XXH3 of consecutive keys, as a crawler's URLs
// are) spread evenly: every shard within 5 standard deviations of the mean.
TEST(ShardRouterTest, MultiplyRouterBalancesShards) {
  for (uint32_t shards : {2u, 16u, 256u}) {
    auto f = ShardedFilter::Create(Spec(ShardRouter::kMultiply, shards));
    ASSERT_TRUE(f.ok());
    const uint64_t n = 1'600'000;
    std::vector<uint64_t> count(shards, 0);
    for (uint64_t i = 0; i < n; ++i) {
      ++count[(*f)->ShardOf((*f)->Hash("key:" + std::to_string(i)))];
    }
    const double mean = static_cast<double>(n) / shards;
    const double sd = std::sqrt(mean * (1.0 - 1.0 / shards));
    for (uint32_t s = 0; s < shards; ++s) {
      EXPECT_LT(std::fabs(static_cast<double>(count[s]) - mean), 5 * sd)
          << shards << " shards, shard " << s << ": " << count[s];
    }
  }
}

// A store keeps each filter's router across reopen, whichever it is.
TEST(ShardRouterTest, StoreKeepsEachFiltersRouter) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  for (ShardRouter r : {ShardRouter::kMultiply, ShardRouter::kRemix}) {
    const std::string name = r == ShardRouter::kRemix ? "remix" : "multiply";
    {
      auto db = Database::Open(o);
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      auto f = (*db)->Create(name, Spec(r, 8));
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      for (int i = 0; i < 5000; ++i) {
        ASSERT_TRUE((*f)->Add(name + std::to_string(i)).ok());
      }
    }
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto f = (*db)->Get(name);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ((*f)->spec().router, r);
    for (int i = 0; i < 5000; ++i) {
      ASSERT_TRUE((*f)->MayContain(name + std::to_string(i))) << name << i;
    }
  }
}

// An export lands each shard where its router sends the keys.
TEST(ShardRouterTest, ExportCarriesTheRouter) {
  for (ShardRouter r : {ShardRouter::kMultiply, ShardRouter::kRemix}) {
    auto f = ShardedFilter::Create(Spec(r, 8));
    ASSERT_TRUE(f.ok());
    for (int i = 0; i < 5000; ++i) {
      ASSERT_TRUE((*f)->Add("k" + std::to_string(i)).ok());
    }
    auto back = LoadExportedFilter(ExportShardedFilter(**f));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ((*back)->spec().router, r);
    for (int i = 0; i < 5000; ++i) {
      ASSERT_TRUE((*back)->MayContain("k" + std::to_string(i))) << i;
    }
  }
}

// A fold keeps each key in its shard, so it keeps the source's router even
// when the request is a fresh spec (the server's SF.MIGRATE builds one,
// whose router is the new default): every key is still found, also after
// reopen.
TEST(ShardRouterTest, FoldOfARemixFilterKeepsRemix) {
  testing::TempDir dir;
  DatabaseOptions o;
  o.path = dir.path();
  FilterSpec spec = Spec(ShardRouter::kRemix, 4);
  spec.capacity = 400'000;
  constexpr int kN = 50'000;
  {
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto f = (*db)->Create("f", spec);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    for (int i = 0; i < kN; ++i) ASSERT_TRUE((*f)->Add(std::to_string(i)).ok());
    FilterSpec fresh;  // as SF.MIGRATE makes it: default router
    fresh.type = FilterType::kBloom;
    fresh.capacity = 100'000;
    fresh.shards = 4;
    auto p = (*db)->Migrate("f", fresh);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->source, MigrationSource::kFold);
    EXPECT_EQ((*f)->spec().router, ShardRouter::kRemix);
    EXPECT_EQ((*f)->spec().capacity, 100'000u);
    for (int i = 0; i < kN; ++i) {
      ASSERT_TRUE((*f)->MayContain(std::to_string(i))) << i;
    }
  }
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto f = (*db)->Get("f");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->spec().router, ShardRouter::kRemix);
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE((*f)->MayContain(std::to_string(i))) << i;
  }
}

// A union ORs shard i into shard i: only right when both route alike.
TEST(ShardRouterTest, UnionRefusesAnotherRouter) {
  auto remix = ShardedFilter::Create(Spec(ShardRouter::kRemix, 4));
  auto multiply = ShardedFilter::Create(Spec(ShardRouter::kMultiply, 4));
  ASSERT_TRUE(remix.ok() && multiply.ok());
  ASSERT_TRUE((*remix)->Add("x").ok());
  Status st = (*multiply)->UnionWith(**remix);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("router"), std::string::npos) << st.message();
  EXPECT_FALSE((*multiply)->MayContain("x"));  // nothing changed
  auto other = ShardedFilter::Create(Spec(ShardRouter::kRemix, 4));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->UnionWith(**remix).ok());
  EXPECT_TRUE((*other)->MayContain("x"));
}

}  // namespace
}  // namespace shardfilter
