// The Poisson mixture of the blocked rate models (filters/sizing.cc:
// BlockedFpr, SplitBlockFpr): sum over j of P(J = j) f(j), J ~ Poisson(λ),
// λ = keys per block, f(j) = the rate of a block that holds j keys.
//
// Its cost is bounded whatever λ is. Summing every j from the mode outward
// until the weights vanish costs about 18 sqrt(λ) evaluations: an export
// (or a BF.RESERVE) asking for 2.2e12 items in one 64-byte block held its
// thread for 3.4 s, and 1e18 items for hours (export_fuzz found it as a
// libFuzzer timeout). So:
//
//   - λ < kPoissonExactLambda: every j, exactly as the sizing has always
//     summed. A table's size is recomputed from its stored spec at every
//     open (engine/internal/filter_spec.cc: LinkTableBytes), so these
//     results must never change, not even in the last bit. Blocks of
//     realistic filters hold tens of keys.
//   - from kPoissonExactLambda up (a block holding 16384 keys or more is
//     saturated: such sizes only come up while a search rules them out),
//     every s-th j, s = floor(sqrt(λ) / 64), each weighted by s: a
//     rectangle rule with 64 nodes per standard deviation, whose error on a
//     smooth mixture is far below the rates' resolution. The weights come
//     from Stirling's series instead of lgamma, because j log λ - λ -
//     lgamma(j + 1) loses everything to cancellation once λ nears 1e15.
//
// Evaluations of f: about 2 (8.5 sqrt(λ) + 10) in the first regime (at
// most ~2200), at most ~2 * 8.5 * 96 in the second, where sqrt(λ)/s < 96
// (PoissonMixtureTest.MomentsAndBoundedCost).
#ifndef SHARDFILTER_FILTERS_INTERNAL_POISSON_MIXTURE_H_
#define SHARDFILTER_FILTERS_INTERNAL_POISSON_MIXTURE_H_

#include <math.h>  // lgamma_r

#include <cmath>
#include <cstdint>
#include <numbers>

namespace shardfilter::internal {

inline constexpr double kPoissonExactLambda = 16384;

// ln(j!). std::lgamma writes the global `signgam`: a data race when filters
// are sized on several threads at once (shards growing their chains), found
// by TSan. lgamma_r returns the sign through its argument instead.
inline double LogFactorial(uint64_t j) {
  int sign = 0;
  return ::lgamma_r(static_cast<double>(j) + 1.0, &sign);
}

// ln P(J = j) for λ >= kPoissonExactLambda, from Stirling's series:
// -λ h(x) - ln(2πj) / 2 - 1/(12j) + 1/(360j^3), x = (j - λ)/λ,
// h(x) = (1 + x) ln(1 + x) - x. `mode` is floor(λ): j - mode is an exact
// integer and λ - mode exact, so x carries no rounding of j's magnitude.
// h(x) is about x^2/2: for |x| < 1/64 it comes from its series
// sum_{n>=2} (-x)^n / (n (n - 1)) (twelve terms reach 2^-72), because
// (1 + x) ln(1 + x) - x cancels all but a few of its bits there. In the
// mixture's range (|j - λ| < 10 sqrt(λ)) |x| < 10/128, so the series is the
// path that matters from λ = 409600 up.
inline double LogPoissonStirling(uint64_t j, uint64_t mode, double lambda) {
  const double jd = static_cast<double>(j);
  const double d = (j >= mode ? static_cast<double>(j - mode)
                              : -static_cast<double>(mode - j)) -
                   (lambda - static_cast<double>(mode));
  const double x = d / lambda;
  double h;
  if (std::fabs(x) < 1.0 / 64) {
    h = 0;
    double xn = x * x;  // x^n, n = 2..13
    for (int n = 2; n <= 13; ++n) {
      h += ((n & 1) != 0 ? -xn : xn) / (n * (n - 1));
      xn *= x;
    }
  } else {
    h = (1.0 + x) * std::log1p(x) - x;
  }
  return -lambda * h - 0.5 * std::log(2.0 * std::numbers::pi * jd) -
         1.0 / (12.0 * jd) + 1.0 / (360.0 * jd * jd * jd);
}

// sum_j P(J = j) f(j) for J ~ Poisson(lambda), lambda > 0; f(j) in [0, 1].
// Sums outward from the mode until the weights drop below 1e-18.
template <typename F>
double PoissonMixture(double lambda, F&& f) {
  const uint64_t mode = static_cast<uint64_t>(lambda);
  double total = 0;
  if (lambda < kPoissonExactLambda) {
    const double log_lambda = std::log(lambda);
    auto pmf = [&](uint64_t j) {
      return std::exp(static_cast<double>(j) * log_lambda - lambda -
                      LogFactorial(j));
    };
    for (uint64_t j = mode;; ++j) {  // upward
      const double w = pmf(j);
      total += w * f(j);
      if (j > mode + 10 && w < 1e-18) break;
    }
    for (uint64_t j = mode; j-- > 0;) {  // downward
      const double w = pmf(j);
      total += w * f(j);
      if (j + 10 < mode && w < 1e-18) break;
    }
    return total;
  }
  // A node stands for s values of j: the cutoff is on its weight, s P(j),
  // so the tails left out stay under 1e-17 however wide the distribution.
  const uint64_t s = static_cast<uint64_t>(std::sqrt(lambda) / 64);
  const double stride = static_cast<double>(s);
  for (uint64_t j = mode;; j += s) {  // upward
    const double w = stride * std::exp(LogPoissonStirling(j, mode, lambda));
    total += w * f(j);
    if (w < 1e-18) break;
  }
  for (uint64_t j = mode; j > s;) {  // downward
    j -= s;
    const double w = stride * std::exp(LogPoissonStirling(j, mode, lambda));
    total += w * f(j);
    if (w < 1e-18) break;
  }
  return total;
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_POISSON_MIXTURE_H_
