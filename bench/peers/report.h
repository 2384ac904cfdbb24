// The side-by-side's results and the markdown tables made from them.
#ifndef SHARDFILTER_BENCH_PEERS_REPORT_H_
#define SHARDFILTER_BENCH_PEERS_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace sbs {

// Every round's figures, by cell ("<row>.<op>.<size>") and by (row, size).
struct Results {
  std::vector<uint64_t> sizes;  // ascending; the last is the largest
  int rounds = 0;
  double min_time = 0;
  std::map<std::string, std::vector<double>> ns;   // by cell
  std::map<std::string, std::vector<double>> fpr;  // by "<row>@<size>"
  std::map<std::string, double> bits_per_item;     // by "<row>@<size>"
  std::map<std::string, double> load;              // by "<row>@<size>"
  uint64_t checked = 0;
  std::vector<std::string> failures;  // false negatives, failed adds/removes
  double cpu = 0, wall = 0;
};

// "1e6", "5e7"; other sizes in digits.
std::string SizeName(uint64_t n);
double Median(std::vector<double> v);
// The README's table, the cuckoo table at matched loads, and the lines
// on spread and checks, to `out`.
void PrintReport(const Results& r, FILE* out);

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_REPORT_H_
