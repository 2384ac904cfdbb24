// Bloom filter sizing (the math is in sizing.h): the classic, blocked
// (counting) and split-block layouts, their rate models, searches and the
// cardinality estimate. The word-blocked layout is in
// word_blocked_sizing.cc, cuckoo sizing in cuckoo_sizing.cc, and the memo
// the public blocked sizings consult before searching in sizing_memo.cc.
#include "shardfilter/filters/sizing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "shardfilter/filters/internal/blocked_search.h"
#include "shardfilter/filters/internal/poisson_mixture.h"
#include "shardfilter/filters/internal/sizing_memo.h"

namespace shardfilter {
namespace {

constexpr long double kLn2 = 0.693147180559945309417232121458176568L;

}  // namespace

std::string FormatRate(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

Status ValidateCapacityAndFpp(uint64_t n, double p) {
  if (n == 0) return Status::InvalidArgument("capacity must be at least 1");
  if (!(p > 0.0) || !(p < 1.0)) {
    return Status::InvalidArgument(
        "false-positive rate must be strictly between 0 and 1, got " +
        FormatRate(p));
  }
  return Status::OK();
}

Result<uint64_t> ClassicBloomBits(uint64_t n, double p) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  long double m = -static_cast<long double>(n) *
                  std::log(static_cast<long double>(p)) / (kLn2 * kLn2);
  if (!(m < 1.8e19L)) {
    return Status::InvalidArgument("filter size overflows 64 bits");
  }
  return static_cast<uint64_t>(std::ceil(m));
}

uint32_t OptimalHashFunctions(uint64_t m, uint64_t n) {
  if (n == 0) return kMinHashFunctions;
  long double k = std::round(static_cast<long double>(m) / n * kLn2);
  return static_cast<uint32_t>(
      std::clamp<long double>(k, kMinHashFunctions, kMaxHashFunctions));
}

double ClassicBloomFpr(uint64_t m, uint64_t n, uint32_t k) {
  if (n == 0 || m == 0) return n == 0 ? 0.0 : 1.0;
  double x = -static_cast<double>(k) * static_cast<double>(n) / m;
  return std::pow(-std::expm1(x), k);
}

namespace {

// The rate of a blocked block holding j keys (the q^D form of sizing.h).
class BlockedBlockRate {
 public:
  BlockedBlockRate(uint32_t slots_per_block, uint32_t k)
      : k_(k),
        distinct_(internal::DistinctDistribution(k, slots_per_block)),
        log_empty_(std::log1p(-1.0 / slots_per_block)) {}
  double operator()(uint64_t j) const {
    double q = -std::expm1(log_empty_ * static_cast<double>(k_) * j);
    double e = 0;
    double qd = 1.0;
    for (uint32_t d = 0; d <= k_; ++d) {
      e += distinct_[d] * qd;
      qd *= q;
    }
    return e;
  }

 private:
  uint32_t k_;
  std::vector<double> distinct_;
  double log_empty_;
};

// BlockedFprBound, or the mean alone when it exceeds `cutoff` (a search
// needs no more to rule the count out).
double BlockedBound(uint64_t blocks, uint32_t slots_per_block, uint64_t n,
                    uint32_t k, double cutoff) {
  if (n == 0) return 0.0;
  if (blocks == 0) return 1.0;
  const BlockedBlockRate g(slots_per_block, k);
  const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
  const double mean = std::min(internal::PoissonMixture(lambda, g), 1.0);
  if (mean > cutoff) return mean;
  const double second = internal::PoissonMixture(lambda, [&](uint64_t j) {
    const double r = std::min(g(j), 1.0);
    return r * r;
  });
  return internal::RealizedRateBound(mean, second, blocks);
}

// The rate of a split block holding j keys: each of its 8 lanes holds the
// query's bit with probability 1 - (31/32)^j.
double SplitBlockRate(uint64_t j) {
  static const double log_empty = std::log1p(-1.0 / 32);  // a lane misses
  return std::pow(-std::expm1(log_empty * static_cast<double>(j)), 8);
}

double SplitBound(uint64_t blocks, uint64_t n, double cutoff) {
  const double mean = SplitBlockFpr(blocks, n);
  if (n == 0 || blocks == 0 || mean > cutoff) return mean;
  const double second = internal::PoissonMixture(
      static_cast<double>(n) / static_cast<double>(blocks), [](uint64_t j) {
        const double r = SplitBlockRate(j);
        return r * r;
      });
  return internal::RealizedRateBound(mean, second, blocks);
}

}  // namespace

double BlockedFpr(uint64_t blocks, uint32_t slots_per_block, uint64_t n,
                  uint32_t k) {
  if (n == 0) return 0.0;
  if (blocks == 0) return 1.0;
  const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
  return std::min(
      internal::PoissonMixture(lambda, BlockedBlockRate(slots_per_block, k)),
      1.0);
}

double BlockedFprBound(uint64_t blocks, uint32_t slots_per_block, uint64_t n,
                       uint32_t k) {
  return BlockedBound(blocks, slots_per_block, n, k, 1.0);
}

Result<BlockedSizing> internal::ComputeBlockedSizing(uint64_t n, double p,
                                                     uint32_t k,
                                                     uint32_t slots_per_block,
                                                     uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  if (k != 0 && (k < kMinHashFunctions || k > kMaxHashFunctions)) {
    return Status::InvalidArgument("k (hashes per key) must be in 1..32, got " +
                                   std::to_string(k));
  }
  if (slots_per_block == 0) {
    return Status::InvalidArgument("slots per block must be positive");
  }
  const uint64_t max_blocks = std::max<uint64_t>(1, max_bytes / 64);
  SF_ASSIGN_OR_RETURN(uint64_t classic_bits, ClassicBloomBits(n, p));
  // A blocked layout never beats the classic one at the same k, so the
  // classic slot count is a lower bound that keeps the search short.
  const uint64_t start =
      std::clamp<uint64_t>(classic_bits / slots_per_block, 1, max_blocks);
  SF_ASSIGN_OR_RETURN(BlockedSizing best, internal::SizeBlocked(
                                              n, p, k,
                                              [&](uint32_t kk) {
                                                return internal::LeastBlocks(
                                                    [&](uint64_t b) {
                                                      return BlockedBound(
                                                          b, slots_per_block, n,
                                                          kk, p);
                                                    },
                                                    p, start, max_blocks);
                                              },
                                              max_bytes));
  best.expected_fpr = BlockedFpr(best.blocks, slots_per_block, n, best.k);
  return best;
}

double SplitBlockFpr(uint64_t blocks, uint64_t n) {
  if (n == 0) return 0.0;
  if (blocks == 0) return 1.0;
  const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
  return std::min(internal::PoissonMixture(lambda, SplitBlockRate), 1.0);
}

double SplitBlockFprBound(uint64_t blocks, uint64_t n) {
  return SplitBound(blocks, n, 1.0);
}

Result<BlockedSizing> internal::ComputeSplitBlockSizing(uint64_t n, double p,
                                                        uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  const uint64_t max_blocks = std::max<uint64_t>(1, max_bytes / 32);
  SF_ASSIGN_OR_RETURN(uint64_t classic_bits, ClassicBloomBits(n, p));
  const uint64_t start =
      std::clamp<uint64_t>(classic_bits / 256, 1, max_blocks);
  SF_ASSIGN_OR_RETURN(BlockedSizing best,
                      internal::SizeBlocked(
                          n, p, kSplitBlockK,
                          [&](uint32_t) {
                            return internal::LeastBlocks(
                                [&](uint64_t b) { return SplitBound(b, n, p); },
                                p, start, max_blocks);
                          },
                          max_bytes));
  best.expected_fpr = SplitBlockFpr(best.blocks, n);
  return best;
}

double EstimateCardinality(uint64_t slots, uint64_t set, uint32_t k) {
  if (slots == 0 || k == 0) return 0;
  if (set >= slots) return static_cast<double>(slots);
  double frac = static_cast<double>(set) / slots;
  return -(static_cast<double>(slots) / k) * std::log1p(-frac);
}

}  // namespace shardfilter
