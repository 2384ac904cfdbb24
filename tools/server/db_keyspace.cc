#include "tools/server/db_keyspace.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <unordered_map>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/migration.h"
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

// One Database filter as the command layer sees it; holds the handle so the
// filter outlives the command.
class DbFilter final : public commands::ShardedFilterHandle {
 public:
  explicit DbFilter(std::shared_ptr<ShardedFilter> f)
      : ShardedFilterHandle(f.get()), f_(std::move(f)) {}

 private:
  std::shared_ptr<ShardedFilter> f_;
};

}  // namespace

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
struct HandleCache {
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
  uint64_t owner = 0;
  uint64_t generation = 0;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> handles;
};
constexpr size_t kMaxCachedHandles = 4096;

}  // namespace

DbKeyspace::DbKeyspace(Database* db, const DbKeyspaceOptions& options)
    : db_(db),
      options_(options),
      last_checkpoint_unix_(NowUnix()),
      instance_(next_instance.fetch_add(1)) {}

void DbKeyspace::Invalidate() {
  generation_.fetch_add(1, std::memory_order_release);
  TrimThreadCache();
  if (drop_listener_) drop_listener_();
}

static HandleCache& ThreadCache() {
  thread_local HandleCache cache;
  return cache;
}

void DbKeyspace::TrimThreadCache() {
  HandleCache& cache = ThreadCache();
  if (cache.owner == instance_ &&
      cache.generation != generation_.load(std::memory_order_acquire)) {
    cache.handles.clear();
  }
}

Result<std::shared_ptr<commands::FilterHandle>> DbKeyspace::Lookup(
    std::string_view key) {
  HandleCache& cache = ThreadCache();
  const uint64_t generation = generation_.load(std::memory_order_acquire);
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
  if (ExpireIfDue(key)) return Status::NotFound("no such key (expired)");
  auto f = db_->Get(key);
  if (!f.ok()) return f.status();
  std::shared_ptr<commands::FilterHandle> h =
      std::make_shared<DbFilter>(std::move(f).value());
  std::optional<int64_t> deadline;
  if (db_->ExpiryCount() != 0) deadline = db_->Expiry(key);
  cache.handles.emplace(std::string(key), HandleCache::Entry{h, deadline});
  return h;
}

Result<std::shared_ptr<commands::FilterHandle>> DbKeyspace::Create(
    std::string_view key, const commands::CreateParams& params) {
  (void)ExpireIfDue(key);  // an expired key is free to create
  auto f = db_->Create(key, ToFilterSpec(params, options_));
  if (!f.ok()) {
    const Status& s = f.status();
    // The engine reports a table over max_bytes as InvalidArgument naming
    // the budget: to a client that is the memory limit.
    if (s.IsInvalidArgument() &&
        (s.message().find("max_bytes") != std::string::npos ||
         s.message().find("budget") != std::string::npos ||
         s.message().find("memory limit") != std::string::npos)) {
      return Status::ResourceExhausted(s.message());
    }
    return s;
  }
  return std::shared_ptr<commands::FilterHandle>(
      std::make_shared<DbFilter>(std::move(f).value()));
}

Result<bool> DbKeyspace::Delete(std::string_view key) {
  const Status s = db_->Drop(key);
  Invalidate();
  if (s.ok()) return true;
  if (s.IsNotFound()) return false;
  return s;
}

std::vector<std::string> DbKeyspace::Keys() {
  (void)ExpireDue();
  return db_->List();
}

uint64_t DbKeyspace::Size() {
  (void)ExpireDue();
  return db_->List().size();
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
  if (ExpireIfDue(key)) return Status::NotFound("no such key");
  SF_RETURN_IF_ERROR(db_->SetExpiry(key, unix_ms));
  Invalidate();  // every thread's cached deadline of it is stale
  // A deadline already past: the key goes now (Redis: EXPIRE with a
  // non-positive time deletes).
  (void)ExpireIfDue(key);
  return Status::OK();
}

Result<std::optional<int64_t>> DbKeyspace::GetExpiry(std::string_view key) {
  SF_RETURN_IF_ERROR(Lookup(key).status());  // NotFound; expires a due key
  return db_->Expiry(key);
}

Status DbKeyspace::Flush() {
  for (const std::string& name : db_->List()) {
    const Status s = db_->Drop(name);
    Invalidate();
    if (!s.ok() && !s.IsNotFound()) return s;
  }
  return Status::OK();
}

Status DbKeyspace::Checkpoint() {
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
  return ImportFilter(*db_, key, bytes);
}

Status DbKeyspace::StartMigration(std::string_view key,
                                  const commands::CreateParams& target) {
  return db_->StartMigration(key, ToFilterSpec(target, options_));
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
    if (f.ok()) total += (*f)->Stats().total.bytes;
  }
  return total;
}

}  // namespace shardfilter::server
