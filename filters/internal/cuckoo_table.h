// The packed bucket table of the cuckoo filter: `buckets` buckets of b
// slots, each slot an f-bit fingerprint (0 = empty), packed back to back in
// little-endian 64-bit words with no padding between buckets:
//
//   slot j of bucket i occupies bits [(i*b + j)*f, (i*b + j + 1)*f) of the
//   bit string formed by word 0 bits 0..63, word 1 bits 0..63, ...
//
// So 12-bit fingerprints in buckets of 4 cost 48 bits per bucket (12.0 bits
// per slot, 12.77 per item at 94% load) instead of a padded 64-bit word
// (16 bits per slot). A slot or bucket may straddle two words; one extra
// zero word at the end lets every read touch words w and w+1 unconditionally.
//
// Thread safety (the filter's locking protocol relies on it):
//  - Every access to the words is atomic: readers use relaxed loads, writers
//    use fetch_or (fill an empty slot) and fetch_and (clear a slot). Two
//    buckets in different lock stripes may share a word; the read-modify-
//    write operations never lose the other bucket's bits.
//  - This class orders nothing: the caller's locks and fences provide the
//    happens-before edges (cuckoo_filter.h, invariants).
// Not copyable or movable (owns atomics).
#ifndef SHARDFILTER_FILTERS_INTERNAL_CUCKOO_TABLE_H_
#define SHARDFILTER_FILTERS_INTERNAL_CUCKOO_TABLE_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace shardfilter::internal {

class CuckooTable {
 public:
  CuckooTable() = default;
  CuckooTable(const CuckooTable&) = delete;
  CuckooTable& operator=(const CuckooTable&) = delete;

  // Allocates a zeroed table. REQUIRES: b in {2,4,8}, f in {8,12,16},
  // buckets >= 1 and buckets * b * f small enough to allocate (sizing
  // checks it). Returns false when the allocation fails.
  bool Init(uint64_t buckets, uint32_t bucket_size, uint32_t fp_bits) {
    buckets_ = buckets;
    b_ = bucket_size;
    f_ = fp_bits;
    bucket_bits_ = static_cast<uint64_t>(b_) * f_;
    fp_mask_ = (uint64_t{1} << f_) - 1;
    // A bucket wider than 64 bits (b = 8 with f = 12 or 16) is read as two
    // groups of b/2 slots, so that every group fits one 64-bit value.
    group_slots_ = bucket_bits_ <= 64 ? b_ : b_ / 2;
    groups_ = b_ / group_slots_;
    group_bits_ = group_slots_ * f_;
    group_mask_ =
        group_bits_ == 64 ? ~uint64_t{0} : (uint64_t{1} << group_bits_) - 1;
    ones_ = 0;
    for (uint32_t j = 0; j < group_slots_; ++j)
      ones_ |= uint64_t{1} << (j * f_);
    highs_ = ones_ << (f_ - 1);
    data_words_ = (buckets_ * bucket_bits_ + 63) / 64;
    // 2 MiB-aligned, and on Linux advised into transparent huge pages
    // (THP is often "madvise" only): a random bucket access in a table far
    // larger than the TLB's reach otherwise pays a page walk on top of the
    // DRAM miss. A memory hint, not I/O; harmless where unsupported.
    const uint64_t bytes = (data_words_ + 1) * 8;
    const uint64_t align = bytes >= kHugePage ? kHugePage : 64;
    void* mem = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (mem == nullptr) return false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == kHugePage) (void)madvise(mem, bytes, MADV_HUGEPAGE);
#endif
    auto* words = static_cast<std::atomic<uint64_t>*>(mem);
    for (uint64_t w = 0; w <= data_words_; ++w) {
      new (&words[w]) std::atomic<uint64_t>(0);
    }
    words_.reset(words);
    return true;
  }

  uint64_t buckets() const { return buckets_; }
  uint32_t bucket_size() const { return b_; }
  uint32_t fp_bits() const { return f_; }
  uint64_t slots() const { return buckets_ * b_; }
  // Words of the serialized body (without the trailing guard word).
  uint64_t data_words() const { return data_words_; }
  uint64_t bytes() const { return (data_words_ + 1) * 8; }

  uint64_t LoadWord(uint64_t w) const {
    return words_[w].load(std::memory_order_relaxed);
  }
  // Only while no other thread touches the table (Deserialize).
  void StoreWord(uint64_t w, uint64_t v) {
    words_[w].store(v, std::memory_order_relaxed);
  }

  // Up to 64 bits starting at bit `off`: two relaxed loads, no branch.
  // (hi << 1) << (63 - s) is hi << (64 - s) without the undefined shift by
  // 64 when s == 0.
  uint64_t LoadBits(uint64_t off, uint64_t mask) const {
    const uint64_t w = off >> 6;
    const unsigned s = off & 63;
    const uint64_t lo = words_[w].load(std::memory_order_relaxed) >> s;
    const uint64_t hi = words_[w + 1].load(std::memory_order_relaxed);
    return (lo | ((hi << 1) << (63 - s))) & mask;
  }

  // True if any slot of bucket i holds fp. SWAR: x = group ^ (fp * ones)
  // has a zero field exactly where a slot equals fp, and
  // (x - ones) & ~x & highs is non-zero iff x has a zero field (the borrow
  // may mark extra fields above a zero one, never create a zero).
  bool BucketContains(uint64_t i, uint32_t fp) const {
    const uint64_t pattern = fp * ones_;
    uint64_t off = i * bucket_bits_;
    for (uint32_t g = 0; g < groups_; ++g, off += group_bits_) {
      const uint64_t x = LoadBits(off, group_mask_) ^ pattern;
      if (((x - ones_) & ~x & highs_) != 0) return true;
    }
    return false;
  }

  uint32_t ReadSlot(uint64_t i, uint32_t j) const {
    return static_cast<uint32_t>(
        LoadBits((i * b_ + j) * static_cast<uint64_t>(f_), fp_mask_));
  }

  // Copies of fp in bucket i.
  uint32_t CountInBucket(uint64_t i, uint32_t fp) const {
    uint32_t n = 0;
    for (uint32_t j = 0; j < b_; ++j) n += ReadSlot(i, j) == fp;
    return n;
  }
  // First slot of bucket i holding fp (0 finds an empty slot), or -1.
  int FindSlot(uint64_t i, uint32_t fp) const {
    for (uint32_t j = 0; j < b_; ++j) {
      if (ReadSlot(i, j) == fp) return static_cast<int>(j);
    }
    return -1;
  }
  uint32_t OccupiedInBucket(uint64_t i) const {
    uint32_t n = 0;
    for (uint32_t j = 0; j < b_; ++j) n += ReadSlot(i, j) != 0;
    return n;
  }

  // REQUIRES: the slot is empty, fp != 0, the caller holds the bucket's
  // stripe. fetch_or leaves every other bit of the word(s) as it is.
  void FillSlot(uint64_t i, uint32_t j, uint32_t fp) {
    const uint64_t off = (i * b_ + j) * static_cast<uint64_t>(f_);
    const uint64_t w = off >> 6;
    const unsigned s = off & 63;
    words_[w].fetch_or(static_cast<uint64_t>(fp) << s,
                       std::memory_order_relaxed);
    if (s + f_ > 64) {
      words_[w + 1].fetch_or(static_cast<uint64_t>(fp) >> (64 - s),
                             std::memory_order_relaxed);
    }
  }
  // REQUIRES: the caller holds the bucket's stripe.
  void ClearSlot(uint64_t i, uint32_t j) {
    const uint64_t off = (i * b_ + j) * static_cast<uint64_t>(f_);
    const uint64_t w = off >> 6;
    const unsigned s = off & 63;
    words_[w].fetch_and(~(fp_mask_ << s), std::memory_order_relaxed);
    if (s + f_ > 64) {
      words_[w + 1].fetch_and(~(fp_mask_ >> (64 - s)),
                              std::memory_order_relaxed);
    }
  }

  // Hints the cache line(s) of bucket i: a bucket of at most 128 bits spans
  // at most two lines, those of its first and last words (usually one).
  void Prefetch(uint64_t i) const {
    const uint64_t first = i * bucket_bits_;
    __builtin_prefetch(&words_[first >> 6]);
    __builtin_prefetch(&words_[(first + bucket_bits_ - 1) >> 6]);
  }

 private:
  uint64_t buckets_ = 0;
  uint32_t b_ = 0;
  uint32_t f_ = 0;
  uint64_t bucket_bits_ = 0;
  uint64_t fp_mask_ = 0;
  uint32_t group_slots_ = 0;
  uint32_t groups_ = 0;
  uint32_t group_bits_ = 0;
  uint64_t group_mask_ = 0;
  uint64_t ones_ = 0;   // 1 in the low bit of each slot of a group
  uint64_t highs_ = 0;  // 1 in the high bit of each slot of a group
  uint64_t data_words_ = 0;
  static constexpr uint64_t kHugePage = 2 << 20;
  // std::atomic<uint64_t> is trivially destructible: freeing is enough.
  struct Free {
    void operator()(std::atomic<uint64_t>* p) const { std::free(p); }
  };
  std::unique_ptr<std::atomic<uint64_t>[], Free> words_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_CUCKOO_TABLE_H_
