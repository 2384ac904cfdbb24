// Small helpers of the command layer: argument parsing as Redis parses
// numbers, Redis's glob matching, and the error texts shared by commands.
#ifndef SHARDFILTER_TOOLS_COMMANDS_UTIL_H_
#define SHARDFILTER_TOOLS_COMMANDS_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tools/commands/session.h"

namespace shardfilter::commands {

inline constexpr std::string_view kWrongTypeError =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotFoundError = "ERR not found";
inline constexpr std::string_view kItemExistsError = "ERR item exists";
inline constexpr std::string_view kSyntaxError = "ERR syntax error";
// Redis's deny-oom refusal: the reply to ResourceExhausted (the process's
// memory budget, shardfilter-server's --maxmemory, refused an allocation).
inline constexpr std::string_view kOomError =
    "OOM command not allowed when used memory > 'maxmemory'.";

// A write whose key is dropped (DEL, FLUSHALL, expiry) between its lookup
// and its write finds the handle gone (NotFound) and starts again from the
// lookup, creating the key where the command may: it then runs as if it came
// after the drop. Bounded: after kMaxWriteAttempts such attempts in a row
// the command answers kDroppedDuringWriteError.
inline constexpr int kMaxWriteAttempts = 16;
inline constexpr std::string_view kDroppedDuringWriteError =
    "ERR the key was deleted during the write, 16 times in a row; retry";

bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string ToLower(std::string_view s);

// RedisModule_StringToLongLong / string2ll: strict decimal.
bool ParseLongLong(std::string_view s, int64_t* out);
// RedisModule_StringToDouble: strtod over the whole string, no blanks, no
// NaN.
bool ParseDouble(std::string_view s, double* out);

// Redis's stringmatchlen: * ? [abc] [^a] [a-z] and \ escapes.
bool GlobMatch(std::string_view pattern, std::string_view s,
               bool nocase = false);

// "ERR wrong number of arguments for 'name' command".
void ReplyWrongArity(resp::ReplyWriter& out, std::string_view name);

// "ERR key length must be 1..N bytes (shardfilter-server)" when a command
// would create a key the host cannot hold; false when the key is fine.
bool RefuseKeyName(CommandContext& ctx, std::string_view key);

// How a command reads a failed lookup (Keyspace::Lookup, LookupDedup,
// LookupTiered): absent when NotFound, or InvalidArgument (a name the host
// cannot hold); WrongType is a key of another kind; any other error is a
// key that exists but cannot be read (its load failed: damage, the memory
// budget, I/O), which is never answered as absent.
bool IsAbsent(const Status& s);

// The one reply for a key that exists but cannot be read:
// "ERR key '<key>' cannot be loaded: <reason>".
void ReplyUnreadable(CommandContext& ctx, std::string_view key,
                     const Status& s);

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_UTIL_H_
