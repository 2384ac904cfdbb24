// `shardfilter import NAME [FILE...]`: bulk-loads keys from files or stdin
// through the batch API, with a progress report (tools/cli/progress.h), and
// stops cleanly on SIGINT after the current batch so that `--skip N`
// resumes.
#include <sys/stat.h>

#include <fstream>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/key_reader.h"
#include "tools/cli/progress.h"

namespace shardfilter::tools {

const std::string_view kImportUsage =
    R"(Usage: shardfilter import NAME [FILE...] [--binary] [--skip N]
                          [--durability none|journal|sync]
                          [--progress-every N] [--quiet]

Adds every key of the FILEs (or of stdin when none, or for "-") to the
existing filter NAME, in batches of 4096, like `add`: one key per line (a
trailing "\r" is removed, an empty line is the empty key), or with
--binary records of a 4-byte little-endian length and that many bytes.
Progress goes to stderr: on a terminal one line redrawn up to 10 times a
second (percentage and ETA when the input size is known: regular files);
otherwise a plain line every second.

Ctrl-C (SIGINT) stops after the current batch: every key before it is
added (durable per the durability), the count is printed, and the exit
code is 130. Re-run the same command with --skip COUNT to resume.
Keys that fail (a cuckoo filter is Full) are reported and counted; the
exit code is then 1.

Flags:
  --binary             length-prefixed keys instead of lines.
  --skip N             skip the first N keys of the input (resume).
  --durability D       for this session: none (fastest; one checkpoint at
                       the end), journal or sync; see `create --help`.
  --progress-every N   also print a progress line every N keys (plain mode).
  --quiet              no progress and no summary.

Example:
  shardfilter import users keys-*.txt --durability none
)";

int RunImport(CommandContext& ctx) {
  const std::string& name = ctx.args.positional[0];
  std::optional<Durability> session;
  if (const std::string* d = ctx.args.Get("durability")) {
    auto r = ParseDurability(*d);
    if (!r.ok()) {
      return UsageError(ctx.err, "--durability: '" + EscapeBytes(*d) +
                                     "' is not none, journal or sync");
    }
    session = *r;
  }
  uint64_t skip = 0, every = 0;
  if (const std::string* v = ctx.args.Get("skip")) {
    auto r = ParseCount(*v);
    if (!r.ok()) return UsageError(ctx.err, "--skip: " + r.status().message());
    skip = *r;
  }
  if (const std::string* v = ctx.args.Get("progress-every")) {
    auto r = ParseCountInRange(*v, 1, UINT64_MAX);
    if (!r.ok()) {
      return UsageError(ctx.err, "--progress-every: " + r.status().message());
    }
    every = *r;
  }
  const bool quiet = ctx.args.Has("quiet");
  auto db = OpenStore(ctx, OpenMode::kWriteExisting, session);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  auto f = (*db)->Get(name);
  if (!f.ok())
    return CloseStore(**db, ctx.err, ReportError(ctx.err, f.status()));
  KeyReader reader({ctx.args.positional.begin() + 1, ctx.args.positional.end()},
                   ctx.in, ctx.args.Has("binary"));
  ProgressOptions po;
  po.label = "import " + EscapeBytes(name);
  po.terminal = IsTerminal(ctx.err);
  po.total_units = reader.TotalBytes();
  po.every_items = every;
  Progress progress(ctx.err, po);
  InterruptGuard interrupt;

  std::vector<std::string> batch(kKeyBatch);
  std::vector<std::string_view> keys;
  std::vector<Status> per_item;
  std::vector<AddOutcome> outcomes;
  // Input keys consumed = skipped + processed (added, present or failed).
  uint64_t skipped = 0, processed = 0, failed = 0, present = 0;
  Status fatal;
  bool interrupted = false, more = true;
  while (more && fatal.ok()) {
    if (InterruptGuard::Interrupted()) {
      interrupted = true;
      break;
    }
    size_t n = 0;
    while (n < kKeyBatch && (more = reader.Next(&batch[n]))) {
      if (skipped < skip) {
        ++skipped;
      } else {
        ++n;
      }
    }
    if (n == 0) break;
    keys.assign(batch.begin(), batch.begin() + n);
    Status s = (*f)->AddKeys(keys, &per_item, &outcomes);
    uint64_t batch_present = 0;
    for (size_t i = 0; i < per_item.size(); ++i) {
      if (per_item[i].ok() && outcomes[i] == AddOutcome::kAlreadyPresent) {
        ++batch_present;
      }
    }
    for (size_t i = 0; i < per_item.size() && !s.ok(); ++i) {
      if (per_item[i].ok()) continue;
      if (per_item[i].code() != StatusCode::kFull) {
        fatal = per_item[i];
        break;
      }
      if (++failed <= 10) {
        ctx.err << "shardfilter: key #" << skipped + processed + i + 1 << ": "
                << per_item[i].ToString() << "\n";
      }
    }
    if (!fatal.ok()) break;  // this batch is not counted as loaded
    processed += n;
    present += batch_present;
    if (!quiet) progress.Update(processed, reader.bytes());
  }
  if (fatal.ok()) fatal = reader.status();
  if (!quiet) {
    progress.Finish(processed, reader.bytes(),
                    interrupted ? "interrupted" : "");
  }
  const uint64_t done = skipped + processed;
  if (!fatal.ok()) {
    ctx.err << "shardfilter: import stopped after " << done
            << " keys; resume with --skip " << done << "\n";
    return CloseStore(**db, ctx.err, ReportError(ctx.err, fatal));
  }
  if (interrupted) {
    ctx.err << "shardfilter: interrupted: the first " << done
            << " keys of the input are loaded; resume with --skip " << done
            << "\n";
    return CloseStore(**db, ctx.err, kExitInterrupted);
  }
  if (!quiet || failed > 0) {
    ctx.err << "import: " << done << " keys read, " << skipped << " skipped, "
            << processed - failed - present << " added, " << failed << " failed"
            << (failed > 0 ? " (Full)" : "") << ", " << present
            << " already present\n";
  }
  return CloseStore(**db, ctx.err, failed > 0 ? kExitFailed : kExitOk);
}

}  // namespace shardfilter::tools
