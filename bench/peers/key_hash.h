// shardfilter's key hash in a peer's HashFamily slot (fastfilter_cpp's and
// efficient/cuckoofilter's filters take a functor from the 64-bit key to
// its 64-bit hash): KeyHasher, XXH3-64 of the key's 8 bytes with the
// default seed, as every shardfilter filter of the side-by-side hashes
// them. A peer hashed by it differs from shardfilter's filter only in
// its structure.
#ifndef SHARDFILTER_BENCH_PEERS_KEY_HASH_H_
#define SHARDFILTER_BENCH_PEERS_KEY_HASH_H_

#include <cstdint>
#include <string_view>

#include "shardfilter/filters/hash.h"

namespace sbs {

struct SfKeyHash {
  shardfilter::KeyHasher hasher;
  uint64_t operator()(uint64_t key) const {
    return hasher(std::string_view(reinterpret_cast<const char*>(&key),
                                   sizeof key));
  }
};

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_KEY_HASH_H_
