#include "tools/cli/demo.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter::tools {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// 8-byte keys; present and absent streams are disjoint.
std::string KeyOf(uint64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

struct Row {
  std::string name;
  Result<std::unique_ptr<Filter>> filter;
};

Result<std::unique_ptr<Filter>> Up(auto r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<Filter>(std::move(r).value());
}

}  // namespace

int RunDemo(const DemoOptions& o, std::ostream& out) {
  std::vector<Row> rows;
  // Every Bloom layout; the default (kAuto) is named for what it resolved
  // to at this capacity and rate.
  BloomOptions bloom;
  bloom.capacity = o.items;
  bloom.fpp = o.fpp;
  const BloomLayout chosen =
      ResolveBloomLayout(bloom.capacity, bloom.fpp, 0, bloom.max_bytes);
  for (BloomLayout layout : {BloomLayout::kSplitBlock, BloomLayout::kBlocked,
                             BloomLayout::kClassic}) {
    BloomOptions each = bloom;
    each.layout = layout;
    rows.push_back({std::string("bloom (") + BloomLayoutName(layout) +
                        (layout == chosen ? ", default)" : ")"),
                    Up(BloomFilter::Create(each))});
  }
  CountingBloomOptions counting;
  counting.capacity = o.items;
  counting.fpp = o.fpp;
  rows.push_back({"counting bloom", Up(CountingBloomFilter::Create(counting))});
  CuckooOptions cuckoo;
  cuckoo.capacity = o.items;
  cuckoo.fpp = o.fpp;
  rows.push_back({"cuckoo", Up(CuckooFilter::Create(cuckoo))});

  char line[256];
  std::snprintf(line, sizeof line, "%-22s %10s %10s %9s %9s %11s %11s %s\n",
                "filter", "target", "measured", "bits/key", "log2(1/p)",
                "add Mops/s", "query Mops/s", "false negatives");
  out << "shardfilter demo: " << o.items << " keys added, " << o.probes
      << " absent keys queried, target FPR " << o.fpp << "\n"
      << line;
  int rc = 0;
  for (auto& row : rows) {
    if (!row.filter.ok()) {
      out << row.name << ": " << row.filter.status().ToString() << "\n";
      rc = 1;
      continue;
    }
    Filter& f = **row.filter;
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < o.items; ++i) {
      Status s = f.AddHash(f.Hash(KeyOf(2 * i)));
      if (!s.ok()) {
        out << row.name << ": add failed at " << i << ": " << s.ToString()
            << "\n";
        rc = 1;
        break;
      }
    }
    const double add_s = Seconds(t0);
    uint64_t false_negatives = 0;
    for (uint64_t i = 0; i < o.items; ++i) {
      false_negatives += !f.MayContainHash(f.Hash(KeyOf(2 * i)));
    }
    t0 = Clock::now();
    uint64_t positives = 0;
    for (uint64_t i = 0; i < o.probes; ++i) {
      positives += f.MayContainHash(f.Hash(KeyOf(2 * i + 1)));
    }
    const double query_s = Seconds(t0);
    const FilterStats st = f.Stats();
    const double fpr = static_cast<double>(positives) / o.probes;
    // Allowed: target plus 3 standard deviations of the binomial estimate.
    const double margin = 3 * std::sqrt(o.fpp * (1 - o.fpp) / o.probes);
    const bool ok = false_negatives == 0 && fpr <= o.fpp + margin;
    if (!ok) rc = 1;
    std::snprintf(line, sizeof line,
                  "%-22s %9.4f%% %9.4f%% %9.2f %9.2f %11.1f %11.1f %llu%s\n",
                  row.name.c_str(), o.fpp * 100, fpr * 100,
                  st.bytes * 8.0 / o.items, std::log2(1 / o.fpp),
                  o.items / add_s / 1e6, o.probes / query_s / 1e6,
                  static_cast<unsigned long long>(false_negatives),
                  ok ? "" : "  <- promise broken");
    out << line;
  }
  return rc;
}

}  // namespace shardfilter::tools
