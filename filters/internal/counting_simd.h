// The counting Bloom filter's query in AVX2: whether all of a key's k <= 8
// counters (filters/internal/bloom_kernels.h, "Counting Bloom") are
// non-zero, with the eight positions computed in one vector multiply and
// the eight nibbles fetched from the 64-byte block with two in-register
// permutes, instead of a loop of k loads, shifts and compares (callgrind,
// one-at-a-time query of a 1e6 filter at 1%, k = 7, loop and XXH3
// included: 146 instructions scalar, 50 with this kernel; 25.5 ns at 5e7
// keys against 86-101 before, docs/performance.md).
//
// Counter c of a block is nibble c & 7 of its 32-bit word c >> 3 (the same
// bits as nibble c & 15 of 64-bit word c >> 4, words little-endian). Lanes
// i >= k repeat lane 0's multiplier, so they test a counter the key has
// anyway. Memory order: the counters are read with one aligned 32-byte load
// per half line, as split_block.h argues for Bloom bits, but counters also
// go down: a writer replaces whole 64-bit words atomically under its
// stripe lock, and x86 performs an aligned vector load as aligned 8-byte
// loads, each of which returns one of the word's written values, so every
// nibble read is one a writer stored (no torn counter), and an add that
// happens-before the query is seen (coherence). Not a C++ atomic access:
// TSan builds take the scalar path.
//
// A caller compiled for AVX2 has the kernel inline; the portable build's
// callers (the package) make one indirect call, CountersNonZeroDispatch, to
// it once the CPU says it has AVX2 and to the scalar loop otherwise:
// callgrind, portable build, the same query: 146 instructions with the
// scalar loop, 65 with the call.
//
// Thread-safe: pure functions over atomics.
#ifndef SHARDFILTER_FILTERS_INTERNAL_COUNTING_SIMD_H_
#define SHARDFILTER_FILTERS_INTERNAL_COUNTING_SIMD_H_

#include <atomic>
#include <cstdint>

#include "shardfilter/filters/internal/split_block.h"  // the AVX2 switch

namespace shardfilter::internal {

#if SHARDFILTER_SPLIT_AVX2
// `mult`: the key's eight lane multipliers (kProbeMultipliers[i] for i < k,
// kProbeMultipliers[0] beyond), 32-byte aligned. REQUIRES: k <= 8.
SHARDFILTER_TARGET_AVX2 inline bool CountersNonZeroAvx2(
    const std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32) {
  const __m256i m = _mm256_load_si256(reinterpret_cast<const __m256i*>(mult));
  const __m256i c = _mm256_srli_epi32(
      _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(h32)), m), 25);
  const __m256i dword = _mm256_srli_epi32(c, 3);  // 0..15
  // 4 (c & 7), and below the nibble's test, by shifts: a vector constant
  // costs the portable build's out-of-line kernel three instructions a
  // call to make (an inlining caller hoists it out of its loop).
  const __m256i shift = _mm256_srli_epi32(_mm256_slli_epi32(c, 29), 27);
  const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(block));
  const __m256i hi =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(block + 4));
  // vpermd takes the low 3 bits of each index; bit 3 picks the half.
  const __m256i word = _mm256_castps_si256(_mm256_blendv_ps(
      _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, dword)),
      _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, dword)),
      _mm256_castsi256_ps(_mm256_slli_epi32(dword, 28))));
  // The counter's nibble alone, in bits 28-31.
  const __m256i nibble = _mm256_slli_epi32(_mm256_srlv_epi32(word, shift), 28);
  const __m256i zero = _mm256_cmpeq_epi32(nibble, _mm256_setzero_si256());
  return _mm256_testz_si256(zero, zero) != 0;
}
#endif

// For callers compiled without AVX2, as split_block.h's dispatch: one
// indirect call to the AVX2 kernel when the CPU has it, else to whether
// CounterMin (bloom_kernels.h) of the key's k counters is non-zero (chosen
// while the library loads, filters/counting_bloom_filter.cc). REQUIRES:
// k <= 8; `mult` as above.
using CountersNonZeroKernel = bool (*)(const std::atomic<uint64_t>*,
                                       const uint32_t*, uint32_t, uint32_t);
extern std::atomic<CountersNonZeroKernel> g_counters_non_zero_kernel;
inline bool CountersNonZeroDispatch(const std::atomic<uint64_t>* block,
                                    const uint32_t* mult, uint32_t h32,
                                    uint32_t k) {
  return g_counters_non_zero_kernel.load(std::memory_order_relaxed)(block, mult,
                                                                    h32, k);
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_COUNTING_SIMD_H_
