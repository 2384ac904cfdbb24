// blacklist_example: a blacklist check with a tiered filter
// (docs/tiered.md). Builds a blacklist of N keys in a temporary Database:
// a 10% Bloom level (~4.8 bits/key: 0.6 MB for 1e6 keys, fits in a 1 MiB
// L2), a 1% Bloom level (~9.6 bits/key: 1.2 MB, in the L3), and the exact
// level in RocksDB. Then queries a stream where 90% of the keys are not
// listed and prints what each level settled, the false positives (0: the
// exact level answers the rest) and the throughput.
//
//   blacklist_example [listed keys, default 1000000] [queries, default 2e6]
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/tiered_filter.h"

namespace {

using shardfilter::Database;
using shardfilter::Durability;
using shardfilter::FilterSpec;
using shardfilter::TieredFilter;
using shardfilter::TieredSpec;
using shardfilter::TieredStats;

// "ip:" + a decimal number: listed keys are even numbers, others odd.
std::string ListedKey(uint64_t i) { return "ip:" + std::to_string(2 * i); }
std::string OtherKey(uint64_t i) { return "ip:" + std::to_string(2 * i + 1); }

int Fail(const shardfilter::Status& s) {
  std::fprintf(stderr, "blacklist_example: %s\n", s.ToString().c_str());
  return 1;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t listed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  uint64_t queries = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2'000'000;
  if (listed == 0 || queries == 0) {
    std::fprintf(stderr, "usage: blacklist_example [listed] [queries]\n");
    return 2;
  }
  std::string dir = "/tmp/sf_blacklist_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return 1;
  int rc = 0;
  {
    shardfilter::DatabaseOptions options;
    options.path = dir + "/db";
    auto db = Database::Open(options);
    if (!db.ok()) return Fail(db.status());
    TieredSpec spec;
    FilterSpec coarse, fine;
    coarse.capacity = fine.capacity = listed;
    coarse.fpp = 0.1;
    fine.fpp = 0.01;
    spec.levels = {coarse, fine};
    spec.exact_level = true;
    spec.durability = Durability::kJournal;
    auto t = TieredFilter::Create(db->get(), "blacklist", spec);
    if (!t.ok()) return Fail(t.status());
    TieredFilter& bl = **t;

    auto start = std::chrono::steady_clock::now();
    std::vector<std::string> keys;
    std::vector<std::string_view> views;
    for (uint64_t i = 0; i < listed; i += 65536) {
      keys.clear();
      for (uint64_t j = i; j < std::min(listed, i + 65536); ++j) {
        keys.push_back(ListedKey(j));
      }
      views.assign(keys.begin(), keys.end());
      shardfilter::Status s = bl.AddKeys(views);
      if (!s.ok()) return Fail(s);
    }
    std::printf("listed %llu keys in %.2f s (journalled)\n",
                static_cast<unsigned long long>(listed), Seconds(start));

    start = std::chrono::steady_clock::now();
    uint64_t wrong = 0, blocked = 0;
    for (uint64_t q = 0; q < queries; ++q) {
      bool is_listed = q % 10 == 0;
      std::string k = is_listed ? ListedKey((q / 10) % listed) : OtherKey(q);
      auto r = bl.Contains(k);
      if (!r.ok()) return Fail(r.status());
      blocked += *r;
      wrong += *r != is_listed;
    }
    double secs = Seconds(start);
    TieredStats st = bl.Stats();
    std::printf(
        "queried %llu keys (90%% not listed) in %.2f s: %.0f ns/query, "
        "%.2f M queries/s, 1 thread\n",
        static_cast<unsigned long long>(queries), secs, 1e9 * secs / queries,
        queries / secs / 1e6);
    std::printf("%-8s %10s %10s %12s %12s %12s %12s\n", "level", "bytes",
                "target", "reached", "settled", "measured", "estimated");
    for (const auto& l : st.levels) {
      std::printf("%-8u %10llu %10.4f %12llu %12llu %12.5f %12.5f\n", l.level,
                  static_cast<unsigned long long>(l.bytes), l.target_fpr,
                  static_cast<unsigned long long>(l.reached),
                  static_cast<unsigned long long>(l.settled), l.measured_fpr,
                  l.estimated_fpr);
    }
    std::printf("%-8s %10s %10s %12llu %12llu   (%llu found)\n", "exact", "-",
                "0", static_cast<unsigned long long>(st.exact_reached),
                static_cast<unsigned long long>(st.exact_absent),
                static_cast<unsigned long long>(st.exact_found));
    std::printf(
        "filter levels: %llu bytes (%.1f bits/key), compound FPR "
        "target %.2g, measured %.2g\n",
        static_cast<unsigned long long>(st.filter_bytes),
        8.0 * st.filter_bytes / listed, st.compound_target_fpr,
        st.compound_measured_fpr);
    std::printf(
        "blocked %llu, wrong answers %llu (false positives caught by "
        "the exact level: %llu)\n",
        static_cast<unsigned long long>(blocked),
        static_cast<unsigned long long>(wrong),
        static_cast<unsigned long long>(st.exact_absent));
    rc = wrong == 0 ? 0 : 1;
    shardfilter::Status s = (*db)->Close();
    if (!s.ok()) return Fail(s);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}
