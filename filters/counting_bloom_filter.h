// CountingBloomFilter: a concurrent blocked counting Bloom filter (adds,
// removes, counts) over 64-bit key hashes.
//
// Layout: 4-bit counters, 128 per 64-byte cache line; all k counters of a
// key in one line (scalar kernels in filters/detail/bloom_kernels.h,
// AVX2 ones for k <= 8 in filters/detail/counting_simd.h: the same
// counters). Sized by BlockedBloomSizing(n, p, k, 128, max_bytes): at
// p = 1% 44.4 bits/item (k = 6; measured FPR 0.935%), about four times a
// plain blocked Bloom filter, the price of deletes. Counters saturate at 15
// and then stay there (sticky): a saturated counter is never decremented,
// since its true value is unknown, so a key never becomes a false negative
// through overflow (it may stay a false positive after all its copies are
// removed).
//
// Thread safety: every method may run concurrently with every other (but
// the ...SoleWriter adds, whose callers exclude every other writer).
// Writers (add, remove) lock the stripe of the key's block: stripe =
// block index mod S (S a power of two, at most 1024, each stripe a spinlock
// on its own cache line), so a key's whole update (its k counters, across
// several words) is atomic with respect to other writers. Locking order:
// a thread holds at most one stripe at a time; batches take and release
// stripes key by key; nothing else is locked. Hence no deadlock.
// Readers (MayContain, Count, Stats, Serialize) take no lock: they load
// table words with relaxed atomics. Writers replace whole words, so a
// reader never sees a torn counter, and every add acknowledged before the
// query (by the caller's synchronization) is in the word the reader loads
// (coherence). Counters only go down through removes, and a remove only
// takes back a copy that an add put in (or a false positive's, the caveat
// of Filter::RemoveHash), so a reader never sees a counter below the number
// of acknowledged, not-removed adds of the keys touching it, capped at 15.
// During an in-flight add or remove, a reader may see some of its words
// updated and not others; such an operation is not acknowledged yet.
// Stats() and Serialize() are exact only when no writer runs.
//
// Serialized format: docs/format-bloom.md (envelope type kCountingBloom,
// version 1).
#ifndef SHARDFILTER_FILTERS_COUNTING_BLOOM_FILTER_H_
#define SHARDFILTER_FILTERS_COUNTING_BLOOM_FILTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "shardfilter/filters/detail/atomic_table.h"
#include "shardfilter/filters/detail/bloom_kernels.h"
#include "shardfilter/filters/detail/counting_simd.h"
#include "shardfilter/filters/detail/prefetch.h"
#include "shardfilter/filters/detail/spin.h"
#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/sizing.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

struct CountingBloomOptions {
  // Distinct keys held at once that the filter is sized for. Required.
  uint64_t capacity = 0;
  // False-positive rate promised at capacity, in (0, 1). Default 1%.
  double fpp = 0.01;
  // Counters per key: 0 (default) = the k needing the least memory; else
  // 1..32, with the table sized so that fpp still holds.
  uint32_t k = 0;
  // Hash seed, stored in the format.
  uint64_t seed = kDefaultSeed;
  // Upper bound on the table's bytes (InvalidArgument beyond). 64 GiB.
  uint64_t max_bytes = kDefaultMaxFilterBytes;
};

class CountingBloomFilter final : public Filter {
 public:
  // InvalidArgument for capacity 0, fpp outside (0, 1) or NaN, k > 32, or a
  // table over max_bytes (or 2^32 blocks).
  static Result<std::unique_ptr<CountingBloomFilter>> Create(
      const CountingBloomOptions& options);
  // The bytes of the table Create(options) would allocate, without
  // allocating; Create's errors otherwise.
  static Result<uint64_t> TableBytes(const CountingBloomOptions& options);
  // As BloomFilter::Deserialize, for envelope type kCountingBloom.
  static Result<std::unique_ptr<CountingBloomFilter>> Deserialize(
      std::string_view bytes);

  CountingBloomFilter(const CountingBloomFilter&) = delete;
  CountingBloomFilter& operator=(const CountingBloomFilter&) = delete;
  ~CountingBloomFilter() override = default;

  // ---- Filter -------------------------------------------------------------
  FilterType type() const override { return FilterType::kCountingBloom; }
  uint64_t seed() const override { return seed_; }
  uint64_t capacity() const override { return capacity_; }
  double target_fpr() const override { return fpp_; }

  Status AddHash(uint64_t hash) override;  // always OK (saturates)
  // NotFound, changing nothing, when one of the key's counters is 0.
  Status RemoveHash(uint64_t hash) override;
  bool MayContainHash(uint64_t hash) const override;
  uint32_t CountHash(uint64_t hash) const override;  // min counter, <= 15
  // The count and the add inline, one virtual call (Filter's REQUIRES).
  Status AddHashCapped(uint64_t hash, uint32_t max_copies,
                       uint32_t* held) override;
  Status AddHashes(std::span<const uint64_t> hashes, size_t* added) override;
  void PrefetchHash(uint64_t hash, bool for_write) const override {
    Prefetch(hash, for_write);
  }
  void MayContainHashes(std::span<const uint64_t> hashes,
                        std::span<uint8_t> out) const override;
  FilterStats Stats() const override;
  FilterStats Counts() const override;
  std::string Serialize() const override;
  // Same k, seed, capacity, fpp, size and counters; statistics (items,
  // deletes) are not compared.
  bool Equals(const Filter& other) const override;

  // ---- Non-virtual fast paths ----------------------------------------------
  // The writers prefetch the block before the stripe lock: the lock's
  // locked exchange waits for the previous writer's stores (and their
  // block's miss), a prefetch does not, so consecutive adds' misses overlap.
  // PrefetchAdd is that prefetch alone, for owners that take locks of
  // their own first (the sharded engine's inline add).
  void PrefetchAdd(uint64_t h) const { internal::PrefetchWrite(BlockFor(h)); }
  // The block of counters the key's ops read and write (constant for the
  // filter's life), for an owner that computes it once, before its own
  // locks (AddToBlockUnlessSaturatedSoleWriter).
  std::atomic<uint64_t>* BlockFor(uint64_t h) const {
    return BlockAt(internal::BlockIndex(h, num_blocks_));
  }
  void AddHashInline(uint64_t h) {
    const uint64_t b = internal::BlockIndex(h, num_blocks_);
    Stripe& s = stripes_[b & stripe_mask_];
    internal::PrefetchWrite(BlockAt(b));
    s.lock.lock();
    IncrementLocked(BlockAt(b), static_cast<uint32_t>(h));
    CountLocked(s.adds);
    s.lock.unlock();
  }
  // False (nothing changed) when the key is definitely absent.
  bool RemoveHashInline(uint64_t h) {
    const uint64_t b = internal::BlockIndex(h, num_blocks_);
    Stripe& s = stripes_[b & stripe_mask_];
    internal::PrefetchWrite(BlockAt(b));
    s.lock.lock();
    const bool removed = DecrementLocked(BlockAt(b), static_cast<uint32_t>(h));
    if (removed) CountLocked(s.removes);
    s.lock.unlock();
    return removed;
  }
  // AddHashCapped without its Status, inline: true when added; false, with
  // nothing changed, when the key already holds `max_copies` copies. Either
  // way *held is the key's count before the call.
  bool AddHashCappedInline(uint64_t h, uint32_t max_copies, uint32_t* held) {
    const uint64_t b = internal::BlockIndex(h, num_blocks_);
    Stripe& s = stripes_[b & stripe_mask_];
    internal::PrefetchWrite(BlockAt(b));
    s.lock.lock();
    const bool added = CappedAddLocked(b, s, h, max_copies, held);
    s.lock.unlock();
    return added;
  }
  // AddHashCappedInline without the stripe lock, for an owner that
  // serializes every writer of this filter itself (the lock's only work is
  // to exclude other writers): counted on stripe 0. REQUIRES: as
  // AddHashUnlessSaturatedSoleWriter's, below, which the sharded engine
  // calls (its cap is the counters' own).
  bool AddHashCappedSoleWriter(uint64_t h, uint32_t max_copies,
                               uint32_t* held) {
    return CappedAddLocked(internal::BlockIndex(h, num_blocks_), stripes_[0], h,
                           max_copies, held);
  }
  // AddHashCappedInline at the cap the counters themselves keep
  // (max_copies = kCounterMax, 15) and without the stripe lock, for an owner
  // that serializes every writer of this filter itself (the sharded engine's
  // one-link shard add: each writer of an ordered shard's link holds the
  // shard's order_mu, S3, engine/detail/shard_fast_path.h); the lock's only
  // work is to exclude other writers. True when added; false, with nothing
  // changed, when every one of the key's counters is saturated, which is
  // exactly when their minimum (the key's count) is 15. So it is the add
  // itself plus a test of what it added: the capped add's read of the key's
  // counters and their minimum before it (a permute, shifts, three min
  // steps) are not needed to refuse a key at 15 copies. REQUIRES: no other
  // thread writes this filter during the call, and every earlier write
  // happened before it (a lock the writers share). Counted on stripe 0
  // (Counts() sums every stripe's counters): one line that stays in cache,
  // where the block's own stripe is a random one of up to 1024 lines (64
  // KiB per filter, 1 MiB for 16 shards' links).
  bool AddHashUnlessSaturatedSoleWriter(uint64_t h) {
    return AddToBlockUnlessSaturatedSoleWriter(BlockFor(h), h);
  }
  // AddHashUnlessSaturatedSoleWriter with the key's block given, as
  // BlockFor(h) returned it (REQUIRED, and as that call's REQUIRES).
  bool AddToBlockUnlessSaturatedSoleWriter(std::atomic<uint64_t>* block,
                                           uint64_t h) {
    if (!IncrementLocked(block, static_cast<uint32_t>(h))) return false;
    CountLocked(stripes_[0].adds);
    return true;
  }
  uint32_t CountHashInline(uint64_t h) const {
    return internal::CounterMin(BlockAt(internal::BlockIndex(h, num_blocks_)),
                                static_cast<uint32_t>(h), k_);
  }
  bool MayContainHashInline(uint64_t h) const {
    if constexpr (kTableQuery) {
      if (k_ <= 8) [[likely]] {
        return MayContainInTable(table_.data(), num_blocks_, lane_mult_, k_, h);
      }
    }
    return CountHashInline(h) != 0;
  }

  // The query's vector kernel on its own (filters/detail/counting_simd.h),
  // for a filter of k <= 8 given its table, block count, lane multipliers
  // and k (table_data(), num_blocks(), lane_multipliers(), k()): what
  // MayContainHashInline runs, and what a sharded filter's handle runs
  // from its shard's fast path without loading the filter
  // (engine/detail/shard_fast_path.h, Q1). Only where kTableQuery (a
  // vector kernel, inline or dispatched: the dispatched one's scalar
  // fallback, on a CPU without AVX2, needs k).
  static constexpr bool kTableQuery =
      SHARDFILTER_COUNTING_AVX512_INLINE || SHARDFILTER_SPLIT_AVX2;
  [[gnu::always_inline]] static bool MayContainInTable(
      const std::atomic<uint64_t>* table, uint64_t num_blocks,
      const uint32_t* mult, [[maybe_unused]] uint32_t k, uint64_t h) {
    const std::atomic<uint64_t>* block =
        table + internal::BlockIndex(h, num_blocks) * internal::kBlockWords;
#if SHARDFILTER_COUNTING_AVX512_INLINE
    return internal::CountersNonZeroAvx512(block, mult,
                                           static_cast<uint32_t>(h));
#elif SHARDFILTER_SPLIT_AVX2_INLINE
    return internal::CountersNonZeroAvx2(block, mult, static_cast<uint32_t>(h));
#elif SHARDFILTER_SPLIT_AVX2
    return internal::CountersNonZeroDispatch(block, mult,
                                             static_cast<uint32_t>(h), k);
#else
    (void)block, (void)mult;
    return true;  // never called (kTableQuery is false)
#endif
  }
  const std::atomic<uint64_t>* table_data() const { return table_.data(); }
  const uint32_t* lane_multipliers() const { return lane_mult_; }

  void Add(std::string_view key) { AddHashInline(hasher_(key)); }
  bool Remove(std::string_view key) { return RemoveHashInline(hasher_(key)); }
  bool MayContain(std::string_view key) const {
    return MayContainHashInline(hasher_(key));
  }
  uint32_t Count(std::string_view key) const {
    return CountHashInline(hasher_(key));
  }
  void AddKeys(std::span<const std::string_view> keys);
  // REQUIRES: out.size() == keys.size() (only the common prefix is done).
  void MayContainKeys(std::span<const std::string_view> keys,
                      std::span<uint8_t> out) const;

  uint32_t k() const { return k_; }
  uint64_t num_blocks() const { return num_blocks_; }
  uint64_t num_counters() const {
    return num_blocks_ * internal::kCountersPerBlock;
  }
  uint64_t num_bytes() const { return num_blocks_ * internal::kBlockBytes; }
  size_t num_stripes() const { return stripe_mask_ + 1; }

 private:
  struct alignas(64) Stripe {
    internal::SpinLock lock;           // filters/detail/spin.h
    std::atomic<uint64_t> adds{0};     // GUARDED_BY(lock) for writes
    std::atomic<uint64_t> removes{0};  // GUARDED_BY(lock) for writes
  };
  static constexpr uint64_t kMaxStripes = 1024;
  // At most one stripe (a line) per this many bytes of table, so that a
  // small table's stripes stay under 7% of it (one per 64-byte block would
  // make them as large as the table). Writers of a table that small meet on its
  // lines anyway; the sharded engine serializes a link's writers on its
  // shard's order lock (S3) before they reach these.
  static constexpr uint64_t kTableBytesPerStripe = 1024;
  // A power of two (the stripe of block b is b & (count - 1)).
  static uint64_t StripeCount(uint64_t num_blocks);

  CountingBloomFilter(uint32_t k, uint64_t seed, uint64_t capacity, double fpp,
                      uint64_t num_blocks);

  std::atomic<uint64_t>* BlockAt(uint64_t b) const {
    return table_.data() + b * internal::kBlockWords;
  }
  // AddHashCappedInline's work under the lock (or with writers excluded
  // otherwise): block b, counted on stripe s.
  bool CappedAddLocked(uint64_t b, Stripe& s, uint64_t h, uint32_t max_copies,
                       uint32_t* held) {
    const uint32_t min =
        IncrementCappedLocked(BlockAt(b), static_cast<uint32_t>(h), max_copies);
    const bool added = min < max_copies;
    if (added) CountLocked(s.adds);
    *held = min;
    return added;
  }
  // Guarded by the stripe's lock; atomic only so that Stats() may read it
  // unlocked.
  static void CountLocked(std::atomic<uint64_t>& n) {
    n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // The key's update of `block`, REQUIRES its stripe lock held: the
  // AVX-512 or AVX2 kernels of internal/counting_simd.h for k <= 8 (inline
  // in a build for those extensions, the AVX2 ones through one indirect
  // call in the portable one), else the scalar loops of
  // internal/bloom_kernels.h; the same counters either way. False when
  // every one of the key's counters was saturated (nothing changed).
  bool IncrementLocked(std::atomic<uint64_t>* block, uint32_t h32) const {
#if SHARDFILTER_COUNTING_AVX512_INLINE
    if (k_ <= 8) [[likely]] {
      return internal::CountersAddAvx512(block, lane_mult_, h32);
    }
#elif SHARDFILTER_SPLIT_AVX2_INLINE
    if (k_ <= 8) [[likely]] {
      return internal::CountersAddAvx2(block, lane_mult_, h32);
    }
#elif SHARDFILTER_SPLIT_AVX2
    if (k_ <= 8) [[likely]] {
      return internal::g_counters_add_kernel.load(std::memory_order_relaxed)(
          block, lane_mult_, h32, k_);
    }
#endif
    uint64_t masks[internal::kBlockWords];
    internal::CounterMasks(h32, k_, masks);
    return internal::CounterIncrementLocked(block, masks);
  }
  bool DecrementLocked(std::atomic<uint64_t>* block, uint32_t h32) const {
#if SHARDFILTER_COUNTING_AVX512_INLINE
    if (k_ <= 8) [[likely]] {
      return internal::CountersRemoveAvx512(block, lane_mult_, h32);
    }
#elif SHARDFILTER_SPLIT_AVX2_INLINE
    if (k_ <= 8) [[likely]] {
      return internal::CountersRemoveAvx2(block, lane_mult_, h32);
    }
#elif SHARDFILTER_SPLIT_AVX2
    if (k_ <= 8) [[likely]] {
      return internal::g_counters_remove_kernel.load(std::memory_order_relaxed)(
          block, lane_mult_, h32, k_);
    }
#endif
    uint64_t masks[internal::kBlockWords];
    internal::CounterMasks(h32, k_, masks);
    return internal::CounterDecrementLocked(block, masks);
  }
  // Returns the minimum of the key's counters; adds one to them iff it is
  // below `cap`.
  uint32_t IncrementCappedLocked(std::atomic<uint64_t>* block, uint32_t h32,
                                 uint32_t cap) const {
#if SHARDFILTER_COUNTING_AVX512_INLINE
    if (k_ <= 8) [[likely]] {
      return internal::CountersAddCappedAvx512(block, lane_mult_, h32, cap);
    }
#elif SHARDFILTER_SPLIT_AVX2_INLINE
    if (k_ <= 8) [[likely]] {
      return internal::CountersAddCappedAvx2(block, lane_mult_, h32, cap);
    }
#elif SHARDFILTER_SPLIT_AVX2
    if (k_ <= 8) [[likely]] {
      return internal::g_counters_add_capped_kernel.load(
          std::memory_order_relaxed)(block, lane_mult_, h32, k_, cap);
    }
#endif
    uint64_t masks[internal::kBlockWords];
    const uint32_t min = internal::CounterMasksAndMin(block, h32, k_, masks);
    if (min < cap) internal::CounterIncrementLocked(block, masks);
    return min;
  }
  friend struct internal::BatchOps;  // Prefetch
  void Prefetch(uint64_t h, bool write) const;
  // The batch queries' prefetch (into L2: internal/prefetch.h).
  void PrefetchBatchQuery(uint64_t h) const {
    internal::PrefetchReadL2(BlockAt(internal::BlockIndex(h, num_blocks_)));
  }

  // The AVX2 query's lane multipliers (internal/counting_simd.h): the
  // key's k, then lane 0's again.
  alignas(32) uint32_t lane_mult_[8];
  const uint32_t k_;
  const uint64_t seed_;
  const KeyHasher hasher_;  // Hash(), the seed's share precomputed
  const uint64_t capacity_;
  const double fpp_;
  const uint64_t num_blocks_;
  const uint64_t stripe_mask_;
  internal::AtomicWordTable table_;
  std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_COUNTING_BLOOM_FILTER_H_
