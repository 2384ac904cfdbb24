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

#include "shardfilter/filters/detail/xxh3_short.h"

namespace shardfilter {

// Default seed for new filters when the caller does not choose one. Any
// value works; it is stored, never assumed, when a filter is reopened.
inline constexpr uint64_t kDefaultSeed = 0x5348415244464C54ULL;  // "SHARDFLT"

// XXH3-64 of the key bytes with `seed`. Stable across versions, platforms
// and endianness (XXH3 is specified on bytes). Pinned by tests/hash_test.cc.
//
// Keys of up to 16 bytes (ids, 8-byte integers) take XXH3's short-input
// kernel inline (filters/detail/xxh3_short.h, our own implementation of
// the XXH3 specification: same values, pinned by tests/hash_test.cc against
// xxHash), so that neither <xxhash.h> nor its macros reach a user's
// translation unit. Longer keys call xxHash out of line (filters/hash.cc):
// its long-input path is large and GCC does not inline it anyway.
// The short kernel is flattened so that its finalizers stay inline in a
// caller's loop (an out-of-line mixer costs ~20 instructions per hash that
// crowd out the misses a DRAM-bound loop could overlap).
[[gnu::flatten]] inline uint64_t HashShortKey(std::string_view key,
                                              uint64_t seed) {
  return detail::Xxh3Len0to16(
      reinterpret_cast<const unsigned char*>(key.data()), key.size(), seed);
}
// XXH3-64 of any key (used for keys over 16 bytes).
uint64_t HashLongKey(std::string_view key, uint64_t seed);
inline uint64_t HashKey(std::string_view key, uint64_t seed) {
  if (key.size() <= 16) return HashShortKey(key, seed);
  return HashLongKey(key, seed);
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
      : seed_(seed), bitflip_4to8_(detail::Xxh3Bitflip4to8(seed)) {}
  uint64_t seed() const { return seed_; }
  uint64_t operator()(std::string_view key) const {
    if (key.size() - 4 <= 4) return Hash4to8(key);  // 4..8 bytes
    return HashKey(key, seed_);
  }

 private:
  // XXH3's 4..8-byte kernel with the seed-derived bitflip precomputed;
  // every function it calls is inline (detail::Xxh3Rrmxmx is constexpr), so
  // it stays one straight run of instructions in a caller's loop
  // (measured: an out-of-line mixer makes a 5e7 cuckoo query 1.25x
  // slower).
  uint64_t Hash4to8(std::string_view key) const {
    return detail::Xxh3Len4to8(
        reinterpret_cast<const unsigned char*>(key.data()), key.size(),
        bitflip_4to8_);
  }

  uint64_t seed_;
  uint64_t bitflip_4to8_;
};

// A bijective 64-bit mixer (the splitmix64 / murmur3 finalizer constants).
// Used to derive bits that are statistically independent of the bits a
// filter takes from the raw hash: e.g. the sharded engine's Remix shard
// router (filters stored before its multiply router, ShardRouter in
// engine/sharded_filter.h) so that the shard number and the in-shard block
// index never depend on the same hash bits (which would leave blocks
// unused).
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

// Checksum used by every stored encoding: XXH3-64 with seed 0
// (filters/hash.cc).
uint64_t Checksum64(const void* data, size_t len);

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_HASH_H_
