// The memo of the blocked layouts' sizings (filters/sizing.h:
// SplitBlockBloomSizing, WordBlockedBloomSizing, BlockedBloomSizing), and
// the uncached searches behind it.
//
// A search evaluates the rate model (a Poisson mixture of ~100 terms, each
// a pow, an exp and an lgamma) for a dozen block counts: ~250,000
// instructions for one split-block sizing of 500 keys, and a Bloom
// filter's plan sizes split block twice (the layout choice, then the
// table), once for the memory budget and once more to build it, and again
// whenever a filter of that spec is decoded. A sizing is a pure function
// of its arguments, so a filter whose spec was seen before takes its
// result from here at the cost of a lookup (a few hashes and eight loads).
//
// Invariants:
//  M1. Bounded: kSlots slots, fixed at compile time, direct-mapped by a
//      hash of the key; a new result replaces whatever held its slot. A
//      client making any number of distinct specs evicts entries, never
//      grows the memo (DESIGN.md invariant 8).
//  M2. Exact: a hit returns what the search computed for exactly that key
//      (every argument that affects the result, the rate by its bits), so
//      a cached and an uncached sizing are equal in every bit
//      (tests/sizing_memo_test.cc compares them over a grid). Only results
//      are kept; an error is computed again each time.
//  M3. Thread-safe, lock-free readers: each slot is a seqlock (Boehm,
//      "Can seqlocks get along with programming language memory models?",
//      2012) over atomic words. A reader returns a hit only when the
//      sequence was even and unchanged around its loads of key and value,
//      so it never returns a torn entry; a writer takes the slot by a CAS
//      from even to odd and skips the store when another writer holds it
//      (a memo may drop a result). Every word is an atomic, so readers
//      racing a writer are data-race free.
//
// Thread-safe: every function.
#ifndef SHARDFILTER_FILTERS_INTERNAL_SIZING_MEMO_H_
#define SHARDFILTER_FILTERS_INTERNAL_SIZING_MEMO_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shardfilter/filters/sizing.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::internal {

// What a sizing is of: the layout and its fixed parameters in word 0, then
// capacity, the rate's bits and the byte limit.
struct SizingKey {
  uint64_t words[4];
};

// The uncached searches (M2: what the memo must return).
Result<BlockedSizing> ComputeSplitBlockSizing(uint64_t n, double p,
                                              uint64_t max_bytes);
Result<BlockedSizing> ComputeWordBlockedSizing(uint64_t n, double p, uint32_t k,
                                               uint64_t max_bytes);
Result<BlockedSizing> ComputeBlockedSizing(uint64_t n, double p, uint32_t k,
                                           uint32_t slots_per_block,
                                           uint64_t max_bytes);

// The process-wide memo (M1-M3).
class SizingMemo {
 public:
  static constexpr size_t kSlots = 1024;

  // True with *out set when `key` is held.
  bool Find(const SizingKey& key, BlockedSizing* out) const;
  // Holds `value` for `key`, replacing its slot's entry (or skipping the
  // store when another writer holds the slot).
  void Put(const SizingKey& key, const BlockedSizing& value);

 private:
  static constexpr size_t kValueWords = 3;
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};  // odd while written (M3)
    std::atomic<uint64_t> key[4] = {};
    std::atomic<uint64_t> value[kValueWords] = {};
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line");
  static size_t SlotOf(const SizingKey& key);

  Slot slots_[kSlots];
};

SizingMemo& GlobalSizingMemo();

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_SIZING_MEMO_H_
