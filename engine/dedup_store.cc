// DedupStore: opening, single-key operations, expiry and statistics. The
// batch forms are in dedup_batch.cc; the invariants (X1-X4) in
// engine/internal/dedup_core.h.
#include "engine/dedup_store.h"

#include <algorithm>
#include <chrono>

#include "engine/internal/database_impl.h"
#include "engine/internal/dedup_core.h"

namespace shardfilter {

using internal::DedupCore;
using persistence::DedupBatch;
using persistence::DedupEntry;
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
    return Status::InvalidArgument("dedup fpp " + std::to_string(o.fpp) +
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

}  // namespace

namespace internal {

StripeGuard::StripeGuard(DedupStripe* stripes, std::vector<uint32_t> ids)
    : stripes_(stripes), ids_(std::move(ids)) {
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  for (uint32_t id : ids_) stripes_[id].mu.lock();  // X4: ascending
}

StripeGuard::~StripeGuard() {
  for (auto it = ids_.rbegin(); it != ids_.rend(); ++it) {
    stripes_[*it].mu.unlock();
  }
}

Status DedupCore::CheckUsable(bool write) const {
  if (closed) {
    return Status::NotSupported("dedup set " + name + " is closed");
  }
  if (write && table->read_only()) {
    return Status::NotSupported("dedup set " + name +
                                ": the store is open read-only");
  }
  return Status::OK();
}

Status DedupCore::CheckKey(std::string_view key) const {
  if (key.size() > kMaxDedupKeyBytes) {
    return Status::InvalidArgument(
        "dedup key of " + std::to_string(key.size()) +
        " bytes exceeds the limit of " + std::to_string(kMaxDedupKeyBytes));
  }
  return Status::OK();
}

Status DedupCore::MaybeRotate() {
  if (!ttl()) return Status::OK();
  uint64_t b = ClockBucket();
  if (b <= current.load(std::memory_order_acquire)) return Status::OK();
  return Rotate(b);
}

Status DedupCore::Rotate(uint64_t to) {
  {
    std::unique_lock lock(ring_mu);  // X2
    uint64_t cur = current.load(std::memory_order_relaxed);
    if (to <= cur) return Status::OK();
    // Buckets entering the window: (cur, to], at most P + 1 of them. Build
    // their filters first so that a failure changes nothing.
    uint64_t first = std::max(cur + 1, to >= partitions ? to - partitions : 0);
    std::vector<std::unique_ptr<ShardedFilter>> fresh;
    for (uint64_t b = first; b <= to; ++b) {
      SF_ASSIGN_OR_RETURN(auto f, ring->NewLink());
      fresh.push_back(std::move(f));
    }
    for (uint64_t b = first; b <= to; ++b) {
      ring->Reset(b, std::move(fresh[b - first]));
    }
    counters.expired_partitions.fetch_add(to - first + 1,
                                          std::memory_order_relaxed);
    current.store(to, std::memory_order_release);
  }
  if (table->read_only() || to < partitions) return Status::OK();
  return Purge(to - partitions).status();
}

Result<uint64_t> DedupCore::Purge(uint64_t below) {
  std::lock_guard purge_lock(purge_mu);
  if (below <= purged_until) return uint64_t{0};
  uint64_t deleted = 0;
  std::vector<std::string> keys;
  // Deletes the index keys gathered in `keys`, and their entries where the
  // entry (re-read under its stripe: X3) is expired.
  auto flush = [&]() -> Status {
    if (keys.empty()) return Status::OK();
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<uint32_t> ids;
    for (std::string_view k : views) ids.push_back(StripeOf(Hash(k)));
    StripeGuard guard(stripes.get(), std::move(ids));
    std::vector<std::optional<DedupEntry>> found(views.size());
    SF_RETURN_IF_ERROR(table->MultiGet(name, views, &found));
    DedupBatch batch(*table);
    uint64_t n = 0;
    for (size_t i = 0; i < views.size(); ++i) {
      if (found[i] && found[i]->bucket < below) {
        batch.Delete(name, views[i], *found[i], true);
        ++n;
      }
    }
    SF_RETURN_IF_ERROR(table->Write(&batch, mode));
    deleted += n;
    keys.clear();
    return Status::OK();
  };
  DedupBatch index_range(*table);
  Status s = table->ScanIndex(
      name, purged_until, below, [&](uint64_t, std::string_view key) -> Status {
        keys.emplace_back(key);
        return keys.size() >= 1024 ? flush() : Status::OK();
      });
  if (s.ok()) s = flush();
  // Index keys of renewed entries are left: drop the whole range.
  index_range.DeleteIndexRange(name, purged_until, below);
  if (s.ok()) s = table->Write(&index_range, mode);
  counters.expired_keys.fetch_add(deleted, std::memory_order_relaxed);
  SF_RETURN_IF_ERROR(s);
  purged_until = below;
  return deleted;
}

Status DedupCore::Load() {
  const auto start = std::chrono::steady_clock::now();
  uint64_t cur = ClockBucket();
  if (ttl()) {
    SF_ASSIGN_OR_RETURN(std::optional<uint64_t> max, table->MaxBucket(name));
    if (max) cur = std::max(cur, *max);  // the clock went back: keep going
    for (uint64_t b = cur >= partitions ? cur - partitions : 0; b <= cur; ++b) {
      SF_ASSIGN_OR_RETURN(auto f, ring->NewLink());
      ring->Reset(b, std::move(f));
    }
  }
  current.store(cur, std::memory_order_release);
  uint64_t loaded = 0;
  SF_RETURN_IF_ERROR(table->ScanEntries(
      name, [&](std::string_view key, const DedupEntry& e) -> Status {
        if (!Live(e.bucket, cur)) return Status::OK();  // purged below
        ring->Add(ttl() ? e.bucket : 0, Hash(key));
        ++loaded;
        return Status::OK();
      }));
  counters.loaded_keys.store(loaded, std::memory_order_relaxed);
  if (ttl() && !table->read_only() && cur >= partitions) {
    SF_RETURN_IF_ERROR(Purge(cur - partitions).status());
  }
  counters.open_ms.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count(),
                         std::memory_order_relaxed);
  return Status::OK();
}

Result<bool> DedupCore::InsertIfAbsent(std::string_view key) {
  SF_RETURN_IF_ERROR(CheckUsable(true));
  SF_RETURN_IF_ERROR(CheckKey(key));
  SF_RETURN_IF_ERROR(MaybeRotate());
  const uint64_t h = Hash(key);
  std::shared_lock ring_lock(ring_mu);  // X2
  const uint64_t cur = current.load(std::memory_order_relaxed);
  std::lock_guard stripe(stripes[StripeOf(h)].mu);  // X1
  counters.inserts.fetch_add(1, std::memory_order_relaxed);
  std::optional<DedupEntry> old;
  if (ring->MayContain(h)) {
    counters.reads.fetch_add(1, std::memory_order_relaxed);
    SF_ASSIGN_OR_RETURN(old, table->Get(name, key));
    if (old && Live(old->bucket, cur)) {
      counters.duplicates.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    counters.false_positives.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters.avoided.fetch_add(1, std::memory_order_relaxed);
  }
  DedupBatch batch(*table);
  if (old && ttl()) batch.Delete(name, key, *old, true);  // its old index key
  batch.Put(name, key, {Now(), cur}, ttl());
  SF_RETURN_IF_ERROR(table->Write(&batch, mode));
  ring->Add(cur, h);  // X1: after the write
  counters.new_keys.fetch_add(1, std::memory_order_relaxed);
  return true;
}

Result<bool> DedupCore::Contains(std::string_view key) {
  SF_RETURN_IF_ERROR(CheckUsable(false));
  SF_RETURN_IF_ERROR(CheckKey(key));
  SF_RETURN_IF_ERROR(MaybeRotate());
  const uint64_t h = Hash(key);
  std::shared_lock ring_lock(ring_mu);
  const uint64_t cur = current.load(std::memory_order_relaxed);
  counters.lookups.fetch_add(1, std::memory_order_relaxed);
  if (!ring->MayContain(h)) {
    counters.avoided.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  counters.reads.fetch_add(1, std::memory_order_relaxed);
  SF_ASSIGN_OR_RETURN(std::optional<DedupEntry> e, table->Get(name, key));
  if (e && Live(e->bucket, cur)) return true;
  counters.false_positives.fetch_add(1, std::memory_order_relaxed);
  return false;
}

Result<bool> DedupCore::Remove(std::string_view key) {
  SF_RETURN_IF_ERROR(CheckUsable(true));
  SF_RETURN_IF_ERROR(CheckKey(key));
  SF_RETURN_IF_ERROR(MaybeRotate());
  const uint64_t h = Hash(key);
  std::shared_lock ring_lock(ring_mu);
  const uint64_t cur = current.load(std::memory_order_relaxed);
  std::lock_guard stripe(stripes[StripeOf(h)].mu);
  counters.removes.fetch_add(1, std::memory_order_relaxed);
  if (!ring->MayContain(h)) {
    counters.avoided.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  counters.reads.fetch_add(1, std::memory_order_relaxed);
  SF_ASSIGN_OR_RETURN(std::optional<DedupEntry> e, table->Get(name, key));
  if (!e || !Live(e->bucket, cur)) {  // never added: the filter is untouched
    counters.false_positives.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  DedupBatch batch(*table);
  batch.Delete(name, key, *e, ttl());
  SF_RETURN_IF_ERROR(table->Write(&batch, mode));
  ring->Remove(e->bucket, h);
  counters.removed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace internal

Result<std::unique_ptr<DedupStore>> DedupStore::Open(
    Database& db, std::string_view name, const DedupOptions& options) {
  SF_RETURN_IF_ERROR(CheckOptions(name, options));
  internal::DatabaseImpl& impl = *db.impl_;
  if (impl.store == nullptr) {
    return Status::NotSupported("opening dedup set: the database is closed");
  }
  const bool read_only = db.read_only();
  const bool create = !read_only && options.create_if_missing;
  SF_ASSIGN_OR_RETURN(persistence::DedupTable * table,
                      impl.store->Dedup(create));
  SF_ASSIGN_OR_RETURN(std::optional<DedupMeta> meta, table->GetMeta(name));
  const std::string what = "dedup set \"" + std::string(name) + "\"";
  if (!meta) {
    if (!create) return Status::NotFound("no " + what);
    SF_ASSIGN_OR_RETURN(DedupMeta m, NewMeta(options));
    SF_RETURN_IF_ERROR(table->PutMeta(name, m));
    meta = m;
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
  FilterSpec spec;
  spec.type = options.filter_type;
  const uint32_t p = core->partitions;
  spec.capacity =
      p ? (options.expected_keys + p - 1) / p : options.expected_keys;
  spec.fpp = p ? options.fpp / (p + 1) : options.fpp;
  spec.seed = core->seed;
  SF_ASSIGN_OR_RETURN(core->ring, internal::DedupRing::Create(spec, p + 1));
  SF_RETURN_IF_ERROR(core->Load());
  return std::unique_ptr<DedupStore>(new DedupStore(std::move(core)));
}

Status DedupStore::Drop(Database& db, std::string_view name) {
  if (db.impl_->store == nullptr) {
    return Status::NotSupported("dropping dedup set: the database is closed");
  }
  if (db.read_only()) {
    return Status::NotSupported("dropping dedup set: the store is read-only");
  }
  auto table = db.impl_->store->Dedup(false);
  if (!table.ok()) return table.status();
  SF_ASSIGN_OR_RETURN(auto meta, (*table)->GetMeta(name));
  if (!meta)
    return Status::NotFound("no dedup set \"" + std::string(name) + "\"");
  return (*table)->DropSet(name);
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
  if (core_->durability == Durability::kNone) return core_->table->Flush();
  return Status::OK();
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
  return core_->table->Flush();
}

DedupStats DedupStore::Stats() const {
  const internal::DedupCounters& c = core_->counters;
  auto get = [](const std::atomic<uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  DedupStats s;
  s.inserts = get(c.inserts);
  s.new_keys = get(c.new_keys);
  s.duplicates = get(c.duplicates);
  s.removes = get(c.removes);
  s.removed = get(c.removed);
  s.lookups = get(c.lookups);
  s.rocksdb_reads = get(c.reads);
  s.reads_avoided = get(c.avoided);
  s.filter_false_positives = get(c.false_positives);
  uint64_t absent = s.filter_false_positives + s.reads_avoided;
  s.observed_fpr = absent ? double(s.filter_false_positives) / absent : 0;
  s.expired_keys = get(c.expired_keys);
  s.expired_partitions = get(c.expired_partitions);
  s.loaded_keys = get(c.loaded_keys);
  s.open_ms = get(c.open_ms);
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
