// The state `shardfilter migrate` saves when it is interrupted (SIGINT or
// --stop-after), so that the same command resumes where it stopped and ends
// with the same filter as an uninterrupted run.
//
// File layout (integers little-endian):
//   offset  size  field
//   0       4     magic "SFMS"
//   4       2     version (kMigrateStateVersion)
//   6       2     reserved, 0
//   8       8     request fingerprint (XXH3 of the source's identity and
//                 state, the target spec, the key source and the inputs)
//   16      8     keys or hashes consumed so far
//   24      8     last retained hash consumed (hashes source)
//   32      8     length L of the partial target's export (format-export.md)
//   40      L     the export
//   40+L    8     XXH3-64 of bytes [0, 40+L)
// Errors: not this format -> InvalidArgument; a newer version ->
// NotSupported; anything inconsistent -> Corruption. Thread-safe: pure.
#ifndef SHARDFILTER_TOOLS_CLI_MIGRATE_STATE_H_
#define SHARDFILTER_TOOLS_CLI_MIGRATE_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"

namespace shardfilter::tools {

inline constexpr uint16_t kMigrateStateVersion = 1;

struct MigrateState {
  uint64_t fingerprint = 0;
  uint64_t consumed = 0;
  uint64_t last_hash = 0;
  std::string target_export;
};

std::string EncodeMigrateState(const MigrateState& s);
Result<MigrateState> DecodeMigrateState(std::string_view bytes);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_MIGRATE_STATE_H_
