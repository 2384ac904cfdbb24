// DbKeyspace: the server's Keyspace (tools/commands/keyspace.h) over a
// Database directory. Keys are the Database's filter names (1..1024 bytes),
// its dedup sets' names (DedupStore) and its tiered filters' names
// (TieredFilter), one kind per name; every filter is reached through
// Database::Get, so a DEL or FLUSHALL on one connection is seen by the next
// command of every other. Names containing the bytes "\0level/" are
// reserved: they are tiered filters' levels (TieredFilter::LevelName), which
// no command may reach or delete on its own.
//
// Thread safety: every method may be called from any number of threads
// (Database, ShardedFilter and TieredFilter are themselves thread-safe; a
// dedup set's Close is kept apart from its calls by its handle's lock).
// Lock order: kinds_mu_, then a dedup handle's lock, then the Database's.
#ifndef SHARDFILTER_TOOLS_SERVER_DB_KEYSPACE_H_
#define SHARDFILTER_TOOLS_SERVER_DB_KEYSPACE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/tiered_filter.h"
#include "tools/commands/keyspace.h"

namespace shardfilter::server {

struct DbKeyspaceOptions {
  // Memory budget of one filter, its growth included (FilterSpec::max_bytes):
  // a BF.RESERVE asking for more is refused, a scaling filter stops growing
  // there (its adds then answer "non scaling filter is full" / "Filter is
  // full"). 0 = the engine's default.
  uint64_t max_filter_bytes = 1ull << 30;
  // Shards of filters the commands create (0 = DefaultShardCount).
  uint32_t shards = 0;
};

class DbDedup;

class DbKeyspace final : public commands::Keyspace {
 public:
  // `db` must outlive this object; Close() before the Database closes.
  DbKeyspace(Database* db, const DbKeyspaceOptions& options);
  ~DbKeyspace() override;
  // Closes the open dedup sets (their journals move into RocksDB). Later
  // dedup calls answer NotFound. Call before Database::Close.
  Status Close();

  Result<std::shared_ptr<commands::FilterHandle>> Lookup(
      std::string_view key) override;
  Result<std::shared_ptr<commands::FilterHandle>> Create(
      std::string_view key, const commands::CreateParams& params) override;
  Result<bool> Delete(std::string_view key) override;
  std::vector<std::string> Keys() override;
  uint64_t Size() override;
  Status Flush() override;
  Status Checkpoint() override;
  int64_t LastCheckpointUnix() override;
  Result<std::string> Dump(std::string_view key) override;
  Status Restore(std::string_view key, std::string_view bytes) override;
  size_t MaxKeyBytes() const override { return kMaxFilterNameBytes; }
  // LOADCHUNK staging and SCANDUMP copies, charged to the Database's memory
  // budget (the one its filters are charged to).
  // The Database's budget is the one --maxmemory sets.
  bool BudgetIsMaxmemory() const override { return true; }
  Result<std::unique_ptr<commands::StagingBuffer>> NewStaging(
      uint64_t bytes, std::string_view what) override;
  Status SetExpiry(std::string_view key,
                   std::optional<int64_t> unix_ms) override;
  Result<std::optional<int64_t>> GetExpiry(std::string_view key) override;
  // Drops every filter whose deadline passed (the server calls it ten
  // times a second: Redis's active expiry); returns how many.
  size_t ExpireDue();
  Status Union(std::string_view dest,
               std::span<const std::string_view> sources) override;
  Status StartMigration(std::string_view key,
                        const commands::CreateParams& target) override;
  Result<commands::MigrationReport> Migration(std::string_view key) override;
  std::string TypeOf(std::string_view key) override;
  Result<std::shared_ptr<commands::DedupHandle>> LookupDedup(
      std::string_view key) override;
  Result<std::shared_ptr<commands::DedupHandle>> CreateDedup(
      std::string_view key, const commands::DedupParams& params) override;
  Result<std::shared_ptr<commands::TieredHandle>> LookupTiered(
      std::string_view key) override;
  Result<std::shared_ptr<commands::TieredHandle>> CreateTiered(
      std::string_view key, const commands::TieredParams& params) override;

  // Sum of the filters' table bytes (INFO memory).
  uint64_t FilterBytes();
  Database* database() const { return db_; }

  // Memory pressure (the budget refused an allocation): empties every
  // thread's handle cache, then unloads one loaded filter nobody uses
  // (Database::Unload: checkpointed first, loaded again by its next use),
  // those no thread used lately first, then the largest. True when one was
  // unloaded (the caller may try again), false when none could be. The
  // keyspace's own calls (lookups that load, creates, restores, growth)
  // do this before they give up with ResourceExhausted.
  bool ReclaimMemory();
  // How many ReclaimMemory calls one refused request may make: each loaded
  // filter once, and the memtables' flush.
  size_t ReclaimAttempts() const { return db_->Loaded().size() + 1; }
  // Filters unloaded by ReclaimMemory (INFO).
  uint64_t unloads() const { return unloads_.load(std::memory_order_relaxed); }
  // Called after ReclaimMemory gave memory back, before the caller tries
  // again: the host re-measures what it counts outside the budget's
  // reservations (RocksDB's memtables). Set before serving.
  void SetAfterReclaim(std::function<void()> fn) {
    after_reclaim_ = std::move(fn);
  }

  // Called (from the dropping thread) after every drop, so the host can
  // wake its other threads to call TrimThreadCache: a dropped filter's
  // memory is then freed without waiting for their next command.
  void SetDropListener(std::function<void()> listener) {
    drop_listener_ = std::move(listener);
  }
  // Empties the calling thread's handle cache if a drop made it stale.
  void TrimThreadCache();
  // Empties the calling thread's handle cache (a worker thread after each
  // job, so that an idle worker keeps no dropped filter's memory).
  void ReleaseThreadCache();

  // True when a write to `key` may wait for an fsync: the key holds a
  // filter, dedup set or tiered filter with durability sync, or nothing (a
  // write that creates it syncs the new descriptor, whatever the mode).
  // The server runs such writes off its event loops (server.h). Looks the
  // key up as a command would (a filter's first use loads it).
  bool WriteMayWaitForSync(std::string_view key);

 private:
  // Bumped (release) after every Drop, before the command that dropped
  // answers; a thread's handle cache (db_keyspace.cc) is valid while it
  // sees the generation it was filled under (acquire).
  void Invalidate();
  // Drops `key` if its deadline passed; true when it did (or it was gone).
  bool ExpireIfDue(std::string_view key);

  // Under kinds_mu_: the kind other than a filter that `key` holds.
  commands::KeyKind OtherKindLocked(std::string_view key) const;
  // Under kinds_mu_: AlreadyExists unless no kind holds `key`.
  Status CheckFreeLocked(std::string_view key);
  Result<bool> DeleteLocked(std::string_view key);

  Database* db_;
  DbKeyspaceOptions options_;
  // Held across every create and delete of any kind and around the two
  // maps, so that one name holds one kind. Filter lookups take it only
  // when the Database has no filter of the name.
  mutable std::mutex kinds_mu_;
  // Every stored dedup set; null until its first use opens it.
  std::map<std::string, std::shared_ptr<DbDedup>, std::less<>> dedups_;
  // Every tiered filter; null until its first use opens it (kept open:
  // its query counters live in the object).
  std::map<std::string, std::shared_ptr<TieredFilter>, std::less<>> tiered_;
  // RocksDB's memtables written out; true when that freed enough to try
  // again (and after_reclaim_ ran).
  bool FlushStoreMemory();

  // One ReclaimMemory at a time (each needs its own victim).
  std::mutex reclaim_mu_;
  std::function<void()> after_reclaim_;
  std::atomic<uint64_t> unloads_{0};
  std::atomic<int64_t> last_checkpoint_unix_;
  std::atomic<uint64_t> generation_{0};
  std::function<void()> drop_listener_;  // set before serving
  const uint64_t instance_;
};

// The FilterSpec a command's parameters become (exposed for tests).
FilterSpec ToFilterSpec(const commands::CreateParams& params,
                        const DbKeyspaceOptions& options);

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_DB_KEYSPACE_H_
