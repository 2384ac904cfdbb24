// The serialized cuckoo filter (docs/format-cuckoo.md): round trips, the
// pinned bytes of a small filter, and every kind of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/internal/coding.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::Key;

std::unique_ptr<CuckooFilter> Small() {
  CuckooOptions o;
  o.capacity = 6;
  o.fpp = 0.01;
  o.fingerprint_bits = 12;
  o.seed = 42;
  auto f = std::move(CuckooFilter::Create(o)).value();
  EXPECT_OK(f->AddHash(0x0123456789ABCDEFULL));  // fp 0xDEF, bucket 0
  EXPECT_OK(f->AddHash(0xFEDCBA9876543210ULL));  // fp 0x210, bucket 4
  EXPECT_OK(f->AddHash(0x1111111111111111ULL));
  EXPECT_OK(f->RemoveHash(0x1111111111111111ULL));
  return f;
}

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h.push_back(d[c >> 4]);
    h.push_back(d[c & 15]);
  }
  return h;
}

TEST(CuckooFormatTest, PinnedBytesOfASmallFilter) {
  // 5 buckets of 4 x 12 bits = 240 bits -> 4 body words. Decoded in
  // docs/format-cuckoo.md. A change here is a format change: bump the
  // version, never edit the expectation alone.
  const std::string expected =
      "53464c54"
      "03"
      "01"
      "0000"
      "38000000"
      "2000000000000000"  // envelope
      "0500000000000000"
      "04"
      "0c"
      "0000"
      "f4010000"  // params
      "2a00000000000000"
      "0600000000000000"
      "7b14ae47e17a843f"
      "0200000000000000"
      "0100000000000000"
      "ef0d000000000000"
      "0000000000000000"
      "0000000000000000"  // body
      "1002000000000000"
      "2b7cc7c3c7ae2ecd";  // XXH3-64 of everything before
  EXPECT_EQ(Hex(Small()->Serialize()), expected);
}

TEST(CuckooFormatTest, RoundTripKeepsEverything) {
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint32_t fbits : {8u, 12u, 16u}) {
      CuckooOptions o;
      o.capacity = 5000;
      o.fpp = 0.5;
      o.bucket_size = b;
      o.fingerprint_bits = fbits;
      o.max_kicks = 321;
      o.seed = b * 100 + fbits;
      auto f = std::move(CuckooFilter::Create(o)).value();
      for (uint64_t i = 0; i < 4000; ++i) ASSERT_OK(f->Add(Key(1, i)));
      for (uint64_t i = 0; i < 500; ++i) ASSERT_OK(f->Remove(Key(1, i)));
      const std::string bytes = f->Serialize();
      auto g = CuckooFilter::Deserialize(bytes);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      EXPECT_TRUE((*g)->Equals(*f));
      EXPECT_TRUE(f->Equals(**g));
      EXPECT_EQ((*g)->Serialize(), bytes);
      EXPECT_EQ((*g)->max_kicks(), 321u);
      EXPECT_EQ((*g)->seed(), o.seed);
      FilterStats s = (*g)->Stats();
      EXPECT_EQ(s.items, 3500u);
      EXPECT_EQ(s.deletes, 500u);
      for (uint64_t i = 500; i < 4000; ++i)
        ASSERT_TRUE((*g)->MayContain(Key(1, i)));
      // Still a working filter, and now different from the original.
      ASSERT_OK((*g)->Add("one more"));
      EXPECT_FALSE((*g)->Equals(*f));
      ASSERT_OK((*g)->Remove(Key(1, 600)));
    }
  }
}

TEST(CuckooFormatTest, WrongMagicAndForeignBytes) {
  std::string bytes = Small()->Serialize();
  bytes[0] = 'X';
  EXPECT_TRUE(CuckooFilter::Deserialize(bytes).status().IsInvalidArgument());
  EXPECT_TRUE(CuckooFilter::Deserialize("").status().IsInvalidArgument());
  EXPECT_TRUE(
      CuckooFilter::Deserialize("hello world").status().IsInvalidArgument());
}

TEST(CuckooFormatTest, EveryTruncationFails) {
  const std::string bytes = Small()->Serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    Status s = CuckooFilter::Deserialize(bytes.substr(0, n)).status();
    EXPECT_FALSE(s.ok()) << n;
    if (n >= 4) {
      EXPECT_TRUE(s.IsCorruption()) << n << " " << s.ToString();
    }
  }
  EXPECT_TRUE(CuckooFilter::Deserialize(bytes + '\0').status().IsCorruption());
}

TEST(CuckooFormatTest, EverySingleBitFlipFails) {
  const std::string bytes = Small()->Serialize();
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string m = bytes;
    m[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    Status s = CuckooFilter::Deserialize(m).status();
    EXPECT_FALSE(s.ok()) << bit;
  }
}

// Builds a checksummed envelope around edited params/body, so that the
// decoder's own checks (not the checksum) must catch the problem.
std::string Rewrap(std::string params, std::string body,
                   FilterType type = FilterType::kCuckoo, uint8_t version = 1) {
  std::string out;
  BeginEnvelope(type, version, params, body.size(), &out);
  out += body;
  FinishEnvelope(&out);
  return out;
}

struct Parts {
  std::string params;
  std::string body;
};
Parts Split(const std::string& bytes) {
  auto env = OpenEnvelope(bytes);
  EXPECT_TRUE(env.ok());
  return {std::string(env->params), std::string(env->body)};
}
void PutAt(std::string* s, size_t off, uint64_t v, int width) {
  for (int i = 0; i < width; ++i)
    (*s)[off + i] = static_cast<char>(v >> (8 * i));
}

TEST(CuckooFormatTest, FutureVersionAndWrongType) {
  Parts p = Split(Small()->Serialize());
  ASSERT_TRUE(CuckooFilter::Deserialize(Rewrap(p.params, p.body)).ok());
  EXPECT_TRUE(CuckooFilter::Deserialize(
                  Rewrap(p.params, p.body, FilterType::kCuckoo, 2))
                  .status()
                  .IsNotSupported());
  EXPECT_TRUE(CuckooFilter::Deserialize(
                  Rewrap(p.params, p.body, FilterType::kCuckoo, 0))
                  .status()
                  .IsCorruption());
  EXPECT_EQ(
      CuckooFilter::Deserialize(Rewrap(p.params, p.body, FilterType::kBloom, 1))
          .status()
          .code(),
      StatusCode::kWrongType);
}

TEST(CuckooFormatTest, InconsistentParamsAreCorruption) {
  const Parts good = Split(Small()->Serialize());
  struct Edit {
    const char* what;
    size_t off;
    uint64_t value;
    int width;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
  };
  const Edit edits[] = {
      {"zero buckets", 0, 0, 8},
      {"more buckets than body", 0, 6, 8},
      {"absurd bucket count", 0, uint64_t{1} << 62, 8},
      {"max bucket count", 0, ~uint64_t{0}, 8},
      {"bucket size 3", 8, 3, 1},
      {"bucket size 0", 8, 0, 1},
      {"fingerprint bits 10", 9, 10, 1},
      {"fingerprint bits 64", 9, 64, 1},
      {"reserved", 10, 1, 2},
      {"max kicks 0", 12, 0, 4},
      {"max kicks huge", 12, 0xFFFFFFFF, 4},
      {"capacity 0", 24, 0, 8},
      {"capacity > slots", 24, 21, 8},
      {"fpp 0", 32, bits(0.0), 8},
      {"fpp 1", 32, bits(1.0), 8},
      {"fpp NaN", 32, bits(nan), 8},
      {"fpp too small for table", 32, bits(1e-6), 8},
      {"items mismatch", 40, 3, 8},
      {"items > slots", 40, 1000, 8},
  };
  for (const Edit& e : edits) {
    std::string params = good.params;
    PutAt(&params, e.off, e.value, e.width);
    Status s = CuckooFilter::Deserialize(Rewrap(params, good.body)).status();
    EXPECT_TRUE(s.IsCorruption()) << e.what << ": " << s.ToString();
  }
  // Params of the wrong length, a body one word short or long.
  EXPECT_TRUE(CuckooFilter::Deserialize(Rewrap(good.params + "x", good.body))
                  .status()
                  .IsCorruption());
  EXPECT_TRUE(
      CuckooFilter::Deserialize(Rewrap(good.params.substr(0, 55), good.body))
          .status()
          .IsCorruption());
  EXPECT_TRUE(
      CuckooFilter::Deserialize(Rewrap(good.params, good.body.substr(8)))
          .status()
          .IsCorruption());
  EXPECT_TRUE(CuckooFilter::Deserialize(
                  Rewrap(good.params, good.body + std::string(8, '\0')))
                  .status()
                  .IsCorruption());
  // An extra fingerprint the item count does not know about.
  std::string body = good.body;
  body[8] = 1;
  EXPECT_TRUE(CuckooFilter::Deserialize(Rewrap(good.params, body))
                  .status()
                  .IsCorruption());
  // A bit past the last slot (240 bits used of 256).
  body = good.body;
  body[31] = static_cast<char>(0x80);
  EXPECT_TRUE(CuckooFilter::Deserialize(Rewrap(good.params, body))
                  .status()
                  .IsCorruption());
}

}  // namespace
}  // namespace shardfilter
