// The counting Bloom filter's query in AVX2: whether all of a key's k <= 8
// counters (filters/detail/bloom_kernels.h, "Counting Bloom") are
// non-zero, with the eight positions computed in one vector multiply and
// the eight nibbles fetched from the 64-byte block with two in-register
// permutes, instead of a loop of k loads, shifts and compares (callgrind,
// one-at-a-time query of a 1e6 filter at 1%, k = 7, loop and XXH3
// included: 146 instructions with the scalar loop, 50 with this kernel; at
// 5e7 keys a quarter to a third of the scalar loop's time,
// docs/performance.md).
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
// The writers' kernels (add, capped add, remove) update the key's counters
// with the same positions, in two 32-byte halves instead of the scalar
// loop's per-word masks and branches: every instruction an add spends
// shrinks how many adds' misses a one-at-a-time loop overlaps (see
// "Writers" below for the figures). On a CPU with AVX-512 F, BW, VL and
// BITALG they run in one 64-byte register instead ("Writers in AVX-512").
//
// Thread-safe: the query is a pure function over atomics; the writers'
// kernels REQUIRE the block's stripe lock (CountingBloomFilter).
#ifndef SHARDFILTER_FILTERS_DETAIL_COUNTING_SIMD_H_
#define SHARDFILTER_FILTERS_DETAIL_COUNTING_SIMD_H_

#include <atomic>
#include <cstdint>

#include "shardfilter/filters/detail/split_block.h"  // the AVX2 switch

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

// ---- Writers ----------------------------------------------------------------
//
// The key's counters as a 64-byte increment (lo: bytes 0-31 of the block,
// hi: 32-63): byte i holds counters 2i (low nibble) and 2i + 1 (high), and
// the increment has a 1 in the nibble of each of the key's counters, once
// even when two probes share a counter, as CounterMasks ORs them (adds and
// removes of every build must move the same counters by the same amount).
// Built as the 128-bit set of the key's counters, then spread to nibbles:
// vpsllvq gives 0 for shifts of 64 or more, so 1 << c lands in the low
// 64 bits iff c < 64, and 1 << (c - 64), c - 64 wrapping to 2^32 - x as an
// unsigned 32-bit lane, in the high 64 bits iff c >= 64; the eight lanes are
// OR-ed (lanes i >= k repeat lane 0's counter, which the set has anyway).
// Then byte i of the increment takes bits 2i and 2i + 1 of the set (a byte
// shuffle from set byte i / 4 and two compares).
//
// Why the writers run these kernels rather than the scalar loop: at 5e7
// keys, 1% (k = 6), -march=native, a one-at-a-time raw add takes 0.62x the
// scalar loop's time and the handle's add 0.64x; within the kernel, the
// write-back in two vector stores (not eight extracts and atomic stores),
// the saturation test in two shifts and two ANDs and the spread by a
// vpshufb table are 31 instructions fewer an add (callgrind), 1.2x the
// adds/s at 5e7 and 1.3x at 1e6 (bloom_bench BM_Add, counting, native,
// medians of 5 alternating runs; docs/performance.md).

// The key's eight counter positions (0..127), one per 32-bit lane.
SHARDFILTER_TARGET_AVX2 inline __m256i CounterPositionsAvx2(
    const uint32_t* mult, uint32_t h32) {
  const __m256i m = _mm256_load_si256(reinterpret_cast<const __m256i*>(mult));
  return _mm256_srli_epi32(
      _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(h32)), m), 25);
}
// OR over the eight lanes of 1 << pos, in four 64-bit lanes to be OR-ed.
SHARDFILTER_TARGET_AVX2 inline __m256i PositionBitsAvx2(__m256i pos) {
  const __m256i one = _mm256_set1_epi64x(1);
  return _mm256_or_si256(
      _mm256_sllv_epi64(one,
                        _mm256_cvtepu32_epi64(_mm256_castsi256_si128(pos))),
      _mm256_sllv_epi64(
          one, _mm256_cvtepu32_epi64(_mm256_extracti128_si256(pos, 1))));
}
// Byte i of x (set byte i / 4) to the increment's byte i: 0x01 if set bit
// 2 (i mod 4) (the byte's low-nibble counter), | 0x10 if bit 2 (i mod 4) + 1.
// The byte's two bits kept in place (m = x & 0x03, 0x0c, 0x30 or 0xc0 as i
// mod 4) are its low nibble's 0..3 or 0, 4, 8, 12 for i mod 4 = 0, 1 and its
// high nibble's for 2, 3, so one 16-entry table (vpshufb) looked up by each
// nibble, OR-ed, gives the byte: six instructions against seven with masks
// and compares. The low nibble's lookup needs no mask: a byte with bit 7 set
// (i mod 4 = 3) has low nibble 0, and vpshufb gives 0, the table's entry 0.
SHARDFILTER_TARGET_AVX2 inline __m256i SpreadToNibblesAvx2(__m256i x) {
  const __m256i pair = _mm256_set1_epi32(static_cast<int>(0xc0300c03U));
  const __m256i table = _mm256_setr_epi8(
      0, 0x01, 0x10, 0x11, 0x01, 0, 0, 0, 0x10, 0, 0, 0, 0x11, 0, 0, 0,  //
      0, 0x01, 0x10, 0x11, 0x01, 0, 0, 0, 0x10, 0, 0, 0, 0x11, 0, 0, 0);
  const __m256i m = _mm256_and_si256(x, pair);
  const __m256i high =
      _mm256_and_si256(_mm256_srli_epi16(m, 4), _mm256_set1_epi8(0x0f));
  return _mm256_or_si256(_mm256_shuffle_epi8(table, m),
                         _mm256_shuffle_epi8(table, high));
}
// The increment of the counters at positions c (lanes), into *lo, *hi.
SHARDFILTER_TARGET_AVX2 inline void CounterIncrementAvx2(__m256i c,
                                                         __m256i* inc_lo,
                                                         __m256i* inc_hi) {
  const __m256i lo = PositionBitsAvx2(c);  // the set's low 64 bits, partial
  const __m256i hi =
      PositionBitsAvx2(_mm256_sub_epi32(c, _mm256_set1_epi32(64)));
  const __m256i t = _mm256_or_si256(_mm256_unpacklo_epi64(lo, hi),
                                    _mm256_unpackhi_epi64(lo, hi));
  const __m128i set =
      _mm_or_si128(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
  const __m256i both = _mm256_broadcastsi128_si256(set);
  // Byte i of a half from set byte i / 4 (the shuffle stays in its 128-bit
  // lane, and both lanes hold the whole set).
  const __m256i from_lo =
      _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,  //
                       4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
  const __m256i from_hi = _mm256_add_epi8(from_lo, _mm256_set1_epi8(8));
  *inc_lo = SpreadToNibblesAvx2(_mm256_shuffle_epi8(both, from_lo));
  *inc_hi = SpreadToNibblesAvx2(_mm256_shuffle_epi8(both, from_hi));
}

// Low bit of each nibble set iff the nibble is 15 (other bits: noise, which
// the increment's nibble-low bits mask away); as SaturatedNibbles.
// Bit 0 of t = v & v >> 1 is bits 0 and 1 of v; of t & t >> 2, bits 0-3:
// two shifts and two ANDs instead of three and three.
SHARDFILTER_TARGET_AVX2 inline __m256i SaturatedNibblesAvx2(__m256i v) {
  const __m256i t = _mm256_and_si256(v, _mm256_srli_epi64(v, 1));
  return _mm256_and_si256(t, _mm256_srli_epi64(t, 2));
}
// Low bit of each nibble set iff the nibble is non-zero (other bits: noise;
// as above, with OR).
SHARDFILTER_TARGET_AVX2 inline __m256i NonZeroNibblesAvx2(__m256i v) {
  const __m256i t = _mm256_or_si256(v, _mm256_srli_epi64(v, 1));
  return _mm256_or_si256(t, _mm256_srli_epi64(t, 2));
}

// Memory order: the stripe lock's holder is the block's only writer, so its
// vector load reads the words as the last holder left them (the lock's
// acquire/release orders them) and races with no write. It writes back all
// eight words, unchanged ones included, with two aligned 32-byte stores: x86
// performs an aligned vector store as stores of aligned 8-byte parts, each
// of which a reader's 8-byte load (or the query's vector load, above) sees
// whole, old or new, never torn (the argument the query's vector load makes,
// and split_block.h's; an unchanged word is rewritten with the value it has).
// Not a C++ atomic access: TSan builds take the scalar path. Eight relaxed
// 64-bit atomic stores, each after an extract from the vector, cost ~18
// more instructions an add (bloom_bench BM_CountingAddFloor measures both).
SHARDFILTER_TARGET_AVX2 inline void StoreBlockAvx2(std::atomic<uint64_t>* block,
                                                   __m256i lo, __m256i hi) {
  auto* p = reinterpret_cast<__m256i*>(block);
  _mm256_store_si256(p, lo);
  _mm256_store_si256(p + 1, hi);
}

// Writes back the halves lo, hi plus the increment, less its nibbles that
// are saturated in them (no carry crosses a nibble: the rest are < 15).
// False when that left nothing to add: every counter of the increment was
// saturated (the block is written back unchanged).
SHARDFILTER_TARGET_AVX2 inline bool StoreIncrementedAvx2(
    std::atomic<uint64_t>* block, __m256i lo, __m256i hi, __m256i inc_lo,
    __m256i inc_hi) {
  const __m256i add_lo = _mm256_andnot_si256(SaturatedNibblesAvx2(lo), inc_lo);
  const __m256i add_hi = _mm256_andnot_si256(SaturatedNibblesAvx2(hi), inc_hi);
  StoreBlockAvx2(block, _mm256_add_epi64(lo, add_lo),
                 _mm256_add_epi64(hi, add_hi));
  const __m256i any = _mm256_or_si256(add_lo, add_hi);
  return _mm256_testz_si256(any, any) == 0;
}

// REQUIRES (these three): the block's stripe lock held; k <= 8; `mult` as
// for the query.
//
// Adds one to each of the key's counters below 15 (saturated ones stay).
// False when every one of them was saturated (nothing changed; callers that
// do not ask pay nothing for it inline). As CounterMasks +
// CounterIncrementLocked.
SHARDFILTER_TARGET_AVX2 inline bool CountersAddAvx2(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32) {
  __m256i inc_lo, inc_hi;
  CounterIncrementAvx2(CounterPositionsAvx2(mult, h32), &inc_lo, &inc_hi);
  const auto* p = reinterpret_cast<const __m256i*>(block);
  return StoreIncrementedAvx2(block, _mm256_load_si256(p),
                              _mm256_load_si256(p + 1), inc_lo, inc_hi);
}

// Returns the minimum of the key's counters and adds one to them (as
// above) iff it is below `cap`. As CounterMasksAndMin + the add.
SHARDFILTER_TARGET_AVX2 inline uint32_t CountersAddCappedAvx2(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t cap) {
  const auto* p = reinterpret_cast<const __m256i*>(block);
  const __m256i lo = _mm256_load_si256(p);
  const __m256i hi = _mm256_load_si256(p + 1);
  // The key's eight counters, as the query reads them.
  const __m256i c = CounterPositionsAvx2(mult, h32);
  const __m256i dword = _mm256_srli_epi32(c, 3);
  const __m256i shift = _mm256_srli_epi32(_mm256_slli_epi32(c, 29), 27);
  const __m256i word = _mm256_castps_si256(_mm256_blendv_ps(
      _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, dword)),
      _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, dword)),
      _mm256_castsi256_ps(_mm256_slli_epi32(dword, 28))));
  __m256i n =
      _mm256_and_si256(_mm256_srlv_epi32(word, shift), _mm256_set1_epi32(15));
  n = _mm256_min_epu32(n, _mm256_shuffle_epi32(n, 0x4E));  // swap pairs
  n = _mm256_min_epu32(n, _mm256_shuffle_epi32(n, 0xB1));  // swap neighbours
  const auto min = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_min_epu32(
      _mm256_castsi256_si128(n), _mm256_extracti128_si256(n, 1))));
  if (min >= cap) return min;
  __m256i inc_lo, inc_hi;
  CounterIncrementAvx2(c, &inc_lo, &inc_hi);
  StoreIncrementedAvx2(block, lo, hi, inc_lo, inc_hi);
  return min;
}

// Takes one from each of the key's counters that is not saturated, or,
// if one of them is zero (the key is definitely absent), changes nothing
// and returns false. As CounterMasks + CounterDecrementLocked.
SHARDFILTER_TARGET_AVX2 inline bool CountersRemoveAvx2(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32) {
  __m256i inc_lo, inc_hi;
  CounterIncrementAvx2(CounterPositionsAvx2(mult, h32), &inc_lo, &inc_hi);
  const auto* p = reinterpret_cast<const __m256i*>(block);
  const __m256i lo = _mm256_load_si256(p);
  const __m256i hi = _mm256_load_si256(p + 1);
  const __m256i zero_lo = _mm256_andnot_si256(NonZeroNibblesAvx2(lo), inc_lo);
  const __m256i zero_hi = _mm256_andnot_si256(NonZeroNibblesAvx2(hi), inc_hi);
  const __m256i zero = _mm256_or_si256(zero_lo, zero_hi);
  if (!_mm256_testz_si256(zero, zero)) return false;
  // No borrow crosses a nibble: every selected nibble is >= 1.
  StoreBlockAvx2(block,
                 _mm256_sub_epi64(
                     lo, _mm256_andnot_si256(SaturatedNibblesAvx2(lo), inc_lo)),
                 _mm256_sub_epi64(hi, _mm256_andnot_si256(
                                          SaturatedNibblesAvx2(hi), inc_hi)));
  return true;
}
#endif

// ---- Query and writers in AVX-512 (F, BW, VL and BITALG) --------------------
//
// The same answers and updates as the AVX2 kernels above, the block in one
// register
// and the increment built in fewer steps: the 128-bit set of the key's
// counters as above (lanes 1 << c for c < 64 and 1 << (c - 64), OR-ed over
// the eight lanes), its low 64 bits copied to quadwords 0-3 and its high
// ones to 4-7, so that quadword q holds the bits of counters 16q .. 16q + 15
// (block word q's) at 16 (q mod 4) + 0..15; vpshufbitqmb then takes bits
// 2j and 2j + 1 (mod 64) of byte j's quadword into the masks of the
// increment's low and high nibbles, and two masked byte moves make the
// increment (against the AVX2 form's two-stage shuffle, compares and
// masks). Memory order as StoreBlockAvx2's: the lock holder's aligned
// 64-byte load and store are loads and stores of aligned 8-byte parts.
//
// Inline in builds for these extensions (SHARDFILTER_NATIVE on a CPU that
// has them); defined in every x86 build outside TSan, so that the tests
// check them against the scalar loops wherever the CPU has them
// (CpuHasAvx512Counting). bloom_bench BM_Add, counting, native, medians of
// 5 alternating runs against the AVX2 kernel: 1.16x the adds/s at 5e7,
// 1.14x at 1e6.
#if SHARDFILTER_SPLIT_AVX2
// g++ 12's AVX-512 intrinsics pass an "undefined" vector as the unused
// merge source of their masked builtins and warn that it is used
// uninitialized where a function built for AVX-512 inlines them into a
// translation unit that is not (GCC bug 105593): silenced for these
// kernels only. Clang has no -Wmaybe-uninitialized, and names an unknown
// group in a pragma a warning of its own (an error in a user's -Werror
// build: this header is installed), so only g++ is told of it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define SHARDFILTER_TARGET_AVX512_COUNTING \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bitalg")))
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512BITALG__)
#define SHARDFILTER_COUNTING_AVX512_INLINE 1
#endif

// The increment of the counters at positions c (lanes), as
// CounterIncrementAvx2's two halves in one register.
SHARDFILTER_TARGET_AVX512_COUNTING inline __m512i CounterIncrementAvx512(
    __m256i c) {
  const __m512i c64 = _mm512_cvtepu32_epi64(c);
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i lo = _mm512_sllv_epi64(one, c64);  // 0 for c >= 64
  const __m512i hi =  // 0 for c < 64: the shift wraps past 63
      _mm512_sllv_epi64(one, _mm512_sub_epi64(c64, _mm512_set1_epi64(64)));
  // Each 128-bit lane: its two positions' (low, high) halves, then the
  // lanes OR-ed across: every lane holds the set (low, high).
  __m512i set = _mm512_or_si512(_mm512_unpacklo_epi64(lo, hi),
                                _mm512_unpackhi_epi64(lo, hi));
  set = _mm512_or_si512(set, _mm512_shuffle_i64x2(set, set, 0xB1));
  set = _mm512_or_si512(set, _mm512_shuffle_i64x2(set, set, 0x4E));
  set =
      _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1), set);
  // Byte j: bit 2j mod 64 (the low nibble's counter) and the next.
  const __m512i even = _mm512_set1_epi64(0x0e0c0a0806040200LL);
  const __m512i step = _mm512_setr_epi64(
      0, 0x1010101010101010LL, 0x2020202020202020LL, 0x3030303030303030LL, 0,
      0x1010101010101010LL, 0x2020202020202020LL, 0x3030303030303030LL);
  const __m512i idx = _mm512_add_epi8(even, step);
  const __mmask64 low = _mm512_bitshuffle_epi64_mask(set, idx);
  const __mmask64 high = _mm512_bitshuffle_epi64_mask(
      set, _mm512_add_epi8(idx, _mm512_set1_epi8(1)));
  const __m512i inc = _mm512_maskz_mov_epi8(low, _mm512_set1_epi8(0x01));
  return _mm512_mask_add_epi8(inc, high, inc, _mm512_set1_epi8(0x10));
}
// As SaturatedNibblesAvx2 / NonZeroNibblesAvx2.
SHARDFILTER_TARGET_AVX512_COUNTING inline __m512i SaturatedNibblesAvx512(
    __m512i v) {
  const __m512i t = _mm512_and_si512(v, _mm512_srli_epi64(v, 1));
  return _mm512_and_si512(t, _mm512_srli_epi64(t, 2));
}
SHARDFILTER_TARGET_AVX512_COUNTING inline __m512i NonZeroNibblesAvx512(
    __m512i v) {
  const __m512i t = _mm512_or_si512(v, _mm512_srli_epi64(v, 1));
  return _mm512_or_si512(t, _mm512_srli_epi64(t, 2));
}

// The query, as CountersNonZeroAvx2: the key's eight counters read with
// one vpermd of the block's sixteen dwords (one 64-byte load) instead of
// two and a blend, their zero test one vptestnmd. Memory order as the
// AVX2 query's: an aligned vector load is loads of aligned 8-byte parts.
// bloom_bench BM_Query, counting, absent keys, native, medians of 5
// alternating runs against the AVX2 kernel: 1.22x the queries/s at 1e6,
// 1.11x at 5e7.
SHARDFILTER_TARGET_AVX512_COUNTING inline bool CountersNonZeroAvx512(
    const std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32) {
  const __m256i c = CounterPositionsAvx2(mult, h32);
  const __m512i v = _mm512_load_si512(block);
  const __m256i word = _mm512_castsi512_si256(_mm512_permutexvar_epi32(
      _mm512_castsi256_si512(_mm256_srli_epi32(c, 3)), v));
  const __m256i shift = _mm256_srli_epi32(_mm256_slli_epi32(c, 29), 27);
  return _mm256_testn_epi32_mask(_mm256_srlv_epi32(word, shift),
                                 _mm256_set1_epi32(15)) == 0;
}

// REQUIRES (these three) as the AVX2 writers': the block's stripe lock
// held; k <= 8; `mult` as for the query. The same updates and results.
SHARDFILTER_TARGET_AVX512_COUNTING inline bool CountersAddAvx512(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32) {
  const __m512i inc = CounterIncrementAvx512(CounterPositionsAvx2(mult, h32));
  auto* p = reinterpret_cast<__m512i*>(block);
  const __m512i v = _mm512_load_si512(p);
  const __m512i add = _mm512_andnot_si512(SaturatedNibblesAvx512(v), inc);
  _mm512_store_si512(p, _mm512_add_epi64(v, add));
  return _mm512_test_epi64_mask(add, add) != 0;
}
SHARDFILTER_TARGET_AVX512_COUNTING inline uint32_t CountersAddCappedAvx512(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t cap) {
  auto* p = reinterpret_cast<__m512i*>(block);
  const __m512i v = _mm512_load_si512(p);
  const __m256i c = CounterPositionsAvx2(mult, h32);
  // The key's eight counters: dword c >> 3 of the block (one permute of
  // its sixteen dwords), nibble c & 7.
  const __m256i word = _mm512_castsi512_si256(_mm512_permutexvar_epi32(
      _mm512_castsi256_si512(_mm256_srli_epi32(c, 3)), v));
  const __m256i shift = _mm256_srli_epi32(_mm256_slli_epi32(c, 29), 27);
  __m256i n =
      _mm256_and_si256(_mm256_srlv_epi32(word, shift), _mm256_set1_epi32(15));
  n = _mm256_min_epu32(n, _mm256_shuffle_epi32(n, 0x4E));
  n = _mm256_min_epu32(n, _mm256_shuffle_epi32(n, 0xB1));
  const auto min = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_min_epu32(
      _mm256_castsi256_si128(n), _mm256_extracti128_si256(n, 1))));
  if (min >= cap) return min;
  const __m512i inc = CounterIncrementAvx512(c);
  _mm512_store_si512(
      p,
      _mm512_add_epi64(v, _mm512_andnot_si512(SaturatedNibblesAvx512(v), inc)));
  return min;
}
SHARDFILTER_TARGET_AVX512_COUNTING inline bool CountersRemoveAvx512(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32) {
  const __m512i inc = CounterIncrementAvx512(CounterPositionsAvx2(mult, h32));
  auto* p = reinterpret_cast<__m512i*>(block);
  const __m512i v = _mm512_load_si512(p);
  const __m512i zero = _mm512_andnot_si512(NonZeroNibblesAvx512(v), inc);
  if (_mm512_test_epi64_mask(zero, zero) != 0) return false;
  // No borrow crosses a nibble: every selected nibble is >= 1.
  _mm512_store_si512(
      p,
      _mm512_sub_epi64(v, _mm512_andnot_si512(SaturatedNibblesAvx512(v), inc)));
  return true;
}
#pragma GCC diagnostic pop
#endif
#ifndef SHARDFILTER_COUNTING_AVX512_INLINE
#define SHARDFILTER_COUNTING_AVX512_INLINE 0
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

// The writers' kernels for callers compiled without AVX2, chosen with the
// query's (filters/counting_bloom_filter.cc): the AVX2 ones above when the
// CPU has AVX2, else the scalar loops of bloom_kernels.h. REQUIRES as the
// kernels: the block's stripe lock held; k <= 8; `mult` as above.
using CountersAddKernel = bool (*)(std::atomic<uint64_t>*, const uint32_t*,
                                   uint32_t, uint32_t);
using CountersAddCappedKernel = uint32_t (*)(std::atomic<uint64_t>*,
                                             const uint32_t*, uint32_t,
                                             uint32_t, uint32_t);
using CountersRemoveKernel = bool (*)(std::atomic<uint64_t>*, const uint32_t*,
                                      uint32_t, uint32_t);
extern std::atomic<CountersAddKernel> g_counters_add_kernel;
extern std::atomic<CountersAddCappedKernel> g_counters_add_capped_kernel;
extern std::atomic<CountersRemoveKernel> g_counters_remove_kernel;

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_COUNTING_SIMD_H_
