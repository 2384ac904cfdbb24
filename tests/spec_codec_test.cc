// The one codec of a filter's stored parameters (persistence/
// spec_codec.h): both layouts that carry it, the catalog descriptor and the
// export header, pinned byte by byte against the same spec, and the checks
// every decoder of it shares.
#include "shardfilter/persistence/spec_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <utility>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::persistence {
namespace {

StoredSpec Sample() {
  StoredSpec s;
  s.type = FilterType::kCuckoo;
  s.durability = 2;
  s.scalable = true;
  s.retain_hashes = true;
  s.expansion = 4;
  s.capacity = 0x0102030405060708;
  s.fpp = 0.25;  // 0x3fd0000000000000
  s.seed = 0x1112131415161718;
  s.k = 0x21222324;
  s.fingerprint_bits = 12;
  s.bucket_size = 4;
  s.max_kicks = 500;
  s.max_bytes = 0x3132333435363738;
  return s;
}

// The parameter block of Sample(), as docs/format-store.md and
// docs/format-export.md lay it out.
const std::string kParams(
    "\x08\x07\x06\x05\x04\x03\x02\x01"   // capacity
    "\x00\x00\x00\x00\x00\x00\xd0\x3f"   // fpp 0.25
    "\x18\x17\x16\x15\x14\x13\x12\x11"   // seed
    "\x24\x23\x22\x21"                   // k
    "\x0c\x00\x00\x00"                   // fingerprint bits
    "\x04\x00\x00\x00"                   // bucket size
    "\xf4\x01\x00\x00"                   // max kicks
    "\x38\x37\x36\x35\x34\x33\x32\x31",  // max bytes
    kSpecParamsBytes);

TEST(SpecCodecTest, ParameterBlockIsPinned) {
  std::string out;
  PutSpecParams(&out, Sample());
  EXPECT_EQ(out, kParams);
  internal::ByteReader r(out);
  StoredSpec back;
  ASSERT_TRUE(ReadSpecParams(&r, &back));
  EXPECT_EQ(r.remaining(), 0u);
  SpecHead h = EncodeSpecHead(Sample(), kDescriptorSpecRules);
  EXPECT_EQ(h.flags, kSpecFlagScalable | kSpecFlagRetainHashes);
  // The export cannot hold retain_hashes: its head leaves the flag out.
  EXPECT_EQ(EncodeSpecHead(Sample(), kExportSpecRules).flags,
            kSpecFlagScalable);
  ASSERT_TRUE(DecodeSpecHead(h, kDescriptorSpecRules, "x", &back).ok());
  EXPECT_EQ(back, Sample());
}

TEST(SpecCodecTest, DescriptorLayoutIsHeadThenBlockThenShards) {
  FilterDescriptor d;
  static_cast<StoredSpec&>(d) = Sample();
  d.shards.resize(2);
  const std::string v = EncodeDescriptor(d);
  // Frame: version, kind; payload; checksum.
  ASSERT_EQ(v.size(), 2 + 4 + kSpecParamsBytes + 4 + 2 * 36 + 8);
  EXPECT_EQ(v.substr(2, 4), std::string("\x03\x02\x06\x04", 4));
  EXPECT_EQ(v.substr(6, kSpecParamsBytes), kParams);
  EXPECT_EQ(v.substr(6 + kSpecParamsBytes, 4), std::string("\x02\0\0\0", 4));
  auto back = DecodeDescriptor(v, "f");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, d);
}

TEST(SpecCodecTest, ExportLayoutIsTheSameBlockAfterItsOwnHead) {
  auto spec = shardfilter::internal::SpecFromStored(Sample(), 1);
  spec.retain_hashes = false;  // exports do not carry it
  spec.capacity = 1000;
  spec.max_bytes = 0;
  spec.k = 0;
  spec.max_kicks = 0;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const std::string e = ExportShardedFilter(**f);
  // type, flags, durability, expansion: the export's order.
  EXPECT_EQ(e.substr(8, 4), std::string("\x03\x02\x02\x04", 4));
  EXPECT_EQ(e.substr(12, 4), std::string("\x01\0\0\0", 4));
  StoredSpec expect = Sample();
  expect.retain_hashes = false;
  expect.capacity = 1000;
  expect.max_bytes = 0;
  expect.k = 0;
  expect.max_kicks = 0;
  std::string block;
  PutSpecParams(&block, expect);
  EXPECT_EQ(e.substr(16, kSpecParamsBytes), block);
  auto parsed = ParseExport(e);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(shardfilter::internal::StoredFromSpec(parsed->spec), expect);
}

TEST(SpecCodecTest, EveryDecoderRefusesTheSameBadHeads) {
  struct Case {
    const char* why;
    SpecHead head;
    double fpp;
    uint64_t capacity;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Case cases[] = {
      {"type 0", {0, 1, 0, 2}, 0.01, 10},
      {"type 4", {4, 1, 0, 2}, 0.01, 10},
      {"durability 3", {1, 3, 0, 2}, 0.01, 10},
      {"flag bit 6", {1, 1, 64, 2}, 0.01, 10},
      {"flag bit 7", {1, 1, 128, 2}, 0.01, 10},
      {"classic and auto layouts", {1, 1, 9, 2}, 0.01, 10},
      {"auto and split layouts", {1, 1, 24, 2}, 0.01, 10},
      {"a Bloom layout on a cuckoo filter", {3, 1, 16, 2}, 0.01, 10},
      {"expansion 17", {1, 1, 0, 17}, 0.01, 10},
      {"fpp NaN", {1, 1, 0, 2}, nan, 10},
      {"fpp 1", {1, 1, 0, 2}, 1.0, 10},
      {"fpp 0", {1, 1, 0, 2}, 0.0, 10},
      {"capacity 0", {1, 1, 0, 2}, 0.01, 0},
  };
  for (const SpecRules& rules : {kDescriptorSpecRules, kExportSpecRules}) {
    for (const Case& c : cases) {
      StoredSpec s;
      s.fpp = c.fpp;
      s.capacity = c.capacity;
      Status st = DecodeSpecHead(c.head, rules, "what", &s);
      EXPECT_EQ(st.code(), StatusCode::kCorruption) << c.why;
      EXPECT_EQ(st.message().rfind("what: ", 0), 0u) << st.message();
    }
  }
  // Where the two formats differ, by their documents: the export has no
  // retain_hashes flag and may leave expansion 0 to the default.
  StoredSpec s;
  s.fpp = 0.01;
  s.capacity = 10;
  EXPECT_TRUE(DecodeSpecHead({1, 1, 4, 2}, kDescriptorSpecRules, "d", &s).ok());
  EXPECT_FALSE(DecodeSpecHead({1, 1, 4, 2}, kExportSpecRules, "e", &s).ok());
  EXPECT_FALSE(
      DecodeSpecHead({1, 1, 0, 0}, kDescriptorSpecRules, "d", &s).ok());
  EXPECT_TRUE(DecodeSpecHead({1, 1, 0, 0}, kExportSpecRules, "e", &s).ok());
}

// Each Bloom layout has its flag (docs/format-store.md), round-trips in
// both formats, and a Bloom head without one is the blocked layout, as
// every descriptor written before the auto and split flags; other types
// carry no layout flag.
TEST(SpecCodecTest, BloomLayoutFlagsArePinnedAndRoundTrip) {
  const std::pair<BloomLayout, uint8_t> layouts[] = {
      {BloomLayout::kBlocked, 0},
      {BloomLayout::kClassic, kSpecFlagClassic},
      {BloomLayout::kAuto, kSpecFlagAutoLayout},
      {BloomLayout::kSplitBlock, kSpecFlagSplitLayout}};
  EXPECT_EQ(kSpecFlagAutoLayout, 8);
  EXPECT_EQ(kSpecFlagSplitLayout, 16);
  for (const auto& [layout, flag] : layouts) {
    SCOPED_TRACE(BloomLayoutName(layout));
    StoredSpec in;
    in.type = FilterType::kBloom;
    in.layout = layout;
    in.expansion = 2;
    in.capacity = 10;
    in.fpp = 0.01;
    for (const SpecRules& rules : {kDescriptorSpecRules, kExportSpecRules}) {
      const SpecHead h = EncodeSpecHead(in, rules);
      EXPECT_EQ(h.flags, flag);
      StoredSpec out;
      out.capacity = in.capacity;
      out.fpp = in.fpp;
      ASSERT_TRUE(DecodeSpecHead(h, rules, "x", &out).ok());
      EXPECT_EQ(out.layout, layout);
    }
  }
  StoredSpec cuckoo = Sample();
  cuckoo.layout = BloomLayout::kSplitBlock;  // ignored: not a Bloom filter
  EXPECT_EQ(
      EncodeSpecHead(cuckoo, kDescriptorSpecRules).flags & kSpecLayoutFlags, 0);
}

// Bit 5, the multiply shard router: carried by both formats (an export
// must land its shards where the router sends their keys); absent, as in
// everything written before it, it means the Remix router.
TEST(SpecCodecTest, RouterFlagIsPinnedAndRoundTrips) {
  EXPECT_EQ(kSpecFlagMultiplyRouter, 32);
  for (const SpecRules& rules : {kDescriptorSpecRules, kExportSpecRules}) {
    for (bool multiply : {false, true}) {
      StoredSpec in = Sample();
      in.retain_hashes = false;
      in.multiply_router = multiply;
      const SpecHead h = EncodeSpecHead(in, rules);
      EXPECT_EQ((h.flags & kSpecFlagMultiplyRouter) != 0, multiply);
      StoredSpec out;
      out.capacity = in.capacity;
      out.fpp = in.fpp;
      ASSERT_TRUE(DecodeSpecHead(h, rules, "x", &out).ok());
      EXPECT_EQ(out.multiply_router, multiply);
    }
  }
}

}  // namespace
}  // namespace shardfilter::persistence
