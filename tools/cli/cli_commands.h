// Internals of the shardfilter CLI (tools/cli/cli.h): what each subcommand gets
// and the helpers they share. Not a public header.
#ifndef SHARDFILTER_TOOLS_CLI_CLI_COMMANDS_H_
#define SHARDFILTER_TOOLS_CLI_CLI_COMMANDS_H_

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shardfilter/engine/database.h"
#include "shardfilter/filters/status.h"
#include "tools/cli/cli_args.h"

namespace shardfilter::tools {

// Default store directory when --db is not given.
inline constexpr std::string_view kDefaultDbPath = "./data";
// Keys handed to one batch call (AddKeys / RemoveKeys / MayContainKeys).
inline constexpr size_t kKeyBatch = 4096;

// Everything a subcommand runs with. Positional arguments and flags were
// checked against the command's table (count, known flags) by RunCli.
struct CommandContext {
  const ParsedArgs& args;
  std::string db_path;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
};

// Prints "shardfilter: <message>" on err and returns the exit code of the
// status (InvalidArgument -> kExitUsage, any other error -> kExitError).
int ReportError(std::ostream& err, const Status& status);
// Prints "shardfilter: <message>" and returns kExitUsage.
int UsageError(std::ostream& err, std::string_view message);

enum class OpenMode {
  kReadOnly,       // read commands: nothing is ever written
  kWriteExisting,  // the store must already exist
  kWriteOrCreate,  // `create`: makes the directory when missing
  kVerify,         // read-only; journal damage is Verify's problem to list
};

// Opens the store at ctx.db_path. Errors carry context ("opening store
// 'DIR'") and a hint when the store is locked or missing.
Result<std::unique_ptr<Database>> OpenStore(
    const CommandContext& ctx, OpenMode mode,
    std::optional<Durability> durability_override = std::nullopt);

// Closes the store; on failure reports it and returns kExitError, else
// returns `code` unchanged.
int CloseStore(Database& db, std::ostream& err, int code);

// Applies create's spec flags (--type, --capacity, --fpp, --shards, --seed,
// --durability, --k, --layout, --fingerprint-bits, --bucket-size,
// --nonscaling, --expansion, --retain-hashes) to *spec. With require_core,
// --type, --capacity and --fpp must be given (create); otherwise absent
// flags keep *spec's values (migrate), except that a new --type drops the
// old type's own parameters. Returns a usage error message or "".
std::string SpecFromFlags(const ParsedArgs& args, FilterSpec* spec,
                          bool require_core);
// "12.3 MiB".
std::string Mib(uint64_t bytes);

// The subcommands. Each returns an ExitCode (tools/cli/cli.h).
int RunCreate(CommandContext& ctx);
int RunAdd(CommandContext& ctx);
int RunRemove(CommandContext& ctx);
int RunExists(CommandContext& ctx);
int RunInfo(CommandContext& ctx);
int RunList(CommandContext& ctx);
int RunDrop(CommandContext& ctx);
int RunUnion(CommandContext& ctx);
int RunCheckpoint(CommandContext& ctx);
int RunCompact(CommandContext& ctx);
int RunVerify(CommandContext& ctx);
int RunDemoCommand(CommandContext& ctx);
// tools/cli/cli_dedup.cc; its usage text lives there too.
int RunDedup(CommandContext& ctx);
extern const std::string_view kDedupUsage;
// tools/cli/cli_transfer.cc, cli_import.cc, cli_experiment.cc (usage there
// too).
int RunExport(CommandContext& ctx);
int RunImportFilter(CommandContext& ctx);
int RunImport(CommandContext& ctx);
int RunExperiment(CommandContext& ctx);
int RunMigrate(CommandContext& ctx);
int RunCluster(CommandContext& ctx);
extern const std::string_view kMigrateUsage;
extern const std::string_view kExportUsage;
extern const std::string_view kImportFilterUsage;
extern const std::string_view kImportUsage;
extern const std::string_view kExperimentUsage;

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_CLI_COMMANDS_H_
