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
#include "shardfilter/persistence/internal/values.h"

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
  // log make the filter unavailable (persistence/internal/sync_marker.h).
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
