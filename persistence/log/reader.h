// Reading the filter journal back (replay at recovery, Verify): the one
// reader of the segment formats (log/format.h sections 1 and 2). It lists
// an epoch's segments, opens each through the Env, checks that its header
// names this filter, applies the boot rule (P2: J3, T3) and the file's
// size, decodes its records, and orders a shard's segments for replay (J2).
// What replay then does with the records (merge them with the RocksDB
// journal family's, apply them up to the first gap) is the engine's
// (engine/internal/recovery.cc).
//
// Thread safety: functions are; a ShardSegments is used by one thread.
#ifndef SHARDFILTER_PERSISTENCE_LOG_READER_H_
#define SHARDFILTER_PERSISTENCE_LOG_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/log/format.h"
#include "shardfilter/persistence/log/segment.h"

namespace shardfilter::persistence {

// Whose segments are read: a filter's name (as its headers hold it), its
// epoch and shard count, and `what` for messages (e.g. `filter "f"`).
struct LogOwner {
  std::string name;
  uint64_t epoch = 0;
  uint32_t shards = 0;
  std::string what;
};

// An epoch directory's segments: per shard in number order, and the
// thread segments (in path order: their adds commute).
struct EpochFiles {
  std::vector<std::vector<std::string>> shards;
  std::vector<std::string> threads;
};
// None for epoch 0 or a directory not made yet; a ".tmp" a kill left is
// not a segment. Corruption for a per-shard segment of a shard >= shards.
Result<EpochFiles> ListEpoch(Env& env, std::string_view store_path,
                             const LogOwner& owner);

// One segment read back. The returned Status is about the file: it could
// not be opened, or its header is not this owner's (Corruption). Damage in
// its records (J3, T3, or a file shorter than its header says within the
// boot that wrote it) goes to *damage, with the records before it in *out.
Status ReadShardSegment(Env& env, const std::string& path,
                        const LogOwner& owner, uint32_t shard,
                        std::shared_ptr<Segment>* seg,
                        std::vector<FilterJournalRecord>* out, uint64_t* base,
                        Status* damage);
Status ReadThreadSegment(Env& env, const std::string& path,
                         const LogOwner& owner, std::shared_ptr<Segment>* seg,
                         std::vector<ThreadRecord>* out, Status* damage);

// A shard's segments, read and put in activation order for replay (J2).
class ShardSegments {
 public:
  // Reads `paths` (ListEpoch's for the shard). Damage is Corruption, or
  // with `tolerate_damage` the end of what is read: the records before it,
  // and no later segment (replay stops at the gap anyway).
  Status Read(Env& env, const std::vector<std::string>& paths,
              const LogOwner& owner, uint32_t shard, bool tolerate_damage);
  // The records with seq > after, in seq order, a "no op" record as one
  // without hashes; J2: a later segment supersedes an earlier one's
  // records from its base on. Notes each segment's highest live seq.
  std::vector<FilterJournalRecord> Collect(uint64_t after);
  // Once replay stopped at `last`: each segment's max_seq set to what it
  // replayed (a checkpoint's retire reads it), and the segments handed
  // over, in activation order, for the log to adopt.
  std::vector<std::shared_ptr<Segment>> Finish(uint64_t last);

 private:
  // A segment without records supersedes nothing.
  uint64_t BaseOf(size_t k) const {
    return bases_[k] != 0 ? bases_[k] : ~uint64_t{0};
  }
  std::vector<std::shared_ptr<Segment>> segs_;
  std::vector<std::vector<FilterJournalRecord>> recs_;
  std::vector<uint64_t> bases_;  // J2: first record header's seq, 0 if none
  std::vector<uint64_t> max_;    // each segment's highest live record seq
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_READER_H_
