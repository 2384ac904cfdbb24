// XXH3-64 for inputs of 0..16 bytes (and 17..32), written from the XXH3
// specification (xxHash's doc/xxhash_spec.md: "XXH3 algorithm", short inputs)
// so that the hot hash of every query stays inline in the user's code without
// <xxhash.h> or its macros (XXH_INLINE_ALL, XXH_VECTOR, ...) reaching the
// user's translation units. Longer inputs go to xxHash itself, out of line
// (filters/hash.cc).
//
// Same values as XXH3_64bits_withSeed for every length 0..16 and any seed:
// pinned by tests/hash_test.cc against xxHash itself.
//
// Installed (public headers include it), not API: names under `detail` may
// change in any release.
#ifndef SHARDFILTER_FILTERS_DETAIL_XXH3_SHORT_H_
#define SHARDFILTER_FILTERS_DETAIL_XXH3_SHORT_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace shardfilter::detail {

inline uint32_t ReadLE32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big)
    v = __builtin_bswap32(v);
  return v;
}
inline uint64_t ReadLE64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big)
    v = __builtin_bswap64(v);
  return v;
}

// The first 72 bytes of XXH3's default secret (the specification's
// kSecret), read as little-endian words: all that inputs of up to 16 bytes
// use. kXxh3Secret32_0 / _4 are the 32-bit words at offsets 0 and 4;
// kXxh3Secret64_N the 64-bit word at offset N.
inline constexpr uint32_t kXxh3Secret32_0 = 0x396cfeb8u;
inline constexpr uint32_t kXxh3Secret32_4 = 0xbe4ba423u;
inline constexpr uint64_t kXxh3Secret64_8 = 0x1cad21f72c81017cULL;
inline constexpr uint64_t kXxh3Secret64_16 = 0xdb979083e96dd4deULL;
inline constexpr uint64_t kXxh3Secret64_24 = 0x1f67b3b7a4a44072ULL;
inline constexpr uint64_t kXxh3Secret64_32 = 0x78e5c0cc4ee679cbULL;
inline constexpr uint64_t kXxh3Secret64_40 = 0x2172ffcc7dd05a82ULL;
inline constexpr uint64_t kXxh3Secret64_48 = 0x8e2443f7744608b8ULL;
inline constexpr uint64_t kXxh3Secret64_56 = 0x4c263a81e69035e0ULL;
inline constexpr uint64_t kXxh3Secret64_64 = 0xcb00c391bb52283cULL;

inline constexpr uint64_t kXxhPrime64_2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr uint64_t kXxhPrime64_3 = 0x165667B19E3779F9ULL;
inline constexpr uint64_t kXxhPrimeMx1 = 0x165667919E3779F9ULL;
inline constexpr uint64_t kXxhPrimeMx2 = 0x9FB21C651E98DF25ULL;

inline constexpr uint64_t Xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kXxhPrime64_2;
  h ^= h >> 29;
  h *= kXxhPrime64_3;
  return h ^ (h >> 32);
}
inline constexpr uint64_t Xxh3Avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= kXxhPrimeMx1;
  return h ^ (h >> 32);
}
// The 4..8-byte finalizer ("rrmxmx").
inline constexpr uint64_t Xxh3Rrmxmx(uint64_t h, uint64_t len) {
  h ^= std::rotl(h, 49) ^ std::rotl(h, 24);
  h *= kXxhPrimeMx2;
  h ^= (h >> 35) + len;
  h *= kXxhPrimeMx2;
  return h ^ (h >> 28);
}
inline constexpr uint64_t Mul128Fold64(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

// The seed-dependent term of the 4..8-byte kernel: a KeyHasher computes it
// once (filters/hash.h).
inline constexpr uint64_t Xxh3Bitflip4to8(uint64_t seed) {
  const uint64_t s =
      seed ^ (uint64_t{__builtin_bswap32(static_cast<uint32_t>(seed))} << 32);
  return (kXxh3Secret64_8 ^ kXxh3Secret64_16) - s;
}
// 4..8 bytes, bitflip = Xxh3Bitflip4to8(seed).
inline uint64_t Xxh3Len4to8(const unsigned char* p, size_t len,
                            uint64_t bitflip) {
  // 8 bytes (the common 64-bit id): the two 32-bit words, swapped, are the
  // 64-bit word rotated by 32, one load and one rotate instead of two loads,
  // a shift and an add (after inlining len is usually a constant and the
  // branch folds away).
  if (len == 8) return Xxh3Rrmxmx(std::rotl(ReadLE64(p), 32) ^ bitflip, 8);
  const uint64_t in1 = ReadLE32(p);
  const uint64_t in2 = ReadLE32(p + len - 4);
  return Xxh3Rrmxmx((in2 + (in1 << 32)) ^ bitflip, len);
}

// XXH3-64 of p[0, len) with `seed`, len <= 16.
inline uint64_t Xxh3Len0to16(const unsigned char* p, size_t len,
                             uint64_t seed) {
  if (len > 8) {
    const uint64_t bitflip1 = (kXxh3Secret64_24 ^ kXxh3Secret64_32) + seed;
    const uint64_t bitflip2 = (kXxh3Secret64_40 ^ kXxh3Secret64_48) - seed;
    const uint64_t lo = ReadLE64(p) ^ bitflip1;
    const uint64_t hi = ReadLE64(p + len - 8) ^ bitflip2;
    const uint64_t acc =
        len + __builtin_bswap64(lo) + hi + Mul128Fold64(lo, hi);
    return Xxh3Avalanche(acc);
  }
  if (len >= 4) return Xxh3Len4to8(p, len, Xxh3Bitflip4to8(seed));
  if (len > 0) {
    const uint32_t c1 = p[0];
    const uint32_t c2 = p[len >> 1];
    const uint32_t c3 = p[len - 1];
    const uint32_t combined =
        (c1 << 16) | (c2 << 24) | c3 | (static_cast<uint32_t>(len) << 8);
    const uint64_t bitflip = uint64_t{kXxh3Secret32_0 ^ kXxh3Secret32_4} + seed;
    return Xxh64Avalanche(uint64_t{combined} ^ bitflip);
  }
  return Xxh64Avalanche(seed ^ (kXxh3Secret64_56 ^ kXxh3Secret64_64));
}

// XXH3-64 of p[0, len) with `seed`, 17 <= len <= 32 (the specification's
// 17..128 form with its two middle rounds skipped, as they are at this
// length): the journal's one-key record (filters are not hashed here).
inline uint64_t Xxh3Len17to32(const unsigned char* p, size_t len,
                              uint64_t seed) {
  constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ULL;
  constexpr uint64_t kSecret64_0 =
      (uint64_t{kXxh3Secret32_4} << 32) | kXxh3Secret32_0;
  auto mix16 = [seed](const unsigned char* in, uint64_t s0, uint64_t s1) {
    return Mul128Fold64(ReadLE64(in) ^ (s0 + seed),
                        ReadLE64(in + 8) ^ (s1 - seed));
  };
  uint64_t acc = len * kPrime64_1;
  acc += mix16(p, kSecret64_0, kXxh3Secret64_8);
  acc += mix16(p + len - 16, kXxh3Secret64_16, kXxh3Secret64_24);
  return Xxh3Avalanche(acc);
}

}  // namespace shardfilter::detail

#endif  // SHARDFILTER_FILTERS_DETAIL_XXH3_SHORT_H_
