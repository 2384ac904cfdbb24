// Database: open and close, the catalog of filters (create, get, list,
// drop) and the background checkpointer. Loading on first use is in
// database_load.cc; checkpoints, compaction, verify, expiry and counters in
// database_admin.cc.
#include "shardfilter/engine/database.h"

#include <algorithm>
#include <chrono>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter {

using internal::CheckFilterName;
using internal::DatabaseImpl;
using internal::FilterState;
using internal::OpenFilter;
using internal::ShardedFilterAccess;
using persistence::DescribeName;

namespace internal {

Status DatabaseImpl::CheckpointFilters(const std::vector<OpenFilter>& which,
                                       CheckpointStats* stats) {
  if (options.read_only) {
    return Status::NotSupported("checkpoint: the store is open read-only");
  }
  Status first;
  for (const OpenFilter& of : which) {
    internal::MutexLock lock(of.state->mu);
    if (of.state->dropped || of.state->migrating) continue;
    Status s = CheckpointFilter(store.get(), *of.filter, of.state.get(),
                                options.chunk_bytes, stats);
    if (!s.ok() && first.ok()) first = s;
  }
  checkpoints.fetch_add(1, std::memory_order_relaxed);
  shards_written.fetch_add(stats->shards_written, std::memory_order_relaxed);
  bytes_written.fetch_add(stats->bytes_written, std::memory_order_relaxed);
  return first;
}

void DatabaseImpl::BackgroundLoop() {
  std::unique_lock lock(bg_mu);
  const auto interval =
      std::chrono::milliseconds(options.checkpoint_interval_ms);
  while (!bg_stop) {
    if (bg_cv.wait_for(lock, interval, [&] { return bg_stop; })) break;
    lock.unlock();
    std::vector<OpenFilter> all;
    {
      internal::MutexLock g(mu);
      for (const auto& [name, of] : filters) all.push_back(of);
    }
    CheckpointStats stats;
    Status s = CheckpointFilters(all, &stats);
    lock.lock();
    if (!s.ok()) {
      background_errors.fetch_add(1, std::memory_order_relaxed);
      bg_status = s;
    }
  }
}

}  // namespace internal

Database::Database(std::unique_ptr<DatabaseImpl> impl)
    : impl_(std::move(impl)) {}

Database::~Database() { Close().ok(); }

Result<std::unique_ptr<Database>> Database::Open(
    const DatabaseOptions& options) {
  if (options.chunk_bytes < 4096 || options.chunk_bytes > kMaxChunkBytes) {
    return Status::InvalidArgument("chunk_bytes " +
                                   std::to_string(options.chunk_bytes) +
                                   " is outside [4096, 4 MiB]");
  }
  auto impl = std::make_unique<DatabaseImpl>();
  impl->options = options;
  SF_ASSIGN_OR_RETURN(impl->store, persistence::Store::Open(
                                       {options.path, options.create_if_missing,
                                        options.read_only}));
  impl->journal = std::make_unique<internal::StoreJournalSink>(
      impl->store.get(), options.journal_in_rocksdb,
      options.mapped_journal_min_bytes);
  std::vector<std::pair<std::string, Status>> bad;
  SF_ASSIGN_OR_RETURN(auto catalog, impl->store->LoadCatalog(&bad));
  if (!options.read_only) {
    // What an interrupted checkpoint, migration or import left is
    // collected now, by seeks only (persistence/store_garbage.cc G1), so
    // that no filter has to be loaded for it. Best effort: debris is
    // harmless and the next open tries again; a failure is counted as a
    // background error (background_status()) rather than refusing a store
    // that is otherwise readable (a full disk, say).
    std::vector<std::string> keep;
    for (const auto& [name, why] : bad) keep.push_back(name);
    Status s = impl->store->CollectStoreGarbage(catalog, keep);
    if (!s.ok()) {
      impl->background_errors.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(impl->bg_mu);
      impl->bg_status = s;
    }
  }
  {
    internal::MutexLock lock(impl->mu);  // not shared yet: for the analysis
    for (auto& [name, why] : bad) impl->unavailable.emplace(name, why);
  }
  // Deadlines nobody can read are dropped from memory, not from the store
  // (Verify lists them): such a filter simply does not expire.
  SF_ASSIGN_OR_RETURN(auto expiries, impl->store->ListFilterExpiries());
  {
    // D4: filters load on first use; Open recovers none of them.
    internal::MutexLock lock(impl->mu);  // not shared yet: for the analysis
    for (const auto& [name, ms] : expiries) impl->PutExpiry(name, ms);
    for (auto& entry : catalog) {
      impl->unloaded.emplace(std::move(entry.name),
                             std::move(entry.descriptor));
    }
  }
  if (!options.read_only) {
    // The epoch directories to keep are every epoch the store names, not
    // only the loaded filters': an unavailable or unloaded filter's
    // segments are its data. If one epoch key does not decode, nothing is
    // removed.
    auto named = impl->store->ListFilterJournalEpochs();
    if (named.ok()) {
      persistence::RemoveStaleEpochs(*impl->store->log_env(),
                                     impl->store->path(), *named);
    }
  }
  if (options.checkpoint_interval_ms > 0 && !options.read_only) {
    DatabaseImpl* raw = impl.get();
    impl->background = std::thread([raw] { raw->BackgroundLoop(); });
  }
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

Status Database::Close() {
  if (!impl_) return Status::OK();
  DatabaseImpl& d = *impl_;
  {
    internal::MutexLock lock(d.mu);
    if (d.closed) return Status::OK();
  }
  d.StopMigrations();  // before the final checkpoint: they roll back
  if (d.background.joinable()) {
    {
      std::lock_guard lock(d.bg_mu);
      d.bg_stop = true;
    }
    d.bg_cv.notify_all();
    d.background.join();
  }
  Status result;
  std::vector<OpenFilter> all;
  {
    internal::MutexLock lock(d.mu);
    for (const auto& [name, of] : d.filters) all.push_back(of);
  }
  if (!d.options.read_only && d.options.checkpoint_on_close) {
    CheckpointStats stats;
    result = d.CheckpointFilters(all, &stats);
  }
  {
    internal::MutexLock load(d.load_mu);  // D4: no load reads the Store
    internal::MutexLock lock(d.mu);
    d.closed = true;
    for (const auto& [name, of] : d.filters) {
      ShardedFilterAccess::Detach(*of.filter, internal::kClosed);  // D2
    }
    d.filters.clear();
    d.unloaded.clear();
  }
  d.store.reset();
  return result;
}

Result<std::shared_ptr<ShardedFilter>> Database::Create(
    std::string_view name, const FilterSpec& spec) {
  SF_RETURN_IF_ERROR(internal::CheckUserFilterName(name));
  return CreateNamed(name, spec);
}

Result<std::shared_ptr<ShardedFilter>> Database::CreateNamed(
    std::string_view name, const FilterSpec& spec) {
  SF_RETURN_IF_ERROR(CheckFilterName(name));
  DatabaseImpl& d = *impl_;
  if (d.options.read_only) {
    return Status::NotSupported("create " + DescribeName(name) +
                                ": the store is open read-only");
  }
  SF_ASSIGN_OR_RETURN(
      FilterSpec resolved,
      internal::ResolveSpec(spec, d.options.default_durability));
  internal::MutexLock lock(d.mu);
  if (d.closed) return Status::NotSupported("the database is closed");
  SF_RETURN_IF_ERROR(d.CheckNameFree(name));
  auto account = d.NewAccount();
  SF_ASSIGN_OR_RETURN(
      auto shards, internal::MakeShardFilters(
                       resolved, *account, "creating " + DescribeName(name)));
  persistence::FilterDescriptor desc = internal::DescriptorFromSpec(resolved);
  // Synced only under durability sync: the others promise nothing past a
  // process crash that RocksDB's log, written in order, does not keep. No
  // later write of this filter needs it synced first: its journal entries
  // (RocksDB's journal family) follow it in the same log, and its mapped
  // journal's epoch key is a synced write, which syncs the log up to it.
  const Durability durability =
      d.options.durability_override.value_or(*resolved.durability);
  SF_RETURN_IF_ERROR(
      d.store->CreateFilter(name, desc, durability == Durability::kSync));
  auto state = std::make_shared<FilterState>(std::move(desc));
  std::shared_ptr<ShardedFilter> f = ShardedFilterAccess::Make(
      std::string(name), resolved, std::move(shards), std::move(account));
  ShardedFilterAccess::Attach(*f, d.journal.get(), false,
                              d.options.durability_override);
  d.filters.emplace(std::string(name), OpenFilter{f, std::move(state)});
  return f;
}

Result<std::shared_ptr<ShardedFilter>> Database::Get(
    std::string_view name) const {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  return of.filter;
}

Result<std::shared_ptr<ShardedFilter>> Database::Get(std::string_view name,
                                                     FilterType type) const {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  if (of.filter->type() != type) {
    return Status::WrongType(
        DescribeName(name) + " is a " + FilterTypeName(of.filter->type()) +
        " filter, not a " + FilterTypeName(type) + " filter");
  }
  return of.filter;
}

std::vector<std::string> Database::List() const {
  internal::MutexLock lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [name, of] : impl_->filters) out.push_back(name);
  for (const auto& [name, d] : impl_->unloaded) out.push_back(name);
  for (const auto& [name, why] : impl_->unavailable) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

size_t Database::LoadedCount() const {
  internal::MutexLock lock(impl_->mu);
  return impl_->filters.size();
}

std::vector<std::string> Database::Loaded() const {
  internal::MutexLock lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [name, of] : impl_->filters) out.push_back(name);
  return out;
}

std::vector<std::pair<std::string, Status>> Database::Unavailable() const {
  std::vector<std::string> pending;
  {
    internal::MutexLock lock(impl_->mu);
    for (const auto& [name, d] : impl_->unloaded) pending.push_back(name);
  }
  // Every filter is checked: loading one that is damaged makes it
  // unavailable (D3, D4).
  for (const std::string& name : pending) (void)impl_->Find(name);
  internal::MutexLock lock(impl_->mu);
  std::vector<std::pair<std::string, Status>> out;
  for (const auto& [name, why] : impl_->unavailable) {
    out.emplace_back(name, internal::UnavailableError(name, why));
  }
  return out;
}

Result<FilterInfo> Database::Info(std::string_view name) const {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  FilterInfo info;
  info.name = std::string(name);
  info.spec = of.filter->spec();
  info.stats = of.filter->Stats();
  for (const ShardStats& s : info.stats.shards) {
    info.checkpoint_bytes += s.checkpoint_bytes;
  }
  return info;
}

Status Database::Drop(std::string_view name) {
  SF_RETURN_IF_ERROR(internal::CheckUserFilterName(name));
  return DropNamed(name);
}

Status Database::DropNamed(std::string_view name) {
  SF_RETURN_IF_ERROR(CheckFilterName(name));
  DatabaseImpl& d = *impl_;
  if (d.options.read_only) {
    return Status::NotSupported("drop " + DescribeName(name) +
                                ": the store is open read-only");
  }
  internal::MutexLock load(d.load_mu);  // lock order 0 (D4)
  internal::MutexLock lock(d.mu);       // lock order 1
  if (d.closed) return Status::NotSupported("the database is closed");
  auto it = d.filters.find(name);
  if (it == d.filters.end()) {
    if (auto u = d.unloaded.find(name); u != d.unloaded.end()) {
      SF_RETURN_IF_ERROR(d.store->DropFilter(name));  // never loaded: D4
      d.unloaded.erase(u);
      d.ForgetExpiry(name);
      return Status::OK();
    }
    auto bad = d.unavailable.find(name);
    if (bad == d.unavailable.end()) {
      return Status::NotFound(DescribeName(name) + " does not exist");
    }
    SF_RETURN_IF_ERROR(d.store->DropFilter(name));  // D3: the user's choice
    d.unavailable.erase(bad);
    d.ForgetExpiry(name);
    return Status::OK();
  }
  OpenFilter of = it->second;
  if (auto m = d.migrations.find(name); m != d.migrations.end()) {
    m->second->abort.store(true);  // it rolls back at its next step
  }
  internal::MutexLock state_lock(of.state->mu);  // lock order 2
  // Every shard lock exclusive (order 3, with the S5 writer-preference
  // guard so that steady writers cannot starve it) *before* the commit:
  // no mutation runs between the delete and the detach, so none is
  // acknowledged on a filter that is gone, and none leaves journal entries
  // behind it. On a failed commit the locks drop and the filter serves on.
  auto locks = ShardedFilterAccess::LockAll(*of.filter);
  SF_RETURN_IF_ERROR(d.store->DropFilter(name));
  d.ForgetExpiry(name);
  of.state->dropped = true;
  ShardedFilterAccess::MarkDetached(*of.filter, internal::kDropped);
  locks.clear();
  d.filters.erase(it);
  return Status::OK();
}

}  // namespace shardfilter
