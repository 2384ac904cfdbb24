// Database D4: filters load on first use. DatabaseImpl::Find (the lookup
// every named call makes) loads a filter not loaded yet; LoadFilter
// recovers it from the store; CheckNameFree is the one check Create and
// Import make that a name is free.
#include <string>
#include <vector>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/recovery.h"
#include "shardfilter/engine/tiered_filter.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::internal {

using persistence::DescribeName;

Status CheckFilterName(std::string_view name) {
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

Status CheckUserFilterName(std::string_view name) {
  SF_RETURN_IF_ERROR(CheckFilterName(name));
  if (name.find(TieredFilter::kLevelMark) != std::string_view::npos) {
    return Status::InvalidArgument(
        "filter names containing the bytes \"\\0level/\" are reserved for "
        "the levels of tiered filters");
  }
  return Status::OK();
}

Status UnavailableError(std::string_view name, const Status& why) {
  return Status(why.code(), DescribeName(name) +
                                " is unavailable (its stored data failed "
                                "its checks at open): " +
                                why.message());
}

Result<OpenFilter> DatabaseImpl::Find(std::string_view name) const {
  SF_RETURN_IF_ERROR(CheckFilterName(name));
  {
    internal::MutexLock lock(mu);
    if (closed) return Status::NotSupported("the database is closed");
    if (auto it = filters.find(name); it != filters.end()) return it->second;
    if (auto bad = unavailable.find(name); bad != unavailable.end()) {
      return UnavailableError(name, bad->second);
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
      return UnavailableError(name, bad->second);
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
    return UnavailableError(name, why);
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
  // Writes acknowledged under durability sync lost with the write-ahead
  // log make the filter unavailable (persistence/sync_marker.h).
  SF_ASSIGN_OR_RETURN(
      std::optional<persistence::WalLoss> lost,
      store->LostSyncedWrites(persistence::SyncedKind::kFilter, name));
  if (lost) {
    return persistence::WalLossError(persistence::SyncedKind::kFilter, name,
                                     *lost);
  }
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
  // Its debris was collected by the writable Open (database.cc).
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

}  // namespace shardfilter::internal

namespace shardfilter {

using internal::OpenFilter;
using internal::ShardedFilterAccess;
using persistence::DescribeName;

// D4 in reverse. The filter is checkpointed first, outside the catalog
// mutex (the checkpoint writes and syncs); then, under load_mu and mu, it
// is unloaded only if the catalog and this call are its only owners (so
// no mutation can be in flight or start: every other route to it goes
// through Find, which needs mu) and every shard is clean (its state is the
// committed descriptor's). It is destroyed before load_mu is released, so
// its journal's files are closed before a later load of the name opens
// them.
Result<uint64_t> Database::Unload(std::string_view name) {
  SF_RETURN_IF_ERROR(internal::CheckFilterName(name));
  internal::DatabaseImpl& d = *impl_;
  OpenFilter of;
  {
    internal::MutexLock lock(d.mu);
    if (d.closed) return Status::NotSupported("the database is closed");
    auto it = d.filters.find(name);
    if (it == d.filters.end()) {
      return Status::NotFound(DescribeName(name) + " is not loaded");
    }
    of = it->second;
  }
  if (!d.options.read_only) {
    CheckpointStats stats;
    SF_RETURN_IF_ERROR(d.CheckpointFilters({of}, &stats));
  }
  internal::MutexLock load(d.load_mu);  // lock order 0 (D4)
  std::shared_ptr<ShardedFilter> doomed;
  uint64_t freed = 0;
  {
    internal::MutexLock lock(d.mu);  // lock order 1
    if (d.closed) return Status::NotSupported("the database is closed");
    auto it = d.filters.find(name);
    if (it == d.filters.end() || it->second.filter != of.filter) {
      return Status::Busy(DescribeName(name) +
                          " was dropped or replaced meanwhile");
    }
    // Owners: the catalog's entry and `of`.
    if (of.filter.use_count() != 2) {
      return Status::Busy(DescribeName(name) + " is in use");
    }
    {
      internal::MutexLock state_lock(of.state->mu);  // lock order 2
      if (of.state->dropped || of.state->migrating) {
        return Status::Busy(DescribeName(name) + " is being migrated");
      }
      auto locks = ShardedFilterAccess::LockAll(*of.filter);  // order 3
      if (!d.options.read_only) {
        for (uint32_t i = 0; i < of.filter->shard_count(); ++i) {
          if (ShardedFilterAccess::shard(*of.filter, i)
                  .dirty.load(std::memory_order_relaxed)) {
            return Status::Busy(DescribeName(name) +
                                " changed since its checkpoint");
          }
        }
      }
      ShardedFilterAccess::MarkDetached(*of.filter, internal::kClosed);
      d.unloaded.emplace(std::string(name), of.state->committed);
    }
    d.filters.erase(it);
    freed = ShardedFilterAccess::account(*of.filter)->charged();
    doomed = std::move(of.filter);
  }
  doomed.reset();  // the last owner: tables and journal files go now
  return freed;
}

Result<uint64_t> Database::FlushStoreMemory(uint64_t min_bytes) {
  internal::DatabaseImpl& d = *impl_;
  uint64_t held = 0;
  {
    internal::MutexLock lock(d.mu);
    if (d.closed) return Status::NotSupported("the database is closed");
    held = d.store->ApproximateMemoryUsage().memtables;
  }
  if (held < min_bytes || d.options.read_only) return 0;
  // Close waits for load_mu before destroying the Store; a flush may take
  // a while, so it holds that, not the catalog mutex.
  internal::MutexLock load(d.load_mu);
  {
    internal::MutexLock lock(d.mu);
    if (d.closed) return Status::NotSupported("the database is closed");
  }
  SF_RETURN_IF_ERROR(d.store->FlushMemtables());
  const uint64_t left = d.store->ApproximateMemoryUsage().memtables;
  return held > left ? held - left : 0;
}

uint64_t Database::StoreMemoryBytes() const {
  // Close marks `closed` under mu before it destroys the Store.
  internal::MutexLock lock(impl_->mu);
  if (impl_->closed || impl_->store == nullptr) return 0;
  return impl_->store->ApproximateMemoryUsage().total();
}

}  // namespace shardfilter
