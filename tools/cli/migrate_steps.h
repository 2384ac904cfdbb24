// The steps of `shardfilter migrate` (tools/cli/cli_migrate.cc): options, the
// choice of where the keys come from, the resumable fill, and the
// verification pass. Internal to the CLI; one Run is used by one thread.
#ifndef SHARDFILTER_TOOLS_CLI_MIGRATE_STEPS_H_
#define SHARDFILTER_TOOLS_CLI_MIGRATE_STEPS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/progress.h"

namespace shardfilter::tools::migrate {

enum class KeySource { kHashes, kFold, kKeys };
const char* KeySourceName(KeySource k);

// Random 64-bit hashes for the probes (SplitMix64, Steele et al. 2014).
uint64_t SplitMix64(uint64_t* state);

// "cuckoo capacity 1000 fpp 0.01 shards 2 [retain_hashes]".
std::string Describe(const FilterSpec& s);

// Everything that must be equal for a saved state to be resumed: the
// request and the source's state (any op since changes a shard's last
// sequence or checkpoint generation), and the input files' sizes and times.
uint64_t Fingerprint(const std::string& name, const std::string& to,
                     KeySource kind, const FilterSpec& t, ShardedFilter& src,
                     const std::vector<std::string>& files);
// DIR/migrate-<16 hex digits>.state for this source and destination.
std::string StatePath(const std::string& dir, const std::string& name,
                      const std::string& to);

struct Options {
  std::optional<KeySource> from;  // nullopt = auto
  uint32_t fold = 0;
  std::string to_db, to_name;
  uint64_t verify_sample = 0;  // 0 = every key
  uint64_t probes = 1'000'000;
  uint64_t stop_after = 0;  // 0 = never
  uint64_t every = 0;
  bool quiet = false, restart = false, binary = false;
  bool retain = false, drop_hashes = false;
};

// Parses the migrate-only flags; returns a usage error or "".
std::string ParseOptions(const ParsedArgs& a, Options* o);

// The state of one run, shared by its steps.
struct Run {
  Run(CommandContext& c, std::string n) : ctx(c), name(std::move(n)) {}
  CommandContext& ctx;
  Options opt;
  std::string name;
  std::vector<std::string> files;
  Database* db = nullptr;
  std::shared_ptr<ShardedFilter> src;
  FilterSpec target;
  KeySource kind = KeySource::kHashes;
  std::unique_ptr<ShardedFilter> built;
  uint64_t consumed = 0, last_hash = 0;
  uint64_t units = 0;  // progress units done: hashes, or input bytes
  bool have_last_hash = false;
  std::vector<uint64_t> stdin_sample;  // keys from stdin, for verification
};

// Decides where the keys come from and whether the target retains hashes;
// a usage error message or "".
std::string ChooseSource(Run& r);
// Fills r.built from the source of keys, from r.consumed on. Aborted when
// interrupted (SIGINT or --stop-after) between batches; the cursor then
// names exactly what was added.
Status Fill(Run& r, Progress* progress);
// Checks the source's keys are in the target: *checked, *missing.
Status Verify(Run& r, uint64_t* checked, uint64_t* missing);

}  // namespace shardfilter::tools::migrate

#endif  // SHARDFILTER_TOOLS_CLI_MIGRATE_STEPS_H_
