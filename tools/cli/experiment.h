// The measurements people do by hand when tuning filters, on the user's
// parameters, in memory (`shardfilter experiment`):
//   fill:  measured FPR as the filter fills from 10% to 200% of capacity,
//          against the theoretical curve of its layout;
//   k:     FPR against k = 3..17 at a fixed table size (Bloom, blocked and
//          classic layouts), measured and theoretical;
//   space: bits per item against the target FPR for every filter type
//          (what the sizing chose), with the measured FPR at capacity and
//          the lower bound log2(1/p).
// Each returns a table (one CSV); nothing here prints or touches files.
//
// Keys are distinct strings hashed with the filter's seed; probes are keys
// never added, so every positive probe is a false positive.
//
// Thread safety: pure functions (each builds its own filters).
#ifndef SHARDFILTER_TOOLS_CLI_EXPERIMENT_H_
#define SHARDFILTER_TOOLS_CLI_EXPERIMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::tools {

struct ExperimentOptions {
  // fill: the filter measured; space: only this type when `one_type`.
  FilterType type = FilterType::kBloom;
  bool classic_layout = false;  // Bloom
  bool one_type = false;
  uint64_t capacity = 100'000;
  double fpp = 0.01;          // fill, k: the target the size comes from
  uint64_t probes = 200'000;  // absent keys queried per measurement
};

// A CSV: a header row and rows of the same width. Cells are numbers or
// plain words (no quoting needed).
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::string ToCsv() const;
};

// Columns: fill_pct, items, measured_fpr, theory_fpr, target_fpr,
// failed_adds (cuckoo adds refused as Full past its room).
Result<Table> FillExperiment(const ExperimentOptions& o);
// Columns: layout, k, bits, bits_per_item, measured_fpr, theory_fpr. The
// size is the one the layout's sizing picks for (capacity, fpp); each k
// gets the table sized for the rate that size gives at that k, which is
// that size to within one block (the bits column says exactly).
Result<Table> KExperiment(const ExperimentOptions& o);
// Columns: type, target_fpr, bits_per_item, measured_fpr, bound_bits,
// for target rates 10% .. 1e-6 (cuckoo down to what 16-bit fingerprints
// reach).
Result<Table> SpaceExperiment(const ExperimentOptions& o);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_EXPERIMENT_H_
