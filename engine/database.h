// Database: a catalog of named, sharded, persistent filters in one RocksDB
// directory, with journalled durability, incremental atomic checkpoints and
// crash recovery on open. The on-disk format is docs/format-store.md.
//
//   auto db = Database::Open({.path = "/var/lib/sf"});
//   if (!db.ok()) return db.status();
//   auto f = (*db)->Create("users", {.type = FilterType::kCuckoo,
//                                    .capacity = 10'000'000});
//   if (!f.ok()) return f.status();
//   if (Status s = (*f)->Add("alice"); !s.ok()) return s;
//   return (*db)->Checkpoint("users");  // every result is [[nodiscard]]
//
// Names are arbitrary byte strings of 1..1024 bytes (kMaxFilterNameBytes).
// Errors: creating an existing name -> AlreadyExists; an unknown name ->
// NotFound; Get(name, type) of another type -> WrongType; any write on a
// read-only store -> NotSupported; stored bytes that fail a check ->
// Corruption naming the filter, shard, chunk or sequence; a stored format
// version newer than this build -> NotSupported naming it. Nothing prints.
//
// Thread safety: every method may be called concurrently with every other
// (except Close, which must not race with other calls on the same Database,
// and after which only the destructor may be called). Handles returned by
// Create/Get are shared_ptrs: they stay valid after Drop/Close, but then
// mutations return NotFound / NotSupported. A Database must outlive the
// use of its handles' mutating methods until Close returns.
//
// Lock order (numbered, never taken in the other direction):
//   1. Database catalog mutex (map of open filters; Create/Drop/List).
//   2. Per-filter checkpoint mutex (one checkpoint of a filter at a time).
//   3. Shard locks (shared by mutations, ascending shard order in batches;
//      exclusive by checkpoint / drop, one shard at a time except Drop).
#ifndef SHARDFILTER_ENGINE_DATABASE_H_
#define SHARDFILTER_ENGINE_DATABASE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/engine/memory_budget.h"
#include "shardfilter/engine/migration.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

namespace internal {
class DatabaseImpl;
class TieredAccess;
class ImportAccess;
}  // namespace internal
class DedupStore;

inline constexpr size_t kMaxFilterNameBytes = 1024;
// Largest checkpoint chunk (one RocksDB value).
inline constexpr uint32_t kMaxChunkBytes = 4u << 20;  // 4 MiB

struct DatabaseOptions {
  // RocksDB directory. Required.
  std::string path;
  // Create the directory and column families when missing (ignored when
  // read_only). Otherwise opening a missing store is NotFound.
  bool create_if_missing = true;
  // Open with rocksdb::DB::OpenForReadOnly: recovery (checkpoint + journal
  // replay) happens in memory only, nothing is ever written, every mutation
  // and Create/Drop/Checkpoint returns NotSupported.
  bool read_only = false;
  // Durability of filters whose FilterSpec leaves it unset.
  Durability default_durability = Durability::kJournal;
  // When set, every filter opened or created by this Database instance uses
  // this durability instead of the one in its stored spec (which is left
  // unchanged). For sessions that need a stronger (or weaker) promise than
  // the filter's default, e.g. the CLI's `add --durability sync`.
  std::optional<Durability> durability_override;
  // Background checkpoint of every dirty shard every this many milliseconds;
  // 0 = off (checkpoints only on demand and at Close).
  uint32_t checkpoint_interval_ms = 0;
  // Close() checkpoints every dirty shard first (ignored when read_only).
  bool checkpoint_on_close = true;
  // Size of checkpoint chunks, in [4096, kMaxChunkBytes]. Smaller chunks
  // only serve tests of multi-chunk shards.
  uint32_t chunk_bytes = kMaxChunkBytes;
  // The memory budget of this Database's filters (engine/memory_budget.h),
  // checked before every table is allocated: Create, growth, migration
  // targets, imports, folds and the filters loaded by Open. Over it, the
  // call fails with ResourceExhausted naming the bytes needed and the
  // budget, and nothing changes (Open fails naming the filter). May be
  // shared with other Databases and standalone filters. Null (default):
  // MemoryBudget::Default(), kDefaultBudgetShare of the lower of physical
  // memory and the process's cgroup limit.
  std::shared_ptr<MemoryBudget> memory_budget;
  // Read-only opens only (the `verify` command): a damaged record in a
  // filter's memory-mapped journal is not an open error; that shard keeps
  // the ops before it and Verify() lists the damage among its problems.
  // Otherwise such damage fails Open with Corruption.
  bool report_journal_damage = false;
  // Journal every filter into the RocksDB `journal` column family, as
  // stores did before the memory-mapped filter journal (docs/
  // format-store.md): for tests of that format, and for stores that an
  // older build must still read. Slower (a RocksDB write per call).
  bool journal_in_rocksdb = false;
  // A filter whose table is smaller than this journals in the RocksDB
  // journal family (one shared WAL) instead of memory-mapped segments of
  // its own, which would cost a file descriptor, a mapping and page cache
  // per shard (engine/internal/filter_log.h L6). 0: every filter that can
  // maps segments.
  uint64_t mapped_journal_min_bytes = uint64_t{1} << 20;
};

// What one Checkpoint call did. Counters are for this call only.
struct CheckpointStats {
  uint32_t filters_checkpointed = 0;  // filters with at least one dirty shard
  uint32_t shards_written = 0;        // dirty shards copied and committed
  uint32_t shards_skipped = 0;        // clean shards (nothing written)
  uint64_t chunks_written = 0;
  uint64_t bytes_written = 0;  // chunk payload bytes
  // Longest time one shard's lock was held exclusive (copying its state):
  // the longest a writer of that shard could have waited.
  uint64_t max_lock_hold_ns = 0;
};

// Totals since Open.
struct DatabaseCounters {
  uint64_t checkpoints = 0;  // completed Checkpoint* calls (incl.
                             // background ones)
  uint64_t shards_written = 0;
  uint64_t bytes_written = 0;
  uint64_t journal_writes = 0;          // RocksDB writes of journal entries
  uint64_t journal_ops = 0;             // hashes journalled
  uint64_t replayed_ops = 0;            // hashes replayed at open
  uint64_t replay_skipped_removes = 0;  // replayed removes that found
                                        // nothing (see docs/format-store.md)
  uint64_t background_errors = 0;       // failed background checkpoints
};

// One instant of an open filter's history (Database::Version): which filter
// object, and how many mutations it had applied (for a Bloom filter: adds
// that set a new bit; an add that set none changed nothing). A filter
// derived from that state (offline rebuilds) may replace it only while the
// version holds.
struct FilterVersion {
  uint64_t filter_id = 0;
  uint64_t mutations = 0;
  bool operator==(const FilterVersion&) const = default;
};

// Everything Info reports about one filter.
struct FilterInfo {
  std::string name;
  FilterSpec spec;                // all defaults resolved
  ShardedStats stats;             // live figures, per shard and total
  uint64_t checkpoint_bytes = 0;  // sum of the shards' committed blob sizes
};

// Result of Verify: every stored value read back and checked.
struct VerifyReport {
  uint64_t filters = 0;      // catalog descriptors checked
  uint64_t chunks = 0;       // checkpoint chunks checked
  uint64_t shard_blobs = 0;  // whole-shard blobs checked (xxh3 + decode)
  uint64_t journal_entries = 0;
  uint64_t retained_hashes = 0;  // keys of the hashes family checked
  // Records in the dedup sets' journal files (docs/dedup.md), each read
  // back and checked; a journal holds records only after a crash.
  uint64_t dedup_journal_records = 0;
  uint64_t bytes = 0;          // bytes of values read
  uint64_t orphan_values = 0;  // values no descriptor refers to (left by
                               // an interrupted checkpoint, migration or
                               // import; removed by the next writable
                               // open, before any filter loads)
  // One line per problem, naming the filter, shard, chunk or sequence.
  // A filter or dedup set that lost writes acknowledged under durability
  // sync with the write-ahead log is one, naming the sequences.
  std::vector<std::string> problems;
  // What is worth knowing and is no damage: a write-ahead log that ends
  // inside a record (the torn tail a crash or power loss leaves under
  // durability journal or none; RocksDB replayed what precedes it). Found
  // by a read-only open only.
  std::vector<std::string> notes;
  bool ok() const { return problems.empty(); }
};

class Database {
 public:
  // Opens (or creates) the store and reads its catalog. Each filter is
  // recovered on first use (Get, Info, Checkpoint, a migration): its
  // shards' committed checkpoints are loaded and every checksum checked,
  // its journal after the checkpoint is replayed, and (unless read_only)
  // values of uncommitted checkpoints are removed. A filter whose data
  // fails a check is left untouched and unavailable (Get returns the
  // error, naming the filter, shard, chunk or sequence; Unavailable()
  // lists them); the others serve. A filter over the memory budget fails
  // its own Get (ResourceExhausted), not the open, and a later Get tries
  // again. Damage to the store itself (RocksDB's files) fails the open.
  // Never drops data silently.
  static Result<std::unique_ptr<Database>> Open(const DatabaseOptions& options);

  // Calls Close() if it was not called (its status is lost: call Close to
  // see it).
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Stops the background checkpointer, takes a final checkpoint (per
  // options), and closes RocksDB. Idempotent.
  Status Close();

  // Creates a filter. AlreadyExists, InvalidArgument (name length, a name
  // holding the bytes "\0level/", reserved for tiered filters' levels; spec),
  // NotSupported (read-only). The descriptor is durable (synced) when this
  // returns, whatever the durability mode.
  Result<std::shared_ptr<ShardedFilter>> Create(std::string_view name,
                                                const FilterSpec& spec);
  // The open filter of that name, or NotFound.
  Result<std::shared_ptr<ShardedFilter>> Get(std::string_view name) const;
  // As Get, and WrongType (naming both types) unless it is of `type`.
  Result<std::shared_ptr<ShardedFilter>> Get(std::string_view name,
                                             FilterType type) const;
  // Names in byte order: loaded, not yet loaded and damaged (unavailable)
  // filters. Loads nothing.
  std::vector<std::string> List() const;
  // The filters in memory (loaded by a use since Open).
  std::vector<std::string> Loaded() const;
  // The filters whose stored data fails its checks, each with its error
  // (Corruption or NotSupported naming the filter and what is bad): loads
  // every filter not loaded yet to find them. They are unavailable, not
  // the store: Get and Info return that error, Create and Import of the
  // name are AlreadyExists, Drop deletes it; Verify lists every problem.
  std::vector<std::pair<std::string, Status>> Unavailable() const;
  Result<FilterInfo> Info(std::string_view name) const;
  // Expiry deadlines (the server's EXPIRE; unix time in ms), stored with the
  // filter (a synced write) and deleted by Drop and Create. The Database
  // only keeps them: the host drops a filter once its deadline passed.
  // SetExpiry: NotFound unless the filter exists (loaded or not);
  // nullopt removes the deadline. Expiry: nullopt when none (or no filter).
  Status SetExpiry(std::string_view name, std::optional<int64_t> unix_ms);
  std::optional<int64_t> Expiry(std::string_view name) const;
  // Every (name, deadline), in name order.
  std::vector<std::pair<std::string, int64_t>> Expiries() const;
  // How many filters have a deadline (cheap: a relaxed read).
  uint64_t ExpiryCount() const;
  // Deletes the filter, its checkpoints and journal in one atomic write.
  // Existing handles then return NotFound on mutation.
  Status Drop(std::string_view name);

  // Checkpoints the dirty shards of one filter / of all filters.
  // CheckpointAll loads every filter not loaded yet (its journal may hold
  // entries past its checkpoint); the background checkpointer and Close
  // write only the loaded ones (an unloaded filter has nothing new).
  Result<CheckpointStats> Checkpoint(std::string_view name);
  Result<CheckpointStats> CheckpointAll();

  // ORs the Bloom filters `sources` into the Bloom filter `dest`
  // (ShardedFilter::UnionWith: same shape, dest not retaining hashes) and
  // checkpoints `dest`: the union is durable (synced) when this returns
  // OK, whatever dest's durability. Every source is checked before
  // anything changes (NotFound naming a missing filter, WrongType,
  // InvalidArgument, NotSupported: nothing changed). A source that grows
  // between the check and its OR, or a failed checkpoint, fails the call
  // with part of the union in memory (never a false negative; as after
  // any failed write, what survives a crash is unknown).
  Status Union(std::string_view dest,
               std::span<const std::string_view> sources);

  // --- Online migration (engine/migration.h) ---
  // Starts rebuilding the filter into one of spec `target` (capacity, fpp,
  // shards, type, growth...; its seed must equal the source's, its
  // durability defaults to the source's) in the background, while the
  // filter stays in use. NotFound (no such filter), Busy (a migration of it
  // is running), NotSupported (read-only store), InvalidArgument (a target
  // spec the source of keys cannot produce, or no source of keys: the
  // message says why). One migration per filter at a time.
  Status StartMigration(std::string_view name, const FilterSpec& target,
                        MigrationSource source = MigrationSource::kAuto);
  // The running or last migration of that name in this session (NotFound
  // when none was started).
  Result<MigrationProgress> GetMigration(std::string_view name) const;
  // Blocks until it ends; its final progress (status: why it failed).
  Result<MigrationProgress> WaitForMigration(std::string_view name);
  // Stops a running migration and rolls it back (the source serves on).
  // OK when it already ended (a finished migration stays done).
  Status AbortMigration(std::string_view name);
  // StartMigration + WaitForMigration: OK when the target is in service.
  Result<MigrationProgress> Migrate(
      std::string_view name, const FilterSpec& target,
      MigrationSource source = MigrationSource::kAuto);

  // --- Offline rebuilds (`shardfilter migrate`; engine/rebuild.cc) ---
  // Calls fn with batches of (hash, count > 0) of the filter's retained
  // hashes, in hash order, from a snapshot taken at the call (only hashes
  // above `after` when set). InvalidArgument when the filter does not
  // retain hashes; fn's error stops the scan and is returned.
  Status ScanRetainedHashes(
      std::string_view name, std::optional<uint64_t> after,
      const std::function<
          Status(std::span<const std::pair<uint64_t, int64_t>>)>& fn) const;
  // A standalone copy of the filter folded by `factor` (spec FoldedSpec):
  // errors as StartMigration's with MigrationSource::kFold.
  Result<std::unique_ptr<ShardedFilter>> FoldedCopy(std::string_view name,
                                                    uint32_t factor) const;
  // The filter's version now, once every mutation in flight has finished
  // (takes every shard lock for a moment). Take it before deriving a filter
  // for ReplaceFilter from this one's state (its retained hashes, a fold,
  // the keys it was fed).
  Result<FilterVersion> Version(std::string_view name) const;
  // Atomically replaces the filter with `built`, a standalone filter
  // (ShardedFilter::Create) nobody else uses, as a migration's switch does:
  // one synced commit, then handles to the old filter forward to the new.
  // `derived_from` is Version(name) taken before `built` was derived: if
  // any mutation was acknowledged since (or the filter was replaced,
  // migrated, dropped), the replace is refused with Aborted and nothing
  // changes, since installing `built` would silently lose those writes.
  // With keep_retained_hashes the name's retained hashes stay and the new
  // filter retains too: only correct when `built` holds exactly those
  // hashes (built from them, same seed); otherwise they are deleted.
  // InvalidArgument for a filter that is not standalone, or keeping hashes
  // the old filter did not retain or under another seed.
  Status ReplaceFilter(std::string_view name,
                       std::unique_ptr<ShardedFilter> built,
                       bool keep_retained_hashes,
                       const FilterVersion& derived_from);

  // Reads back every stored value and checks version, checksum, lengths,
  // and that each shard's committed chunks reassemble to a blob with the
  // recorded xxh3 that decodes as a filter. Problems are listed in the
  // report; the Status is an error only if RocksDB itself fails.
  Result<VerifyReport> Verify() const;
  // Compacts the store's files (RocksDB manual compaction, blocking; other
  // calls keep running): reclaims the space of dropped filters, old
  // checkpoints and journal entries, and removes retained hashes whose
  // count fell to 0. NotSupported on a read-only store.
  Status Compact();

  // --- Memory (engine/memory_budget.h) ---
  // Gives a loaded filter's memory back: checkpoints its dirty shards, then
  // forgets the loaded copy, which its next use loads again (checkpoint and
  // journal, as the first use after Open does). A host under memory
  // pressure unloads filters rather than refusing work. Returns the bytes
  // given back to the memory budget. Busy, changing nothing, when anything
  // besides the Database holds the filter (a handle from Get or Create, a
  // migration, a tiered filter's level) or a shard changed again after the
  // checkpoint; NotFound when it is not loaded; the checkpoint's error.
  Result<uint64_t> Unload(std::string_view name);
  // RocksDB's memory now (memtables, block caches, table readers): memory
  // a host's limit must count besides the budget's reservations.
  uint64_t StoreMemoryBytes() const;
  // When RocksDB's memtables (checkpoints and small filters' journal
  // entries wait there) hold at least `min_bytes`: writes them out to table
  // files, giving their memory back. Returns the bytes that freed
  // (RocksDB's memtable figure before less after; 0 when it did not
  // flush), or the flush's error. Nothing on a read-only store.
  Result<uint64_t> FlushStoreMemory(uint64_t min_bytes);

  bool read_only() const;
  const DatabaseOptions& options() const;
  DatabaseCounters counters() const;
  // The status of the last background checkpoint (OK when none failed).
  Status background_status() const;

 private:
  friend class DedupStore;  // opens its sets on this store (dedup_store.h)
  friend class internal::TieredAccess;  // tiered filters (tiered_filter.h)
  friend class internal::ImportAccess;  // ImportFilter (engine/export.h)
  explicit Database(std::unique_ptr<internal::DatabaseImpl> impl);
  // Create and Drop without the reserved-name check: the tiered filters'
  // levels (internal::TieredAccess).
  Result<std::shared_ptr<ShardedFilter>> CreateNamed(std::string_view name,
                                                     const FilterSpec& spec);
  Status DropNamed(std::string_view name);
  std::unique_ptr<internal::DatabaseImpl> impl_;
};

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_DATABASE_H_
