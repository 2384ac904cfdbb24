// The tables of the side-by-side (bench/peers/README.md, "Reading the
// output"): which rows share a line, and how their medians are written.
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace sbs {
namespace {

// One line of a table: its label and the rows whose figures it joins with
// " / " (README.md's "link 0 (0.5%): Bloom / counting / cuckoo").
struct Line {
  const char* label;
  std::vector<const char*> rows;
  bool show_load = false;  // append each size's load to the label
};

const std::vector<Line>& MainTable() {
  static const std::vector<Line> lines = {
      {"shardfilter Bloom (split block, the default at 1%)", {"sf_bloom"}},
      {"shardfilter counting Bloom", {"sf_counting"}},
      {"shardfilter cuckoo, 12-bit, b = 4", {"sf_cuckoo"}},
      {"link 0 (0.5%): Bloom / counting / cuckoo",
       {"link0_bloom", "link0_counting", "link0_cuckoo"}},
      {"Database Bloom, 1 / 16 shards", {"db_bloom_1", "db_bloom_16"}},
      {"Database counting, 1 / 16 shards",
       {"db_counting_1", "db_counting_16"}},
      {"Database cuckoo, 1 / 16 shards", {"db_cuckoo_1", "db_cuckoo_16"}},
      {"fastfilter_cpp SimdBlockFilterFixed", {"ff_block"}},
      {"the same, hashed by XXH3", {"ff_block_xxh3"}},
      {"fastfilter_cpp CountingBloom10", {"ff_counting"}},
      {"efficient/cuckoofilter 12-bit", {"ecf"}, true},
      {"the same, hashed by XXH3", {"ecf_xxh3"}},
      {"RocksDB FastLocalBloom (XXH3 inlined)", {"rocksdb"}},
      {"floor: random 64-byte line, independent / dependent", {"floor"}},
  };
  return lines;
}

// The cuckoo filters at matched loads, at the largest size.
const std::vector<Line>& MatchedTable() {
  static const std::vector<Line> lines = {
      {"efficient/cuckoofilter", {"ecf"}},
      {"the same, hashed by XXH3", {"ecf_xxh3"}},
      {"efficient/cuckoofilter, the same table", {"ecf_at94"}},
      {"shardfilter, the peer's table size", {"sf_cuckoo_peer_load"}},
      {"shardfilter", {"sf_cuckoo"}},
  };
  return lines;
}

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}
// Three significant digits: 3.42, 23.9, 104.
std::string Ns(double v) {
  if (v < 10) return Format("%.2f", v);
  if (v < 100) return Format("%.1f", v);
  return Format("%.0f", v);
}
std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}
std::string Key(const std::string& row, uint64_t size) {
  return row + "@" + SizeName(size);
}
std::string Cell(const std::string& row, const char* op, uint64_t size) {
  return row + "." + op + "." + SizeName(size);
}

class Writer {
 public:
  Writer(const Results& r, FILE* out) : r_(r), out_(out) {}

  double CellMedian(const std::string& row, const char* op,
                    uint64_t size) const {
    auto it = r_.ns.find(Cell(row, op, size));
    return it == r_.ns.end() ? NAN : Median(it->second);
  }
  // A line's cell: each row's median, joined; "" when none was measured.
  std::string Joined(const Line& line, const char* op, uint64_t size) const {
    std::vector<std::string> parts;
    bool any = false;
    for (const char* row : line.rows) {
      const double v = CellMedian(row, op, size);
      if (std::strcmp(op, "query") == 0 && std::strcmp(row, "floor") == 0) {
        const double dep = CellMedian(row, "dep", size);
        any = any || !std::isnan(v) || !std::isnan(dep);
        parts.push_back((std::isnan(v) ? "-" : Ns(v)) + " / " +
                        (std::isnan(dep) ? "-" : Ns(dep)));
        continue;
      }
      any = any || !std::isnan(v);
      parts.push_back(std::isnan(v) ? "-" : Ns(v));
    }
    return any ? Join(parts, " / ") : "";
  }
  // Per-(row, size) figures of a line: one row's distinct values over the
  // sizes ("12.58 / 16.11"), or, on a line of several rows, each row's at
  // the largest size ("0.50 / 0.45 / 0.18%").
  std::string PerSize(const Line& line, bool fpr,
                      const std::vector<uint64_t>& all_sizes) const {
    const std::vector<uint64_t> sizes =
        line.rows.size() > 1 ? std::vector<uint64_t>{all_sizes.back()}
                             : all_sizes;
    std::vector<std::string> parts;
    for (const char* row : line.rows) {
      std::vector<std::string> values;
      for (uint64_t n : sizes) {
        double v = NAN;
        if (fpr) {
          auto it = r_.fpr.find(Key(row, n));
          if (it != r_.fpr.end()) v = 100 * Median(it->second);
        } else {
          auto it = r_.bits_per_item.find(Key(row, n));
          if (it != r_.bits_per_item.end()) v = it->second;
        }
        if (std::isnan(v)) continue;
        const std::string s = Format("%.2f", v);
        if (values.empty() || values.back() != s) values.push_back(s);
      }
      if (!values.empty()) parts.push_back(Join(values, " / "));
    }
    if (parts.empty()) return "";
    return Join(parts, " / ") + (fpr ? "%" : "");
  }
  std::string Label(const Line& line) const {
    if (!line.show_load) return line.label;
    std::vector<std::string> loads;
    for (uint64_t n : r_.sizes) {
      auto it = r_.load.find(Key(line.rows[0], n));
      if (it == r_.load.end()) continue;
      loads.push_back(SizeName(n) + ": " + Format("%.1f", 100 * it->second) +
                      (loads.empty() ? "% load" : "%"));
    }
    if (loads.empty()) return line.label;
    return std::string(line.label) + " (" + Join(loads, "; ") + ")";
  }

  void Table(const std::vector<std::string>& head,
             const std::vector<std::vector<std::string>>& body) const {
    // Columns no line has a figure in are left out.
    std::vector<bool> keep(head.size(), false);
    keep[0] = true;
    for (const auto& cells : body) {
      for (size_t c = 1; c < cells.size(); ++c) keep[c] = keep[c] || !cells[c].empty();
    }
    auto row = [&](const std::vector<std::string>& cells) {
      std::string s = "|";
      for (size_t c = 0; c < cells.size(); ++c) {
        if (keep[c]) s += " " + cells[c] + " |";
      }
      std::fprintf(out_, "%s\n", s.c_str());
    };
    row(head);
    std::vector<std::string> rule(head.size(), "---");
    row(rule);
    for (const auto& cells : body) row(cells);
  }

  void Main() const {
    const uint64_t largest = r_.sizes.back();
    std::vector<std::string> head = {"structure", "bits/item", "FPR"};
    for (uint64_t n : r_.sizes) head.push_back("query " + SizeName(n));
    head.push_back("batched query " + SizeName(largest));
    for (uint64_t n : r_.sizes) head.push_back("add " + SizeName(n));
    std::vector<std::vector<std::string>> body;
    for (const Line& line : MainTable()) {
      std::vector<std::string> cells = {Label(line), PerSize(line, false, r_.sizes),
                                        PerSize(line, true, r_.sizes)};
      for (uint64_t n : r_.sizes) cells.push_back(Joined(line, "query", n));
      cells.push_back(Joined(line, "batch", largest));
      for (uint64_t n : r_.sizes) cells.push_back(Joined(line, "add", n));
      bool any = false;
      for (size_t c = 1; c < cells.size(); ++c) any = any || !cells[c].empty();
      if (any) body.push_back(std::move(cells));
    }
    if (body.empty()) return;
    std::fprintf(out_, "ns per op:\n\n");
    Table(head, body);
  }

  void Matched() const {
    const uint64_t n = r_.sizes.back();
    std::vector<std::vector<std::string>> body;
    for (const Line& line : MatchedTable()) {
      const std::string row = line.rows[0];
      auto load = r_.load.find(Key(row, n));
      if (load == r_.load.end()) continue;
      std::vector<std::string> cells = {
          line.label, Format("%.1f%%", 100 * load->second),
          PerSize(line, false, {n}), Joined(line, "add", n),
          Joined(line, "add10", n), Joined(line, "query", n),
          Joined(line, "remove", n)};
      body.push_back(std::move(cells));
    }
    // Only when the cells of a second load were run.
    if (r_.load.count(Key("ecf_at94", n)) == 0 &&
        r_.load.count(Key("sf_cuckoo_peer_load", n)) == 0) {
      return;
    }
    std::fprintf(out_,
                 "\nCuckoo filters, 12-bit, at matched loads (%s keys, or the "
                 "table the peer makes for them; ns per insert over the whole "
                 "fill and over its last 10%%, per absent query, per remove of "
                 "every key):\n\n",
                 SizeName(n).c_str());
    Table({"cuckoo filter, 12-bit", "load", "bits/item", "insert",
           "insert, last 10%", "query", "remove"},
          body);
  }

  void Summary() const {
    std::fprintf(out_, "\n");
    if (r_.rounds > 1) {
      int cells = 0, within10 = 0, within20 = 0;
      double widest = 1;
      std::string widest_cell;
      for (const auto& [cell, v] : r_.ns) {
        if (v.size() < 2) continue;
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        const double ratio = *hi / *lo;
        ++cells;
        within10 += ratio <= 1.10;
        within20 += ratio <= 1.20;
        if (ratio > widest) {
          widest = ratio;
          widest_cell = cell;
        }
      }
      std::fprintf(out_,
                   "Medians of %d interleaved rounds, each cell at least %.2g s "
                   "of thread CPU time. The slowest round was within 10%% of "
                   "the fastest in %d of %d cells, within 20%% in %d; the "
                   "widest spread %.2fx (%s).\n",
                   r_.rounds, r_.min_time, within10, cells, within20, widest,
                   widest_cell.c_str());
    } else {
      std::fprintf(out_,
                   "One round, each cell at least %.2g s of thread CPU time "
                   "(a check that the harness runs, not a measurement).\n",
                   r_.min_time);
    }
    if (r_.wall > 0) {
      std::fprintf(out_,
                   "Thread CPU time over wall time in the timed cells: %.3f "
                   "(below 1: the thread waited for a core).\n",
                   r_.cpu / r_.wall);
    }
    if (r_.failures.empty()) {
      std::fprintf(out_,
                   "No false negative among the %llu inserted keys queried "
                   "again; no add or remove failed.\n",
                   static_cast<unsigned long long>(r_.checked));
    } else {
      std::fprintf(out_, "FAILED CHECKS (%llu inserted keys queried again):\n",
                   static_cast<unsigned long long>(r_.checked));
      for (const std::string& f : r_.failures) {
        std::fprintf(out_, "- %s\n", f.c_str());
      }
    }
  }

 private:
  const Results& r_;
  FILE* out_;
};

}  // namespace

std::string SizeName(uint64_t n) {
  int exponent = 0;
  uint64_t mantissa = n;
  while (mantissa >= 10 && mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  if (mantissa < 10 && exponent > 0) {
    return std::to_string(mantissa) + "e" + std::to_string(exponent);
  }
  return std::to_string(n);
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void PrintReport(const Results& r, FILE* out) {
  Writer w(r, out);
  w.Main();
  w.Matched();
  w.Summary();
}

}  // namespace sbs
