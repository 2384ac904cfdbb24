// DedupStore's public facade: option checks, Open (create or load a set),
// Drop, List, and the forwarding of every call to its DedupCore.
#include <chrono>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/dedup_core.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter {

using internal::DedupCore;
using persistence::DedupMeta;

namespace {

uint64_t SystemMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
}

Status CheckOptions(std::string_view name, const DedupOptions& o) {
  if (name.empty() || name.size() > kMaxFilterNameBytes) {
    return Status::InvalidArgument(
        "dedup set name must be 1..1024 bytes, got " +
        std::to_string(name.size()));
  }
  if (!(o.fpp > 0 && o.fpp < 1)) {
    return Status::InvalidArgument("dedup fpp " + FormatRate(o.fpp) +
                                   " is outside (0, 1)");
  }
  if (o.expected_keys == 0) {
    return Status::InvalidArgument("dedup expected_keys must be >= 1");
  }
  if (o.lock_stripes == 0 || o.lock_stripes > 65536 ||
      (o.lock_stripes & (o.lock_stripes - 1)) != 0) {
    return Status::InvalidArgument(
        "dedup lock_stripes must be a power of two in [1, 65536], got " +
        std::to_string(o.lock_stripes));
  }
  if (o.journal_bytes != 0 &&
      (o.journal_bytes % 8192 != 0 ||
       o.journal_bytes < 2 * persistence::kMinDedupLogRegion ||
       o.journal_bytes > 2 * persistence::kMaxDedupLogRegion)) {
    return Status::InvalidArgument(
        "dedup journal_bytes must be 0 or a multiple of 8192 in [128 KiB, "
        "2 GiB], got " +
        std::to_string(o.journal_bytes));
  }
  if (o.partitions > kMaxDedupPartitions) {
    return Status::InvalidArgument("dedup partitions must be <= 1024, got " +
                                   std::to_string(o.partitions));
  }
  return Status::OK();
}

// The stored parameters of a new set, from the options.
Result<DedupMeta> NewMeta(const DedupOptions& o) {
  DedupMeta m;
  m.ttl_ms = o.ttl_ms.value_or(0);
  if (m.ttl_ms == 0) return m;
  m.partitions = o.partitions != 0 ? o.partitions : 8;
  if (m.ttl_ms % m.partitions != 0) {
    return Status::InvalidArgument("dedup ttl " + std::to_string(m.ttl_ms) +
                                   " ms is not a multiple of the " +
                                   std::to_string(m.partitions) +
                                   " partitions");
  }
  return m;
}

// The spec of the ring's filters for `partitions` (0: no TTL).
FilterSpec RingSpec(const DedupOptions& options, uint32_t partitions,
                    uint64_t seed) {
  FilterSpec spec;
  spec.type = options.filter_type;
  const uint32_t p = partitions;
  spec.capacity =
      p ? (options.expected_keys + p - 1) / p : options.expected_keys;
  spec.fpp = p ? options.fpp / (p + 1) : options.fpp;
  spec.seed = seed;
  // The ring chains whole filters itself when one reports Full.
  spec.scalable = false;
  spec.max_bytes = options.max_filter_bytes;
  return spec;
}

// A refused request changes nothing: the ring's filters must be buildable
// (a rate the type can reach, a size within limits) before the dedup
// column families are created or a set is recorded.
Status CheckRingSpec(const DedupOptions& options) {
  SF_ASSIGN_OR_RETURN(DedupMeta m, NewMeta(options));
  SF_ASSIGN_OR_RETURN(
      FilterSpec resolved,
      internal::ResolveSpec(RingSpec(options, m.partitions, kDefaultSeed),
                            Durability::kNone));
  return internal::FirstLinkBytes(resolved).status().WithContext(
      "dedup filter");
}

}  // namespace

Result<std::unique_ptr<DedupStore>> DedupStore::Open(
    Database& db, std::string_view name, const DedupOptions& options) {
  SF_RETURN_IF_ERROR(CheckOptions(name, options));
  internal::DatabaseImpl& impl = *db.impl_;
  if (impl.store == nullptr) {
    return Status::NotSupported("opening dedup set: the database is closed");
  }
  // One instance per set and Database: its journal has one writer.
  {
    internal::MutexLock lock(impl.mu);
    if (!impl.open_dedup_sets.emplace(name).second) {
      return Status::Busy("dedup set \"" + std::string(name) +
                          "\" is already open on this database");
    }
  }
  auto release = [&impl, set = std::string(name)] {
    internal::MutexLock lock(impl.mu);
    impl.open_dedup_sets.erase(set);
  };
  struct Releaser {
    std::function<void()> fn;
    ~Releaser() {
      if (fn) fn();
    }
  } unregister_on_error{release};
  const bool read_only = db.read_only();
  const bool create = !read_only && options.create_if_missing;
  if (create) SF_RETURN_IF_ERROR(CheckRingSpec(options));
  SF_ASSIGN_OR_RETURN(persistence::DedupTable * table,
                      impl.store->Dedup(create));
  SF_ASSIGN_OR_RETURN(std::optional<DedupMeta> meta, table->GetMeta(name));
  const std::string what = "dedup set \"" + std::string(name) + "\"";
  const std::string log_path =
      persistence::DedupLogPath(impl.store->path(), name);
  using persistence::SyncedKind;
  if (!meta) {
    if (!create) return Status::NotFound("no " + what);
    SF_ASSIGN_OR_RETURN(DedupMeta m, NewMeta(options));
    // A journal left by a dropped set of that name is debris, and so is a
    // loss record (persistence/sync_marker.h): a set created anew
    // lost nothing.
    SF_RETURN_IF_ERROR(
        persistence::DedupJournal::Remove(*impl.store->log_env(), log_path));
    SF_RETURN_IF_ERROR(
        impl.store->ClearLostSyncedWrites(SyncedKind::kDedupSet, name));
    SF_RETURN_IF_ERROR(table->PutMeta(name, m));
    meta = m;
  } else if (auto lost =
                 impl.store->LostSyncedWrites(SyncedKind::kDedupSet, name);
             !lost.ok() || *lost) {
    // Writes acknowledged under durability sync were lost with the
    // write-ahead log: the set is unavailable (its answers would be
    // wrong), the rest of the store is not.
    return lost.ok()
               ? persistence::WalLossError(SyncedKind::kDedupSet, name, **lost)
               : lost.status();
  } else if ((options.ttl_ms && *options.ttl_ms != meta->ttl_ms) ||
             (options.partitions != 0 && meta->ttl_ms != 0 &&
              options.partitions != meta->partitions)) {
    return Status::InvalidArgument(what + " was created with ttl " +
                                   std::to_string(meta->ttl_ms) + " ms and " +
                                   std::to_string(meta->partitions) +
                                   " partitions; a set's window cannot change");
  }
  auto core = std::make_unique<DedupCore>();
  core->name = std::string(name);
  core->table = table;
  core->ttl_ms = meta->ttl_ms;
  core->partitions = meta->partitions;
  core->granularity = meta->partitions ? meta->ttl_ms / meta->partitions : 0;
  core->clock = options.clock ? options.clock : SystemMs;
  const DatabaseOptions& dbo = db.options();
  core->durability = dbo.durability_override.value_or(
      options.durability.value_or(dbo.default_durability));
  core->mode.wal = core->durability != Durability::kNone;
  core->mode.sync = core->durability == Durability::kSync;
  core->stripes =
      std::make_unique<internal::DedupStripe[]>(options.lock_stripes);
  core->stripe_mask = options.lock_stripes - 1;
  const uint32_t p = core->partitions;
  const FilterSpec spec = RingSpec(options, p, core->seed);
  SF_ASSIGN_OR_RETURN(core->ring, internal::DedupRing::Create(spec, p + 1));
  // What a crash left in the journal reaches RocksDB before the filters
  // are rebuilt from it (a read-only store reads it into an overlay).
  using persistence::DedupJournal;
  persistence::Env& env = *impl.store->log_env();
  if (read_only) {
    SF_ASSIGN_OR_RETURN(core->journal,
                        DedupJournal::OpenReadOnly(table, env, log_path, name));
  } else {
    SF_ASSIGN_OR_RETURN(core->replayed,
                        DedupJournal::Replay(table, env, log_path, name));
    if (core->durability == Durability::kJournal && options.journal_bytes) {
      SF_ASSIGN_OR_RETURN(core->journal,
                          DedupJournal::Create(table, env, log_path, name,
                                               options.journal_bytes / 2));
    }
  }
  SF_RETURN_IF_ERROR(core->Load());
  core->release = std::move(unregister_on_error.fn);
  unregister_on_error.fn = nullptr;
  return std::unique_ptr<DedupStore>(new DedupStore(std::move(core)));
}

Status DedupStore::Drop(Database& db, std::string_view name) {
  if (db.impl_->store == nullptr) {
    return Status::NotSupported("dropping dedup set: the database is closed");
  }
  if (db.read_only()) {
    return Status::NotSupported("dropping dedup set: the store is read-only");
  }
  {
    internal::MutexLock lock(db.impl_->mu);
    if (db.impl_->open_dedup_sets.count(name) != 0) {
      return Status::Busy("dropping dedup set \"" + std::string(name) +
                          "\": it is open; close it first");
    }
  }
  auto table = db.impl_->store->Dedup(false);
  if (!table.ok()) return table.status();
  SF_ASSIGN_OR_RETURN(auto meta, (*table)->GetMeta(name));
  if (!meta)
    return Status::NotFound("no dedup set \"" + std::string(name) + "\"");
  SF_RETURN_IF_ERROR((*table)->DropSet(name));
  SF_RETURN_IF_ERROR(db.impl_->store->ClearLostSyncedWrites(
      persistence::SyncedKind::kDedupSet, name));
  // A crash before this leaves a journal that the set's next creation
  // removes unread.
  return persistence::DedupJournal::Remove(
      *db.impl_->store->log_env(),
      persistence::DedupLogPath(db.impl_->store->path(), name));
}

Result<std::vector<std::string>> DedupStore::List(Database& db) {
  if (db.impl_->store == nullptr) {
    return Status::NotSupported("listing dedup sets: the database is closed");
  }
  auto table = db.impl_->store->Dedup(false);
  if (!table.ok()) return std::vector<std::string>();
  return (*table)->ListSets();
}

DedupStore::DedupStore(std::unique_ptr<DedupCore> core)
    : core_(std::move(core)) {}

DedupStore::~DedupStore() { Close().ok(); }

Status DedupStore::Close() {
  if (core_->closed) return Status::OK();
  core_->closed = true;
  Status s;
  if (core_->journal && !core_->table->read_only()) {
    s = core_->journal->Flush();  // else the next Open replays it
  }
  core_->journal.reset();
  if (s.ok() && core_->durability == Durability::kNone) {
    s = core_->table->Flush();
  }
  if (core_->release) core_->release();
  return s;
}

Result<bool> DedupStore::InsertIfAbsent(std::string_view key) {
  return core_->InsertIfAbsent(key);
}
Result<bool> DedupStore::Contains(std::string_view key) {
  return core_->Contains(key);
}
Result<bool> DedupStore::Remove(std::string_view key) {
  return core_->Remove(key);
}
Status DedupStore::InsertIfAbsentBatch(std::span<const std::string_view> keys,
                                       std::vector<uint8_t>* out) {
  return core_->InsertBatch(keys, out);
}
Status DedupStore::ContainsBatch(std::span<const std::string_view> keys,
                                 std::vector<uint8_t>* out) {
  return core_->ContainsBatch(keys, out);
}
Status DedupStore::RemoveBatch(std::span<const std::string_view> keys,
                               std::vector<uint8_t>* out) {
  return core_->RemoveBatch(keys, out);
}

Result<uint64_t> DedupStore::Expire() {
  SF_RETURN_IF_ERROR(core_->CheckUsable(true));
  uint64_t before = core_->counters.expired_keys.load();
  SF_RETURN_IF_ERROR(core_->MaybeRotate());
  uint64_t cur = core_->current.load();
  if (core_->ttl() && cur >= core_->partitions) {
    SF_RETURN_IF_ERROR(core_->Purge(cur - core_->partitions).status());
  }
  return core_->counters.expired_keys.load() - before;
}

Status DedupStore::Flush() {
  SF_RETURN_IF_ERROR(core_->CheckUsable(false));
  if (core_->journal && !core_->table->read_only()) {
    SF_RETURN_IF_ERROR(core_->journal->Flush());
  }
  return core_->table->Flush();
}

DedupStats DedupStore::Stats() const {
  const internal::DedupCounters& c = core_->counters;
  auto get = [](const std::atomic<uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  auto sum = [](const internal::ThreadStripedCount& c) { return c.Load(); };
  DedupStats s;
  s.inserts = sum(c.inserts);
  s.new_keys = sum(c.new_keys);
  s.duplicates = sum(c.duplicates);
  s.removes = sum(c.removes);
  s.removed = sum(c.removed);
  s.lookups = sum(c.lookups);
  s.rocksdb_reads = sum(c.reads);
  s.reads_avoided = sum(c.avoided);
  s.filter_false_positives = sum(c.false_positives);
  uint64_t absent = s.filter_false_positives + s.reads_avoided;
  s.observed_fpr = absent ? double(s.filter_false_positives) / absent : 0;
  s.expired_keys = get(c.expired_keys);
  s.expired_partitions = get(c.expired_partitions);
  s.loaded_keys = get(c.loaded_keys);
  s.open_ms = get(c.open_ms);
  s.journal_replayed = core_->replayed;
  s.journal_flushes = core_->journal ? core_->journal->flushes() : 0;
  std::shared_lock lock(core_->ring_mu);
  s.current_bucket = core_->current.load(std::memory_order_relaxed);
  core_->ring->AppendStats(&s.partitions);
  return s;
}

const std::string& DedupStore::name() const { return core_->name; }
Durability DedupStore::durability() const { return core_->durability; }
uint64_t DedupStore::ttl_ms() const { return core_->ttl_ms; }
uint32_t DedupStore::partitions() const { return core_->partitions; }

}  // namespace shardfilter
