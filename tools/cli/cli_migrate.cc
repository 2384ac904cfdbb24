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

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/migration.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/hash.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/file_io.h"
#include "tools/cli/key_reader.h"
#include "tools/cli/migrate_state.h"
#include "tools/cli/migrate_steps.h"
#include "tools/cli/progress.h"

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

int Finish(migrate::Run& r, int code) {
  return CloseStore(*r.db, r.ctx.err, code);
}

}  // namespace

int RunMigrate(CommandContext& ctx) {
  using namespace migrate;  // NOLINT: the steps of this command
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
  // Before anything is derived from the source: ReplaceFilter refuses the
  // target if the source took a write since.
  auto version = db->Version(r.name);
  if (!version.ok()) return Finish(r, ReportError(ctx.err, version.status()));
  r.target = r.opt.fold ? FoldedSpec(r.src->spec(), r.opt.fold) : r.src->spec();
  r.target.retain_hashes = false;
  e = SpecFromFlags(ctx.args, &r.target, false);
  if (e.empty()) e = ChooseSource(r);
  if (!e.empty()) return Finish(r, UsageError(ctx.err, "migrate: " + e));

  // A target store is opened (created when missing) before anything is
  // written there, so that its state file lands in a store: the store
  // check refuses a non-empty directory that is not one.
  if (!r.opt.to_db.empty()) {
    CommandContext other{ctx.args, r.opt.to_db, ctx.in, ctx.out, ctx.err};
    auto tdb = OpenStore(other, OpenMode::kWriteOrCreate);
    Status s = tdb.ok() ? (*tdb)->Close() : tdb.status();
    if (!s.ok()) return Finish(r, ReportError(ctx.err, s));
  }
  // Resume a saved state, or start afresh. The clock includes building the
  // target (a fold is all build).
  const auto t0 = std::chrono::steady_clock::now();
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

  const uint64_t start = r.kind == KeySource::kFold ? 0 : r.consumed;
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
    installed = db->ReplaceFilter(r.name, std::move(r.built),
                                  r.target.retain_hashes, *version);
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
