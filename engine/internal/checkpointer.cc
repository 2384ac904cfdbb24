#include "shardfilter/engine/internal/checkpointer.h"

#include <chrono>
#include <string>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"

namespace shardfilter::internal {

using persistence::FilterDescriptor;

Status CheckpointFilter(persistence::Store* store, ShardedFilter& f,
                        FilterState* state, uint32_t chunk_bytes,
                        CheckpointStats* stats) {
  // L5: a stopped filter is healed by a checkpoint of every shard.
  FilterLog* log = ShardedFilterAccess::log(f);
  const bool healing = log != nullptr && log->failed();
  FilterDescriptor next = state->committed;
  std::vector<uint32_t> changed;
  auto redirty = [&] {
    for (uint32_t s : changed) {
      ShardedFilterAccess::shard(f, s).dirty.store(true,
                                                   std::memory_order_relaxed);
    }
  };
  // L7, T2: thread segments' records of generations <= covered are in
  // this checkpoint once it commits, provided every shard is looked at
  // under its exclusive lock from here on.
  const uint64_t covered = log != nullptr ? log->BeginThreadGeneration() : 0;
  for (uint32_t i = 0; i < f.shard_count(); ++i) {
    Shard& sh = ShardedFilterAccess::shard(f, i);
    ExclusiveShardLock lock;
    // Relaxed read without the lock: a mutation that sets dirty after this
    // load is journalled with a sequence above what we would record, so it
    // is postponed to the next checkpoint, never lost. Not so a thread
    // segment's record (no sequence): with those, a clean-looking shard is
    // looked at again under its lock (T2), which waits out the adds in
    // flight of the generations this checkpoint covers.
    if (!healing && !sh.dirty.load(std::memory_order_relaxed)) {
      if (covered != 0) lock = LockExclusive(sh);
      if (!lock.owns_lock() || !sh.dirty.load(std::memory_order_relaxed)) {
        ++stats->shards_skipped;
        continue;
      }
    }
    std::string blob;
    uint64_t seq;
    auto t0 = std::chrono::steady_clock::now();
    {
      if (!lock.owns_lock()) lock = LockExclusive(sh);  // S2, S5
      blob = ChainSerialize(sh);  // S6: no growth runs either
      seq = sh.last_seq.load(std::memory_order_relaxed);
      sh.dirty.store(false, std::memory_order_relaxed);
      lock.unlock();
    }
    uint64_t held = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    if (held > stats->max_lock_hold_ns) stats->max_lock_hold_ns = held;
    changed.push_back(i);
    auto record = store->WriteChunks(f.name(), i, next.shards[i].generation + 1,
                                     blob, chunk_bytes);
    if (!record.ok()) {
      redirty();
      return record.status();
    }
    record->sequence = seq;
    next.shards[i] = *record;
    stats->chunks_written += record->chunk_count;
    stats->bytes_written += record->byte_length;
  }
  if (changed.empty()) {
    // Every shard clean under its lock: the committed state holds every
    // record of the generations covered (T2).
    if (covered != 0) log->RetireThreadSegments(covered);
    if (log != nullptr) log->ReleaseIdleSpares(covered, changed);  // L6, L7
    return Status::OK();
  }
  Status s = store->CommitCheckpoint(f.name(), next, changed);
  if (!s.ok()) {
    redirty();
    return s;
  }
  if (covered != 0) log->RetireThreadSegments(covered);  // T2
  state->committed = next;
  for (uint32_t i : changed) {
    if (log != nullptr) {
      if (healing) log->Heal(i, next.shards[i].sequence);  // L5
      log->Retire(i, next.shards[i].sequence);
    }
    Shard& sh = ShardedFilterAccess::shard(f, i);
    sh.NoteCheckpoint(next.shards[i].generation, next.shards[i].sequence,
                      next.shards[i].byte_length);
  }
  if (healing) log->ClearFailure();  // L5: every shard was written
  if (log != nullptr) log->ReleaseIdleSpares(covered, changed);  // L6, L7
  stats->shards_written += static_cast<uint32_t>(changed.size());
  ++stats->filters_checkpointed;
  return Status::OK();
}

}  // namespace shardfilter::internal
