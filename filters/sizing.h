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
// four-bit counters per line. The sum over j costs a bounded number of
// terms whatever lambda (filters/internal/poisson_mixture.h): a search
// for a huge capacity under a small memory limit evaluates lambdas of
// 1e12 and more.
//
// The rate a filter realizes. These models give the rate averaged over key
// sets. One filter realizes the rate of its own key set, and with few
// blocks that spreads widely around the mean: a block holding a few keys
// more than the average answers far more positives, and there are few
// blocks to average it out. For 100 keys in 5 split blocks (link 0 of
// BF.ADD's default filter, target 0.5%) the mean is 0.40% with a standard
// deviation of 0.22% between key sets: a third of them realized more than
// the target, and one such link took a default scaling filter to 1.16% at
// a 1% target. So every blocked sizing chooses the fewest blocks whose
//   mean + kRealizedRateSigmas * sqrt(Var g(J) / blocks)  <=  p,
// g(j) the rate of a block holding j keys, J ~ Poisson(lambda): the spread
// of the blocks' loads, which is most of it (the placement of bits within
// a block adds ~5% to the deviation, computed for the split-block layout),
// with blocks taken as independent (their loads are slightly negatively
// correlated, so this errs high). Three deviations: a key set realizes
// more than p about once in a few hundred (the tail is heavier than a
// normal one at a few blocks; tests/sizing_small_filters_test.cc measures
// 200 key sets per layout). The deviation shrinks as 1/sqrt(blocks): the
// bound costs 20% more memory at 100 keys (6 split blocks, not 5), ~3% at
// 10^4, ~0.3% at 10^6.
//
// The blocked searches cost ~10^5 instructions or more each; their results
// are memoized in a bounded, lock-free table (filters/internal/
// sizing_memo.h), so sizing a spec seen before costs a lookup and returns
// exactly what the search returned.
//
// Thread-safe: pure functions (the memo changes no result).
#ifndef SHARDFILTER_FILTERS_SIZING_H_
#define SHARDFILTER_FILTERS_SIZING_H_

#include <cstdint>
#include <string>

#include "shardfilter/filters/status.h"

namespace shardfilter {

// Upper bound on one filter's memory unless the caller sets another. Larger
// requests are an InvalidArgument error, not an allocation failure.
inline constexpr uint64_t kDefaultMaxFilterBytes = 64ULL << 30;  // 64 GiB
inline constexpr uint32_t kMinHashFunctions = 1;
inline constexpr uint32_t kMaxHashFunctions = 32;

// Checks 0 < p < 1 (and not NaN), n > 0.
Status ValidateCapacityAndFpp(uint64_t n, double p);
// A rate for messages: "%g" ("0.01", "1e-30"), never std::to_string's
// fixed "0.000000" for a rate below 1e-6.
std::string FormatRate(double p);

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

// Standard deviations of the realized rate the blocked sizings add to the
// mean (above).
inline constexpr double kRealizedRateSigmas = 3;

// A decoded Bloom or counting table must give at most this multiple of
// its stored rate at its stored capacity (the codecs' check that capacity,
// rate and k agree with the table: a link claiming far more keys than its
// table holds would never make its chain grow, and would fill until it
// answers 1 for everything). The rate checked is the classic one of the
// table's slots (ClassicBloomFpr), a lower bound of every layout's model,
// at the cost of one pow per decode. Not 1: a folded link
// (BloomFilter::Fold) keeps the target spec's per-shard headroom,
// relatively larger than its source's (up to ~1.3x the rate at 1e6 keys
// per shard folded 64x), and tables sized by an earlier model must keep
// loading. Twice the keys multiply a table's rate by ~1.5^k (11x at
// k = 6), so a claim above ~1.3x the keys it holds fails.
inline constexpr double kDecodedRateSlack = 2;

// BlockedFpr plus kRealizedRateSigmas standard deviations of the rate one
// key set realizes (above).
double BlockedFprBound(uint64_t blocks, uint32_t slots_per_block, uint64_t n,
                       uint32_t k);

struct BlockedSizing {
  uint64_t blocks = 0;      // number of 64-byte blocks
  uint32_t k = 0;           // slots set per key
  double expected_fpr = 0;  // the mean rate at capacity, below the target
};

// Smallest blocked layout whose rate bound (BlockedFprBound) at n items is
// <= p. With
// k == 0, chooses the k (1..32) that needs the fewest blocks; otherwise uses
// the given k. Errors on bad parameters or when the result would exceed
// max_bytes.
Result<BlockedSizing> BlockedBloomSizing(uint64_t n, double p, uint32_t k,
                                         uint32_t slots_per_block,
                                         uint64_t max_bytes);

// ---------------------------------------------------------------------------
// Word-confined blocked Bloom: the layout of BloomFilter's kBlocked. A key's
// k bits go to s = BlockedWordsPerKey(k) distinct 64-bit words of its 512-bit
// line, the ordered word tuple uniform over the 8!/(8-s)! choices; k mod s
// words get ceil(k/s) bits, the others floor(k/s); each bit is drawn with
// replacement from the word's 64. An add is s atomic ORs (not up to 8) and a
// query s loads and s mask tests.
//
// Exact FPR under the Poisson(lambda = n / blocks) block load. For a query
// word with kk draws of which D are distinct, after X draws of other keys
// landed in that word, P(all D set) = sum_i (-1)^i C(D,i) (1 - i/64)^X
// (inclusion-exclusion; exact, unlike q^D). So the hit probability is
// sum_i c(i) r_i^X with c(i) = sum_d P(D=d) (-1)^i C(d,i), r_i = 1 - i/64,
// and, the block's keys being independent, for each choice i_w per query
// word E[prod_w r_{i_w}^{X_w}] = exp(lambda (mu - 1)), where mu is the mean
// over one key's word tuple of prod over its slots landing on query words of
// r^{bits of the slot}. Keys that share two of the query's words correlate
// those words' fills; this form keeps that (treating words as independent
// underestimates the FPR by ~4% at k = 6).
//   FPR = sum_{i_1..i_s} prod_w c_w(i_w) * exp(lambda (mu(i) - 1)).
// Checked by simulation (2e7 queries, 1e6 keys, 19,500 blocks, k = 6):
// model 1.0806%, simulated 1.0856%.
//
// Why s = ceil(k/4), at least 2, at most 8 (bits/item at n = 1e6, exact
// model; the 512-bit spread for reference, by BlockedFpr's q^D bound):
//   p       512-bit spread   s = 2 always       s = ceil(k/4), >= 2
//   10%     4.85 (k=3)       4.85 (k=3, s=2)    4.85 (k=3, s=2)
//   1%      9.97 (k=6)       10.18 (k=6, s=2)   10.18 (k=6, s=2)
//   0.1%    15.68 (k=9)      16.76 (k=8, s=2)   15.78 (k=9, s=3)
//   0.01%   22.30 (k=12)     25.26 (k=10, s=2)  22.30 (k=13, s=4)
// Two words cost 2% more space at 1% and 13% at 0.01%; four bits per word at
// most keeps the space of the 512-bit spread while an add at 1% still takes
// 2 atomic ORs instead of ~4.4 (k = 6 over 8 words: 8 (1 - (7/8)^6)). Three
// bits per word (s = ceil(k/3)) saves 2% at 1% but needs 3 words at k = 6.
// A cheaper word choice (w_j = w_0 + j * odd stride) would cost 0.8% (s = 2)
// to 1.7% (s = 4) more space: the tuple is drawn uniformly instead.
// ---------------------------------------------------------------------------

inline constexpr uint32_t kBlockedMaxBitsPerWord = 4;

// Words of its line a key's bits go to: 1 for k = 1, else
// min(8, max(2, ceil(k / 4))).
constexpr uint32_t BlockedWordsPerKey(uint32_t k) {
  if (k <= 1) return 1;
  const uint32_t s = (k + kBlockedMaxBitsPerWord - 1) / kBlockedMaxBitsPerWord;
  return s < 2 ? 2 : (s > 8 ? 8 : s);
}
// Bits of the key in its j-th word (j < BlockedWordsPerKey(k)).
constexpr uint32_t BlockedBitsInWord(uint32_t k, uint32_t j) {
  const uint32_t s = BlockedWordsPerKey(k);
  return k / s + (j < k % s ? 1 : 0);
}

// Expected FPR of the word-confined blocked layout (above): `blocks` 512-bit
// blocks holding n items, k bits per item. Computed in long double: the
// alternating sum keeps an absolute error below 1e-9 up to k = 32.
double WordBlockedFpr(uint64_t blocks, uint64_t n, uint32_t k);

// WordBlockedFpr plus kRealizedRateSigmas standard deviations of the rate
// one key set realizes (above; Var g(J) from g(j) = sum_i c(i) mu(i)^j,
// the block's rate given j keys).
double WordBlockedFprBound(uint64_t blocks, uint64_t n, uint32_t k);

// As BlockedBloomSizing, for the word-confined layout with 512-bit blocks:
// the fewest blocks whose WordBlockedFprBound at n is <= p (k == 0: the k
// among the classic optimum +- 3 that needs the fewest).
Result<BlockedSizing> WordBlockedBloomSizing(uint64_t n, double p, uint32_t k,
                                             uint64_t max_bytes);

// ---------------------------------------------------------------------------
// Split-block Bloom: the layout of BloomFilter's kSplitBlock
// (filters/detail/split_block.h). 256-bit blocks of eight 32-bit lanes; a
// key sets one bit in each lane of its block (k = 8). Given j keys in a
// block, each lane holds a query's bit with probability 1 - (31/32)^j,
// independently per lane (each lane's bit comes from its own multiplier), so
// under the Poisson(lambda = n / blocks) block load
//   FPR = sum_j Poisson(j; lambda) (1 - (31/32)^j)^8,
// exact for the hash model. Bits per item (n = 1e6) against the
// word-blocked layout above:
//   p        split block   word-blocked   ratio
//   10%      5.99          4.85           1.23
//   2%       9.02          8.51           1.06
//   1%       10.53         10.18          1.03
//   0.5%     12.20         11.80          1.03
//   0.25%    14.07         13.41          1.05
//   0.1%     16.89         15.78          1.07
//   0.01%    26.34         22.30          1.18
// Measured FPR at capacity (tests/bloom_filter_test.cc, 2e5 keys, 1e6
// absent queries): 1.005% at 1%, 0.516% at 0.5%, 0.102% at 0.1%.
// It needs more memory away from ~1-2% (k is fixed at 8) and buys the
// cheapest probe there is: one vector multiply, shift and variable shift
// make the eight bits, one load and one test check them.
// ---------------------------------------------------------------------------

inline constexpr uint32_t kSplitBlockK = 8;

// Expected FPR of `blocks` split blocks holding n items.
double SplitBlockFpr(uint64_t blocks, uint64_t n);
// SplitBlockFpr plus kRealizedRateSigmas standard deviations of the rate
// one key set realizes (above).
double SplitBlockFprBound(uint64_t blocks, uint64_t n);

// The fewest 256-bit blocks whose SplitBlockFprBound at n is <= p (k is 8).
// Errors on bad parameters or past max_bytes.
Result<BlockedSizing> SplitBlockBloomSizing(uint64_t n, double p,
                                            uint64_t max_bytes);

// Estimated number of distinct items in a Bloom-style array of `slots`
// slots of which `set` are non-zero, with k slots per item (Swamidass and
// Baldi 2007): -(slots / k) ln(1 - set / slots). Returns +inf-capped value
// slots (not infinity) when the array is full.
double EstimateCardinality(uint64_t slots, uint64_t set, uint32_t k);

// ---------------------------------------------------------------------------
// Cuckoo filter sizing (partial-key cuckoo hashing, Fan et al., CoNEXT'14).
//
// A table of `buckets` buckets of b slots each holds one f-bit fingerprint
// per slot; every key has two candidate buckets. A query for an absent key
// compares its fingerprint with the 2b slots of its two buckets; at load
// alpha (occupied / total slots) each slot is occupied with probability
// alpha, and an occupied slot matches the query's fingerprint with
// probability s; fingerprint 0 means "empty" and is mapped to 1, so value
// 1 is twice as likely as the others and s = sum_v P(v)^2 =
// 2^-f (1 + 2^{1-f}), not 2^-f (0.8% more at f = 8: a table sized with
// 2^-f at a solved load measured that much above its target). So
//   FPR(f, b, alpha) = 1 - (1 - s)^(2 b alpha)  ~  2 b alpha / 2^f.
// Figures at b = 4:
//   f =  8: 2.92% at alpha 0.94, 3.11% full;  8 / 0.94 =  8.5 bits/item
//   f = 12: 0.183% at alpha 0.94, 0.195% full; 12 / 0.94 = 12.8 bits/item
//   f = 16: 0.0115% at alpha 0.94, 0.0122% full; 16 / 0.94 = 17.0 bits/item
// The load a table reaches before an insert first fails (two choices,
// breadth-first displacement search) is about 84% for b = 2, 95-96% for
// b = 4 and 98% for b = 8 on large tables. The design load below keeps a
// margin under those, so a filter filled to its capacity does not fail.
// The bucket count is NOT rounded to a power of two: any count works with
// FastRange and the alternate-bucket involution of cuckoo_filter.h, so the
// memory follows the capacity (bits/item = f / alpha exactly).
// ---------------------------------------------------------------------------

inline constexpr uint32_t kCuckooMaxKicksLimit = 1u << 16;

// s = 2^-f (1 + 2^{1-f}): the chance that an occupied slot matches a
// query's fingerprint (above).
double CuckooSlotMatch(uint32_t fingerprint_bits);
// 1 - (1 - s)^(2 b load). 0 when load <= 0.
double CuckooFpr(uint32_t fingerprint_bits, uint32_t bucket_size, double load);

// Load at capacity that Create sizes for: 0.80 (b=2), 0.94 (b=4), 0.96
// (b=8). 0 for an unsupported bucket size.
double CuckooDesignLoad(uint32_t bucket_size);

// Bytes of a packed table: buckets * b * f bits rounded up to 64-bit words.
// Saturates at UINT64_MAX on overflow.
uint64_t CuckooTableBytes(uint64_t buckets, uint32_t bucket_size,
                          uint32_t fingerprint_bits);

struct CuckooSizing {
  uint64_t buckets = 0;
  uint32_t bucket_size = 0;
  uint32_t fingerprint_bits = 0;
  double load_at_capacity = 0;  // capacity / (buckets * bucket_size)
  double expected_fpr = 0;      // CuckooFpr at that load, <= the target
  uint64_t table_bytes = 0;     // CuckooTableBytes
};

// Smallest table meeting rate p at n items. bucket_size must be 2, 4 or 8;
// fingerprint_bits 8, 12 or 16, or 0 to choose the width that needs the
// fewest bytes. For a width whose rate at the design load exceeds p, the
// load at capacity is lowered until the rate holds (more buckets). Errors
// on bad parameters, on p below what 16 bits can give, or past max_bytes.
Result<CuckooSizing> CuckooFilterSizing(uint64_t n, double p,
                                        uint32_t fingerprint_bits,
                                        uint32_t bucket_size,
                                        uint64_t max_bytes);

// A table of exactly `buckets` buckets (>= 1) of bucket_size (2, 4 or 8)
// slots of fingerprint_bits (8, 12 or 16), for n items (its load and rate
// at n are reported, whatever they are: the caller chose the geometry, as
// RedisBloom's CF.RESERVE does). Errors on bad parameters or past
// max_bytes.
Result<CuckooSizing> CuckooExactSizing(uint64_t n, uint64_t buckets,
                                       uint32_t fingerprint_bits,
                                       uint32_t bucket_size,
                                       uint64_t max_bytes);

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_SIZING_H_
