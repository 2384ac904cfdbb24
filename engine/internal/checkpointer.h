// Checkpoint of one ShardedFilter against the Store (its recovery is
// engine/internal/recovery.h).
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

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_CHECKPOINTER_H_
