// DedupStore batch forms: hash every key, ask the filters for all of them
// at once (prefetching kernels), MultiGet only the "maybe"s, and write the
// changes in one WriteBatch, all under the batch's stripes (taken in
// ascending order: X4 in engine/internal/dedup_core.h).
#include <string_view>
#include <unordered_set>

#include "shardfilter/engine/internal/dedup_core.h"

namespace shardfilter::internal {

using persistence::DedupEntry;
using persistence::DedupOp;

namespace {

// The keys' hashes and stripes; InvalidArgument for an oversized key.
Status Prepare(const DedupCore& core, std::span<const std::string_view> keys,
               std::vector<uint64_t>* hashes, std::vector<uint32_t>* stripes) {
  hashes->resize(keys.size());
  if (stripes != nullptr) stripes->resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    SF_RETURN_IF_ERROR(
        // 1-based, as the CLI numbers keys (the first key is #1).
        core.CheckKey(keys[i]).WithContext("key #" + std::to_string(i + 1)));
    (*hashes)[i] = core.Hash(keys[i]);
    if (stripes != nullptr) (*stripes)[i] = core.StripeOf((*hashes)[i]);
  }
  return Status::OK();
}

// Looks up keys[i] for every i with maybe[i] set; found[i] is the entry
// when it is stored and live. Counts reads and avoided reads.
Status Lookup(DedupCore& core, uint64_t cur,
              std::span<const std::string_view> keys,
              const std::vector<uint8_t>& maybe,
              std::vector<std::optional<DedupEntry>>* found,
              std::vector<std::optional<DedupEntry>>* stored) {
  std::vector<std::string_view> ask;
  std::vector<size_t> where;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (maybe[i]) {
      ask.push_back(keys[i]);
      where.push_back(i);
    }
  }
  found->assign(keys.size(), std::nullopt);
  if (stored != nullptr) stored->assign(keys.size(), std::nullopt);
  core.counters.avoided.Add(keys.size() - ask.size());
  if (ask.empty()) return Status::OK();
  core.counters.reads.Add(ask.size());
  std::vector<std::optional<DedupEntry>> got(ask.size());
  SF_RETURN_IF_ERROR(core.MultiGet(ask, &got));
  uint64_t fp = 0;
  for (size_t j = 0; j < ask.size(); ++j) {
    if (stored != nullptr) (*stored)[where[j]] = got[j];
    if (got[j] && core.Live(got[j]->bucket, cur)) {
      (*found)[where[j]] = got[j];
    } else {
      ++fp;
    }
  }
  core.counters.false_positives.Add(fp);
  return Status::OK();
}

}  // namespace

Status DedupCore::InsertBatch(std::span<const std::string_view> keys,
                              std::vector<uint8_t>* out) {
  SF_RETURN_IF_ERROR(CheckUsable(true));
  std::vector<uint64_t> hashes;
  std::vector<uint32_t> ids;
  SF_RETURN_IF_ERROR(Prepare(*this, keys, &hashes, &ids));
  SF_RETURN_IF_ERROR(MaybeRotate());
  std::shared_lock ring_lock(ring_mu);  // X2
  const uint64_t cur = current.load(std::memory_order_relaxed);
  StripeGuard guard(stripes.get(), std::move(ids));  // X1
  std::vector<uint8_t> maybe(keys.size(), 0);
  ring->MayContainBatch(hashes, maybe);
  std::vector<std::optional<DedupEntry>> found, stored;
  SF_RETURN_IF_ERROR(Lookup(*this, cur, keys, maybe, &found, &stored));
  out->assign(keys.size(), 0);
  std::vector<DedupOp> ops;
  std::unordered_set<std::string_view> fresh;  // new in this batch
  fresh.reserve(keys.size());
  const uint64_t now = ttl() ? Now() : 0;
  uint64_t n_new = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (found[i] || !fresh.insert(keys[i]).second) continue;  // duplicate
    if (stored[i] && ttl()) {
      ops.push_back(Op(DedupOp::kDelete, keys[i], *stored[i], true));
    }
    ops.push_back(Op(DedupOp::kPut, keys[i], EntryFor(now, cur), ttl()));
    (*out)[i] = 1;
    ++n_new;
  }
  if (n_new > 0) SF_RETURN_IF_ERROR(Commit(ops));
  for (size_t i = 0; i < keys.size(); ++i) {
    if ((*out)[i]) ring->Add(cur, hashes[i]);  // X1: after the write
  }
  counters.inserts.Add(keys.size());
  counters.new_keys.Add(n_new);
  counters.duplicates.Add(keys.size() - n_new);
  return Status::OK();
}

Status DedupCore::ContainsBatch(std::span<const std::string_view> keys,
                                std::vector<uint8_t>* out) {
  SF_RETURN_IF_ERROR(CheckUsable(false));
  std::vector<uint64_t> hashes;
  SF_RETURN_IF_ERROR(Prepare(*this, keys, &hashes, nullptr));
  SF_RETURN_IF_ERROR(MaybeRotate());
  std::shared_lock ring_lock(ring_mu);
  const uint64_t cur = current.load(std::memory_order_relaxed);
  std::vector<uint8_t> maybe(keys.size(), 0);
  ring->MayContainBatch(hashes, maybe);
  std::vector<std::optional<DedupEntry>> found;
  SF_RETURN_IF_ERROR(Lookup(*this, cur, keys, maybe, &found, nullptr));
  out->assign(keys.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) (*out)[i] = found[i] ? 1 : 0;
  counters.lookups.Add(keys.size());
  return Status::OK();
}

Status DedupCore::RemoveBatch(std::span<const std::string_view> keys,
                              std::vector<uint8_t>* out) {
  SF_RETURN_IF_ERROR(CheckUsable(true));
  std::vector<uint64_t> hashes;
  std::vector<uint32_t> ids;
  SF_RETURN_IF_ERROR(Prepare(*this, keys, &hashes, &ids));
  SF_RETURN_IF_ERROR(MaybeRotate());
  std::shared_lock ring_lock(ring_mu);
  const uint64_t cur = current.load(std::memory_order_relaxed);
  StripeGuard guard(stripes.get(), std::move(ids));
  std::vector<uint8_t> maybe(keys.size(), 0);
  ring->MayContainBatch(hashes, maybe);
  std::vector<std::optional<DedupEntry>> found;
  SF_RETURN_IF_ERROR(Lookup(*this, cur, keys, maybe, &found, nullptr));
  out->assign(keys.size(), 0);
  std::vector<DedupOp> ops;
  std::unordered_set<std::string_view> gone;  // removed in this batch
  uint64_t n = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!found[i] || !gone.insert(keys[i]).second) continue;
    ops.push_back(Op(DedupOp::kDelete, keys[i], *found[i], ttl()));
    (*out)[i] = 1;
    ++n;
  }
  if (n > 0) SF_RETURN_IF_ERROR(Commit(ops));
  for (size_t i = 0; i < keys.size(); ++i) {
    if ((*out)[i]) ring->Remove(found[i]->bucket, hashes[i]);
  }
  counters.removes.Add(keys.size());
  counters.removed.Add(n);
  return Status::OK();
}

}  // namespace shardfilter::internal
