// Where a ShardedFilter owned by a Database sends its journal entries: the
// Store, plus the Database's counters. Thread-safe (Store is; counters are
// relaxed atomics: they are statistics, nothing is ordered by them).
#ifndef SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_
#define SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_

#include <atomic>
#include <cstdint>

#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

class JournalSink {
 public:
  explicit JournalSink(persistence::Store* store) : store_(store) {}

  Status Write(persistence::JournalBatch* batch, bool sync) {
    Status s = store_->WriteJournal(batch, sync);
    if (s.ok()) {
      writes_.fetch_add(1, std::memory_order_relaxed);
      ops_.fetch_add(batch->hashes(), std::memory_order_relaxed);
    }
    return s;
  }
  uint64_t writes() const { return writes_.load(std::memory_order_relaxed); }
  uint64_t ops() const { return ops_.load(std::memory_order_relaxed); }

 private:
  persistence::Store* store_;  // not owned; outlives the sink
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> ops_{0};
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_JOURNAL_SINK_H_
