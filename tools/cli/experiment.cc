#include "tools/cli/experiment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter::tools {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string Num(uint64_t v) { return std::to_string(v); }

// Through the one factory (filters/filter.h): the types' own defaults for
// everything an experiment does not set.
Result<std::unique_ptr<Filter>> Make(FilterType type, bool classic,
                                     uint64_t capacity, double fpp,
                                     uint32_t k = 0) {
  FilterParams p;
  p.type = type;
  p.capacity = capacity;
  p.fpp = fpp;
  p.k = k;
  // The layouts' own math: "blocked" is the word-blocked layout.
  if (type == FilterType::kBloom) {
    p.layout = classic ? BloomLayout::kClassic : BloomLayout::kBlocked;
  }
  return CreateFilter(p);
}

// The FPR the math predicts for `f` holding n distinct items
// (filters/sizing.h: the layout's own formula).
double TheoryFpr(const Filter& f, uint64_t n) {
  const FilterStats st = f.Stats();
  if (f.type() == FilterType::kBloom) {
    const auto* b = static_cast<const BloomFilter*>(&f);
    return b->layout() == BloomLayout::kClassic
               ? ClassicBloomFpr(st.slots, n, st.k)
               : WordBlockedFpr(st.slots / 512, n, st.k);
  }
  if (f.type() == FilterType::kCuckoo) {
    const CuckooStats cs =
        static_cast<const CuckooFilter&>(f).CuckooStatistics();
    const double room = static_cast<double>(cs.buckets) * cs.bucket_size;
    return CuckooFpr(cs.fingerprint_bits, cs.bucket_size,
                     room > 0 ? st.items / room : 0);
  }
  return BlockedFpr(st.slots / 128, 128, n, st.k);  // counting: 128 / line
}

// Adds keys [from, to); returns how many were refused (Full).
uint64_t AddRange(Filter& f, uint64_t from, uint64_t to) {
  uint64_t failed = 0;
  for (uint64_t i = from; i < to; ++i) {
    if (!f.AddHash(f.Hash("key-" + std::to_string(i))).ok()) ++failed;
  }
  return failed;
}

double MeasureFpr(const Filter& f, uint64_t probes) {
  constexpr size_t kBatch = 4096;
  std::vector<uint64_t> hashes;
  std::vector<uint8_t> out(kBatch);
  uint64_t positives = 0;
  for (uint64_t i = 0; i < probes; i += kBatch) {
    const uint64_t n = std::min<uint64_t>(kBatch, probes - i);
    hashes.clear();
    for (uint64_t j = i; j < i + n; ++j) {
      hashes.push_back(f.Hash("absent-" + std::to_string(j)));
    }
    f.MayContainHashes(hashes, std::span<uint8_t>(out.data(), n));
    for (uint64_t j = 0; j < n; ++j) positives += out[j];
  }
  return probes == 0 ? 0 : static_cast<double>(positives) / probes;
}

const char* LayoutName(bool classic) { return classic ? "classic" : "blocked"; }

}  // namespace

std::string Table::ToCsv() const {
  std::string csv;
  auto row = [&csv](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) csv += ',';
      csv += cells[i];
    }
    csv += '\n';
  };
  row(columns);
  for (const auto& r : rows) row(r);
  return csv;
}

Result<Table> FillExperiment(const ExperimentOptions& o) {
  SF_ASSIGN_OR_RETURN(auto f,
                      Make(o.type, o.classic_layout, o.capacity, o.fpp));
  Table t;
  t.columns = {"fill_pct",   "items",      "measured_fpr",
               "theory_fpr", "target_fpr", "failed_adds"};
  uint64_t added = 0, failed = 0;
  for (int pct = 10; pct <= 200; pct += 10) {
    const uint64_t want = o.capacity * pct / 100;
    failed += AddRange(*f, added, want);
    added = want;
    const uint64_t held = added - failed;
    t.rows.push_back({Num(uint64_t(pct)), Num(held),
                      Num(MeasureFpr(*f, o.probes)), Num(TheoryFpr(*f, held)),
                      Num(o.fpp), Num(failed)});
  }
  return t;
}

Result<Table> KExperiment(const ExperimentOptions& o) {
  Table t;
  t.columns = {"layout",       "k",         "bits", "bits_per_item",
               "measured_fpr", "theory_fpr"};
  for (bool classic : {false, true}) {
    // The size the sizing picks at the optimal k.
    SF_ASSIGN_OR_RETURN(auto ref,
                        Make(FilterType::kBloom, classic, o.capacity, o.fpp));
    const uint64_t bits = ref->Stats().slots;
    for (uint32_t k = 3; k <= 17; ++k) {
      // The rate a table of `bits` gives at this k; sized for it, the
      // filter gets that many bits (to within a block).
      double p = classic ? ClassicBloomFpr(bits, o.capacity, k)
                         : WordBlockedFpr(bits / 512, o.capacity, k);
      p = std::clamp(p * 1.000001, 1e-15, 0.999);
      SF_ASSIGN_OR_RETURN(auto f,
                          Make(FilterType::kBloom, classic, o.capacity, p, k));
      AddRange(*f, 0, o.capacity);
      const uint64_t m = f->Stats().slots;
      t.rows.push_back({LayoutName(classic), Num(uint64_t{k}), Num(m),
                        Num(static_cast<double>(m) / o.capacity),
                        Num(MeasureFpr(*f, o.probes)),
                        Num(TheoryFpr(*f, o.capacity))});
    }
  }
  return t;
}

Result<Table> SpaceExperiment(const ExperimentOptions& o) {
  struct Kind {
    const char* name;
    FilterType type;
    bool classic;
  };
  const Kind kinds[] = {{"bloom-blocked", FilterType::kBloom, false},
                        {"bloom-classic", FilterType::kBloom, true},
                        {"counting", FilterType::kCountingBloom, false},
                        {"cuckoo", FilterType::kCuckoo, false}};
  const double rates[] = {1e-1, 5e-2, 2e-2, 1e-2, 5e-3, 2e-3,
                          1e-3, 5e-4, 2e-4, 1e-4, 1e-5, 1e-6};
  Table t;
  t.columns = {"type", "target_fpr", "bits_per_item", "measured_fpr",
               "bound_bits"};
  for (const Kind& kind : kinds) {
    if (o.one_type &&
        (kind.type != o.type || (kind.type == FilterType::kBloom &&
                                 kind.classic != o.classic_layout))) {
      continue;
    }
    for (double p : rates) {
      auto f = Make(kind.type, kind.classic, o.capacity, p);
      // Cuckoo fingerprints stop at 16 bits: rates below reach are skipped.
      if (!f.ok() && kind.type == FilterType::kCuckoo) continue;
      if (!f.ok()) return f.status();
      AddRange(**f, 0, o.capacity);
      const double bpi = (*f)->Stats().bytes * 8.0 / o.capacity;
      t.rows.push_back({kind.name, Num(p), Num(bpi),
                        Num(MeasureFpr(**f, o.probes)), Num(std::log2(1 / p))});
    }
  }
  return t;
}

}  // namespace shardfilter::tools
