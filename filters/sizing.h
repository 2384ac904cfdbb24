// Sizing math for every filter type, in one place.
//
// Classic Bloom (k positions over the whole array, Bloom 1970; Broder and
// Mitzenmacher 2004):
//   m = ceil(-n ln p / (ln 2)^2)         bits for n items at rate p
//   k = round(m / n * ln 2)              optimal number of hash functions
//   FPR(m, n, k) = (1 - e^{-kn/m})^k
//   e.g. n=1e6, p=0.01 -> 9,585,059 bits, k=7;  n=1e8, p=0.01 -> 958,505,838
//   bits (114.3 MiB). The lower bound for any filter is log2(1/p) bits/item
//   (6.64 at 1%); classic Bloom needs 1.44x that.
//
// Blocked Bloom (all k bits of a key inside one B-slot block, B = 512 bits
// for a 64-byte cache line; Putze, Sanders, Singler 2007): blocks receive a
// Poisson(lambda = n / blocks) number of items, and a block with j items
// answers a foreign key positively with probability E[q_j^D], where
// q_j = 1 - (1 - 1/B)^{k j} is the block's fill and D is the number of
// distinct slots among the query's k draws (with replacement) from B. So
//   FPR = sum_j Poisson(j; lambda) * E[q_j^D].
// The uneven load costs bits: at p = 1% the blocked layout needs about
// 10.0 bits/item (k=6 or 7) against the classic 9.59; at 0.1% about 15.7
// against 14.4. BlockedBloomSizing() searches for the smallest number of
// blocks meeting p for each k, instead of padding the classic figure by a
// guessed factor. The same math serves the counting filter with B = 128
// four-bit counters per line.
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_FILTERS_SIZING_H_
#define SHARDFILTER_FILTERS_SIZING_H_

#include <cstdint>

#include "filters/status.h"

namespace shardfilter {

// Upper bound on one filter's memory unless the caller sets another. Larger
// requests are an InvalidArgument error, not an allocation failure.
inline constexpr uint64_t kDefaultMaxFilterBytes = 64ULL << 30;  // 64 GiB
inline constexpr uint32_t kMinHashFunctions = 1;
inline constexpr uint32_t kMaxHashFunctions = 32;

// Checks 0 < p < 1 (and not NaN), n > 0.
Status ValidateCapacityAndFpp(uint64_t n, double p);

// m = ceil(-n ln p / ln^2 2). Errors on bad (n, p) or if m overflows.
Result<uint64_t> ClassicBloomBits(uint64_t n, double p);

// round(m / n * ln 2), clamped to [1, 32]. n > 0.
uint32_t OptimalHashFunctions(uint64_t m, uint64_t n);

// (1 - e^{-kn/m})^k. 0 when n == 0.
double ClassicBloomFpr(uint64_t m, uint64_t n, uint32_t k);

// Expected FPR of a blocked filter of `blocks` blocks of `slots_per_block`
// slots each (512 for Bloom bits, 128 for 4-bit counters) holding n items
// with k slots per item, per the Poisson mixture above.
double BlockedFpr(uint64_t blocks, uint32_t slots_per_block, uint64_t n,
                  uint32_t k);

struct BlockedSizing {
  uint64_t blocks = 0;  // number of 64-byte blocks
  uint32_t k = 0;       // slots set per key
  double expected_fpr = 0;  // BlockedFpr at capacity, <= the target
};

// Smallest blocked layout whose expected FPR at n items is <= p. With
// k == 0, chooses the k (1..32) that needs the fewest blocks; otherwise uses
// the given k. Errors on bad parameters or when the result would exceed
// max_bytes.
Result<BlockedSizing> BlockedBloomSizing(uint64_t n, double p, uint32_t k,
                                         uint32_t slots_per_block,
                                         uint64_t max_bytes);

// Estimated number of distinct items in a Bloom-style array of `slots`
// slots of which `set` are non-zero, with k slots per item (Swamidass and
// Baldi 2007): -(slots / k) ln(1 - set / slots). Returns +inf-capped value
// slots (not infinity) when the array is full.
double EstimateCardinality(uint64_t slots, uint64_t set, uint32_t k);

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_SIZING_H_
