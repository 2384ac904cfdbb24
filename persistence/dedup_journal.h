// DedupJournal: durability journal for a dedup set without a RocksDB write
// per call. A commit is one record copied into the set's memory-mapped log
// (persistence/log/dedup_log.h) plus the ops put into an in-memory
// overlay; when the log's active region is full the records move into RocksDB
// in one WriteBatch (WAL on) and the region is cleared. Reads consult the
// overlay first, then RocksDB. Recovery (Replay) moves whatever a crash left in
// the log into RocksDB before the set's filters are rebuilt.
//
// Invariants:
//  J1. Order: every op reaches RocksDB in commit order. Records of one
//      region are flushed in seq order; regions are flushed one at a time
//      (flush_mu) and alternate, so a region's records are all older than
//      the active region's. A commit of many ops (a batch: one RocksDB
//      write costs it little per op) or too large for a region first
//      flushes the whole log, then writes RocksDB directly: the caller
//      holds its keys, so none of them is logged meanwhile.
//  J2. The overlay holds, per key, the last op committed to the log and its
//      seq (the key's newest state). An entry is erased only after its
//      record is in RocksDB, and only if its seq is still the key's latest,
//      so a reader that misses the overlay finds the key's state in
//      RocksDB. The overlay is updated under log_mu, in the same critical
//      section as the append, so a record is never flushed before its
//      overlay entry exists.
//  J3. A failed commit changes nothing: the record is appended only once
//      there is room, and a failed flush leaves its region full (and
//      durable) for the next commit to retry.
//  J4. Lock order: flush_mu, then log_mu, then one overlay shard's mutex
//      (a leaf). A region is written under log_mu while active; an
//      inactive region is read and cleared under flush_mu only (Swap holds
//      both).
//
// The caller serializes commits and reads of the same key (the dedup
// store's key stripes); commits of different keys may run concurrently.
#ifndef SHARDFILTER_PERSISTENCE_DEDUP_JOURNAL_H_
#define SHARDFILTER_PERSISTENCE_DEDUP_JOURNAL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shardfilter/persistence/dedup_table.h"
#include "shardfilter/persistence/log/dedup_log.h"

namespace shardfilter::persistence {

// Applies ops to a batch as DedupBatch calls.
void AddOps(std::string_view set, const std::vector<DedupOp>& ops,
            DedupBatch* batch);

class DedupJournal {
 public:
  // Moves the records left in the set's log (if any) into the table in one
  // synced write and removes the file. Returns the ops moved. The table
  // must be writable. Corruption when the log is damaged or missing while
  // the set's journal marker is present (nothing moved).
  static Result<uint64_t> Replay(DedupTable* table, Env& env,
                                 const std::string& path, std::string_view set);
  // Removes the set's log without reading it (for a set created new: any
  // file there is debris).
  static Status Remove(Env& env, const std::string& path);
  // The Corruption of a log file that is gone while the set's journal
  // marker says it holds records (DedupTable::PutJournalMarker).
  static Status MissingJournal(const std::string& path, std::string_view set);

  // A writable journal over a fresh log of two regions of `region_bytes`.
  // Its files go through `env` (the store's, Store::log_env).
  static Result<std::unique_ptr<DedupJournal>> Create(DedupTable* table,
                                                      Env& env,
                                                      const std::string& path,
                                                      std::string_view set,
                                                      uint64_t region_bytes);
  // A read-only view: the overlay holds the log's records (nothing is
  // written anywhere). Without a log file the overlay is empty.
  static Result<std::unique_ptr<DedupJournal>> OpenReadOnly(
      DedupTable* table, Env& env, const std::string& path,
      std::string_view set);

  ~DedupJournal();
  DedupJournal(const DedupJournal&) = delete;
  DedupJournal& operator=(const DedupJournal&) = delete;

  // The key's entry: the overlay's newest op, else RocksDB.
  Result<std::optional<DedupEntry>> Get(std::string_view key) const;
  // out[i] for keys[i]. REQUIRES: out->size() == keys.size().
  Status MultiGet(std::span<const std::string_view> keys,
                  std::vector<std::optional<DedupEntry>>* out) const;
  // Makes the ops durable (survive kill -9) and visible to Get. On error
  // nothing changed.
  Status Commit(const std::vector<DedupOp>& ops);
  // Moves every record into RocksDB (WAL on) and clears the log.
  Status Flush();
  // fn(key, entry or nullopt when deleted) for every key of the overlay.
  void ForEachPending(
      const std::function<void(std::string_view,
                               const std::optional<DedupEntry>&)>& fn) const;

  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }

 private:
  struct Pending {
    uint64_t seq = 0;
    std::optional<DedupEntry> entry;  // nullopt: deleted
  };
  // Looks keys up by string_view, without building a std::string.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const {
      return std::hash<std::string_view>()(k);
    }
  };
  struct alignas(64) Shard {
    mutable std::mutex mu;  // J4: leaf
    std::unordered_map<std::string, Pending, KeyHash, std::equal_to<>> map;
  };
  static constexpr size_t kShards = 64;
  // Commits of at least this many ops go to RocksDB directly (J1): one
  // write() shared by 16+ ops costs each less than logging it (measured
  // at 1e7 keys: batches of 1024 took 1.26 us per key direct, 1.63 us
  // through the log).
  static constexpr size_t kDirectOps = 16;

  DedupJournal(DedupTable* table, std::string_view set);
  Shard& ShardOf(std::string_view key) const;
  // Puts a record's ops into the overlay (under log_mu_ for commits).
  void Remember(uint64_t seq, const std::vector<DedupOp>& ops);
  // J2: erases the overlay entries of flushed records.
  void Forget(const std::vector<DedupLogRecord>& records);
  // Writes region r's records into RocksDB and clears it.
  // REQUIRES: flush_mu_ held, r inactive.
  Status FlushRegion(int r);
  // Flushes the inactive region (when not empty), then the active one.
  // REQUIRES: flush_mu_ held.
  Status FlushAllLocked();

  DedupTable* const table_;
  const std::string set_;
  std::unique_ptr<DedupLog> log_;  // null in a read-only journal
  std::mutex flush_mu_;            // J4
  std::mutex log_mu_;              // J4: appends, Swap
  uint64_t next_seq_ = 1;          // GUARDED_BY(log_mu_)
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> flushes_{0};
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_DEDUP_JOURNAL_H_
