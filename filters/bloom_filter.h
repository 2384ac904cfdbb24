// BloomFilter: a concurrent, lock-free Bloom filter over 64-bit key hashes.
//
// Three layouts (stored in the serialized format):
//  * kSplitBlock: 256-bit blocks of eight 32-bit lanes, one bit per lane
//    (k = 8; filters/detail/split_block.h): the cheapest probe, one
//    vector multiply and test in an AVX2 build (~14 instructions per query
//    with the caller's loop, against ~65 for kBlocked), for ~3% more memory
//    than kBlocked at 1% (10.53 bits/item) and ~7% at 0.1%.
//  * kBlocked: all k bits of a key in one 64-byte cache line, so a
//    query or add costs exactly one cache miss, and within the line in only
//    s = 2 of its 8 words for k = 2..8 (s = ceil(k/4) beyond): an add is s
//    atomic ORs, a query s loads. Sized by WordBlockedBloomSizing
//    (filters/sizing.h) so that the promised rate holds at capacity: at
//    p = 1% 10.18 bits/item (k = 6) against 9.59 for classic and the
//    log2(1/p) = 6.64 lower bound; at 0.1% 15.78 (k = 9, s = 3) against
//    14.4. Measured FPR at capacity (tests/bloom_filter_test.cc, 2e5 items,
//    1e6 absent keys): 0.995% at 1%, 0.1025% at 0.1% (sigma 0.003%): the
//    model is exact, not a bound, so the rate sits at the target. Measured
//    on a 2-core Zen VM at 5e7 items (bench/bloom_bench.cc, hashing
//    included): add 77 ns one at a time (each locked OR is a full barrier,
//    so one add's DRAM miss cannot overlap the next one's), 18.6 ns
//    batched; absent query 54 ns, 13.9 batched.
//  * kClassic: k positions over the whole array (k cache misses per probe on
//    a large filter), m = max(ClassicBloomBits, bits for the chosen k).
// Bit kernels live in filters/detail/bloom_kernels.h.
//
// Thread safety: every method may run concurrently with every other. The
// table is std::atomic<uint64_t> words; adds are atomic ORs and queries are
// relaxed loads, so there is no lock and no torn state, and no acknowledged
// add is ever lost (bits are never cleared). A query in thread B sees an add
// acknowledged by thread A when A's acknowledgement happens-before B's query
// (the caller's own synchronization: a mutex, a queue, a join...). Stats()
// and Serialize() are exact only when no add runs concurrently; with
// concurrent adds, each word is a consistent snapshot, and an add is wholly
// in a later word snapshot once wholly in an earlier one.
//
// BloomOptions' default, kAuto, picks kSplitBlock where it needs at most 5%
// more memory than kBlocked (rates from about 0.23% to 1.9%), else kBlocked.
//
// Serialized format: docs/format-bloom.md (envelope type kBloom, version 1;
// version 2 for kSplitBlock filters).
#ifndef SHARDFILTER_FILTERS_BLOOM_FILTER_H_
#define SHARDFILTER_FILTERS_BLOOM_FILTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "shardfilter/filters/detail/atomic_table.h"
#include "shardfilter/filters/detail/bloom_kernels.h"
#include "shardfilter/filters/detail/split_block.h"
#include "shardfilter/filters/detail/thread_stripe.h"
#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/sizing.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

// The layout kAuto resolves to for (capacity, fpp): kSplitBlock when its
// table is at most 5% larger than kBlocked's, else kBlocked. `k` other than
// 0 or 8 means kBlocked (the split-block layout sets 8 bits).
BloomLayout ResolveBloomLayout(uint64_t capacity, double fpp, uint32_t k,
                               uint64_t max_bytes);

struct BloomOptions {
  // Number of distinct keys the filter is sized for. Required (> 0). Past
  // capacity the filter keeps working but its FPR climbs above `fpp`.
  uint64_t capacity = 0;
  // False-positive rate promised at capacity, in (0, 1). Default 1%. Each
  // 10x lower costs ~4.8 bits/item (blocked) and ~3 more hash probes.
  double fpp = 0.01;
  // kSplitBlock: one cache miss, the fewest instructions per call, up to 4
  // atomic ORs per add, ~10% more memory than classic at 1%.
  // kBlocked: one cache miss and 2 atomic ORs per add (k <= 8), ~6% more
  // memory than classic at 1%.
  // kClassic: least memory for the rate, k misses per operation.
  // kAuto (default): ResolveBloomLayout.
  BloomLayout layout = BloomLayout::kAuto;
  // Bits set per key. 0 (default) picks the k that needs the least memory
  // for (capacity, fpp) in the chosen layout (kSplitBlock: always 8; any
  // other k is InvalidArgument there). 1..32 forces k; the table is
  // then sized so that fpp still holds, which costs memory away from the
  // optimum. Each probe costs ~1 ns in cache; users tune 3..17.
  uint32_t k = 0;
  // Hash seed (HashKey(key, seed)); stored in the format. Filters to be
  // unioned must share it.
  uint64_t seed = kDefaultSeed;
  // Upper bound on the table's bytes: larger requests fail with
  // InvalidArgument instead of allocating. Default 64 GiB.
  uint64_t max_bytes = kDefaultMaxFilterBytes;
};

class BloomFilter final : public Filter {
 public:
  // InvalidArgument for capacity 0, fpp outside (0, 1) or NaN, k > 32, or a
  // table larger than max_bytes (or than 2^32 blocks).
  static Result<std::unique_ptr<BloomFilter>> Create(
      const BloomOptions& options);
  // The bytes of the table Create(options) would allocate, without
  // allocating (memory budgets check it first); Create's errors otherwise.
  static Result<uint64_t> TableBytes(const BloomOptions& options);
  // Decodes Serialize() output (the whole envelope). InvalidArgument for
  // foreign bytes, WrongType for another filter type, NotSupported for a
  // future version, Corruption for anything inconsistent.
  static Result<std::unique_ptr<BloomFilter>> Deserialize(
      std::string_view bytes);

  BloomFilter(const BloomFilter&) = delete;
  BloomFilter& operator=(const BloomFilter&) = delete;
  ~BloomFilter() override = default;

  // ---- Filter -------------------------------------------------------------
  FilterType type() const override { return FilterType::kBloom; }
  uint64_t seed() const override { return seed_; }
  uint64_t capacity() const override { return capacity_; }
  double target_fpr() const override { return fpp_; }

  Status AddHash(uint64_t hash) override;
  // Always NotSupported: bits cannot be cleared without false negatives.
  Status RemoveHash(uint64_t hash) override;
  bool MayContainHash(uint64_t hash) const override;
  uint32_t CountHash(uint64_t hash) const override;  // 0 or 1
  Status AddHashes(std::span<const uint64_t> hashes, size_t* added) override;
  void PrefetchHash(uint64_t hash, bool for_write) const override {
    Prefetch(hash, for_write);
  }
  void MayContainHashes(std::span<const uint64_t> hashes,
                        std::span<uint8_t> out) const override;
  FilterStats Stats() const override;
  FilterStats Counts() const override;
  std::string Serialize() const override;
  // Same layout, k, seed, capacity, fpp, size and bits. The `items`
  // statistic is not compared.
  bool Equals(const Filter& other) const override;

  // ---- Non-virtual fast paths ----------------------------------------------
  // Returns true if the add set at least one new bit.
  bool AddHashInline(uint64_t h) {
    const bool added = AddHashUncounted(h);
    if (added) CountNewItem();
    return added;
  }
  bool MayContainHashInline(uint64_t h) const {
    if (layout_ == BloomLayout::kSplitBlock) [[likely]] {
      return internal::SplitMayContain(SplitBlock(h), static_cast<uint32_t>(h));
    }
    if (layout_ == BloomLayout::kBlocked) {
      return blocked_.may_contain(Block(h), static_cast<uint32_t>(h));
    }
    return internal::ClassicMayContain(table_.data(), num_bits_, h, k_);
  }
  // AddHashInline without the `items` statistic (one atomic add less): for
  // owners that count adds themselves (the sharded engine's fill, S8), so
  // Stats().items of such a filter says nothing.
  bool AddHashUncounted(uint64_t h) {
    if (layout_ == BloomLayout::kSplitBlock) {
      return internal::SplitAdd(SplitBlock(h), static_cast<uint32_t>(h));
    }
    if (layout_ == BloomLayout::kBlocked) {
      return blocked_.add(Block(h), static_cast<uint32_t>(h));
    }
    return internal::ClassicAdd(table_.data(), num_bits_, h, k_);
  }
  bool Add(std::string_view key) { return AddHashInline(hasher_(key)); }
  bool MayContain(std::string_view key) const {
    return MayContainHashInline(hasher_(key));
  }
  // Batches: hash a window ahead, prefetch the lines, then probe.
  void AddKeys(std::span<const std::string_view> keys);
  // REQUIRES: out.size() == keys.size() (only the common prefix is done).
  void MayContainKeys(std::span<const std::string_view> keys,
                      std::span<uint8_t> out) const;

  // ORs `other` into this filter. InvalidArgument (nothing changes) unless
  // both have the same layout, k, number of bits and seed. Safe against
  // concurrent adds to either filter; the result then contains at least
  // every key acknowledged in `other` before the call. items() becomes the
  // distinct keys the bits imply (Stats().estimated_cardinality) if that
  // is more: a repeated union changes nothing.
  Status UnionWith(const BloomFilter& other);

  // Folding: a new blocked filter with 1/factor of the blocks, where new
  // block j is the OR of old blocks j*factor .. j*factor+factor-1. A key's
  // block is FastRange(h[63:32], n) and floor(FastRange(x, n) / f) ==
  // FastRange(x, n / f) when f divides n, while its bits within the block
  // depend on h[31:0] only: so every key this filter holds is held by the
  // folded one (no false negative), which has the bits per item, k and
  // hence the rate of this filter at capacity / factor items. The new
  // filter records `new_capacity` (normally capacity() / factor) and fpp.
  // Safe against concurrent adds (bits are read with relaxed loads: an add
  // that races may or may not be included, like UnionWith). NotSupported
  // for the classic layout or when factor (a power of two >= 2) does not
  // divide the block count; InvalidArgument for a bad factor or capacity.
  Result<std::unique_ptr<BloomFilter>> Fold(uint32_t factor,
                                            uint64_t new_capacity) const;
  // Verification of a fold: the number of bits set in `source` that are
  // not set in this filter at their folded position (0: every key of
  // `source` is in this filter). UINT64_MAX when this filter is not a fold
  // of `source`'s shape (layout, k, seed, a block count dividing source's).
  uint64_t MissingFoldedBits(const BloomFilter& source) const;

  uint32_t k() const { return k_; }
  BloomLayout layout() const { return layout_; }
  // The split-block layout's table (null for the other layouts) and its
  // block count: the sharded engine probes such a link inline
  // (engine/detail/shard_fast_path.h). Valid for the filter's lifetime.
  const std::atomic<uint64_t>* split_table() const {
    return layout_ == BloomLayout::kSplitBlock ? table_.data() : nullptr;
  }
  std::atomic<uint64_t>* split_table() {
    return layout_ == BloomLayout::kSplitBlock ? table_.data() : nullptr;
  }
  uint64_t num_blocks() const { return num_blocks_; }
  uint64_t num_bits() const { return num_bits_; }
  uint64_t num_bytes() const { return num_bits_ / 8; }

 private:
  BloomFilter(BloomLayout layout, uint32_t k, uint64_t seed, uint64_t capacity,
              double fpp, uint64_t num_bits);
  struct Shape {
    BloomLayout layout;
    uint32_t k;
    uint64_t num_bits;
  };
  // The k and size Create gives `options` (no allocation).
  static Result<Shape> Plan(const BloomOptions& options);

  // REQUIRES: layout_ == kSplitBlock.
  std::atomic<uint64_t>* SplitBlock(uint64_t h) const {
    return table_.data() +
           internal::SplitBlockOffset(h, num_blocks_) / sizeof(uint64_t);
  }
  // REQUIRES: layout_ == kBlocked.
  std::atomic<uint64_t>* Block(uint64_t h) const {
    return table_.data() +
           internal::BlockIndex(h, num_blocks_) * internal::kBlockWords;
  }
  friend struct internal::BatchOps;  // Prefetch
  void Prefetch(uint64_t h, bool write) const;
  // The batch queries' prefetch (into L2: internal/prefetch.h).
  void PrefetchBatchQuery(uint64_t h) const;
  // A statistic. On a large table, on the adding thread's own stripe: a
  // plain load and store, no locked add (internal/thread_stripe.h), since
  // concurrent adds there land on distinct lines and a shared counter line
  // would be what they pass between cores. A smaller table counts in one
  // word: its stripes (1,088 B) would outweigh a table of a few KiB, whose
  // own lines concurrent adds share anyway.
  static constexpr uint64_t kStripedItemsMinBytes = uint64_t{64} << 10;
  void CountNewItem() { items_.Add(1); }
  uint64_t items() const;

  const BloomLayout layout_;
  const uint32_t k_;
  const uint64_t seed_;
  const uint64_t capacity_;
  const double fpp_;
  const uint64_t num_bits_;
  const uint64_t num_blocks_;   // num_bits_ / block bits (blocked layouts)
  const uint32_t block_words_;  // 64-bit words per block: 8, 4 (split), 1
  const internal::BlockedOps blocked_;  // the blocked kernels for k_
  const KeyHasher hasher_;              // Hash(), seed's share precomputed
  internal::AtomicWordTable table_;
  // Adds that set a new bit (Stats().items): per-thread stripes for a
  // table of at least kStripedItemsMinBytes, one word below it.
  internal::OptionalStripedCount items_;
};

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_BLOOM_FILTER_H_
