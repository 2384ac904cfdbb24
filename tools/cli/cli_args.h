// Command-line parsing for the shardfilter CLI: flags, numbers, escaping.
//
// Pure functions with no I/O, so that every edge case is unit-testable
// (tests/cli_args_test.cc). Errors are InvalidArgument Statuses whose
// message is meant to follow "shardfilter: " on stderr.
//
// Thread safety: everything here is a pure function or a plain value.
#ifndef SHARDFILTER_TOOLS_CLI_CLI_ARGS_H_
#define SHARDFILTER_TOOLS_CLI_CLI_ARGS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/filters/status.h"

namespace shardfilter::tools {

// --- Numbers -------------------------------------------------------------

// A non-negative whole number, exactly (no floating point on the way):
//   digits                      "10000000", "0"
//   decimal with exponent       "1e6", "2.5E6", "1.5e+3"
//   suffix k/K m/M g/G t/T      "10k", "1M", "2.5G" (powers of 1000: these
//                               count items, not bytes)
//   '_' between digits          "10_000_000"
// Rejected: empty, a sign ("-5", "+5"), trailing junk ("12abc", "1e6 "),
// a value that is not whole ("1.5", "1e-1"), more than UINT64_MAX.
Result<uint64_t> ParseCount(std::string_view text);

// As ParseCount, and InvalidArgument unless min <= value <= max.
Result<uint64_t> ParseCountInRange(std::string_view text, uint64_t min,
                                   uint64_t max);

// A 64-bit seed: decimal digits, or hexadecimal with a 0x/0X prefix.
Result<uint64_t> ParseSeed(std::string_view text);

// A probability strictly between 0 and 1, e.g. "0.01", "1e-3", "1%".
// Rejects nan, inf, 0, 1, negatives, junk, and values that underflow.
Result<double> ParseProbability(std::string_view text);

// --- Flags ---------------------------------------------------------------

// One flag the parser knows: "--name VALUE" / "--name=VALUE" when it takes
// a value, "--name" alone otherwise.
struct FlagDef {
  std::string_view name;  // without the leading "--"
  bool takes_value = false;
};

// The command line split into its parts, in order.
struct ParsedArgs {
  std::string command;                  // first non-flag word ("" if none)
  std::vector<std::string> positional;  // later non-flag words
  // Flags in command-line order, without "--"; value "" for switches.
  std::vector<std::pair<std::string, std::string>> flags;

  bool Has(std::string_view name) const;
  // The value of a flag, or nullptr when it was not given.
  const std::string* Get(std::string_view name) const;
};

// Splits args (argv without the program name). Flags may come anywhere,
// before or after the command word. "--" ends flag parsing: every later
// word is positional (how to pass a key that starts with '-'). A lone "-"
// is positional. "-h" means "--help". A value flag takes the next word
// whatever it looks like ("--capacity -5" then fails in ParseCount).
// InvalidArgument for unknown flags, a missing value, a value given to a
// switch, or a flag given twice.
Result<ParsedArgs> ParseArgs(std::span<const std::string_view> args,
                             std::span<const FlagDef> known);

// The candidate closest to `word` by edit distance (insertions, deletions,
// substitutions and swaps of adjacent characters), if that distance is at
// most 2 and less than half of word's length; otherwise empty. For "did you
// mean ...?" hints: ClosestWord("crate", {"create", ...}) is "create".
std::string_view ClosestWord(std::string_view word,
                             std::span<const std::string_view> candidates);

// --- Output --------------------------------------------------------------

// Bytes made printable on one line: printable ASCII (0x20..0x7e) other than
// '\' as is; '\' as "\\"; \n \r \t as "\n" "\r" "\t"; every other byte as
// "\xHH" (lower-case hex). Names made only of printable ASCII without '\'
// come out unchanged.
std::string EscapeBytes(std::string_view bytes);

// EscapeBytes(bytes) between single quotes, for messages.
std::string Quoted(std::string_view bytes);

// A JSON string literal (with quotes) of EscapeBytes(bytes), so the result
// is always valid JSON and ASCII.
std::string JsonString(std::string_view bytes);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_CLI_ARGS_H_
