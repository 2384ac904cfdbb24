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
// Bucket groups: kGroupBuckets = 8 consecutive buckets take 8*b*f bits, a
// multiple of 64 for every (b, f), so group g owns whole words
// [g*b*f/8, (g+1)*b*f/8) and no word holds bits of two groups. The lock
// stripes map whole groups (cuckoo_stripes.h), so a word is only ever
// written by the holder of one stripe.
//
// Thread safety (the filter's locking protocol relies on it):
//  - Every access to the words is atomic: readers use relaxed loads
//    (acquire under TSan, see kLoadOrder);
//    writers, holding the stripe of the bucket's group (hence of every
//    bucket sharing the word), use a relaxed load and a relaxed store: no
//    other thread writes the word meanwhile, so nothing is lost, and no
//    locked read-modify-write is needed. ReplaceSlot on x86 (outside TSan)
//    does the same with a 1- or 2-byte load and store of the bytes that
//    hold the slot, all inside the slot's bucket (ReplaceSlotWindow).
//  - This class orders nothing: the caller's locks and fences provide the
//    happens-before edges (cuckoo_filter.h, invariants).
// Not copyable or movable (owns atomics).
//
// Over 400 lines on purpose: the probes the query loop inlines (the hot
// path of every cuckoo call) must be in a header, and they share the
// packing arithmetic with the rest of the table.
#ifndef SHARDFILTER_FILTERS_DETAIL_CUCKOO_TABLE_H_
#define SHARDFILTER_FILTERS_DETAIL_CUCKOO_TABLE_H_

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "shardfilter/filters/detail/prefetch.h"
#include "shardfilter/filters/detail/tsan.h"
#include "shardfilter/filters/memory_advice.h"

namespace shardfilter::internal {

class CuckooTable {
 public:
  // Buckets per lock group (see the file comment).
  static constexpr uint64_t kGroupBuckets = 8;
  // Orders of the table's loads and stores. Relaxed: the seqlock's fences
  // (CuckooStripes::ReadFence / MoveFence) order them. TSan does not model
  // atomic_thread_fence, so under TSan both fences are empty and instead
  // every table load is an acquire (as a relaxed load followed by the
  // reader's acquire fence is) and the stores of a move, after its
  // MoveFence, are releases (TsanStoreOrder, filters/detail/tsan.h): the
  // same guarantee (a reader that sees a word a move wrote also sees the
  // move's odd version when it re-checks, invariant 5 of cuckoo_filter.h),
  // in a form TSan checks, and no stronger than the fences.
  static constexpr std::memory_order kLoadOrder =
      kTsan ? std::memory_order_acquire : std::memory_order_relaxed;
  static std::memory_order StoreOrder() { return TsanStoreOrder(); }

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
    lows_ = group_mask_ & ~highs_;
    // ceil(65536 / f): (bit + 1) * slot_div_ >> 16 == (bit + 1) / f for
    // every bit < 64 and f in {8, 12, 16} (exact for multiples of f).
    slot_div_ = (65536 + f_ - 1) / f_;
    data_words_ = (buckets_ * bucket_bits_ + 63) / 64;
    layout_ = b_ != 4    ? Layout::kGeneric
              : f_ == 8  ? Layout::k4x8
              : f_ == 12 ? Layout::k4x12
                         : Layout::k4x16;
    // 2 MiB-aligned, and on Linux advised into transparent huge pages
    // (THP is often "madvise" only): a random bucket access in a table far
    // larger than the TLB's reach otherwise pays a page walk on top of the
    // DRAM miss. A memory hint, not I/O; harmless where unsupported.
    void* mem = AllocateFilterTable((data_words_ + 1) * 8);  // one policy
    if (mem == nullptr) return false;
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

  uint64_t LoadWord(uint64_t w) const { return words_[w].load(kLoadOrder); }
  // Only while no other thread touches the table (Deserialize).
  void StoreWord(uint64_t w, uint64_t v) { words_[w].store(v, StoreOrder()); }

  // Up to 64 bits starting at bit `off`: two relaxed loads, no branch.
  // (hi << 1) << (63 - s) is hi << (64 - s) without the undefined shift by
  // 64 when s == 0.
  uint64_t LoadBits(uint64_t off, uint64_t mask) const {
    const uint64_t w = off >> 6;
    const unsigned s = off & 63;
    const uint64_t lo = words_[w].load(kLoadOrder) >> s;
    const uint64_t hi = words_[w + 1].load(kLoadOrder);
    return (lo | ((hi << 1) << (63 - s))) & mask;
  }

  // Slot group g (0 .. groups-1) of bucket i as one value, slot 0 lowest.
  uint64_t LoadGroup(uint64_t i, uint32_t g) const {
    return LoadBits(i * bucket_bits_ + g * group_bits_, group_mask_);
  }
  // High bit of every field of `x` (a group) that is zero, exactly: a field
  // v gets its high bit set in ((v & lows) + lows) | v iff v != 0, and the
  // sum never carries out of the field.
  uint64_t ZeroFields(uint64_t x) const {
    return ~(((x & lows_) + lows_) | x) & highs_;
  }
  // High bits of the slots of group value x that hold fp (0: empty slots).
  uint64_t MatchFields(uint64_t x, uint32_t fp) const {
    return ZeroFields(x ^ (fp * ones_));
  }
  // Slot index within a group of the lowest field marked in m (m != 0).
  uint32_t FirstField(uint64_t m) const {
    return static_cast<uint32_t>(((std::countr_zero(m) + 1) * slot_div_) >>
                                 16) -
           1;
  }
  // Slot j of group value x.
  uint32_t Field(uint64_t x, uint32_t j) const {
    return static_cast<uint32_t>((x >> (j * f_)) & fp_mask_);
  }
  uint32_t groups() const { return groups_; }
  uint32_t group_slots() const { return group_slots_; }
  // True when a bucket is a single group (every (b, f) but b = 8, f > 8).
  bool single_group() const { return groups_ == 1; }

  // True if any slot of bucket i holds fp. Borrow form of the zero test:
  // x = group ^ (fp * ones) has a zero field exactly where a slot equals
  // fp, and (x - ones) & ~x & highs is non-zero iff x has a zero field (the
  // borrow may mark extra fields above a zero one, never create a zero).
  bool BucketContains(uint64_t i, uint32_t fp) const {
    const uint64_t pattern = fp * ones_;
    for (uint32_t g = 0; g < groups_; ++g) {
      const uint64_t x = LoadGroup(i, g) ^ pattern;
      if (((x - ones_) & ~x & highs_) != 0) return true;
    }
    return false;
  }
  // Layouts with a compile-time query kernel (EitherContains<kB, kF>):
  // constant masks and offsets, and one load per bucket where a bucket
  // never straddles a word. Others take the generic (runtime) kernel.
  enum class Layout : uint8_t { kGeneric, k4x8, k4x12, k4x16 };
  Layout layout() const { return layout_; }

  // BucketContains(i1, fp) || BucketContains(i2, fp). kB = 0: any layout;
  // else REQUIRES layout() is the one of (kB, kF). SWAR borrow test as in
  // BucketContains, on both buckets, without a branch: both loads issue
  // at once and no guess about which bucket holds fp can be mispredicted
  // (a query at 5e7 items waits on DRAM either way; an early exit saved no
  // miss, since the CPU had already issued the second load).
  template <uint32_t kB = 0, uint32_t kF = 0>
  bool EitherContains(uint64_t i1, uint64_t i2, uint32_t fp) const {
    if constexpr (kB == 0) {
      return BucketContains(i1, fp) || BucketContains(i2, fp);
    } else {
      constexpr uint64_t kOnes = Ones(kB, kF);
      constexpr uint64_t kHighs = kOnes << (kF - 1);
      const uint64_t pattern = fp * kOnes;
      const uint64_t x1 = LoadBucket<kB, kF>(i1) ^ pattern;
      const uint64_t x2 = LoadBucket<kB, kF>(i2) ^ pattern;
      return ((((x1 - kOnes) & ~x1) | ((x2 - kOnes) & ~x2)) & kHighs) != 0;
    }
  }

  // The number of slots a MatchBucket<kB, kF> mask marks (one high bit per
  // slot). Without the popcnt instruction (the portable x86-64 baseline)
  // std::popcount is a libgcc call; one multiply sums the kB marks into the
  // top slot's field instead (each field holds 0 or 1, the sum at most
  // kB < 2^kF, so no field carries into the next). REQUIRES: a
  // single-word layout (kB * kF <= 64).
  template <uint32_t kB, uint32_t kF>
  static uint32_t CountMarks(uint64_t m) {
    static_assert(kB * kF <= 64);
#if defined(__POPCNT__)
    return static_cast<uint32_t>(std::popcount(m));
#else
    constexpr uint64_t kOnes = Ones(kB, kF);
    constexpr uint64_t kField = (uint64_t{1} << kF) - 1;
    return static_cast<uint32_t>(
        (((m >> (kF - 1)) * kOnes) >> ((kB - 1) * kF)) & kField);
#endif
  }

  // Exact match mask of bucket i of a (kB, kF) layout: the high bit of
  // every slot equal to fp (fp = 0: every empty slot), nothing else (the
  // carry form of ZeroFields, with constant masks). REQUIRES: layout() is
  // the one of (kB, kF).
  template <uint32_t kB, uint32_t kF>
  uint64_t MatchBucket(uint64_t i, uint32_t fp) const {
    return MatchBits<kB, kF>(LoadBucket<kB, kF>(i), fp);
  }
  // MatchBucket of a bucket already loaded (bits: LoadBucket<kB, kF>), for
  // a caller matching one bucket against two values: one load, not two
  // (each is an opaque read the compiler does not merge).
  template <uint32_t kB, uint32_t kF>
  static uint64_t MatchBits(uint64_t bits, uint32_t fp) {
    constexpr uint64_t kOnes = Ones(kB, kF);
    constexpr uint64_t kHighs = kOnes << (kF - 1);
    constexpr uint64_t kLows = kOnes * ((uint64_t{1} << kF) - 1) & ~kHighs;
    const uint64_t x = bits ^ (fp * kOnes);
    return ~(((x & kLows) + kLows) | x) & kHighs;
  }
  // Bucket i of a (kB, kF) table, kB * kF <= 64, slot 0 in the low bits.
  // The bits above kB * kF are unspecified: the SWAR tests never read
  // them (a borrow only travels upward, and kHighs has no bit there).
  // - A bucket whose width divides 64 never straddles a word: one load.
  // - A whole-byte bucket (4 x 12 = 6 bytes) is one unaligned 8-byte load
  //   at byte i * kBits / 8 (x86): 2 instructions instead of two loads,
  //   two shifts and an or. The trailing guard word keeps the last
  //   bucket's load inside the allocation. It reads the same bytes as the
  //   two relaxed word loads, and may likewise combine two words from
  //   different moments, which the callers already allow (a present
  //   fingerprint's own bits change only in a move, which the seqlock
  //   catches, invariants 4-6 of cuckoo_filter.h). It is written in asm,
  //   so the compiler sees one opaque read (no non-atomic access for it
  //   to reason about); under TSan the atomic two-load form is used, so
  //   the race detector still checks every table read.
  template <uint32_t kB, uint32_t kF>
  uint64_t LoadBucket(uint64_t i) const {
    constexpr uint64_t kBits = uint64_t{kB} * kF;
    static_assert(kBits <= 64);
    const uint64_t off = i * kBits;
    if constexpr (64 % kBits == 0) {
      return LoadWord(off >> 6) >> (off & 63);
    } else if constexpr (kBits % 8 == 0 && kAsmUnalignedLoad) {
#if defined(__x86_64__)
      const char* p =
          reinterpret_cast<const char*>(words_.get()) + i * (kBits / 8);
      uint64_t x;
      asm volatile("movq %1, %0"
                   : "=r"(x)
                   : "m"(*reinterpret_cast<const char(*)[8]>(p)));
      return x;
#endif
    } else {
      return LoadBits(off, ~uint64_t{0});
    }
  }

  // The slot of bucket i of a single-group (kB, kF) layout whose high bit
  // is the lowest one marked in `m` (a non-zero MatchBucket<kB, kF> mask)
  // goes from `from` to `to` (fill: 0 -> fp, clear: fp -> 0) if it holds
  // `from`; false, and nothing written, if it does not. The slot's first
  // bit in the bucket is countr_zero(m) - (kF - 1): no division by kF
  // (an imul and shifts) to find its index. The check reads the very
  // words the update rewrites, so a writer that made its choice from an
  // unlocked look needs no second look after taking the lock (measured:
  // a separate re-read after the locked exchange cost ~25 ns per insert
  // at 5e7 items). REQUIRES: the stripe of bucket i is held.
  template <uint32_t kB, uint32_t kF>
  bool ReplaceSlot(uint64_t i, uint64_t m, uint32_t from, uint32_t to) {
    constexpr uint64_t kBits = uint64_t{kB} * kF;
    constexpr uint64_t kSlotMask = (uint64_t{1} << kF) - 1;
    const unsigned start =
        static_cast<unsigned>(std::countr_zero(m)) - (kF - 1);
    if constexpr (kBits % 8 == 0 && kF <= 16 && kAsmUnalignedLoad) {
      return ReplaceSlotWindow<kF>(i * (kBits / 8) + (start >> 3), start & 7,
                                   from, to);
    }
    const uint64_t off = i * kBits + start;
    const uint64_t w = off >> 6;
    const unsigned s = off & 63;
    const uint64_t lo = words_[w].load(kLoadOrder);
    const uint64_t delta = uint64_t{from ^ to} << s;
    if (s + kF <= 64) {
      if (((lo >> s) & kSlotMask) != from) return false;
      words_[w].store(lo ^ delta, StoreOrder());
      return true;
    }
    // The slot straddles words w and w + 1 (same lock group, see top).
    const uint64_t hi = words_[w + 1].load(kLoadOrder);
    if ((((lo >> s) | (hi << (64 - s))) & kSlotMask) != from) return false;
    words_[w].store(lo ^ delta, StoreOrder());
    words_[w + 1].store(hi ^ (uint64_t{from ^ to} >> (64 - s)), StoreOrder());
    return true;
  }

  uint32_t ReadSlot(uint64_t i, uint32_t j) const {
    return static_cast<uint32_t>(
        LoadBits((i * b_ + j) * static_cast<uint64_t>(f_), fp_mask_));
  }

  // Copies of fp in bucket i.
  uint32_t CountInBucket(uint64_t i, uint32_t fp) const {
    uint32_t n = 0;
    for (uint32_t g = 0; g < groups_; ++g) {
      n += std::popcount(MatchFields(LoadGroup(i, g), fp));
    }
    return n;
  }
  // First slot of bucket i holding fp (0 finds an empty slot), or -1.
  int FindSlot(uint64_t i, uint32_t fp) const {
    for (uint32_t g = 0; g < groups_; ++g) {
      const uint64_t m = MatchFields(LoadGroup(i, g), fp);
      if (m != 0) return static_cast<int>(g * group_slots_ + FirstField(m));
    }
    return -1;
  }
  uint32_t OccupiedInBucket(uint64_t i) const {
    return b_ - CountInBucket(i, 0);
  }

  // The first of buckets (i1, i2), and its first slot, whose field equals
  // fp (0: an empty slot); false if neither has one. Both buckets are
  // loaded before the choice, which is a select, not a branch: a writer's
  // next operation is not flushed by a mispredicted i1-or-i2 guess.
  bool FindInPair(uint64_t i1, uint64_t i2, uint32_t fp, uint64_t* bucket,
                  uint32_t* slot) const {
    if (!single_group()) {
      int j = FindSlot(i1, fp);
      *bucket = i1;
      if (j < 0) {
        j = FindSlot(i2, fp);
        *bucket = i2;
      }
      *slot = static_cast<uint32_t>(j);
      return j >= 0;
    }
    const uint64_t m1 = MatchFields(LoadGroup(i1, 0), fp);
    const uint64_t m2 = MatchFields(LoadGroup(i2, 0), fp);
    *bucket = m1 != 0 ? i1 : i2;
    const uint64_t m = m1 != 0 ? m1 : m2;
    *slot = m != 0 ? FirstField(m) : 0;
    return m != 0;
  }

  // REQUIRES: the slot is empty, fp != 0, the caller holds the stripe of
  // the bucket's group (so no other thread writes these words).
  void FillSlot(uint64_t i, uint32_t j, uint32_t fp) { XorField(i, j, fp); }
  // REQUIRES: as FillSlot.
  void ClearSlot(uint64_t i, uint32_t j) { XorField(i, j, ReadSlot(i, j)); }

  // Hints the cache line(s) of bucket i: those of its first word and of
  // the word after its last one, which bound every read of it (LoadBits
  // reads words w and w + 1; the 8-byte load of a 6-byte bucket reaches 2
  // bytes past it). A bucket of at most 128 bits spans at most two lines.
  // kWrite asks for the lines in exclusive state (an insert or remove will
  // store to them).
  // Into L2 only, for the batch query (internal/prefetch.h).
  void PrefetchL2(uint64_t i) const {
    const uint64_t first = i * bucket_bits_;
    PrefetchReadL2(&words_[first >> 6]);
    PrefetchReadL2(&words_[((first + bucket_bits_ - 1) >> 6) + 1]);
  }
  template <bool kWrite = false>
  void Prefetch(uint64_t i) const {
    const uint64_t first = i * bucket_bits_;
    const void* a = &words_[first >> 6];
    const void* b = &words_[((first + bucket_bits_ - 1) >> 6) + 1];
    if constexpr (kWrite) {
      PrefetchWrite(a);
      PrefetchWrite(b);
    } else {
      PrefetchRead(a);
      PrefetchRead(b);
    }
  }

 private:
  static constexpr uint64_t Ones(uint32_t b, uint32_t f) {
    uint64_t ones = 0;
    for (uint32_t j = 0; j < b; ++j) ones |= uint64_t{1} << (j * f);
    return ones;
  }
#if defined(__x86_64__) && !SHARDFILTER_TSAN
  static constexpr bool kAsmUnalignedLoad = true;
#else
  static constexpr bool kAsmUnalignedLoad = false;
#endif

  // The window at byte `byte` holding a kF-bit slot at bit `shift`: two
  // bytes (one for kF = 8, whose slots are whole bytes: a second byte
  // could be the next bucket's, in another lock group). ReplaceSlot's
  // check and update for byte-aligned buckets: one narrow load and store
  // instead of the word arithmetic and the straddle branch (which depends
  // on the slot, i.e. on the bucket's miss). For kF = 12 and 16 the two
  // bytes lie inside the slot's bucket, so inside the holder's lock
  // group; the window's other bits are written back unchanged. In asm
  // like LoadBucket: an opaque access of those bytes; the store's
  // "memory" clobber keeps the compiler from moving it past the lock's
  // release (measured: no cost at 5e7 items). A
  // reader's 8-byte load may see the bytes from before or after (or,
  // across a cache line, one of each): the slot being filled or cleared
  // then reads as present, absent or a partial value, which can only add
  // a false positive; its neighbours' bits never change.
  template <uint32_t kF>
  bool ReplaceSlotWindow(uint64_t byte, unsigned shift, uint32_t from,
                         uint32_t to) {
#if defined(__x86_64__)
    char* const at = reinterpret_cast<char*>(words_.get()) + byte;
    if constexpr (kF == 8) {
      auto* p = reinterpret_cast<char(*)[1]>(at);
      uint8_t v;
      asm volatile("movb %1, %0" : "=q"(v) : "m"(*p));
      if (v != from) return false;
      const uint8_t nv = static_cast<uint8_t>(to);
      asm volatile("movb %1, %0" : "=m"(*p) : "q"(nv) : "memory");
    } else {
      static_assert(kF == 12 || kF == 16);
      auto* p = reinterpret_cast<char(*)[2]>(at);
      uint16_t v;
      asm volatile("movw %1, %0" : "=r"(v) : "m"(*p));
      if (((v >> shift) & ((1u << kF) - 1)) != from) return false;
      const uint16_t nv = static_cast<uint16_t>(v ^ ((from ^ to) << shift));
      asm volatile("movw %1, %0" : "=m"(*p) : "r"(nv) : "memory");
    }
    return true;
#else
    (void)byte, (void)shift, (void)from, (void)to;
    return false;
#endif
  }

  // Flips the bits of `v` into slot j of bucket i: fills an empty slot
  // with v, or clears a slot holding v. Writes the words of the slot's
  // group of the bucket, all in the bucket's 8-bucket lock group. Whether
  // that is one word or two depends on i and j's group only, not on the
  // slot's position inside the group, so for single-group buckets the
  // branch resolves from the hash, before the bucket's cache miss.
  // Plain load + store: only the stripe holder writes these words (see
  // the file comment); a relaxed store is still atomic for the readers.
  void XorField(uint64_t i, uint32_t j, uint32_t v) {
    const uint32_t g = j / group_slots_;
    const uint64_t delta = static_cast<uint64_t>(v)
                           << ((j - g * group_slots_) * f_);
    const uint64_t off = i * bucket_bits_ + g * group_bits_;
    const uint64_t w = off >> 6;
    const unsigned s = off & 63;
    XorWord(w, delta << s);
    if (s + group_bits_ > 64) XorWord(w + 1, (delta >> 1) >> (63 - s));
  }
  void XorWord(uint64_t w, uint64_t bits) {
    words_[w].store(words_[w].load(kLoadOrder) ^ bits, StoreOrder());
  }

  uint64_t buckets_ = 0;
  uint32_t b_ = 0;
  uint32_t f_ = 0;
  uint64_t bucket_bits_ = 0;
  uint64_t fp_mask_ = 0;
  uint32_t group_slots_ = 0;
  uint32_t groups_ = 0;
  uint32_t group_bits_ = 0;
  uint32_t slot_div_ = 0;
  uint64_t group_mask_ = 0;
  uint64_t ones_ = 0;   // 1 in the low bit of each slot of a group
  uint64_t highs_ = 0;  // 1 in the high bit of each slot of a group
  uint64_t lows_ = 0;   // the other f-1 bits of each slot of a group
  uint64_t data_words_ = 0;
  Layout layout_ = Layout::kGeneric;
  // std::atomic<uint64_t> is trivially destructible: freeing is enough.
  struct Free {
    void operator()(std::atomic<uint64_t>* p) const { FreeTable(p); }
  };
  std::unique_ptr<std::atomic<uint64_t>[], Free> words_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_CUCKOO_TABLE_H_
