// The shardfilter program: see tools/cli/cli.h, or run `shardfilter --help`.
// Exit codes: 0 success, 1 some items failed / verify found problems,
// 2 usage error, 3 store or filter error (tools/cli/cli.h: ExitCode).
#include <iostream>

#include "tools/cli/cli.h"

int main(int argc, char** argv) {
  // Keys may stream by the million through stdin/stdout.
  std::ios::sync_with_stdio(false);
  std::cin.tie(nullptr);
  return shardfilter::tools::RunCli(argc, argv, std::cin, std::cout, std::cerr);
}
