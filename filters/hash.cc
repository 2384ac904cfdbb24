// The out-of-line half of filters/hash.h: xxHash is included here only, so
// its macros and inline definitions never reach a user's translation unit.
#include "shardfilter/filters/hash.h"

#include <xxhash.h>

namespace shardfilter {

uint64_t HashLongKey(std::string_view key, uint64_t seed) {
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

uint64_t Checksum64(const void* data, size_t len) {
  return XXH3_64bits(data, len);
}

}  // namespace shardfilter
