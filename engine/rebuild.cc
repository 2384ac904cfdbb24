// Database's calls for offline rebuilds (`shardfilter migrate`): reading
// retained hashes, folding a copy, and installing a filter built outside the
// catalog in place of a live one (engine/database.h).
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter {

using internal::OpenFilter;
using internal::ShardedFilterAccess;
using persistence::DescribeName;

Status Database::ScanRetainedHashes(
    std::string_view name, std::optional<uint64_t> after,
    const std::function<Status(std::span<const std::pair<uint64_t, int64_t>>)>&
        fn) const {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  if (!of.filter->spec().retain_hashes) {
    return Status::InvalidArgument(DescribeName(name) +
                                   " does not retain its key hashes");
  }
  SF_ASSIGN_OR_RETURN(auto scan, impl_->store->ScanRetainedHashes(name, after));
  std::vector<std::pair<uint64_t, int64_t>> batch;
  bool more = true;
  while (more) {
    batch.clear();
    SF_RETURN_IF_ERROR(scan->Next(1 << 16, &batch, &more));
    if (!batch.empty()) SF_RETURN_IF_ERROR(fn(batch));
  }
  return Status::OK();
}

Result<std::unique_ptr<ShardedFilter>> Database::FoldedCopy(
    std::string_view name, uint32_t factor) const {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  ShardedFilter& src = *of.filter;
  const FilterSpec& from = src.spec();
  FilterSpec target = FoldedSpec(from, factor);
  target.retain_hashes = false;
  if (from.type != FilterType::kBloom || from.layout == BloomLayout::kClassic) {
    return Status::InvalidArgument(
        "fold " + DescribeName(name) +
        ": only blocked-layout Bloom filters fold (a cuckoo fingerprint's "
        "bucket does not determine its home bucket in a table of another "
        "size, a counting filter's counters cannot be split, a classic "
        "layout spreads a key's bits over the whole table)");
  }
  if (factor < 2 || (factor & (factor - 1)) != 0 ||
      from.capacity % factor != 0) {
    return Status::InvalidArgument("fold " + DescribeName(name) +
                                   ": the factor must be a power of two "
                                   ">= 2 that divides the capacity " +
                                   std::to_string(from.capacity));
  }
  auto account = impl_->NewAccount();
  auto locks = ShardedFilterAccess::LockAll(src);  // one instant's state
  if (ShardedFilterAccess::Forwarded(src)) {       // a switch raced with Find
    return Status::Busy("fold " + DescribeName(name) +
                        ": it was migrated meanwhile; try again");
  }
  // Invariant 8: every folded table against the budget before any fold.
  uint64_t need = 0;
  for (uint32_t i = 0; i < src.shard_count(); ++i) {
    const auto& link = static_cast<const BloomFilter&>(
        *ShardedFilterAccess::shard(src, i).link(0));
    need += link.num_bytes() / factor;  // not Stats(): a scan, under locks
  }
  SF_RETURN_IF_ERROR(account->Charge(need, "fold " + DescribeName(name)));
  auto out = ShardedFilterAccess::MakeEmpty("", target, std::move(account));
  for (uint32_t i = 0; i < src.shard_count(); ++i) {
    internal::Shard& sh = ShardedFilterAccess::shard(src, i);
    const std::string what =
        "fold " + DescribeName(name) + ": shard " + std::to_string(i);
    if (sh.links_visible() != 1) {
      return Status::InvalidArgument(
          what + " has grown to " + std::to_string(sh.links_visible()) +
          " links; only shards of one link fold (its links differ in size): "
          "rebuild it from retained hashes or from its keys");
    }
    const uint64_t fill = sh.Fill(0);  // S9: exact under LockAll
    const uint64_t capacity = internal::LinkCapacity(target, 0);
    if (fill > capacity) {
      return Status::InvalidArgument(what + " holds " + std::to_string(fill) +
                                     " items, more than the folded capacity " +
                                     std::to_string(capacity));
    }
    const auto& link = static_cast<const BloomFilter&>(*sh.link(0));
    auto folded = link.Fold(factor, capacity);
    if (!folded.ok()) return folded.status().WithContext(what);
    internal::LoadedChain chain;
    chain.links.push_back(std::move(*folded));
    chain.fill.push_back(fill);
    internal::InstallChain(ShardedFilterAccess::shard(*out, i),
                           std::move(chain));
  }
  return out;
}

Result<FilterVersion> Database::Version(std::string_view name) const {
  SF_ASSIGN_OR_RETURN(OpenFilter of, impl_->Find(name));
  // The map's filter: a switch replaces the map entry before it forwards,
  // so a forwarded filter here only means a switch raced with Find.
  auto locks = ShardedFilterAccess::LockAll(*of.filter);  // S2: none in flight
  if (ShardedFilterAccess::Forwarded(*of.filter)) {
    return Status::Busy("version of " + DescribeName(name) +
                        ": it was migrated meanwhile; ask again");
  }
  return FilterVersion{ShardedFilterAccess::id(*of.filter),
                       ShardedFilterAccess::Mutations(*of.filter)};
}

Status Database::ReplaceFilter(std::string_view name,
                               std::unique_ptr<ShardedFilter> built,
                               bool keep_retained_hashes,
                               const FilterVersion& derived_from) {
  internal::DatabaseImpl& d = *impl_;
  if (d.options.read_only) {
    return Status::NotSupported("replace " + DescribeName(name) +
                                ": the store is open read-only");
  }
  if (built == nullptr || !built->name().empty()) {
    return Status::InvalidArgument(
        "replace: the new filter must be a standalone one");
  }
  SF_ASSIGN_OR_RETURN(OpenFilter of, d.Find(name));
  const FilterSpec& from = of.filter->spec();
  if (keep_retained_hashes &&
      (!from.retain_hashes || built->seed() != from.seed)) {
    return Status::InvalidArgument(
        "replace " + DescribeName(name) +
        ": keeping retained hashes needs a filter that retains them and the "
        "same seed");
  }
  ShardedFilterAccess::SetRetainHashes(*built, keep_retained_hashes);
  internal::MutexLock catalog(d.mu);  // M5: catalog, state, shard locks
  auto it = d.filters.find(name);
  if (d.closed || it == d.filters.end() || it->second.filter != of.filter) {
    return Status::NotFound(DescribeName(name) + " does not exist");
  }
  if (auto m = d.migrations.find(name);
      m != d.migrations.end() && !m->second->Progress().finished()) {
    return Status::Busy("replace " + DescribeName(name) +
                        ": a migration of it is running");
  }
  internal::MutexLock state(of.state->mu);
  auto locks = ShardedFilterAccess::LockAll(*of.filter);
  // Writes acknowledged after `built` was derived would be lost: refuse.
  const FilterVersion now{ShardedFilterAccess::id(*of.filter),
                          ShardedFilterAccess::Mutations(*of.filter)};
  if (now != derived_from) {
    return Status::Aborted(
        "replace " + DescribeName(name) +
        (now.filter_id != derived_from.filter_id
             ? std::string(": it is not the filter the new one was derived "
                           "from (replaced or migrated since)")
             : ": " + std::to_string(now.mutations - derived_from.mutations) +
                   " mutations were acknowledged since the new filter was "
                   "derived and would be lost") +
        "; nothing was changed: derive it again");
  }
  return internal::InstallTarget(d, std::string(name), of, std::move(built));
}

}  // namespace shardfilter
