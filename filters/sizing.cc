// Bloom filter sizing (the math is in sizing.h): classic, blocked and
// word-blocked layouts, their rate models and the cardinality estimate.
// Cuckoo sizing is in cuckoo_sizing.cc.
#include "shardfilter/filters/sizing.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "shardfilter/filters/internal/poisson_mixture.h"

namespace shardfilter {
namespace {

constexpr long double kLn2 = 0.693147180559945309417232121458176568L;

// P(D = d) for d = 0..k: distinct values among k uniform draws from B.
// dp over draws: a new draw hits an unseen slot with probability (B - d)/B.
std::vector<double> DistinctDistribution(uint32_t k, uint32_t slots) {
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

// Smallest block count in [start, max_blocks] with fpr(blocks) <= p, by a
// geometric then binary search (the FPR decreases with the block count); 0
// if even max_blocks misses p.
template <typename Fpr>
uint64_t LeastBlocks(Fpr&& fpr, double p, uint64_t start, uint64_t max_blocks) {
  uint64_t lo = start, hi = start;
  while (fpr(hi) > p) {
    if (hi >= max_blocks) return 0;
    lo = hi + 1;
    hi = std::min(max_blocks, hi + hi / 4 + 1);
  }
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (fpr(mid) <= p) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return hi;
}

// Shared by the blocked sizings: checks, the k window around the classic
// optimum, and the error past max_bytes. blocks_for(k) returns 0 when no
// count up to max_blocks suffices.
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

double BlockedFpr(uint64_t blocks, uint32_t slots_per_block, uint64_t n,
                  uint32_t k) {
  if (n == 0) return 0.0;
  if (blocks == 0) return 1.0;
  const std::vector<double> distinct = DistinctDistribution(k, slots_per_block);
  const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
  const double log_empty = std::log1p(-1.0 / slots_per_block);
  auto fpr_given = [&](uint64_t j) {
    double q = -std::expm1(log_empty * static_cast<double>(k) * j);
    double e = 0;
    double qd = 1.0;
    for (uint32_t d = 0; d <= k; ++d) {
      e += distinct[d] * qd;
      qd *= q;
    }
    return e;
  };
  return std::min(internal::PoissonMixture(lambda, fpr_given), 1.0);
}

Result<BlockedSizing> BlockedBloomSizing(uint64_t n, double p, uint32_t k,
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
  SF_ASSIGN_OR_RETURN(BlockedSizing best,
                      SizeBlocked(
                          n, p, k,
                          [&](uint32_t kk) {
                            return LeastBlocks(
                                [&](uint64_t b) {
                                  return BlockedFpr(b, slots_per_block, n, kk);
                                },
                                p, start, max_blocks);
                          },
                          max_bytes));
  best.expected_fpr = BlockedFpr(best.blocks, slots_per_block, n, best.k);
  return best;
}

namespace {

// c(i), i = 0..kk: a query word with kk draws is all set, after X draws of
// other keys landed in it, with probability sum_i c(i) (1 - i/64)^X.
std::vector<long double> HitCoefficients(uint32_t kk) {
  const std::vector<double> dist = DistinctDistribution(kk, 64);
  std::vector<long double> c(kk + 1, 0.0L);
  for (uint32_t d = 0; d <= kk; ++d) {
    long double binom = 1;  // C(d, i)
    for (uint32_t i = 0; i <= d; ++i) {
      c[i] += dist[d] * ((i & 1) != 0 ? -binom : binom);
      binom = binom * (d - i) / (i + 1);
    }
  }
  return c;
}

// n! / prod(run lengths!) of a sorted sequence: its distinct orderings.
long double Orderings(const std::vector<uint32_t>& v) {
  long double m = 1;
  for (size_t i = 1, run = 1; i < v.size(); ++i) {
    run = v[i] == v[i - 1] ? run + 1 : 1;
    m = m * (i + 1) / run;
  }
  return m;
}

}  // namespace

double WordBlockedFpr(uint64_t blocks, uint64_t n, uint32_t k) {
  if (n == 0) return 0.0;
  if (blocks == 0 || k == 0) return 1.0;
  // The query's words 0..s-1: sa of them with ka = kb + 1 bits, then sb with
  // kb. Words of one kind are exchangeable, so their i values are enumerated
  // as sorted sequences weighted by their orderings.
  const uint32_t s = BlockedWordsPerKey(k);
  const uint32_t sa = k % s, sb = s - sa, kb = k / s, ka = kb + 1;
  const std::vector<long double> ca = HitCoefficients(ka);
  const std::vector<long double> cb = HitCoefficients(kb);
  const long double lambda = static_cast<long double>(n) / blocks;
  // A key's slots go to sets A (its sa wide slots) and B of words:
  // P(8, s) / (sa! sb!) equally likely (A, B).
  long double choices = 1;
  for (uint32_t i = 0; i < s; ++i) choices *= 8 - i;
  for (uint32_t i = 2; i <= sa; ++i) choices /= i;
  for (uint32_t i = 2; i <= sb; ++i) choices /= i;
  // (1 - i/64)^ka and (1 - i/64)^kb, i = 0..ka.
  std::vector<long double> pow_a(ka + 1), pow_b(ka + 1);
  for (uint32_t i = 0; i <= ka; ++i) {
    pow_a[i] = std::pow(1 - i / 64.0L, ka);
    pow_b[i] = std::pow(1 - i / 64.0L, kb);
  }
  std::vector<uint32_t> ia(sa), ib(sb);
  // mu: mean over a key's (A, B) of prod_{w in A} r_w^ka prod_{w in B}
  // r_w^kb, r_w = 1 - i_w / 64 on query words and 1 (i = 0) elsewhere. DP over
  // the 8 words; state (|A| so far, |B| so far).
  auto mu = [&] {
    long double dp[9][9] = {};
    dp[0][0] = 1;
    for (uint32_t w = 0; w < 8; ++w) {
      const uint32_t i = w < sa ? ia[w] : (w < s ? ib[w - sa] : 0);
      const long double pa = pow_a[i], pb = pow_b[i];
      for (int x = static_cast<int>(std::min(w + 1, sa)); x >= 0; --x) {
        for (int y = static_cast<int>(std::min(w + 1, sb)); y >= 0; --y) {
          dp[x][y] +=
              (x > 0 ? dp[x - 1][y] * pa : 0) + (y > 0 ? dp[x][y - 1] * pb : 0);
        }
      }
    }
    return dp[sa][sb] / choices;
  };
  long double total = 0;
  auto visit = [&](auto&& self, uint32_t pos) -> void {
    if (pos == s) {
      long double coef = Orderings(ia) * Orderings(ib);
      for (uint32_t i : ia) coef *= ca[i];
      for (uint32_t i : ib) coef *= cb[i];
      total += coef * std::exp(lambda * (mu() - 1));
      return;
    }
    const bool wide = pos < sa;
    std::vector<uint32_t>& v = wide ? ia : ib;
    const uint32_t at = wide ? pos : pos - sa;
    for (uint32_t i = at == 0 ? 0 : v[at - 1]; i <= (wide ? ka : kb); ++i) {
      v[at] = i;
      self(self, pos + 1);
    }
  };
  visit(visit, 0);
  return static_cast<double>(std::clamp<long double>(total, 0, 1));
}

namespace {

// The last few word-blocked sizings. A filter of S shards sizes S links of
// (nearly) one capacity, and one sizing evaluates the exact rate model
// (WordBlockedFpr, an enumeration with long double powers) dozens of times
// in its searches: BF.RESERVE of 1e8 items at 0.1% (128 shards) held
// Redis's thread for 1.0 s, 0.35 s at 1% (whose layout choice sizes both
// layouts). Pure function of its arguments, so a hit returns what a
// recomputation would.
struct WordSizingKey {
  uint64_t n;
  uint64_t p_bits;
  uint32_t k;
  uint64_t max_bytes;
  bool operator==(const WordSizingKey&) const = default;
};

class WordSizingMemo {
 public:
  bool Find(const WordSizingKey& key, BlockedSizing* out) {
    std::lock_guard lock(mu_);
    for (const auto& [k, v] : entries_) {
      if (k == key) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  void Put(const WordSizingKey& key, const BlockedSizing& value) {
    std::lock_guard lock(mu_);
    if (entries_.size() >= kEntries) entries_.erase(entries_.begin());
    entries_.emplace_back(key, value);
  }

 private:
  static constexpr size_t kEntries = 32;
  std::mutex mu_;
  std::vector<std::pair<WordSizingKey, BlockedSizing>> entries_;
};

WordSizingMemo& WordMemo() {
  static WordSizingMemo memo;
  return memo;
}

}  // namespace

Result<BlockedSizing> WordBlockedBloomSizing(uint64_t n, double p, uint32_t k,
                                             uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  const WordSizingKey key{n, std::bit_cast<uint64_t>(p), k, max_bytes};
  BlockedSizing memo;
  if (WordMemo().Find(key, &memo)) return memo;
  if (k != 0 && (k < kMinHashFunctions || k > kMaxHashFunctions)) {
    return Status::InvalidArgument("k (hashes per key) must be in 1..32, got " +
                                   std::to_string(k));
  }
  const uint64_t max_blocks = std::max<uint64_t>(1, max_bytes / 64);
  SF_ASSIGN_OR_RETURN(uint64_t classic_bits, ClassicBloomBits(n, p));
  // Confining bits to words only adds variance: the classic size is a
  // lower bound here too.
  const uint64_t start =
      std::clamp<uint64_t>(classic_bits / 512, 1, max_blocks);
  SF_ASSIGN_OR_RETURN(
      BlockedSizing best,
      SizeBlocked(
          n, p, k,
          [&](uint32_t kk) {
            return LeastBlocks(
                [&](uint64_t b) { return WordBlockedFpr(b, n, kk); }, p, start,
                max_blocks);
          },
          max_bytes));
  best.expected_fpr = WordBlockedFpr(best.blocks, n, best.k);
  WordMemo().Put(key, best);
  return best;
}

double SplitBlockFpr(uint64_t blocks, uint64_t n) {
  if (n == 0) return 0.0;
  if (blocks == 0) return 1.0;
  const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
  const double log_empty = std::log1p(-1.0 / 32);  // a lane misses a key
  return std::min(
      internal::PoissonMixture(
          lambda,
          [&](uint64_t j) { return std::pow(-std::expm1(log_empty * j), 8); }),
      1.0);
}

Result<BlockedSizing> SplitBlockBloomSizing(uint64_t n, double p,
                                            uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  const uint64_t max_blocks = std::max<uint64_t>(1, max_bytes / 32);
  SF_ASSIGN_OR_RETURN(uint64_t classic_bits, ClassicBloomBits(n, p));
  const uint64_t start =
      std::clamp<uint64_t>(classic_bits / 256, 1, max_blocks);
  SF_ASSIGN_OR_RETURN(BlockedSizing best,
                      SizeBlocked(
                          n, p, kSplitBlockK,
                          [&](uint32_t) {
                            return LeastBlocks(
                                [&](uint64_t b) { return SplitBlockFpr(b, n); },
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
