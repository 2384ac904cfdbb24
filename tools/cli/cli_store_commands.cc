// The shardfilter commands that manage the store and its filters: create,
// list, drop, checkpoint, verify, demo; and the helpers every command uses
// to open, close and report.
#include <cctype>
#include <cstdio>
#include <ostream>
#include <string>

#include "shardfilter/engine/database.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/demo.h"

namespace shardfilter::tools {
namespace {

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    bool match = true;
    for (size_t j = 0; j < needle.size() && match; ++j) {
      match = std::tolower(static_cast<unsigned char>(haystack[i + j])) ==
              std::tolower(static_cast<unsigned char>(needle[j]));
    }
    if (match) return true;
  }
  return false;
}

// Parses the value of flag `name` when given; *given says whether it was.
// Returns the usage error message, or "" on success.
template <typename T, typename Parse>
std::string ParseFlag(const ParsedArgs& args, std::string_view name,
                      Parse parse, T* out, bool* given = nullptr) {
  const std::string* v = args.Get(name);
  if (given != nullptr) *given = v != nullptr;
  if (v == nullptr) return "";
  auto r = parse(*v);
  if (!r.ok()) return "--" + std::string(name) + ": " + r.status().message();
  *out = static_cast<T>(*r);
  return "";
}

}  // namespace

std::string SpecFromFlags(const ParsedArgs& args, FilterSpec* spec,
                          bool require_core) {
  for (std::string_view required : {"type", "capacity", "fpp"}) {
    if (require_core && !args.Has(required)) {
      return "create needs --" + std::string(required);
    }
  }
  std::string e;
  if (const std::string* t = args.Get("type")) {
    auto type = ParseFilterType(*t);
    if (!type.ok()) {
      return "--type: '" + EscapeBytes(*t) +
             "' is not a filter type (bloom, counting or cuckoo)";
    }
    if (*type != spec->type) {
      // Another type: the old type's own parameters do not carry over.
      spec->k = spec->fingerprint_bits = spec->bucket_size = 0;
      spec->max_kicks = 0;
      spec->layout = BloomLayout::kAuto;
    }
    spec->type = *type;
  }
  const bool bloom = spec->type == FilterType::kBloom;
  const bool cuckoo = spec->type == FilterType::kCuckoo;
  auto count = [](uint64_t lo, uint64_t hi) {
    return
        [lo, hi](std::string_view s) { return ParseCountInRange(s, lo, hi); };
  };
  e = ParseFlag(args, "capacity", count(1, UINT64_MAX), &spec->capacity);
  if (!e.empty()) return e;
  e = ParseFlag(args, "fpp", ParseProbability, &spec->fpp);
  if (!e.empty()) return e;
  e = ParseFlag(args, "shards", count(1, kMaxShards), &spec->shards);
  if (!e.empty()) return e;
  if (args.Has("shards") && (spec->shards & (spec->shards - 1)) != 0) {
    return "--shards: " + std::to_string(spec->shards) +
           " is not a power of two (1, 2, 4, ..., 256)";
  }
  e = ParseFlag(args, "seed", ParseSeed, &spec->seed);
  if (!e.empty()) return e;
  if (const std::string* d = args.Get("durability")) {
    auto r = ParseDurability(*d);
    if (!r.ok()) {
      return "--durability: '" + EscapeBytes(*d) +
             "' is not none, journal or sync";
    }
    spec->durability = *r;
  }
  bool given = false;
  e = ParseFlag(args, "k", count(1, 64), &spec->k, &given);
  if (!e.empty()) return e;
  if (given && cuckoo) return "--k applies to bloom and counting filters";
  if (const std::string* layout = args.Get("layout")) {
    if (!bloom) return "--layout applies to bloom filters only";
    auto parsed = ParseBloomLayout(*layout);
    if (!parsed.ok()) {
      return "--layout: '" + EscapeBytes(*layout) +
             "' is not auto, split, blocked or classic";
    }
    spec->layout = *parsed;
  }
  e = ParseFlag(args, "fingerprint-bits", count(8, 16), &spec->fingerprint_bits,
                &given);
  if (!e.empty()) return e;
  if (given) {
    if (!cuckoo) return "--fingerprint-bits applies to cuckoo filters only";
    if (spec->fingerprint_bits % 4 != 0) {
      return "--fingerprint-bits: must be 8, 12 or 16";
    }
  }
  e = ParseFlag(args, "bucket-size", count(2, 8), &spec->bucket_size, &given);
  if (!e.empty()) return e;
  if (given) {
    if (!cuckoo) return "--bucket-size applies to cuckoo filters only";
    if ((spec->bucket_size & (spec->bucket_size - 1)) != 0) {
      return "--bucket-size: must be 2, 4 or 8";
    }
  }
  spec->scalable = !args.Has("nonscaling");
  if (args.Has("retain-hashes")) spec->retain_hashes = true;
  e = ParseFlag(args, "expansion", count(1, 16), &spec->expansion, &given);
  if (!e.empty()) return e;
  if (given && !spec->scalable) {
    return "--expansion applies to scalable filters (drop --nonscaling)";
  }
  return "";
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

int ReportError(std::ostream& err, const Status& status) {
  err << "shardfilter: " << status.ToString() << "\n";
  return status.IsInvalidArgument() ? kExitUsage : kExitError;
}

int UsageError(std::ostream& err, std::string_view message) {
  err << "shardfilter: " << message << "\n";
  return kExitUsage;
}

Result<std::unique_ptr<Database>> OpenStore(
    const CommandContext& ctx, OpenMode mode,
    std::optional<Durability> durability_override) {
  DatabaseOptions options;
  options.path = ctx.db_path;
  options.read_only = mode == OpenMode::kReadOnly || mode == OpenMode::kVerify;
  options.create_if_missing = mode == OpenMode::kWriteOrCreate;
  options.durability_override = durability_override;
  // verify reports journal damage as a problem (exit 1), not an open error.
  options.report_journal_damage = mode == OpenMode::kVerify;
  auto db = Database::Open(options);
  if (db.ok()) return db;
  const Status& s = db.status();
  std::string hint;
  if (ContainsNoCase(s.message(), "lock") || s.code() == StatusCode::kBusy) {
    hint = " (is another process using this store? writers need it alone)";
  } else if (s.IsNotFound() && mode != OpenMode::kWriteOrCreate) {
    hint = " (create a filter first, or pass --db DIR)";
  }
  return Status(s.code(), "opening store '" + EscapeBytes(ctx.db_path) +
                              "': " + s.message() + hint);
}

int CloseStore(Database& db, std::ostream& err, int code) {
  Status s = db.Close();
  if (s.ok()) return code;
  ReportError(err, s.WithContext("closing store"));
  return kExitError;
}

int RunCreate(CommandContext& ctx) {
  FilterSpec spec;
  std::string e = SpecFromFlags(ctx.args, &spec, true);
  if (!e.empty())
    return UsageError(ctx.err, e + " (see shardfilter create --help)");
  const std::string& name = ctx.args.positional[0];
  auto db = OpenStore(ctx, OpenMode::kWriteOrCreate);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  auto f = (*db)->Create(name, spec);
  if (!f.ok()) {
    return CloseStore(**db, ctx.err, ReportError(ctx.err, f.status()));
  }
  const FilterSpec& r = (*f)->spec();
  FilterStats total = (*f)->Stats().total;
  ctx.out << "created " << EscapeBytes(name) << ": " << FilterTypeName(r.type)
          << ", capacity " << r.capacity << ", fpp " << r.fpp << ", "
          << (*f)->shard_count() << " shard"
          << ((*f)->shard_count() == 1 ? "" : "s") << ", " << total.bytes
          << " bytes (" << Mib(total.bytes) << "), durability "
          << DurabilityName((*f)->durability()) << "\n";
  return CloseStore(**db, ctx.err, kExitOk);
}

int RunList(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kReadOnly);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  for (const std::string& name : (*db)->List()) {
    ctx.out << EscapeBytes(name) << "\n";
  }
  // Damaged filters are listed, and named on stderr (exit 1).
  const auto bad = (*db)->Unavailable();
  for (const auto& [name, why] : bad) {
    ctx.err << "shardfilter: " << why.ToString() << "\n";
  }
  return CloseStore(**db, ctx.err, bad.empty() ? kExitOk : kExitFailed);
}

int RunDrop(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kWriteExisting);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Status s = (*db)->Drop(ctx.args.positional[0]);
  int code = s.ok() ? kExitOk : ReportError(ctx.err, s);
  return CloseStore(**db, ctx.err, code);
}

int RunUnion(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kWriteExisting);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  const std::vector<std::string>& p = ctx.args.positional;
  const std::vector<std::string_view> sources(p.begin() + 1, p.end());
  Status s = (*db)->Union(p[0], sources);
  if (!s.ok()) return CloseStore(**db, ctx.err, ReportError(ctx.err, s));
  ctx.out << "union of " << sources.size() << " filter(s) into '" << p[0]
          << "' checkpointed\n";
  return CloseStore(**db, ctx.err, kExitOk);
}

int RunCheckpoint(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kWriteExisting);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Result<CheckpointStats> stats =
      ctx.args.positional.empty() ? (*db)->CheckpointAll()
                                  : (*db)->Checkpoint(ctx.args.positional[0]);
  if (!stats.ok()) {
    return CloseStore(**db, ctx.err, ReportError(ctx.err, stats.status()));
  }
  char hold[32];
  std::snprintf(hold, sizeof hold, "%.3f", stats->max_lock_hold_ns / 1e6);
  ctx.out << "filters_checkpointed " << stats->filters_checkpointed << "\n"
          << "shards_written " << stats->shards_written << "\n"
          << "shards_skipped " << stats->shards_skipped << "\n"
          << "chunks_written " << stats->chunks_written << "\n"
          << "bytes_written " << stats->bytes_written << "\n"
          << "max_lock_hold_ms " << hold << "\n";
  return CloseStore(**db, ctx.err, kExitOk);
}

int RunCompact(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kWriteExisting);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Status s = (*db)->Compact();
  int code = s.ok() ? kExitOk : ReportError(ctx.err, s);
  return CloseStore(**db, ctx.err, code);
}

int RunVerify(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kVerify);
  if (!db.ok() && db.status().IsCorruption()) {
    // A store that does not open is what verify is for: one problem.
    ctx.out << "problems 1\nproblem: " << db.status().ToString() << "\n";
    ctx.err << "shardfilter: verify found 1 problem: the store does not "
               "open\n";
    return kExitFailed;
  }
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Result<VerifyReport> report = (*db)->Verify();
  if (!report.ok()) {
    return CloseStore(**db, ctx.err, ReportError(ctx.err, report.status()));
  }
  const VerifyReport& r = *report;
  ctx.out << "filters " << r.filters << "\n"
          << "chunks " << r.chunks << "\n"
          << "shard_blobs " << r.shard_blobs << "\n"
          << "journal_entries " << r.journal_entries << "\n"
          << "retained_hashes " << r.retained_hashes << "\n"
          << "dedup_journal_records " << r.dedup_journal_records << "\n"
          << "bytes " << r.bytes << "\n"
          << "orphan_values " << r.orphan_values << "\n"
          << "problems " << r.problems.size() << "\n";
  for (const std::string& p : r.problems) ctx.out << "problem: " << p << "\n";
  // Notes (a torn tail of the write-ahead log) are no damage: exit 0.
  ctx.out << "notes " << r.notes.size() << "\n";
  for (const std::string& n : r.notes) ctx.out << "note: " << n << "\n";
  int code = kExitOk;
  if (!r.ok()) {
    ctx.err << "shardfilter: verify found " << r.problems.size() << " problem"
            << (r.problems.size() == 1 ? "" : "s") << "\n";
    code = kExitFailed;
  }
  return CloseStore(**db, ctx.err, code);
}

int RunDemoCommand(CommandContext& ctx) {
  DemoOptions o;
  auto count = [](std::string_view s) {
    return ParseCountInRange(s, 1, uint64_t{1} << 32);
  };
  std::string e = ParseFlag(ctx.args, "items", count, &o.items);
  if (e.empty()) e = ParseFlag(ctx.args, "probes", count, &o.probes);
  if (e.empty()) e = ParseFlag(ctx.args, "fpp", ParseProbability, &o.fpp);
  if (!e.empty())
    return UsageError(ctx.err, e + " (see shardfilter demo --help)");
  return RunDemo(o, ctx.out) == 0 ? kExitOk : kExitFailed;
}

}  // namespace shardfilter::tools
