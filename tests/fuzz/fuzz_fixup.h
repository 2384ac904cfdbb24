// Checksum repair for the fuzz targets. Every stored encoding carries an
// XXH3 checksum, so mutated bytes would almost never get past it and the
// decoders behind it would go unfuzzed. A target therefore reads its first
// input byte as a mode: odd = take the rest as it is (the checksum checks
// themselves), even = repair the checksums the rest claims to have (at the
// offsets its own length fields give, as the formats in docs/ define them)
// and then decode, reaching the length, parameter and consistency checks.
// Repairs never change a length: what decodes is still what the mutator
// wrote, only with a matching checksum.
#ifndef SHARDFILTER_TESTS_FUZZ_FUZZ_FIXUP_H_
#define SHARDFILTER_TESTS_FUZZ_FUZZ_FIXUP_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "shardfilter/filters/hash.h"

// The export's per-shard checksum is XXH3 with the shard index as seed,
// which filters/hash.h does not offer: xxHash inline, header only.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shardfilter::fuzz {

inline uint64_t LoadLE(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  }
  return v;
}
inline void StoreLE64(std::string* b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*b)[at + i] = static_cast<char>(v >> (8 * i));
}
// Sets the 8 bytes at [at, at + 8) to the checksum of [from, at).
inline void SetChecksum(std::string* b, size_t from, size_t at) {
  if (at < from || at + 8 > b->size()) return;
  StoreLE64(b, at, Checksum64(b->data() + from, at - from));
}

// A filter envelope (filters/envelope.h) at [at, at + len): the trailer.
inline void FixEnvelope(std::string* b, size_t at, size_t len) {
  if (len >= 28 && at + len <= b->size()) SetChecksum(b, at, at + len - 8);
}

// A shard blob (persistence/chain_blob.h) at [at, at + len): the
// header's checksum, then every link envelope the header's lengths delimit.
inline void FixChain(std::string* b, size_t at, size_t len) {
  if (len < 16 || at + len > b->size()) return;
  const size_t n = static_cast<unsigned char>((*b)[at + 5]);
  const size_t header = 8 + 16 * n;
  if (header + 8 > len) return;
  SetChecksum(b, at, at + header);
  size_t link = at + header + 8;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t l = LoadLE(*b, at + 8 + 16 * i, 8);
    if (l > at + len - link) return;
    FixEnvelope(b, link, l);
    link += l;
  }
}

// A framed store value (persistence/values.h): version, kind, payload,
// checksum of everything before it.
inline void FixValue(std::string* b) {
  if (b->size() >= 10) SetChecksum(b, 0, b->size() - 8);
}

// An export (docs/format-export.md): each length-prefixed shard blob and,
// from version 2, its checksum seeded by the shard index; then the trailer
// over everything.
inline void FixExport(std::string* b) {
  if (b->size() < 72) return;
  const uint64_t version = LoadLE(*b, 4, 2);
  const uint64_t shards = LoadLE(*b, 12, 4);
  size_t at = 64;
  for (uint64_t s = 0; s < shards && s < 256; ++s) {
    if (at + 8 > b->size() - 8) break;
    const uint64_t l = LoadLE(*b, at, 8);
    at += 8;
    if (l > b->size() - 8 - at) break;
    FixChain(b, at, l);
    at += l;
    if (version >= 2) {
      if (at + 8 > b->size() - 8) break;
      StoreLE64(b, at, XXH3_64bits_withSeed(b->data() + at - l, l, s));
      at += 8;
    }
  }
  SetChecksum(b, 0, b->size() - 8);
}

}  // namespace shardfilter::fuzz

#endif  // SHARDFILTER_TESTS_FUZZ_FUZZ_FIXUP_H_
