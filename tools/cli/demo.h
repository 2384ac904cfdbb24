// The demo: builds each filter type in memory, adds and queries a few
// million keys, and prints measured FPR against target, bits per item and
// throughput. `shardfilter demo` runs it. Not thread-safe (runs alone).
#ifndef SHARDFILTER_TOOLS_CLI_DEMO_H_
#define SHARDFILTER_TOOLS_CLI_DEMO_H_

#include <cstdint>
#include <ostream>

namespace shardfilter::tools {

struct DemoOptions {
  uint64_t items = 4'000'000;   // keys added to each filter
  uint64_t probes = 4'000'000;  // absent keys queried to measure the FPR
  double fpp = 0.01;
};

// Returns 0 if every filter met its promises (no false negative, FPR within
// target plus margin), 1 otherwise.
int RunDemo(const DemoOptions& options, std::ostream& out);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_DEMO_H_
