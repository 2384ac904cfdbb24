#include "shardfilter/persistence/store.h"

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "shardfilter/filters/detail/tsan.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/filter_expiry.h"
#include "shardfilter/persistence/hash_memtable.h"
#include "shardfilter/persistence/info_log.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/log/fs_env.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store_dir.h"
#include "shardfilter/persistence/test_env.h"

namespace shardfilter::persistence {

using internal::FromRocks;

namespace internal {
namespace {
std::atomic<rocksdb::Env*> g_test_env{nullptr};
}  // namespace
void SetStoreEnvForTesting(rocksdb::Env* env) { g_test_env.store(env); }
rocksdb::Env* StoreEnvForTesting() { return g_test_env.load(); }
}  // namespace internal

namespace {

constexpr const char* kCatalogCf = "catalog";
constexpr const char* kShardsCf = "shards";
constexpr const char* kJournalCf = "journal";
// The dedup family is a key set read and written by point operations. Its
// options (docs/dedup.md, "Performance"):
//  * a hash-indexed memtable (persistence/hash_memtable.h): an
//    insert costs ~2 cache misses, not a skiplist descent (~20 at 1M
//    entries: 75% of an insert); sorting moves to the flush. One bucket per
//    ~64 bytes of entries: chains of ~1. Needs allow_concurrent_memtable_
//    write = false store-wide (Store::Open);
//  * whole-key SST Bloom filters (10 bits/key), but none in the last level
//    (optimize_filters_for_hits): the filter in front sends RocksDB mostly
//    keys that are present, whose probe in the level holding them is
//    wasted work and memory (~90% of the filter bytes).
// No memtable Bloom filter: the hash index answers a memtable miss with
// about as many cache misses, and the Bloom filter cost one more per insert.
rocksdb::ColumnFamilyOptions DedupCfOptions() {
  rocksdb::ColumnFamilyOptions o;
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o.memtable_factory =
      internal::NewHashIndexMemTableFactory(o.write_buffer_size / 64);
  o.optimize_filters_for_hits = true;
  return o;
}

// True when `names` (the families of an existing RocksDB directory) are
// some of ours and the default family is empty: the first open crashed
// while creating the families. A MANIFEST that lists only "default"
// because it is truncated fails the read-only open: Corruption.
Result<bool> IsHalfCreated(const std::string& path,
                           const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (n != rocksdb::kDefaultColumnFamilyName && n != kCatalogCf &&
        n != kShardsCf && n != kJournalCf) {
      return false;
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names)
    cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::DBOptions o;
  o.info_log = std::make_shared<internal::StoreInfoLog>(
      "", rocksdb::InfoLogLevel::WARN_LEVEL);
  rocksdb::Status s =
      rocksdb::DB::OpenForReadOnly(o, path, cfs, &handles, &raw);
  if (!s.ok()) {
    return Status::Corruption("store \"" + path + "\" does not open (" +
                              s.ToString() + "); the store was not opened");
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  bool empty = true;
  for (auto* h : handles) {
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), h));
    it->SeekToFirst();
    empty &= !it->Valid();
    db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  return empty;
}

// The error of a failed DB::Open. For Corruption, the warning RocksDB
// logged about the damaged file (a WAL record that fails its checksum is
// only named there) is added.
Status OpenFailure(const rocksdb::Status& s, const std::string& path,
                   const internal::StoreInfoLog& log) {
  Status st = FromRocks(s, "opening store " + path);
  if (!s.IsCorruption()) return st;
  std::string detail;
  // The first warning that names a log or the MANIFEST: RocksDB reports
  // the bad record first, then what it dropped because of it.
  for (const std::string& line : log.Recent()) {
    if (detail.empty() && (line.find(".log") != std::string::npos ||
                           line.find("MANIFEST") != std::string::npos)) {
      detail = line;
    }
  }
  std::string msg = st.message();
  if (detail.find(".log: dropping") != std::string::npos) {
    msg += " (a damaged record inside the write-ahead log: " + detail + ")";
  } else if (!detail.empty()) {
    msg += " (" + detail + ")";
  }
  return Status::Corruption(msg +
                            "; the store was not opened and nothing was "
                            "changed");
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  if (options.path.empty()) {
    return Status::InvalidArgument("store path is empty");
  }
  // DESIGN.md invariant 6: RocksDB creates a store only where there was
  // none (a missing or empty directory); a damaged one is Corruption and
  // is left as it is (persistence/store_dir.h).
  bool is_new = false;
  SF_RETURN_IF_ERROR(internal::InspectStoreDir(options.path, &is_new));
  const bool exists = !is_new;
  if (!exists && (options.read_only || !options.create_if_missing)) {
    return Status::NotFound("no shardfilter store at \"" + options.path + "\"");
  }
  // sync_marker.h W3: read before RocksDB replays its log, so that it
  // claims nothing the log could not already hold.
  rocksdb::Env* env = internal::StoreEnvForTesting();
  if (env == nullptr) env = rocksdb::Env::Default();
  std::optional<SyncMarkerState> sync_marker;
  if (exists) {
    SF_ASSIGN_OR_RETURN(
        sync_marker, ReadSyncMarker(env->GetFileSystem().get(), options.path));
  }
  rocksdb::DBOptions db_options;
  // Our info log: RocksDB's aborts the process after a failed LOG write
  // (a full disk); a read-only open logs to memory only.
  if (!exists) {
    std::error_code mkdir_ec;
    std::filesystem::create_directories(options.path, mkdir_ec);
  }
  auto info_log = std::make_shared<internal::StoreInfoLog>(
      options.read_only ? "" : options.path + "/LOG",
      rocksdb::InfoLogLevel::WARN_LEVEL);
  db_options.info_log = info_log;
  if (rocksdb::Env* env = internal::StoreEnvForTesting()) db_options.env = env;
  db_options.create_if_missing = !exists;
  db_options.create_missing_column_families = !exists;
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  db_options.keep_log_file_num = 2;
  // Damage inside the write-ahead log fails the open (Corruption) instead
  // of ending the replay quietly before it (RocksDB's default,
  // kPointInTimeRecovery, drops every acknowledged write after the bad
  // record). Only an incomplete last record, what a crash or power loss
  // leaves, ends the log quietly (docs/format-store.md, "Power loss").
  db_options.wal_recovery_mode =
      rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // Closed logs' sizes go into the MANIFEST: a missing or shortened one
  // fails the open.
  db_options.track_and_verify_wals_in_manifest = true;
  // The dedup family's memtable takes one writer at a time (group commit
  // still batches writers; the leader inserts their entries serially).
  db_options.allow_concurrent_memtable_write = false;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  rocksdb::ColumnFamilyOptions cf_options;
  cfs.emplace_back(rocksdb::kDefaultColumnFamilyName, cf_options);
  cfs.emplace_back(kCatalogCf, cf_options);
  cfs.emplace_back(kShardsCf, cf_options);
  cfs.emplace_back(kJournalCf, cf_options);
  // The dedup families are opened only when they exist (created on first
  // use by Dedup(true)); RocksDB must open every existing family.
  bool has_dedup = false, has_time = false, has_hashes = false;
  if (exists) {
    std::vector<std::string> names;
    rocksdb::Status s =
        rocksdb::DB::ListColumnFamilies(db_options, options.path, &names);
    if (!s.ok()) {
      return Status::Corruption("store \"" + options.path +
                                "\": its MANIFEST does not read (" +
                                s.ToString() + "); the store was not opened");
    }
    bool complete = true;
    for (const char* want : {kCatalogCf, kShardsCf, kJournalCf}) {
      complete &= std::find(names.begin(), names.end(), want) != names.end();
    }
    if (!complete) {
      SF_ASSIGN_OR_RETURN(bool half, IsHalfCreated(options.path, names));
      if (!half || options.read_only) {
        return Status::InvalidArgument("\"" + options.path +
                                       "\" is not a shardfilter store (no "
                                       "\"catalog\" column family)");
      }
      // A crash while RocksDB created our families one by one: finish.
      db_options.create_missing_column_families = true;
    }
    for (const std::string& n : names) {
      has_dedup |= (n == kDedupCf);
      has_time |= (n == kDedupTimeCf);
      has_hashes |= (n == kHashesCf);
    }
  }
  // The hashes family goes first of the optional ones: its handle index is
  // fixed (4) whatever the dedup families are.
  if (has_hashes) cfs.emplace_back(kHashesCf, HashesCfOptions());
  const size_t dedup_index = has_hashes ? 5 : 4;
  if (has_dedup) cfs.emplace_back(kDedupCf, DedupCfOptions());
  if (has_time) cfs.emplace_back(kDedupTimeCf, cf_options);
  // A reader holds a read lock on LOCK for its life (store_dir.h).
  int lock_fd = -1;
  if (options.read_only) {
    SF_ASSIGN_OR_RETURN(lock_fd, internal::LockForReading(options.path));
  }
  struct LockGuard {
    int* fd;
    ~LockGuard() {
      if (*fd >= 0) ::close(*fd);
    }
  } lock_guard{&lock_fd};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s =
      options.read_only
          ? rocksdb::DB::OpenForReadOnly(db_options, options.path, cfs,
                                         &handles, &db)
          : rocksdb::DB::Open(db_options, options.path, cfs, &handles, &db);
  if (!s.ok()) return OpenFailure(s, options.path, *info_log);
  std::unique_ptr<Store> store(new Store());
  store->db_ = db;
  store->default_cf_ = handles[0];
  store->catalog_cf_ = handles[1];
  store->shards_cf_ = handles[2];
  store->journal_cf_ = handles[3];
  store->read_only_ = options.read_only;
  store->path_ = options.path;
  store->read_lock_fd_ = lock_fd;
  store->fs_ = env->GetFileSystem();
  store->log_env_ = NewFileSystemEnv(store->fs_);
  lock_fd = -1;
  if (has_hashes) store->hashes_cf_.store(handles[4]);
  if (has_dedup && has_time) {
    store->dedup_ = std::make_unique<DedupTable>(
        db, handles[dedup_index], handles[dedup_index + 1], options.read_only);
  } else if (has_dedup || has_time) {
    // A crash between the two CreateColumnFamily calls of Dedup(true):
    // hand the one back so that Dedup(true) can create both afresh.
    store->half_dedup_ = handles[dedup_index];
  }
  if (!options.read_only) {
    // The log RocksDB writes from now on: a later open that finds neither
    // it nor a newer one knows the log was lost (store_dir.h).
    std::unique_ptr<rocksdb::LogFile> wal;
    SF_RETURN_IF_ERROR(FromRocks(db->GetCurrentWalFile(&wal),
                                 "opening store " + options.path));
    SF_RETURN_IF_ERROR(
        internal::WriteWalMarker(options.path, wal->LogNumber()));
  }
  SF_RETURN_IF_ERROR(store->CheckSyncMarker(std::move(sync_marker)));
  return store;
}

Result<DedupTable*> Store::Dedup(bool create) {
  std::lock_guard lock(dedup_mu_);
  if (dedup_ != nullptr) return dedup_.get();
  if (read_only_ || !create) {
    return Status::NotFound("the store at \"" + path_ +
                            "\" holds no dedup sets");
  }
  rocksdb::ColumnFamilyHandle* dedup = nullptr;
  rocksdb::ColumnFamilyHandle* time = nullptr;
  if (half_dedup_ != nullptr) {  // an empty family left by a crash
    SF_RETURN_IF_ERROR(FromRocks(db_->DropColumnFamily(half_dedup_),
                                 "dropping a half-created dedup family"));
    db_->DestroyColumnFamilyHandle(half_dedup_).PermitUncheckedError();
    half_dedup_ = nullptr;
  }
  SF_RETURN_IF_ERROR(
      FromRocks(db_->CreateColumnFamily(DedupCfOptions(), kDedupCf, &dedup),
                "creating the dedup column family"));
  rocksdb::Status s = db_->CreateColumnFamily(rocksdb::ColumnFamilyOptions(),
                                              kDedupTimeCf, &time);
  if (!s.ok()) {
    db_->DestroyColumnFamilyHandle(dedup).PermitUncheckedError();
    return FromRocks(s, "creating the dedup_time column family");
  }
  dedup_ = std::make_unique<DedupTable>(db_, dedup, time, false);
  dedup_->SetSyncMarker(sync_marker_.get());
  return dedup_.get();
}

Store::~Store() {
  if (db_ == nullptr) return;
  dedup_.reset();  // destroys its column family handles
  if (half_dedup_ != nullptr) {
    db_->DestroyColumnFamilyHandle(half_dedup_).PermitUncheckedError();
  }
  for (auto* h :
       {default_cf_, catalog_cf_, shards_cf_, journal_cf_, hashes_cf_.load()}) {
    if (h != nullptr) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  db_->Close().PermitUncheckedError();
  delete db_;
  if (read_lock_fd_ >= 0) ::close(read_lock_fd_);
}

Status Store::Write(rocksdb::WriteBatch* batch, bool sync,
                    std::string_view what, uint64_t* last_seq) {
  if (read_only_) {
    return Status::NotSupported(std::string(what) +
                                ": the store is open read-only");
  }
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  // A failed write (full disk, EIO) leaves RocksDB in a background-error
  // state that fails every later write. The failed write is not
  // acknowledged (and nothing is applied without its journal). The next
  // write first calls Resume(), which flushes the memtables into SSTs and a
  // fresh WAL (the failed record's tail stays in an obsolete log); for a
  // full disk RocksDB's SstFileManager also retries by itself once space is
  // back. An EIO on the WAL is fatal in RocksDB 7.8 (Resume returns it):
  // writes keep failing cleanly until the store is reopened.
  if (needs_resume_.load(std::memory_order_acquire)) {
    if (db_->Resume().ok()) needs_resume_.store(false);
  }
  rocksdb::Status s;
  {
    // RocksDB (uninstrumented) runs group commit: one writer, the leader,
    // copies the others' batches into its own reused batch and the WAL
    // (memcpy/memset that TSan intercepts), synchronised by atomics TSan
    // cannot see, and no point outside RocksDB could state that edge. Its
    // accesses inside the call are not recorded (filters/detail/tsan.h);
    // ours before and after it, and every other access, still are.
    ::shardfilter::internal::TsanIgnoreAccesses rocksdb_group_commit;
    s = db_->Write(wo, batch);
    // The group's leader stored the batch's sequence into it.
    if (s.ok() && last_seq != nullptr) *last_seq = WrittenLastSequence(*batch);
  }
  if (!s.ok() && (s.IsIOError() || s.IsNoSpace())) {
    needs_resume_.store(true, std::memory_order_release);
  }
  return FromRocks(s, what);
}

}  // namespace shardfilter::persistence
