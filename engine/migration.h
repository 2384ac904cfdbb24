// Online migration of a live filter into a new one of another type,
// capacity, rate or shard count (Database::StartMigration), while adds,
// removes and queries go on.
//
// How (docs/design.md, "Online migration"):
//  1. The cut: with every source shard lock held exclusive for an instant
//     (no mutation in flight; queries go on), the migration attaches itself
//     to the source and takes a RocksDB snapshot of the retained hashes
//     (or folds the source's Bloom blocks).
//  2. The fill: a background thread adds the snapshot's hashes to the
//     target (in memory). Every mutation acknowledged after the cut is also
//     queued, per source shard in apply order, and replayed on the target
//     after the fill (Bloom adds, which commute, as it goes).
//  3. The pre-write: the target's shards are written as checkpoint chunks
//     of a new generation and the WAL is synced, while writers go on (their
//     ops queue up; checkpoints of the source are held off meanwhile).
//  4. The switch: with the source's checkpoint mutex and every shard lock
//     held exclusive (writers wait; queries go on against the source), the
//     rest of the queue is replayed on the target and one synced RocksDB
//     write commits the new descriptor, those ops as the target's first
//     journal entries, and the deletion of the source's chunks and journal.
//     Handles to the source then forward every call to the target.
// Queries are answered by the source until the switch and by the target
// after it; both hold every acknowledged key, so there is no false negative
// at any moment. A crash before the commit leaves the source as it was (the
// migration is rolled back: the debris of step 3 is collected on the next
// open); after it, the target. Nothing half-built is ever in service.
//
// Sources of the keys:
//  * retained hashes (FilterSpec::retain_hashes): any target type,
//    capacity, rate and shard count with the same seed;
//  * folding (Bloom only, no retained hashes needed): a blocked Bloom
//    filter whose shards have not grown folds to 1/2^j of its size, with
//    capacity / 2^j at the same rate (BloomFilter::Fold; FoldedSpec).
// Anything else is InvalidArgument saying why and what would make it
// possible (the keys themselves: `shardfilter migrate --keys`).
#ifndef SHARDFILTER_ENGINE_MIGRATION_H_
#define SHARDFILTER_ENGINE_MIGRATION_H_

#include <cstdint>

#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

enum class MigrationSource : uint8_t {
  kAuto = 0,            // retained hashes when kept, else folding if possible
  kRetainedHashes = 1,  // FilterSpec::retain_hashes
  kFold = 2,            // BloomFilter::Fold
};
const char* MigrationSourceName(MigrationSource s);

enum class MigrationPhase : uint8_t {
  kFilling = 0,    // copying the snapshot into the target
  kDraining = 1,   // replaying ops acknowledged since the cut
  kSwitching = 2,  // writers paused; writing and committing the target
  kDone = 3,       // the target is in service
  kFailed = 4,     // rolled back (status says why); the source serves on
  kAborted = 5,    // AbortMigration / Close / Drop; the source serves on
};
const char* MigrationPhaseName(MigrationPhase p);

struct MigrationProgress {
  MigrationPhase phase = MigrationPhase::kFilling;
  MigrationSource source = MigrationSource::kAuto;  // as resolved
  FilterSpec target;                                // resolved
  uint64_t items_total = 0;     // estimate: the source's items at the cut
  uint64_t items_done = 0;      // hashes (or folded shards' items) copied
  uint64_t ops_replayed = 0;    // ops acknowledged during the migration
  uint64_t ops_queued = 0;      // of which still waiting to be replayed
  uint64_t write_pause_ns = 0;  // writers blocked: cut + switch
  double seconds = 0;           // since the start (to the end when over)
  Status status;                // why it failed (kFailed / kAborted)
  bool finished() const { return phase >= MigrationPhase::kDone; }
};

// The spec a fold by `factor` produces from `source`: capacity / factor,
// everything else equal (shards, seed, k, rate, layout, growth).
FilterSpec FoldedSpec(const FilterSpec& source, uint32_t factor);

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_MIGRATION_H_
