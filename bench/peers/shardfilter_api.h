// FilterAPI for this checkout's structures: the raw filters of filters/
// (each type's own inline key call: hash with its KeyHasher, then probe)
// and the handle users call, a Database's ShardedFilter at durability none.
// Keys reach them as their 8 bytes in the caller's array.
#ifndef SHARDFILTER_BENCH_PEERS_SHARDFILTER_API_H_
#define SHARDFILTER_BENCH_PEERS_SHARDFILTER_API_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "filter_api.h"
#include "harness.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/filter.h"

namespace sbs {

inline std::string_view KeyBytes(const uint64_t& key) {
  return std::string_view(reinterpret_cast<const char*>(&key), sizeof key);
}

template <typename T>
std::shared_ptr<T> ValueOrDie(shardfilter::Result<std::unique_ptr<T>> r,
                              const char* what) {
  if (!r.ok()) Die(std::string(what) + ": " + r.status().ToString());
  return std::shared_ptr<T>(std::move(*r));
}

// A raw filter made by CreateFilter (the factory the engine makes its links
// with): type, rate and, for cuckoo, fingerprint width (0: from the rate).
template <shardfilter::FilterType kType, double kFpp, uint32_t kFingerprint = 0>
struct Raw {};

template <shardfilter::FilterType kType>
struct RawTable;
template <>
struct RawTable<shardfilter::FilterType::kBloom> {
  using type = shardfilter::BloomFilter;
};
template <>
struct RawTable<shardfilter::FilterType::kCountingBloom> {
  using type = shardfilter::CountingBloomFilter;
};
template <>
struct RawTable<shardfilter::FilterType::kCuckoo> {
  using type = shardfilter::CuckooFilter;
};

template <shardfilter::FilterType kType, double kFpp, uint32_t kFingerprint>
struct FilterAPI<Raw<kType, kFpp, kFingerprint>> {
  using Table = typename RawTable<kType>::type;
  static constexpr bool kCuckoo = kType == shardfilter::FilterType::kCuckoo;
  static constexpr bool kRemove = kType != shardfilter::FilterType::kBloom;
  static constexpr bool kBatch = true;

  static std::shared_ptr<Table> Construct(uint64_t capacity) {
    shardfilter::FilterParams p;
    p.type = kType;
    p.capacity = capacity;
    p.fpp = kFpp;
    p.fingerprint_bits = kFingerprint;
    std::shared_ptr<shardfilter::Filter> f =
        ValueOrDie(shardfilter::CreateFilter(p), "CreateFilter");
    return std::static_pointer_cast<Table>(f);
  }
  static bool Add(const uint64_t& key, Table* t) {
    if constexpr (kCuckoo) {
      return t->Add(KeyBytes(key)).ok();
    } else {
      t->Add(KeyBytes(key));  // a Bloom add's result: whether a bit was new
      return true;
    }
  }
  static bool Contain(const uint64_t& key, const Table* t) {
    return t->MayContain(KeyBytes(key));
  }
  static bool Remove(const uint64_t& key, Table* t) {
    if constexpr (kCuckoo) {
      return t->Remove(KeyBytes(key)).ok();
    } else if constexpr (kRemove) {
      return t->Remove(KeyBytes(key));
    } else {
      return false;
    }
  }
  static void ContainBatch(const uint64_t* keys, size_t n, uint8_t* out,
                           const Table* t) {
    std::string_view views[kMaxBatch];
    for (size_t i = 0; i < n; ++i) views[i] = KeyBytes(keys[i]);
    t->MayContainKeys(std::span<const std::string_view>(views, n),
                      std::span<uint8_t>(out, n));
  }
  static uint64_t Bytes(const Table& t) { return t.Stats().bytes; }
  static uint64_t Slots(const Table& t) {
    if constexpr (kCuckoo) {
      const shardfilter::CuckooStats s = t.CuckooStatistics();
      return s.buckets * s.bucket_size;
    } else {
      return 0;
    }
  }
};

// The store the handle rows create their filters in: one per process, in
// a fresh directory under $TMPDIR, removed at exit.
shardfilter::Database& HandleStore();

// A Database handle (ShardedFilter) of `kShards` shards at durability none,
// every other option its default (scalable: link 0 at half the rate).
template <shardfilter::FilterType kType, uint32_t kShards>
struct Handle {};

template <shardfilter::FilterType kType, uint32_t kShards>
struct FilterAPI<Handle<kType, kShards>> {
  using Table = shardfilter::ShardedFilter;
  static constexpr bool kRemove = kType != shardfilter::FilterType::kBloom;
  static constexpr bool kBatch = false;

  static std::shared_ptr<Table> Construct(uint64_t capacity) {
    static std::atomic<uint64_t> serial{0};
    shardfilter::FilterSpec spec;
    spec.type = kType;
    spec.capacity = capacity;
    spec.shards = kShards;
    spec.durability = shardfilter::Durability::kNone;
    const std::string name = "side_by_side_" + std::to_string(serial++);
    auto created = HandleStore().Create(name, spec);
    if (!created.ok()) Die("Database::Create: " + created.status().ToString());
    std::shared_ptr<Table> handle = std::move(*created);
    // Dropped when the unit lets go of it, so the store holds one at a time.
    return std::shared_ptr<Table>(handle.get(), [handle, name](Table*) {
      if (auto s = HandleStore().Drop(name); !s.ok()) {
        Die("Database::Drop: " + s.ToString());
      }
    });
  }
  static bool Add(const uint64_t& key, Table* t) {
    return t->Add(KeyBytes(key)).ok();
  }
  static bool Contain(const uint64_t& key, const Table* t) {
    return t->MayContain(KeyBytes(key));
  }
  static bool Remove(const uint64_t& key, Table* t) {
    return t->Remove(KeyBytes(key)).ok();
  }
  static void ContainBatch(const uint64_t*, size_t, uint8_t*, const Table*) {}
  static uint64_t Bytes(const Table& t) { return t.Stats().total.bytes; }
  static uint64_t Slots(const Table&) { return 0; }
};

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_SHARDFILTER_API_H_
