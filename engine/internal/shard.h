// One shard of a ShardedFilter: its chain of filters ("links", see
// engine/internal/shard_chain.h) and its metadata, on their own cache lines
// so that writers of neighbouring shards never share one.
//
// Invariants (numbered; the code cites them):
//  S1. The chain only grows: links[i] (and capacity[i]; Shard::link(i),
//      capacity(i), stored as S10 says) is written once,
//      before `link_count` is raised above i with a release store, and is
//      neither replaced nor freed while the filter lives. Queries load
//      `link_count` (acquire) and use links[0 .. count) with no lock (Filter
//      implementations are concurrent); the acquire pairs with the growth's
//      release, so a reader that sees count n sees link n-1 fully constructed.
//  S2. Every mutation holds `mu` shared from before it changes the chain
//      until after its journal entry is written (or found unnecessary);
//      except the one-link add of an ordered shard without a journal
//      (ShardedFilter::TryFastOrderedAdd), which holds `order_mu` alone.
//      Every exclusive holder of an ordered shard's `mu` takes its
//      `order_mu` too, after it (ExclusiveShardLock), so that add is
//      excluded all the same. A checkpoint holds the shard exclusive
//      (LockExclusive) while it calls Serialize() and reads `last_seq`: so
//      every op with sequence <= that value is wholly in the copy and none
//      after it is (the exactly-once rule of replay).
//  S3. For counting and cuckoo filters (whose ops do not commute: a remove
//      may succeed only because of an earlier add), applying the op and
//      taking its sequence happen together under `order_mu`, so sequence
//      order is apply order and replay reproduces the state. Bloom adds
//      commute (bits only get set) and skip `order_mu`. Every writer of an
//      ordered shard's links holds `order_mu` (single-key and batch paths,
//      journalled or not; growth; or `mu` exclusive, or the shard not yet
//      shared), so a link has one writer at a time and the one-link add
//      skips the link's own stripe lock (ShardFastOrderedAdd).
//  S5. Checkpoints are not starved by mutations: the shard lock
//      (ShardMutex, engine/detail/shard_mutex.h) prefers writers, so once
//      a checkpoint wants it no new mutation gets in. A mutation already
//      holding other shards' locks may wait here: the checkpoint holds no
//      other lock of the filter (S4), so it always gets in. The ordered
//      one-link add, which does not take `mu`, gives way by itself: it
//      takes the slow path (which waits on `mu`) once a writer holds or
//      wants `mu` (ShardMutex::WriterPending), so the exclusive holder's
//      `order_mu` is free after the adds already past that check.
//  S4. Lock order: a batch takes the `mu` of its shards shared in ascending
//      shard order; `order_mu` is taken only while holding `mu`, one at a
//      time, or alone by the ordered one-link add (S2), which takes no
//      other lock while it holds it; `grow_mu` only while holding `mu`
//      (and, for ordered types, `order_mu`), never two at once; a
//      checkpoint holds one shard exclusive (`mu`, then an ordered shard's
//      `order_mu`) and nothing else of the filter's; Drop/Close take every
//      shard exclusive in ascending order.
//  S6. Growth (appending link n) happens under `mu` shared and `grow_mu`,
//      after re-checking that `link_count` is still n: two writers that both
//      find the newest link full append one link, not two. A checkpoint
//      (holding `mu` exclusive) therefore never sees a half-built chain.
//  S7. fill[i] counts the adds link i holds (minus removes from it for
//      counting and cuckoo filters; for a Bloom link 0, with its
//      unflushed adds, S9: Shard::Fill). An add reserves a unit of the
//      newest link's fill with a CAS that never exceeds the link's
//      capacity, so a link never holds more adds than it was sized for,
//      even when Bloom adds (which skip `order_mu`) race; except that a
//      Bloom link 0 may take one add more per owned thread stripe (S9),
//      which checkpoints do not record (ChainSerialize writes at most the
//      capacity, which decoding checks). Counting and cuckoo shards' fill
//      is written only under `order_mu` (S3: adds, removes, growth) or
//      before the shard is shared, so an add there may take its unit by a
//      load and a store once it has added (ShardFastOrderedAdd).
//  S8. Bloom: fill[i] counts distinct keys as far as the chain can tell. An
//      add of a key an older link reports present reserves nothing and
//      changes nothing (it is "already present"); an add of the newest
//      link that sets no new bit gives its reservation back; and within
//      kBloomReserveSlack of the newest link's capacity (or with none
//      left) the newest is asked before reserving. So repeated keys never
//      use capacity nor make the chain grow, and a repeated key's passing
//      reservation never makes a new key's add see a full link.
//  S9. A Bloom shard's link 0, far from full (ShardFastAdd: fill[0] more
//      than kBloomReserveSlack below the capacity, which is more than the
//      unflushed counts can hold), counts the adds of a thread that owns a
//      thread stripe (filters/detail/thread_stripe.h) in that stripe's
//      unflushed count (on lines allocated with the shard's fast path, Q1),
//      written only by its owner (a plain load and store, under `mu`
//      shared), and adds them to fill[0] kFillFlush at a time, fill[0]
//      first. So fill[0] plus the unflushed counts is the adds link 0
//      holds: exact under `mu` exclusive (no add runs), a figure otherwise,
//      too high (never too low) for the instant between a flush's two
//      stores. Every reader of link 0's fill reads that sum
//      (Shard::Fill), and ChainAdd reserves against the capacity less
//      the unflushed adds. An add that read fill[0] far from full and was
//      delayed past other adds that filled the link lands anyway: at most
//      one per stripe (each owner has one add in flight), the S7 excess.
//  S10. Links 1 .. kMaxLinks - 1 (their filters, capacities and fills) live
//      in `tail`, one block allocated by the shard's writer before it
//      writes link 1 (so before `link_count` is raised above 1, S1) and
//      freed only with the shard: never moved, never reallocated. A
//      reader that acquired a count above 1 sees the pointer and the
//      block's links below it; a reader of a one-link shard never looks
//      at it. So the lock-free readers of S1 never see a block freed or
//      replaced under them, and a one-link shard holds no per-link
//      arrays but link 0's (192 bytes in all on x86-64, not 1 KiB).
//  Q1. `fast` (the shard's ShardFastPath, engine/detail/shard_fast_path.h)
//      holds link 0's table only while the shard has that one link, a
//      split-block Bloom filter (or, as `counters`, a counting filter of
//      k <= 8), and the filter is not forwarded; growth clears it before
//      raising `link_count`.
#ifndef SHARDFILTER_ENGINE_INTERNAL_SHARD_H_
#define SHARDFILTER_ENGINE_INTERNAL_SHARD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>  // std::shared_lock
#include <thread>
#include <utility>  // std::exchange

#include "shardfilter/engine/detail/shard_fast_path.h"
#include "shardfilter/engine/detail/shard_mutex.h"
#include "shardfilter/filters/filter.h"

namespace shardfilter::internal {

class MemoryAccount;

// Links 1 .. kMaxLinks - 1 of a shard that has grown (S1, S10): their
// fills (S7), capacities and filters. A shard of one link, which most
// filters are, does not pay for 31 more.
struct alignas(64) LinkTail {
  std::atomic<uint64_t> fill[kMaxLinks - 1];  // fill[i] at i - 1 (C++20: 0)
  alignas(64) uint64_t capacity[kMaxLinks - 1] = {};
  std::unique_ptr<Filter> links[kMaxLinks - 1];
};

// The first line (ShardHead, engine/detail/shard_fast_path.h: the lock,
// the order lock, the sequence, the dirty flag and link 0's fill) is what
// every mutation writes; the read-mostly fields follow on lines of their
// own, so that queries do not miss on them either. Link 0 (its filter,
// capacity and fill) is held inline; links 1.. in `tail` (S10).
struct alignas(64) Shard : ShardHead {
  alignas(64) std::unique_ptr<Filter> link0;  // links[0], S1
  // links[0]->capacity(), written with link 0 (S1: before `link_count` is
  // raised above 0, constant afterwards), so that an add reads the newest
  // link's capacity without two virtual calls; the tail holds the later
  // links' the same way.
  uint64_t capacity0 = 0;
  std::atomic<uint32_t> link_count{0};  // S1
  std::mutex grow_mu;                   // S6
  // The filter's memory account (engine/internal/memory_account.h), charged
  // before growth allocates a link; null: growth is not accounted. Set
  // before the shard is shared, constant afterwards.
  MemoryAccount* account = nullptr;
  // This shard's entry of the filter's fast-path array (Q1). Set before
  // the shard is shared; null for shards outside a ShardedFilter.
  ShardFastPath* fast = nullptr;
  // A counting or cuckoo filter's shard (S3's ordered types): its exclusive
  // lock takes `order_mu` too (S2, LockExclusive). Set before the shard is
  // shared, constant afterwards.
  bool ordered = false;
  // The table bytes of link `sized_link` once computed (sizing searches
  // over k and is slow next to an add; an add refused by the budget asks
  // again for every key). GUARDED_BY(grow_mu).
  uint32_t sized_link = 0;
  uint64_t sized_bytes = 0;

  // Links 1.. (S10): null until the shard has a second link.
  std::unique_ptr<LinkTail> tail;

  // The links a query must consult (S1: acquire pairs with growth).
  uint32_t links_visible() const {
    return link_count.load(std::memory_order_acquire);
  }
  // links[i], its capacity and its fill (S7). REQUIRES: i < the link count
  // the caller loaded (S1), or i being installed by the shard's writer.
  Filter* link(uint32_t i) const {
    return i == 0 ? link0.get() : tail->links[i - 1].get();
  }
  uint64_t capacity(uint32_t i) const {
    return i == 0 ? capacity0 : tail->capacity[i - 1];
  }
  std::atomic<uint64_t>& fill(uint32_t i) {
    return i == 0 ? link0_fill : tail->fill[i - 1];
  }
  const std::atomic<uint64_t>& fill(uint32_t i) const {
    return i == 0 ? link0_fill : tail->fill[i - 1];
  }
  // The adds link i holds (S7, S8): fill[i], and for link 0 the adds not
  // yet flushed into it (S9). Exact under `mu` exclusive; otherwise a
  // figure. REQUIRES: as link(i).
  uint64_t Fill(uint32_t i) const {
    return i == 0 ? Link0Fill()
                  : tail->fill[i - 1].load(std::memory_order_relaxed);
  }
  // Writes link i, its capacity and its fill, before `link_count` is
  // raised above i (S1); the tail first, for i > 0 (S10). False, with
  // nothing changed, when the tail cannot be allocated. REQUIRES: the
  // shard's writer (grow_mu held, or the shard not yet shared).
  bool SetLink(uint32_t i, std::unique_ptr<Filter> f, uint64_t fill_now) {
    if (i > 0 && tail == nullptr) {
      tail.reset(new (std::nothrow) LinkTail);
      if (tail == nullptr) return false;
    }
    fill(i).store(fill_now, std::memory_order_relaxed);
    (i == 0 ? capacity0 : tail->capacity[i - 1]) = f->capacity();
    (i == 0 ? link0 : tail->links[i - 1]) = std::move(f);
    return true;
  }

  // The committed checkpoint, for Stats(): written by the checkpointer
  // (under the filter's checkpoint mutex), read by anyone; relaxed because
  // they are figures, not synchronisation.
  std::atomic<uint64_t> checkpoint_generation{0};
  std::atomic<uint64_t> checkpoint_sequence{0};
  std::atomic<uint64_t> checkpoint_bytes{0};
  // Records a committed checkpoint (recovery, a checkpoint, a migration's
  // or an import's install).
  void NoteCheckpoint(uint64_t generation, uint64_t sequence, uint64_t bytes) {
    checkpoint_generation.store(generation, std::memory_order_relaxed);
    checkpoint_sequence.store(sequence, std::memory_order_relaxed);
    checkpoint_bytes.store(bytes, std::memory_order_relaxed);
  }
};

// A mutation's shared lock on the shard (S2; S5: after any waiting
// checkpoint).
inline std::shared_lock<ShardMutex> LockShared(Shard& s) {
  return std::shared_lock<ShardMutex>(s.mu);
}

// The exclusive lock on a shard (S2, S5) of checkpoints, exports,
// migrations' switches and Drop/Close: `mu` exclusive and, for an ordered
// shard, its `order_mu` after it (S4). The one-link add of an ordered shard
// (ShardedFilter::TryFastOrderedAdd) holds `order_mu` alone, not `mu`
// shared, so it is this second lock that keeps such an add out of every
// exclusive section. Movable; std::unique_lock's owns_lock and unlock.
class ExclusiveShardLock {
 public:
  ExclusiveShardLock() = default;
  explicit ExclusiveShardLock(Shard& s) : s_(&s) {
    s.mu.lock();
    if (s.ordered) s.order_mu.lock();  // S4: under `mu`
  }
  ExclusiveShardLock(ExclusiveShardLock&& o) noexcept
      : s_(std::exchange(o.s_, nullptr)) {}
  ExclusiveShardLock& operator=(ExclusiveShardLock&& o) noexcept {
    if (this != &o) {
      if (s_ != nullptr) unlock();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  ExclusiveShardLock(const ExclusiveShardLock&) = delete;
  ExclusiveShardLock& operator=(const ExclusiveShardLock&) = delete;
  ~ExclusiveShardLock() {
    if (s_ != nullptr) unlock();
  }
  bool owns_lock() const { return s_ != nullptr; }
  // REQUIRES: owns_lock().
  void unlock() {
    if (s_->ordered) s_->order_mu.unlock();
    s_->mu.unlock();
    s_ = nullptr;
  }

 private:
  Shard* s_ = nullptr;
};
inline ExclusiveShardLock LockExclusive(Shard& s) {
  return ExclusiveShardLock(s);
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_SHARD_H_
