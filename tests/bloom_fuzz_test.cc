// Randomized decoder fuzzing of BloomFilter::Deserialize and
// CountingBloomFilter::Deserialize (fixed seeds). Each case mutates a valid
// serialized filter (bit flips, byte overwrites, truncation, extension,
// length-field edits), half of them resealed with a valid checksum so that
// the params and body checks are reached. The decoder must return an error,
// or a filter that re-serializes to exactly the input (the format is
// canonical) and answers queries. Never a crash: CI runs this under
// ASan + UBSan.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/envelope.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using ::shardfilter::testing::SplitMix64;

std::string Mutate(const std::string& in, uint64_t* rng) {
  std::string s = in;
  const int edits = 1 + static_cast<int>(SplitMix64(rng) % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const uint64_t r = SplitMix64(rng);
    const size_t pos = (r >> 8) % s.size();
    switch (r % 6) {
      case 0:  // bit flip
        s[pos] ^= static_cast<char>(1 << ((r >> 4) % 8));
        break;
      case 1:  // random byte
        s[pos] = static_cast<char>(r >> 56);
        break;
      case 2:  // truncate
        s.resize(pos);
        break;
      case 3:  // extend with garbage
        s.append(1 + (r >> 40) % 70, static_cast<char>(r >> 48));
        break;
      case 4:  // a params byte (offsets 20..71): the decoder's own checks
        if (s.size() > 72) s[20 + (r >> 8) % 52] = static_cast<char>(r >> 56);
        break;
      case 5:  // an envelope length field: absurd or off by a little
        if (s.size() >= 20) {
          const size_t f = 8 + ((r >> 8) % 12);
          s[f] = static_cast<char>(r >> 56);
        }
        break;
    }
  }
  if (SplitMix64(rng) % 2 == 0 && s.size() >= kEnvelopeTrailerSize) {
    s.resize(s.size() - kEnvelopeTrailerSize);
    FinishEnvelope(&s);
  }
  return s;
}

template <typename F>
void Exercise(const std::string& bytes, int* accepted) {
  auto r = F::Deserialize(bytes);
  if (!r.ok()) {
    EXPECT_FALSE(r.status().message().empty());
    return;
  }
  ++*accepted;
  F& f = **r;
  EXPECT_EQ(f.Serialize(), bytes);
  for (uint64_t h = 1; h < 200; ++h) {
    (void)f.MayContainHash(h * 0x9e3779b97f4a7c15ULL);
    (void)f.CountHash(h);
  }
  (void)f.Stats();
  ASSERT_OK(f.AddHash(42));
  EXPECT_TRUE(f.MayContainHash(42));
}

template <typename F, typename Make>
void Fuzz(Make make, uint64_t seed, int cases) {
  const std::string good = make();
  uint64_t rng = seed;
  int accepted = 0;
  for (int i = 0; i < cases; ++i) {
    Exercise<F>(Mutate(good, &rng), &accepted);
  }
  // Pure garbage, with and without the magic.
  for (int i = 0; i < cases / 10; ++i) {
    std::string g(SplitMix64(&rng) % 300, '\0');
    for (char& c : g) c = static_cast<char>(SplitMix64(&rng));
    if (i % 2 == 0 && g.size() >= 4) g.replace(0, 4, "SFLT");
    Exercise<F>(g, &accepted);
  }
  // Some resealed mutations only touch values the decoder accepts (seed,
  // items, body bits): the fuzzer must have reached that path.
  EXPECT_GT(accepted, 0);
}

// Serialize() of a small, full Bloom filter of `layout`: the seed bytes.
std::string SmallBloom(BloomLayout layout) {
  auto f = BloomFilter::Create({.capacity = 20, .fpp = 0.05, .layout = layout});
  for (int i = 0; i < 20; ++i) (*f)->Add(std::to_string(i));
  return (*f)->Serialize();
}

TEST(BloomFuzz, BlockedDecoder) {
  Fuzz<BloomFilter>([] { return SmallBloom(BloomLayout::kBlocked); }, 1,
                    20'000);
}

TEST(BloomFuzz, SplitBlockDecoder) {
  Fuzz<BloomFilter>([] { return SmallBloom(BloomLayout::kSplitBlock); }, 4,
                    20'000);
}

TEST(BloomFuzz, ClassicDecoder) {
  Fuzz<BloomFilter>([] { return SmallBloom(BloomLayout::kClassic); }, 2,
                    20'000);
}

TEST(BloomFuzz, CountingDecoder) {
  Fuzz<CountingBloomFilter>(
      [] {
        auto f = CountingBloomFilter::Create({.capacity = 20, .fpp = 0.05});
        for (int i = 0; i < 20; ++i) (*f)->Add(std::to_string(i));
        return (*f)->Serialize();
      },
      3, 20'000);
}

TEST(BloomFuzz, CrossTypeBytes) {
  auto b = BloomFilter::Create({.capacity = 20});
  auto c = CountingBloomFilter::Create({.capacity = 20});
  int accepted = 0;
  Exercise<BloomFilter>((*c)->Serialize(), &accepted);
  Exercise<CountingBloomFilter>((*b)->Serialize(), &accepted);
  EXPECT_EQ(accepted, 0);
}

}  // namespace
}  // namespace shardfilter
