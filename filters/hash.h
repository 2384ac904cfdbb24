// Key hashing: the one entry point from key bytes to the 64-bit hash that
// every filter, shard router, journal and migration works from.
//
// Hash = XXH3-64(key bytes, seed). The seed is a per-filter parameter stored
// with the filter (serialized header, catalog descriptor), so a persisted
// filter always rehashes keys exactly as when it was built. After hashing,
// nothing in shardfilter looks at the key again: positions, fingerprints and
// shard numbers are all derived from the 64-bit value. That is what lets the
// journal and the retained-hashes column family store 8 bytes per operation.
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_FILTERS_HASH_H_
#define SHARDFILTER_FILTERS_HASH_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

// Inlined for speed on short keys. On AVX-512 machines, GCC 12 warns
// (falsely) inside xxHash's AVX-512 long-input kernel; the AVX2 kernel
// computes the same hash values and is as fast for the key sizes filters see.
#if defined(__AVX512F__) && !defined(XXH_VECTOR)
#define XXH_VECTOR 2 /* XXH_AVX2 */
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shardfilter {

// Default seed for new filters when the caller does not choose one. Any
// value works; it is stored, never assumed, when a filter is reopened.
inline constexpr uint64_t kDefaultSeed = 0x5348415244464C54ULL;  // "SHARDFLT"

// XXH3-64 of the key bytes with `seed`. Stable across versions, platforms
// and endianness (XXH3 is specified on bytes). Pinned by tests/hash_test.cc.
//
// Keys of up to 16 bytes (ids, 8-byte integers) take XXH3's short-input
// kernel directly: it is what XXH3_64bits_withSeed runs for them (same
// secret, same seed handling, so the same values), but inlined. GCC does not
// inline XXH3_64bits_withSeed itself (its long-input path is large), and the
// call costs a third of a cached filter query. Golden values pin both paths.
// The short kernel is flattened: xxHash declares its final mixer
// (XXH3_rrmxmx, 8-byte keys) plain `static`, and GCC 12 calls it out of
// line, ~20 more instructions per hash that crowd out the misses a
// DRAM-bound loop could overlap (cuckoo query at 5e7 items).
[[gnu::flatten]] inline uint64_t HashShortKey(std::string_view key,
                                              uint64_t seed) {
  return XXH3_len_0to16_64b(reinterpret_cast<const xxh_u8*>(key.data()),
                            key.size(), XXH3_kSecret, seed);
}
inline uint64_t HashKey(std::string_view key, uint64_t seed) {
  if (key.size() <= 16) return HashShortKey(key, seed);
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

// HashKey(key, seed) for one fixed seed, with the seed's share of XXH3's
// 4..8-byte kernel (32- and 64-bit ids, the common keys) computed once per
// hasher instead of per key: that share (a byte swap, shifts, an xor and a
// subtract of a 64-bit constant) is ~6 instructions of every hash, and a
// one-at-a-time cuckoo query at 5e7 items, which runs as fast as the CPU
// overlaps consecutive queries' misses, is ~5 ns faster without them
// (measured). The values are HashKey's, checked by tests/hash_test.cc
// against xxHash for every length and several seeds. Other lengths call
// HashKey. Copyable; thread-safe (const).
class KeyHasher {
 public:
  explicit KeyHasher(uint64_t seed = kDefaultSeed)
      : seed_(seed),
        bitflip_4to8_(
            (XXH_readLE64(XXH3_kSecret + 8) ^ XXH_readLE64(XXH3_kSecret + 16)) -
            (seed ^ (uint64_t{XXH_swap32(static_cast<xxh_u32>(seed))} << 32))) {
  }
  uint64_t seed() const { return seed_; }
  uint64_t operator()(std::string_view key) const {
    if (key.size() - 4 <= 4) return Hash4to8(key);  // 4..8 bytes
    return HashKey(key, seed_);
  }

 private:
  // XXH3's 4..8-byte kernel (XXH3_len_4to8_64b) with the seed-derived
  // bitflip precomputed, and its final mixer (XXH3_rrmxmx, constants from
  // the XXH3 specification) written out: xxHash declares the mixer plain
  // `static`, and once this function is inlined into a caller's loop
  // (-O3), GCC 12 called the mixer out of line whatever attribute this
  // function carried (measured: 53 ns -> 66 ns per query at 5e7).
  uint64_t Hash4to8(std::string_view key) const {
    const char* p = key.data();
    const uint64_t in1 = XXH_readLE32(p);
    const uint64_t in2 = XXH_readLE32(p + key.size() - 4);
    constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ULL;
    uint64_t h = (in2 + (in1 << 32)) ^ bitflip_4to8_;
    h ^= std::rotl(h, 49) ^ std::rotl(h, 24);
    h *= kPrimeMx2;
    h ^= (h >> 35) + key.size();
    h *= kPrimeMx2;
    return h ^ (h >> 28);
  }

  uint64_t seed_;
  uint64_t bitflip_4to8_;
};

// A bijective 64-bit mixer (the splitmix64 / murmur3 finalizer constants).
// Used to derive bits that are statistically independent of the bits a
// filter takes from the raw hash: e.g. the shard router uses
// Remix(h) so that the shard number and the in-shard block index never
// depend on the same hash bits (which would leave blocks unused).
inline constexpr uint64_t Remix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// Maps x uniformly onto [0, n) without a division (Lemire's multiply-shift):
// uses the high bits of x, so callers take indexes from the top of a hash.
inline constexpr uint64_t FastRange64(uint64_t x, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

inline constexpr uint32_t FastRange32(uint32_t x, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(x) * n) >> 32);
}

// Checksum used by every stored encoding: XXH3-64 with seed 0.
inline uint64_t Checksum64(const void* data, size_t len) {
  return XXH3_64bits(data, len);
}

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_HASH_H_
