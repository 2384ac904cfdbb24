// DedupCore: single-key operations, rotation, expiry (purge) and the
// rebuild at open. The batch forms are in dedup_batch.cc, the public facade
// (Open, Stats, ...) in dedup_open.cc; invariants X1-X4 in
// engine/internal/dedup_core.h.
#include "shardfilter/engine/dedup_store.h"

#include <algorithm>
#include <chrono>

#include "shardfilter/engine/internal/dedup_core.h"

namespace shardfilter {

using internal::DedupCore;
using persistence::DedupBatch;
using persistence::DedupEntry;
using persistence::DedupOp;

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

Result<std::optional<DedupEntry>> DedupCore::Get(std::string_view key) {
  if (journal) return journal->Get(key);
  return table->Get(name, key);
}

Status DedupCore::MultiGet(std::span<const std::string_view> keys,
                           std::vector<std::optional<DedupEntry>>* out) {
  if (journal) return journal->MultiGet(keys, out);
  return table->MultiGet(name, keys, out);
}

Status DedupCore::Commit(const std::vector<DedupOp>& ops) {
  if (journal) return journal->Commit(ops);
  DedupBatch batch(*table);
  persistence::AddOps(name, ops, &batch);
  return table->Write(&batch, mode);
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
  // X5: what was logged before the rotation reaches RocksDB first.
  if (journal && !table->read_only()) SF_RETURN_IF_ERROR(journal->Flush());
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
    SF_RETURN_IF_ERROR(MultiGet(views, &found));
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
  if (journal) {  // a read-only store: what the log holds (X5)
    journal->ForEachPending(
        [&](std::string_view key, const std::optional<DedupEntry>& e) {
          if (e && Live(e->bucket, cur)) {
            ring->Add(ttl() ? e->bucket : 0, Hash(key));
            ++loaded;
          }
        });
  }
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
  counters.inserts.Add(1);
  std::optional<DedupEntry> old;
  if (ring->MayContain(h)) {
    counters.reads.Add(1);
    SF_ASSIGN_OR_RETURN(old, Get(key));
    if (old && Live(old->bucket, cur)) {
      counters.duplicates.Add(1);
      return false;
    }
    counters.false_positives.Add(1);
  } else {
    counters.avoided.Add(1);
  }
  std::vector<DedupOp> ops;
  if (old && ttl()) ops.push_back(Op(DedupOp::kDelete, key, *old, true));
  ops.push_back(
      Op(DedupOp::kPut, key, EntryFor(ttl() ? Now() : 0, cur), ttl()));
  SF_RETURN_IF_ERROR(Commit(ops));
  ring->Add(cur, h);  // X1: after the write
  counters.new_keys.Add(1);
  return true;
}

Result<bool> DedupCore::Contains(std::string_view key) {
  SF_RETURN_IF_ERROR(CheckUsable(false));
  SF_RETURN_IF_ERROR(CheckKey(key));
  SF_RETURN_IF_ERROR(MaybeRotate());
  const uint64_t h = Hash(key);
  std::shared_lock ring_lock(ring_mu);
  const uint64_t cur = current.load(std::memory_order_relaxed);
  counters.lookups.Add(1);
  if (!ring->MayContain(h)) {
    counters.avoided.Add(1);
    return false;
  }
  counters.reads.Add(1);
  SF_ASSIGN_OR_RETURN(std::optional<DedupEntry> e, Get(key));
  if (e && Live(e->bucket, cur)) return true;
  counters.false_positives.Add(1);
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
  counters.removes.Add(1);
  if (!ring->MayContain(h)) {
    counters.avoided.Add(1);
    return false;
  }
  counters.reads.Add(1);
  SF_ASSIGN_OR_RETURN(std::optional<DedupEntry> e, Get(key));
  if (!e || !Live(e->bucket, cur)) {  // never added: the filter is untouched
    counters.false_positives.Add(1);
    return false;
  }
  SF_RETURN_IF_ERROR(Commit({Op(DedupOp::kDelete, key, *e, ttl())}));
  ring->Remove(e->bucket, h);
  counters.removed.Add(1);
  return true;
}

}  // namespace internal
}  // namespace shardfilter
