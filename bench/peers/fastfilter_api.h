// FilterAPI for fastfilter_cpp (github.com/FastFilter/fastfilter_cpp, as its
// own benchmarks/filterapi.h drives them): SimdBlockFilterFixed (a split
// block Bloom filter, 8 bits per key in one 32-byte bucket, 256 bits per 24
// keys: 10.67 bits/item) and CountingBloomFilter<uint64_t, 10, true>
// (CountingBloom10: 10 four-bit counters per key, branchless). Each with
// its own hash (SimpleMixSplit: the murmur3 finalizer of key + a random
// seed) or with shardfilter's KeyHasher (XXH3 of the key's 8 bytes), so
// that against the latter only the structure differs.
//
// Include only in a translation unit of its own: fastfilter's headers put
// `using namespace std` and `hashing` at global scope, and its hashutil.h
// shares its include guard with efficient/cuckoofilter's.
#ifndef SHARDFILTER_BENCH_PEERS_FASTFILTER_API_H_
#define SHARDFILTER_BENCH_PEERS_FASTFILTER_API_H_

#include <cstdint>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "filter_api.h"
#include "key_hash.h"

// fastfilter's headers rely on what its benchmarks include before them:
// <iostream> and <stdexcept> (above), and simd-block-fixed-fpp.h names
// std::vector unqualified (filterapi.h includes it after headers that say
// `using namespace std`).
using std::vector;
#include "counting_bloom.h"
#include "simd-block-fixed-fpp.h"

namespace sbs {

template <typename HashFamily>
struct FfBlock {};
template <typename HashFamily>
struct FfCounting {};

#ifdef __AVX2__
template <typename HashFamily>
struct FilterAPI<FfBlock<HashFamily>> {
  using Table = SimdBlockFilterFixed<HashFamily>;
  static constexpr bool kRemove = false;
  static constexpr bool kBatch = false;
  // As filterapi.h's ConstructFromAddCount: the constructor's argument is
  // the key count (it keeps count / 24 buckets of 256 bits).
  static std::shared_ptr<Table> Construct(uint64_t capacity) {
    return std::make_shared<Table>(static_cast<int>(capacity));
  }
  static bool Add(const uint64_t& key, Table* t) {
    t->Add(key);
    return true;
  }
  static bool Contain(const uint64_t& key, const Table* t) {
    return t->Find(key);
  }
  static bool Remove(const uint64_t&, Table*) { return false; }
  static void ContainBatch(const uint64_t*, size_t, uint8_t*, const Table*) {}
  static uint64_t Bytes(const Table& t) { return t.SizeInBytes(); }
  static uint64_t Slots(const Table&) { return 0; }
};
#endif  // __AVX2__

template <typename HashFamily>
struct FilterAPI<FfCounting<HashFamily>> {
  using Table =
      counting_bloomfilter::CountingBloomFilter<uint64_t, 10, true, HashFamily>;
  static constexpr bool kRemove = true;
  static constexpr bool kBatch = false;
  static std::shared_ptr<Table> Construct(uint64_t capacity) {
    return std::make_shared<Table>(capacity);
  }
  static bool Add(const uint64_t& key, Table* t) {
    return t->Add(key) == counting_bloomfilter::Ok;
  }
  static bool Contain(const uint64_t& key, const Table* t) {
    return t->Contain(key) == counting_bloomfilter::Ok;
  }
  static bool Remove(const uint64_t& key, Table* t) {
    return t->Remove(key) == counting_bloomfilter::Ok;
  }
  static void ContainBatch(const uint64_t*, size_t, uint8_t*, const Table*) {}
  static uint64_t Bytes(const Table& t) { return t.SizeInBytes(); }
  static uint64_t Slots(const Table&) { return 0; }
};

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_FASTFILTER_API_H_
