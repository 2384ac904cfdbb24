// `shardfilter migrate NAME [KEYFILE...]`: the offline rebuild of a filter
// into another type, capacity, rate, shard count or seed (usage below).
//
// Steps: work out the target spec and where the keys come from; build the
// target in memory (resuming from a saved state when there is one); verify
// it against the source; then install it with one atomic commit
// (Database::ReplaceFilter) or, with --to-db / --to-name, create it with
// ImportFilter. The source is never written before that commit, so a kill
// at any earlier moment leaves it as it was.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/database.h"
#include "engine/export.h"
#include "engine/migration.h"
#include "filters/bloom_filter.h"
#include "filters/hash.h"
#include "tools/cli.h"
#include "tools/cli_args.h"
#include "tools/cli_commands.h"
#include "tools/file_io.h"
#include "tools/key_reader.h"
#include "tools/migrate_state.h"
#include "tools/progress.h"

namespace shardfilter::tools {

const std::string_view kMigrateUsage =
    R"(Usage: shardfilter migrate NAME [KEYFILE...] [TARGET FLAGS...]
                   [--from auto|hashes|fold|keys] [--fold N] [--binary]
                   [--to-db DIR] [--to-name NEW] [--retain-hashes|--drop-hashes]
                   [--verify-sample N] [--probes N] [--stop-after N]
                   [--restart] [--progress-every N] [--quiet]

Rebuilds filter NAME into a new filter, while nothing else has the store
open, and replaces it in one atomic commit (or, with --to-db DIR and/or
--to-name NEW, creates the new filter there and leaves NAME as it is).
The target is NAME's spec changed by create's flags: --type, --capacity,
--fpp, --shards, --seed, --durability, --k, --layout, --fingerprint-bits,
--bucket-size, --nonscaling, --expansion.

Where the keys come from (--from; default auto):
  hashes  NAME's retained key hashes (created with --retain-hashes): any
          target with the same seed.
  fold    a blocked Bloom filter whose shards have not grown, folded to 1/N
          of its size: --fold N gives capacity / N at the same rate.
  keys    the KEYFILEs ("-" or none: stdin), one key per line, or --binary
          records (4-byte little-endian length, then the key). They must be
          NAME's keys. Needed for a new --seed.
  auto    keys when KEYFILEs are given, else hashes when NAME retains them,
          else fold with --fold; otherwise an error says what would work.
The new filter retains hashes when NAME does and they are the source
(--drop-hashes: not); --retain-hashes asks for it, which only an in-place
migration from retained hashes can give.

Progress goes to stderr (one redrawn line on a terminal, plain lines
otherwise). Ctrl-C, or --stop-after N keys, stops after the current batch
and saves the partial target in the target store's directory
(migrate-<id>.state): run the same command again to resume; --restart
discards a saved state. The result equals an uninterrupted run's. A kill
loses only progress: nothing is written to the store before the commit.

Before the commit a verification pass checks that the source's keys are in
the target: every retained hash or input key (--verify-sample N: N of them,
evenly spread; keys read from stdin: the up to 1M kept while reading); for
a fold, that every bit of every source block is set in its folded block. It then measures the target's
false-positive rate with --probes absent hashes (default 1M) and prints it
against the target. A missing key stops everything (exit 1).

Output on stdout: "key value" lines (source, target, keys, seconds,
keys_per_second, verified, missing, measured_fpr, target_fpr).

Examples:
  shardfilter migrate users --capacity 100M --fpp 0.001 --shards 64
  shardfilter migrate urls --type cuckoo
  shardfilter migrate seen --fold 4
  shardfilter migrate old --seed 7 keys.txt
  shardfilter migrate users --to-db /backup/sf --to-name users-v2
)";

namespace {

enum class KeySource { kHashes, kFold, kKeys };

// Random 64-bit hashes for the probes (SplitMix64, Steele et al. 2014).
uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

const char* KeySourceName(KeySource k) {
  switch (k) {
    case KeySource::kHashes:
      return "hashes";
    case KeySource::kFold:
      return "fold";
    case KeySource::kKeys:
      return "keys";
  }
  return "?";
}

std::string Describe(const FilterSpec& s) {
  char fpp[32];
  std::snprintf(fpp, sizeof fpp, "%g", s.fpp);
  return std::string(FilterTypeName(s.type)) + " capacity " +
         std::to_string(s.capacity) + " fpp " + fpp + " shards " +
         std::to_string(s.shards) + (s.retain_hashes ? " retain_hashes" : "");
}

// Everything that must be equal for a saved state to be resumed: the
// request and the source's state (any op since changes a shard's last
// sequence or checkpoint generation).
uint64_t Fingerprint(const std::string& name, const std::string& to,
                     KeySource kind, const FilterSpec& t, ShardedFilter& src,
                     const std::vector<std::string>& files) {
  std::string c = name + '\0' + to + '\0' + KeySourceName(kind);
  for (uint64_t v : {static_cast<uint64_t>(t.type), t.capacity, t.seed,
                     static_cast<uint64_t>(t.shards), uint64_t{t.k},
                     uint64_t{t.fingerprint_bits}, uint64_t{t.bucket_size},
                     uint64_t{t.expansion}, uint64_t{t.scalable},
                     uint64_t{t.classic_layout}, t.max_bytes}) {
    c += std::to_string(v) + ',';
  }
  char fpp[40];
  std::snprintf(fpp, sizeof fpp, "%.17g", t.fpp);
  c += fpp;
  for (const ShardStats& s : src.Stats().shards) {
    c += ';' + std::to_string(s.last_sequence) + '/' +
         std::to_string(s.checkpoint_generation);
  }
  for (const std::string& f : files) {
    struct stat st;
    c += '|' + f;
    if (::stat(f.c_str(), &st) == 0) {
      c += ':' + std::to_string(st.st_size) + ':' +
           std::to_string(st.st_mtim.tv_sec) + '.' +
           std::to_string(st.st_mtim.tv_nsec);
    }
  }
  return HashKey(c, 0);
}

std::string StatePath(const std::string& dir, const std::string& name,
                      const std::string& to) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>(HashKey(name + '\0' + to, 0)));
  return dir + "/migrate-" + id + ".state";
}

struct Options {
  std::optional<KeySource> from;  // nullopt = auto
  uint32_t fold = 0;
  std::string to_db, to_name;
  uint64_t verify_sample = 0;  // 0 = every key
  uint64_t probes = 1'000'000;
  uint64_t stop_after = 0;  // 0 = never
  uint64_t every = 0;
  bool quiet = false, restart = false, binary = false;
  bool retain = false, drop_hashes = false;
};

// Parses the migrate-only flags; returns a usage error or "".
std::string ParseOptions(const ParsedArgs& a, Options* o) {
  if (const std::string* f = a.Get("from")) {
    if (*f == "hashes") {
      o->from = KeySource::kHashes;
    } else if (*f == "fold") {
      o->from = KeySource::kFold;
    } else if (*f == "keys") {
      o->from = KeySource::kKeys;
    } else if (*f != "auto") {
      return "--from: '" + EscapeBytes(*f) +
             "' is not auto, hashes, fold or keys";
    }
  }
  auto count = [&](std::string_view flag, uint64_t lo, uint64_t* out) {
    const std::string* v = a.Get(flag);
    if (v == nullptr) return std::string();
    auto r = ParseCountInRange(*v, lo, UINT64_MAX);
    if (!r.ok()) return "--" + std::string(flag) + ": " + r.status().message();
    *out = *r;
    return std::string();
  };
  uint64_t fold = 0;
  for (auto [flag, lo, out] :
       {std::tuple{"fold", 2, &fold},
        std::tuple{"verify-sample", 1, &o->verify_sample},
        std::tuple{"probes", 0, &o->probes},
        std::tuple{"stop-after", 1, &o->stop_after},
        std::tuple{"progress-every", 1, &o->every}}) {
    std::string e = count(flag, static_cast<uint64_t>(lo), out);
    if (!e.empty()) return e;
  }
  if (fold != 0) {
    if ((fold & (fold - 1)) != 0 || fold > (1u << 30)) {
      return "--fold: " + std::to_string(fold) + " is not a power of two";
    }
    if (a.Has("capacity")) return "--fold sets the capacity: drop --capacity";
    o->fold = static_cast<uint32_t>(fold);
  }
  if (const std::string* v = a.Get("to-db")) o->to_db = *v;
  if (const std::string* v = a.Get("to-name")) o->to_name = *v;
  o->quiet = a.Has("quiet");
  o->restart = a.Has("restart");
  o->binary = a.Has("binary");
  o->retain = a.Has("retain-hashes");
  o->drop_hashes = a.Has("drop-hashes");
  if (o->retain && o->drop_hashes) {
    return "--retain-hashes and --drop-hashes contradict each other";
  }
  return "";
}

// The state of one run, shared by its steps.
struct Run {
  Run(CommandContext& c, std::string n) : ctx(c), name(std::move(n)) {}
  CommandContext& ctx;
  Options opt;
  std::string name;
  std::vector<std::string> files;
  Database* db = nullptr;
  std::shared_ptr<ShardedFilter> src;
  FilterSpec target;
  KeySource kind = KeySource::kHashes;
  std::unique_ptr<ShardedFilter> built;
  uint64_t consumed = 0, last_hash = 0;
  uint64_t units = 0;  // progress units done: hashes, or input bytes
  bool have_last_hash = false;
  std::vector<uint64_t> stdin_sample;  // keys from stdin, for verification
};

// Decides where the keys come from; a usage error message or "".
std::string ChooseSource(Run& r) {
  const FilterSpec& from = r.src->spec();
  const bool keys_given = !r.files.empty();
  if (r.opt.from == KeySource::kKeys || keys_given) {
    if (r.opt.from.has_value() && r.opt.from != KeySource::kKeys) {
      return "KEYFILEs are given but --from is not keys";
    }
    if (r.files.empty()) r.files.push_back("-");
    r.kind = KeySource::kKeys;
  } else if (r.opt.from == KeySource::kFold || r.opt.fold != 0) {
    if (r.opt.from.has_value() && r.opt.from != KeySource::kFold) {
      return "--fold needs --from fold (or auto)";
    }
    if (r.opt.fold == 0) return "--from fold needs --fold N";
    r.kind = KeySource::kFold;
  } else if (r.opt.from == KeySource::kHashes || from.retain_hashes) {
    if (!from.retain_hashes) {
      return "'" + EscapeBytes(r.name) +
             "' does not retain its key hashes (create it with "
             "--retain-hashes); give its keys as KEYFILEs, or --fold N for a "
             "Bloom filter";
    }
    r.kind = KeySource::kHashes;
  } else {
    return "'" + EscapeBytes(r.name) +
           "' does not retain its key hashes, so the target must be built "
           "from its keys (KEYFILEs) or, for a blocked Bloom filter, by "
           "folding (--fold N)";
  }
  if (r.kind != KeySource::kKeys && r.target.seed != from.seed) {
    return "a new --seed needs the keys themselves (KEYFILEs): hashes and "
           "bits depend on the seed";
  }
  const bool cross = !r.opt.to_db.empty() || !r.opt.to_name.empty();
  r.target.retain_hashes = r.opt.retain || (r.kind == KeySource::kHashes &&
                                            !r.opt.drop_hashes && !cross);
  if (r.target.retain_hashes && (r.kind != KeySource::kHashes || cross)) {
    return "--retain-hashes: only an in-place migration from retained hashes "
           "keeps them (for a new filter, create it with --retain-hashes and "
           "import its keys)";
  }
  return "";
}

// Fills r.built from the source of keys, from r.consumed on. Returns
// Aborted when interrupted (SIGINT or --stop-after) between batches.
Status Fill(Run& r, Progress* progress) {
  uint64_t this_run = 0;
  auto stop = [&] {
    return InterruptGuard::Interrupted() ||
           (r.opt.stop_after != 0 && this_run >= r.opt.stop_after);
  };
  std::vector<Status> per_item;
  auto add = [&](std::span<const uint64_t> hashes) -> Status {
    Status s = r.built->AddHashes(hashes, &per_item);
    if (!s.ok()) {
      return s.WithContext("the target cannot hold the source's keys");
    }
    return Status::OK();
  };
  if (r.kind == KeySource::kHashes) {
    const bool bloom = r.src->type() == FilterType::kBloom;
    std::vector<uint64_t> hashes;
    std::optional<uint64_t> after;
    if (r.have_last_hash) after = r.last_hash;
    return r.db->ScanRetainedHashes(
        r.name, after,
        [&](std::span<const std::pair<uint64_t, int64_t>> batch) -> Status {
          // Slices of kKeyBatch hashes, so that a stop lands between any
          // two slices and the cursor names the last hash added.
          for (size_t at = 0; at < batch.size(); at += kKeyBatch) {
            if (stop()) return Status::Aborted("interrupted");
            auto slice =
                batch.subspan(at, std::min(kKeyBatch, batch.size() - at));
            hashes.clear();
            for (const auto& [h, n] : slice) {
              for (int64_t c = 0; c < (bloom ? 1 : n); ++c) hashes.push_back(h);
            }
            SF_RETURN_IF_ERROR(add(hashes));
            r.consumed += slice.size();
            this_run += slice.size();
            r.last_hash = slice.back().first;
            r.have_last_hash = true;
            r.units = r.consumed;
            if (progress) progress->Update(r.consumed, r.units);
          }
          return Status::OK();
        });
  }
  // Keys.
  KeyReader reader(r.files, r.ctx.in, r.opt.binary);
  std::string key;
  for (uint64_t i = 0; i < r.consumed; ++i) {
    if (!reader.Next(&key)) {
      return reader.status().ok()
                 ? Status::InvalidArgument(
                       "the input has fewer keys than the saved state read")
                 : reader.status();
    }
  }
  const bool sample = r.files.size() == 1 && r.files[0] == "-";
  std::vector<uint64_t> hashes;
  for (bool more = true; more;) {
    if (stop()) return Status::Aborted("interrupted");
    hashes.clear();
    while (hashes.size() < kKeyBatch && (more = reader.Next(&key))) {
      hashes.push_back(r.built->Hash(key));
    }
    SF_RETURN_IF_ERROR(reader.status());
    if (hashes.empty()) break;
    SF_RETURN_IF_ERROR(add(hashes));
    if (sample) {
      for (uint64_t h : hashes) {
        if (r.stdin_sample.size() < 1'000'000) r.stdin_sample.push_back(h);
      }
    }
    r.consumed += hashes.size();
    this_run += hashes.size();
    r.units = reader.bytes();
    if (progress) progress->Update(r.consumed, r.units);
  }
  return Status::OK();
}

// Checks the source's keys are in the target; *checked / *missing.
Status Verify(Run& r, uint64_t* checked, uint64_t* missing) {
  ShardedFilter& t = *r.built;
  const uint64_t step =
      r.opt.verify_sample == 0 || r.consumed <= r.opt.verify_sample
          ? 1
          : r.consumed / r.opt.verify_sample;
  uint64_t i = 0;
  auto check = [&](uint64_t h) {
    if (i++ % step != 0) return;
    ++*checked;
    *missing += !t.MayContainHash(h);
  };
  if (r.kind == KeySource::kHashes) {
    return r.db->ScanRetainedHashes(
        r.name, std::nullopt,
        [&](std::span<const std::pair<uint64_t, int64_t>> batch) {
          for (const auto& p : batch) check(p.first);
          return Status::OK();
        });
  }
  if (r.kind == KeySource::kFold) {
    // Every bit of every source block is set in its folded block: then every
    // key of the source is in the target. Checked whole, not sampled.
    for (uint32_t s = 0; s < t.shard_count(); ++s) {
      const auto* from =
          dynamic_cast<const BloomFilter*>(&r.src->shard_filter(s));
      const auto* to = dynamic_cast<const BloomFilter*>(&t.shard_filter(s));
      if (from == nullptr || to == nullptr) {
        return Status::InvalidArgument("fold verification: not Bloom shards");
      }
      const uint64_t lost = to->MissingFoldedBits(*from);
      *checked += from->Stats().items;
      if (lost != 0) *missing += lost == UINT64_MAX ? 1 : lost;
    }
    return Status::OK();
  }
  if (!r.stdin_sample.empty() || (r.files.size() == 1 && r.files[0] == "-")) {
    for (uint64_t h : r.stdin_sample) check(h);
    return Status::OK();
  }
  KeyReader reader(r.files, r.ctx.in, r.opt.binary);
  std::string key;
  while (reader.Next(&key)) check(t.Hash(key));
  return reader.status();
}

int Finish(Run& r, int code) { return CloseStore(*r.db, r.ctx.err, code); }

}  // namespace

int RunMigrate(CommandContext& ctx) {
  Run r(ctx, ctx.args.positional[0]);
  r.files.assign(ctx.args.positional.begin() + 1, ctx.args.positional.end());
  std::string e = ParseOptions(ctx.args, &r.opt);
  if (!e.empty()) return UsageError(ctx.err, e + " (see migrate --help)");
  const bool in_place = r.opt.to_db.empty() && r.opt.to_name.empty();
  auto opened = OpenStore(ctx, r.opt.to_db.empty() ? OpenMode::kWriteExisting
                                                   : OpenMode::kReadOnly);
  if (!opened.ok()) return ReportError(ctx.err, opened.status());
  std::unique_ptr<Database> db = std::move(*opened);
  r.db = db.get();
  auto f = db->Get(r.name);
  if (!f.ok()) return Finish(r, ReportError(ctx.err, f.status()));
  r.src = *f;
  r.target = r.opt.fold ? FoldedSpec(r.src->spec(), r.opt.fold) : r.src->spec();
  r.target.retain_hashes = false;
  e = SpecFromFlags(ctx.args, &r.target, false);
  if (e.empty()) e = ChooseSource(r);
  if (!e.empty()) return Finish(r, UsageError(ctx.err, "migrate: " + e));

  // Resume a saved state, or start afresh.
  const std::string to_name = r.opt.to_name.empty() ? r.name : r.opt.to_name;
  const std::string to = r.opt.to_db + '\0' + to_name;
  const std::string state_path =
      StatePath(r.opt.to_db.empty() ? ctx.db_path : r.opt.to_db, r.name, to);
  const uint64_t fingerprint =
      Fingerprint(r.name, to, r.kind, r.target, *r.src, r.files);
  std::error_code ec;
  if (r.opt.restart) std::filesystem::remove(state_path, ec);
  if (std::filesystem::exists(state_path, ec)) {
    auto bytes = ReadWholeFile(state_path, ctx.in);
    Result<MigrateState> st = bytes.ok() ? DecodeMigrateState(*bytes)
                                         : Result<MigrateState>(bytes.status());
    if (!st.ok() || st->fingerprint != fingerprint) {
      std::string why = !st.ok() ? st.status().ToString()
                                 : "it is for another request (the arguments "
                                   "or the source changed since)";
      return Finish(
          r, ReportError(ctx.err, Status::Aborted(
                                      "migrate: cannot resume from " +
                                      Quoted(state_path) + ": " + why +
                                      "; rerun with --restart to discard it")));
    }
    auto loaded = LoadExportedFilter(st->target_export);
    if (!loaded.ok()) return Finish(r, ReportError(ctx.err, loaded.status()));
    r.built = std::move(*loaded);
    r.consumed = st->consumed;
    r.last_hash = st->last_hash;
    r.have_last_hash = r.kind == KeySource::kHashes && r.consumed > 0;
    if (!r.opt.quiet) {
      ctx.err << "migrate: resuming after " << r.consumed << " keys\n";
    }
  } else if (r.kind == KeySource::kFold) {
    auto folded = db->FoldedCopy(r.name, r.opt.fold);
    if (!folded.ok()) return Finish(r, ReportError(ctx.err, folded.status()));
    r.built = std::move(*folded);
    r.consumed = r.src->Stats().total.items;
  } else {
    FilterSpec s = r.target;
    s.retain_hashes = false;  // ReplaceFilter keeps them (standalone: none)
    auto created = ShardedFilter::Create(s);
    if (!created.ok()) {
      return Finish(r, ReportError(ctx.err, created.status()));
    }
    r.built = std::move(*created);
  }

  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t start = r.consumed;
  if (r.kind != KeySource::kFold) {
    ProgressOptions po;
    po.label = "migrate " + EscapeBytes(r.name);
    po.terminal = IsTerminal(ctx.err);
    po.every_items = r.opt.every;
    if (r.kind == KeySource::kHashes) {
      po.total_units = r.src->Stats().total.items;
    } else {
      po.total_units = KeyReader(r.files, ctx.in, false).TotalBytes();
    }
    Progress progress(ctx.err, po);
    InterruptGuard interrupt;
    Status s = Fill(r, r.opt.quiet ? nullptr : &progress);
    const bool stopped = s.code() == StatusCode::kAborted;
    if (!r.opt.quiet) {
      progress.Finish(r.consumed, r.units, stopped ? "interrupted" : "");
    }
    if (stopped) {
      MigrateState st{fingerprint, r.consumed, r.last_hash,
                      ExportShardedFilter(*r.built)};
      Status w = WriteFileAtomically(state_path, EncodeMigrateState(st));
      if (!w.ok()) return Finish(r, ReportError(ctx.err, w));
      ctx.err << "shardfilter: interrupted after " << r.consumed
              << " keys; the partial target is saved in " << Quoted(state_path)
              << ": run the same command again to resume\n";
      return Finish(r, kExitInterrupted);
    }
    if (!s.ok()) return Finish(r, ReportError(ctx.err, s));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();

  uint64_t checked = 0, missing = 0;
  Status v = Verify(r, &checked, &missing);
  if (!v.ok()) return Finish(r, ReportError(ctx.err, v));
  uint64_t positives = 0;
  uint64_t state = 0x70726f6265733231ULL;
  for (uint64_t i = 0; i < r.opt.probes; ++i) {
    positives += r.built->MayContainHash(SplitMix64(&state));
  }
  const double fpr =
      r.opt.probes ? static_cast<double>(positives) / r.opt.probes : 0;
  const FilterStats ts = r.built->Stats().total;
  ctx.out << "source " << Describe(r.src->spec()) << "\n"
          << "target " << Describe(r.target) << "\n"
          << "from " << KeySourceName(r.kind) << "\n"
          << "keys " << r.consumed << "\n"
          << "seconds " << seconds << "\n"
          << "keys_per_second "
          << (seconds > 0
                  ? static_cast<uint64_t>((r.consumed - start) / seconds)
                  : 0)
          << "\n"
          << "verified " << checked << "\n"
          << "missing " << missing << "\n"
          << "measured_fpr " << fpr << "\n"
          << "target_fpr " << r.target.fpp << "\n"
          << "estimated_fpr " << ts.estimated_fpr << "\n"
          << "bytes " << ts.bytes << "\n";
  if (missing != 0) {
    ctx.err << "shardfilter: verification failed: " << missing << " of "
            << checked << " source keys are missing from the target; nothing "
            << "was changed\n";
    std::filesystem::remove(state_path, ec);
    return Finish(r, kExitFailed);
  }
  Status installed;
  if (in_place) {
    installed =
        db->ReplaceFilter(r.name, std::move(r.built), r.target.retain_hashes);
  } else if (r.opt.to_db.empty()) {
    installed = ImportFilter(*db, to_name, ExportShardedFilter(*r.built),
                             r.target.durability);
  } else {
    CommandContext other{ctx.args, r.opt.to_db, ctx.in, ctx.out, ctx.err};
    auto tdb = OpenStore(other, OpenMode::kWriteOrCreate);
    installed =
        tdb.ok() ? ImportFilter(**tdb, to_name, ExportShardedFilter(*r.built),
                                r.target.durability)
                 : tdb.status();
    if (tdb.ok()) {
      Status c = (*tdb)->Close();
      if (installed.ok()) installed = c;
    }
  }
  if (!installed.ok()) return Finish(r, ReportError(ctx.err, installed));
  std::filesystem::remove(state_path, ec);
  if (!r.opt.quiet) {
    ctx.err << "migrate: " << EscapeBytes(r.name) << " -> "
            << EscapeBytes(to_name)
            << (r.opt.to_db.empty() ? "" : " in " + EscapeBytes(r.opt.to_db))
            << ": " << Describe(r.target) << "; " << checked
            << " keys verified, measured FPR " << fpr << "\n";
  }
  return Finish(r, kExitOk);
}

}  // namespace shardfilter::tools
