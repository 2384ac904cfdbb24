// The side-by-side of shardfilter's filters with their peers: README.md's
// performance table, made by one process (bench/peers/README.md).
//
//   side_by_side [--rounds N] [--sizes 1e6,5e7] [--only PATTERNS]
//                [--min-time SECONDS] [--seed S] [--raw FILE] [--list]
//
// Every structure is a row (registered by its *_rows.cc through FilterAPI,
// filter_api.h); a row at one size is a unit, measured as harness.h says.
// Each round runs every selected unit once, in an order shuffled per round
// (seeded: --seed), so that slow and fast stretches of the machine spread
// over all cells; the tables give each cell's median over the rounds. The
// tables go to stdout, progress to stderr; the exit status is 1 when a
// check failed (a false negative, a failed add or remove), 2 on bad usage.
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "report.h"

namespace sbs {
namespace {

// ---- The memory floor ------------------------------------------------------
// What any filter that reads one random 64-byte line per query pays at this
// size: loads of random lines of a table of 10 bits per key (RocksDB's
// table at this size), their addresses from the same absent-key arrays.
// "query": independent loads, as many in flight as the CPU overlaps;
// "dep": each load's address depends on the previous load's value (the
// latency of one miss).
struct alignas(64) CacheLine {
  uint64_t word[8];
};
inline uint64_t FastRange64(uint64_t x, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}
[[gnu::noinline]] uint64_t IndependentLoads(const CacheLine* lines,
                                            uint64_t count,
                                            const uint64_t* keys, uint64_t b,
                                            uint64_t e) {
  uint64_t sum = 0;
  for (uint64_t i = b; i < e; ++i) sum += lines[FastRange64(keys[i], count)].word[0];
  return sum;
}
[[gnu::noinline]] uint64_t DependentLoads(const CacheLine* lines,
                                          uint64_t count, const uint64_t* keys,
                                          uint64_t b, uint64_t e) {
  uint64_t x = 0;
  for (uint64_t i = b; i < e; ++i) {
    x = lines[FastRange64(keys[i] ^ x, count)].word[0];
  }
  return x;
}
UnitResult RunFloor(const UnitSpec& s) {
  UnitResult r;
  const uint64_t count = std::max<uint64_t>(1, (s.inserts * 10 + 511) / 512);
  std::vector<CacheLine> lines(count);
  for (uint64_t i = 0; i < count; ++i) {
    for (uint64_t w = 0; w < 8; ++w) lines[i].word[w] = Remix(8 * i + w + 1);
  }
  uint64_t ops = 0;
  double cpu = 0, wall = 0;
  if (s.query) {
    g_sink = Repeat(
        s.inserts, s.min_time,
        [&](uint64_t b, uint64_t e) {
          return IndependentLoads(lines.data(), count, s.absent, b, e);
        },
        &ops, &cpu, &wall);
    r.ns["query"] = 1e9 * cpu / static_cast<double>(ops);
    r.cpu += cpu;
    r.wall += wall;
  }
  if (s.dep) {
    g_sink = Repeat(
        s.inserts, s.min_time,
        [&](uint64_t b, uint64_t e) {
          return DependentLoads(lines.data(), count, s.absent, b, e);
        },
        &ops, &cpu, &wall);
    r.ns["dep"] = 1e9 * cpu / static_cast<double>(ops);
    r.cpu += cpu;
    r.wall += wall;
  }
  return r;
}

const bool registered = [] {
  Row r;
  r.id = "floor";
  r.run = &RunFloor;
  r.floor = true;
  return RegisterRow(r);
}();

// ---- Options ---------------------------------------------------------------
// Sizes are bounded so that a typo cannot ask for terabytes (the memory
// check in main bounds what the machine can hold).
constexpr uint64_t kMaxSize = 1'000'000'000;

struct Options {
  int rounds = 7;
  std::vector<uint64_t> sizes = {1'000'000, 50'000'000};
  std::vector<std::string> only;
  double min_time = 1.0;
  uint64_t seed = 1;
  std::string raw;
  bool list = false;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

double ParseNumber(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d)) {
    Die(flag + ": '" + v + "' is not a number");
  }
  return d;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const size_t eq = flag.find('=');
    const bool has_eq = eq != std::string::npos;
    if (has_eq) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "--list") {
      o.list = true;
      continue;
    }
    if (flag == "-h" || flag == "--help") {
      std::printf(
          "side_by_side [--rounds N] [--sizes 1e6,5e7] [--only PATTERNS] "
          "[--min-time SECONDS] [--seed S] [--raw FILE] [--list]\n"
          "PATTERNS: comma-separated globs over cells <row>.<op>.<size> "
          "(a row's id alone selects all its cells); --list prints them.\n");
      std::exit(0);
    }
    if (!has_eq) {
      if (i + 1 >= argc) Die(flag + " needs a value (see --help)");
      value = argv[++i];
    }
    if (flag == "--rounds") {
      const double r = ParseNumber(flag, value);
      if (r < 1 || r > 1000 || r != std::floor(r)) Die("--rounds: 1 to 1000");
      o.rounds = static_cast<int>(r);
    } else if (flag == "--sizes") {
      o.sizes.clear();
      for (const std::string& s : Split(value)) {
        const double d = ParseNumber(flag, s);
        if (d < 1 || d > static_cast<double>(kMaxSize) || d != std::floor(d)) {
          Die("--sizes: '" + s + "' is not a whole number of keys in [1, 1e9]");
        }
        o.sizes.push_back(static_cast<uint64_t>(d));
      }
      if (o.sizes.empty()) Die("--sizes: no size given");
      std::sort(o.sizes.begin(), o.sizes.end());
      o.sizes.erase(std::unique(o.sizes.begin(), o.sizes.end()), o.sizes.end());
    } else if (flag == "--only") {
      o.only = Split(value);
    } else if (flag == "--min-time") {
      o.min_time = ParseNumber(flag, value);
      if (o.min_time <= 0 || o.min_time > 600) Die("--min-time: (0, 600] s");
    } else if (flag == "--seed") {
      o.seed = static_cast<uint64_t>(ParseNumber(flag, value));
    } else if (flag == "--raw") {
      o.raw = value;
    } else {
      Die("unknown option " + flag + " (see --help)");
    }
  }
  return o;
}

// ---- Units -----------------------------------------------------------------
struct Unit {
  const Row* row = nullptr;
  uint64_t size = 0;
  UnitSpec spec;
  std::vector<std::string> ops;  // the selected cells' ops
};

bool Selected(const std::vector<std::string>& only, const std::string& cell) {
  if (only.empty()) return true;
  for (const std::string& p : only) {
    if (fnmatch(p.c_str(), cell.c_str(), 0) == 0 ||
        fnmatch((p + ".*").c_str(), cell.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

std::vector<Unit> MakeUnits(const Options& o, std::vector<std::string>* all) {
  const uint64_t largest = o.sizes.back();
  std::vector<Unit> units;
  for (const Row& row : Rows()) {
    for (uint64_t n : o.sizes) {
      if (!row.every_size && n != largest) continue;
      if (row.applies != nullptr && !row.applies(n)) continue;
      std::vector<std::string> ops;
      if (row.floor) {
        ops = {"query", "dep"};
      } else {
        ops = {"add", "add10", "query"};
        if (row.batch && n == largest) ops.push_back("batch");
        if (row.remove && n == largest) ops.push_back("remove");
      }
      Unit u;
      u.row = &row;
      u.size = n;
      u.spec.capacity = row.capacity ? row.capacity(n) : n;
      u.spec.inserts = row.inserts ? row.inserts(n) : n;
      u.spec.min_time = o.min_time;
      for (const std::string& op : ops) {
        const std::string cell = row.id + "." + op + "." + SizeName(n);
        all->push_back(cell);
        if (!Selected(o.only, cell)) continue;
        u.ops.push_back(op);
        u.spec.time_add |= op == "add" || op == "add10";
        u.spec.query |= op == "query";
        u.spec.batch |= op == "batch";
        u.spec.remove |= op == "remove";
        u.spec.dep |= op == "dep";
      }
      if (!u.ops.empty()) units.push_back(std::move(u));
    }
  }
  return units;
}

// MemAvailable from /proc/meminfo, in bytes (0 when unknown).
uint64_t MemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kb = 0;
  std::string unit;
  while (in >> name >> kb >> unit) {
    if (name == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

void Record(const Unit& u, const UnitResult& r, int round, Results* res,
            FILE* raw) {
  const std::string size = SizeName(u.size);
  const std::string key = u.row->id + "@" + size;
  std::string line = "[round " + std::to_string(round + 1) + "] " +
                     u.row->id + " " + size + ":";
  for (const std::string& op : u.ops) {
    auto it = r.ns.find(op);
    if (it == r.ns.end()) continue;
    const std::string cell = u.row->id + "." + op + "." + size;
    res->ns[cell].push_back(it->second);
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s %.3g", op.c_str(), it->second);
    line += buf;
    if (raw != nullptr) {
      std::fprintf(raw, "%d\t%s\t%.6g\n", round + 1, cell.c_str(), it->second);
    }
  }
  if (!std::isnan(r.fpr)) res->fpr[key].push_back(r.fpr);
  if (!std::isnan(r.bits_per_item)) res->bits_per_item[key] = r.bits_per_item;
  if (!std::isnan(r.load)) res->load[key] = r.load;
  res->checked += r.checked;
  res->cpu += r.cpu;
  res->wall += r.wall;
  auto fail = [&](uint64_t count, const char* what) {
    if (count == 0) return;
    res->failures.push_back(u.row->id + " at " + size + ", round " +
                            std::to_string(round + 1) + ": " +
                            std::to_string(count) + " " + what);
  };
  fail(r.false_negatives, "false negatives among the inserted keys");
  fail(r.failed_adds, "adds refused");
  fail(r.failed_removes, "removes of inserted keys that failed");
  std::fprintf(stderr, "%s ns%s\n", line.c_str(),
               r.false_negatives + r.failed_adds + r.failed_removes
                   ? "  CHECK FAILED"
                   : "");
}

}  // namespace
}  // namespace sbs

int main(int argc, char** argv) {
  using namespace sbs;
  const Options o = Parse(argc, argv);
  std::vector<std::string> all;
  std::vector<Unit> units = MakeUnits(o, &all);
  if (o.list) {
    for (const std::string& c : all) std::printf("%s\n", c.c_str());
    return 0;
  }
  if (units.empty()) Die("--only selects no cell (--list prints them)");

  uint64_t keys = 0;
  for (const Unit& u : units) keys = std::max(keys, u.spec.inserts);
  // Two key arrays, and the largest structure (under 64 bits a key).
  const uint64_t need = keys * (2 * sizeof(uint64_t) + 8);
  if (const uint64_t avail = MemAvailable(); avail != 0 && need > avail) {
    Die("needs about " + std::to_string(need >> 20) + " MiB, " +
        std::to_string(avail >> 20) + " MiB available: use smaller --sizes");
  }
  std::vector<uint64_t> present(keys), absent(keys);
  for (uint64_t i = 0; i < keys; ++i) {
    present[i] = PresentKey(i);
    absent[i] = AbsentKey(i);
  }
  for (Unit& u : units) {
    u.spec.present = present.data();
    u.spec.absent = absent.data();
  }

  FILE* raw = nullptr;
  if (!o.raw.empty()) {
    raw = std::fopen(o.raw.c_str(), "w");
    if (raw == nullptr) Die("cannot write " + o.raw);
    std::fprintf(raw, "round\tcell\tns_per_op\n");
  }
  Results res;
  res.sizes = o.sizes;
  res.rounds = o.rounds;
  res.min_time = o.min_time;
  std::mt19937_64 rng(o.seed);
  std::fprintf(stderr,
               "side_by_side: %zu units, %d rounds, cells of at least %.2g s, "
               "order seed %llu\n",
               units.size(), o.rounds, o.min_time,
               static_cast<unsigned long long>(o.seed));
  for (int round = 0; round < o.rounds; ++round) {
    std::shuffle(units.begin(), units.end(), rng);
    for (const Unit& u : units) {
      Record(u, u.row->run(u.spec), round, &res, raw);
    }
  }
  if (raw != nullptr) std::fclose(raw);
  PrintReport(res, stdout);
  return res.failures.empty() ? 0 : 1;
}
