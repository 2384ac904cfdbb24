// The shardfilter CLI's tables: every flag, every command with its
// argument counts, accepted flags and usage text, and the main usage text.
// tools/cli/cli.cc dispatches over them; the commands are in cli_*.cc.
#ifndef SHARDFILTER_TOOLS_CLI_CLI_COMMAND_TABLE_H_
#define SHARDFILTER_TOOLS_CLI_CLI_COMMAND_TABLE_H_

#include <cstddef>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"

namespace shardfilter::tools {

inline constexpr size_t kMany = std::numeric_limits<size_t>::max();

struct Command {
  std::string_view name;
  int (*run)(CommandContext&);
  size_t min_args;
  size_t max_args;
  std::vector<std::string_view> flags;  // beyond the global flags
  std::string_view usage;               // full text of COMMAND --help
};

// Every flag of every command; each command lists which it accepts.
std::span<const FlagDef> AllFlags();
// Accepted by every command.
std::span<const std::string_view> GlobalFlags();
// `shardfilter --help`.
std::string_view MainUsage();
// Every command, in the order `--help` lists them.
const std::vector<Command>& Commands();

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_CLI_COMMAND_TABLE_H_
