// Unit tests of BloomFilter: parameters, no false negatives, measured FPR,
// statistics, union, and the serialized format (round trips, pinned bytes,
// bad input). Randomized decoder fuzzing is in bloom_fuzz_test.cc; threads
// in bloom_stress_test.cc.
#include "shardfilter/filters/bloom_filter.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/envelope.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using ::shardfilter::testing::Key;

std::unique_ptr<BloomFilter> MakeBloom(uint64_t n, double p, BloomLayout layout,
                                       uint32_t k = 0,
                                       uint64_t seed = kDefaultSeed) {
  BloomOptions o;
  o.capacity = n;
  o.fpp = p;
  o.layout = layout;
  o.k = k;
  o.seed = seed;
  auto f = BloomFilter::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}

// Serialize() of MakeBloom(10, 0.1, kBlocked, k=3, seed=7) after adding
// "a", "b", "c": envelope header, 44 bytes of params, one 64-byte block,
// checksum. Each key sets 2 bits in one word and 1 in another (k = 3, two
// words: filters/detail/bloom_kernels.h).
constexpr char kPinnedBloomHex[] =
    "53464c54010100002c0000004000000000000000"  // "SFLT", type 1, version 1,
                                                // reserved, P=44, B=64
    "01030000"                                  // layout 1, k 3, reserved
    "0700000000000000"                          // seed 7
    "0a00000000000000"                          // capacity 10
    "9a9999999999b93f"                          // fpp 0.1
    "0002000000000000"                          // 512 bits
    "0300000000000000"                          // items 3
    "0000000140000000000000000000400000000000000020000000000000000000"  // body
    "0000000008400000000000000000000000000000020000000000008000000020"  // body
    "7139a00319506f04";  // XXH3-64 checksum

std::string Hex(std::string_view s) {
  std::string out;
  char buf[3];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// Rewrites the trailing checksum so that a mutated envelope reaches the
// type's own decoder.
void Reseal(std::string* bytes) {
  bytes->resize(bytes->size() - kEnvelopeTrailerSize);
  FinishEnvelope(bytes);
}

TEST(BloomFilterCreate, RejectsInvalidParameters) {
  auto bad = [](BloomOptions o) {
    auto f = BloomFilter::Create(o);
    return !f.ok() && f.status().IsInvalidArgument();
  };
  BloomOptions ok;
  ok.capacity = 1000;
  ASSERT_TRUE(BloomFilter::Create(ok).ok());
  for (auto layout : {BloomLayout::kAuto, BloomLayout::kSplitBlock,
                      BloomLayout::kBlocked, BloomLayout::kClassic}) {
    BloomOptions o = ok;
    o.layout = layout;
    o.capacity = 0;
    EXPECT_TRUE(bad(o));
    o = ok, o.layout = layout;
    for (double p : {0.0, 1.0, -0.1, 1.5, std::nan("")}) {
      o.fpp = p;
      EXPECT_TRUE(bad(o)) << p;
    }
    o = ok, o.layout = layout, o.k = 33;
    EXPECT_TRUE(bad(o));
    o = ok, o.layout = layout, o.capacity = 100'000'000, o.max_bytes = 1 << 20;
    EXPECT_TRUE(bad(o));
    o = ok, o.layout = layout, o.capacity = UINT64_MAX, o.fpp = 1e-300;
    EXPECT_TRUE(bad(o));
  }
  BloomOptions o = ok;
  o.layout = static_cast<BloomLayout>(7);
  EXPECT_TRUE(bad(o));
  // The split-block layout sets 8 bits per key: any other k is refused.
  o = ok, o.layout = BloomLayout::kSplitBlock, o.k = 6;
  EXPECT_TRUE(bad(o));
  o.k = 8;
  EXPECT_FALSE(bad(o));
}

TEST(BloomFilterCreate, AutoLayoutTakesSplitBlockWhereItCostsLittle) {
  // Split block at 1% (10.53 bits/item against 10.18 blocked: +3.4%), and
  // blocked where split block would cost more than 5% (0.01%: 26.3 against
  // 22.3) or where k is forced to another value than 8.
  auto a = MakeBloom(1'000'000, 0.01, BloomLayout::kAuto);
  EXPECT_EQ(a->layout(), BloomLayout::kSplitBlock);
  EXPECT_EQ(a->k(), 8u);
  EXPECT_EQ(a->num_bits() % 256, 0u);
  EXPECT_GE(a->Stats().bits_per_item, 10.5);
  EXPECT_LE(a->Stats().bits_per_item, 10.6);
  EXPECT_EQ(MakeBloom(1'000'000, 0.0001, BloomLayout::kAuto)->layout(),
            BloomLayout::kBlocked);
  EXPECT_EQ(MakeBloom(1'000'000, 0.01, BloomLayout::kAuto, 6)->layout(),
            BloomLayout::kBlocked);
  EXPECT_EQ(MakeBloom(1'000'000, 0.01, BloomLayout::kAuto, 8)->layout(),
            BloomLayout::kSplitBlock);
  EXPECT_EQ(ResolveBloomLayout(1'000'000, 0.01, 0, UINT64_MAX),
            BloomLayout::kSplitBlock);
  BloomOptions defaults;
  EXPECT_EQ(defaults.layout, BloomLayout::kAuto);
}

// The split-block layout as docs/format-bloom.md states it, computed here
// from the formula rather than through the filter's kernels: block =
// FastRange32(h[63:32], blocks), lane i's bit = (uint32(h) * salt_i) >> 27,
// lane i = bits 32 (i & 1).. of little-endian word i / 2 of the block.
TEST(BloomFilterFormat, SplitBlockBitsAreWhereTheFormatSays) {
  constexpr uint32_t kSalt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu,
                                 0xa2b7289du, 0x705495c7u, 0x2df1424bu,
                                 0x9efc4947u, 0x5c6bfb31u};
  auto f = MakeBloom(1000, 0.01, BloomLayout::kSplitBlock, 0, 99);
  ASSERT_NE(f, nullptr);
  const std::string key = "split-block key";
  f->Add(key);
  const std::string bytes = f->Serialize();
  EXPECT_EQ(static_cast<uint8_t>(bytes[5]), 2);  // version 2: layout 3
  const uint64_t blocks = f->num_bits() / 256;
  const uint64_t h = HashKey(key, 99);
  const uint64_t block = ((h >> 32) * blocks) >> 32;
  const size_t body = bytes.size() - kEnvelopeTrailerSize - f->num_bits() / 8;
  uint64_t set = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    const uint32_t bit = (static_cast<uint32_t>(h) * kSalt[i]) >> 27;
    const size_t byte = body + block * 32 + (i / 2) * 8 + (i & 1) * 4 + bit / 8;
    EXPECT_TRUE((static_cast<uint8_t>(bytes[byte]) >> (bit % 8)) & 1) << i;
  }
  for (size_t i = body; i < body + f->num_bits() / 8; ++i) {
    set += std::popcount(static_cast<uint8_t>(bytes[i]));
  }
  EXPECT_LE(set, 8u);  // the key's bits and no others
  EXPECT_GE(set, 8u);
  // A version-1 envelope may not hold layout 3: corrupt, not a split filter.
  std::string v1 = bytes;
  v1[5] = 1;
  Reseal(&v1);
  auto r = BloomFilter::Deserialize(v1);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // k other than 8 in a split-block filter: corrupt.
  std::string k7 = bytes;
  const size_t params =
      bytes.size() - kEnvelopeTrailerSize - f->num_bits() / 8 - 44;
  k7[params + 1] = 7;
  Reseal(&k7);
  r = BloomFilter::Deserialize(k7);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // Round trip.
  auto back = BloomFilter::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE((*back)->Equals(*f));
  EXPECT_TRUE((*back)->MayContain(key));
}

TEST(BloomFilterCreate, SizesAndK) {
  // Blocked at 1%: WordBlockedBloomSizing's 10.18 bits/item; classic 9.59.
  auto b = MakeBloom(1'000'000, 0.01, BloomLayout::kBlocked);
  EXPECT_EQ(b->num_bits() % 512, 0u);
  EXPECT_LE(b->Stats().bits_per_item, 10.7);
  EXPECT_GE(b->Stats().bits_per_item, 9.59);
  auto c = MakeBloom(1'000'000, 0.01, BloomLayout::kClassic);
  EXPECT_EQ(c->num_bits() % 64, 0u);
  EXPECT_EQ(c->k(), 7u);
  EXPECT_NEAR(c->Stats().bits_per_item, 9.6, 0.1);
  EXPECT_EQ(MakeBloom(1000, 0.01, BloomLayout::kBlocked, 13)->k(), 13u);
  EXPECT_EQ(MakeBloom(1000, 0.01, BloomLayout::kClassic, 2)->k(), 2u);
  EXPECT_TRUE(c->RemoveHash(1).IsNotSupported());
}

using Shape = std::tuple<BloomLayout, uint64_t, double, uint32_t>;
class BloomShapeTest : public ::testing::TestWithParam<Shape> {};

TEST_P(BloomShapeTest, NoFalseNegativesAndBatchesAgree) {
  auto [layout, n, p, k] = GetParam();
  auto f = MakeBloom(n, p, layout, k);
  ASSERT_NE(f, nullptr);
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < n; ++i) keys.push_back(Key(1, i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  // Half one at a time, half batched.
  for (uint64_t i = 0; i < n / 2; ++i) f->Add(views[i]);
  f->AddKeys(std::span(views).subspan(n / 2));
  std::vector<uint8_t> out(n);
  f->MayContainKeys(views, out);
  std::vector<uint64_t> hashes;
  for (auto v : views) hashes.push_back(f->Hash(v));
  std::vector<uint8_t> out2(n);
  f->MayContainHashes(hashes, out2);
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(f->MayContain(views[i])) << i;
    ASSERT_EQ(out[i], 1) << i;
    ASSERT_EQ(out2[i], 1) << i;
    ASSERT_EQ(f->CountHash(hashes[i]), 1u);
  }
  // Batched and single queries agree on absent keys too.
  std::vector<std::string> absent;
  for (uint64_t i = 0; i < 2000; ++i) absent.push_back(Key(2, i));
  std::vector<std::string_view> av(absent.begin(), absent.end());
  std::vector<uint8_t> aout(av.size());
  f->MayContainKeys(av, aout);
  for (size_t i = 0; i < av.size(); ++i) {
    ASSERT_EQ(aout[i], f->MayContain(av[i]) ? 1 : 0);
  }
}

// Batch sizes around the batch pipelines' windows (16 for adds, 64 for
// queries, filters/detail/bloom_kernels.h): every answer agrees with the
// one-at-a-time query, for every layout and the counting filter, present
// keys and absent ones, a batch shorter than, equal to and longer than a
// window by one.
TEST(BloomBatchTest, BatchesOfEverySizeAroundTheWindowsAgree) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17},
                   size_t{63}, size_t{64}, size_t{65}, size_t{129}}) {
    for (BloomLayout layout : {BloomLayout::kSplitBlock, BloomLayout::kBlocked,
                               BloomLayout::kClassic}) {
      auto f = MakeBloom(1000, 0.05, layout);
      auto c = CountingBloomFilter::Create({.capacity = 1000, .fpp = 0.05});
      ASSERT_NE(f, nullptr);
      ASSERT_TRUE(c.ok());
      std::vector<std::string> keys;
      for (size_t i = 0; i < 2 * n; ++i) keys.push_back(Key(40, i));
      std::vector<std::string_view> views(keys.begin(), keys.end());
      // The first n added (batched), the next n not.
      f->AddKeys(std::span(views).first(n));
      (*c)->AddKeys(std::span(views).first(n));
      std::vector<uint8_t> out(2 * n, 7), cout(2 * n, 7);
      f->MayContainKeys(views, out);
      (*c)->MayContainKeys(views, cout);
      for (size_t i = 0; i < 2 * n; ++i) {
        ASSERT_EQ(out[i], f->MayContain(views[i]) ? 1 : 0) << n << " " << i;
        ASSERT_EQ(cout[i], (*c)->MayContain(views[i]) ? 1 : 0) << n << " " << i;
        if (i < n) {
          ASSERT_EQ(out[i], 1) << n << " " << i;
          ASSERT_EQ(cout[i], 1) << n << " " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BloomShapeTest,
    ::testing::Values(Shape{BloomLayout::kBlocked, 1, 0.5, 0},
                      Shape{BloomLayout::kBlocked, 100, 0.01, 0},
                      Shape{BloomLayout::kBlocked, 10'000, 0.001, 0},
                      Shape{BloomLayout::kBlocked, 50'000, 0.01, 1},
                      Shape{BloomLayout::kBlocked, 50'000, 0.01, 3},
                      Shape{BloomLayout::kBlocked, 50'000, 0.01, 17},
                      Shape{BloomLayout::kBlocked, 20'000, 0.0001, 32},
                      Shape{BloomLayout::kClassic, 1, 0.5, 0},
                      Shape{BloomLayout::kClassic, 100, 0.01, 0},
                      Shape{BloomLayout::kClassic, 10'000, 0.001, 0},
                      Shape{BloomLayout::kSplitBlock, 1, 0.5, 0},
                      Shape{BloomLayout::kSplitBlock, 100, 0.01, 0},
                      Shape{BloomLayout::kSplitBlock, 10'000, 0.001, 8},
                      Shape{BloomLayout::kAuto, 50'000, 0.01, 0},
                      Shape{BloomLayout::kClassic, 50'000, 0.01, 2},
                      Shape{BloomLayout::kClassic, 20'000, 0.01, 32}));

// Measured FPR at capacity over 1e6 absent keys. Margin: target * 1.1
// (sizing-model slack) + 3 sigma of Binomial(N, target). The filter must
// also not be grossly oversized: measured >= target / 3.
using FprCase = std::tuple<BloomLayout, double, uint32_t>;
class BloomFprTest : public ::testing::TestWithParam<FprCase> {};

TEST_P(BloomFprTest, MeasuredFprWithinTarget) {
  auto [layout, p, k] = GetParam();
  const uint64_t n = 200'000, queries = 1'000'000;
  auto f = MakeBloom(n, p, layout, k);
  ASSERT_NE(f, nullptr);
  for (uint64_t i = 0; i < n; ++i) f->Add(Key(3, i));
  uint64_t fp = 0;
  for (uint64_t i = 0; i < queries; ++i) fp += f->MayContain(Key(4, i));
  const double measured = static_cast<double>(fp) / queries;
  const double bound = p * 1.1 + 3 * std::sqrt(p * (1 - p) / queries);
  EXPECT_LE(measured, bound) << "p=" << p << " k=" << f->k();
  EXPECT_GE(measured, p / 3) << "oversized? p=" << p << " k=" << f->k();
  std::printf("layout %d p %g k %u: %.2f bits/item, measured FPR %.5f%%\n",
              static_cast<int>(layout), p, f->k(), f->Stats().bits_per_item,
              measured * 100);
  // The fill-based estimate tracks the measurement.
  EXPECT_NEAR(f->Stats().estimated_fpr, measured,
              0.15 * measured + 3 * std::sqrt(p / queries));
}

INSTANTIATE_TEST_SUITE_P(
    Rates, BloomFprTest,
    ::testing::Values(FprCase{BloomLayout::kBlocked, 0.1, 0},
                      FprCase{BloomLayout::kBlocked, 0.01, 0},
                      FprCase{BloomLayout::kBlocked, 0.001, 0},
                      FprCase{BloomLayout::kBlocked, 0.01, 3},
                      FprCase{BloomLayout::kBlocked, 0.01, 12},
                      FprCase{BloomLayout::kBlocked, 0.0001, 0},
                      FprCase{BloomLayout::kClassic, 0.1, 0},
                      FprCase{BloomLayout::kClassic, 0.01, 0},
                      FprCase{BloomLayout::kClassic, 0.001, 0},
                      FprCase{BloomLayout::kClassic, 0.01, 4},
                      FprCase{BloomLayout::kSplitBlock, 0.1, 0},
                      FprCase{BloomLayout::kSplitBlock, 0.02, 0},
                      FprCase{BloomLayout::kSplitBlock, 0.01, 0},
                      FprCase{BloomLayout::kSplitBlock, 0.005, 0},
                      FprCase{BloomLayout::kSplitBlock, 0.001, 0},
                      FprCase{BloomLayout::kSplitBlock, 0.0001, 0}));

// The blocked layout with every k users tune (3..17): 1, 2, 3, 4 and 5
// words per key, both bit splits. Same bounds as above.
INSTANTIATE_TEST_SUITE_P(
    BlockedK, BloomFprTest,
    ::testing::Values(FprCase{BloomLayout::kBlocked, 0.01, 4},
                      FprCase{BloomLayout::kBlocked, 0.01, 5},
                      FprCase{BloomLayout::kBlocked, 0.01, 6},
                      FprCase{BloomLayout::kBlocked, 0.01, 7},
                      FprCase{BloomLayout::kBlocked, 0.01, 8},
                      FprCase{BloomLayout::kBlocked, 0.01, 9},
                      FprCase{BloomLayout::kBlocked, 0.01, 10},
                      FprCase{BloomLayout::kBlocked, 0.01, 11},
                      FprCase{BloomLayout::kBlocked, 0.01, 13},
                      FprCase{BloomLayout::kBlocked, 0.01, 14},
                      FprCase{BloomLayout::kBlocked, 0.01, 15},
                      FprCase{BloomLayout::kBlocked, 0.01, 16},
                      FprCase{BloomLayout::kBlocked, 0.01, 17},
                      FprCase{BloomLayout::kBlocked, 0.1, 1},
                      FprCase{BloomLayout::kBlocked, 0.001, 17}));

TEST(BloomFilterStats, FillCardinalityAndItems) {
  for (auto layout : {BloomLayout::kSplitBlock, BloomLayout::kBlocked,
                      BloomLayout::kClassic}) {
    const uint64_t n = 100'000;
    auto f = MakeBloom(n, 0.01, layout);
    FilterStats empty = f->Stats();
    EXPECT_EQ(empty.items, 0u);
    EXPECT_EQ(empty.fill_ratio, 0.0);
    EXPECT_EQ(empty.estimated_fpr, 0.0);
    for (uint64_t i = 0; i < n; ++i) f->Add(Key(5, i));
    for (uint64_t i = 0; i < n; ++i) EXPECT_FALSE(f->Add(Key(5, i)));
    FilterStats s = f->Stats();
    EXPECT_EQ(s.type, FilterType::kBloom);
    EXPECT_EQ(s.capacity, n);
    EXPECT_EQ(s.slots, f->num_bits());
    EXPECT_EQ(s.bytes, f->num_bits() / 8);
    EXPECT_EQ(s.k, f->k());
    // Adds that set a new bit: all but the rare key whose bits were all set.
    EXPECT_LE(s.items, n);
    EXPECT_GE(s.items, n * 99 / 100);
    EXPECT_NEAR(s.estimated_cardinality, n, n * 0.03);
    // Fill of an optimally loaded filter is ~1 - e^{-kn/m}, ~50%.
    const double expect_fill =
        -std::expm1(-static_cast<double>(f->k()) * n / f->num_bits());
    EXPECT_NEAR(s.fill_ratio, expect_fill, 0.01);
    EXPECT_NEAR(s.bits_per_item, static_cast<double>(f->num_bits()) / n, 1e-9);
  }
}

TEST(BloomFilterUnion, ContainsBothAndRejectsIncompatible) {
  for (auto layout : {BloomLayout::kSplitBlock, BloomLayout::kBlocked,
                      BloomLayout::kClassic}) {
    auto a = MakeBloom(20'000, 0.01, layout);
    auto b = MakeBloom(20'000, 0.01, layout);
    for (uint64_t i = 0; i < 10'000; ++i) a->Add(Key(6, i));
    for (uint64_t i = 0; i < 10'000; ++i) b->Add(Key(7, i));
    ASSERT_OK(a->UnionWith(*b));
    for (uint64_t i = 0; i < 10'000; ++i) {
      ASSERT_TRUE(a->MayContain(Key(6, i)));
      ASSERT_TRUE(a->MayContain(Key(7, i)));
    }
    EXPECT_NEAR(a->Stats().estimated_cardinality, 20'000, 600);
    ASSERT_OK(a->UnionWith(*a));
    auto other_size = MakeBloom(40'000, 0.01, layout);
    // The split-block layout has one k; another layout stands in.
    auto other_k = layout == BloomLayout::kSplitBlock
                       ? MakeBloom(20'000, 0.01, BloomLayout::kBlocked, 8)
                       : MakeBloom(20'000, 0.01, layout, a->k() + 1);
    auto other_seed = MakeBloom(20'000, 0.01, layout, 0, 42);
    auto before = a->Serialize();
    EXPECT_TRUE(a->UnionWith(*other_size).IsInvalidArgument());
    EXPECT_TRUE(a->UnionWith(*other_k).IsInvalidArgument());
    EXPECT_TRUE(a->UnionWith(*other_seed).IsInvalidArgument());
    EXPECT_EQ(a->Serialize(), before);
  }
  auto blocked = MakeBloom(1000, 0.01, BloomLayout::kBlocked, 7);
  auto classic = MakeBloom(1000, 0.01, BloomLayout::kClassic, 7);
  EXPECT_TRUE(blocked->UnionWith(*classic).IsInvalidArgument());
}

TEST(BloomFilterFormat, RoundTripEveryLayout) {
  for (auto layout : {BloomLayout::kSplitBlock, BloomLayout::kBlocked,
                      BloomLayout::kClassic}) {
    auto f = MakeBloom(5'000, 0.02, layout, 0, 1234);
    for (uint64_t i = 0; i < 5'000; ++i) f->Add(Key(8, i));
    const std::string bytes = f->Serialize();
    auto g = BloomFilter::Deserialize(bytes);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_TRUE(f->Equals(**g));
    EXPECT_TRUE((*g)->Equals(*f));
    EXPECT_EQ((*g)->Serialize(), bytes);
    EXPECT_EQ((*g)->layout(), layout);
    EXPECT_EQ((*g)->seed(), 1234u);
    EXPECT_EQ((*g)->Stats().items, f->Stats().items);
    for (uint64_t i = 0; i < 20'000; ++i) {
      ASSERT_EQ((*g)->MayContain(Key(8, i)), f->MayContain(Key(8, i)));
      ASSERT_EQ((*g)->MayContain(Key(9, i)), f->MayContain(Key(9, i)));
    }
    (*g)->Add(Key(10, 0));
    EXPECT_FALSE(f->Equals(**g) && !f->MayContain(Key(10, 0)));
  }
  auto a = MakeBloom(100, 0.01, BloomLayout::kBlocked);
  auto c = CountingBloomFilter::Create({.capacity = 100});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(a->Equals(**c));
}

// Pins the exact bytes of version 1 (docs/format-bloom.md). A change here is
// a format change: bump the version and keep a decoder for this one.
TEST(BloomFilterFormat, PinnedBytes) {
  auto f = MakeBloom(10, 0.1, BloomLayout::kBlocked, 3, 7);
  ASSERT_EQ(f->num_bits(), 512u);
  for (const char* key : {"a", "b", "c"}) f->Add(key);
  EXPECT_EQ(Hex(f->Serialize()), kPinnedBloomHex) << Hex(f->Serialize());
}

TEST(BloomFilterFormat, RejectsBadInput) {
  auto f = MakeBloom(10, 0.1, BloomLayout::kBlocked, 3, 7);
  for (const char* key : {"a", "b", "c"}) f->Add(key);
  const std::string good = f->Serialize();
  ASSERT_TRUE(BloomFilter::Deserialize(good).ok());
  // Wrong magic: not a shardfilter filter at all.
  std::string s = good;
  s[0] = 'X';
  EXPECT_TRUE(BloomFilter::Deserialize(s).status().IsInvalidArgument());
  // Truncated at every length, and padded.
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_FALSE(BloomFilter::Deserialize(good.substr(0, len)).ok()) << len;
  }
  EXPECT_TRUE(BloomFilter::Deserialize(good + '\0').status().IsCorruption());
  // Every single-bit flip (the checksum catches all of them).
  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    s = good;
    s[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_FALSE(BloomFilter::Deserialize(s).ok()) << bit;
  }
  // Future version (2 holds split-block filters).
  s = good;
  s[5] = 3;
  Reseal(&s);
  EXPECT_TRUE(BloomFilter::Deserialize(s).status().IsNotSupported());
  s[5] = 0;
  Reseal(&s);
  EXPECT_TRUE(BloomFilter::Deserialize(s).status().IsCorruption());
  // Wrong type: counting-filter bytes.
  auto c = CountingBloomFilter::Create({.capacity = 10});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(BloomFilter::Deserialize((*c)->Serialize()).status().code(),
            StatusCode::kWrongType);
  // Params fields, resealed so that only the params check can object.
  const size_t P = kEnvelopeHeaderSize;
  auto corrupt_with = [&](size_t offset, uint8_t value) {
    std::string m = good;
    m[P + offset] = static_cast<char>(value);
    Reseal(&m);
    return BloomFilter::Deserialize(m).status().IsCorruption();
  };
  EXPECT_TRUE(corrupt_with(0, 0));      // layout 0
  EXPECT_TRUE(corrupt_with(0, 3));      // layout 3
  EXPECT_TRUE(corrupt_with(1, 0));      // k 0
  EXPECT_TRUE(corrupt_with(1, 33));     // k 33
  EXPECT_TRUE(corrupt_with(2, 1));      // reserved
  EXPECT_TRUE(corrupt_with(27, 0x7f));  // fpp >= 1 (exponent bits)
  EXPECT_TRUE(corrupt_with(27, 0xbf));  // fpp negative
  EXPECT_TRUE(corrupt_with(29, 0));     // 0 bits
  EXPECT_TRUE(corrupt_with(29, 4));     // 1024 bits: body length mismatch
  EXPECT_TRUE(corrupt_with(28, 64));    // 576 bits: not a multiple of 512
  EXPECT_TRUE(corrupt_with(35, 0x80));  // absurd size: 2^63 + 512 bits
  // Capacity 0.
  std::string m = good;
  for (int i = 0; i < 8; ++i) m[P + 12 + i] = 0;
  Reseal(&m);
  EXPECT_TRUE(BloomFilter::Deserialize(m).status().IsCorruption());
  // Params length inconsistent with the layout (envelope still valid).
  std::string params(good.substr(P, 44));
  std::string body(good.substr(P + 44, 64));
  std::string e;
  BeginEnvelope(FilterType::kBloom, 1, params + "x", body.size(), &e);
  e += body;
  FinishEnvelope(&e);
  EXPECT_TRUE(BloomFilter::Deserialize(e).status().IsCorruption());
  BeginEnvelope(FilterType::kBloom, 1, params, body.size() + 64, &e);
  e += body + body;
  FinishEnvelope(&e);
  EXPECT_TRUE(BloomFilter::Deserialize(e).status().IsCorruption());
  // Classic layout accepts a multiple of 64 bits: same params, layout 2.
  m = good;
  m[P] = 2;
  Reseal(&m);
  EXPECT_TRUE(BloomFilter::Deserialize(m).ok());
}

}  // namespace
}  // namespace shardfilter
