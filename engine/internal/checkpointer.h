// Checkpoint and recovery of one ShardedFilter against the Store.
//
// Checkpoint protocol (docs/format-store.md, "Checkpoints"):
//  1. For each dirty shard: take its lock exclusive, Serialize() it and read
//     its last sequence S, clear dirty, release (Shard invariant S2: every
//     op <= S is in the copy, none after it).
//  2. Write the copy's chunks under generation = committed + 1 (several
//     unsynced WriteBatches).
//  3. One synced WriteBatch (the commit): the descriptor with the new
//     generation and S for every written shard, deletion of every other
//     generation's chunks and of the journal entries <= S.
// A crash before 3 leaves the previous checkpoint and the whole journal
// intact; the debris of 2 is collected on the next writable open.
//
// Thread safety: callers serialise calls for one filter with its
// FilterState::mu (lock order: Database catalog mutex, then FilterState::mu,
// then shard locks).
#ifndef SHARDFILTER_ENGINE_INTERNAL_CHECKPOINTER_H_
#define SHARDFILTER_ENGINE_INTERNAL_CHECKPOINTER_H_

#include <memory>
#include <mutex>
#include <string_view>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/internal/thread_annotations.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

// The persistent side of one open filter.
struct FilterState {
  FilterState() = default;
  // A state not shared yet: the constructor needs no lock.
  explicit FilterState(persistence::FilterDescriptor d)
      : committed(std::move(d)) {}
  // One checkpoint / drop of this filter at a time (lock order 2).
  Mutex mu;
  persistence::FilterDescriptor committed SF_GUARDED_BY(mu);
  bool dropped SF_GUARDED_BY(mu) = false;
  // A migration is writing its target's chunks (engine/internal/
  // migration_run.cc): checkpoints skip the filter meanwhile, so that no
  // two writers produce chunks of one generation.
  bool migrating SF_GUARDED_BY(mu) = false;
};

// Checkpoints the dirty shards of `f`. REQUIRES: state->mu held. Adds to
// *stats. On failure the shards stay dirty and the previous checkpoint
// stays committed.
Status CheckpointFilter(persistence::Store* store, ShardedFilter& f,
                        FilterState* state, uint32_t chunk_bytes,
                        CheckpointStats* stats) SF_REQUIRES(state->mu);

// Rebuilds a filter from its descriptor: loads and checks each shard's
// committed blob (or builds an empty shard for generation 0), then replays
// the journal after the checkpoint. Shards are recovered in parallel.
// *replayed / *skipped_removes receive the replay counts.
// The filter's tables are charged to `account` before any shard is read
// (ResourceExhausted naming the filter when over the budget).
// The filter's memory-mapped journal (engine/internal/filter_log.h) is
// replayed after the RocksDB journal family's entries, each shard in seq
// order up to its first gap. `tolerate_damage`: a damaged record ends its
// shard's replay quietly (read-only verify opens) instead of failing with
// Corruption. *stale_after (optional) receives per shard the last seq
// replayed when RocksDB journal entries past it (never acknowledged: after
// a gap) remain, else ~0: a writable open deletes them
// (Store::DeleteJournalAfter) before new ops reuse those seqs.
Result<std::unique_ptr<ShardedFilter>> RecoverFilter(
    const persistence::Store& store, std::string_view name,
    const persistence::FilterDescriptor& d, uint64_t* replayed,
    uint64_t* skipped_removes, std::shared_ptr<MemoryAccount> account,
    bool tolerate_damage = false, std::vector<uint64_t>* stale_after = nullptr);

// Reads every segment of the filter's journal: *records += the records
// past the checkpoint; each damaged segment adds a problem (Verify).
Status ScanFilterJournal(const persistence::Store& store, std::string_view name,
                         const persistence::FilterDescriptor& d,
                         uint64_t* records, std::vector<std::string>* problems);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_CHECKPOINTER_H_
