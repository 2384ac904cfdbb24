#include "shardfilter/engine/database.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_factory.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/persistence/dedup_journal.h"
#include "shardfilter/persistence/dedup_log.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter {

using internal::DatabaseImpl;
using internal::FilterState;
using internal::OpenFilter;
using internal::ShardedFilterAccess;
using persistence::DescribeName;

namespace {

Status CheckName(std::string_view name) {
  if (name.empty()) {
    return Status::InvalidArgument("filter name is empty (1.." +
                                   std::to_string(kMaxFilterNameBytes) +
                                   " bytes)");
  }
  if (name.size() > kMaxFilterNameBytes) {
    return Status::InvalidArgument(
        "filter name has " + std::to_string(name.size()) +
        " bytes; the limit is " + std::to_string(kMaxFilterNameBytes));
  }
  return Status::OK();
}

// The error of a filter that did not load (D3): its own code and reason.
Status Unavailable(std::string_view name, const Status& why) {
  return Status(why.code(), DescribeName(name) +
                                " is unavailable (its stored data failed "
                                "its checks at open): " +
                                why.message());
}

}  // namespace

namespace internal {

Result<OpenFilter> DatabaseImpl::Find(std::string_view name) const {
  SF_RETURN_IF_ERROR(CheckName(name));
  {
    internal::MutexLock lock(mu);
    if (closed) return Status::NotSupported("the database is closed");
    if (auto it = filters.find(name); it != filters.end()) return it->second;
    if (auto bad = unavailable.find(name); bad != unavailable.end()) {
      return Unavailable(name, bad->second);
    }
    if (unloaded.find(name) == unloaded.end()) {
      return Status::NotFound(DescribeName(name) + " does not exist");
    }
  }
  // D4: load it. Another thread may have loaded, dropped or failed it
  // while we waited for load_mu: look again under it.
  internal::MutexLock load(load_mu);
  persistence::FilterDescriptor desc;
  {
    internal::MutexLock lock(mu);
    if (closed) return Status::NotSupported("the database is closed");
    if (auto it = filters.find(name); it != filters.end()) return it->second;
    if (auto bad = unavailable.find(name); bad != unavailable.end()) {
      return Unavailable(name, bad->second);
    }
    auto u = unloaded.find(name);
    if (u == unloaded.end()) {
      return Status::NotFound(DescribeName(name) + " does not exist");
    }
    desc = u->second;
  }
  auto loaded = LoadFilter(std::string(name), std::move(desc));
  internal::MutexLock lock(mu);
  if (!loaded.ok()) {
    // D3: damage makes this filter unavailable; anything else (I/O, the
    // memory budget) leaves it unloaded for a later try.
    const Status& why = loaded.status();
    if (!why.IsCorruption() && !why.IsNotSupported()) return why;
    unloaded.erase(unloaded.find(name));
    unavailable.emplace(std::string(name), why);
    return Unavailable(name, why);
  }
  unloaded.erase(unloaded.find(name));
  filters.emplace(std::string(name), *loaded);
  return *std::move(loaded);
}

Status DatabaseImpl::CheckNameFree(std::string_view name) const {
  if (filters.count(name) != 0 || unloaded.count(name) != 0) {
    return Status::AlreadyExists(DescribeName(name) + " already exists");
  }
  if (auto bad = unavailable.find(name); bad != unavailable.end()) {
    return Status::AlreadyExists(
        DescribeName(name) + " already exists but is damaged (" +
        bad->second.message() + "); drop it first to replace it");
  }
  return Status::OK();
}

Result<OpenFilter> DatabaseImpl::LoadFilter(
    const std::string& name, persistence::FilterDescriptor desc) const {
  uint64_t replayed = 0, skipped = 0;
  std::vector<uint64_t> stale;
  SF_ASSIGN_OR_RETURN(
      std::unique_ptr<ShardedFilter> f,
      internal::RecoverFilter(
          *store, name, desc, &replayed, &skipped, NewAccount(),
          options.read_only && options.report_journal_damage, &stale));
  for (uint32_t i = 0; i < stale.size() && !options.read_only; ++i) {
    if (stale[i] == ~uint64_t{0}) continue;
    SF_RETURN_IF_ERROR(store->DeleteJournalAfter(name, i, stale[i]));
  }
  if (!options.read_only) {
    SF_RETURN_IF_ERROR(store->CollectGarbage(name, desc));
  }
  // Counters are statistics: the const load still counts what it replayed.
  auto& self = const_cast<DatabaseImpl&>(*this);
  self.replayed_ops += replayed;
  self.replay_skipped_removes += skipped;
  ShardedFilterAccess::Attach(*f, journal.get(), options.read_only,
                              options.durability_override);
  if (!options.read_only) {
    internal::FilterLog* log = ShardedFilterAccess::log(*f);
    for (uint32_t i = 0; i < f->shard_count(); ++i) {
      log->Retire(i, desc.shards[i].sequence);  // dead ones
    }
  }
  auto state = std::make_shared<FilterState>(std::move(desc));
  return OpenFilter{std::shared_ptr<ShardedFilter>(std::move(f)),
                    std::move(state)};
}

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
  impl->journal = std::make_unique<internal::JournalSink>(
      impl->store.get(), options.journal_in_rocksdb);
  std::vector<std::pair<std::string, Status>> bad;
  SF_ASSIGN_OR_RETURN(auto catalog, impl->store->LoadCatalog(&bad));
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
    for (auto& [name, ms] : expiries) impl->expiry.emplace(name, ms);
    impl->expiry_count.store(impl->expiry.size(), std::memory_order_relaxed);
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
    if (named.ok()) internal::RemoveStaleJournals(impl->store->path(), *named);
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
  SF_RETURN_IF_ERROR(CheckName(name));
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
  SF_RETURN_IF_ERROR(d.store->CreateFilter(name, desc));
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
    out.emplace_back(name, shardfilter::Unavailable(name, why));
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
  SF_RETURN_IF_ERROR(CheckName(name));
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

Status Database::SetExpiry(std::string_view name,
                           std::optional<int64_t> unix_ms) {
  SF_RETURN_IF_ERROR(CheckName(name));
  DatabaseImpl& d = *impl_;
  if (d.options.read_only) {
    return Status::NotSupported("expire " + DescribeName(name) +
                                ": the store is open read-only");
  }
  internal::MutexLock lock(d.mu);
  if (d.closed) return Status::NotSupported("the database is closed");
  if (d.filters.count(name) == 0 && d.unloaded.count(name) == 0 &&
      d.unavailable.count(name) == 0) {
    return Status::NotFound(DescribeName(name) + " does not exist");
  }
  if (unix_ms.has_value()) {
    SF_RETURN_IF_ERROR(d.store->PutFilterExpiry(name, *unix_ms));
    d.expiry.insert_or_assign(std::string(name), *unix_ms);
  } else {
    auto it = d.expiry.find(name);
    if (it == d.expiry.end()) return Status::OK();
    SF_RETURN_IF_ERROR(d.store->DeleteFilterExpiry(name));
    d.expiry.erase(it);
  }
  d.expiry_count.store(d.expiry.size(), std::memory_order_relaxed);
  return Status::OK();
}

std::optional<int64_t> Database::Expiry(std::string_view name) const {
  internal::MutexLock lock(impl_->mu);
  auto it = impl_->expiry.find(name);
  if (it == impl_->expiry.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, int64_t>> Database::Expiries() const {
  internal::MutexLock lock(impl_->mu);
  return {impl_->expiry.begin(), impl_->expiry.end()};
}

uint64_t Database::ExpiryCount() const {
  return impl_->expiry_count.load(std::memory_order_relaxed);
}

Result<CheckpointStats> Database::Checkpoint(std::string_view name) {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  CheckpointStats stats;
  SF_RETURN_IF_ERROR(impl_->CheckpointFilters({of}, &stats));
  return stats;
}

Result<CheckpointStats> Database::CheckpointAll() {
  std::vector<std::string> pending;
  {
    internal::MutexLock lock(impl_->mu);
    if (impl_->closed) return Status::NotSupported("the database is closed");
    for (const auto& [name, d] : impl_->unloaded) pending.push_back(name);
  }
  // Every filter, loaded or not (D4): one not loaded yet may hold journal
  // entries past its checkpoint. A damaged one is skipped (unavailable); a
  // load that fails otherwise is reported after the others are written.
  Status load_error;
  if (!impl_->options.read_only) {
    for (const std::string& name : pending) {
      auto of = impl_->Find(name);
      if (!of.ok() && !of.status().IsCorruption() &&
          !of.status().IsNotSupported() && load_error.ok()) {
        load_error = of.status();
      }
    }
  }
  std::vector<OpenFilter> all;
  {
    internal::MutexLock lock(impl_->mu);
    if (impl_->closed) return Status::NotSupported("the database is closed");
    for (const auto& [name, of] : impl_->filters) all.push_back(of);
  }
  CheckpointStats stats;
  SF_RETURN_IF_ERROR(impl_->CheckpointFilters(all, &stats));
  SF_RETURN_IF_ERROR(load_error);
  return stats;
}

Status Database::Compact() {
  if (impl_->options.read_only) {
    return Status::NotSupported("compact: the store is open read-only");
  }
  {
    internal::MutexLock lock(impl_->mu);
    if (impl_->closed) return Status::NotSupported("the database is closed");
  }
  // Close waits for nothing here: a caller must not Close concurrently
  // (as with every other call on this Database).
  return impl_->store->Compact();
}

Result<VerifyReport> Database::Verify() const {
  {
    internal::MutexLock lock(impl_->mu);
    if (impl_->closed) return Status::NotSupported("the database is closed");
  }
  persistence::StoreVerifyReport r;
  SF_RETURN_IF_ERROR(impl_->store->Verify(&r));
  VerifyReport out;
  out.filters = r.filters;
  out.chunks = r.chunks;
  out.shard_blobs = r.shard_blobs;
  out.journal_entries = r.journal_entries;
  out.retained_hashes = r.retained_hashes;
  out.bytes = r.bytes;
  out.orphan_values = r.orphan_values;
  out.problems = std::move(r.problems);
  // The filters' memory-mapped journals (engine/internal/filter_log.h).
  SF_ASSIGN_OR_RETURN(auto catalog, impl_->store->LoadCatalog());
  for (const auto& entry : catalog) {
    SF_RETURN_IF_ERROR(
        internal::ScanFilterJournal(*impl_->store, entry.name, entry.descriptor,
                                    &out.journal_entries, &out.problems));
  }
  // The dedup journals live beside RocksDB, not in it.
  auto table = impl_->store->Dedup(false);
  if (!table.ok()) return out;  // no dedup families: no sets
  auto sets = (*table)->ListSets();
  if (!sets.ok()) {
    out.problems.push_back(sets.status().ToString());
    return out;
  }
  for (const std::string& set : *sets) {
    const std::string path =
        persistence::DedupLogPath(impl_->store->path(), set);
    auto log = persistence::DedupLog::OpenExisting(path, set);
    if (log.status().IsNotFound()) {
      auto marked = (*table)->HasJournalMarker(set);
      if (!marked.ok()) {
        out.problems.push_back(marked.status().ToString());
      } else if (*marked) {
        out.problems.push_back(
            persistence::DedupJournal::MissingJournal(path, set).ToString());
      }
      continue;
    }
    std::vector<persistence::DedupLogRecord> records;
    Status s = log.ok() ? (*log)->ReadAll(&records) : log.status();
    if (!s.ok()) {
      out.problems.push_back(s.ToString());
      continue;
    }
    out.dedup_journal_records += records.size();
  }
  return out;
}

bool Database::read_only() const { return impl_->options.read_only; }

const DatabaseOptions& Database::options() const { return impl_->options; }

DatabaseCounters Database::counters() const {
  const DatabaseImpl& d = *impl_;
  DatabaseCounters c;
  c.checkpoints = d.checkpoints.load(std::memory_order_relaxed);
  c.shards_written = d.shards_written.load(std::memory_order_relaxed);
  c.bytes_written = d.bytes_written.load(std::memory_order_relaxed);
  c.journal_writes = d.journal ? d.journal->writes() : 0;
  c.journal_ops = d.journal ? d.journal->ops() : 0;
  c.replayed_ops = d.replayed_ops.load(std::memory_order_relaxed);
  c.replay_skipped_removes =
      d.replay_skipped_removes.load(std::memory_order_relaxed);
  c.background_errors = d.background_errors.load(std::memory_order_relaxed);
  return c;
}

Status Database::background_status() const {
  std::lock_guard lock(impl_->bg_mu);
  return impl_->bg_status;
}

}  // namespace shardfilter
