// `shardfilter export NAME FILE` and `shardfilter import-filter FILE NAME`:
// one filter to and from a portable file (engine/export.h,
// docs/format-export.md).
#include <ostream>
#include <string>

#include "shardfilter/engine/export.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/file_io.h"

namespace shardfilter::tools {

const std::string_view kExportUsage =
    R"(Usage: shardfilter export NAME FILE

Writes filter NAME to FILE as one portable, checksummed file (every shard's
exact state plus its parameters; docs/format-export.md), ready for
`shardfilter import-filter` into another store. FILE is written as
FILE.tmp, fsynced, then renamed: it is whole or absent. FILE "-" writes to
stdout. Opens the store read-only (the journal is replayed in memory, so
the export holds every acknowledged write). A summary goes to stderr.

Example:
  shardfilter --db /var/lib/sf export users /backup/users.sfex
)";

const std::string_view kImportFilterUsage =
    R"(Usage: shardfilter import-filter FILE NAME [--durability none|journal|sync]

Creates filter NAME from an export file (FILE "-" reads stdin), bit for bit
the exported filter, in one durable commit. The store directory is created
when missing. Exit code 3, with nothing created, when: NAME exists
(AlreadyExists); FILE is not an export (InvalidArgument: foreign file); it is
truncated, damaged or inconsistent (Corruption); or it was written by a
newer format version (NotSupported).

Flags:
  --durability D   the new filter's durability (default: the exported one).

Example:
  shardfilter --db /srv/sf import-filter /backup/users.sfex users
)";

int RunExport(CommandContext& ctx) {
  const std::string& name = ctx.args.positional[0];
  const std::string& path = ctx.args.positional[1];
  auto db = OpenStore(ctx, OpenMode::kReadOnly);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Result<std::string> bytes = ExportFilter(**db, name);
  if (!bytes.ok()) {
    return CloseStore(**db, ctx.err, ReportError(ctx.err, bytes.status()));
  }
  Status s;
  if (path == "-") {
    ctx.out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  } else {
    s = WriteFileAtomically(path, *bytes);
  }
  if (!s.ok()) return CloseStore(**db, ctx.err, ReportError(ctx.err, s));
  auto f = (*db)->Get(name);
  ctx.err << "export " << EscapeBytes(name) << ": "
          << (f.ok() ? (*f)->shard_count() : 0) << " shards, " << bytes->size()
          << " bytes -> " << EscapeBytes(path) << "\n";
  return CloseStore(**db, ctx.err, kExitOk);
}

int RunImportFilter(CommandContext& ctx) {
  const std::string& path = ctx.args.positional[0];
  const std::string& name = ctx.args.positional[1];
  std::optional<Durability> durability;
  if (const std::string* d = ctx.args.Get("durability")) {
    auto r = ParseDurability(*d);
    if (!r.ok()) {
      return UsageError(ctx.err, "--durability: '" + EscapeBytes(*d) +
                                     "' is not none, journal or sync");
    }
    durability = *r;
  }
  Result<std::string> bytes = ReadWholeFile(path, ctx.in);
  if (!bytes.ok()) return ReportError(ctx.err, bytes.status());
  // A foreign file is a bad input file, not a bad command line (exit 3),
  // and is refused before the store is opened (or created). After this
  // check the file's other faults are Corruption or NotSupported, so
  // ImportFilter's InvalidArgument is the command line's (the name).
  if (bytes->size() < sizeof kExportMagic ||
      bytes->compare(0, sizeof kExportMagic, kExportMagic,
                     sizeof kExportMagic) != 0) {
    ctx.err << "shardfilter: " << EscapeBytes(path)
            << ": not a shardfilter export (the file does not start with "
               "\"SFEX\")\n";
    return kExitError;
  }
  auto db = OpenStore(ctx, OpenMode::kWriteOrCreate);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Status s = ImportFilter(**db, name, *bytes, durability);
  if (!s.ok()) {
    ctx.err << "shardfilter: " << EscapeBytes(path) << ": " << s.ToString()
            << "\n";
    return CloseStore(**db, ctx.err,
                      s.IsInvalidArgument() ? kExitUsage : kExitError);
  }
  auto f = (*db)->Get(name);
  if (f.ok()) {
    ctx.out << "imported " << EscapeBytes(name) << ": "
            << FilterTypeName((*f)->type()) << ", capacity "
            << (*f)->spec().capacity << ", fpp " << (*f)->spec().fpp << ", "
            << (*f)->shard_count() << " shards, " << (*f)->Stats().total.items
            << " items, durability " << DurabilityName((*f)->durability())
            << "\n";
  }
  return CloseStore(**db, ctx.err, kExitOk);
}

}  // namespace shardfilter::tools
