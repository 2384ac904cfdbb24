// Unit tests of CuckooFilter: options, operations against a reference
// multiset, load reached, fill-to-failure safety, measured FPR, batches,
// statistics and the serialized form (round trip, pinned bytes, bad input).
//
// Over 400 lines: one suite per behaviour of the one type, sharing helpers.
#include "shardfilter/filters/cuckoo_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/internal/coding.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::Key;
using testing::SplitMix64;

std::unique_ptr<CuckooFilter> Make(uint64_t capacity, uint32_t fp_bits = 12,
                                   uint32_t bucket_size = 4,
                                   uint64_t seed = kDefaultSeed,
                                   double fpp = 0.01) {
  CuckooOptions o;
  o.capacity = capacity;
  o.fpp = fpp;
  o.fingerprint_bits = fp_bits;
  o.bucket_size = bucket_size;
  o.seed = seed;
  auto r = CuckooFilter::Create(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

TEST(CuckooFilterTest, RejectsBadOptions) {
  CuckooOptions o;
  EXPECT_TRUE(CuckooFilter::Create(o).status().IsInvalidArgument());  // cap 0
  o.capacity = 1000;
  ASSERT_TRUE(CuckooFilter::Create(o).ok());
  for (double bad : {0.0, 1.0, -1.0, std::nan("")}) {
    CuckooOptions b = o;
    b.fpp = bad;
    EXPECT_TRUE(CuckooFilter::Create(b).status().IsInvalidArgument()) << bad;
  }
  for (uint32_t bad : {0u, 1u, 3u, 16u}) {
    CuckooOptions b = o;
    b.bucket_size = bad;
    EXPECT_TRUE(CuckooFilter::Create(b).status().IsInvalidArgument()) << bad;
  }
  for (uint32_t bad : {4u, 10u, 32u}) {
    CuckooOptions b = o;
    b.fingerprint_bits = bad;
    EXPECT_TRUE(CuckooFilter::Create(b).status().IsInvalidArgument()) << bad;
  }
  for (uint32_t bad : {0u, kCuckooMaxKicksLimit + 1}) {
    CuckooOptions b = o;
    b.max_kicks = bad;
    EXPECT_TRUE(CuckooFilter::Create(b).status().IsInvalidArgument()) << bad;
  }
  CuckooOptions huge = o;
  huge.capacity = 1ULL << 40;
  huge.max_bytes = 1 << 20;
  EXPECT_TRUE(CuckooFilter::Create(huge).status().IsInvalidArgument());
}

TEST(CuckooFilterTest, DefaultLayoutIsTwelveBitsNotPowerOfTwo) {
  auto f = Make(1'000'000, 0);
  ASSERT_NE(f, nullptr);
  CuckooStats s = f->CuckooStatistics();
  EXPECT_EQ(s.fingerprint_bits, 12u);
  EXPECT_EQ(s.bucket_size, 4u);
  // 1e6 / (4 * 0.94) = 265,958 buckets: not rounded to 2^18 or 2^19.
  EXPECT_EQ(s.buckets, 265'958u);
  EXPECT_NE(s.buckets & (s.buckets - 1), 0u);
  EXPECT_LE(s.base.bits_per_item, 13.0);  // 12 / 0.94 = 12.77 (+ guard word)
  EXPECT_EQ(s.base.slots, s.buckets * 4);
  EXPECT_EQ(s.base.type, FilterType::kCuckoo);
  EXPECT_EQ(f->type(), FilterType::kCuckoo);
  EXPECT_EQ(f->capacity(), 1'000'000u);
  EXPECT_DOUBLE_EQ(f->target_fpr(), 0.01);
}

TEST(CuckooFilterTest, AddQueryRemoveCount) {
  auto f = Make(1000);
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->MayContain("alpha"));
  EXPECT_TRUE(f->Remove("alpha").IsNotFound());
  ASSERT_OK(f->Add("alpha"));
  EXPECT_TRUE(f->MayContain("alpha"));
  EXPECT_TRUE(f->MayContainHash(f->Hash("alpha")));
  EXPECT_EQ(f->Count("alpha"), 1u);
  ASSERT_OK(f->Add("alpha"));  // duplicates allowed
  EXPECT_EQ(f->Count("alpha"), 2u);
  ASSERT_OK(f->AddUnique("alpha"));  // already there: no-op
  EXPECT_EQ(f->Count("alpha"), 2u);
  ASSERT_OK(f->Remove("alpha"));
  EXPECT_EQ(f->Count("alpha"), 1u);
  EXPECT_TRUE(f->MayContain("alpha"));
  ASSERT_OK(f->Remove("alpha"));
  EXPECT_FALSE(f->MayContain("alpha"));
  EXPECT_TRUE(f->Remove("alpha").IsNotFound());
  ASSERT_OK(f->AddUnique("beta"));
  ASSERT_OK(f->AddUnique("beta"));
  EXPECT_EQ(f->Count("beta"), 1u);
  FilterStats s = f->Stats();
  EXPECT_EQ(s.items, 1u);
  EXPECT_EQ(s.deletes, 2u);
}

TEST(CuckooFilterTest, DuplicatesFillBothBucketsThenFull) {
  // 2b copies of one key fill its two buckets; the next copy has no room
  // (moving a copy to its alternate only lands in the other full bucket).
  for (uint32_t b : {2u, 4u, 8u}) {
    auto f = Make(10'000, 16, b);
    ASSERT_NE(f, nullptr);
    uint32_t added = 0;
    while (f->Add("dup").ok()) ++added;
    EXPECT_TRUE(f->Add("dup").IsFull());
    EXPECT_TRUE(added == 2 * b || added == b) << added;  // b if i1 == i2
    EXPECT_EQ(f->Count("dup"), added);
    EXPECT_EQ(f->Stats().items, added);
  }
}

// A pool of hashes no two of which share fingerprint and a bucket, so
// that Count(h) equals the reference multiset's count exactly.
std::vector<uint64_t> CollisionFreePool(const CuckooFilter& proto, size_t n,
                                        uint64_t seed) {
  CuckooOptions o;
  o.capacity = proto.capacity();
  o.fingerprint_bits = proto.fingerprint_bits();
  o.bucket_size = proto.bucket_size();
  o.seed = proto.seed();
  auto scratch = std::move(CuckooFilter::Create(o)).value();
  std::vector<uint64_t> pool;
  uint64_t st = seed;
  while (pool.size() < n) {
    uint64_t h = SplitMix64(&st);
    if (scratch->MayContainHash(h)) continue;
    EXPECT_OK(scratch->AddHash(h));
    pool.push_back(h);
  }
  return pool;
}

TEST(CuckooFilterTest, MatchesReferenceMultiset) {
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint32_t fbits : {8u, 12u, 16u}) {
      auto f = Make(10'000, fbits, b, 7, 0.5);
      ASSERT_NE(f, nullptr);
      std::vector<uint64_t> pool = CollisionFreePool(*f, 300, b * 100 + fbits);
      std::multiset<uint64_t> ref;
      uint64_t st = 99, removes = 0;
      for (int op = 0; op < 20000; ++op) {
        uint64_t r = SplitMix64(&st);
        uint64_t h = pool[r % pool.size()];
        switch ((r >> 32) % 4) {
          case 0:
          case 1: {
            Status s = f->AddHash(h);
            if (s.ok()) {
              ref.insert(h);
            } else {
              // Both buckets blocked (e.g. by keys whose 2b copies fill
              // their own pair): refused, nothing changed.
              ASSERT_TRUE(s.IsFull()) << s.ToString();
              ASSERT_EQ(f->CountHash(h), ref.count(h));
            }
            break;
          }
          case 2: {
            Status s = f->RemoveHash(h);
            auto it = ref.find(h);
            ASSERT_EQ(s.ok(), it != ref.end()) << s.ToString();
            if (it != ref.end()) {
              ref.erase(it);
              ++removes;
            } else {
              ASSERT_TRUE(s.IsNotFound());
            }
            break;
          }
          default:
            ASSERT_EQ(f->CountHash(h), ref.count(h));
            ASSERT_EQ(f->MayContainHash(h), ref.count(h) > 0);
        }
      }
      FilterStats s = f->Stats();
      EXPECT_EQ(s.items, ref.size());
      EXPECT_EQ(s.deletes, removes);
      for (uint64_t h : pool) ASSERT_EQ(f->CountHash(h), ref.count(h));
    }
  }
}

// Fills until the first Full; every acknowledged key must still be there,
// a failed add must change nothing, and the load must reach the design.
void FillToFailure(uint32_t b, uint32_t fbits, uint64_t capacity, uint64_t seed,
                   double min_load) {
  auto f = Make(capacity, fbits, b, seed, 0.5);
  ASSERT_NE(f, nullptr);
  std::vector<uint64_t> acked;
  uint64_t st = seed * 31 + b;
  Status s;
  for (;;) {
    uint64_t h = SplitMix64(&st);
    s = f->AddHash(h);
    if (!s.ok()) break;
    acked.push_back(h);
  }
  ASSERT_TRUE(s.IsFull()) << s.ToString();
  const double load =
      static_cast<double>(acked.size()) / (f->num_buckets() * b);
  EXPECT_GE(load, min_load) << "b=" << b << " f=" << fbits;
  EXPECT_GE(acked.size(), capacity);  // capacity always fits
  // More failed adds change nothing at all.
  // (Another key may still fit: its buckets differ. Then it is kept.)
  std::string before = f->Serialize();
  for (int i = 0; i < 200; ++i) {
    const uint64_t h = SplitMix64(&st);
    Status again = f->AddHash(h);
    if (again.ok()) {
      acked.push_back(h);
      before = f->Serialize();
      continue;
    }
    ASSERT_TRUE(again.IsFull());
    ASSERT_EQ(f->Serialize(), before);
  }
  for (uint64_t h : acked) ASSERT_TRUE(f->MayContainHash(h));
  EXPECT_GE(f->Stats().items, acked.size());
}

TEST(CuckooFilterTest, FillToFailureLosesNothingAndReachesDesignLoad) {
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint32_t fbits : {8u, 12u, 16u}) {
      FillToFailure(b, fbits, 20'000, 1, CuckooDesignLoad(b));
    }
  }
}

TEST(CuckooFilterTest, BucketFourReaches95PercentBeforeFirstFailure) {
  // Measured: 0.954-0.960 over 8 seeds at 1e6 (max_kicks 500).
  for (uint64_t seed : {1, 2, 3}) FillToFailure(4, 12, 1'000'000, seed, 0.95);
}

TEST(CuckooFilterTest, SmallCapacitiesAlwaysFit) {
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint64_t cap = 1; cap <= 300; cap += 7) {
      for (uint64_t seed = 0; seed < 5; ++seed) {
        auto f = Make(cap, 0, b, seed);
        ASSERT_NE(f, nullptr);
        uint64_t st = seed + cap * 1000;
        for (uint64_t i = 0; i < cap; ++i) {
          ASSERT_OK(f->AddHash(SplitMix64(&st)));
        }
      }
    }
  }
}

// Measured FPR at capacity for each width, 1e6 absent keys, fixed seeds.
// Margin: 4 binomial standard deviations above the expected rate.
TEST(CuckooFilterTest, MeasuredFprAtCapacityMeetsTarget) {
  struct Case {
    uint32_t f;
    double fpp;
  };
  for (Case c : {Case{8, 0.03}, Case{12, 0.002}, Case{16, 0.0002}}) {
    const uint64_t n = 200'000, probes = 1'000'000;
    auto f = Make(n, c.f, 4, 5, c.fpp);
    ASSERT_NE(f, nullptr);
    const CuckooStats st = f->CuckooStatistics();
    ASSERT_EQ(st.fingerprint_bits, c.f);
    for (uint64_t i = 0; i < n; ++i) ASSERT_OK(f->Add(Key(1, i)));
    uint64_t fp = 0;
    for (uint64_t i = 0; i < probes; ++i) fp += f->MayContain(Key(2, i));
    const double measured = static_cast<double>(fp) / probes;
    const double expected = f->Stats().estimated_fpr;
    const double sigma = std::sqrt(c.fpp / probes);
    EXPECT_LE(expected, c.fpp);
    EXPECT_LE(measured, c.fpp + 4 * sigma) << "f=" << c.f;
    // And not absurdly low: the fingerprints are really compared.
    EXPECT_GE(measured, expected * 0.7) << "f=" << c.f;
  }
}

// Both batch-query paths: a table the caches hold (L1 prefetches) and one
// of at least kL2PrefetchMinBytes (8 MiB: L2 prefetches, 32 keys ahead).
TEST(CuckooFilterTest, BatchFormsMatchSingleCalls) {
  for (uint64_t capacity : {uint64_t{10'000}, uint64_t{8'000'000}}) {
    SCOPED_TRACE(capacity);
    auto f = Make(capacity);
    ASSERT_NE(f, nullptr);
    if (capacity > 10'000) {
      ASSERT_GE(f->Stats().bytes, uint64_t{8} << 20);
    }
    std::vector<std::string> keys;
    for (uint64_t i = 0; i < 3000; ++i) keys.push_back(Key(3, i));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    size_t added = 0;
    ASSERT_OK(f->AddKeys(std::span<const std::string_view>(views).first(1000),
                         &added));
    EXPECT_EQ(added, 1000u);
    std::vector<uint64_t> hashes;
    for (size_t i = 1000; i < 2000; ++i) hashes.push_back(f->Hash(keys[i]));
    ASSERT_OK(f->AddHashes(hashes, &added));
    EXPECT_EQ(added, 1000u);
    std::vector<uint8_t> out(views.size());
    f->MayContainKeys(views, out);
    for (size_t i = 0; i < views.size(); ++i) {
      ASSERT_EQ(out[i] != 0, f->MayContain(views[i])) << i;
      if (i < 2000) {
        ASSERT_EQ(out[i], 1) << i;
      }
    }
    std::vector<uint64_t> all;
    for (auto& k : keys) all.push_back(f->Hash(k));
    std::vector<uint8_t> out2(all.size());
    f->MayContainHashes(all, out2);
    EXPECT_EQ(out, out2);
    EXPECT_EQ(f->Stats().items, 2000u);
  }
}

// RemoveKeys / RemoveHashes do what the same RemoveHash calls in order do:
// present keys (also a key added twice, removed twice in one batch) go,
// never-added keys report 0, and the filters end up equal.
TEST(CuckooFilterTest, BatchRemoveMatchesSingleRemoves) {
  auto f = Make(10'000);
  auto g = Make(10'000);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(g, nullptr);
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 2000; ++i) keys.push_back(Key(5, i));
  for (auto* x : {f.get(), g.get()}) {
    for (const auto& k : keys) ASSERT_OK(x->Add(k));
    ASSERT_OK(x->Add(keys[7]));  // a second copy
  }
  // Removes: every other key, keys[7] twice, and 500 never-added keys.
  std::vector<std::string> batch;
  for (uint64_t i = 0; i < 2000; i += 2) batch.push_back(keys[i]);
  batch.push_back(keys[7]);
  batch.push_back(keys[7]);
  for (uint64_t i = 0; i < 500; ++i) batch.push_back(Key(6, i));
  std::vector<std::string_view> views(batch.begin(), batch.end());
  std::vector<uint8_t> out(views.size(), 9);
  f->RemoveKeys(views, out);
  for (size_t i = 0; i < views.size(); ++i) {
    const bool single = g->Remove(views[i]).ok();
    ASSERT_EQ(out[i], single ? 1 : 0) << i;
    if (i < 1002) {
      ASSERT_EQ(out[i], 1) << i;  // present keys and both copies
    }
  }
  EXPECT_TRUE(f->Equals(*g));
  EXPECT_EQ(f->Stats().items, 1000u - 1u);  // the odd keys but keys[7]
  for (uint64_t i = 1; i < 2000; i += 2) {
    if (i != 7) {
      ASSERT_TRUE(f->MayContain(keys[i])) << i;  // no false negative
    }
  }
  EXPECT_EQ(f->Count(keys[7]), 0u);
  // Hash form, and an empty batch.
  std::vector<uint64_t> hashes = {f->Hash(keys[1]), f->Hash(keys[1])};
  std::vector<uint8_t> out2(2);
  f->RemoveHashes(hashes, out2);
  EXPECT_EQ(out2, (std::vector<uint8_t>{1, 0}));
  f->RemoveHashes({}, {});
}

// Invariants 4-5 of cuckoo_filter.h: a move between buckets a and b makes
// odd, then advances, the one version word that a reader of the pair (in
// either order) checks; a reader that began before, during or across the
// move fails validation, one that begins after it passes.
TEST(CuckooStripesTest, MoveVersionIsTheWordReadersOfThePairCheck) {
  internal::CuckooStripes st;
  ASSERT_TRUE(st.Init(1 << 16, uint64_t{1} << 20));  // 1024 stripes
  ASSERT_EQ(st.count(), 1024u);
  uint64_t rng = 3;
  int distinct = 0;
  for (int round = 0; round < 200; ++round) {
    const uint64_t a = SplitMix64(&rng) % (1 << 16);
    const uint64_t b = SplitMix64(&rng) % (1 << 16);
    distinct += st.StripeOf(a) != st.StripeOf(b);
    internal::PairVersions before_ab(st, a, b), before_ba(st, b, a);
    before_ab.Begin();
    before_ba.Begin();
    ASSERT_TRUE(before_ab.Valid() && before_ba.Valid());
    {
      internal::TwoStripeLock g(st, b, a);
      g.BeginMove();
      internal::PairVersions during(st, a, b);
      during.Begin();
      EXPECT_FALSE(during.Valid()) << "odd version not seen";
      EXPECT_FALSE(before_ab.Valid());
      EXPECT_FALSE(before_ba.Valid());
      g.EndMove();
      EXPECT_FALSE(during.Valid());
    }
    EXPECT_FALSE(before_ab.Valid()) << a << " " << b;
    EXPECT_FALSE(before_ba.Valid()) << a << " " << b;
    internal::PairVersions after(st, b, a);
    after.Begin();
    EXPECT_TRUE(after.Valid());
  }
  EXPECT_GT(distinct, 150);  // the pairs mostly span two stripes
}

TEST(CuckooFilterTest, AddHashesStopsAtFirstFailure) {
  auto f = Make(100, 16, 2);
  ASSERT_NE(f, nullptr);
  std::vector<uint64_t> same(100, 0x1234567812345678ULL);
  size_t added = 0;
  Status s = f->AddHashes(same, &added);
  EXPECT_TRUE(s.IsFull());
  EXPECT_TRUE(added == 4 || added == 2) << added;  // 2b copies (b if i1==i2)
  EXPECT_EQ(f->CountHash(same[0]), added);
}

TEST(CuckooFilterTest, StatsFollowTheLoad) {
  auto f = Make(100'000);
  ASSERT_NE(f, nullptr);
  for (uint64_t i = 0; i < 50'000; ++i) ASSERT_OK(f->Add(Key(4, i)));
  FilterStats s = f->Stats();
  EXPECT_EQ(s.items, 50'000u);
  EXPECT_NEAR(s.fill_ratio, 50'000.0 / s.slots, 1e-12);
  EXPECT_NEAR(s.estimated_fpr,
              1 - std::pow(1 - CuckooSlotMatch(12), 2 * 4 * s.fill_ratio),
              1e-12);
  EXPECT_EQ(s.bytes, (s.slots * 12 + 63) / 64 * 8 + 8);
  EXPECT_NEAR(s.bits_per_item, s.bytes * 8.0 / 100'000, 1e-9);
}

}  // namespace
}  // namespace shardfilter
