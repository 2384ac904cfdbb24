// FilterAPI for RocksDB's FastLocalBloomImpl (util/bloom_impl.h of
// github.com/facebook/rocksdb): the cache-local Bloom kernel of its block
// based tables' format_version 5 filters, used here as RocksDB's filter
// policy uses it: 10 bits per key (the table rounded up to whole 64-byte
// lines), ChooseNumProbes(10000) = 6 probes in one line, the key hashed by
// XXPH3_64bits (util/xxph3.h, RocksDB's GetSliceHash64, inlined here as
// in RocksDB's own build), h1 = the hash's low half picks the line, h2 =
// its high half the bits. The batch form is its MultiGet's
// (FastLocalBloomBitsReader::MayMatch): up to 32 keys
// (MultiGetContext::MAX_BATCH_SIZE) hashed and their lines prefetched, then
// probed.
//
// Include only in a translation unit of its own, built with the checkout's
// include/ and root on the include path and ROCKSDB_PLATFORM_POSIX set.
#ifndef SHARDFILTER_BENCH_PEERS_ROCKSDB_API_H_
#define SHARDFILTER_BENCH_PEERS_ROCKSDB_API_H_

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "filter_api.h"
#include "harness.h"
#include "util/bloom_impl.h"
#include "util/xxph3.h"

namespace sbs {

struct RocksDbBloom {
  static constexpr int kMillibitsPerKey = 10000;
  static constexpr size_t kMultiGetBatch = 32;
  explicit RocksDbBloom(uint64_t keys) {
    const uint64_t lines =
        std::max<uint64_t>(1, (keys * kMillibitsPerKey / 1000 + 511) / 512);
    if (lines * 64 > UINT32_MAX) Die("RocksDB's filter holds at most 4 GiB");
    len_bytes = static_cast<uint32_t>(lines * 64);
    num_probes = rocksdb::FastLocalBloomImpl::ChooseNumProbes(kMillibitsPerKey);
    data = static_cast<char*>(aligned_alloc(64, len_bytes));
    if (data == nullptr) Die("out of memory");
    std::memset(data, 0, len_bytes);
  }
  ~RocksDbBloom() { free(data); }
  RocksDbBloom(const RocksDbBloom&) = delete;
  RocksDbBloom& operator=(const RocksDbBloom&) = delete;

  char* data = nullptr;
  uint32_t len_bytes = 0;
  int num_probes = 0;
};

struct RocksDb {};

template <>
struct FilterAPI<RocksDb> {
  using Table = RocksDbBloom;
  using Impl = rocksdb::FastLocalBloomImpl;
  static constexpr bool kRemove = false;
  static constexpr bool kBatch = true;
  static std::shared_ptr<Table> Construct(uint64_t capacity) {
    return std::make_shared<Table>(capacity);
  }
  static uint64_t Hash(const uint64_t& key) {
    return XXPH3_64bits(&key, sizeof key);
  }
  static bool Add(const uint64_t& key, Table* t) {
    const uint64_t h = Hash(key);
    Impl::AddHash(static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32),
                  t->len_bytes, t->num_probes, t->data);
    return true;
  }
  static bool Contain(const uint64_t& key, const Table* t) {
    const uint64_t h = Hash(key);
    return Impl::HashMayMatch(static_cast<uint32_t>(h),
                              static_cast<uint32_t>(h >> 32), t->len_bytes,
                              t->num_probes, t->data);
  }
  static bool Remove(const uint64_t&, Table*) { return false; }
  static void ContainBatch(const uint64_t* keys, size_t n, uint8_t* out,
                           const Table* t) {
    uint32_t hashes[Table::kMultiGetBatch];
    uint32_t offsets[Table::kMultiGetBatch];
    for (size_t b = 0; b < n; b += Table::kMultiGetBatch) {
      const size_t m = std::min(n - b, Table::kMultiGetBatch);
      for (size_t i = 0; i < m; ++i) {
        const uint64_t h = Hash(keys[b + i]);
        Impl::PrepareHash(static_cast<uint32_t>(h), t->len_bytes, t->data,
                          &offsets[i]);
        hashes[i] = static_cast<uint32_t>(h >> 32);
      }
      for (size_t i = 0; i < m; ++i) {
        out[b + i] = Impl::HashMayMatchPrepared(hashes[i], t->num_probes,
                                                t->data + offsets[i]);
      }
    }
  }
  static uint64_t Bytes(const Table& t) { return t.len_bytes; }
  static uint64_t Slots(const Table&) { return 0; }
};

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_ROCKSDB_API_H_
