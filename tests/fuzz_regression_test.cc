// Regressions found by the libFuzzer targets (tests/fuzz/*_fuzz.cc): each
// input that broke a decoder's promise, reduced to the field that did it,
// as a test that failed before the fix. The crashing inputs themselves are
// in the targets' seed corpora (tests/fuzz/corpus/<target>/regression-*).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/persistence/internal/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using persistence::DecodeDescriptor;
using persistence::EncodeDescriptor;
using persistence::FilterDescriptor;
using testing::TempDir;

FilterDescriptor SomeDescriptor() {
  FilterDescriptor d;
  d.type = FilterType::kCuckoo;
  d.durability = 1;
  d.capacity = 500;
  d.fpp = 0.01;
  d.seed = 7;
  d.expansion = 2;
  d.shards.resize(1);
  return d;
}

// descriptor_fuzz: a descriptor whose fpp is NaN (or outside (0, 1), or
// whose capacity is 0) decoded as valid; only the spec check at open refused
// it, as InvalidArgument instead of Corruption.
TEST(FuzzRegressionTest, DescriptorWithBadRateOrCapacityIsCorruption) {
  for (double fpp : {std::numeric_limits<double>::quiet_NaN(), 0.0, 1.0, -0.5,
                     2.0, std::numeric_limits<double>::infinity()}) {
    FilterDescriptor d = SomeDescriptor();
    d.fpp = fpp;
    auto r = DecodeDescriptor(EncodeDescriptor(d), "f");
    EXPECT_TRUE(r.status().IsCorruption())
        << fpp << ": " << r.status().ToString();
  }
  FilterDescriptor d = SomeDescriptor();
  d.capacity = 0;
  EXPECT_TRUE(
      DecodeDescriptor(EncodeDescriptor(d), "f").status().IsCorruption());
  EXPECT_TRUE(DecodeDescriptor(EncodeDescriptor(SomeDescriptor()), "f").ok());
}

TEST(FuzzRegressionTest, StoreWithNaNRateDescriptorFailsToOpenAsCorruption) {
  TempDir dir;
  {
    auto db = testing::MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(
        db->Create("f", testing::Spec(FilterType::kCuckoo, 1000, 1)).ok());
    SF_ASSERT_OK(db->Close());
  }
  {
    testing::RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    auto catalog = raw.Scan("catalog");
    ASSERT_EQ(catalog.size(), 1u);
    auto d = DecodeDescriptor(catalog[0].second, "f");
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    d->fpp = std::nan("");
    raw.Put("catalog", catalog[0].first, EncodeDescriptor(*d));
  }
  // One damaged filter is unavailable, not the store (invariant 6): the
  // store opens and the filter answers Corruption naming it.
  auto db = Database::Open(testing::Options(dir.db()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto f = (*db)->Get("f");
  EXPECT_TRUE(f.status().IsCorruption()) << f.status().ToString();
}

// export_fuzz: an export whose spec asked for 2.2e12 counting items under
// a 6-byte memory limit took 33 s to refuse (the rate model summed one
// Poisson term per key count near the mean: filters/internal/
// poisson_mixture.h); 1e15 items took minutes. Any spec a caller sends
// (BF.RESERVE, `create`, an import) is sized this way.
TEST(FuzzRegressionTest, HugeCapacityUnderATinyMemoryLimitIsRefusedAtOnce) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    for (uint64_t capacity :
         {2'203'318'223'048ull, 1'000'000'000'000'000ull, 1ull << 60}) {
      FilterSpec spec;
      spec.type = type;
      spec.capacity = capacity;
      spec.fpp = 0.5;
      spec.shards = 1;
      spec.max_bytes = 64;
      auto f = ShardedFilter::Create(spec);
      // Bloom and counting tables that large cannot exist (2^32 blocks);
      // a cuckoo table can, and only the limit refuses it.
      EXPECT_EQ(f.status().code(), type == FilterType::kCuckoo
                                       ? StatusCode::kTooLarge
                                       : StatusCode::kInvalidArgument)
          << static_cast<int>(type) << " " << capacity << ": "
          << f.status().ToString();
    }
  }
}

}  // namespace
}  // namespace shardfilter
