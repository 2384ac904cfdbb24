// `shardfilter dedup`: reads keys from stdin (the line rules of `add`) and
// prints only the ones never seen before, remembering them in a dedup set
// of the store (engine/dedup_store.h) across runs: `sort -u` with memory.
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "shardfilter/engine/dedup_store.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"

namespace shardfilter::tools {

const std::string_view kDedupUsage =
    R"(Usage: shardfilter dedup [NAME] [--ttl SECONDS] [--expected N] [--fpp P]
                         [--durability none|journal|sync] [--quiet]

Reads keys from stdin, one per line (a trailing "\r" is removed; an empty
line is the empty key), and prints on stdout only the keys not seen before
in the dedup set NAME (default "default"), in input order, remembering them
for later runs. Keys repeated within the input are printed once. Statistics
go to stderr at the end. The store directory and the set are created when
missing. Keys longer than 4096 bytes are an error (exit 2, nothing of their
batch is stored).

Flags:
  --ttl SECONDS    forget keys after this window (fixed when the set is
                   created; default: the set's, or never). Keys live more
                   than SECONDS and at most SECONDS + SECONDS/8.
  --expected N     keys the in-memory filter is sized for (default 1M; per
                   window with --ttl). More only costs speed, never accuracy.
  --fpp P          the filter's false-positive rate (default 0.01): the
                   share of new keys that still cost a RocksDB read.
  --durability D   none (survives a clean exit), journal (default: every
                   printed key survives kill -9) or sync (survives power loss).
  --quiet          no statistics on stderr.

Example:
  cat urls-*.txt | shardfilter --db /var/lib/sf dedup crawled --ttl 86400
)";

int RunDedup(CommandContext& ctx) {
  DedupOptions o;
  const std::string name =
      ctx.args.positional.empty() ? "default" : ctx.args.positional[0];
  if (const std::string* v = ctx.args.Get("ttl")) {
    auto r = ParseCountInRange(*v, 1, uint64_t{1} << 40);
    if (!r.ok()) return UsageError(ctx.err, "--ttl: " + r.status().message());
    o.ttl_ms = *r * 1000;
  }
  if (const std::string* v = ctx.args.Get("expected")) {
    auto r = ParseCountInRange(*v, 1, uint64_t{1} << 40);
    if (!r.ok()) {
      return UsageError(ctx.err, "--expected: " + r.status().message());
    }
    o.expected_keys = *r;
  }
  if (const std::string* v = ctx.args.Get("fpp")) {
    auto r = ParseProbability(*v);
    if (!r.ok()) return UsageError(ctx.err, "--fpp: " + r.status().message());
    o.fpp = *r;
  }
  if (const std::string* v = ctx.args.Get("durability")) {
    auto r = ParseDurability(*v);
    if (!r.ok()) {
      return UsageError(ctx.err, "--durability: '" + EscapeBytes(*v) +
                                     "' is not none, journal or sync");
    }
    o.durability = *r;
  }
  auto db = OpenStore(ctx, OpenMode::kWriteOrCreate);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  auto set = DedupStore::Open(**db, name, o);
  if (!set.ok())
    return CloseStore(**db, ctx.err, ReportError(ctx.err, set.status()));
  DedupStore& d = **set;
  std::vector<std::string> lines(kKeyBatch);
  std::vector<std::string_view> keys;
  std::vector<uint8_t> fresh;
  std::string out;
  Status fatal;
  uint64_t read = 0;
  while (fatal.ok()) {
    size_t n = 0;
    while (n < kKeyBatch && std::getline(ctx.in, lines[n])) {
      if (!lines[n].empty() && lines[n].back() == '\r') lines[n].pop_back();
      ++n;
    }
    if (n == 0) break;
    keys.assign(lines.begin(), lines.begin() + n);
    fatal = d.InsertIfAbsentBatch(keys, &fresh);
    if (!fatal.ok()) {
      // The set numbers keys within the batch from 1; number them in the
      // whole input, as `add` does.
      const std::string& m = fatal.message();
      uint64_t k = 0;
      size_t at = 5;
      if (m.rfind("key #", 0) == 0) {
        while (at < m.size() && m[at] >= '0' && m[at] <= '9') {
          k = k * 10 + static_cast<uint64_t>(m[at++] - '0');
        }
        if (at > 5) {
          fatal = Status(fatal.code(),
                         "key #" + std::to_string(read + k) + m.substr(at));
        }
      }
      break;
    }
    read += n;
    out.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!fresh[i]) continue;
      out.append(keys[i]);
      out.push_back('\n');
    }
    ctx.out << out;  // printed only once durable (per the durability mode)
    ctx.out.flush();
  }
  if (fatal.ok() && ctx.in.bad()) {
    fatal = Status::IOError("reading keys from stdin failed");
  }
  Status closed = d.Close();
  if (fatal.ok()) fatal = closed;
  DedupStats st = d.Stats();
  if (!ctx.args.Has("quiet") || !fatal.ok()) {
    ctx.err << "dedup " << EscapeBytes(name) << ": " << read << " keys, "
            << st.new_keys << " new, " << st.duplicates << " duplicates; "
            << "RocksDB reads " << st.rocksdb_reads
            << ", avoided by the filter " << st.reads_avoided
            << ", filter false positives " << st.filter_false_positives
            << " (observed FPR " << st.observed_fpr << ")";
    if (st.expired_keys > 0) ctx.err << ", expired " << st.expired_keys;
    ctx.err << "; loaded " << st.loaded_keys << " keys in " << st.open_ms
            << " ms\n";
  }
  int code = fatal.ok() ? kExitOk : ReportError(ctx.err, fatal);
  return CloseStore(**db, ctx.err, code);
}

}  // namespace shardfilter::tools
