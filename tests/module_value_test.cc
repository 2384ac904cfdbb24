// The Redis module's value envelope and spec codec (tools/module/
// filter_value.h), without a Redis server: round trips, and every kind of
// damage decoded as an error that names it (never a crash), so that
// rdb_load can keep such a value as unavailable.
#include <gtest/gtest.h>

#include <string>

#include "tools/module/filter_value.h"

namespace shardfilter::module {
namespace {

std::unique_ptr<ShardedFilter> MakeFilter(FilterType type) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = 5000;
  spec.fpp = 0.01;
  spec.shards = 4;
  spec.durability = Durability::kNone;
  auto f = ShardedFilter::Create(spec);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE((*f)->Add("item" + std::to_string(i)).ok());
  }
  return std::move(f).value();
}

TEST(ModuleValueTest, RoundTripsEveryType) {
  for (FilterType type :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    auto f = MakeFilter(type);
    const std::string bytes = EncodeValue(*f);
    ASSERT_EQ(bytes.substr(0, 4), "SFRM");
    auto back = DecodeValue(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE((*back)->Equals(*f));
    EXPECT_EQ(EncodeValue(**back), bytes);  // deterministic: DUMP compares
  }
}

TEST(ModuleValueTest, EveryFlippedByteIsRefused) {
  auto f = MakeFilter(FilterType::kBloom);
  const std::string bytes = EncodeValue(*f);
  for (size_t at = 0; at < bytes.size(); at += 7) {
    std::string bad = bytes;
    bad[at] ^= 0x10;
    auto r = DecodeValue(bad);
    ASSERT_FALSE(r.ok()) << "byte " << at;
  }
}

TEST(ModuleValueTest, NamesTheKindOfDamage) {
  auto f = MakeFilter(FilterType::kCuckoo);
  const std::string bytes = EncodeValue(*f);
  EXPECT_TRUE(DecodeValue("hello").status().IsInvalidArgument());
  EXPECT_TRUE(DecodeValue("").status().IsInvalidArgument());
  std::string future = bytes;
  future[4] = 2;  // envelope version 2: checked before the checksum
  EXPECT_TRUE(DecodeValue(future).status().IsNotSupported());
  EXPECT_TRUE(
      DecodeValue(bytes.substr(0, bytes.size() - 1)).status().IsCorruption());
  EXPECT_TRUE(DecodeValue(bytes.substr(0, 10)).status().IsCorruption());
  EXPECT_TRUE(DecodeValue(bytes + "x").status().IsCorruption());
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 1;
  const Status s = DecodeValue(flipped).status();
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.ToString();
}

TEST(ModuleValueTest, DamagedBytesAreKeptAsTheyAre) {
  auto f = MakeFilter(FilterType::kBloom);
  std::string bad = EncodeValue(*f);
  bad[4] = 9;
  auto v = ValueFromBytes(bad);
  EXPECT_FALSE(v->available());
  EXPECT_EQ(v->raw, bad);  // saved back unchanged
  EXPECT_NE(v->damage.find("newer"), std::string::npos) << v->damage;
  auto good = ValueFromBytes(EncodeValue(*f));
  ASSERT_TRUE(good->available());
  EXPECT_TRUE(good->raw.empty());
  EXPECT_GE(good->MemoryBytes(), f->Stats().total.bytes);
}

TEST(ModuleValueTest, OtherRdbEncodingVersionsLoadUnavailable) {
  // Every RDB encoding version's layout is one string (filter_value.h): a
  // value of another version is kept, bytes unchanged, and reports why.
  auto f = MakeFilter(FilterType::kBloom);
  const std::string bytes = EncodeValue(*f);
  ASSERT_TRUE(ValueFromRdb(kRdbEncodingVersion, bytes)->available());
  for (int encver : {2, 1023, 0}) {
    auto v = ValueFromRdb(encver, bytes);
    EXPECT_FALSE(v->available()) << encver;
    EXPECT_EQ(v->raw, bytes);
    EXPECT_NE(v->damage.find("RDB encoding version " + std::to_string(encver)),
              std::string::npos)
        << v->damage;
  }
}

TEST(ModuleValueTest, SpecRoundTripsExactly) {
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = 123456789;
  spec.fpp = 0.1 / 3;  // not exact in decimal
  spec.shards = 64;
  spec.seed = 0xfedcba9876543210ull;
  spec.bucket_size = 2;
  spec.max_kicks = 20;
  spec.max_bytes = uint64_t{5} << 30;
  spec.expansion = 3;
  spec.scalable = false;
  auto back = DecodeSpec(EncodeSpec(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->type, spec.type);
  EXPECT_EQ(back->capacity, spec.capacity);
  EXPECT_EQ(back->fpp, spec.fpp);
  EXPECT_EQ(back->shards, spec.shards);
  EXPECT_EQ(back->seed, spec.seed);
  EXPECT_EQ(back->bucket_size, spec.bucket_size);
  EXPECT_EQ(back->max_kicks, spec.max_kicks);
  EXPECT_EQ(back->max_bytes, spec.max_bytes);
  EXPECT_EQ(back->expansion, spec.expansion);
  EXPECT_EQ(back->scalable, spec.scalable);
  EXPECT_EQ(EncodeSpec(*back), EncodeSpec(spec));
  for (const char* bad : {"", "v1", "v2 1 1 0x1p-1 1 1 2 0 0 0 0 0 2",
                          "v1 9 1 0x1p-1 1 1 2 0 0 0 0 0 2",
                          "v1 1 1 0x1p-1 1 1 2 0 0 0 0 0 2 extra",
                          "v1 1 1 nope 1 1 2 0 0 0 0 0 2",
                          "v1 1 1 0x1p-1 1 1 4 0 0 0 0 0 2",     // retain flag
                          "v1 1 1 0x1p-1 1 1 2 0 0 0 0 0 17",    // expansion
                          "v1 1 1 0x1p-1 1 1 2 0 0 0 0 0 258",   // wraps to 2
                          "v1 1 1 0x1p+0 1 1 2 0 0 0 0 0 2",     // fpp 1
                          "v1 1 0 0x1p-1 1 1 2 0 0 0 0 0 2"}) {  // capacity

    EXPECT_FALSE(DecodeSpec(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace shardfilter::module
