// Bit-level kernels of the Bloom and counting Bloom filters: where a hash's
// bits and counters live, and the lock-free probe/set loops over a table of
// std::atomic<uint64_t> words. Kept apart from the classes that own memory
// (filters/bloom_filter.h, filters/counting_bloom_filter.h), as RocksDB keeps
// util/bloom_impl.h apart from its filter policies.
//
// Hash bit budget (h = XXH3-64 of the key with the filter's seed):
//   h[63:32]  block index, FastRange over the number of blocks;
//   h[31:0]   in-block positions: p_i = top bits of (h32 * C^(i+1)) mod 2^32,
//             C = 0x9e3779b9 (odd, golden ratio); 9 top bits pick one of 512
//             bits, 7 top bits one of 128 four-bit counters. Positions are
//             drawn with replacement; BlockedFpr (filters/sizing.h) models
//             exactly that (D distinct slots among k draws).
// The sharded engine picks shards from Remix(h), so neither field is
// correlated with the shard number.
//
// Classic layout: k positions over the whole array by double hashing,
//   x_0 = h, delta = (rotl(h, 32) * 0x9e3779b97f4a7c15) | 1,
//   x_i = x_0 + i * delta (mod 2^64), position_i = FastRange64(x_i, m).
//
// Thread-safe: pure functions over atomics; see each kernel for the memory
// order argument.
#ifndef SHARDFILTER_FILTERS_INTERNAL_BLOOM_KERNELS_H_
#define SHARDFILTER_FILTERS_INTERNAL_BLOOM_KERNELS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "filters/hash.h"

namespace shardfilter::internal {

inline constexpr uint32_t kBlockBytes = 64;  // one cache line
inline constexpr uint32_t kBlockWords = 8;
inline constexpr uint32_t kBlockBits = 512;
inline constexpr uint32_t kCountersPerBlock = 128;  // 4-bit counters
inline constexpr uint32_t kCounterMax = 15;         // saturated, then sticky

// kProbeMultipliers[i] = 0x9e3779b9^(i+1) mod 2^32: position i is a single
// multiply of h32, so the k positions carry no serial dependency chain.
inline constexpr std::array<uint32_t, 32> kProbeMultipliers = [] {
  std::array<uint32_t, 32> m{};
  uint32_t c = 1;
  for (auto& v : m) v = c *= 0x9e3779b9u;
  return m;
}();

inline uint64_t BlockIndex(uint64_t h, uint64_t num_blocks) {
  // Only h[63:32] enters: equals FastRange32(h >> 32, n) for n < 2^32.
  return FastRange64(h & 0xFFFFFFFF00000000ULL, num_blocks);
}
inline uint32_t BlockBitPos(uint32_t h32, uint32_t i) {
  return (h32 * kProbeMultipliers[i]) >> 23;  // 0..511
}
inline uint32_t BlockCounterPos(uint32_t h32, uint32_t i) {
  return (h32 * kProbeMultipliers[i]) >> 25;  // 0..127
}

inline void PrefetchRead(const void* p) { __builtin_prefetch(p, 0, 3); }
inline void PrefetchWrite(const void* p) { __builtin_prefetch(p, 1, 3); }

// ---- Blocked Bloom (512 bits per 64-byte block) ----------------------------

// Branch-free over the k bits: one line, k relaxed loads. Relaxed suffices:
// bits are only ever set, so any value a load returns has every bit that was
// set by an add which happens-before this query (read-write coherence); the
// happens-before itself comes from the caller's synchronization (the add's
// acknowledgement). Bits of unacknowledged concurrent adds may or may not be
// seen, which is allowed either way.
inline bool BlockedMayContain(const std::atomic<uint64_t>* block, uint32_t h32,
                              uint32_t k) {
  uint64_t all = 1;
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t pos = BlockBitPos(h32, i);
    all &= block[pos >> 6].load(std::memory_order_relaxed) >> (pos & 63);
  }
  return (all & 1) != 0;
}

// Sets the key's k bits; returns true if at least one was not already set
// (as seen by this thread). Per word: build the mask, skip the RMW when the
// bits are already there (the common case once a filter fills: a relaxed
// load costs nothing on a line we touch anyway), else fetch_or. Relaxed
// suffices: each fetch_or is atomic, so no bit set by another thread is
// lost (no torn state); nothing else is published through these bits, and
// visibility to later queries is ordered by the caller's synchronization.
inline bool BlockedAdd(std::atomic<uint64_t>* block, uint32_t h32, uint32_t k) {
  uint64_t masks[kBlockWords] = {};
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t pos = BlockBitPos(h32, i);
    masks[pos >> 6] |= uint64_t{1} << (pos & 63);
  }
  bool added = false;
  for (uint32_t w = 0; w < kBlockWords; ++w) {
    const uint64_t m = masks[w];
    if (m == 0) continue;
    if ((block[w].load(std::memory_order_relaxed) & m) != m) {
      block[w].fetch_or(m, std::memory_order_relaxed);
      added = true;
    }
  }
  return added;
}

// ---- Classic Bloom (k positions over the whole array) ---------------------

inline uint64_t ClassicDelta(uint64_t h) {
  return (((h << 32) | (h >> 32)) * 0x9e3779b97f4a7c15ULL) | 1;
}

// Same memory-order argument as BlockedMayContain.
inline bool ClassicMayContain(const std::atomic<uint64_t>* words,
                              uint64_t num_bits, uint64_t h, uint32_t k) {
  const uint64_t delta = ClassicDelta(h);
  uint64_t x = h, all = 1;
  for (uint32_t i = 0; i < k; ++i, x += delta) {
    const uint64_t pos = FastRange64(x, num_bits);
    all &= words[pos >> 6].load(std::memory_order_relaxed) >> (pos & 63);
  }
  return (all & 1) != 0;
}

// Same memory-order argument as BlockedAdd.
inline bool ClassicAdd(std::atomic<uint64_t>* words, uint64_t num_bits,
                       uint64_t h, uint32_t k) {
  const uint64_t delta = ClassicDelta(h);
  uint64_t x = h;
  bool added = false;
  for (uint32_t i = 0; i < k; ++i, x += delta) {
    const uint64_t pos = FastRange64(x, num_bits);
    const uint64_t m = uint64_t{1} << (pos & 63);
    if ((words[pos >> 6].load(std::memory_order_relaxed) & m) == 0) {
      words[pos >> 6].fetch_or(m, std::memory_order_relaxed);
      added = true;
    }
  }
  return added;
}

inline void ClassicPrefetch(const std::atomic<uint64_t>* words,
                            uint64_t num_bits, uint64_t h, uint32_t k) {
  const uint64_t delta = ClassicDelta(h);
  uint64_t x = h;
  for (uint32_t i = 0; i < k; ++i, x += delta) {
    PrefetchRead(&words[FastRange64(x, num_bits) >> 6]);
  }
}

// ---- Counting Bloom (128 four-bit counters per 64-byte block) -------------
// Counter c of a block is nibble (c & 15) of word (c >> 4).

// One 1 in the low bit of each nibble the key selects (deduplicated: a
// counter drawn twice for a key is counted once, so Count is exact for a
// key alone in its counters).
inline void CounterMasks(uint32_t h32, uint32_t k,
                         uint64_t (&masks)[kBlockWords]) {
  for (auto& m : masks) m = 0;
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t c = BlockCounterPos(h32, i);
    masks[c >> 4] |= uint64_t{1} << (4 * (c & 15));
  }
}

inline constexpr uint64_t kNibbleLowBits = 0x1111111111111111ULL;
// Low bit of each nibble set iff that nibble is 15 (saturated).
inline uint64_t SaturatedNibbles(uint64_t w) {
  return w & (w >> 1) & (w >> 2) & (w >> 3) & kNibbleLowBits;
}
// Low bit of each nibble set iff that nibble is non-zero.
inline uint64_t NonZeroNibbles(uint64_t w) {
  return (w | (w >> 1) | (w >> 2) | (w >> 3)) & kNibbleLowBits;
}
// Counters per word that are non-zero, for fill statistics.
inline int NonZeroCounters(uint64_t w) {
  return __builtin_popcountll(NonZeroNibbles(w));
}

// Minimum of the key's counters, branch-free over k relaxed loads. Relaxed
// suffices for the no-false-negative promise: writers replace whole words
// atomically (no torn nibble), and every acknowledged add's store
// happens-before the query via the caller's synchronization, so coherence
// forbids reading an older word.
inline uint32_t CounterMin(const std::atomic<uint64_t>* block, uint32_t h32,
                           uint32_t k) {
  uint32_t min = kCounterMax;
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t c = BlockCounterPos(h32, i);
    const uint32_t v = static_cast<uint32_t>(
        (block[c >> 4].load(std::memory_order_relaxed) >> (4 * (c & 15))) & 15);
    min = v < min ? v : min;
  }
  return min;
}

// REQUIRES: the caller holds the block's stripe lock, so no other writer
// changes these words; the relaxed store is ordered for later writers by the
// lock's release/acquire, and readers need only per-word atomicity.
// Saturated (15) counters are left as they are (sticky).
inline void CounterIncrementLocked(std::atomic<uint64_t>* block,
                                   const uint64_t (&masks)[kBlockWords]) {
  for (uint32_t w = 0; w < kBlockWords; ++w) {
    if (masks[w] == 0) continue;
    const uint64_t v = block[w].load(std::memory_order_relaxed);
    // No carry crosses a nibble: only nibbles below 15 are incremented.
    block[w].store(v + (masks[w] & ~SaturatedNibbles(v)),
                   std::memory_order_relaxed);
  }
}

// REQUIRES: stripe lock held (as above). Returns false, changing nothing,
// if one of the key's counters is zero (the key is definitely absent).
// Saturated counters are never decremented (their true value is unknown).
inline bool CounterDecrementLocked(std::atomic<uint64_t>* block,
                                   const uint64_t (&masks)[kBlockWords]) {
  uint64_t v[kBlockWords];
  for (uint32_t w = 0; w < kBlockWords; ++w) {
    v[w] = block[w].load(std::memory_order_relaxed);
    if ((masks[w] & ~NonZeroNibbles(v[w])) != 0) return false;
  }
  for (uint32_t w = 0; w < kBlockWords; ++w) {
    if (masks[w] == 0) continue;
    // No borrow crosses a nibble: every selected nibble is >= 1.
    block[w].store(v[w] - (masks[w] & ~SaturatedNibbles(v[w])),
                   std::memory_order_relaxed);
  }
  return true;
}

// ---- Batch pipeline --------------------------------------------------------

// Runs probe(h_i) for i in [0, n), with h_i = hash_at(i) computed kWindow
// items ahead and prefetch(h_{i+kWindow}) issued before probe(h_i): up to
// kWindow cache misses in flight (memory-level parallelism). 16 keeps the
// ~20 line-fill buffers of current x86 cores busy without thrashing L1.
inline constexpr size_t kPrefetchWindow = 16;

template <typename HashAt, typename Prefetch, typename Probe>
inline void PipelinedProbe(size_t n, HashAt&& hash_at, Prefetch&& prefetch,
                           Probe&& probe) {
  uint64_t ring[kPrefetchWindow];
  const size_t lead = n < kPrefetchWindow ? n : kPrefetchWindow;
  for (size_t j = 0; j < lead; ++j) {
    ring[j] = hash_at(j);
    prefetch(ring[j]);
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t slot = i & (kPrefetchWindow - 1);
    const uint64_t h = ring[slot];
    if (i + kPrefetchWindow < n) {
      ring[slot] = hash_at(i + kPrefetchWindow);
      prefetch(ring[slot]);
    }
    probe(i, h);
  }
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_BLOOM_KERNELS_H_
