// The state behind a Database (engine/database.h): the Store, the open
// filters and the background checkpointer.
//
// Invariants:
//  D1. `mu` guards `filters` and `closed`. Only Drop holds it while taking
//      a FilterState::mu (order: `mu`, then FilterState::mu, then shard
//      locks; see engine/database.h); checkpoints copy the filter list
//      under `mu` and release it before taking any FilterState::mu.
//  D2. A filter in `filters` is attached to `journal` and to `store`; both
//      outlive it until Close detaches every filter (under all its shard
//      locks) before destroying the Store.
//  D4. Filters load on first use: Open reads the catalog into `unloaded`
//      and recovers nothing (a writable Open collects the store's debris
//      by seeks, persistence/store_garbage.cc, so no load is needed for
//      it); Find (every Get, Info, Checkpoint of a name)
//      loads the filter. A name is in at most one of `unloaded`, `filters`
//      and `unavailable`. `load_mu` serialises loads and is taken before
//      `mu` (lock order 0) by Load, Drop and Close: a load reads the Store
//      outside `mu`, so Close takes `load_mu` before destroying it, and
//      Drop of an unloaded name never races its load. A load that fails
//      with damage moves the name to `unavailable` (D3); any other failure
//      (I/O, the memory budget) leaves it unloaded, so a later use retries.
#ifndef SHARDFILTER_ENGINE_INTERNAL_DATABASE_IMPL_H_
#define SHARDFILTER_ENGINE_INTERNAL_DATABASE_IMPL_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/internal/checkpointer.h"
#include "shardfilter/engine/internal/journal_sink.h"
#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/internal/migration.h"
#include "shardfilter/filters/internal/thread_annotations.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

struct OpenFilter {
  std::shared_ptr<ShardedFilter> filter;
  std::shared_ptr<FilterState> state;
};

class DatabaseImpl {
 public:
  DatabaseOptions options;
  std::unique_ptr<persistence::Store> store;
  std::unique_ptr<JournalSink> journal;

  // The catalog mutex (D1; lock order 1 of engine/database.h). Checked by
  // clang's -Wthread-safety (filters/internal/thread_annotations.h).
  mutable Mutex mu;
  // D4: loading a filter changes these in const lookups (Get is const: a
  // load only brings in what the store already holds).
  mutable std::map<std::string, OpenFilter, std::less<>> filters
      SF_GUARDED_BY(mu);
  mutable std::map<std::string, persistence::FilterDescriptor, std::less<>>
      unloaded SF_GUARDED_BY(mu);
  mutable Mutex load_mu;  // D4, lock order 0
  // Expiry deadlines (Database::SetExpiry), unix ms; only of names in
  // `filters`, `unloaded` or `unavailable`. `deadlines` holds the same
  // entries ordered by (deadline, name), so that the due ones are found
  // without visiting the others; its names view `expiry`'s keys (a map
  // node's key stays put until the node is erased). `deadline_sum` is the
  // sum of the deadlines (a mean for INFO's avg_ttl). The three change
  // together, under `mu`, through PutExpiry and ForgetExpiry only.
  // expiry_count mirrors the size (relaxed: a host's fast check whether
  // any deadline exists).
  std::map<std::string, int64_t, std::less<>> expiry SF_GUARDED_BY(mu);
  std::set<std::pair<int64_t, std::string_view>> deadlines SF_GUARDED_BY(mu);
  __int128 deadline_sum SF_GUARDED_BY(mu) = 0;
  std::atomic<uint64_t> expiry_count{0};
  void PutExpiry(std::string_view name, int64_t unix_ms) SF_REQUIRES(mu) {
    auto it = expiry.find(name);
    if (it == expiry.end()) {
      it = expiry.emplace(std::string(name), unix_ms).first;
    } else {
      deadlines.erase({it->second, it->first});
      deadline_sum -= it->second;
      it->second = unix_ms;
    }
    deadlines.emplace(unix_ms, it->first);
    deadline_sum += unix_ms;
    expiry_count.store(expiry.size(), std::memory_order_relaxed);
  }
  // Whether a write of `name`'s metadata (its deadline) syncs RocksDB's
  // log: under the effective durability sync, and for a filter whose
  // descriptor could not be read (nothing says it may skip the sync).
  bool MetadataSyncs(std::string_view name) const SF_REQUIRES(mu) {
    if (options.durability_override.has_value()) {
      return *options.durability_override == Durability::kSync;
    }
    if (auto it = filters.find(name); it != filters.end()) {
      return it->second.filter->durability() == Durability::kSync;
    }
    if (auto it = unloaded.find(name); it != unloaded.end()) {
      return it->second.durability !=
                 static_cast<uint8_t>(Durability::kJournal) &&
             it->second.durability != static_cast<uint8_t>(Durability::kNone);
    }
    return true;
  }
  // After a Drop committed (its WriteBatch deleted the stored deadline), or
  // a deadline was removed.
  void ForgetExpiry(std::string_view name) SF_REQUIRES(mu) {
    if (auto it = expiry.find(name); it != expiry.end()) {
      deadlines.erase({it->second, it->first});
      deadline_sum -= it->second;
      expiry.erase(it);
      expiry_count.store(expiry.size(), std::memory_order_relaxed);
    }
  }
  bool closed SF_GUARDED_BY(mu) = false;
  // D3. Filters whose stored data failed its checks at Open (Corruption,
  // or a format from the future), with the reason: one damaged filter is
  // unavailable, not the store (DESIGN.md invariant 6). Nothing of theirs
  // is read, collected or overwritten; Get/Info return the reason, Create
  // of the name is AlreadyExists, Drop deletes it.
  mutable std::map<std::string, Status, std::less<>> unavailable
      SF_GUARDED_BY(mu);
  // The running or last migration of each name (engine/migration.cc).
  std::map<std::string, std::shared_ptr<Migration>, std::less<>> migrations
      SF_GUARDED_BY(mu);
  // Dedup sets open on this Database (engine/dedup_open.cc): a set is open
  // at most once, because its journal file has one writer.
  std::set<std::string, std::less<>> open_dedup_sets SF_GUARDED_BY(mu);

  // Counters (relaxed atomics: statistics only).
  std::atomic<uint64_t> checkpoints{0};
  std::atomic<uint64_t> shards_written{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> replayed_ops{0};
  std::atomic<uint64_t> replay_skipped_removes{0};
  std::atomic<uint64_t> background_errors{0};

  // Background checkpointer.
  std::thread background;
  std::mutex bg_mu;
  std::condition_variable bg_cv;
  bool bg_stop = false;  // GUARDED_BY(bg_mu)
  Status bg_status;      // GUARDED_BY(bg_mu)

  // The filter of that name, loaded if it was not (D4).
  Result<OpenFilter> Find(std::string_view name) const;
  // AlreadyExists unless no filter (loaded, unloaded or unavailable) has
  // the name: Create and Import never replace what they did not create.
  Status CheckNameFree(std::string_view name) const SF_REQUIRES(mu);
  // A new memory account on this Database's budget (options.memory_budget,
  // or the process default).
  std::shared_ptr<MemoryAccount> NewAccount() const {
    return std::make_shared<MemoryAccount>(options.memory_budget);
  }
  // Checkpoints the given filters; `stats` accumulates.
  Status CheckpointFilters(const std::vector<OpenFilter>& which,
                           CheckpointStats* stats);
  void BackgroundLoop();
  // D4: recovers `name` from the store (REQUIRES: load_mu held, mu not).
  Result<OpenFilter> LoadFilter(const std::string& name,
                                persistence::FilterDescriptor desc) const;
  // Asks every migration to stop and joins their threads (Close).
  void StopMigrations();
};

// InvalidArgument unless 1 <= name.size() <= kMaxFilterNameBytes.
Status CheckFilterName(std::string_view name);
// CheckFilterName, and InvalidArgument for a name holding
// TieredFilter::kLevelMark:
// such names belong to tiered filters (TieredFilter::Create drops any it
// finds as debris of a crashed create), so callers may neither create nor
// drop, import or expire them; only TieredAccess does.
Status CheckUserFilterName(std::string_view name);
// The error of a filter that did not load (D3): its own code and reason,
// naming the filter.
Status UnavailableError(std::string_view name, const Status& why);

// Replaces `source` (the open filter `name`) with `built`, a filter not
// shared yet, durably: writes its shards as checkpoint chunks and commits
// its descriptor in one synced write that deletes the source's chunks and
// journal (and its retained hashes unless built retains them: then they
// must be the hashes `built` holds); then makes it the open filter of that
// name and forwards the source's handles to it. On error nothing changed
// (orphan chunks are collected at the next open). REQUIRES: d.mu, the
// source's FilterState::mu and every source shard lock held (M5).
// The target's shards already written (as chunks of `generation`, WAL
// synced) before the switch, so that writers pause only for the tail.
struct PrewrittenTarget {
  uint64_t generation = 0;
  std::vector<persistence::ShardRecord> records;  // one per target shard
};
// 1 + the largest generation `d` names.
uint64_t NextGeneration(const persistence::FilterDescriptor& d);
// With `pre`, its chunks are used instead of writing the shards now, and
// `tail` (ops applied to `built` since they were serialized, as journal
// entries of the target with sequences 1..tail_seq[shard]) goes into the
// commit.
Status InstallTarget(DatabaseImpl& d, const std::string& name,
                     const OpenFilter& source,
                     std::unique_ptr<ShardedFilter> built,
                     const PrewrittenTarget* pre = nullptr,
                     persistence::JournalBatch* tail = nullptr,
                     const std::vector<uint64_t>& tail_seq = {})
    SF_REQUIRES(d.mu, source.state->mu);

// The migration thread's body (engine/internal/migration_run.cc).
void RunMigration(DatabaseImpl& d, Migration& m, const std::string& name);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_DATABASE_IMPL_H_
