// The search shared by the blocked sizings (filters/sizing.cc,
// filters/word_blocked_sizing.cc): the fewest blocks whose rate bound meets
// the target, the k window around the classic optimum, and the bound
// itself (filters/sizing.h, "The rate a filter realizes").
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_FILTERS_INTERNAL_BLOCKED_SEARCH_H_
#define SHARDFILTER_FILTERS_INTERNAL_BLOCKED_SEARCH_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "shardfilter/filters/sizing.h"

namespace shardfilter::internal {

// P(D = d) for d = 0..k: distinct values among k uniform draws from B.
// dp over draws: a new draw hits an unseen slot with probability (B - d)/B.
inline std::vector<double> DistinctDistribution(uint32_t k, uint32_t slots) {
  std::vector<double> dist(k + 1, 0.0);
  dist[0] = 1.0;
  for (uint32_t draw = 0; draw < k; ++draw) {
    for (int d = static_cast<int>(draw) + 1; d >= 0; --d) {
      double stay = dist[d] * (static_cast<double>(d) / slots);
      double grow =
          d > 0 ? dist[d - 1] * (static_cast<double>(slots - (d - 1)) / slots)
                : 0.0;
      dist[d] = stay + grow;
    }
  }
  return dist;
}

// mean + kRealizedRateSigmas standard deviations of the rate of `blocks`
// blocks, given the mean and second moment of one block's rate g(J) over
// its load J: the blocks' rates average, so the deviation of the filter's
// rate is sqrt(Var g(J) / blocks).
inline double RealizedRateBound(double mean, double second_moment,
                                uint64_t blocks) {
  const double var = std::max(0.0, second_moment - mean * mean);
  return std::min(1.0, mean + kRealizedRateSigmas *
                                  std::sqrt(var / static_cast<double>(blocks)));
}

// Smallest block count in [start, max_blocks] with bound(blocks) <= p, by a
// geometric then binary search (the bound decreases with the block count);
// 0 if even max_blocks misses p.
template <typename Bound>
uint64_t LeastBlocks(Bound&& bound, double p, uint64_t start,
                     uint64_t max_blocks) {
  uint64_t lo = start, hi = start;
  while (bound(hi) > p) {
    if (hi >= max_blocks) return 0;
    lo = hi + 1;
    hi = std::min(max_blocks, hi + hi / 4 + 1);
  }
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (bound(mid) <= p) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return hi;
}

// Checks, the k window around the classic optimum, and the error past
// max_bytes. blocks_for(k) returns 0 when no count up to max_blocks
// suffices.
template <typename BlocksFor>
Result<BlockedSizing> SizeBlocked(uint64_t n, double p, uint32_t k,
                                  BlocksFor&& blocks_for, uint64_t max_bytes) {
  BlockedSizing best;
  if (k != 0) {
    best.k = k;
    best.blocks = blocks_for(k);
  } else {
    // The optimum sits near the classic k; scan a window around it.
    const uint32_t k0 = OptimalHashFunctions(*ClassicBloomBits(n, p), n);
    const uint32_t k_lo =
        std::max<uint32_t>(kMinHashFunctions, k0 > 3 ? k0 - 3 : 1);
    const uint32_t k_hi = std::min<uint32_t>(kMaxHashFunctions, k0 + 3);
    for (uint32_t kk = k_lo; kk <= k_hi; ++kk) {
      const uint64_t b = blocks_for(kk);
      if (b != 0 && (best.blocks == 0 || b < best.blocks)) {
        best.blocks = b;
        best.k = kk;
      }
    }
  }
  if (best.blocks == 0) {
    return Status::InvalidArgument("capacity " + std::to_string(n) +
                                   " at rate " + FormatRate(p) +
                                   " needs more than the memory limit of " +
                                   std::to_string(max_bytes) + " bytes");
  }
  return best;
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_BLOCKED_SEARCH_H_
