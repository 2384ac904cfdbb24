// Recovery of one ShardedFilter from the Store: its committed checkpoint,
// then its journal (the RocksDB journal family's entries and the
// memory-mapped segments, engine/internal/filter_log.h, merged by seq).
// The checkpoint side is engine/internal/checkpointer.h.
#ifndef SHARDFILTER_ENGINE_INTERNAL_RECOVERY_H_
#define SHARDFILTER_ENGINE_INTERNAL_RECOVERY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

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

#endif  // SHARDFILTER_ENGINE_INTERNAL_RECOVERY_H_
