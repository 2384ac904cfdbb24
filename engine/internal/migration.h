// The state of one online migration (engine/migration.h): the target being
// built, the queue of ops acknowledged since the cut, progress counters and
// the background thread. Driven by engine/migration.cc.
//
// Invariants (numbered; the code cites them):
//  M1. The cut: `source->migration_` is set to this object while every
//      source shard lock is held exclusive, and the snapshot of the retained
//      hashes (or the fold) is taken under the same locks. So every op
//      acknowledged before the cut is in the snapshot, and every op after it
//      is Record()ed here (mutations read migration_ under their shard lock).
//  M2. Record() is called under the op's shard lock, and for ordered types
//      (counting, cuckoo) under order_mu in the same critical section that
//      applied the op: each source shard's queue is in apply order. Ops on
//      one hash always use one source shard, so replaying the queues shard
//      by shard preserves every hash's order of adds and removes. An op that
//      is undone (journal write failed) records its inverse.
//  M3. For ordered sources the queue is replayed only after the whole
//      snapshot is in the target (a remove of a key the fill has not reached
//      yet would find nothing). Bloom sources have only adds, which commute:
//      their queue is replayed as the fill goes, to bound its memory.
//  M4. `source->migration_` is cleared (and, on success, `forward_` set)
//      while every source shard lock is held exclusive, before this object
//      can be destroyed: no mutation holds a pointer to it afterwards.
//  M5. Lock order: Database catalog mutex, then the source's FilterState::mu,
//      then its shard locks ascending, then a queue mutex (leaf).
//  M6. A Bloom source is a set; a counting or cuckoo target a multiset. So
//      that the target holds one copy per key: the fill adds each retained
//      hash once (whatever its count: one per add, duplicates included);
//      a queued add that found the key present in the source
//      (maybe_present) is replayed only if the target does not already
//      hold it (and once per hash within a drain); and the queue is
//      replayed only after the fill (a key the fill has not reached yet
//      would otherwise get a second copy from it). An add that set new
//      bits in the source is a key it did not hold, never in the snapshot:
//      always replayed.
#ifndef SHARDFILTER_ENGINE_INTERNAL_MIGRATION_H_
#define SHARDFILTER_ENGINE_INTERNAL_MIGRATION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "shardfilter/engine/internal/checkpointer.h"
#include "shardfilter/engine/migration.h"
#include "shardfilter/engine/sharded_filter.h"

namespace shardfilter::internal {

struct QueuedOp {
  uint64_t hash;
  bool remove;
  // M6: a Bloom source's add that found the key present already.
  bool maybe_present;
};

class Migration {
 public:
  Migration(uint32_t source_shards, MigrationSource source,
            const FilterSpec& target)
      : queues_(source_shards), source_(source), target_spec_(target) {
    start_ = std::chrono::steady_clock::now();
  }

  // M2. Thread-safe (one mutex per source shard).
  void Record(uint32_t shard, uint64_t hash, bool remove,
              bool maybe_present = false) {
    Queue& q = queues_[shard];
    std::lock_guard lock(q.mu);
    q.ops.push_back({hash, remove, maybe_present});
    queued_.fetch_add(1, std::memory_order_relaxed);
  }
  // Moves out shard i's queued ops (in order).
  std::vector<QueuedOp> Take(uint32_t shard) {
    Queue& q = queues_[shard];
    std::vector<QueuedOp> out;
    std::lock_guard lock(q.mu);
    out.swap(q.ops);
    return out;
  }
  uint32_t queue_count() const { return static_cast<uint32_t>(queues_.size()); }

  MigrationProgress Progress() const;
  void SetPhase(MigrationPhase p) {
    phase_.store(p, std::memory_order_release);
  }
  // Final state; the status says why for kFailed / kAborted.
  void Finish(MigrationPhase p, Status s);
  // Blocks until Finish.
  void Wait();

  // --- Set by the driver (engine/migration.cc) ---
  std::shared_ptr<ShardedFilter> source;  // the filter being migrated
  std::shared_ptr<FilterState> source_state;
  std::unique_ptr<ShardedFilter> target;  // built in memory until the switch
  std::atomic<bool> abort{false};
  std::thread thread;
  // Progress counters (relaxed: figures only).
  std::atomic<uint64_t> items_total{0};
  std::atomic<uint64_t> items_done{0};
  std::atomic<uint64_t> replayed{0};
  std::atomic<uint64_t> pause_ns{0};
  std::atomic<uint64_t> queued_{0};  // Record()s minus replayed

  MigrationSource source_kind() const { return source_; }
  const FilterSpec& target_spec() const { return target_spec_; }

 private:
  struct Queue {
    std::mutex mu;
    std::vector<QueuedOp> ops;  // GUARDED_BY(mu)
  };
  std::vector<Queue> queues_;
  const MigrationSource source_;
  const FilterSpec target_spec_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<MigrationPhase> phase_{MigrationPhase::kFilling};
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  Status status_;                                // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point end_{};  // GUARDED_BY(mu_)
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_MIGRATION_H_
