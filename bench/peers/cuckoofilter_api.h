// FilterAPI for efficient/cuckoofilter (github.com/efficient/cuckoofilter,
// the reference implementation of Fan et al., "Cuckoo Filter: Practically
// Better Than Bloom", CoNEXT 2014): CuckooFilter<uint64_t, 12> (buckets of
// four 12-bit fingerprints, a power-of-two number of buckets, random-walk
// kicks up to 500, one victim slot). With its own hash
// (TwoIndependentMultiplyShift: one 128-bit multiply-add of random
// constants) or with shardfilter's KeyHasher (XXH3 of the key's 8 bytes).
//
// Include only in a translation unit of its own: its hashutil.h shares its
// include guard with fastfilter_cpp's, and includes <openssl/evp.h>.
#ifndef SHARDFILTER_BENCH_PEERS_CUCKOOFILTER_API_H_
#define SHARDFILTER_BENCH_PEERS_CUCKOOFILTER_API_H_

#include <cstdint>
#include <memory>

#include "cuckoofilter.h"
#include "filter_api.h"
#include "key_hash.h"

namespace sbs {

template <typename HashFamily>
struct Ecf {};

template <typename HashFamily>
struct FilterAPI<Ecf<HashFamily>> {
  static constexpr size_t kBits = 12;
  using Table = cuckoofilter::CuckooFilter<uint64_t, kBits,
                                           cuckoofilter::SingleTable, HashFamily>;
  static constexpr bool kRemove = true;
  static constexpr bool kBatch = false;
  // Its table for `capacity` keys: EfficientCuckooSlots (filter_api.h).
  static std::shared_ptr<Table> Construct(uint64_t capacity) {
    return std::make_shared<Table>(capacity);
  }
  static bool Add(const uint64_t& key, Table* t) {
    return t->Add(key) == cuckoofilter::Ok;
  }
  static bool Contain(const uint64_t& key, const Table* t) {
    return t->Contain(key) == cuckoofilter::Ok;
  }
  static bool Remove(const uint64_t& key, Table* t) {
    return t->Delete(key) == cuckoofilter::Ok;
  }
  static void ContainBatch(const uint64_t*, size_t, uint8_t*, const Table*) {}
  static uint64_t Bytes(const Table& t) { return t.SizeInBytes(); }
  // SingleTable<12>: 4 slots of 12 bits per bucket, SizeInBytes without
  // its padding bucket.
  static uint64_t Slots(const Table& t) { return t.SizeInBytes() * 8 / kBits; }
};

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_CUCKOOFILTER_API_H_
