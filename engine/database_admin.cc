// Database: checkpoints, compaction, verification, expiry deadlines and
// counters (the calls that maintain a store rather than name its filters).
#include <string>
#include <vector>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/recovery.h"
#include "shardfilter/persistence/dedup_journal.h"
#include "shardfilter/persistence/log/dedup_log.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter {

using internal::CheckFilterName;
using internal::DatabaseImpl;
using internal::OpenFilter;
using persistence::DescribeName;

Status Database::SetExpiry(std::string_view name,
                           std::optional<int64_t> unix_ms) {
  SF_RETURN_IF_ERROR(internal::CheckUserFilterName(name));
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
  // A deadline is as durable as the filter's adds (Create's descriptor
  // write says why an unsynced write is enough under journal and none).
  const bool sync = d.MetadataSyncs(name);
  if (unix_ms.has_value()) {
    SF_RETURN_IF_ERROR(d.store->PutFilterExpiry(name, *unix_ms, sync));
    d.PutExpiry(name, *unix_ms);
  } else {
    if (d.expiry.find(name) == d.expiry.end()) return Status::OK();
    SF_RETURN_IF_ERROR(d.store->DeleteFilterExpiry(name, sync));
    d.ForgetExpiry(name);
  }
  return Status::OK();
}

std::optional<int64_t> Database::Expiry(std::string_view name) const {
  internal::MutexLock lock(impl_->mu);
  auto it = impl_->expiry.find(name);
  if (it == impl_->expiry.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Database::DueExpiries(int64_t now_unix_ms,
                                               size_t max) const {
  internal::MutexLock lock(impl_->mu);
  std::vector<std::string> out;
  for (auto it = impl_->deadlines.begin();
       it != impl_->deadlines.end() && it->first <= now_unix_ms &&
       out.size() < max;
       ++it) {
    out.emplace_back(it->second);
  }
  return out;
}

std::optional<int64_t> Database::MeanExpiry() const {
  internal::MutexLock lock(impl_->mu);
  if (impl_->expiry.empty()) return std::nullopt;
  return static_cast<int64_t>(impl_->deadline_sum /
                              static_cast<__int128>(impl_->expiry.size()));
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

Status Database::Union(std::string_view dest,
                       std::span<const std::string_view> sources) {
  SF_ASSIGN_OR_RETURN(std::shared_ptr<ShardedFilter> into, Get(dest));
  std::vector<std::shared_ptr<ShardedFilter>> from;
  for (std::string_view name : sources) {
    SF_ASSIGN_OR_RETURN(std::shared_ptr<ShardedFilter> f, Get(name));
    SF_RETURN_IF_ERROR(into->CheckUnion(*f).WithContext(
        "union of " + DescribeName(name) + " into " + DescribeName(dest)));
    from.push_back(std::move(f));
  }
  for (const std::shared_ptr<ShardedFilter>& f : from) {
    SF_RETURN_IF_ERROR(into->UnionWith(*f));
  }
  return Checkpoint(dest).status();
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
      // NotFound: dropped since the list was taken.
      if (!of.ok() && !of.status().IsCorruption() &&
          !of.status().IsNotSupported() && !of.status().IsNotFound() &&
          load_error.ok()) {
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
  out.notes = std::move(r.notes);
  // The filters' memory-mapped journals (engine/internal/filter_log.h).
  // A descriptor that does not decode is already one of the problems:
  // the others' journals are still scanned.
  std::vector<std::pair<std::string, Status>> undecodable;
  SF_ASSIGN_OR_RETURN(auto catalog, impl_->store->LoadCatalog(&undecodable));
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
    auto log = persistence::DedupLog::OpenExisting(*impl_->store->log_env(),
                                                   path, set);
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
