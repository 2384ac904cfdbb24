// DedupRing: the dedup store's filters in front of RocksDB, one slot per
// live time bucket (P + 1 slots with a TTL, one slot without), each slot a
// chain of standalone ShardedFilters: when the last one reports Full, a new
// one of the same size is appended (up to kMaxLinks; past that the slot is
// "saturated" and answers "maybe" for every key, which costs RocksDB reads
// but never exactness).
//
// Removal from a chain: a key's hash went into exactly one link (the one
// whose add succeeded). Remove takes it out only when exactly one link
// answers "maybe" (that must be the link holding it), else leaves the
// fingerprint in place (a stale entry: a false positive, never a false
// negative for another key). Callers remove only keys they found in the
// exact set (filters/cuckoo_filter.h, "Removal risk").
//
// Thread safety: MayContain*, Add and Remove may run concurrently with each
// other (the filters are concurrent; a chain grows under its slot's mutex
// and publishes the new link with a release store of `links`). Reset runs
// only while the caller excludes every other call (DedupCore's ring lock
// held exclusive).
#ifndef SHARDFILTER_ENGINE_INTERNAL_DEDUP_RING_H_
#define SHARDFILTER_ENGINE_INTERNAL_DEDUP_RING_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/engine/sharded_filter.h"

namespace shardfilter::internal {

class DedupRing {
 public:
  static constexpr uint32_t kMaxLinks = 16;

  // `spec` sizes every link; slots = P + 1 (or 1).
  static Result<std::unique_ptr<DedupRing>> Create(const FilterSpec& spec,
                                                   uint32_t slots);

  uint32_t slots() const { return static_cast<uint32_t>(slots_.size()); }
  uint64_t SlotIndex(uint64_t bucket) const { return bucket % slots_.size(); }

  // Any live slot may hold the hash.
  bool MayContain(uint64_t hash) const;
  // out[i] |= any slot may hold hashes[i].
  void MayContainBatch(std::span<const uint64_t> hashes,
                       std::span<uint8_t> out) const;
  // Adds to bucket's slot, growing its chain when Full.
  void Add(uint64_t bucket, uint64_t hash);
  // See the file comment. REQUIRES: the key is in the exact set and was
  // added to bucket's slot.
  void Remove(uint64_t bucket, uint64_t hash);
  // A fresh, empty link (may fail: out of memory, bad spec).
  Result<std::unique_ptr<ShardedFilter>> NewLink() const;
  // Replaces bucket's slot by the single link `fresh`, labelled `bucket`.
  void Reset(uint64_t bucket, std::unique_ptr<ShardedFilter> fresh);
  void AppendStats(std::vector<DedupPartitionStats>* out) const;

 private:
  struct Slot {
    std::mutex grow_mu;  // serializes appends
    std::array<std::unique_ptr<ShardedFilter>, kMaxLinks> link;
    // Links [0, links) are built and visible (release store after the
    // unique_ptr is set; acquire load by readers).
    std::atomic<uint32_t> links{0};
    std::atomic<bool> saturated{false};
    uint64_t bucket = 0;  // written by Reset only
  };
  explicit DedupRing(const FilterSpec& spec, uint32_t slots);

  FilterSpec spec_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_DEDUP_RING_H_
