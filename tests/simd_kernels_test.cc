// The AVX2 kernels that builds for the build machine's CPU inline
// (SHARDFILTER_NATIVE, or a user's -mavx2) answer as the portable ones do:
// this file is compiled with -mavx2 (tests/CMakeLists.txt), so its inline
// paths are the AVX2 ones, while the library's are whatever the build
// chose; the scalar forms are the reference. Skipped on a CPU without AVX2.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/detail/bloom_kernels.h"
#include "shardfilter/filters/detail/counting_simd.h"
#include "shardfilter/filters/detail/split_block.h"
#include "test_util.h"

namespace shardfilter {
namespace {

bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}

uint64_t Next(uint64_t* s) {  // SplitMix64
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A counting block whose nibbles are 0, 1, 15 or random, a quarter each:
// zero counters (a remove's refusal), saturated ones (sticky) and keys
// sharing counters all occur.
[[maybe_unused]] void FillCountingBlock(std::atomic<uint64_t> (&block)[8],
                                        uint64_t* s) {
  for (auto& w : block) {
    uint64_t v = 0;
    uint64_t r = Next(s);
    for (int n = 0; n < 16; ++n, r >>= 4) {
      const uint64_t pick = r & 3;
      const uint64_t nibble = pick == 0   ? 0
                              : pick == 1 ? 1
                              : pick == 2 ? 15
                                          : (r >> 2) & 15;
      v |= nibble << (4 * n);
    }
    w.store(v);
  }
}

// The writers' reference: CounterMasks and the scalar loops.
struct ScalarCounting {
  static bool Add(std::atomic<uint64_t>* b, uint32_t h32, uint32_t k) {
    uint64_t m[internal::kBlockWords];
    internal::CounterMasks(h32, k, m);
    return internal::CounterIncrementLocked(b, m);
  }
  static uint32_t AddCapped(std::atomic<uint64_t>* b, uint32_t h32, uint32_t k,
                            uint32_t cap) {
    uint64_t m[internal::kBlockWords];
    const uint32_t min = internal::CounterMasksAndMin(b, h32, k, m);
    if (min < cap) internal::CounterIncrementLocked(b, m);
    return min;
  }
  static bool Remove(std::atomic<uint64_t>* b, uint32_t h32, uint32_t k) {
    uint64_t m[internal::kBlockWords];
    internal::CounterMasks(h32, k, m);
    return internal::CounterDecrementLocked(b, m);
  }
};

// Runs add, capped add (caps 0, 1, the minimum, above it, none) and remove
// through `kernels` and through the scalar loops on the same blocks, for
// every k the kernels take (1..8), and compares every word and result. An
// add's result is whether a counter grew: false exactly when the key's
// counters were all saturated (their minimum 15), as the sharded engine's
// sole-writer add relies on (AddHashUnlessSaturatedSoleWriter); every
// fourth add finds the key's counters saturated, the others random ones.
template <typename Kernels>
void ExpectCountingWritersMatchScalar(uint64_t seed) {
  alignas(64) std::atomic<uint64_t> a[8], b[8];
  alignas(32) uint32_t mult[8];
  uint64_t s = seed;
  for (uint32_t k = 1; k <= 8; ++k) {
    SCOPED_TRACE(k);
    for (uint32_t i = 0; i < 8; ++i) {
      mult[i] = internal::kProbeMultipliers[i < k ? i : 0];
    }
    int removed = 0, capped = 0, saturated = 0;
    for (int round = 0; round < 20000; ++round) {
      FillCountingBlock(a, &s);
      for (int w = 0; w < 8; ++w) b[w].store(a[w].load());
      const auto h32 = static_cast<uint32_t>(Next(&s));
      const auto same = [&](const char* op) {
        for (int w = 0; w < 8; ++w) {
          ASSERT_EQ(a[w].load(), b[w].load())
              << op << " round " << round << " word " << w;
        }
      };
      const uint32_t min = internal::CounterMin(a, h32, k);
      const uint32_t caps[] = {0, 1, min, min + 1, UINT32_MAX};
      const uint32_t cap = caps[round % 5];
      const uint32_t got = Kernels::AddCapped(a, mult, h32, k, cap);
      ASSERT_EQ(got, ScalarCounting::AddCapped(b, h32, k, cap)) << round;
      ASSERT_EQ(got, min);
      capped += min >= cap;
      same("capped add");
      if (round % 4 == 0) {  // the key's counters all at 15
        uint64_t m[internal::kBlockWords];
        internal::CounterMasks(h32, k, m);
        for (int w = 0; w < 8; ++w) {
          a[w].store(a[w].load() | m[w] * 15);
          b[w].store(a[w].load());
        }
      }
      const bool grows =
          internal::CounterMin(a, h32, k) < internal::kCounterMax;
      saturated += !grows;
      const bool added = Kernels::Add(a, mult, h32, k);
      ASSERT_EQ(added, grows) << round;
      ASSERT_EQ(ScalarCounting::Add(b, h32, k), grows) << round;
      same("add");
      FillCountingBlock(a, &s);  // fresh, with zeros, for the remove
      for (int w = 0; w < 8; ++w) b[w].store(a[w].load());
      const bool r = Kernels::Remove(a, mult, h32, k);
      ASSERT_EQ(r, ScalarCounting::Remove(b, h32, k)) << round;
      removed += r;
      same("remove");
    }
    EXPECT_GT(removed, 0);  // removes both done and refused
    EXPECT_LT(removed, 20000);
    EXPECT_GT(capped, 0);  // capped adds both refused and done
    EXPECT_LT(capped, 20000);
    EXPECT_GE(saturated, 5000);  // adds both refused and done
    EXPECT_LT(saturated, 20000);
  }
}

#if SHARDFILTER_SPLIT_AVX2_INLINE
TEST(SimdKernels, SplitBlockQueryAndAddMatchTheScalarForms) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2";
  alignas(64) std::atomic<uint64_t> a[4], b[4];
  uint64_t s = 1;
  for (int round = 0; round < 20000; ++round) {
    // Blocks from empty to dense (the AND of 0..3 random words).
    const int density = round % 4;
    for (int w = 0; w < 4; ++w) {
      uint64_t v = Next(&s);
      for (int d = 0; d < density; ++d) v |= Next(&s);
      a[w].store(v);
      b[w].store(v);
    }
    const auto h32 = static_cast<uint32_t>(Next(&s));
    ASSERT_EQ(internal::SplitMayContain(a, h32),
              internal::SplitMayContainScalar(a, h32));
    ASSERT_EQ(internal::SplitAdd(a, h32), internal::SplitAddScalar(b, h32));
    for (int w = 0; w < 4; ++w) ASSERT_EQ(a[w].load(), b[w].load()) << w;
    ASSERT_TRUE(internal::SplitMayContain(a, h32));
    ASSERT_FALSE(internal::SplitAdd(a, h32));
  }
}

// The AVX2 counting query against the scalar minimum, for every k the
// vector path takes (1..8) and one it leaves to the loop (9), over filters
// with zeros made by removes.
TEST(SimdKernels, CountingQueryMatchesTheScalarMinimum) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2";
  for (uint32_t k = 1; k <= 9; ++k) {
    SCOPED_TRACE(k);
    CountingBloomOptions o;
    o.capacity = 2000;
    o.fpp = 0.01;
    o.k = k;
    auto f = CountingBloomFilter::Create(o);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    CountingBloomFilter& c = **f;
    for (uint64_t i = 0; i < 3000; ++i) c.Add(testing::Key(30, i));
    for (uint64_t i = 0; i < 3000; i += 3) {
      (void)c.Remove(testing::Key(30, i));
    }
    uint64_t s = k;
    int agree_true = 0;
    for (int q = 0; q < 50000; ++q) {
      const uint64_t h = Next(&s);
      const bool simd = c.MayContainHashInline(h);
      ASSERT_EQ(simd, c.CountHashInline(h) != 0) << q;
      agree_true += simd;
    }
    for (uint64_t i = 1; i < 3000; i += 3) {
      ASSERT_TRUE(c.MayContain(testing::Key(30, i))) << i;
    }
    EXPECT_GT(agree_true, 0);  // the dense filter answers both ways
    EXPECT_LT(agree_true, 50000);
  }
}

// The counting writers' AVX2 kernels, inline, against the scalar loops.
struct InlineCounting {
  static bool Add(std::atomic<uint64_t>* b, const uint32_t* mult, uint32_t h32,
                  uint32_t /*k*/) {
    return internal::CountersAddAvx2(b, mult, h32);
  }
  static uint32_t AddCapped(std::atomic<uint64_t>* b, const uint32_t* mult,
                            uint32_t h32, uint32_t /*k*/, uint32_t cap) {
    return internal::CountersAddCappedAvx2(b, mult, h32, cap);
  }
  static bool Remove(std::atomic<uint64_t>* b, const uint32_t* mult,
                     uint32_t h32, uint32_t /*k*/) {
    return internal::CountersRemoveAvx2(b, mult, h32);
  }
};
TEST(SimdKernels, CountingWritersMatchTheScalarLoops) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2";
  ExpectCountingWritersMatchScalar<InlineCounting>(21);
}

// The AVX-512 writers (inline in a native build on a CPU that has them),
// against the scalar loops, on any build where this CPU has them.
struct Avx512Counting {
  static bool Add(std::atomic<uint64_t>* b, const uint32_t* mult, uint32_t h32,
                  uint32_t /*k*/) {
    return internal::CountersAddAvx512(b, mult, h32);
  }
  static uint32_t AddCapped(std::atomic<uint64_t>* b, const uint32_t* mult,
                            uint32_t h32, uint32_t /*k*/, uint32_t cap) {
    return internal::CountersAddCappedAvx512(b, mult, h32, cap);
  }
  static bool Remove(std::atomic<uint64_t>* b, const uint32_t* mult,
                     uint32_t h32, uint32_t /*k*/) {
    return internal::CountersRemoveAvx512(b, mult, h32);
  }
};
TEST(SimdKernels, CountingAvx512WritersMatchTheScalarLoops) {
  if (!internal::CpuHasAvx512Counting()) {
    GTEST_SKIP() << "no AVX-512 F, BW, VL and BITALG";
  }
  ExpectCountingWritersMatchScalar<Avx512Counting>(25);
}
#endif

#if SHARDFILTER_SPLIT_AVX2
// The out-of-line forms a portable build calls (the package's library):
// the CPU check ran at load, and the dispatched counting query answers as
// the scalar minimum does for every k it takes (1..8), on blocks from
// empty to saturated; the split-block dispatch as its scalar form.
TEST(SimdKernels, DispatchedKernelsMatchTheScalarForms) {
  EXPECT_EQ(internal::CpuHasAvx2(), CpuHasAvx2());
  alignas(64) std::atomic<uint64_t> block[8];
  alignas(32) uint32_t mult[8];
  uint64_t s = 7;
  for (uint32_t k = 1; k <= 8; ++k) {
    SCOPED_TRACE(k);
    for (uint32_t i = 0; i < 8; ++i) {
      mult[i] = internal::kProbeMultipliers[i < k ? i : 0];
    }
    int non_zero = 0;
    for (int round = 0; round < 20000; ++round) {
      // Nibbles zero with probability 1/2, 1/4, 1/8 or 1/16 by round.
      const int density = round % 4;
      for (auto& w : block) {
        uint64_t v = Next(&s);
        for (int d = 0; d < density; ++d) v |= Next(&s);
        w.store(v);
      }
      const auto h32 = static_cast<uint32_t>(Next(&s));
      const bool want = internal::CounterMin(block, h32, k) != 0;
      ASSERT_EQ(internal::CountersNonZeroDispatch(block, mult, h32, k), want)
          << round;
      if (internal::CpuHasAvx512Counting()) {
        ASSERT_EQ(internal::CountersNonZeroAvx512(block, mult, h32), want)
            << round;
      }
      non_zero += want;
      ASSERT_EQ(internal::SplitMayContainDispatch(block, h32),
                internal::SplitMayContainScalar(block, h32))
          << round;
    }
    EXPECT_GT(non_zero, 0);  // both answers occur
    EXPECT_LT(non_zero, 20000);
  }
}

// The counting writers as a portable build calls them: through the kernels
// chosen at load (the AVX2 ones on this CPU if it has AVX2, the AVX-512
// ones if it has those).
struct DispatchedCounting {
  static bool Add(std::atomic<uint64_t>* b, const uint32_t* mult, uint32_t h32,
                  uint32_t k) {
    return internal::g_counters_add_kernel.load()(b, mult, h32, k);
  }
  static uint32_t AddCapped(std::atomic<uint64_t>* b, const uint32_t* mult,
                            uint32_t h32, uint32_t k, uint32_t cap) {
    return internal::g_counters_add_capped_kernel.load()(b, mult, h32, k, cap);
  }
  static bool Remove(std::atomic<uint64_t>* b, const uint32_t* mult,
                     uint32_t h32, uint32_t k) {
    return internal::g_counters_remove_kernel.load()(b, mult, h32, k);
  }
};
TEST(SimdKernels, DispatchedCountingWritersMatchTheScalarLoops) {
  ExpectCountingWritersMatchScalar<DispatchedCounting>(23);
}
#endif

// The counting capped add's one pass (CounterMasksAndMin) gives the masks
// and the minimum the two separate kernels give, for every k, on blocks
// from empty to saturated.
TEST(SimdKernels, CountingMasksAndMinMatchTheSeparateKernels) {
  alignas(64) std::atomic<uint64_t> block[8];
  uint64_t s = 11;
  for (uint32_t k = 1; k <= 16; ++k) {
    SCOPED_TRACE(k);
    uint32_t mins_seen = 0;
    for (int round = 0; round < 5000; ++round) {
      const int density = round % 4;
      for (auto& w : block) {
        uint64_t v = Next(&s);
        for (int d = 0; d < density; ++d) v |= Next(&s);
        w.store(round % 5 == 0 ? ~uint64_t{0} : v);  // some saturated
      }
      const auto h32 = static_cast<uint32_t>(Next(&s));
      uint64_t want[internal::kBlockWords], got[internal::kBlockWords];
      internal::CounterMasks(h32, k, want);
      const uint32_t min = internal::CounterMasksAndMin(block, h32, k, got);
      ASSERT_EQ(min, internal::CounterMin(block, h32, k)) << round;
      for (uint32_t w = 0; w < internal::kBlockWords; ++w) {
        ASSERT_EQ(got[w], want[w]) << round << " word " << w;
      }
      mins_seen |= 1u << min;
    }
    EXPECT_NE(mins_seen & 1u, 0u);          // a zero counter occurred
    EXPECT_NE(mins_seen & (1u << 15), 0u);  // and a saturated key
  }
}

#if !SHARDFILTER_SPLIT_AVX2_INLINE
TEST(SimdKernels, BuiltWithoutAvx2Inline) {
  GTEST_SKIP() << "this build does not inline the AVX2 kernels (TSan)";
}
#endif

}  // namespace
}  // namespace shardfilter
