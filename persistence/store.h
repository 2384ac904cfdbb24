// Store: the RocksDB directory that holds a Database's catalog, checkpoint
// chunks and journal, one column family each (docs/format-store.md), and,
// once a dedup set was created, the dedup families (docs/dedup.md).
//
// This is the only place that talks to RocksDB; every rocksdb::Status is
// converted to a shardfilter Status here (IOError, Corruption, Busy, ...),
// with the operation and the filter named. It knows nothing of shards'
// in-memory state, locks or the checkpoint protocol: the engine drives it.
//
// Thread safety: all methods may be called concurrently (RocksDB is
// thread-safe); a read-only Store refuses every write with NotSupported.
#ifndef SHARDFILTER_PERSISTENCE_STORE_H_
#define SHARDFILTER_PERSISTENCE_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/dedup_table.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/retained_hashes.h"
#include "shardfilter/persistence/sync_marker.h"
#include "shardfilter/persistence/values.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace shardfilter::persistence {

struct StoreOptions {
  std::string path;
  bool create_if_missing = true;
  bool read_only = false;
};

struct CatalogEntry {
  std::string name;
  FilterDescriptor descriptor;
};

// Journal entries gathered for one RocksDB write (one WAL record, one sync).
class JournalBatch {
 public:
  // REQUIRES: every entry of a batch names the same filter.
  void Add(std::string_view name, uint32_t shard, uint64_t seq, JournalOp op,
           std::span<const uint64_t> hashes);
  // The same ops' retained hashes (persistence/retained_hashes.h): one
  // merge of +1 (add) or -1 (remove) per hash, written in the same
  // WriteBatch as the journal entries.
  void Retain(std::string_view name, JournalOp op,
              std::span<const uint64_t> hashes);
  size_t entries() const { return entries_; }
  size_t hashes() const { return hashes_; }
  // The filter its entries name (empty before the first).
  const std::string& name() const { return name_; }

 private:
  friend class Store;
  std::string name_;
  std::vector<std::pair<std::string, std::string>> pending_;   // key, value
  std::vector<std::pair<std::string, std::string>> retained_;  // key, delta
  size_t entries_ = 0;
  size_t hashes_ = 0;
};

// What Verify found; see engine/database.h VerifyReport for the meaning.
struct StoreVerifyReport {
  uint64_t filters = 0;
  uint64_t chunks = 0;
  uint64_t shard_blobs = 0;
  uint64_t journal_entries = 0;
  uint64_t retained_hashes = 0;
  uint64_t bytes = 0;
  uint64_t orphan_values = 0;
  std::vector<std::string> problems;
  // What is worth knowing but is no damage (a torn tail of the log).
  std::vector<std::string> notes;
};

class Store {
 public:
  // Opens or creates the directory with the three column families. A store
  // is created only in a missing or empty directory (docs/format-store.md,
  // "Opening a directory"): NotFound when there is none and
  // !create_if_missing (or read_only); InvalidArgument for a non-empty
  // directory that is not a store or a RocksDB without our column
  // families; Corruption naming the missing or damaged file (CURRENT,
  // MANIFEST, write-ahead log) for a store that does not open, which is
  // then left untouched; IOError / Busy (lock held) from RocksDB.
  static Result<std::unique_ptr<Store>> Open(const StoreOptions& options);
  ~Store();  // closes RocksDB

  bool read_only() const { return read_only_; }

  // Every catalog entry, decoded and checked, in name order. A bad
  // descriptor fails the call (Corruption / NotSupported naming it), or,
  // when `bad` is given, is reported there (name, why) and skipped.
  Result<std::vector<CatalogEntry>> LoadCatalog(
      std::vector<std::pair<std::string, Status>>* bad = nullptr) const;

  // One WriteBatch: removes any stray shard/journal values of the name,
  // puts the descriptor; synced when `sync` (a filter of durability sync),
  // else written to RocksDB's log only (it survives a process crash; a
  // power loss takes it only with every later write, since the log keeps
  // its order and any later synced write syncs it too).
  Status CreateFilter(std::string_view name, const FilterDescriptor& d,
                      bool sync);
  // One synced WriteBatch: deletes descriptor, chunks and journal.
  Status DropFilter(std::string_view name);

  // Writes the batch (WAL on; fsync first when sync).
  Status WriteJournal(JournalBatch* batch, bool sync);
  // Calls fn(seq, entry) for every journal entry of (name, shard) with
  // sequence > after, in sequence order, each decoded and checked
  // (Corruption / NotSupported naming filter, shard and sequence).
  Status ReadJournal(
      std::string_view name, uint32_t shard, uint64_t after,
      const std::function<Status(uint64_t, const JournalEntry&)>& fn) const;

  // Writes `blob` as chunks of at most chunk_bytes under (name, shard,
  // generation), in WriteBatches of about 16 MiB; unsynced (the commit's
  // sync covers them: RocksDB's WAL is one sequential log). Returns the
  // record describing them (sequence left 0 for the caller to fill).
  Result<ShardRecord> WriteChunks(std::string_view name, uint32_t shard,
                                  uint64_t generation, std::string_view blob,
                                  uint32_t chunk_bytes);
  // The checkpoint commit, one synced WriteBatch: puts `d`, and for each
  // shard in `changed` deletes every other generation's chunks and the
  // journal entries with sequence <= d.shards[shard].sequence.
  Status CommitCheckpoint(std::string_view name, const FilterDescriptor& d,
                          std::span<const uint32_t> changed);
  // Reassembles a committed shard blob, checking every chunk (present,
  // version, checksum), the total length and the blob's checksum.
  Result<std::string> LoadShardBlob(std::string_view name, uint32_t shard,
                                    const ShardRecord& record) const;
  // Deletes what an interrupted checkpoint left (chunks of generations
  // other than the committed one, journal entries the checkpoint made
  // obsolete). Finds debris with a few seeks per shard and writes nothing
  // when there is none. Unsynced; harmless to repeat. *removed_ranges
  // (optional) receives the number of key ranges that held debris.
  Status CollectGarbage(std::string_view name, const FilterDescriptor& d,
                        uint32_t* removed_ranges = nullptr);
  // The whole store's debris (store_garbage.cc G1-G3): CollectGarbage of
  // every catalog entry, every key under a name the catalog does not hold
  // (an import interrupted before its descriptor), the retained hashes of
  // a filter that does not retain them. `keep`: names whose descriptor
  // does not decode, left as they are. A writable store only.
  Status CollectStoreGarbage(const std::vector<CatalogEntry>& catalog,
                             const std::vector<std::string>& keep,
                             uint32_t* removed_ranges = nullptr);

  // --- Retained hashes (persistence/retained_hashes.h) ---
  // Creates the "hashes" family if missing (a writable store only).
  // CreateFilter calls it for a descriptor with retain_hashes.
  Status EnsureHashesFamily();
  // A snapshot scan of the filter's retained hashes (those above `after`
  // when set). NotFound when the store holds no retained hashes at all.
  Result<std::unique_ptr<RetainedHashScan>> ScanRetainedHashes(
      std::string_view name,
      std::optional<uint64_t> after = std::nullopt) const;
  // Writes the retained hashes (count 1 each) of a filter rebuilt from
  // keys (offline migration), unsynced; the commit's sync covers them.
  Status PutRetainedHashes(std::string_view name,
                           std::span<const uint64_t> hashes);

  // The commit of a migration (engine/migration.h), one synced WriteBatch:
  // puts `d` (whose shards all hold their new generation's chunks, already
  // written by WriteChunks), deletes every other chunk of the name (any
  // shard, any other generation) and the name's whole journal, and, unless
  // d.retain_hashes, the name's retained hashes.
  // `tail` (optional): journal entries of the new filter, put after the
  // deletions in the same write.
  Status CommitMigration(std::string_view name, const FilterDescriptor& d,
                         JournalBatch* tail = nullptr);
  // Flushes and fsyncs RocksDB's WAL (the chunks written so far become
  // durable, so that a later synced commit has little left to flush).
  Status SyncWal();
  // Compacts every column family down to its last level (a manual,
  // blocking RocksDB compaction): space of deleted and superseded values is
  // reclaimed, and retained hashes of count 0 are removed (R1).
  Status Compact();

  // The epoch of the filter's memory-mapped journal
  // (persistence/log/paths.h): 0 when it has none. Create, Drop
  // and CommitMigration delete it in their WriteBatch, so that a later filter
  // of the name never replays an earlier one's segments.
  Result<uint64_t> GetFilterJournalEpoch(std::string_view name) const;
  // The filters' expiry deadlines (persistence/filter_expiry.h), unix
  // ms. Put / Delete sync RocksDB's log when `sync` (the filter's durability
  // is sync); unsynced, the write is in the log file when they return (a
  // killed process loses nothing) and a later synced write covers it against
  // power loss. List: every (name, deadline); a value that
  // does not decode is reported in *bad (that filter then has no deadline: it
  // is never dropped for a deadline nobody can read) and Verify lists it.
  Status PutFilterExpiry(std::string_view name, int64_t unix_ms, bool sync);
  Status DeleteFilterExpiry(std::string_view name, bool sync);
  Result<std::vector<std::pair<std::string, int64_t>>> ListFilterExpiries(
      std::vector<std::string>* bad = nullptr) const;
  // Every epoch the store names, whether or not its filter opens (a filter
  // that is unavailable keeps its segments). Corruption if one of them
  // does not decode: then no epoch directory may be removed.
  Result<std::set<uint64_t>> ListFilterJournalEpochs() const;
  // Puts it (synced).
  Status PutFilterJournalEpoch(std::string_view name, uint64_t epoch);
  // Deletes (synced) the journal entries of (name, shard) with sequence >
  // after: entries recovery found past a gap, never acknowledged.
  Status DeleteJournalAfter(std::string_view name, uint32_t shard,
                            uint64_t after);

  // Reads back and checks every value in the three column families, the
  // loss records and the marker's findings (sync_marker.h W3, W4: each
  // object that lost writes acknowledged under durability sync is a
  // problem naming the sequences), and notes a write-ahead log that ends
  // inside a record (persistence/wal_tail.h).
  Status Verify(StoreVerifyReport* report) const;

  // RocksDB's memory now, summed over every column family (RocksDB's
  // approximate figures): memtables (active and unflushed), block caches,
  // table readers (indexes and filters held outside the cache).
  struct MemoryUsage {
    uint64_t memtables = 0;
    uint64_t block_cache = 0;
    uint64_t table_readers = 0;
    uint64_t total() const { return memtables + block_cache + table_readers; }
  };
  MemoryUsage ApproximateMemoryUsage() const;
  // Writes every memtable of the filter families (catalog, shards,
  // journal, retained hashes, default) out to table files and waits: their
  // memory goes back (a host under memory pressure). IOError otherwise.
  Status FlushMemtables();

  // --- Writes of durability sync through the log (sync_marker.h) ---
  // W5: OK, or the IOError that stops them. Checked before such a write.
  Status SyncWritable() const;
  // W3, W4: the object's writes acknowledged under sync and lost with the
  // log (its loss record; on a read-only store also what this open found
  // and did not record); nullopt when none.
  Result<std::optional<WalLoss>> LostSyncedWrites(SyncedKind kind,
                                                  std::string_view name) const;
  // Deletes the object's loss record (synced), for an object created anew.
  Status ClearLostSyncedWrites(SyncedKind kind, std::string_view name);

  // The dedup store's column families (persistence/dedup_table.h).
  // They are opened with the store when present; when missing, `create` on a
  // writable store creates them (so stores that never held a dedup set keep
  // their layout), otherwise NotFound. The table lives as long as the Store.
  Result<DedupTable*> Dedup(bool create);
  // The store's directory (the dedup journals live under it).
  const std::string& path() const { return path_; }
  // The journals' Env (persistence/log/env.h), over the file system
  // RocksDB's files use. Shared: a log (a filter handle's) may outlive the
  // Store.
  const std::shared_ptr<Env>& log_env() const { return log_env_; }

 private:
  // The tiered filters' descriptors and exact levels live in the default
  // column family (persistence/tiered_table.h), through db_ and Write.
  friend class TieredTable;

  Store() = default;
  // *last_seq (optional): the last RocksDB sequence the batch took.
  Status Write(rocksdb::WriteBatch* batch, bool sync, std::string_view what,
               uint64_t* last_seq = nullptr);
  // W3, W4 at open, once RocksDB replayed its log: `marker` is what was
  // read before (nullopt: none). A writable store records the losses and
  // opens the marker for writing (creating it when missing).
  Status CheckSyncMarker(std::optional<SyncMarkerState> marker);
  // Verify's part for sync_marker.h (store_verify.cc).
  Status VerifySyncedWrites(StoreVerifyReport* report) const;
  // Every object a slot in `slots` may belong to: (kind, name).
  Result<std::vector<std::pair<SyncedKind, std::string>>> ObjectsInSlots(
      const std::set<uint32_t>& slots) const;
  // True when the column family holds a key in [begin, end).
  class DebrisFinder;  // store_garbage.cc
  // Adds to `batch` the deletion of every key under `name` in the shards,
  // journal and hashes families, where there are any.
  Status DeleteNameDebris(std::string_view name, rocksdb::WriteBatch* batch);
  Status CollectGarbage(DebrisFinder& finder, std::string_view name,
                        const FilterDescriptor& d, uint32_t* removed_ranges);
  // Deletes every key range of `cf` under a name not in `named`; adds the
  // number of ranges to *removed_ranges.
  Status CollectUnnamed(rocksdb::ColumnFamilyHandle* cf,
                        const std::set<std::string, std::less<>>& named,
                        uint32_t* removed_ranges);

  rocksdb::DB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* catalog_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* shards_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* journal_cf_ = nullptr;
  // The "hashes" family, null until present or created. Set once (under
  // hashes_mu_), read by writers without the lock: acquire/release.
  std::mutex hashes_mu_;
  std::atomic<rocksdb::ColumnFamilyHandle*> hashes_cf_{nullptr};
  std::mutex dedup_mu_;                // guards creating dedup_
  std::unique_ptr<DedupTable> dedup_;  // null until present / created
  // One dedup family without the other (crash while creating them).
  rocksdb::ColumnFamilyHandle* half_dedup_ = nullptr;  // GUARDED_BY(dedup_mu_)
  bool read_only_ = false;
  // A write failed with an I/O error: the next one calls DB::Resume first.
  std::atomic<bool> needs_resume_{false};
  // A read-only store's read lock on LOCK (-1: none), closed last.
  int read_lock_fd_ = -1;
  std::string path_;
  // sync_marker.h: the marker (writable stores), the last sequence the
  // log gave back at open, and the slots found above it (W3), each with
  // its value. Set in Open, read-only after.
  std::shared_ptr<rocksdb::FileSystem> fs_;  // RocksDB's (its Env's)
  std::shared_ptr<Env> log_env_;             // over fs_
  std::unique_ptr<SyncMarker> sync_marker_;
  uint64_t recovered_seq_ = 0;
  std::vector<std::pair<uint32_t, uint64_t>> lost_slots_;
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_STORE_H_
