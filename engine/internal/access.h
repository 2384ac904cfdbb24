// The engine's internal access to a ShardedFilter's shards: used by the
// Database (attach, detach), the checkpointer and recovery. Not part of the
// public API. Thread safety: as documented per function.
#ifndef SHARDFILTER_ENGINE_INTERNAL_ACCESS_H_
#define SHARDFILTER_ENGINE_INTERNAL_ACCESS_H_

#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/journal_sink.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/sharded_filter.h"

namespace shardfilter::internal {

// Values of ShardedFilter::detached_.
inline constexpr uint8_t kLive = 0;
inline constexpr uint8_t kDropped = 1;
inline constexpr uint8_t kClosed = 2;

class ShardedFilterAccess {
 public:
  // A filter over ready shard filters (one-link chains). REQUIRES: `spec`
  // resolved and filters.size() == spec.shards. `account` is what the
  // filter holds of its memory budget (already charged for `filters`;
  // growth charges it too); null: a new, empty account on the default
  // budget.
  static std::unique_ptr<ShardedFilter> Make(
      std::string name, const FilterSpec& spec,
      std::vector<std::unique_ptr<Filter>> filters,
      std::shared_ptr<MemoryAccount> account);
  // A filter whose shards have no chain yet: the caller installs one in
  // every shard (InstallChain, engine/internal/shard_chain.h) before any
  // other use, charging `account` (as Make's) for it. For recovery.
  static std::unique_ptr<ShardedFilter> MakeEmpty(
      std::string name, const FilterSpec& spec,
      std::shared_ptr<MemoryAccount> account);
  // REQUIRES: the filter is not shared yet.
  static void SetAccount(ShardedFilter& f,
                         std::shared_ptr<MemoryAccount> account);
  static MemoryAccount* account(ShardedFilter& f) { return f.account_.get(); }

  // Connects the filter to a journal (null: none) before it is shared, and
  // applies the session's durability override, if any (the stored spec is
  // left as it is).
  static void Attach(ShardedFilter& f, JournalSink* journal, bool read_only,
                     std::optional<Durability> durability_override) {
    f.journal_ = journal;
    f.read_only_ = read_only;
    if (durability_override.has_value()) f.durability_ = *durability_override;
    // Retained hashes are written with the journal entry (FilterSpec).
    if (f.spec_.retain_hashes && f.durability_ == Durability::kNone) {
      f.durability_ = Durability::kJournal;
    }
    if (f.log_ == nullptr) {
      f.log_ = std::make_unique<FilterLog>(f.name_, f.shard_count_);
    }
    if (journal != nullptr) {
      // Filters that retain hashes write them in the op's RocksDB
      // WriteBatch: they keep the journal family; others map segments.
      // A small filter journals there too (FilterLog L6).
      auto link = LinkTableBytes(f.spec_, 0, ShardMaxBytes(f.spec_));
      const uint64_t shard_bytes = link.ok() ? *link : 0;
      const bool mmap =
          !f.spec_.retain_hashes && !read_only &&
          f.durability_ != Durability::kNone && !journal->rocksdb_only() &&
          shard_bytes * f.shard_count_ >= journal->mapped_min_bytes();
      f.log_->Configure(journal, mmap, f.durability_ == Durability::kSync,
                        shard_bytes,
                        /*thread_segments=*/f.spec_.type == FilterType::kBloom);
    }
    f.UpdateFastAdd();
    for (uint32_t i = 0; i < f.shard_count_; ++i) {  // L2's start
      f.log_->SetRecovered(
          i, f.shards_[i].last_seq.load(std::memory_order_relaxed));
    }
  }

  // The filter's journal state (null before Attach or recovery).
  static FilterLog* log(ShardedFilter& f) { return f.log_.get(); }
  // Recovery, before the filter is shared.
  static void SetLog(ShardedFilter& f, std::unique_ptr<FilterLog> log) {
    f.log_ = std::move(log);
  }

  static Shard& shard(ShardedFilter& f, uint32_t i) { return f.shards_[i]; }
  // The filter a handle's calls go to: itself, or the migration target it
  // forwards to. Whoever indexes shards through a handle that may have been
  // migrated takes its locks on Live(f) and re-checks Forwarded() once it
  // holds them (a switch may have happened in between).
  static ShardedFilter& Live(ShardedFilter& f) {
    return const_cast<ShardedFilter&>(f.Live());
  }
  static bool Forwarded(const ShardedFilter& f) {
    return f.Forward() != nullptr;
  }
  static uint64_t id(const ShardedFilter& f) { return f.id_; }
  // A count that every effective mutation raises (FilterVersion), never
  // returning to an earlier value. Counting and cuckoo filters: the sum of
  // the shards' last sequences (each of their mutations takes one). Bloom
  // filters: the sum of their links' fills, since an add of a filter
  // without a journal takes no sequence (ShardHead::last_seq): an add that
  // set a new bit keeps its unit of fill and one that set none changed
  // nothing (S8), and Bloom fill never falls (no removes). Exact under
  // LockAll.
  static uint64_t Mutations(ShardedFilter& f) {
    const bool bloom = f.spec_.type == FilterType::kBloom;
    uint64_t n = 0;
    for (uint32_t i = 0; i < f.shard_count_; ++i) {
      const Shard& s = f.shards_[i];
      if (!bloom) {
        n += s.last_seq.load(std::memory_order_relaxed);
        continue;
      }
      for (uint32_t l = 0; l < s.links_visible(); ++l) n += s.Fill(l);  // S9
    }
    return n;
  }

  // --- Migration (engine/internal/migration.h, M1 and M4) ---
  // Every shard lock exclusive, ascending (S4, S5).
  static std::vector<ExclusiveShardLock> LockAll(ShardedFilter& f) {
    std::vector<ExclusiveShardLock> locks;
    locks.reserve(f.shard_count_);
    for (uint32_t i = 0; i < f.shard_count_; ++i) {
      locks.push_back(LockExclusive(f.shards_[i]));
    }
    return locks;
  }
  // Before the filter is shared (a built migration target).
  static void SetName(ShardedFilter& f, std::string name) {
    f.name_ = std::move(name);
  }
  static void SetRetainHashes(ShardedFilter& f, bool retain) {
    f.spec_.retain_hashes = retain;
  }
  // REQUIRES: LockAll held.
  static void SetMigration(ShardedFilter& f, Migration* m) {
    f.migration_.store(m, std::memory_order_relaxed);
    f.UpdateFastBlocked();
  }
  static uint8_t detached(const ShardedFilter& f) {
    return f.detached_.load(std::memory_order_relaxed);
  }
  // REQUIRES: LockAll held. Publishes the target (release pairs with
  // Forward()'s acquire) after the owner is stored.
  static void SetForward(ShardedFilter& f, std::shared_ptr<ShardedFilter> to) {
    // Q1: no query takes the fast path into this filter's tables once an
    // op can have gone through the forward.
    for (uint32_t i = 0; i < f.shard_count_; ++i) {
      f.fast_[i].table.store(nullptr, std::memory_order_relaxed);
      f.fast_[i].link.store(nullptr, std::memory_order_relaxed);
      f.fast_[i].counters.store(nullptr, std::memory_order_relaxed);
    }
    f.forward_owner_ = to;
    f.forward_.store(to.get(), std::memory_order_release);
  }

  // Waits for in-flight mutations (takes every shard lock exclusive, in
  // ascending order: S4), then marks the filter dropped or closed so that
  // later mutations fail without touching the journal.
  static void Detach(ShardedFilter& f, uint8_t state);
  // Detach's second half, for a caller that already holds every shard
  // lock exclusive (LockAll): Drop commits its delete between the two, so
  // that no mutation is acknowledged after the filter is gone.
  // Relaxed: readers load it under a shard lock, which orders them.
  static void MarkDetached(ShardedFilter& f, uint8_t state) {
    f.detached_.store(state, std::memory_order_relaxed);
    f.UpdateFastBlocked();
  }
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_ACCESS_H_
