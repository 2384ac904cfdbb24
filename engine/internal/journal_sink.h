// Where a ShardedFilter owned by a Database sends its journal entries: the
// Store, plus the Database's counters. Thread-safe (Store is; counters are
// striped by thread, filters/detail/thread_stripe.h: statistics, nothing is
// ordered by them).
//
// Write is virtual and its one implementation (StoreJournalSink, in
// journal_sink.cc) lives with the Database, so that the in-memory engine
// (shardfilter_memory: ShardedFilter without a store, for the Redis module)
// links no RocksDB: a standalone filter never has a sink. Every call into
// the store is virtual too (JournalEpoch, PutJournalEpoch); store() is only
// read for the store's path.
#ifndef SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_
#define SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_

#include <atomic>
#include <cstdint>
#include <string_view>

#include "shardfilter/filters/detail/thread_stripe.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

class JournalSink {
 public:
  virtual ~JournalSink() = default;
  explicit JournalSink(persistence::Store* store, bool rocksdb_only = false,
                       uint64_t mapped_min_bytes = 0)
      : store_(store),
        rocksdb_only_(rocksdb_only),
        mapped_min_bytes_(mapped_min_bytes) {}
  // DatabaseOptions::journal_in_rocksdb.
  bool rocksdb_only() const { return rocksdb_only_; }
  // DatabaseOptions::mapped_journal_min_bytes (FilterLog L6).
  uint64_t mapped_min_bytes() const { return mapped_min_bytes_; }

  // Writes the batch to the store's journal (fsynced when `sync`).
  virtual Status Write(persistence::JournalBatch* batch, bool sync) = 0;
  // The filter's journal epoch (0: none yet) / records a new one, synced
  // (FilterLog's segments are named by it).
  virtual Result<uint64_t> JournalEpoch(std::string_view filter) = 0;
  virtual Status PutJournalEpoch(std::string_view filter, uint64_t epoch) = 0;
  // An op (or batch) journalled elsewhere (the memory-mapped journal).
  void Count(uint64_t ops) { Counted(ops); }
  persistence::Store* store() const { return store_; }
  uint64_t writes() const { return writes_.Load(); }
  uint64_t ops() const { return ops_.Load(); }

 protected:
  // Striped by thread (filters/detail/thread_stripe.h): every journalled op
  // of every filter of the Database counts here.
  void Counted(uint64_t ops) {
    writes_.Add(1);
    ops_.Add(ops);
  }

 private:
  persistence::Store* store_;  // not owned; outlives the sink
  bool rocksdb_only_ = false;
  uint64_t mapped_min_bytes_ = 0;
  ThreadStripedCount writes_;
  ThreadStripedCount ops_;
};

// The Database's sink: Store::WriteJournal (engine/internal/journal_sink.cc).
class StoreJournalSink final : public JournalSink {
 public:
  using JournalSink::JournalSink;
  Status Write(persistence::JournalBatch* batch, bool sync) override;
  Result<uint64_t> JournalEpoch(std::string_view filter) override;
  Status PutJournalEpoch(std::string_view filter, uint64_t epoch) override;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_
