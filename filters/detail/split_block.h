// Kernels of the split-block Bloom layout (BloomLayout::kSplitBlock): the
// fewest instructions per one-at-a-time call that a one-miss Bloom probe
// allows, because at DRAM sizes a loop of independent calls runs only as
// fast as the CPU overlaps their misses, and every instruction per call
// shrinks that overlap (docs/performance.md, "The filters, one at a time
// and batched").
//
// Layout (docs/format-bloom.md): blocks of 256 bits (32 bytes, half a cache
// line, so one miss), each eight 32-bit lanes; lane i of a block is bits
// [32 (i & 1), 32 (i & 1) + 32) of the block's 64-bit word i >> 1 (words
// stored little-endian, so on x86 lane i is the i-th uint32 in memory).
// From h = XXH3-64 of the key:
//   block  = FastRange32(h[63:32], blocks)  (as the word-blocked layout)
//   bit_i  = ((uint32(h) * kSplitSalt[i]) mod 2^32) >> 27, i = 0..7
// and the key's eight bits are bit_i of lane i: k = 8, one bit per lane.
// The salts are the odd multipliers of the split block Bloom filter in the
// Apache Parquet format specification (BloomFilter.md), whose layout this
// is (Putze, Sanders, Singler 2007: "one bit per word" blocked Bloom).
//
// FPR: a block holds Poisson(lambda = n / blocks) keys; with j keys a lane
// has bit b set with probability 1 - (31/32)^j, independently per lane, so
//   FPR = sum_j Poisson(j; lambda) (1 - (31/32)^j)^8   (SplitBlockFpr).
// Bits per item for a target (filters/sizing.h has the table): 10.53 at 1%
// against 10.18 for the word-blocked layout and 9.57 classic; 16.89 at
// 0.1% against 15.78. BloomLayout::kAuto takes this layout where it costs
// at most 5% more memory than the word-blocked one.
//
// Cost (callgrind, instructions per one-at-a-time query including the
// caller's loop, a filter of 1e6 keys at 1%): AVX2 inline 16 for the
// kernel, 38 with XXH3 of an 8-byte key (the word-blocked layout: 65 and
// 98); a portable build's one indirect call to the AVX2 kernel 31 and 56.
//
// Memory order: as the word-blocked kernels (filters/detail/
// bloom_kernels.h). Bits are only ever set, each by an atomic fetch_or of a
// whole aligned 64-bit word; a query reads them with relaxed loads, or, in
// the AVX2 path, with one aligned 32-byte vector load. x86 performs an
// aligned vector load as loads of aligned 8-byte parts, each of which sees a
// value at least as new as any add that happens-before the query
// (coherence), and a bit once set stays set: so the vector load, like the
// relaxed loads, never misses an acknowledged add. It is not a C++ atomic
// access, so TSan builds (which would report it) take the scalar path.
//
// Thread-safe: pure functions over atomics.
#ifndef SHARDFILTER_FILTERS_DETAIL_SPLIT_BLOCK_H_
#define SHARDFILTER_FILTERS_DETAIL_SPLIT_BLOCK_H_

#include <atomic>
#include <cstdint>

#include "shardfilter/filters/detail/tsan.h"

// The AVX2 kernels exist on x86-64 outside TSan builds, compiled for AVX2
// whatever the including file's flags (the portable library calls them once
// the CPU says it has AVX2: filters/split_block.cc); a caller built for
// AVX2 has them inline.
#if defined(__x86_64__) && !SHARDFILTER_TSAN
#include <immintrin.h>
#define SHARDFILTER_SPLIT_AVX2 1
#define SHARDFILTER_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define SHARDFILTER_SPLIT_AVX2 0
#endif
#if SHARDFILTER_SPLIT_AVX2 && defined(__AVX2__)
#define SHARDFILTER_SPLIT_AVX2_INLINE 1
#else
#define SHARDFILTER_SPLIT_AVX2_INLINE 0
#endif

namespace shardfilter::internal {

inline constexpr uint32_t kSplitBlockBytes = 32;
inline constexpr uint32_t kSplitBlockWords = 4;  // 64-bit words
inline constexpr uint32_t kSplitBlockBits = 256;
inline constexpr uint32_t kSplitLanes = 8;  // = k
inline constexpr uint32_t kSplitK = 8;

inline constexpr uint32_t kSplitSalt[kSplitLanes] = {
    0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
    0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};

// Byte offset of h's block: FastRange32(h[63:32], blocks) * 32. blocks <=
// 2^32, so the product fits in 64 bits.
inline uint64_t SplitBlockOffset(uint64_t h, uint64_t blocks) {
  return (((h >> 32) * blocks) >> 32) * kSplitBlockBytes;
}

// The key's bits in word w (lanes 2w and 2w + 1).
inline uint64_t SplitWordMask(uint32_t h32, uint32_t w) {
  const uint32_t lo = (h32 * kSplitSalt[2 * w]) >> 27;
  const uint32_t hi = (h32 * kSplitSalt[2 * w + 1]) >> 27;
  return (uint64_t{1} << lo) | (uint64_t{1} << (hi + 32));
}

// Portable forms: relaxed loads and fetch_or (memory order: above).
inline bool SplitMayContainScalar(const std::atomic<uint64_t>* block,
                                  uint32_t h32) {
  uint64_t missing = 0;
  for (uint32_t w = 0; w < kSplitBlockWords; ++w) {
    missing |=
        SplitWordMask(h32, w) & ~block[w].load(std::memory_order_relaxed);
  }
  return missing == 0;
}
// Returns true if at least one bit was not set already (as this add saw
// the block). Relaxed loads first: a key whose bits are all set costs no
// RMW. Otherwise all four words get their fetch_or, with no branch per
// word: whether a word still lacks a bit is unpredictable while a filter
// fills, and four mispredictable branches per add cost more than the
// locked ORs they skip (a 5e7-key fill, AVX2 masks: 47 ns per add with a
// branch per word, 36-38 ns without; a plain, non-atomic OR of the block,
// which concurrent adds could lose, 13 ns).
inline bool SplitAddScalar(std::atomic<uint64_t>* block, uint32_t h32) {
  uint64_t m[kSplitBlockWords];
  uint64_t missing = 0;
  for (uint32_t w = 0; w < kSplitBlockWords; ++w) {
    m[w] = SplitWordMask(h32, w);
    missing |= m[w] & ~block[w].load(std::memory_order_relaxed);
  }
  if (missing == 0) return false;
  for (uint32_t w = 0; w < kSplitBlockWords; ++w) {
    block[w].fetch_or(m[w], std::memory_order_relaxed);
  }
  return true;
}

// Whether the AVX2 kernels may run: the CPU's answer, asked on the first
// call (a function-local static: right in any order of static
// initialization); false in builds without the kernels.
bool CpuHasAvx2();
// Whether the counting writers' AVX-512 kernels (counting_simd.h) may run:
// the CPU has AVX-512 F, BW, VL and BITALG. Asked as CpuHasAvx2.
bool CpuHasAvx512Counting();

// The forms for code compiled without AVX2 (the portable package): one
// indirect call to the kernel chosen while the library loads (the AVX2
// one when the CPU has AVX2, else the scalar one; the scalar one until
// then, which gives the same answers). A per-call check of the CPU flag
// cost three instructions more (a flag load, a compare and a jump to the
// kernel). filters/split_block.cc.
using SplitQueryKernel = bool (*)(const std::atomic<uint64_t>*, uint32_t);
using SplitAddKernel = bool (*)(std::atomic<uint64_t>*, uint32_t);
extern std::atomic<SplitQueryKernel> g_split_query_kernel;
extern std::atomic<SplitAddKernel> g_split_add_kernel;
inline bool SplitMayContainDispatch(const std::atomic<uint64_t>* block,
                                    uint32_t h32) {
  return g_split_query_kernel.load(std::memory_order_relaxed)(block, h32);
}
inline bool SplitAddDispatch(std::atomic<uint64_t>* block, uint32_t h32) {
  return g_split_add_kernel.load(std::memory_order_relaxed)(block, h32);
}

#if SHARDFILTER_SPLIT_AVX2
// One bit per 32-bit lane: 1 << ((h32 * salt_i) >> 27).
SHARDFILTER_TARGET_AVX2 inline __m256i SplitMaskAvx2(uint32_t h32) {
  const __m256i salt =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kSplitSalt));
  const __m256i bit = _mm256_srli_epi32(
      _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(h32)), salt), 27);
  return _mm256_sllv_epi32(_mm256_set1_epi32(1), bit);
}

// fetch_or of each 64-bit word of `mask` into the block's words, the words
// taken from the register (a store and reloads through the stack cost a
// frame and ~12 instructions more). Always inline (its one caller,
// SplitAddAvx2, is built for AVX2 too): g++ -O3 -march=native leaves it a
// call in the Database handle's add, which has two paths with the ORs
// (side-by-side harness: inline, the handle's Bloom add at 1e6 takes 6%
// less time).
[[gnu::always_inline]] SHARDFILTER_TARGET_AVX2 inline void SplitOrAvx2(
    std::atomic<uint64_t>* block, __m256i mask) {
  block[0].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 0)),
                    std::memory_order_relaxed);
  block[1].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 1)),
                    std::memory_order_relaxed);
  block[2].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 2)),
                    std::memory_order_relaxed);
  block[3].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 3)),
                    std::memory_order_relaxed);
}

SHARDFILTER_TARGET_AVX2 inline bool SplitMayContainAvx2(
    const std::atomic<uint64_t>* block, uint32_t h32) {
  const __m256i have =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(block));
  return _mm256_testc_si256(have, SplitMaskAvx2(h32)) != 0;
}

// As SplitAddScalar: one all-set check, then no branch per word.
SHARDFILTER_TARGET_AVX2 inline bool SplitAddAvx2(std::atomic<uint64_t>* block,
                                                 uint32_t h32) {
  const __m256i mask = SplitMaskAvx2(h32);
  const __m256i have =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(block));
  if (_mm256_testc_si256(have, mask)) return false;  // every bit is set
  SplitOrAvx2(block, mask);
  return true;
}
#endif

// The kernels callers use: inline AVX2 where the caller is compiled for
// it, else the dispatching call.
inline bool SplitMayContain(const std::atomic<uint64_t>* block, uint32_t h32) {
#if SHARDFILTER_SPLIT_AVX2_INLINE
  return SplitMayContainAvx2(block, h32);
#else
  return SplitMayContainDispatch(block, h32);
#endif
}

inline bool SplitAdd(std::atomic<uint64_t>* block, uint32_t h32) {
#if SHARDFILTER_SPLIT_AVX2_INLINE
  return SplitAddAvx2(block, h32);
#else
  return SplitAddDispatch(block, h32);
#endif
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_SPLIT_BLOCK_H_
