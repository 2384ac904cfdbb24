#include "tools/server/db_keyspace.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <unordered_map>

#include "shardfilter/engine/export.h"

namespace shardfilter::server {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One Database filter as the command layer sees it.
class DbFilter final : public commands::FilterHandle {
 public:
  explicit DbFilter(std::shared_ptr<ShardedFilter> f) : f_(std::move(f)) {}

  FilterType type() const override { return f_->type(); }
  Result<bool> Add(std::string_view item) override {
    SF_ASSIGN_OR_RETURN(AddOutcome o, f_->Insert(item));
    return o == AddOutcome::kAdded;
  }
  void AddMany(std::span<const std::string_view> items,
               std::vector<Status>* per_item,
               std::vector<uint8_t>* added) override {
    per_item->clear();
    std::vector<AddOutcome> outcomes;
    (void)f_->AddKeys(items, per_item, &outcomes);  // per_item: every status
    added->assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      (*added)[i] = (*per_item)[i].ok() && outcomes[i] == AddOutcome::kAdded;
    }
  }
  bool MayContain(std::string_view item) const override {
    return f_->MayContain(item);
  }
  void MayContainMany(std::span<const std::string_view> items,
                      std::span<uint8_t> out) const override {
    f_->MayContainKeys(items, out);
  }
  uint32_t Count(std::string_view item) const override {
    return f_->Count(item);
  }
  Status Remove(std::string_view item) override { return f_->Remove(item); }

  commands::FilterSummary Summary() const override {
    const FilterSpec& spec = f_->spec();
    const ShardedStats stats = f_->Stats();
    commands::FilterSummary s;
    s.type = spec.type;
    s.capacity = stats.total.capacity;
    s.bytes = stats.total.bytes;
    s.items = stats.total.items;
    s.deletes = stats.total.deletes;
    s.links = 1;
    for (const ShardStats& sh : stats.shards)
      s.links = std::max(s.links, sh.links);
    s.scalable = spec.scalable;
    s.expansion = spec.expansion;
    s.bucket_size = spec.bucket_size != 0 ? spec.bucket_size : 4;
    s.max_iterations = spec.max_kicks;
    if (spec.type == FilterType::kCuckoo && s.bucket_size != 0) {
      s.buckets = stats.total.slots / s.bucket_size;
    }
    return s;
  }

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
  spec.shards = options.shards;
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
struct HandleCache {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  uint64_t owner = 0;
  uint64_t generation = 0;
  std::unordered_map<std::string, std::shared_ptr<commands::FilterHandle>, Hash,
                     std::equal_to<>>
      handles;
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
    return it->second;
  }
  auto f = db_->Get(key);
  if (!f.ok()) return f.status();
  std::shared_ptr<commands::FilterHandle> h =
      std::make_shared<DbFilter>(std::move(f).value());
  cache.handles.emplace(std::string(key), h);
  return h;
}

Result<std::shared_ptr<commands::FilterHandle>> DbKeyspace::Create(
    std::string_view key, const commands::CreateParams& params) {
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

std::vector<std::string> DbKeyspace::Keys() { return db_->List(); }

uint64_t DbKeyspace::Size() { return db_->List().size(); }

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

uint64_t DbKeyspace::FilterBytes() {
  uint64_t total = 0;
  for (const std::string& name : db_->List()) {
    auto f = db_->Get(name);
    if (f.ok()) total += (*f)->Stats().total.bytes;
  }
  return total;
}

}  // namespace shardfilter::server
