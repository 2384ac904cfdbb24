// Key and value encodings of the store: ordering, round trips, pinned
// bytes, and every decoding failure.
#include <gtest/gtest.h>

#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter::persistence {
namespace {

TEST(KeysTest, BigEndianOrderMatchesNumericOrder) {
  EXPECT_LT(JournalKey("f", 1, 255), JournalKey("f", 1, 256));
  EXPECT_LT(JournalKey("f", 1, 0xffffffffffULL), JournalKey("f", 2, 0));
  EXPECT_LT(ChunkKey("f", 0, 9, 3), ChunkKey("f", 0, 10, 0));
  EXPECT_EQ(JournalKey("ab", 1, 2),
            std::string("\x00\x02"
                        "ab\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02",
                        16));
}

TEST(KeysTest, NamePrefixKeepsNamesApart) {
  // "a" keys never fall inside the range of "a\x00..." or the reverse.
  std::string a = NamePrefix("a"), ab = NamePrefix(std::string("a\0", 2));
  EXPECT_NE(ShardPrefix("a", 0).substr(0, ab.size()), ab);
  std::string end = PrefixSuccessor(a);
  EXPECT_LT(JournalKey("a", 255, ~0ULL), end);
  EXPECT_FALSE(JournalKey("b", 0, 0) < end && JournalKey("b", 0, 0) >= a);
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixSuccessor(std::string("\xff", 1)), "");
}

TEST(KeysTest, ParseRoundTrip) {
  std::string key = ChunkKey("name", 7, 42, 3);  // parsed views point in it
  auto c = ParseChunkKey(key);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->name, "name");
  EXPECT_EQ(c->shard, 7u);
  EXPECT_EQ(c->number, 42u);
  EXPECT_EQ(c->chunk, 3u);
  std::string jkey = JournalKey("n", 2, 99);
  auto j = ParseJournalKey(jkey);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->number, 99u);
  EXPECT_FALSE(ParseJournalKey("x").has_value());
  EXPECT_FALSE(ParseChunkKey(JournalKey("n", 2, 99)).has_value());
}

FilterDescriptor SampleDescriptor() {
  FilterDescriptor d;
  d.type = FilterType::kCuckoo;
  d.durability = 2;
  d.capacity = 1000;
  d.fpp = 0.001;
  d.seed = 77;
  d.fingerprint_bits = 16;
  d.bucket_size = 4;
  d.max_kicks = 500;
  d.shards.resize(4);
  d.shards[2] = {3, 1234, 2, 8000, 0xabcdef};
  return d;
}

TEST(ValuesTest, DescriptorRoundTrip) {
  FilterDescriptor d = SampleDescriptor();
  std::string v = EncodeDescriptor(d);
  EXPECT_EQ(v.size(), 2u + 56 + 4 * 36 + 8);
  auto back = DecodeDescriptor(v, "f");
  SF_ASSERT_OK(back.status());
  EXPECT_EQ(*back, d);
}

TEST(ValuesTest, PinnedJournalBytes) {
  uint64_t h[2] = {1, 0x0102030405060708ULL};
  std::string v = EncodeJournalEntry(JournalOp::kRemove, h);
  std::string expect(
      "\x01\x03\x02\x02\x00\x00\x00"
      "\x01\x00\x00\x00\x00\x00\x00\x00"
      "\x08\x07\x06\x05\x04\x03\x02\x01",
      23);
  ASSERT_EQ(v.substr(0, 23), expect);
  uint64_t sum = Checksum64(v.data(), 23);
  EXPECT_EQ(v.substr(23), std::string(reinterpret_cast<char*>(&sum), 8));
  auto e = DecodeJournalEntry(v, "j");
  SF_ASSERT_OK(e.status());
  EXPECT_EQ(e->op, JournalOp::kRemove);
  EXPECT_EQ(e->hashes, std::vector<uint64_t>(h, h + 2));
}

TEST(ValuesTest, EveryFlippedByteIsDetected) {
  std::string v = EncodeDescriptor(SampleDescriptor());
  for (size_t i = 0; i < v.size(); ++i) {
    std::string bad = v;
    bad[i] ^= 0x10;
    auto r = DecodeDescriptor(bad, "f");
    ASSERT_FALSE(r.ok()) << "byte " << i;
    // A flipped version byte may read as a future version.
    if (i == 0) {
      EXPECT_TRUE(r.status().IsNotSupported() || r.status().IsCorruption());
    } else {
      EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
      EXPECT_NE(r.status().message().find("filter \"f\" descriptor"),
                std::string::npos);
    }
  }
}

TEST(ValuesTest, TruncationAndKindAndVersion) {
  std::string v = EncodeChunk("payload");
  for (size_t n = 0; n < v.size(); ++n) {
    EXPECT_FALSE(DecodeChunk(v.substr(0, n), "c").ok()) << n;
  }
  // A journal value is not a chunk.
  uint64_t h = 5;
  auto wrong = DecodeChunk(EncodeJournalEntry(JournalOp::kAdd, {&h, 1}), "c");
  EXPECT_TRUE(wrong.status().IsCorruption());
  EXPECT_NE(wrong.status().message().find("kind"), std::string::npos);
  std::string future = v;
  future[0] = 9;
  auto r = DecodeChunk(future, "chunk 3");
  EXPECT_TRUE(r.status().IsNotSupported());
  EXPECT_NE(r.status().message().find("version 9"), std::string::npos);
  EXPECT_NE(r.status().message().find("chunk 3"), std::string::npos);
  auto ok = DecodeChunk(v, "c");
  SF_ASSERT_OK(ok.status());
  EXPECT_EQ(*ok, "payload");
}

TEST(ValuesTest, DescriptorConsistencyChecks) {
  FilterDescriptor d = SampleDescriptor();
  d.shards.resize(3);  // not a power of two
  auto r = DecodeDescriptor(EncodeDescriptor(d), "f");
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("shard count"), std::string::npos);
}

TEST(ValuesTest, DescribeNameEscapes) {
  EXPECT_EQ(DescribeName(std::string("a\x01\"", 3)), "filter \"a\\x01\\x22\"");
}

}  // namespace
}  // namespace shardfilter::persistence
