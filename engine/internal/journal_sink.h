// Where a ShardedFilter owned by a Database sends its journal entries: the
// Store, plus the Database's counters. Thread-safe (Store is; counters are
// relaxed atomics: they are statistics, nothing is ordered by them).
#ifndef SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_
#define SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_

#include <atomic>
#include <cstdint>

#include "shardfilter/persistence/internal/store.h"

namespace shardfilter::internal {

class JournalSink {
 public:
  explicit JournalSink(persistence::Store* store, bool rocksdb_only = false,
                       uint64_t mapped_min_bytes = 0)
      : store_(store),
        rocksdb_only_(rocksdb_only),
        mapped_min_bytes_(mapped_min_bytes) {}
  // DatabaseOptions::journal_in_rocksdb.
  bool rocksdb_only() const { return rocksdb_only_; }
  // DatabaseOptions::mapped_journal_min_bytes (FilterLog L6).
  uint64_t mapped_min_bytes() const { return mapped_min_bytes_; }

  Status Write(persistence::JournalBatch* batch, bool sync) {
    Status s = store_->WriteJournal(batch, sync);
    if (s.ok()) {
      writes_.fetch_add(1, std::memory_order_relaxed);
      ops_.fetch_add(batch->hashes(), std::memory_order_relaxed);
    }
    return s;
  }
  // An op (or batch) journalled elsewhere (the memory-mapped journal).
  void Count(uint64_t ops) {
    writes_.fetch_add(1, std::memory_order_relaxed);
    ops_.fetch_add(ops, std::memory_order_relaxed);
  }
  persistence::Store* store() const { return store_; }
  uint64_t writes() const { return writes_.load(std::memory_order_relaxed); }
  uint64_t ops() const { return ops_.load(std::memory_order_relaxed); }

 private:
  persistence::Store* store_;  // not owned; outlives the sink
  bool rocksdb_only_ = false;
  uint64_t mapped_min_bytes_ = 0;
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> ops_{0};
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_
