// Lock striping for the cuckoo filter: a power-of-two array of spinlocks
// (bucket i belongs to stripe (i / 8) & (stripes - 1): a stripe covers whole
// 8-bucket groups, whose words no other group shares, cuckoo_table.h),
// per-stripe item counters,
// and per-stripe "move versions" (seqlock counters) that let readers detect
// a concurrent displacement of a fingerprint between its two buckets.
//
// Thread-safe: every member may be called from any thread; the guards
// implement the lock order (ascending stripe index, duplicates taken once)
// that makes the filter deadlock-free. See cuckoo_filter.h for the full
// protocol and its numbered invariants.
#ifndef SHARDFILTER_FILTERS_DETAIL_CUCKOO_STRIPES_H_
#define SHARDFILTER_FILTERS_DETAIL_CUCKOO_STRIPES_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <utility>

#include "shardfilter/filters/detail/prefetch.h"
#include "shardfilter/filters/detail/spin.h"
#include "shardfilter/filters/detail/tsan.h"

namespace shardfilter::internal {

class CuckooStripes {
 public:
  // At most 1024 stripes: with two writers the chance that two concurrent
  // writes want the same stripe is ~2/1024, and the move versions (8 per
  // cache line, 8 KiB in all) stay in L1/L2 for the readers.
  static constexpr uint64_t kMaxStripes = 1024;

  CuckooStripes() = default;
  CuckooStripes(const CuckooStripes&) = delete;
  CuckooStripes& operator=(const CuckooStripes&) = delete;

  // Buckets per stripe unit; equals CuckooTable::kGroupBuckets.
  static constexpr unsigned kGroupShift = 3;

  // A stripe per kTableBytesPerStripe of table at most: a stripe costs a
  // line and a move version (72 B), so a small table's stripes stay under
  // 7% of it (a 1 KiB table has one; one per group would be 64, 4.6 KB).
  // Writers of a table
  // that small meet on its lines anyway, and the sharded engine serializes
  // a link's writers on its shard's order lock before they reach these.
  static constexpr uint64_t kTableBytesPerStripe = 1024;

  // For a table of `buckets` buckets and `table_bytes` bytes.
  bool Init(uint64_t buckets, uint64_t table_bytes) {
    const uint64_t groups = (buckets >> kGroupShift) + 1;
    const uint64_t by_bytes = std::bit_floor(
        std::max<uint64_t>(1, table_bytes / kTableBytesPerStripe));
    count_ = std::min({kMaxStripes, std::bit_ceil(groups), by_bytes});
    mask_ = count_ - 1;
    locks_.reset(new (std::nothrow) Stripe[count_]);
    versions_.reset(new (std::nothrow) std::atomic<uint64_t>[count_]);
    if (!locks_ || !versions_) return false;
    for (uint64_t s = 0; s < count_; ++s) {
      versions_[s].store(0, std::memory_order_relaxed);
    }
    return true;
  }

  uint64_t count() const { return count_; }
  uint64_t StripeOf(uint64_t bucket) const {
    return (bucket >> kGroupShift) & mask_;
  }

  // Test-and-test-and-set. acquire pairs with Unlock's release: everything
  // the previous holder wrote is visible to the next (invariant 1).
  // Uncontended: one locked exchange, inline.
  void Lock(uint64_t s) {
    std::atomic<uint32_t>& l = locks_[s].lock;
    if (l.exchange(1, std::memory_order_acquire) != 0) LockSlow(l);
  }
  void Unlock(uint64_t s) {
    locks_[s].lock.store(0, std::memory_order_release);
  }
  // Prefetches the lock's line for writing (its holder also writes the
  // counters there): overlaps the lock's miss with the buckets' misses.
  void PrefetchLock(uint64_t s) const { PrefetchWrite(&locks_[s]); }

  // --- Seqlock over moves (invariants 4-6 in cuckoo_filter.h). A move
  // between buckets a and b bumps versions_[min(StripeOf(a), StripeOf(b))]
  // only: the one word a reader of a key with buckets {a, b} checks. ---
  // Readers: PairVersions (below).
  // Under TSan, which does not model fences, both fences are empty and the
  // table's loads are acquires, a move's stores releases instead
  // (CuckooTable::kLoadOrder).
  static void ReadFence() {
    if constexpr (!kTsan) std::atomic_thread_fence(std::memory_order_acquire);
  }

  // Writer, REQUIRES: holds stripe s. Only lock holders write versions_[s],
  // so a plain load + store suffices (no read-modify-write).
  void MoveBegin(uint64_t s) {
    const uint64_t v = versions_[s].load(std::memory_order_relaxed);
    versions_[s].store(v + 1, std::memory_order_relaxed);
  }
  // Orders the odd versions before the data writes that follow (for a
  // reader that sees a data write and then fences, invariant 5).
  static void MoveFence() {
    if constexpr (kTsan) {
      TsanOpenReleaseWindow();  // the move's table stores are releases
    } else {
      std::atomic_thread_fence(std::memory_order_release);
    }
  }
  void MoveEnd(uint64_t s) {
    TsanCloseReleaseWindow();
    const uint64_t v = versions_[s].load(std::memory_order_relaxed);
    versions_[s].store(v + 1, std::memory_order_release);
  }

  // --- Counters, written only by the stripe's holder, read by anyone. ---
  // Adds and removes done while holding this stripe, each only ever
  // incremented: an op pays one load and store on the line it already
  // owns (the lock's). Items = adds - removes, deletes = removes, summed
  // over stripes in wrapping 64-bit arithmetic (exact; a stripe's own
  // difference means nothing, since a key's add and remove may count on
  // different stripes).
  void CountAdd(uint64_t s) { Bump(locks_[s].adds); }
  void CountRemove(uint64_t s) { Bump(locks_[s].removes); }
  // Only while no other thread touches the filter (Deserialize).
  void RestoreCounts(uint64_t items, uint64_t deletes) {
    locks_[0].adds.store(items + deletes, std::memory_order_relaxed);
    locks_[0].removes.store(deletes, std::memory_order_relaxed);
  }
  // Sums: exact when no writer runs (or under AllStripesLock).
  uint64_t Items() const {
    uint64_t adds = 0, removes = 0;
    for (uint64_t s = 0; s < count_; ++s) {
      adds += locks_[s].adds.load(std::memory_order_relaxed);
      removes += locks_[s].removes.load(std::memory_order_relaxed);
    }
    // Wrapping difference (exact even if a restored count wrapped adds).
    // A reader racing writers may see a remove before its add: a
    // "negative" (top bit set) result reads as 0.
    const uint64_t items = adds - removes;
    return items >> 63 ? 0 : items;
  }
  uint64_t Deletes() const {
    uint64_t n = 0;
    for (uint64_t s = 0; s < count_; ++s) {
      n += locks_[s].removes.load(std::memory_order_relaxed);
    }
    return n;
  }

 private:
  // Contended path: spin on plain loads (no line ping-pong), then retry.
  [[gnu::noinline]] static void LockSlow(std::atomic<uint32_t>& l) {
    for (uint32_t spins = 0;;) {
      while (l.load(std::memory_order_relaxed) != 0) {
        CpuRelax();
        // On a loaded 2-core machine the holder may be descheduled.
        if (++spins >= 256) {
          std::this_thread::yield();
          spins = 0;
        }
      }
      if (l.exchange(1, std::memory_order_acquire) == 0) return;
    }
  }

  // One stripe per cache line: the lock word and the counters its holder
  // updates share the line the holder already owns.
  struct alignas(64) Stripe {
    std::atomic<uint32_t> lock{0};
    std::atomic<uint64_t> adds{0};
    std::atomic<uint64_t> removes{0};
  };
  // The holder is the only writer: a plain load and store, no locked
  // read-modify-write.
  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  friend class PairVersions;

  uint64_t count_ = 0;
  uint64_t mask_ = 0;
  std::unique_ptr<Stripe[]> locks_;
  // Packed 8 per line on purpose: written only by displacements, read by
  // every query, so density (readers' cache footprint) matters more than
  // false sharing between movers.
  std::unique_ptr<std::atomic<uint64_t>[]> versions_;
};

// A query's seqlock over its two buckets (invariants 4-6 of
// cuckoo_filter.h): one version word, that of the lower of the buckets'
// two stripes, which every move between those two buckets bumps. Begin()
// before the bucket reads, then ReadFence(), then Valid(): two loads of one
// word per query.
class PairVersions {
 public:
  PairVersions(const CuckooStripes& st, uint64_t bucket1, uint64_t bucket2)
      : v_(&st.versions_[std::min(st.StripeOf(bucket1),
                                  st.StripeOf(bucket2))]) {}
  void Begin() { v1_ = v_->load(std::memory_order_acquire); }
  bool Valid() const {
    const uint64_t r1 = v_->load(std::memory_order_relaxed);
    return ((v1_ & 1) | (r1 ^ v1_)) == 0;
  }

 private:
  const std::atomic<uint64_t>* v_;
  uint64_t v1_ = 0;
};

// Holds one stripe (an add or remove that writes one bucket, invariant 7).
class OneStripeLock {
 public:
  OneStripeLock(CuckooStripes& st, uint64_t stripe) : st_(st), s_(stripe) {
    st_.Lock(s_);
  }
  ~OneStripeLock() { st_.Unlock(s_); }
  OneStripeLock(const OneStripeLock&) = delete;
  OneStripeLock& operator=(const OneStripeLock&) = delete;

 private:
  CuckooStripes& st_;
  uint64_t s_;
};

// OneStripeLock, or nothing for a caller that serializes the filter's
// writers itself (CuckooFilter::AddHashCappedSoleWriter).
template <bool kLock>
class MaybeStripeLock : public OneStripeLock {
  using OneStripeLock::OneStripeLock;
};
template <>
class MaybeStripeLock<false> {
 public:
  MaybeStripeLock(CuckooStripes&, uint64_t) {}
};

// Holds the stripes of two buckets, taken in ascending order, once each.
class TwoStripeLock {
 public:
  TwoStripeLock(CuckooStripes& st, uint64_t bucket_a, uint64_t bucket_b)
      : st_(st) {
    lo_ = st.StripeOf(bucket_a);
    hi_ = st.StripeOf(bucket_b);
    if (lo_ > hi_) std::swap(lo_, hi_);
    st_.Lock(lo_);
    if (hi_ != lo_) st_.Lock(hi_);
  }
  ~TwoStripeLock() {
    if (hi_ != lo_) st_.Unlock(hi_);
    st_.Unlock(lo_);
  }
  TwoStripeLock(const TwoStripeLock&) = delete;
  TwoStripeLock& operator=(const TwoStripeLock&) = delete;

  // Makes the move version of the pair's lower stripe odd, for a
  // displacement between the two buckets (invariant 4 of cuckoo_filter.h).
  void BeginMove() {
    st_.MoveBegin(lo_);
    CuckooStripes::MoveFence();
  }
  void EndMove() { st_.MoveEnd(lo_); }

 private:
  CuckooStripes& st_;
  uint64_t lo_;
  uint64_t hi_;
};

// All-stripes mode: every stripe, in ascending order (snapshot, exhaustive
// insert, resize). Excludes every writer; readers still run.
class AllStripesLock {
 public:
  explicit AllStripesLock(CuckooStripes& st) : st_(st) {
    for (uint64_t s = 0; s < st_.count(); ++s) st_.Lock(s);
  }
  ~AllStripesLock() {
    for (uint64_t s = st_.count(); s-- > 0;) st_.Unlock(s);
  }
  AllStripesLock(const AllStripesLock&) = delete;
  AllStripesLock& operator=(const AllStripesLock&) = delete;

 private:
  CuckooStripes& st_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_CUCKOO_STRIPES_H_
