#include "shardfilter/filters/hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <set>
#include <string>

#include "shardfilter/filters/detail/xxh3_short.h"

namespace shardfilter {
namespace {

// Golden values: a change here changes every persisted filter's positions,
// which would make stored filters report false negatives. Never update them
// without a format version bump and a migration.
TEST(HashKey, GoldenValues) {
  EXPECT_EQ(HashKey("", 0), 0x2d06800538d394c2ULL);
  EXPECT_EQ(HashKey("a", 0), 0xe6c632b61e964e1fULL);
  EXPECT_EQ(HashKey("hello", 0), 0x9555e8555c62dcfdULL);
  EXPECT_EQ(HashKey("hello", kDefaultSeed), 0x4e035eec89907133ULL);
  EXPECT_EQ(HashKey("https://example.com/a/b?c=d", 42), 0xf6967d265d0e0d54ULL);
}

// The inlined short-key path must agree with the library's entry point for
// every length it covers, and around the boundary.
TEST(HashKey, ShortKeyPathMatchesXxh3) {
  std::string key;
  for (size_t len = 0; len <= 40; ++len) {
    for (uint64_t seed :
         {uint64_t{0}, uint64_t{1}, kDefaultSeed, ~uint64_t{0}}) {
      EXPECT_EQ(HashKey(key, seed), XXH3_64bits_withSeed(key.data(), len, seed))
          << "len " << len << " seed " << seed;
    }
    key.push_back(static_cast<char>('a' + len * 7 % 26));
  }
}

// 2000 random (bytes, seed) cases with lengths in [min_len, min_len +
// spread), a third of them with seed 0, for comparing a kernel with xxHash.
template <class Check>
void ForRandomInputs(uint64_t x, size_t min_len, size_t spread, Check check) {
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::string bytes;
  for (int round = 0; round < 2000; ++round) {
    bytes.resize(min_len + next() % spread);
    for (char& c : bytes) c = static_cast<char>(next());
    check(bytes, round % 3 == 0 ? 0 : next());
  }
}

// filters/detail/xxh3_short.h is our own XXH3 short-input kernel: it must
// agree with xxHash on every byte value (bytes >= 0x80 included: the 1..3
// byte path reads single bytes) and on seeds with high bits set.
TEST(HashKey, ShortKernelMatchesXxh3OnRandomBytes) {
  ForRandomInputs(0x9E3779B97F4A7C15ULL, 0, 17,
                  [](const std::string& key, uint64_t seed) {
                    const uint64_t want =
                        XXH3_64bits_withSeed(key.data(), key.size(), seed);
                    EXPECT_EQ(HashKey(key, seed), want)
                        << "len " << key.size() << " seed " << seed;
                    EXPECT_EQ(KeyHasher(seed)(key), want)
                        << "len " << key.size() << " seed " << seed;
                  });
}

// The journal's one-key record checks use the 17..32-byte form.
TEST(HashKey, Len17to32KernelMatchesXxh3) {
  ForRandomInputs(
      0xD1B54A32D192ED03ULL, 17, 16,
      [](const std::string& bytes, uint64_t seed) {
        EXPECT_EQ(detail::Xxh3Len17to32(
                      reinterpret_cast<const unsigned char*>(bytes.data()),
                      bytes.size(), seed),
                  XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed))
            << "len " << bytes.size() << " seed " << seed;
      });
}

// KeyHasher precomputes part of the 4..8-byte kernel: same values as
// HashKey for every length and seed.
TEST(KeyHasher, MatchesHashKey) {
  std::string key;
  for (size_t len = 0; len <= 24; ++len) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{1}, kDefaultSeed,
                          uint64_t{0x80000000FFFFFFFFULL}, ~uint64_t{0}}) {
      const KeyHasher hasher(seed);
      EXPECT_EQ(hasher.seed(), seed);
      EXPECT_EQ(hasher(key), HashKey(key, seed))
          << "len " << len << " seed " << seed;
      // Every byte of the key counts (the kernel reads two 4-byte halves,
      // overlapping below 8 bytes).
      for (size_t i = 0; i < len; ++i) {
        std::string other = key;
        other[i] ^= 1;
        EXPECT_EQ(hasher(other), HashKey(other, seed));
        EXPECT_NE(hasher(other), hasher(key)) << "len " << len << " byte " << i;
      }
    }
    key.push_back(static_cast<char>('a' + len * 5 % 26));
  }
}

TEST(HashKey, SeedChangesHash) {
  EXPECT_NE(HashKey("key", 1), HashKey("key", 2));
  EXPECT_EQ(HashKey("key", 7), HashKey(std::string("key"), 7));
}

TEST(Remix, IsBijectiveOnSampleAndDiffers) {
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 10000; ++i) {
    EXPECT_TRUE(seen.insert(Remix(i)).second);
  }
  EXPECT_NE(Remix(12345), 12345u);
}

TEST(FastRange, StaysInRangeAndUsesHighBits) {
  EXPECT_EQ(FastRange64(0, 100), 0u);
  EXPECT_EQ(FastRange64(UINT64_MAX, 100), 99u);
  EXPECT_EQ(FastRange64(1ULL << 63, 100), 50u);
  EXPECT_EQ(FastRange32(UINT32_MAX, 7), 6u);
}

}  // namespace
}  // namespace shardfilter
