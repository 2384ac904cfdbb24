// The shardfilter command-line tool: one program, subcommands over a store
// directory (a RocksDB directory managed by engine/database.h).
//
//   shardfilter [--db DIR] COMMAND [ARGS...] [FLAGS...]
//
// `shardfilter --help` and `shardfilter COMMAND --help` print the full
// usage. RunCli is the whole program minus main(), so tests drive it in
// process with string streams (tests/cli_test.cc).
//
// Output contract: stdout carries only machine-readable results (the 1/0
// lines of `exists`, the `ack N` lines of `add --ack`, the names of `list`,
// the tables and JSON of `info`, ...); errors go to stderr as
// "shardfilter: <message>", and so do the summaries of add/remove.
//
// Thread safety: RunCli may run concurrently with itself only on different
// store directories (a store is opened by one writer at a time).
#ifndef SHARDFILTER_TOOLS_CLI_CLI_H_
#define SHARDFILTER_TOOLS_CLI_CLI_H_

#include <iosfwd>

namespace shardfilter::tools {

// Exit codes, for scripts. Kept few on purpose.
enum ExitCode : int {
  // Everything asked was done.
  kExitOk = 0,
  // The command ran, but some items failed (add: a cuckoo filter was Full;
  // remove: a key was NotFound) or `verify` found problems.
  kExitFailed = 1,
  // Bad command line: unknown command or flag, missing or extra argument,
  // malformed or out-of-range value, or parameters the engine rejects as
  // invalid (InvalidArgument). Nothing was changed.
  kExitUsage = 2,
  // The store or filter said no: unknown filter (NotFound), AlreadyExists,
  // WrongType, NotSupported (e.g. remove on a Bloom filter, or a store
  // format from the future), Corruption, IOError, Busy (store locked),
  // ResourceExhausted (over the memory budget: --memory-budget), TooLarge
  // (over a filter's own memory limit).
  kExitError = 3,
  // Interrupted by SIGINT (`import`): the work done so far is kept and the
  // message says how to resume. 128 + SIGINT, as shells report it.
  kExitInterrupted = 130,
};

// Runs the program: argv[0] is the program name (ignored). Reads keys from
// `in` when a key command gets none as arguments. Never throws.
int RunCli(int argc, const char* const* argv, std::istream& in,
           std::ostream& out, std::ostream& err);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_CLI_H_
