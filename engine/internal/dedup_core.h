// DedupCore: the state behind a DedupStore (engine/dedup_store.h): the
// RocksDB table, the filter ring, the key stripes and the counters.
//
// Invariants:
//  X1. A key's RocksDB entry and its filter hash change only under the
//      key's stripe lock (stripe = Remix(hash) & (stripes - 1)); the
//      RocksDB write comes first, the filter add after it, so an entry
//      that is stored and live is always in its bucket's slot by the time
//      its stripe is released (no false negative), and a failed write
//      leaves the filter untouched.
//  X2. `current` only grows, and changes only under `ring_mu` exclusive
//      (Rotate), together with the Reset of the slots entering the window.
//      Operations hold `ring_mu` shared from reading `current` until their
//      filter add/remove is done, so a slot is never reset under them.
//  X3. An entry is live iff bucket >= current - P (always, without TTL).
//      Every reader checks that, so an expired entry not yet purged is
//      absent; Purge deletes an entry only under its stripe lock after
//      re-reading it (a re-insert may have renewed it).
//  X4. Lock order: ring_mu, then stripes in ascending order, then a slot's
//      grow_mu; the journal's locks (J4 in
//      persistence/dedup_journal.h) after any of them. purge_mu is
//      taken with none of them held.
//  X5. With a journal (durability journal), every read of the exact set
//      goes through it (its overlay holds what RocksDB does not have yet)
//      and every write is a journal commit, except Purge's deletes of
//      expired entries, which first flush the journal: everything logged
//      before the rotation is in RocksDB, everything after is live.
#ifndef SHARDFILTER_ENGINE_INTERNAL_DEDUP_CORE_H_
#define SHARDFILTER_ENGINE_INTERNAL_DEDUP_CORE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/engine/internal/dedup_ring.h"
#include "shardfilter/filters/detail/thread_stripe.h"
#include "shardfilter/persistence/dedup_journal.h"
#include "shardfilter/persistence/dedup_table.h"

namespace shardfilter::internal {

struct alignas(64) DedupStripe {
  std::mutex mu;
};

struct DedupCounters {
  // Bumped by every op of every thread: striped
  // (filters/detail/thread_stripe.h).
  ThreadStripedCount inserts, new_keys, duplicates;
  ThreadStripedCount removes, removed, lookups;
  ThreadStripedCount reads, avoided, false_positives;
  // Bumped by expiry and open only.
  std::atomic<uint64_t> expired_keys{0}, expired_partitions{0};
  std::atomic<uint64_t> loaded_keys{0}, open_ms{0};
};

// Holds a set of stripe locks, taken in ascending order, released at scope
// exit.
class StripeGuard {
 public:
  StripeGuard(DedupStripe* stripes, std::vector<uint32_t> ids);
  ~StripeGuard();
  StripeGuard(const StripeGuard&) = delete;
  StripeGuard& operator=(const StripeGuard&) = delete;

 private:
  DedupStripe* stripes_;
  std::vector<uint32_t> ids_;  // sorted, unique
};

class DedupCore {
 public:
  std::string name;
  persistence::DedupTable* table = nullptr;  // owned by the Store
  persistence::DedupWriteMode mode;
  Durability durability = Durability::kJournal;
  uint64_t ttl_ms = 0;       // 0: no expiry
  uint32_t partitions = 0;   // P (0 without TTL)
  uint64_t granularity = 0;  // g = ttl_ms / P
  uint64_t seed = kDefaultSeed;
  std::function<uint64_t()> clock;
  bool closed = false;  // set by Close (not concurrent with operations)
  // Unregisters the set from its Database's open sets (called by Close).
  std::function<void()> release;

  // Durability journal without a RocksDB write per call (null when the
  // set's durability is not journal or DedupOptions::journal_bytes is 0);
  // on a read-only store, a read-only view of what the log holds.
  std::unique_ptr<persistence::DedupJournal> journal;
  uint64_t replayed = 0;  // ops the journal's replay moved at Open

  std::unique_ptr<DedupRing> ring;
  mutable std::shared_mutex ring_mu;  // X2
  std::atomic<uint64_t> current{0};   // X2: written under ring_mu
  std::mutex purge_mu;                // one purge at a time
  uint64_t purged_until = 0;          // GUARDED_BY(purge_mu)
  std::unique_ptr<DedupStripe[]> stripes;
  uint32_t stripe_mask = 0;
  DedupCounters counters;

  bool ttl() const { return ttl_ms != 0; }
  uint64_t Hash(std::string_view key) const { return HashKey(key, seed); }
  uint32_t StripeOf(uint64_t hash) const {
    return static_cast<uint32_t>(Remix(hash)) & stripe_mask;
  }
  // X3, for a `current` value read under ring_mu.
  bool Live(uint64_t bucket, uint64_t cur) const {
    return !ttl() || bucket + partitions >= cur;
  }
  uint64_t Now() const { return clock(); }
  // The entry to store for a key inserted now: without TTL the compact
  // entry (insert time and bucket unused: 10-byte value instead of 26).
  persistence::DedupEntry EntryFor(uint64_t now, uint64_t cur) const {
    if (!ttl()) return {};
    return {now, cur};
  }
  // The bucket of the clock's time (0 without TTL).
  uint64_t ClockBucket() const { return ttl() ? Now() / granularity : 0; }

  // X5: the exact set's state of a key, and its writes.
  Result<std::optional<persistence::DedupEntry>> Get(std::string_view key);
  Status MultiGet(std::span<const std::string_view> keys,
                  std::vector<std::optional<persistence::DedupEntry>>* out);
  Status Commit(const std::vector<persistence::DedupOp>& ops);
  static persistence::DedupOp Op(persistence::DedupOp::Kind kind,
                                 std::string_view key,
                                 const persistence::DedupEntry& e,
                                 bool with_index) {
    return {kind, with_index, std::string(key), e};
  }

  Status CheckUsable(bool write) const;
  Status CheckKey(std::string_view key) const;
  // Advances `current` to the clock's bucket when it moved on, resetting
  // the slots that enter the window, then purges what left it.
  Status MaybeRotate();
  Status Rotate(uint64_t to);
  // Deletes the entries of buckets < below (X3) and their index keys.
  Result<uint64_t> Purge(uint64_t below);
  // Loads the live entries into the ring (Open).
  Status Load();

  Result<bool> InsertIfAbsent(std::string_view key);
  Result<bool> Contains(std::string_view key);
  Result<bool> Remove(std::string_view key);
  Status InsertBatch(std::span<const std::string_view> keys,
                     std::vector<uint8_t>* out);
  Status ContainsBatch(std::span<const std::string_view> keys,
                       std::vector<uint8_t>* out);
  Status RemoveBatch(std::span<const std::string_view> keys,
                     std::vector<uint8_t>* out);
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_DEDUP_CORE_H_
