// Regressions found by the libFuzzer targets (tests/fuzz/*_fuzz.cc): each
// input that broke a decoder's promise, reduced to the field that did it,
// as a test that failed before the fix. The crashing inputs themselves are
// in the targets' seed corpora (tests/fuzz/corpus/<target>/regression-*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "fuzz/fuzz_fixup.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/persistence/values.h"
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

// A dump (BF.SCANDUMP / LOADCHUNK, module DUMP / RESTORE, `export-filter` /
// `import-filter`: the one export format) whose link claims capacity 2^60,
// checksums recomputed, was accepted: the chain never grew (its fill never
// reached that capacity) and the table, filled past what it was sized for,
// answered 1 for everything. The forged export is in the export_fuzz seeds
// (tests/fuzz/corpus/export_fuzz/regression-link-capacity-2p60).
std::string ExportWithLinkCapacity(uint64_t capacity) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 1000;
  spec.fpp = 0.01;
  spec.shards = 1;
  auto f = ShardedFilter::Create(spec);
  EXPECT_TRUE(f.ok());
  for (int i = 0; i < 500; ++i) EXPECT_TRUE((*f)->Add(std::to_string(i)).ok());
  std::string bytes = ExportShardedFilter(**f);
  // The one link's envelope ("SFLT"); capacity at params offset 12.
  const size_t link = bytes.find("SFLT");
  EXPECT_NE(link, std::string::npos);
  for (int i = 0; i < 8; ++i) {
    bytes[link + 20 + 12 + i] = static_cast<char>(capacity >> (8 * i));
  }
  fuzz::FixExport(&bytes);
  return bytes;
}

TEST(FuzzRegressionTest, ExportedLinkClaimingCapacity2p60IsCorruption) {
  // Unforged (the link's own capacity): loads.
  const std::string good = ExportWithLinkCapacity(1000);
  ASSERT_TRUE(LoadExportedFilter(good).ok());
  const std::string forged = ExportWithLinkCapacity(uint64_t{1} << 60);
  auto loaded = LoadExportedFilter(forged);
  ASSERT_FALSE(loaded.ok())
      << "accepted: " << (*loaded)->shard_links(0) << " link(s) of capacity "
      << (*loaded)->shard_filter(0).capacity();
  std::printf("%s\n", loaded.status().ToString().c_str());
  EXPECT_TRUE(loaded.status().IsCorruption()) << loaded.status().ToString();
  EXPECT_NE(loaded.status().message().find("capacity"), std::string::npos)
      << loaded.status().ToString();
  // import-filter: refused, and nothing is created.
  TempDir dir;
  auto db = testing::MustOpen(testing::Options(dir.db()));
  ASSERT_NE(db, nullptr);
  Status s = ImportFilter(*db, "f", forged, Durability::kNone);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(db->Get("f").status().IsNotFound());
  SF_ASSERT_OK(db->Close());
}

}  // namespace
}  // namespace shardfilter
