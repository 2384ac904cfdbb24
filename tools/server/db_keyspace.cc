#include "tools/server/db_keyspace.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/migration.h"
#include "shardfilter/engine/tiered_filter.h"
#include "tools/commands/sharded_handle.h"

namespace shardfilter::server {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool OverBudget(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted;
}

// A tiered filter's level (or a name posing as one).
bool IsReserved(std::string_view key) {
  return key.find(TieredFilter::kLevelMark) != std::string_view::npos;
}

Status ReservedName() {
  return Status::InvalidArgument(
      "key names containing the bytes \\0level/ are reserved (tiered "
      "filters' levels)");
}

// Keyspace::Lookup's InvalidArgument means a name the host cannot hold,
// which the commands answer as absent. A key of a name the host holds whose
// open fails with InvalidArgument (stored parameters this server refuses,
// e.g. filters over --max-filter-bytes) exists and cannot be read: it is
// answered as NotSupported, with the engine's message.
Status OpenFailure(const Status& s) {
  if (!s.IsInvalidArgument()) return s;
  return Status::NotSupported(s.message());
}

// True when the Database has a filter of this name, loadable or not (a load
// that fails is not "no filter").
bool HoldsFilter(const Database& db, std::string_view key) {
  if (key.empty() || key.size() > kMaxFilterNameBytes) return false;
  return !db.Get(key).status().IsNotFound();
}

class DbTiered final : public commands::TieredHandle {
 public:
  explicit DbTiered(std::shared_ptr<TieredFilter> t) : t_(std::move(t)) {}
  Status Add(std::span<const std::string_view> items,
             std::vector<Status>* per_item) override {
    if (items.size() == 1) {
      per_item->assign(1, t_->Add(items[0]));
      return (*per_item)[0];
    }
    return t_->AddKeys(items, per_item);
  }
  Status Contains(std::span<const std::string_view> items,
                  std::span<uint8_t> out) override {
    if (items.size() == 1) {
      SF_ASSIGN_OR_RETURN(bool in, t_->Contains(items[0]));
      out[0] = in ? 1 : 0;
      return Status::OK();
    }
    return t_->ContainsKeys(items, out);
  }
  Status Remove(std::string_view item) override { return t_->Remove(item); }
  TieredStats Stats() override { return t_->Stats(); }
  // Every level has the tiered filter's durability (tiered_filter.h).
  Durability durability() override { return t_->level(0).durability(); }

 private:
  std::shared_ptr<TieredFilter> t_;
};

}  // namespace

// One dedup set. Its calls hold mu_ shared; Close holds it exclusive, so it
// never races with a call (DedupStore::Close must not), and afterwards the
// calls answer NotFound (the set was dropped or the server is stopping).
class DbDedup final : public commands::DedupHandle {
 public:
  explicit DbDedup(std::unique_ptr<DedupStore> d) : d_(std::move(d)) {}
  Status Insert(std::span<const std::string_view> items,
                std::vector<uint8_t>* out) override {
    std::shared_lock lock(mu_);
    SF_RETURN_IF_ERROR(Open());
    if (items.size() == 1) {
      SF_ASSIGN_OR_RETURN(bool fresh, d_->InsertIfAbsent(items[0]));
      out->assign(1, fresh ? 1 : 0);
      return Status::OK();
    }
    return d_->InsertIfAbsentBatch(items, out);
  }
  Status Contains(std::span<const std::string_view> items,
                  std::vector<uint8_t>* out) override {
    std::shared_lock lock(mu_);
    SF_RETURN_IF_ERROR(Open());
    if (items.size() == 1) {
      SF_ASSIGN_OR_RETURN(bool in, d_->Contains(items[0]));
      out->assign(1, in ? 1 : 0);
      return Status::OK();
    }
    return d_->ContainsBatch(items, out);
  }
  Status Remove(std::span<const std::string_view> items,
                std::vector<uint8_t>* out) override {
    std::shared_lock lock(mu_);
    SF_RETURN_IF_ERROR(Open());
    if (items.size() == 1) {
      SF_ASSIGN_OR_RETURN(bool was, d_->Remove(items[0]));
      out->assign(1, was ? 1 : 0);
      return Status::OK();
    }
    return d_->RemoveBatch(items, out);
  }
  DedupStats Stats() override {
    std::shared_lock lock(mu_);
    return d_ != nullptr ? d_->Stats() : DedupStats{};
  }
  uint64_t ttl_ms() override {
    std::shared_lock lock(mu_);
    return d_ != nullptr ? d_->ttl_ms() : 0;
  }
  uint32_t partitions() override {
    std::shared_lock lock(mu_);
    return d_ != nullptr ? d_->partitions() : 0;
  }
  Durability durability() override {
    std::shared_lock lock(mu_);
    return d_ != nullptr ? d_->durability() : Durability::kNone;
  }
  Status Flush() {
    std::shared_lock lock(mu_);
    return d_ != nullptr ? d_->Flush() : Status::OK();
  }
  Status Close() {
    std::unique_lock lock(mu_);
    if (d_ == nullptr) return Status::OK();
    Status s = d_->Close();
    d_.reset();
    return s;
  }

 private:
  Status Open() const {
    return d_ != nullptr ? Status::OK()
                         : Status::NotFound("the dedup set was dropped");
  }
  std::shared_mutex mu_;
  std::unique_ptr<DedupStore> d_;  // null once closed
};

FilterSpec ToFilterSpec(const commands::CreateParams& p,
                        const DbKeyspaceOptions& options) {
  FilterSpec spec;
  spec.type = p.type;
  spec.capacity = p.capacity;
  spec.fpp = p.error_rate;
  spec.shards = p.shards != 0 ? p.shards : options.shards;
  spec.durability = p.durability;  // nullopt: the Database's default
  spec.retain_hashes = p.retain_hashes;
  spec.scalable = p.scalable;
  spec.expansion = std::clamp<uint32_t>(p.expansion, 1, 16);
  spec.max_bytes = options.max_filter_bytes;
  if (p.type == FilterType::kCuckoo) {
    spec.bucket_size = p.bucket_size;
    spec.max_kicks = p.max_iterations;
  }
  return spec;
}

namespace {

std::atomic<uint64_t> next_instance{1};

// Per event-loop thread: the handles this thread looked up, so that a
// command costs no catalog mutex, no allocation and no shared reference
// count touched by other threads. Emptied whenever any filter was dropped
// (generation) or another DbKeyspace is asked (tests). A dropped filter's
// memory is released once every thread has looked something up since.
// Each entry also holds the key's expiry deadline as it was when cached;
// SetExpiry bumps the generation, so a cached deadline is never stale and
// a hit checks it against the clock without the Database's mutex.
// Every cache is registered, so that ReclaimMemory can empty them all at
// once (a cached handle keeps its filter loaded); `mu` is taken by the
// owning thread around each use (uncontended but for such a purge).
struct HandleCache {
  HandleCache();
  ~HandleCache();
  struct Entry {
    std::shared_ptr<commands::FilterHandle> handle;
    std::optional<int64_t> deadline;  // unix ms
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  std::mutex mu;
  uint64_t owner = 0;       // GUARDED_BY(mu)
  uint64_t generation = 0;  // GUARDED_BY(mu)
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>>
      handles;  // GUARDED_BY(mu)
};
constexpr size_t kMaxCachedHandles = 4096;

// Every thread's HandleCache. Never destroyed: threads may exit (and
// unregister) after static destruction began.
struct CacheRegistry {
  std::mutex mu;
  std::vector<HandleCache*> caches;  // GUARDED_BY(mu)
};
CacheRegistry& Registry() {
  static CacheRegistry* registry = new CacheRegistry();
  return *registry;
}

HandleCache::HandleCache() {
  std::lock_guard lock(Registry().mu);
  Registry().caches.push_back(this);
}

HandleCache::~HandleCache() {
  std::lock_guard lock(Registry().mu);
  auto& all = Registry().caches;
  all.erase(std::find(all.begin(), all.end(), this));
}

// Empties every thread's cache of `instance`'s handles; the keys that were
// cached go to *hot (recently used).
void PurgeHandleCaches(uint64_t instance, std::set<std::string>* hot) {
  std::lock_guard reg(Registry().mu);
  for (HandleCache* c : Registry().caches) {
    std::lock_guard lock(c->mu);
    if (c->owner != instance) continue;
    for (const auto& [key, entry] : c->handles) hot->insert(key);
    c->handles.clear();
  }
}

HandleCache& ThreadCache() {
  thread_local HandleCache cache;
  return cache;
}

// Empties the calling thread's handle cache (of every keyspace).
void ForgetThreadHandles() {
  HandleCache& cache = ThreadCache();
  std::lock_guard lock(cache.mu);
  cache.handles.clear();
}

// One Database filter as the command layer sees it; holds the handle so the
// filter outlives the command.
// - An add whose growth the memory budget refused is tried again after the
//   keyspace unloaded another filter (ReclaimMemory), as long as one can
//   be: only the refused items, which changed nothing.
// - An add that finds the filter dropped (NotFound: a DEL, FLUSHALL or
//   expiry on another thread, whose generation bump may not have happened
//   yet) empties this thread's handle cache, so that the command's next
//   lookup (its retry, util.h kMaxWriteAttempts) asks the Database, which
//   no longer has it.
class DbFilter final : public commands::ShardedFilterHandle {
 public:
  DbFilter(std::shared_ptr<ShardedFilter> f, DbKeyspace* keyspace)
      : ShardedFilterHandle(f.get()), f_(std::move(f)), keyspace_(keyspace) {}

  Result<bool> Add(std::string_view item) override {
    Result<bool> r = ShardedFilterHandle::Add(item);
    if (!r.ok() && OverBudget(r.status())) {
      for (size_t tries = keyspace_->ReclaimAttempts();
           tries > 0 && keyspace_->ReclaimMemory(); --tries) {
        r = ShardedFilterHandle::Add(item);
        if (r.ok() || !OverBudget(r.status())) break;
      }
    }
    if (!r.ok() && r.status().IsNotFound()) ForgetThreadHandles();
    return r;
  }
  void AddMany(std::span<const std::string_view> items,
               std::vector<Status>* per_item,
               std::vector<uint8_t>* added) override {
    ShardedFilterHandle::AddMany(items, per_item, added);
    RetryRefused(items, per_item, added);
    for (const Status& s : *per_item) {
      if (s.IsNotFound()) {
        ForgetThreadHandles();
        break;
      }
    }
  }

 private:
  void RetryRefused(std::span<const std::string_view> items,
                    std::vector<Status>* per_item,
                    std::vector<uint8_t>* added) {
    std::vector<size_t> refused;
    size_t tries = 0;
    for (bool first = true;; first = false) {
      refused.clear();
      for (size_t i = 0; i < items.size(); ++i) {
        if (OverBudget((*per_item)[i])) refused.push_back(i);
      }
      if (refused.empty()) return;
      if (first) tries = keyspace_->ReclaimAttempts();
      if (tries-- == 0 || !keyspace_->ReclaimMemory()) return;
      std::vector<std::string_view> again;
      for (size_t i : refused) again.push_back(items[i]);
      std::vector<Status> st;
      std::vector<uint8_t> ad;
      ShardedFilterHandle::AddMany(again, &st, &ad);
      for (size_t j = 0; j < refused.size(); ++j) {
        (*per_item)[refused[j]] = std::move(st[j]);
        (*added)[refused[j]] = ad[j];
      }
    }
  }

  std::shared_ptr<ShardedFilter> f_;
  DbKeyspace* keyspace_;
};

Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

// Runs `call` again after each filter ReclaimMemory unloaded, for as long
// as the memory budget refuses it and a filter can be unloaded, and at most
// ReclaimAttempts() times: a call may load back what was unloaded for it
// (a migration loads its source), so "something was unloaded" alone
// would not end the loop.
template <typename Call>
auto WithReclaim(DbKeyspace& keyspace, Call&& call) -> decltype(call()) {
  auto r = call();
  if (r.ok() || !OverBudget(StatusOf(r))) return r;
  for (size_t tries = keyspace.ReclaimAttempts();
       tries > 0 && keyspace.ReclaimMemory(); --tries) {
    r = call();
    if (r.ok() || !OverBudget(StatusOf(r))) break;
  }
  return r;
}

}  // namespace

DbKeyspace::DbKeyspace(Database* db, const DbKeyspaceOptions& options)
    : db_(db),
      options_(options),
      last_checkpoint_unix_(NowUnix()),
      instance_(next_instance.fetch_add(1)) {
  // The other kinds' names, once (a read-only store without dedup sets
  // answers NotFound: none). A level name's prefix is its tiered filter's;
  // levels left by a crashed create are collected by the next create.
  if (auto sets = DedupStore::List(*db_); sets.ok()) {
    for (std::string& name : *sets) dedups_.emplace(std::move(name), nullptr);
  }
  for (const std::string& name : db_->List()) {
    const size_t at = name.find(TieredFilter::kLevelMark);
    if (at == std::string::npos || at == 0) continue;
    const std::string_view base = std::string_view(name).substr(0, at);
    if (tiered_.find(base) != tiered_.end()) continue;
    auto t = TieredFilter::Open(db_, base);
    if (t.ok()) {
      tiered_.emplace(std::string(base), *std::move(t));
    } else if (!t.status().IsNotFound()) {
      // It exists and cannot be opened now (a level over the memory
      // budget, damaged): a key whose use answers the error (LookupTiered
      // opens it again), never a free name.
      tiered_.emplace(std::string(base), nullptr);
    }
  }
}

void DbKeyspace::Invalidate() {
  generation_.fetch_add(1, std::memory_order_release);
  TrimThreadCache();
  if (drop_listener_) drop_listener_();
}

void DbKeyspace::TrimThreadCache() {
  HandleCache& cache = ThreadCache();
  std::lock_guard lock(cache.mu);
  if (cache.owner == instance_ &&
      cache.generation != generation_.load(std::memory_order_acquire)) {
    cache.handles.clear();
  }
}

void DbKeyspace::ReleaseThreadCache() {
  HandleCache& cache = ThreadCache();
  std::lock_guard lock(cache.mu);
  if (cache.owner == instance_) cache.handles.clear();
}

namespace {

// RocksDB memtables worth writing out under pressure (a checkpoint, which
// every unload of a changed filter makes, moves its tables' bytes there),
// and what a flush must give back to count as progress: an empty
// memtable still holds an arena block or so.
constexpr uint64_t kFlushableStoreBytes = 4u << 20;

}  // namespace

bool DbKeyspace::FlushStoreMemory() {
  auto flushed = db_->FlushStoreMemory(kFlushableStoreBytes);
  const bool freed = flushed.ok() && *flushed >= kFlushableStoreBytes;
  if (freed && after_reclaim_) after_reclaim_();
  return freed;
}

bool DbKeyspace::ReclaimMemory() {
  std::lock_guard reclaim(reclaim_mu_);
  if (FlushStoreMemory()) return true;
  std::set<std::string> hot;
  PurgeHandleCaches(instance_, &hot);
  // Filters no thread used since the last purge go first, then the
  // largest (the fewest loads again free the most).
  struct Victim {
    bool hot;
    uint64_t bytes;
    std::string name;
  };
  std::vector<Victim> victims;
  for (std::string& name : db_->Loaded()) {
    if (IsReserved(name)) continue;  // a tiered filter's level: it holds it
    auto f = db_->Get(name);
    if (!f.ok()) continue;
    const uint64_t bytes = (*f)->Counts().total.bytes;
    victims.push_back({hot.count(name) != 0, bytes, std::move(name)});
  }
  std::sort(victims.begin(), victims.end(),
            [](const Victim& a, const Victim& b) {
              return a.hot != b.hot ? !a.hot : a.bytes > b.bytes;
            });
  for (const Victim& v : victims) {
    // Busy (in use by a command, a migration), or the checkpoint failed:
    // the next one.
    if (db_->Unload(v.name).ok()) {
      unloads_.fetch_add(1, std::memory_order_relaxed);
      // Its checkpoint, if it had changed, now sits in the memtables.
      if (!FlushStoreMemory() && after_reclaim_) after_reclaim_();
      return true;
    }
  }
  return false;
}

bool DbKeyspace::WriteMayWaitForSync(std::string_view key) {
  auto f = Lookup(key);
  if (f.ok()) return (*f)->durability() == Durability::kSync;
  if (f.status().IsNotFound()) return true;  // a write would create it
  if (f.status().code() != StatusCode::kWrongType) return false;
  if (auto d = LookupDedup(key); d.ok()) {
    return (*d)->durability() == Durability::kSync;
  }
  if (auto t = LookupTiered(key); t.ok()) {
    return (*t)->durability() == Durability::kSync;
  }
  return false;
}

Result<std::shared_ptr<commands::FilterHandle>> DbKeyspace::Lookup(
    std::string_view key) {
  HandleCache& cache = ThreadCache();
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  {
    std::lock_guard lock(cache.mu);
    if (cache.owner != instance_ || cache.generation != generation ||
        cache.handles.size() > kMaxCachedHandles) {
      cache.handles.clear();
      cache.owner = instance_;
      cache.generation = generation;
    }
    if (auto it = cache.handles.find(key); it != cache.handles.end()) {
      const std::optional<int64_t> deadline = it->second.deadline;
      if (!deadline.has_value() || *deadline > NowUnixMs()) {
        return it->second.handle;
      }
      // Past its deadline: dropped now (this empties the cache).
    }
  }
  if (IsReserved(key)) return ReservedName();
  if (ExpireIfDue(key)) return Status::NotFound("no such key (expired)");
  auto f = WithReclaim(*this, [&] { return db_->Get(key); });
  if (!f.ok()) {
    if (f.status().IsNotFound()) {
      std::lock_guard lock(kinds_mu_);
      if (OtherKindLocked(key) != commands::KeyKind::kNone) {
        return Status::WrongType("the key holds a dedup set or tiered filter");
      }
      return f.status();
    }
    if (key.empty() || key.size() > kMaxFilterNameBytes) return f.status();
    return OpenFailure(f.status());
  }
  std::shared_ptr<commands::FilterHandle> h =
      std::make_shared<DbFilter>(std::move(f).value(), this);
  std::optional<int64_t> deadline;
  if (db_->ExpiryCount() != 0) deadline = db_->Expiry(key);
  std::lock_guard lock(cache.mu);
  if (cache.owner == instance_) {
    cache.handles.emplace(std::string(key), HandleCache::Entry{h, deadline});
  }
  return h;
}

Result<std::shared_ptr<commands::FilterHandle>> DbKeyspace::Create(
    std::string_view key, const commands::CreateParams& params) {
  if (IsReserved(key)) return ReservedName();
  (void)ExpireIfDue(key);  // an expired key is free to create
  std::lock_guard lock(kinds_mu_);
  if (OtherKindLocked(key) != commands::KeyKind::kNone) {
    return Status::AlreadyExists("the key holds a dedup set or tiered filter");
  }
  const FilterSpec spec = ToFilterSpec(params, options_);
  auto f = WithReclaim(*this, [&] { return db_->Create(key, spec); });
  if (!f.ok()) return f.status();
  return std::shared_ptr<commands::FilterHandle>(
      std::make_shared<DbFilter>(std::move(f).value(), this));
}

Result<bool> DbKeyspace::Delete(std::string_view key) {
  if (IsReserved(key)) return false;  // never a key of its own
  std::lock_guard lock(kinds_mu_);
  return DeleteLocked(key);
}

Result<bool> DbKeyspace::DeleteLocked(std::string_view key) {
  switch (OtherKindLocked(key)) {
    case commands::KeyKind::kDedup: {
      auto it = dedups_.find(key);
      std::shared_ptr<DbDedup> d = it->second;
      if (d != nullptr) SF_RETURN_IF_ERROR(d->Close());
      const Status s = DedupStore::Drop(*db_, key);
      if (!s.ok()) {
        it->second = nullptr;  // reopened by its next use
        return s;
      }
      dedups_.erase(it);
      return true;
    }
    case commands::KeyKind::kTiered: {
      const Status s = TieredFilter::Drop(db_, key);
      Invalidate();
      if (!s.ok() && !s.IsNotFound()) return s;
      tiered_.erase(tiered_.find(key));
      return s.ok();
    }
    default:
      break;
  }
  const Status s = db_->Drop(key);
  Invalidate();
  if (s.ok()) return true;
  if (s.IsNotFound()) return false;
  return s;
}

commands::KeyKind DbKeyspace::OtherKindLocked(std::string_view key) const {
  if (dedups_.find(key) != dedups_.end()) return commands::KeyKind::kDedup;
  if (tiered_.find(key) != tiered_.end()) return commands::KeyKind::kTiered;
  return commands::KeyKind::kNone;
}

Status DbKeyspace::CheckFreeLocked(std::string_view key) {
  if (IsReserved(key)) return ReservedName();
  if (OtherKindLocked(key) != commands::KeyKind::kNone) {
    return Status::AlreadyExists("key exists");
  }
  // A filter past its deadline is free (ExpireIfDue would take kinds_mu_).
  if (db_->ExpiryCount() != 0) {
    const std::optional<int64_t> deadline = db_->Expiry(key);
    if (deadline.has_value() && *deadline <= NowUnixMs()) {
      (void)db_->Drop(key);
      Invalidate();
    }
  }
  auto f = db_->Get(key);
  if (f.ok() || !f.status().IsNotFound()) {
    return Status::AlreadyExists("key exists");  // a filter (maybe damaged)
  }
  return Status::OK();
}

std::string DbKeyspace::TypeOf(std::string_view key) {
  if (IsReserved(key)) return "none";
  auto found = Lookup(key);
  if (found.ok()) return commands::TypeName((*found)->type());
  std::lock_guard lock(kinds_mu_);
  switch (OtherKindLocked(key)) {
    case commands::KeyKind::kDedup:
      return commands::kDedupTypeName;
    case commands::KeyKind::kTiered:
      return commands::kTieredTypeName;
    default:
      return "none";
  }
}

std::vector<std::string> DbKeyspace::Keys() {
  (void)ExpireDue();
  std::vector<std::string> out;
  for (std::string& name : db_->List()) {
    if (!IsReserved(name)) out.push_back(std::move(name));
  }
  {
    std::lock_guard lock(kinds_mu_);
    for (const auto& [name, d] : dedups_) out.push_back(name);
    for (const auto& [name, t] : tiered_) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t DbKeyspace::Size() { return Keys().size(); }

Result<std::shared_ptr<commands::DedupHandle>> DbKeyspace::LookupDedup(
    std::string_view key) {
  if (IsReserved(key)) return ReservedName();
  std::lock_guard lock(kinds_mu_);
  auto it = dedups_.find(key);
  if (it == dedups_.end()) {
    if (OtherKindLocked(key) != commands::KeyKind::kNone ||
        HoldsFilter(*db_, key)) {
      return Status::WrongType("the key holds another kind of value");
    }
    return Status::NotFound("no such dedup set");
  }
  if (it->second == nullptr) {  // stored, not opened since the start
    DedupOptions o;
    o.create_if_missing = false;
    o.max_filter_bytes = options_.max_filter_bytes;
    auto d = WithReclaim(*this, [&] { return DedupStore::Open(*db_, key, o); });
    if (!d.ok()) return OpenFailure(d.status());
    it->second = std::make_shared<DbDedup>(std::move(d).value());
  }
  return std::shared_ptr<commands::DedupHandle>(it->second);
}

Result<std::shared_ptr<commands::DedupHandle>> DbKeyspace::CreateDedup(
    std::string_view key, const commands::DedupParams& p) {
  std::lock_guard lock(kinds_mu_);
  SF_RETURN_IF_ERROR(CheckFreeLocked(key));
  DedupOptions o;
  o.ttl_ms = p.ttl_ms;
  o.partitions = p.partitions;
  o.expected_keys = p.capacity;
  o.fpp = p.error_rate;
  o.filter_type = p.filter_type;
  o.durability = p.durability;
  o.create_if_missing = true;
  o.max_filter_bytes = options_.max_filter_bytes;
  SF_ASSIGN_OR_RETURN(auto d, WithReclaim(*this, [&] {
                        return DedupStore::Open(*db_, key, o);
                      }));
  auto h = std::make_shared<DbDedup>(std::move(d));
  dedups_.emplace(std::string(key), h);
  return std::shared_ptr<commands::DedupHandle>(h);
}

Result<std::shared_ptr<commands::TieredHandle>> DbKeyspace::LookupTiered(
    std::string_view key) {
  if (IsReserved(key)) return ReservedName();
  std::shared_ptr<TieredFilter> t;
  {
    std::lock_guard lock(kinds_mu_);
    auto it = tiered_.find(key);
    if (it == tiered_.end()) {
      if (OtherKindLocked(key) != commands::KeyKind::kNone ||
          HoldsFilter(*db_, key)) {
        return Status::WrongType("the key holds another kind of value");
      }
      return Status::NotFound("no such tiered filter");
    }
    if (it->second == nullptr) {
      auto opened =
          WithReclaim(*this, [&] { return TieredFilter::Open(db_, key); });
      if (!opened.ok()) return OpenFailure(opened.status());
      it->second = *std::move(opened);
    }
    t = it->second;
  }
  return std::shared_ptr<commands::TieredHandle>(
      std::make_shared<DbTiered>(std::move(t)));
}

Result<std::shared_ptr<commands::TieredHandle>> DbKeyspace::CreateTiered(
    std::string_view key, const commands::TieredParams& p) {
  std::lock_guard lock(kinds_mu_);
  SF_RETURN_IF_ERROR(CheckFreeLocked(key));
  TieredSpec spec;
  for (const commands::CreateParams& level : p.levels) {
    spec.levels.push_back(ToFilterSpec(level, options_));
  }
  spec.exact_level = p.exact_level;
  spec.durability = p.durability;
  SF_ASSIGN_OR_RETURN(auto t, WithReclaim(*this, [&] {
                        return TieredFilter::Create(db_, key, spec);
                      }));
  tiered_.emplace(std::string(key), t);
  return std::shared_ptr<commands::TieredHandle>(
      std::make_shared<DbTiered>(std::move(t)));
}

Status DbKeyspace::Close() {
  std::lock_guard lock(kinds_mu_);
  Status first;
  for (auto& [name, d] : dedups_) {
    if (d == nullptr) continue;
    Status s = d->Close();
    if (first.ok() && !s.ok()) first = s;
  }
  // Tiered filters must not outlive the Database's use: released (handles
  // commands still hold finish first; none run once the server stopped).
  for (auto& [name, t] : tiered_) t = nullptr;
  return first;
}

DbKeyspace::~DbKeyspace() { (void)Close(); }

Status DbKeyspace::Union(std::string_view dest,
                         std::span<const std::string_view> sources) {
  // As a command sees them: expired keys are absent, the other kinds
  // WRONGTYPE, reserved names absent.
  SF_RETURN_IF_ERROR(Lookup(dest).status());
  for (std::string_view key : sources) SF_RETURN_IF_ERROR(Lookup(key).status());
  return db_->Union(dest, sources);
}

bool DbKeyspace::ExpireIfDue(std::string_view key) {
  if (db_->ExpiryCount() == 0) return false;  // the common case: no lock
  const std::optional<int64_t> deadline = db_->Expiry(key);
  if (!deadline.has_value() || *deadline > NowUnixMs()) return false;
  // Another thread may drop it first: NotFound is as good.
  (void)Delete(key);
  return true;
}

size_t DbKeyspace::ExpireDue() {
  if (db_->ExpiryCount() == 0) return 0;
  size_t n = 0;
  const int64_t now = NowUnixMs();
  for (const auto& [name, deadline] : db_->Expiries()) {
    if (deadline <= now && ExpireIfDue(name)) ++n;
  }
  return n;
}

Status DbKeyspace::SetExpiry(std::string_view key,
                             std::optional<int64_t> unix_ms) {
  if (IsReserved(key)) return Status::NotFound("no such key");
  {
    std::lock_guard lock(kinds_mu_);
    if (OtherKindLocked(key) != commands::KeyKind::kNone) {
      return Status::NotSupported(
          "EXPIRE applies to filters only (a dedup set's keys expire by its "
          "TTL)");
    }
  }
  if (ExpireIfDue(key)) return Status::NotFound("no such key");
  SF_RETURN_IF_ERROR(db_->SetExpiry(key, unix_ms));
  Invalidate();  // every thread's cached deadline of it is stale
  // A deadline already past: the key goes now (Redis: EXPIRE with a
  // non-positive time deletes).
  (void)ExpireIfDue(key);
  return Status::OK();
}

Result<std::optional<int64_t>> DbKeyspace::GetExpiry(std::string_view key) {
  if (IsReserved(key)) return Status::NotFound("no such key");
  auto found = Lookup(key);  // NotFound; expires a due key
  if (found.status().code() == StatusCode::kWrongType) {
    return std::optional<int64_t>();  // dedup sets, tiered: no deadline
  }
  SF_RETURN_IF_ERROR(found.status());
  return db_->Expiry(key);
}

Status DbKeyspace::Flush() {
  std::lock_guard lock(kinds_mu_);
  std::vector<std::string> names;
  for (const auto& [name, d] : dedups_) names.push_back(name);
  for (const auto& [name, t] : tiered_) names.push_back(name);
  for (const std::string& name : names) {
    SF_RETURN_IF_ERROR(DeleteLocked(name).status());
  }
  for (const std::string& name : db_->List()) {
    if (IsReserved(name)) continue;  // levels of tiered filters (gone now)
    const Status s = db_->Drop(name);
    Invalidate();
    if (!s.ok() && !s.IsNotFound()) return s;
  }
  return Status::OK();
}

Status DbKeyspace::Checkpoint() {
  {
    std::lock_guard lock(kinds_mu_);
    for (auto& [name, d] : dedups_) {
      if (d != nullptr) SF_RETURN_IF_ERROR(d->Flush());
    }
  }
  auto r = db_->CheckpointAll();
  if (!r.ok()) return r.status();
  last_checkpoint_unix_.store(NowUnix(), std::memory_order_relaxed);
  return Status::OK();
}

int64_t DbKeyspace::LastCheckpointUnix() {
  return last_checkpoint_unix_.load(std::memory_order_relaxed);
}

Result<std::string> DbKeyspace::Dump(std::string_view key) {
  return ExportFilter(*db_, key);
}

Status DbKeyspace::Restore(std::string_view key, std::string_view bytes) {
  std::lock_guard lock(kinds_mu_);
  if (IsReserved(key)) return ReservedName();
  if (OtherKindLocked(key) != commands::KeyKind::kNone) {
    return Status::AlreadyExists("key exists");
  }
  return WithReclaim(*this, [&] { return ImportFilter(*db_, key, bytes); });
}

Status DbKeyspace::StartMigration(std::string_view key,
                                  const commands::CreateParams& target) {
  const FilterSpec spec = ToFilterSpec(target, options_);
  return WithReclaim(*this, [&] { return db_->StartMigration(key, spec); });
}

Result<commands::MigrationReport> DbKeyspace::Migration(std::string_view key) {
  SF_ASSIGN_OR_RETURN(MigrationProgress p, db_->GetMigration(key));
  commands::MigrationReport r;
  r.phase = MigrationPhaseName(p.phase);
  r.items_total = p.items_total;
  r.items_done = p.items_done;
  r.ops_replayed = p.ops_replayed;
  r.ops_queued = p.ops_queued;
  r.seconds = p.seconds;
  if (!p.status.ok()) r.error = p.status.ToString();
  return r;
}

uint64_t DbKeyspace::FilterBytes() {
  uint64_t total = 0;
  // Filters not used since the start are not in memory (they load on
  // first use): INFO does not load them.
  for (const std::string& name : db_->Loaded()) {
    auto f = db_->Get(name);
    if (f.ok()) total += (*f)->Counts().total.bytes;  // no table scan
  }
  return total;
}

Result<std::unique_ptr<commands::StagingBuffer>> DbKeyspace::NewStaging(
    uint64_t bytes, std::string_view what) {
  // The Database's budget: --maxmemory's (server_main.cc). Unused filters
  // are unloaded to make room first, as for every other reservation.
  return WithReclaim(*this, [&] {
    return commands::NewBudgetedStaging(db_->options().memory_budget, bytes,
                                        what);
  });
}

}  // namespace shardfilter::server
