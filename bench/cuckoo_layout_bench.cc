// What a cuckoo table of 4-slot buckets can hold when a fingerprint's
// alternate bucket is kept near its first one (a block-local pair, as
// Morton and vacuum filters do, so that a query touches one cache line):
// the load at the first failed insert (random-walk eviction, 500 kicks, as
// the filter's default), for an alternate within an aligned window of
// `window` buckets (0: anywhere, the filter's involution over the whole
// table), with `global_pct` percent of the fingerprints taking the
// anywhere alternate instead (a vacuum-style mix). Not a timing: the
// counters are the result (load_pct, bits_per_item at 12-bit
// fingerprints, and alt_pct, the buckets holding a key whose first bucket
// they are not the ones a per-bucket overflow bit would mark).
//
//   build/bench/cuckoo_layout_bench --benchmark_counters_tabular=true
//
// Measured (2^18 buckets): a window of 8 buckets (48 bytes, a line)
// holds 45% (27 bits/item), 16 buckets 55%, 64 buckets 75%, 1024 92%,
// anywhere 96% (12.5 bits/item). With half of the fingerprints anywhere
// a 16-bucket window reaches 95.6% (12.5 bits/item), an 8-bucket one 88%
// (70-95% with other choices of which half: it is sensitive to that
// hash; with 60% anywhere, 95.6-95.8% in three of four); and then half
// the queries take two lines. So a line-local pair alone cannot keep the
// filter's 13 bits/item, and cuckoo_bench BM_QueryFloor shows a
// line-local probe would not be faster anyway (docs/performance.md,
// "Tried and not kept").
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "shardfilter/filters/hash.h"

namespace shardfilter::bench {
namespace {

class WindowedTable {
 public:
  WindowedTable(uint64_t buckets, uint64_t window, int global_pct)
      : n_(buckets),
        window_(window),
        global_pct_(global_pct),
        fp_(buckets * 4, 0),
        first_(buckets * 4, 0) {}

  // False (nothing changed) when no slot was found within the kicks.
  bool Insert(uint64_t first, uint32_t fp) {
    if (Place(first, fp, first) || Place(Alt(first, fp), fp, first)) {
      return true;
    }
    std::vector<std::pair<uint64_t, uint32_t>> path;  // (bucket, slot)
    uint64_t b = (rng_() & 1) != 0 ? first : Alt(first, fp);
    uint64_t home = first;
    for (int kick = 0; kick < 500; ++kick) {
      const uint32_t j = rng_() & 3;
      std::swap(fp, fp_[b * 4 + j]);
      std::swap(home, first_[b * 4 + j]);
      path.emplace_back(b, j);
      b = Alt(b, fp);
      if (Place(b, fp, home)) return true;
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {  // undo
      std::swap(fp, fp_[it->first * 4 + it->second]);
      std::swap(home, first_[it->first * 4 + it->second]);
    }
    return false;
  }
  // The fraction of buckets that some key has as its first bucket while
  // it sits in its alternate.
  double AltFraction() const {
    std::vector<bool> marked(n_, false);
    for (uint64_t s = 0; s < n_ * 4; ++s) {
      if (fp_[s] != 0 && first_[s] != s / 4) marked[first_[s]] = true;
    }
    uint64_t m = 0;
    for (bool x : marked) m += x;
    return static_cast<double>(m) / static_cast<double>(n_);
  }

 private:
  // An involution, so that Alt(Alt(b, fp), fp) == b: within the window,
  // the xor with a non-zero offset below the window; anywhere, the
  // filter's (H(fp) - b) mod n.
  uint64_t Alt(uint64_t b, uint32_t fp) const {
    const uint64_t h = Remix(fp);
    if (window_ == 0 || (Remix(fp * 0x9E3779B97F4A7C15ULL + 1) & 0xffff) <
                            static_cast<uint64_t>(global_pct_) * 65536 / 100) {
      const uint64_t t = FastRange64(h, n_);
      return t >= b ? t - b : t + n_ - b;
    }
    return b ^ (1 + h % (window_ - 1));
  }
  bool Place(uint64_t b, uint32_t fp, uint64_t home) {
    for (uint32_t j = 0; j < 4; ++j) {
      if (fp_[b * 4 + j] == 0) {
        fp_[b * 4 + j] = fp;
        first_[b * 4 + j] = home;
        return true;
      }
    }
    return false;
  }

  const uint64_t n_;
  const uint64_t window_;  // a power of two dividing n_, or 0
  const int global_pct_;
  std::vector<uint32_t> fp_;     // 0 = empty
  std::vector<uint64_t> first_;  // each slot's key's first bucket
  std::mt19937_64 rng_{7};
};

void BM_WindowedAlternateLoad(benchmark::State& state) {
  constexpr uint64_t kBuckets = uint64_t{1} << 18;
  const uint64_t window = static_cast<uint64_t>(state.range(0));
  const int global_pct = static_cast<int>(state.range(1));
  double load = 0, alt = 0;
  for (auto _ : state) {
    WindowedTable t(kBuckets, window, global_pct);
    std::mt19937_64 keys(1);
    uint64_t held = 0;
    for (;;) {
      const uint64_t h = keys();
      const uint32_t fp =
          static_cast<uint32_t>((h & 0xFFF) + ((h & 0xFFF) == 0));
      if (!t.Insert(FastRange64(h & ~uint64_t{0xFFFF}, kBuckets), fp)) break;
      ++held;
    }
    load = static_cast<double>(held) / (kBuckets * 4.0);
    alt = t.AltFraction();
  }
  state.counters["load_pct"] = 100 * load;
  state.counters["bits_per_item"] = 48 / (4 * load);
  state.counters["alt_pct"] = 100 * alt;
}
BENCHMARK(BM_WindowedAlternateLoad)
    ->ArgNames({"window", "global_pct"})
    ->ArgsProduct({{8, 16, 64, 1024, 0}, {0}})
    ->ArgsProduct({{8, 16}, {50, 60}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardfilter::bench

BENCHMARK_MAIN();
