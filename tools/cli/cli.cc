// Dispatch of the shardfilter CLI: parsing against the tables of
// cli_command_table.h and the checks every command shares (known flags,
// argument counts). The commands themselves are in cli_*.cc.
#include "tools/cli/cli.h"

#include <exception>
#include <filesystem>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/memory_budget.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_command_table.h"
#include "tools/cli/cli_commands.h"

#ifndef SHARDFILTER_VERSION
#define SHARDFILTER_VERSION "0.1.0"
#endif

namespace shardfilter::tools {
namespace {

const Command* FindCommand(std::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool Allowed(const Command& c, std::string_view flag) {
  for (std::string_view g : GlobalFlags()) {
    if (g == flag) return true;
  }
  for (std::string_view f : c.flags) {
    if (f == flag) return true;
  }
  return false;
}

std::string SeeHelp(std::string_view command) {
  if (command.empty()) return " (see shardfilter --help)";
  return " (see shardfilter " + std::string(command) + " --help)";
}

int Run(int argc, const char* const* argv, std::istream& in, std::ostream& out,
        std::ostream& err) {
  std::vector<std::string_view> words;
  for (int i = 1; i < argc; ++i) words.emplace_back(argv[i]);
  Result<ParsedArgs> parsed = ParseArgs(words, AllFlags());
  if (!parsed.ok()) {
    // Name the command in the hint when it can be found.
    std::string_view cmd;
    for (std::string_view w : words) {
      if (FindCommand(w) != nullptr) {
        cmd = w;
        break;
      }
    }
    return UsageError(err, parsed.status().message() + SeeHelp(cmd));
  }
  const ParsedArgs& args = *parsed;
  const Command* cmd = nullptr;
  if (!args.command.empty()) {
    cmd = FindCommand(args.command);
    if (cmd == nullptr) {
      std::vector<std::string_view> names;
      for (const Command& c : Commands()) names.push_back(c.name);
      const std::string_view near = ClosestWord(args.command, names);
      return UsageError(err, "unknown command " + Quoted(args.command) +
                                 (near.empty() ? std::string()
                                               : "; did you mean " +
                                                     std::string(near) + "?") +
                                 SeeHelp(""));
    }
  }
  if (args.Has("help")) {
    out << (cmd != nullptr ? cmd->usage : MainUsage());
    return kExitOk;
  }
  if (args.Has("version")) {
    out << "shardfilter " << SHARDFILTER_VERSION << "\n";
    return kExitOk;
  }
  if (cmd == nullptr) {
    return UsageError(err, "no command given" + SeeHelp(""));
  }
  for (const auto& [flag, value] : args.flags) {
    if (!Allowed(*cmd, flag)) {
      return UsageError(err, "flag --" + flag + " does not apply to " +
                                 Quoted(cmd->name) + SeeHelp(cmd->name));
    }
  }
  size_t n = args.positional.size();
  if (n < cmd->min_args) {
    return UsageError(err, Quoted(cmd->name) +
                               (n == 0 && cmd->name != "experiment"
                                    ? " needs a filter NAME"
                                    : " is missing an argument") +
                               SeeHelp(cmd->name));
  }
  if (n > cmd->max_args) {
    return UsageError(
        err, "unexpected argument " + Quoted(args.positional[cmd->max_args]) +
                 " for " + Quoted(cmd->name) + SeeHelp(cmd->name));
  }
  std::string db_path(kDefaultDbPath);
  if (const std::string* db = args.Get("db")) {
    if (db->empty())
      return UsageError(err, "--db needs a directory" + SeeHelp(""));
    // A file given as the store: say so, rather than RocksDB's "Not a
    // directory" from deep inside an open.
    if (std::error_code ec; std::filesystem::exists(*db, ec) &&
                            !std::filesystem::is_directory(*db, ec)) {
      return UsageError(
          err, "--db " + Quoted(*db) + " is not a directory" + SeeHelp(""));
    }
    db_path = *db;
  }
  // Every filter of this run is charged to the process budget (a run in
  // process, as the tests do, starts from the default again).
  uint64_t budget = MemoryBudget::DefaultLimit();
  if (const std::string* b = args.Get("memory-budget")) {
    auto r = ParseByteSize(*b);
    if (!r.ok()) {
      return UsageError(
          err, "--memory-budget: " + r.status().message() + SeeHelp(""));
    }
    budget = *r;
  }
  MemoryBudget::Default()->SetLimit(budget);
  CommandContext ctx{args, db_path, in, out, err};
  int code = cmd->run(ctx);
  out.flush();
  if (!out) {  // e.g. stdout on a full disk: the results were not delivered
    err << "shardfilter: IOError: writing to stdout failed\n";
    return kExitError;
  }
  return code;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::istream& in,
           std::ostream& out, std::ostream& err) {
  // Nothing below throws by design; this catches std::bad_alloc and the
  // like so that the caller always gets an exit code.
  try {
    return Run(argc, argv, in, out, err);
  } catch (const std::exception& e) {
    err << "shardfilter: internal error: " << e.what() << "\n";
    return kExitError;
  } catch (...) {
    err << "shardfilter: internal error\n";
    return kExitError;
  }
}

}  // namespace shardfilter::tools
