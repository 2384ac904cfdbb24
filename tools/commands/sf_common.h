// What the SF.* command files share (tools/commands/sf_commands.cc defines
// them): the SPEC parser, the error replies for engine statuses and the
// name/value pairs of INFO-like maps.
#ifndef SHARDFILTER_TOOLS_COMMANDS_SF_COMMON_H_
#define SHARDFILTER_TOOLS_COMMANDS_SF_COMMON_H_

#include <cstdint>
#include <string_view>

#include "tools/commands/keyspace.h"
#include "tools/commands/session.h"

namespace shardfilter::commands {

// One error reply for an engine status, in the style of RedisBloom's:
// Full "ERR filter is full", ResourceExhausted Redis's "OOM command not
// allowed ..." where the host's budget is its maxmemory
// (Keyspace::BudgetIsMaxmemory), TooLarge and other budgets' refusals "ERR
// Insufficient memory: ...", NotFound "ERR not found", AlreadyExists "ERR
// item exists", WrongType WRONGTYPE, otherwise "ERR <message>".
void ReplyStatus(CommandContext& ctx, const Status& s);

// Parses `type capacity [options...]` (docs/server.md SPEC) from
// args[at...] into *p. On a bad argument writes the error and returns
// false. REQUIRES: at + 1 < args.size().
bool ParseSpec(CommandContext& ctx, Args args, size_t at, CreateParams* p);

// One name/value pair of a map reply (RESP2: two array elements).
void Pair(CommandContext& ctx, std::string_view name, int64_t v);
void Pair(CommandContext& ctx, std::string_view name, double v);
void Pair(CommandContext& ctx, std::string_view name, std::string_view v);

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_SF_COMMON_H_
