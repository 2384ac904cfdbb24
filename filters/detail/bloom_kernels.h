// Bit-level kernels of the Bloom and counting Bloom filters: where a hash's
// bits and counters live, and the lock-free probe/set loops over a table of
// std::atomic<uint64_t> words. Kept apart from the classes that own memory
// (filters/bloom_filter.h, filters/counting_bloom_filter.h), as RocksDB keeps
// util/bloom_impl.h apart from its filter policies.
//
// Hash bit budget (h = XXH3-64 of the key with the filter's seed):
//   h[63:32]  block index, FastRange over the number of blocks;
//   h[31:0]   in-block positions. Blocked Bloom: words and bits from 64-bit
//             products h32 * M (below, "Blocked Bloom"). Counting: counter
//             p_i = top 7 bits of (h32 * C^(i+1)) mod 2^32, C = 0x9e3779b9
//             (odd, golden ratio). Positions are drawn with replacement, as
//             the sizing models (filters/sizing.h) assume.
// The sharded engine's shard routers (ShardRouter, engine/sharded_filter.h)
// leave both fields uniform within each shard.
//
// Classic layout: k positions over the whole array by double hashing,
//   x_0 = h, delta = (rotl(h, 32) * 0x9e3779b97f4a7c15) | 1,
//   x_i = x_0 + i * delta (mod 2^64), position_i = FastRange64(x_i, m).
//
// Thread-safe: pure functions over atomics; see each kernel for the memory
// order argument.
#ifndef SHARDFILTER_FILTERS_DETAIL_BLOOM_KERNELS_H_
#define SHARDFILTER_FILTERS_DETAIL_BLOOM_KERNELS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "shardfilter/filters/detail/prefetch.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter::internal {

inline constexpr uint32_t kBlockBytes = 64;  // one cache line
inline constexpr uint32_t kBlockWords = 8;
inline constexpr uint32_t kBlockBits = 512;
inline constexpr uint32_t kCountersPerBlock = 128;  // 4-bit counters
inline constexpr uint32_t kCounterMax = 15;         // saturated, then sticky
// BlockIndex reaches 2^32 blocks (h[63:32]); more would leave blocks unused.
inline constexpr uint64_t kMaxBlocks = uint64_t{1} << 32;
// Largest table a Bloom or counting Deserialize accepts (1 TiB), whatever
// max_bytes it was created with; the body must be present in full anyway.
inline constexpr uint64_t kMaxDeserializedTableBytes = uint64_t{1} << 40;

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
inline uint32_t BlockCounterPos(uint32_t h32, uint32_t i) {
  return (h32 * kProbeMultipliers[i]) >> 25;  // 0..127
}

// ---- Blocked Bloom (512 bits per 64-byte block, k bits in s words) -------
// A key's k bits go to s = BlockedWordsPerKey(k) distinct words of its
// block (s = 2 for k = 2..8; why: filters/sizing.h, WordBlockedFpr), so an
// add is s atomic ORs and a query s loads. From h32 = uint32(h), with 64-bit
// products mod 2^64 (the top bits of h32 * M are well mixed):
//   words: v = uint32((h32 * kWordChoiceMul) >> 32), then a partial
//     Fisher-Yates shuffle of words 0..7 (list L = 0,1,..,7): for j = 0..s-1,
//     t = v * (8 - j) (64-bit), i = t >> 32, v = uint32(t), word_j = L[i],
//     L[i] = L[7 - j]. So word_0 = v >> 29, and for s = 2 word_1 =
//     i == word_0 ? 7 : i: every ordered tuple of distinct words is equally
//     likely, as WordBlockedFpr assumes.
//   bits: x_j = h32 * kWordBitsMul[j]; word j gets BlockedBitsInWord(k, j)
//     (<= 4) bits, bit r at (x_j >> (58 - 6 r)) & 63: fields 58..63,
//     52..57, 46..51, 40..45; drawn with replacement, as modelled.
// k = 6 (the 1% default): 4 multiplies, 2 words, 3 bits in each.

inline constexpr uint64_t kWordChoiceMul = 0x9e3779b97f4a7c15ULL;
inline constexpr uint64_t kWordBitsMul[8] = {
    0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL, 0xc2b2ae3d27d4eb4fULL,
    0x165667b19e3779f9ULL, 0x27d4eb2f165667c5ULL, 0x85ebca77c2b2ae63ULL,
    0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL};

template <uint32_t S>
inline void ChooseWords(uint32_t h32, uint32_t (&word)[S]) {
  uint32_t v = static_cast<uint32_t>((uint64_t{h32} * kWordChoiceMul) >> 32);
  word[0] = v >> 29;
  if constexpr (S == 2) {
    const uint32_t i = static_cast<uint32_t>(
        (uint64_t{static_cast<uint32_t>(v << 3)} * 7) >> 32);
    word[1] = i == word[0] ? 7 : i;
  } else if constexpr (S > 2) {
    // L as 8 nibbles; step 0 done above (L[word_0] = 7).
    uint32_t list = 0x76543210u ^ ((word[0] ^ 7u) << (4 * word[0]));
    v <<= 3;
    for (uint32_t j = 1; j < S; ++j) {
      const uint64_t t = uint64_t{v} * (8 - j);
      const uint32_t i = static_cast<uint32_t>(t >> 32);
      v = static_cast<uint32_t>(t);
      word[j] = (list >> (4 * i)) & 15;
      const uint32_t last = (list >> (4 * (7 - j))) & 15;
      list ^= (word[j] ^ last) << (4 * i);
    }
  }
}

template <uint32_t Bits>
inline uint64_t WordMask(uint64_t x) {
  uint64_t m = 0;
  for (uint32_t r = 0; r < Bits; ++r) {
    m |= uint64_t{1} << ((x >> (58 - 6 * r)) & 63);
  }
  return m;
}

// The key's s words and masks.
template <uint32_t K>
struct BlockedKey {
  static constexpr uint32_t kWords = BlockedWordsPerKey(K);
  uint32_t word[kWords];
  uint64_t mask[kWords];
  explicit BlockedKey(uint32_t h32) {
    ChooseWords<kWords>(h32, word);
    [&]<uint32_t... J>(std::integer_sequence<uint32_t, J...>) {
      ((mask[J] =
            WordMask<BlockedBitsInWord(K, J)>(uint64_t{h32} * kWordBitsMul[J])),
       ...);
    }
    (std::make_integer_sequence<uint32_t, kWords>{});
  }
};

// Branch-free: s relaxed loads of one line. Relaxed suffices: bits are only
// ever set, so any value a load returns has every bit that was set by an add
// which happens-before this query (read-write coherence); the happens-before
// itself comes from the caller's synchronization (the add's
// acknowledgement). Bits of unacknowledged concurrent adds may or may not be
// seen, which is allowed either way.
template <uint32_t K>
inline bool BlockedMayContainK(const std::atomic<uint64_t>* block,
                               uint32_t h32) {
  const BlockedKey<K> key(h32);
  uint64_t missing = 0;
  for (uint32_t j = 0; j < key.kWords; ++j) {
    missing |=
        key.mask[j] & ~block[key.word[j]].load(std::memory_order_relaxed);
  }
  return missing == 0;
}

// Sets the key's k bits (s fetch_or); returns true if at least one was not
// already set. Relaxed suffices: each fetch_or is atomic, so no bit set by
// another thread is lost (no torn state); nothing else is published through
// these bits, and visibility to later queries is ordered by the caller's
// synchronization. A relaxed load first skips the RMW when the bits are
// there (a filled filter, re-added keys): the line is being fetched anyway.
template <uint32_t K>
inline bool BlockedAddK(std::atomic<uint64_t>* block, uint32_t h32) {
  const BlockedKey<K> key(h32);
  bool added = false;
  for (uint32_t j = 0; j < key.kWords; ++j) {
    std::atomic<uint64_t>& w = block[key.word[j]];
    if ((w.load(std::memory_order_relaxed) & key.mask[j]) != key.mask[j]) {
      w.fetch_or(key.mask[j], std::memory_order_relaxed);
      added = true;
    }
  }
  return added;
}

// The kernels for one k, picked once per filter: compiling each k apart
// leaves no loop over k, and no per-bit branch, in the probe.
struct BlockedOps {
  bool (*may_contain)(const std::atomic<uint64_t>* block, uint32_t h32);
  bool (*add)(std::atomic<uint64_t>* block, uint32_t h32);
};
// REQUIRES: 1 <= k <= 32.
inline BlockedOps BlockedOpsFor(uint32_t k) {
  static constexpr auto kTable =
      []<uint32_t... K>(std::integer_sequence<uint32_t, K...>) {
    return std::array<BlockedOps, sizeof...(K)>{
        BlockedOps{&BlockedMayContainK<K + 1>, &BlockedAddK<K + 1>}...};
  }
  (std::make_integer_sequence<uint32_t, 32>{});
  return kTable[k - 1];
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
// (Bit 0 of t = w & w >> 1 is bits 0 and 1 of w; of t & t >> 2, bits 0-3.)
inline uint64_t SaturatedNibbles(uint64_t w) {
  const uint64_t t = w & (w >> 1);
  return t & (t >> 2) & kNibbleLowBits;
}
// Low bit of each nibble set iff that nibble is non-zero (as above, OR).
inline uint64_t NonZeroNibbles(uint64_t w) {
  const uint64_t t = w | (w >> 1);
  return (t | (t >> 2)) & kNibbleLowBits;
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

// CounterMasks and CounterMin in one pass, each position computed once:
// fills `masks` and returns the minimum of the key's counters (the capped
// add of a counting filter, which counts and then adds).
inline uint32_t CounterMasksAndMin(const std::atomic<uint64_t>* block,
                                   uint32_t h32, uint32_t k,
                                   uint64_t (&masks)[kBlockWords]) {
  for (auto& m : masks) m = 0;
  uint32_t min = kCounterMax;
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t c = BlockCounterPos(h32, i);
    const unsigned shift = 4 * (c & 15);
    masks[c >> 4] |= uint64_t{1} << shift;
    const auto v = static_cast<uint32_t>(
        (block[c >> 4].load(std::memory_order_relaxed) >> shift) & 15);
    min = v < min ? v : min;
  }
  return min;
}

// REQUIRES: the caller holds the block's stripe lock, so no other writer
// changes these words; the relaxed store is ordered for later writers by the
// lock's release/acquire, and readers need only per-word atomicity.
// Saturated (15) counters are left as they are (sticky). False when every
// counter in `masks` was saturated: nothing changed.
inline bool CounterIncrementLocked(std::atomic<uint64_t>* block,
                                   const uint64_t (&masks)[kBlockWords]) {
  uint64_t any = 0;
  for (uint32_t w = 0; w < kBlockWords; ++w) {
    if (masks[w] == 0) continue;
    const uint64_t v = block[w].load(std::memory_order_relaxed);
    // No carry crosses a nibble: only nibbles below 15 are incremented.
    const uint64_t add = masks[w] & ~SaturatedNibbles(v);
    if (add != 0) block[w].store(v + add, std::memory_order_relaxed);
    any |= add;
  }
  return any != 0;
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
// kWindow cache misses in flight (memory-level parallelism). Adds prefetch
// into L1 for writing 16 ahead (kPrefetchWindow: ~20 line-fill buffers on
// current x86 cores); batch queries into L2 64 ahead
// (kQueryPrefetchWindow, PrefetchReadL2: L2 tracks more misses than L1's
// buffers; 32 and 64 ahead into L1 ran no faster than 16, and into L2 64
// ran faster than 32: internal/prefetch.h).
inline constexpr size_t kPrefetchWindow = 16;
inline constexpr size_t kQueryPrefetchWindow = 64;

template <size_t kWindow, typename HashAt, typename Prefetch, typename Probe>
inline void PipelinedProbe(size_t n, HashAt&& hash_at, Prefetch&& prefetch,
                           Probe&& probe) {
  static_assert((kWindow & (kWindow - 1)) == 0, "a power of two");
  uint64_t ring[kWindow];
  const size_t lead = n < kWindow ? n : kWindow;
  for (size_t j = 0; j < lead; ++j) {
    ring[j] = hash_at(j);
    prefetch(ring[j]);
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t slot = i & (kWindow - 1);
    const uint64_t h = ring[slot];
    if (i + kWindow < n) {
      ring[slot] = hash_at(i + kWindow);
      prefetch(ring[slot]);
    }
    probe(i, h);
  }
}

// The batch entry points shared by BloomFilter and CountingBloomFilter, over
// hashes or keys: hash_at(i) gives item i's hash, its line is prefetched
// kPrefetchWindow (adds) or kQueryPrefetchWindow (queries) items ahead,
// then it is added or probed. F provides
// Prefetch(h, write), PrefetchBatchQuery(h), AddHashInline(h) and
// MayContainHashInline(h), and
// befriends BatchOps.
struct BatchOps {
  template <typename F, typename HashAt>
  static void Add(F& f, size_t n, HashAt&& hash_at) {
    PipelinedProbe<kPrefetchWindow>(
        n, hash_at, [&](uint64_t h) { f.Prefetch(h, /*write=*/true); },
        [&](size_t, uint64_t h) { f.AddHashInline(h); });
  }
  // REQUIRES: out.size() >= n.
  template <typename F, typename HashAt>
  static void Query(const F& f, size_t n, HashAt&& hash_at,
                    std::span<uint8_t> out) {
    PipelinedProbe<kQueryPrefetchWindow>(
        n, hash_at, [&](uint64_t h) { f.PrefetchBatchQuery(h); },
        [&](size_t i, uint64_t h) { out[i] = f.MayContainHashInline(h); });
  }
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_BLOOM_KERNELS_H_
