// Per-thread stripes for statistics counters that every op of every thread
// bumps (a Bloom filter's `items`; the Database's journal counts and a
// dedup store's per-op counts), so that a bump is a plain load and store
// on a line only its thread writes, not a locked add, and two threads
// never pass one counter line back and forth (with locked adds, a perf
// profile of two threads adding to a journalled Bloom filter puts 22% of
// all samples on the journal counters; docs/performance.md, "Two
// threads").
//
// Ownership (the invariant the plain store needs): stripes 0 ..
// kOwnedStripes - 1 each belong to at most one live thread at a time,
// process-wide. A thread claims a free one at its first bump (out of line,
// filters/thread_stripe.cc) and gives it back when it ends; the owner is
// the only thread that writes that stripe of any counter, so its load and
// store lose nothing. Every other write goes to kSharedStripe with a
// locked add: threads beyond kOwnedStripes, a thread past its teardown,
// and writes that are nobody's own count (a union's or restore's
// adjustment: AddShared). A thread that found no free stripe keeps the
// shared one for its life. A forked child keeps its forking thread's
// stripe; those of the parent's other threads stay claimed (by no one)
// in it, which costs reuse, never exclusivity.
//
// Memory order: the counts order nothing (relaxed), except across an
// owner change: the ending owner's release of the stripe (its last
// stores before it) happens-before the next owner's claim (acquire), so
// the next owner's first load returns the last value. A reader's sum is a
// statistic: relaxed loads, concurrent bumps may or may not be in it.
//
// Measured (bloom_bench BM_Add, the raw split-block BloomFilter::Add),
// against a locked add on one of 16 stripes chosen by the key's hash, which
// two adding threads share: at 1e6 items two threads add 2.3x as fast (one
// thread 1.16x), at 5e7 1.6x (one thread 1.08x); docs/performance.md, "Two
// threads".
#ifndef SHARDFILTER_FILTERS_DETAIL_THREAD_STRIPE_H_
#define SHARDFILTER_FILTERS_DETAIL_THREAD_STRIPE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace shardfilter::internal {

inline constexpr uint32_t kOwnedStripes = 16;
inline constexpr uint32_t kSharedStripe = kOwnedStripes;
inline constexpr uint32_t kCounterStripes = kOwnedStripes + 1;

// This thread's stripe: UINT32_MAX until its first bump claims one (or
// kSharedStripe when none is free), kSharedStripe again after its
// teardown. Plain TLS (a constant initialiser: no wrapper call), read by
// callers' code through the inline bumps, as tls_reader_slot
// (engine/detail/shard_mutex.h) is.
extern __thread uint32_t tls_counter_stripe;
// Claims a free owned stripe for this thread (kSharedStripe when none is
// free) and registers its release at the thread's end. Out of line.
uint32_t ClaimCounterStripe();

inline uint32_t ThisThreadStripe() {
  const uint32_t s = tls_counter_stripe;
  if (s <= kSharedStripe) [[likely]] {
    return s;
  }
  return ClaimCounterStripe();
}

// kN counters striped over kCounterStripes stripes: stripe s holds every
// counter's share of the bumps of stripe s's owner, on a line (or lines)
// of its own. Not copyable (atomics).
template <size_t kN>
class ThreadStripedCounts {
 public:
  ThreadStripedCounts() = default;
  ThreadStripedCounts(const ThreadStripedCounts&) = delete;
  ThreadStripedCounts& operator=(const ThreadStripedCounts&) = delete;

  // This thread's own count of counter i: a plain load and store on its
  // stripe (the owner is its only writer), a locked add on the shared one.
  void Add(size_t i, uint64_t n) {
    const uint32_t s = ThisThreadStripe();
    if (s < kOwnedStripes) [[likely]] {
      std::atomic<uint64_t>& c = stripes_[s].n[i];
      c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    } else {
      AddShared(i, n);
    }
  }
  // A write that is not the calling thread's own count (any thread, any
  // time): always the shared stripe's locked add.
  void AddShared(size_t i, uint64_t n) {
    stripes_[kSharedStripe].n[i].fetch_add(n, std::memory_order_relaxed);
  }
  // Sets counter i's total to v. REQUIRES: no other thread touches the
  // counter (an object being made: decode, fold).
  void Reset(size_t i, uint64_t v) {
    for (Stripe& s : stripes_) s.n[i].store(0, std::memory_order_relaxed);
    stripes_[kSharedStripe].n[i].store(v, std::memory_order_relaxed);
  }
  // Counter i's sum, in wrapping arithmetic (exact when no bump runs).
  uint64_t Load(size_t i) const {
    uint64_t total = 0;
    for (const Stripe& s : stripes_) {
      total += s.n[i].load(std::memory_order_relaxed);
    }
    return total;
  }

 private:
  struct alignas(64) Stripe {
    std::array<std::atomic<uint64_t>, kN> n{};
  };
  Stripe stripes_[kCounterStripes];
};

// One counter.
class ThreadStripedCount {
 public:
  void Add(uint64_t n) { c_.Add(0, n); }
  void AddShared(uint64_t n) { c_.AddShared(0, n); }
  void Reset(uint64_t v) { c_.Reset(0, v); }
  uint64_t Load() const { return c_.Load(0); }

 private:
  ThreadStripedCounts<1> c_;
};

// One counter, striped over kCounterStripes lines (1,088 B, as a
// ThreadStripedCount) only when its owner asks for it: where concurrent
// bumps are frequent enough that one word's line passing between cores
// costs more than the stripes' memory. Otherwise one word, every bump a
// locked add (the shared stripe's path: no owned stripe is below
// `owned_` = 0). The total is exact either way. Stripes that cannot be
// allocated leave the one word: slower under contention, never wrong.
class OptionalStripedCount {
 public:
  explicit OptionalStripedCount(bool striped)
      : stripes_(striped ? new (std::nothrow) Stripe[kCounterStripes]
                         : nullptr),
        owned_(stripes_ != nullptr ? kOwnedStripes : 0) {}
  OptionalStripedCount(const OptionalStripedCount&) = delete;
  OptionalStripedCount& operator=(const OptionalStripedCount&) = delete;

  // As ThreadStripedCounts::Add: the owner's plain load and store on its
  // stripe when striped, a locked add otherwise. One comparison decides:
  // a thread's stripe below `owned_` is an owned one (tls_counter_stripe
  // is UINT32_MAX before its claim, kSharedStripe without a stripe).
  void Add(uint64_t n) {
    const uint32_t s = tls_counter_stripe;
    if (s < owned_) [[likely]] {
      BumpOwned(s, n);
    } else {
      AddUnowned(n);
    }
  }
  void AddShared(uint64_t n) {
    Shared().fetch_add(n, std::memory_order_relaxed);
  }
  // REQUIRES: as ThreadStripedCounts::Reset (no other thread touches it).
  void Reset(uint64_t v) {
    for (uint32_t s = 0; s < owned_; ++s) {
      stripes_[s].n.store(0, std::memory_order_relaxed);
    }
    Shared().store(v, std::memory_order_relaxed);
  }
  uint64_t Load() const {
    uint64_t total = 0;
    for (uint32_t s = 0; s < owned_; ++s) {
      total += stripes_[s].n.load(std::memory_order_relaxed);
    }
    return total + Shared().load(std::memory_order_relaxed);
  }
  bool striped() const { return owned_ != 0; }

 private:
  struct alignas(64) Stripe {
    std::atomic<uint64_t> n{0};
  };
  // REQUIRES: s < owned_, the calling thread's stripe.
  void BumpOwned(uint32_t s, uint64_t n) {
    std::atomic<uint64_t>& c = stripes_[s].n;
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Not striped, or a thread without a stripe yet: when striped, it
  // claims one now.
  void AddUnowned(uint64_t n) {
    if (owned_ != 0) {
      const uint32_t s = ThisThreadStripe();
      if (s < owned_) {
        BumpOwned(s, n);
        return;
      }
    }
    AddShared(n);
  }
  std::atomic<uint64_t>& Shared() {
    return owned_ != 0 ? stripes_[kSharedStripe].n : one_;
  }
  const std::atomic<uint64_t>& Shared() const {
    return owned_ != 0 ? stripes_[kSharedStripe].n : one_;
  }

  const std::unique_ptr<Stripe[]> stripes_;  // kCounterStripes, or null
  const uint32_t owned_;                     // kOwnedStripes, or 0
  std::atomic<uint64_t> one_{0};             // the count when not striped
};

// Owned stripes claimed by live threads now (for tests).
uint32_t ClaimedCounterStripes();

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_THREAD_STRIPE_H_
