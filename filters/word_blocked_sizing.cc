// The word-confined blocked Bloom layout's rate model and search (the math
// is in sizing.h): WordBlockedFpr, its realized-rate bound and the search
// behind WordBlockedBloomSizing (filters/sizing_memo.cc). The other layouts
// are in sizing.cc.
#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "shardfilter/filters/internal/blocked_search.h"
#include "shardfilter/filters/internal/poisson_mixture.h"
#include "shardfilter/filters/internal/sizing_memo.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter {
namespace {

// c(i), i = 0..kk: a query word with kk draws is all set, after X draws of
// other keys landed in it, with probability sum_i c(i) (1 - i/64)^X.
std::vector<long double> HitCoefficients(uint32_t kk) {
  const std::vector<double> dist = internal::DistinctDistribution(kk, 64);
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

// One term of the rate (sizing.h): the block's rate given j keys is
// g(j) = sum over terms of coef mu^j, so under the Poisson load
// FPR = sum coef e^{lambda (mu - 1)}.
struct WordTerm {
  long double coef;
  long double mu;
};

// The terms of k (they depend on k alone), in the order the rate sums them.
std::vector<WordTerm> MakeWordTerms(uint32_t k) {
  // The query's words 0..s-1: sa of them with ka = kb + 1 bits, then sb with
  // kb. Words of one kind are exchangeable, so their i values are enumerated
  // as sorted sequences weighted by their orderings.
  const uint32_t s = BlockedWordsPerKey(k);
  const uint32_t sa = k % s, sb = s - sa, kb = k / s, ka = kb + 1;
  const std::vector<long double> ca = HitCoefficients(ka);
  const std::vector<long double> cb = HitCoefficients(kb);
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
  std::vector<WordTerm> terms;
  auto visit = [&](auto&& self, uint32_t pos) -> void {
    if (pos == s) {
      long double coef = Orderings(ia) * Orderings(ib);
      for (uint32_t i : ia) coef *= ca[i];
      for (uint32_t i : ib) coef *= cb[i];
      terms.push_back({coef, mu()});
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
  return terms;
}

// MakeWordTerms(k), made once per k. REQUIRES: 1 <= k <= kMaxHashFunctions.
const std::vector<WordTerm>& WordTerms(uint32_t k) {
  static std::array<std::once_flag, kMaxHashFunctions + 1> once;
  static std::array<std::vector<WordTerm>, kMaxHashFunctions + 1> terms;
  std::call_once(once[k], [k] { terms[k] = MakeWordTerms(k); });
  return terms[k];
}

}  // namespace

double WordBlockedFpr(uint64_t blocks, uint64_t n, uint32_t k) {
  if (n == 0) return 0.0;
  if (blocks == 0 || k == 0) return 1.0;
  if (k > kMaxHashFunctions) return 1.0;
  const long double lambda = static_cast<long double>(n) / blocks;
  long double total = 0;
  for (const WordTerm& t : WordTerms(k)) {
    total += t.coef * std::exp(lambda * (t.mu - 1));
  }
  return static_cast<double>(std::clamp<long double>(total, 0, 1));
}

namespace {

// WordBlockedFprBound, or the mean alone when it exceeds `cutoff` (the
// bound, above it too, need not be computed for a search to rule the
// count out).
double WordBound(uint64_t blocks, uint64_t n, uint32_t k, double cutoff) {
  const double mean = WordBlockedFpr(blocks, n, k);
  if (n == 0 || blocks == 0 || k == 0 || k > kMaxHashFunctions ||
      mean > cutoff) {
    return mean;
  }
  const std::vector<WordTerm>& terms = WordTerms(k);
  const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
  // g(j) = sum coef mu^j, each g(j) in [0, 1] summed on its own (the
  // alternating sum's error stays that of one rate, not squared). The
  // mixture asks for j within ~9 deviations of the mode: those come from a
  // table of g(j)^2 filled with one power per term and then a product per
  // step (a power per term and j made the sizing 100x slower); any other j
  // is computed directly.
  const double sd = std::sqrt(lambda);
  const auto lo = static_cast<uint64_t>(std::max(0.0, lambda - 12 * sd - 16));
  const auto hi = static_cast<uint64_t>(lambda + 12 * sd + 32);
  auto g2_at = [&](uint64_t j) {
    long double g = 0;
    for (const WordTerm& t : terms) {
      g += t.coef * std::pow(t.mu, static_cast<long double>(j));
    }
    g = std::clamp<long double>(g, 0, 1);
    return static_cast<double>(g * g);
  };
  std::vector<double> g2;
  if (hi - lo < 1u << 16) {
    std::vector<long double> sum(hi - lo + 1, 0.0L);
    for (const WordTerm& t : terms) {
      long double term = t.coef * std::pow(t.mu, static_cast<long double>(lo));
      for (uint64_t j = lo; j <= hi; ++j) {
        sum[j - lo] += term;
        term *= t.mu;
      }
    }
    g2.resize(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) {
      const long double g = std::clamp<long double>(sum[i], 0, 1);
      g2[i] = static_cast<double>(g * g);
    }
  }
  const double second = internal::PoissonMixture(lambda, [&](uint64_t j) {
    return !g2.empty() && j >= lo && j <= hi ? g2[j - lo] : g2_at(j);
  });
  return internal::RealizedRateBound(mean, second, blocks);
}

}  // namespace

double WordBlockedFprBound(uint64_t blocks, uint64_t n, uint32_t k) {
  return WordBound(blocks, n, k, 1.0);
}

Result<BlockedSizing> internal::ComputeWordBlockedSizing(uint64_t n, double p,
                                                         uint32_t k,
                                                         uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
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
      internal::SizeBlocked(
          n, p, k,
          [&](uint32_t kk) {
            return internal::LeastBlocks(
                [&](uint64_t b) { return WordBound(b, n, kk, p); }, p, start,
                max_blocks);
          },
          max_bytes));
  best.expected_fpr = WordBlockedFpr(best.blocks, n, best.k);
  return best;
}

}  // namespace shardfilter
