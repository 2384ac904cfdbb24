// `shardfilter experiment fill|k|space`: runs a measurement of
// tools/cli/experiment.h, writes PREFIX.csv and, when gnuplot is on PATH,
// PREFIX.gp (the plot script, to tweak) and PREFIX.png.
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/experiment.h"
#include "tools/cli/file_io.h"

extern char** environ;

namespace shardfilter::tools {

const std::string_view kExperimentUsage =
    R"(Usage: shardfilter experiment fill|k|space [--type T] [--capacity N]
                          [--fpp P] [--probes N] [--out PREFIX]

Measures filters in memory on your parameters and writes PREFIX.csv (a
header row, then one row per measurement); when gnuplot is installed, also
PREFIX.png (measured against theory) and PREFIX.gp, the script that drew
it. The paths written are printed on stdout. Touches no store.

  fill    measured FPR as the filter fills from 10% to 200% of capacity,
          and the theoretical curve of its layout.
  k       FPR against k = 3..17 at a fixed size (the size the sizing
          picks for N and P), blocked and classic Bloom.
  space   bits per item against the target FPR, 10% .. 1e-6, for each
          filter type, with the FPR measured at capacity and the bound
          log2(1/p).

Flags:
  --type T       fill: bloom (blocked, default), classic (Bloom, classic
                 layout), counting or cuckoo; space: only this type.
  --capacity N   items the filters are sized for (default 100k).
  --fpp P        target rate for fill and k (default 0.01).
  --probes N     absent keys queried per measurement (default 200k); the
                 FPR resolution is 1/N.
  --out PREFIX   output path prefix (default experiment-KIND).

Example:
  shardfilter experiment fill --type cuckoo --capacity 1M --fpp 0.001
)";

namespace {

std::string G(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A gnuplot single-quoted string ('' stands for ').
std::string GpQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? "''" : std::string(1, c);
  return q + "'";
}

std::string PlotScript(const std::string& kind, const std::string& csv,
                       const std::string& png, const std::string& what) {
  std::string gp =
      "set terminal pngcairo size 960,640 noenhanced font ',11'\n"
      "set output " +
      GpQuote(png) +
      "\n"
      "set datafile separator ','\n"
      "set grid\nset key top left box opaque\n"
      "set title " +
      GpQuote(what) +
      "\n"
      "csv = " +
      GpQuote(csv) +
      "\n"
      "pos(v) = v > 0 ? v : 1/0\n";
  if (kind == "fill") {
    gp +=
        "set xlabel 'fill (% of capacity)'\n"
        "set ylabel 'false-positive rate (log scale)'\n"
        "set logscale y\nset format y '%.0e'\n"
        "plot csv skip 1 using 1:(pos($3)) with linespoints pt 7 "
        "title 'measured', "
        "csv skip 1 using 1:(pos($4)) with lines lw 2 title 'theory', "
        "csv skip 1 using 1:5 with lines dt 2 title 'target'\n";
  } else if (kind == "k") {
    gp +=
        "set xlabel 'k (hash probes per key)'\n"
        "set ylabel 'false-positive rate (log scale)'\n"
        "set logscale y\nset format y '%.0e'\nset xtics 1\n"
        "plot for [l in 'blocked classic'] csv skip 1 "
        "using 2:(strcol(1) eq l ? pos($5) : 1/0) with linespoints pt 7 "
        "title l.' measured', "
        "for [l in 'blocked classic'] csv skip 1 "
        "using 2:(strcol(1) eq l ? pos($6) : 1/0) with lines lw 2 "
        "title l.' theory'\n";
  } else {
    gp +=
        "set xlabel 'false-positive rate (log scale; lines: target, "
        "points: measured at capacity)'\n"
        "set ylabel 'bits per item (log scale)'\n"
        "set logscale y 2\nset ytics (2,4,8,16,32,64,128,256,512,1024,2048)\n"
        "set logscale x\nset format x '%.0e'\nset xrange [*:*] reverse\n"
        "types = 'bloom-blocked bloom-classic counting cuckoo'\n"
        "plot for [i=1:4] csv skip 1 using "
        "(strcol(1) eq word(types,i) ? $2 : 1/0):3 with linespoints lc i "
        "pt 7 title word(types,i), "
        "for [i=1:4] csv skip 1 using "
        "(strcol(1) eq word(types,i) ? pos($4) : 1/0):3 with points lc i "
        "pt 6 ps 1.5 notitle, "
        "log(1/x)/log(2) with lines dt 2 lc 'black' "
        "title 'bound log2(1/p)'\n";
  }
  return gp;
}

// Runs `gnuplot script`; false when gnuplot is not on PATH or fails.
bool RunGnuplot(const std::string& script, std::ostream& err) {
  std::vector<char*> argv = {const_cast<char*>("gnuplot"),
                             const_cast<char*>(script.c_str()), nullptr};
  pid_t pid;
  if (posix_spawnp(&pid, "gnuplot", nullptr, nullptr, argv.data(), environ) !=
      0) {
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  err << "shardfilter: warning: gnuplot failed on " << Quoted(script) << "\n";
  return false;
}

}  // namespace

int RunExperiment(CommandContext& ctx) {
  const std::string& kind = ctx.args.positional[0];
  if (kind != "fill" && kind != "k" && kind != "space") {
    return UsageError(ctx.err, "experiment: " + Quoted(kind) +
                                   " is not fill, k or space (see shardfilter "
                                   "experiment --help)");
  }
  ExperimentOptions o;
  if (const std::string* t = ctx.args.Get("type")) {
    o.one_type = true;
    if (*t == "classic") {
      o.classic_layout = true;
    } else {
      auto r = ParseFilterType(*t);
      if (!r.ok()) {
        return UsageError(ctx.err, "--type: " + Quoted(*t) +
                                       " is not bloom, classic, counting or "
                                       "cuckoo");
      }
      o.type = *r;
    }
  }
  auto count = [](const std::string& s) {
    return ParseCountInRange(s, 1, uint64_t{1} << 30);
  };
  for (auto [flag, field] :
       {std::pair{"capacity", &o.capacity}, std::pair{"probes", &o.probes}}) {
    if (const std::string* v = ctx.args.Get(flag)) {
      auto r = count(*v);
      if (!r.ok()) {
        return UsageError(
            ctx.err, "--" + std::string(flag) + ": " + r.status().message());
      }
      *field = *r;
    }
  }
  if (const std::string* v = ctx.args.Get("fpp")) {
    auto r = ParseProbability(*v);
    if (!r.ok()) return UsageError(ctx.err, "--fpp: " + r.status().message());
    o.fpp = *r;
  }
  const std::string prefix = ctx.args.Get("out") != nullptr
                                 ? *ctx.args.Get("out")
                                 : "experiment-" + kind;
  Result<Table> table = kind == "fill" ? FillExperiment(o)
                        : kind == "k"  ? KExperiment(o)
                                       : SpaceExperiment(o);
  if (!table.ok()) return ReportError(ctx.err, table.status());
  const std::string csv = prefix + ".csv";
  Status s = WriteFileAtomically(csv, table->ToCsv());
  if (!s.ok()) return ReportError(ctx.err, s);
  ctx.out << "csv " << csv << "\n";
  const std::string what =
      kind == "fill"
          ? std::string("FPR vs fill: ") +
                (o.classic_layout ? "classic bloom" : FilterTypeName(o.type)) +
                ", capacity " + std::to_string(o.capacity) + ", target " +
                G(o.fpp)
      : kind == "k"
          ? "FPR vs k at fixed size: bloom, capacity " +
                std::to_string(o.capacity) + ", sized for " + G(o.fpp) +
                " at the optimal k"
          : "bits per item vs FPR, capacity " + std::to_string(o.capacity);
  const std::string gp = prefix + ".gp", png = prefix + ".png";
  s = WriteFileAtomically(gp, PlotScript(kind, csv, png, what));
  if (!s.ok()) return ReportError(ctx.err, s);
  if (RunGnuplot(gp, ctx.err)) {
    ctx.out << "png " << png << "\n";
  } else {
    ctx.err << "shardfilter: gnuplot not available: wrote " << csv << " and "
            << gp << ", no PNG\n";
  }
  return kExitOk;
}

}  // namespace shardfilter::tools
