// Random mutations of serialized cuckoo filters (CI also runs this under
// ASan + UBSan): Deserialize must never crash, never over-allocate, and
// whatever it accepts must be a working filter. Mutations are applied both
// to raw bytes (the checksum rejects them) and to params/body re-wrapped
// with a valid checksum (the decoder's own checks must catch them).
#include <gtest/gtest.h>

#include <string>

#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/envelope.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::SplitMix64;

std::string Seed(uint32_t b, uint32_t f, uint64_t items) {
  CuckooOptions o;
  o.capacity = 40;
  o.fpp = 0.5;
  o.bucket_size = b;
  o.fingerprint_bits = f;
  auto filter = std::move(CuckooFilter::Create(o)).value();
  uint64_t st = b * 31 + f;
  for (uint64_t i = 0; i < items; ++i) (void)filter->AddHash(SplitMix64(&st));
  return filter->Serialize();
}

void Mutate(std::string* s, uint64_t* rng) {
  const uint64_t r = SplitMix64(rng);
  if (s->empty()) {
    s->push_back(static_cast<char>(r));
    return;
  }
  const size_t at = (r >> 8) % s->size();
  switch (r % 6) {
    case 0:  // flip a bit
      (*s)[at] ^= static_cast<char>(1 << ((r >> 40) % 8));
      break;
    case 1:  // random byte
      (*s)[at] = static_cast<char>(r >> 48);
      break;
    case 2:  // truncate
      s->resize(at);
      break;
    case 3:  // insert
      s->insert(at, 1, static_cast<char>(r >> 48));
      break;
    case 4:  // erase
      s->erase(at, 1);
      break;
    default:  // extreme value in an 8-byte field
      for (size_t i = at; i < std::min(s->size(), at + 8); ++i) {
        (*s)[i] = static_cast<char>((r >> 56) & 1 ? 0xFF : 0x00);
      }
  }
}

// Exercises an accepted filter: it must answer, accept changes and
// round-trip.
void Exercise(CuckooFilter& f, uint64_t* rng) {
  for (int i = 0; i < 20; ++i) {
    const uint64_t h = SplitMix64(rng);
    (void)f.MayContainHash(h);
    (void)f.CountHash(h);
    Status s = f.AddHash(h);
    if (s.ok()) {
      ASSERT_TRUE(f.MayContainHash(h));
      ASSERT_OK(f.RemoveHash(h));
    }
  }
  auto g = CuckooFilter::Deserialize(f.Serialize());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_TRUE((*g)->Equals(f));
}

TEST(CuckooFuzzTest, RawMutationsNeverCrash) {
  uint64_t rng = 1;
  int accepted = 0;
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint32_t f : {8u, 12u, 16u}) {
      const std::string seed = Seed(b, f, 30);
      for (int iter = 0; iter < 1500; ++iter) {
        std::string m = seed;
        const int n = 1 + static_cast<int>(SplitMix64(&rng) % 4);
        for (int k = 0; k < n; ++k) Mutate(&m, &rng);
        auto r = CuckooFilter::Deserialize(m);
        if (r.ok()) {
          accepted += m != seed;  // a mutation may restore the original
          Exercise(**r, &rng);
        }
      }
    }
  }
  EXPECT_LE(accepted, 5);  // the checksum stops (almost) everything
}

TEST(CuckooFuzzTest, ChecksummedMutationsAreRejectedOrSound) {
  uint64_t rng = 2;
  int accepted = 0, rejected = 0;
  for (uint32_t b : {2u, 4u, 8u}) {
    for (uint32_t f : {8u, 12u, 16u}) {
      const std::string seed = Seed(b, f, 30);
      auto env = OpenEnvelope(seed);
      ASSERT_TRUE(env.ok());
      const std::string params(env->params), body(env->body);
      for (int iter = 0; iter < 1500; ++iter) {
        std::string p = params, bd = body;
        const int n = 1 + static_cast<int>(SplitMix64(&rng) % 3);
        for (int k = 0; k < n; ++k)
          Mutate(SplitMix64(&rng) % 2 ? &p : &bd, &rng);
        std::string m;
        BeginEnvelope(FilterType::kCuckoo, 1, p, bd.size(), &m);
        m += bd;
        FinishEnvelope(&m);
        auto r = CuckooFilter::Deserialize(m);
        if (r.ok()) {
          ++accepted;  // e.g. a changed seed or deletes count: still valid
          Exercise(**r, &rng);
        } else {
          ++rejected;
          ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
        }
      }
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 0);
}

TEST(CuckooFuzzTest, RandomGarbageNeverCrashes) {
  uint64_t rng = 3;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string g(SplitMix64(&rng) % 200, '\0');
    for (char& c : g) c = static_cast<char>(SplitMix64(&rng));
    if (iter % 2 == 0 && g.size() >= 4) g.replace(0, 4, "SFLT");
    EXPECT_FALSE(CuckooFilter::Deserialize(g).ok());
  }
}

}  // namespace
}  // namespace shardfilter
