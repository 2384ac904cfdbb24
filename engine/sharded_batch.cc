// ShardedFilter batch operations: group items by shard (a counting sort,
// or a sort of small batches), run the shard groups in parallel with
// oneTBB, journal every group of one call in one WriteBatch, and report per
// item in input order.
#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/journal_sink.h"
#include "shardfilter/engine/internal/parallel.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/engine/sharded_filter.h"

namespace shardfilter {

using internal::Shard;
using persistence::JournalBatch;
using persistence::JournalOp;

namespace {

// Items per slice: bounds the grouping arrays and one WriteBatch's size
// (8 MiB of hashes).
constexpr size_t kSliceItems = size_t{1} << 20;
// Below this many items a batch runs on the calling thread: spawning TBB
// tasks costs a few microseconds, about what 1,000 in-cache ops cost.
constexpr size_t kParallelMinItems = 4096;

struct Grouping {
  std::vector<uint32_t> order;     // item indexes, grouped by shard
  std::vector<uint32_t> involved;  // shards with items, ascending
  // Group j (shard involved[j]) is order[begin[j] .. begin[j + 1]).
  std::vector<uint32_t> begin;
};

// `shard_of_hash` maps a hash to one of `shards` shards. Within a group the
// items keep their input order (adds of copies of one key apply in order).
// Batches much smaller than the shard count (a BF.MADD of 10 on a filter of
// 128 shards) are grouped by sorting (shard, index) pairs, in O(n log n);
// larger ones by counting, in O(n + shards): the counting pass's prefix sum
// over every shard was most of a 10-item batch's cost on 128 shards.
template <typename ShardOfFn>
Grouping GroupByShard(uint32_t shards, ShardOfFn&& shard_of_hash,
                      std::span<const uint64_t> hashes) {
  Grouping g;
  const size_t n = hashes.size();
  g.order.resize(n);
  if (n * 8 < shards) {
    std::vector<uint64_t> keyed(n);
    for (size_t i = 0; i < n; ++i) {
      keyed[i] = uint64_t{shard_of_hash(hashes[i])} << 32 | i;
    }
    std::sort(keyed.begin(), keyed.end());
    for (size_t k = 0; k < n; ++k) {
      const uint32_t shard = static_cast<uint32_t>(keyed[k] >> 32);
      g.order[k] = static_cast<uint32_t>(keyed[k]);
      if (g.involved.empty() || g.involved.back() != shard) {
        g.involved.push_back(shard);
        g.begin.push_back(static_cast<uint32_t>(k));
      }
    }
    g.begin.push_back(static_cast<uint32_t>(n));
    return g;
  }
  std::vector<uint32_t> shard_of(n);
  std::vector<uint32_t> next(shards + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    shard_of[i] = shard_of_hash(hashes[i]);
    ++next[shard_of[i] + 1];
  }
  for (uint32_t s = 0; s < shards; ++s) {
    if (next[s + 1] != 0) {
      g.involved.push_back(s);
      g.begin.push_back(next[s]);
    }
    next[s + 1] += next[s];
  }
  g.begin.push_back(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    g.order[next[shard_of[i]]++] = static_cast<uint32_t>(i);
  }
  return g;
}

template <typename Fn>
void ForEachGroup(size_t groups, size_t items, Fn&& fn) {
  if (groups > 1 && items >= kParallelMinItems) {
    internal::ParallelFor(groups, fn);
  } else {
    for (size_t j = 0; j < groups; ++j) fn(j);
  }
}

bool NeedsOrder(FilterType t) { return t != FilterType::kBloom; }

}  // namespace

// Overlaps the cache misses of a slice's items (internal::ChainPrefetch):
// for adds and removes, what item k + kChainPrefetchItems will touch is
// prefetched before item k is applied (Start, Ahead); for queries, which
// run a whole shard group per call, the next groups' items are prefetched
// before a group runs (Through). The slice is grouped by shard (`order`,
// ascending shards); when the groups run one after another on this thread
// (serial()) the window runs on across a group's end into the next group,
// so a filter of many shards (a few items per shard per batch) keeps its
// misses in flight too. Adds hold every involved shard locked shared, so
// reading their chains here is as safe as the apply itself (S2); queries
// read chains lock-free anyway (S1).
class ShardedFilter::BatchPrefetch {
 public:
  BatchPrefetch(const ShardedFilter& f, std::span<const uint64_t> slice,
                std::span<const uint32_t> order, size_t groups, bool for_write)
      : f_(f),
        slice_(slice),
        order_(order),
        ahead_(slice.size() > 1 ? internal::kChainPrefetchItems : 0),
        serial_(!(groups > 1 && slice.size() >= kParallelMinItems)),
        for_write_(for_write) {}

  bool serial() const { return serial_; }
  // At the start of group j (flat positions [begin, end)): its first items,
  // unless the previous group's window already covered them.
  void Start(size_t j, uint32_t begin, uint32_t end) const {
    if (ahead_ == 0 || (serial_ && j > 0)) return;
    const uint32_t stop = std::min<uint32_t>(Limit(end), begin + ahead_);
    for (uint32_t p = begin; p < stop; ++p) At(p);
  }
  // Before applying position k of a group ending at `end`.
  void Ahead(uint32_t k, uint32_t end) const {
    if (ahead_ != 0 && k + ahead_ < Limit(end)) At(k + ahead_);
  }
  // Every position before `end` not prefetched yet. REQUIRES: serial().
  void Through(size_t end) {
    end = std::min(end, order_.size());
    for (; next_ < end; ++next_) At(static_cast<uint32_t>(next_));
  }

 private:
  uint32_t Limit(uint32_t end) const {
    return serial_ ? static_cast<uint32_t>(order_.size()) : end;
  }
  void At(uint32_t p) const {
    const uint64_t h = slice_[order_[p]];
    internal::ChainPrefetch(f_.shards_[f_.LocalShardOf(h)], h, for_write_);
  }

  const ShardedFilter& f_;
  std::span<const uint64_t> slice_;
  std::span<const uint32_t> order_;
  uint32_t ahead_;
  bool serial_;
  bool for_write_;
  size_t next_ = 0;  // Through's cursor
};

Status ShardedFilter::AddHashes(std::span<const uint64_t> hashes,
                                std::vector<Status>* per_item,
                                std::vector<AddOutcome>* outcomes) {
  return RunBatch(false, hashes, per_item, outcomes);
}

Status ShardedFilter::RemoveHashes(std::span<const uint64_t> hashes,
                                   std::vector<Status>* per_item) {
  return RunBatch(true, hashes, per_item);
}

Status ShardedFilter::AddKeys(std::span<const std::string_view> keys,
                              std::vector<Status>* per_item,
                              std::vector<AddOutcome>* outcomes) {
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) hashes[i] = Hash(keys[i]);
  return RunBatch(false, hashes, per_item, outcomes);
}

Status ShardedFilter::RemoveKeys(std::span<const std::string_view> keys,
                                 std::vector<Status>* per_item) {
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) hashes[i] = Hash(keys[i]);
  return RunBatch(true, hashes, per_item);
}

// Measured in Redis (tools/module/bench.sh, BF.MADD of 10 items on a 1e8
// filter of 128 shards): the grouped path's sort, lock vector and per-call
// allocations cost more than the ten misses it overlaps. One at a time,
// after prefetching every item's block, the misses still overlap. Every
// item is attempted and reports its own status and outcome, as in the
// grouped path; a Bloom remove is NotSupported for each item alike. Not
// for journalled filters: there the grouped path writes one record per
// shard (and, under sync, shares one fdatasync) for the whole batch.
Status ShardedFilter::RunSmallBatch(bool remove,
                                    std::span<const uint64_t> hashes,
                                    std::vector<Status>* per_item,
                                    std::vector<AddOutcome>* outcomes) {
  if (per_item != nullptr) per_item->assign(hashes.size(), Status::OK());
  if (outcomes != nullptr) outcomes->assign(hashes.size(), AddOutcome::kAdded);
  for (uint64_t h : hashes) PrefetchShard(LocalShardOf(h), h, true);
  Status first;
  for (size_t i = 0; i < hashes.size(); ++i) {
    Status st;
    if (remove) {
      st = RemoveHash(hashes[i]);
    } else {
      Result<AddOutcome> r = InsertHash(hashes[i]);
      if (r.ok()) {
        if (outcomes != nullptr) (*outcomes)[i] = *r;
      } else {
        st = r.status();
      }
    }
    if (!st.ok() && first.ok()) first = st;
    if (per_item != nullptr) (*per_item)[i] = std::move(st);
  }
  return first;
}

Status ShardedFilter::RunBatch(bool remove, std::span<const uint64_t> hashes,
                               std::vector<Status>* per_item,
                               std::vector<AddOutcome>* outcomes) {
  if (ShardedFilter* f = Forward())
    return f->RunBatch(remove, hashes, per_item, outcomes);
  if (hashes.size() <= kSmallBatchItems && !Journalled()) {
    return RunSmallBatch(remove, hashes, per_item, outcomes);
  }
  std::vector<Status> local;
  std::vector<Status>& results = per_item != nullptr ? *per_item : local;
  results.assign(hashes.size(), Status::OK());
  if (outcomes != nullptr) outcomes->assign(hashes.size(), AddOutcome::kAdded);
  Status precheck = CheckWritable();
  if (precheck.ok() && remove && spec_.type == FilterType::kBloom) {
    precheck = Status::NotSupported(
        "remove is not supported by Bloom filters (use a counting or cuckoo "
        "filter)");
  }
  if (!precheck.ok()) {
    for (Status& r : results) r = precheck;
    return precheck;
  }
  const bool journal = journal_ != nullptr && durability_ != Durability::kNone;
  auto shard_of = [this](uint64_t h) { return LocalShardOf(h); };
  const JournalOp op = remove ? JournalOp::kRemove : JournalOp::kAdd;
  for (size_t base = 0; base < hashes.size(); base += kSliceItems) {
    std::span<const uint64_t> slice =
        hashes.subspan(base, std::min(kSliceItems, hashes.size() - base));
    Status* out = results.data() + base;
    Grouping g = GroupByShard(shard_count_, shard_of, slice);
    // Shard invariant S4: shared locks in ascending shard order, held by
    // this thread across the parallel apply and the journal write (S2).
    std::vector<std::shared_lock<internal::ShardMutex>> locks;
    locks.reserve(g.involved.size());
    for (uint32_t s : g.involved) {
      locks.push_back(internal::LockShared(shards_[s]));  // S5
    }
    if (ShardedFilter* f = Forward()) {
      // A migration switched this filter while we waited: the rest of the
      // batch goes to the target.
      locks.clear();
      std::vector<Status> rest;
      std::vector<AddOutcome> rest_outcomes;
      f->RunBatch(remove, hashes.subspan(base), &rest, &rest_outcomes).ok();
      for (size_t i = 0; i < rest.size(); ++i) results[base + i] = rest[i];
      if (outcomes != nullptr) {
        for (size_t i = 0; i < rest_outcomes.size(); ++i) {
          (*outcomes)[base + i] = rest_outcomes[i];
        }
      }
      break;
    }
    if (uint8_t d = detached_.load(std::memory_order_relaxed)) {
      Status st = d == internal::kDropped
                      ? Status::NotFound("filter was dropped")
                      : Status::NotSupported("the database was closed");
      // Dropped or closed between slices: this slice and the rest fail.
      for (size_t i = base; i < results.size(); ++i) results[i] = st;
      break;
    }
    if (journal && log_->mmap()) {
      RunMappedSlice(remove, slice, g.involved, g.begin, g.order, base, out,
                     outcomes);
      continue;
    }
    if (journal) {
      if (Status f = log_->failure(); !f.ok()) {  // L4
        for (size_t i = 0; i < slice.size(); ++i) out[i] = f;
        continue;
      }
    }
    std::vector<std::vector<uint64_t>> done(g.involved.size());
    std::vector<uint64_t> seqs(g.involved.size(), 0);
    const BatchPrefetch prefetch(*this, slice, g.order, g.involved.size(),
                                 true);
    ForEachGroup(g.involved.size(), slice.size(), [&](size_t j) {
      Shard& sh = shards_[g.involved[j]];
      const uint32_t begin = g.begin[j];
      const uint32_t end = g.begin[j + 1];
      // The applied hashes are kept only for the journal write below.
      std::vector<uint64_t>& ok = done[j];
      if (journal) ok.reserve(end - begin);
      uint32_t applied = 0;
      auto apply = [&] {
        prefetch.Start(j, begin, end);
        for (uint32_t k = begin; k < end; ++k) {
          prefetch.Ahead(k, end);
          uint32_t idx = g.order[k];
          AddOutcome outcome = AddOutcome::kAdded;
          Status st =
              remove ? internal::ChainRemove(sh, slice[idx])
                     : internal::ChainAddAt(spec_, sh, fast_[g.involved[j]],
                                            slice[idx], &outcome);
          // Each item has its own slot: no two groups write one.
          if (outcomes != nullptr) (*outcomes)[base + idx] = outcome;
          if (st.ok()) {
            // A Bloom key already present is journalled too (AddOutcome).
            if (journal) ok.push_back(slice[idx]);
            ++applied;
            RecordForMigration(g.involved[j], slice[idx], remove,
                               outcome == AddOutcome::kAlreadyPresent);
          } else {
            out[idx] = std::move(st);
          }
        }
        if (applied != 0) {
          seqs[j] = sh.last_seq.fetch_add(1, std::memory_order_relaxed) + 1;
        }
      };
      if (NeedsOrder(spec_.type)) {
        std::lock_guard order(sh.order_mu);  // S3
        apply();
      } else {
        apply();
      }
      if (applied != 0) sh.dirty.store(true, std::memory_order_relaxed);
    });
    if (!journal) continue;
    // The RocksDB journal family (filters that retain hashes).
    JournalBatch batch;
    for (size_t j = 0; j < g.involved.size(); ++j) {
      if (!done[j].empty()) {
        batch.Add(name_, g.involved[j], seqs[j], op, done[j]);
        if (spec_.retain_hashes) batch.Retain(name_, op, done[j]);
      }
    }
    if (batch.entries() == 0) continue;
    Status st = journal_->Write(&batch, durability_ == Durability::kSync);
    if (!st.ok()) log_->Fail(st.WithContext("writing the journal"));  // L4
    for (size_t j = 0; j < g.involved.size(); ++j) {  // L2: ascending
      if (done[j].empty()) continue;
      Status c = st.ok() ? log_->Complete(g.involved[j], seqs[j], seqs[j])
                         : log_->failure();
      if (c.ok()) continue;
      for (uint32_t k = g.begin[j]; k < g.begin[j + 1]; ++k) {
        if (out[g.order[k]].ok()) out[g.order[k]] = c;
      }
    }
  }
  for (const Status& r : results) {
    if (!r.ok()) return r;
  }
  return Status::OK();
}

// One slice through the memory-mapped journal (FilterLog L1-L4): per shard
// group, records of at most kMaxRecordHashes items, each reserved before its
// items are applied; every record committed before any watermark wait, the
// waits in ascending shard order (L2).
void ShardedFilter::RunMappedSlice(bool remove, std::span<const uint64_t> slice,
                                   std::span<const uint32_t> involved,
                                   std::span<const uint32_t> group_begin,
                                   std::span<const uint32_t> order, size_t base,
                                   Status* out,
                                   std::vector<AddOutcome>* outcomes) {
  internal::FilterLog& log = *log_;
  if (Status f = log.failure(); !f.ok()) {
    for (size_t i = 0; i < slice.size(); ++i) out[i] = f;
    return;
  }
  const uint8_t op =
      static_cast<uint8_t>(remove ? JournalOp::kRemove : JournalOp::kAdd);
  struct Rec {
    char* slot = nullptr;
    uint64_t seq = 0;
    std::vector<uint64_t> hashes;
  };
  std::vector<std::vector<Rec>> recs(involved.size());
  const bool ordered = NeedsOrder(spec_.type);
  const BatchPrefetch prefetch(*this, slice, order, involved.size(), true);
  ForEachGroup(involved.size(), slice.size(), [&](size_t j) {
    const uint32_t shard = involved[j];
    Shard& sh = shards_[shard];
    const uint32_t begin = group_begin[j], end = group_begin[j + 1];
    {
      std::unique_lock<internal::ShortMutex> order_lock;
      if (ordered) order_lock = std::unique_lock(sh.order_mu);  // S3, L1
      for (uint32_t c = begin; c < end; c += internal::kMaxRecordHashes) {
        const uint32_t stop = std::min<uint32_t>(
            end, c + static_cast<uint32_t>(internal::kMaxRecordHashes));
        const size_t n = stop - c;
        Rec rec;
        Status space;
        if (ordered) {
          space = log.EnsureSpace(shard, n);
        } else {
          std::lock_guard reserve(log.reserve_mu(shard));
          space = log.EnsureSpace(shard, n);
          if (space.ok()) {
            rec.seq = sh.last_seq.fetch_add(1, std::memory_order_relaxed) + 1;
            rec.slot = log.Reserve(shard, rec.seq, n);
          }
        }
        if (!space.ok()) {  // nothing of this record was applied
          for (uint32_t k = c; k < stop; ++k) out[order[k]] = space;
          continue;
        }
        rec.hashes.reserve(n);
        if (c == begin) prefetch.Start(j, begin, end);
        for (uint32_t k = c; k < stop; ++k) {
          prefetch.Ahead(k, end);
          const uint32_t idx = order[k];
          AddOutcome outcome = AddOutcome::kAdded;
          Status st = remove ? internal::ChainRemove(sh, slice[idx])
                             : internal::ChainAddAt(spec_, sh, fast_[shard],
                                                    slice[idx], &outcome);
          if (outcomes != nullptr) (*outcomes)[base + idx] = outcome;
          if (st.ok()) {
            rec.hashes.push_back(slice[idx]);
            RecordForMigration(shard, slice[idx], remove,
                               outcome == AddOutcome::kAlreadyPresent);
          } else {
            out[idx] = std::move(st);
          }
        }
        if (ordered) {
          if (rec.hashes.empty()) continue;  // no seq taken
          rec.seq = sh.TakeOrderedSeq();
          rec.slot = log.Reserve(shard, rec.seq, rec.hashes.size());
        }
        if (!rec.hashes.empty())
          sh.dirty.store(true, std::memory_order_relaxed);
        recs[j].push_back(std::move(rec));
      }
    }
    for (Rec& r : recs[j]) {
      persistence::CommitRecord(r.slot, r.seq, r.hashes.empty() ? 0 : op,
                                r.hashes);
    }
  });
  for (size_t j = 0; j < involved.size(); ++j) {  // L2: ascending shards
    if (recs[j].empty()) continue;
    const uint32_t shard = involved[j];
    Status c = log.Complete(shard, recs[j].front().seq, recs[j].back().seq);
    if (c.ok()) {
      uint64_t n = 0;
      for (const Rec& r : recs[j]) n += r.hashes.size();
      journal_->Count(n);
      continue;
    }
    for (const Rec& r : recs[j]) persistence::UncommitRecord(r.slot);  // L4
    for (uint32_t k = group_begin[j]; k < group_begin[j + 1]; ++k) {
      if (out[order[k]].ok()) out[order[k]] = c;
    }
  }
}

void ShardedFilter::MayContainHashes(std::span<const uint64_t> hashes,
                                     std::span<uint8_t> out) const {
  if (ShardedFilter* f = Forward()) return f->MayContainHashes(hashes, out);
  if (hashes.size() <= kSmallBatchItems) {
    // As RunSmallBatch: prefetch every item's block, then one at a time
    // (MayContainHash: the inline probe where a shard has one link).
    for (uint64_t h : hashes) PrefetchShard(LocalShardOf(h), h, false);
    for (size_t i = 0; i < hashes.size(); ++i) {
      out[i] = MayContainHash(hashes[i]);
    }
    return;
  }
  if (shard_count_ == 1) {
    internal::ChainMayContainHashes(shards_[0], hashes, out);  // S1
    return;
  }
  for (size_t base = 0; base < hashes.size(); base += kSliceItems) {
    size_t n = std::min(kSliceItems, hashes.size() - base);
    std::span<const uint64_t> slice = hashes.subspan(base, n);
    Grouping g = GroupByShard(
        shard_count_, [this](uint64_t h) { return LocalShardOf(h); }, slice);
    std::vector<uint64_t> grouped(n);
    for (size_t k = 0; k < n; ++k) grouped[k] = slice[g.order[k]];
    std::vector<uint8_t> answers(n);
    // Groups of a few items (a small batch over many shards) get no overlap
    // from the links' batch kernels, which prefetch within one call.
    BatchPrefetch prefetch(*this, slice, g.order, g.involved.size(), false);
    const bool cross = prefetch.serial() && g.involved.size() * 4 > n;
    ForEachGroup(g.involved.size(), n, [&](size_t j) {
      uint32_t s = g.involved[j];
      size_t begin = g.begin[j], len = g.begin[j + 1] - begin;
      if (cross) prefetch.Through(begin + len + internal::kChainPrefetchItems);
      internal::ChainMayContainHashes(
          shards_[s], std::span<const uint64_t>(grouped).subspan(begin, len),
          std::span<uint8_t>(answers).subspan(begin, len));
    });
    for (size_t k = 0; k < n; ++k) out[base + g.order[k]] = answers[k];
  }
}

void ShardedFilter::MayContainKeys(std::span<const std::string_view> keys,
                                   std::span<uint8_t> out) const {
  if (keys.size() <= kSmallBatchItems) {
    uint64_t hashes[kSmallBatchItems];
    for (size_t i = 0; i < keys.size(); ++i) hashes[i] = Hash(keys[i]);
    return MayContainHashes(std::span(hashes, keys.size()), out);
  }
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) hashes[i] = Hash(keys[i]);
  MayContainHashes(hashes, out);
}

}  // namespace shardfilter
