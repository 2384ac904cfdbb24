// ModuleKeyspace: the command layer's Keyspace (tools/commands/keyspace.h)
// over Redis's own keyspace, for one command. Keys are opened with
// RedisModule_OpenKey and hold a FilterValue (filter_value.h) of the
// module's data type; filters are standalone in-memory ShardedFilters (no
// RocksDB, no journal: Redis's RDB and AOF persist them).
//
// It also records what the command did (created a filter with which
// resolved spec, mutated one) so that the module replicates the command
// deterministically (module.cc).
//
// Thread safety: one per command, on Redis's main thread.
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_KEYSPACE_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_KEYSPACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shardfilter/engine/sharded_filter.h"
#include "tools/commands/keyspace.h"
#include "tools/commands/sharded_handle.h"
#include "tools/module/filter_value.h"
#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

// Load arguments (docs/redis-module.md, "Configuration").
struct ModuleOptions {
  // Prepended with a dot to every command name ("sf" -> "sf.bf.add").
  std::string prefix;
  // Shards of the filters commands create (0: DefaultShardCount).
  uint32_t shards = 0;
  // Memory budget of one filter, its growth included (FilterSpec::max_bytes).
  uint64_t max_filter_bytes = uint64_t{1} << 30;
  // Limit of the module's memory budget (module_memory.h); 0: the engine's
  // default (MemoryBudget::DefaultLimit()).
  uint64_t memory_budget = 0;
  // Advise large tables as transparent huge pages (off inside Redis: THP
  // inflates copy-on-write during BGSAVE).
  bool huge_pages = false;
};

// The module's data type and load arguments (set in RedisModule_OnLoad).
extern RedisModuleType* g_filter_type;
extern ModuleOptions g_options;

// Counters for INFO shardfilter (main thread only; a fork child's changes
// are its own).
struct ModuleCounters {
  uint64_t filters_created = 0;     // by commands and SFM.CREATE
  uint64_t values_loaded = 0;       // rdb_load / SFM.CHUNK, available
  uint64_t unavailable_loaded = 0;  // loaded as unavailable (damaged)
  uint64_t restores_refused = 0;    // RESTORE / MIGRATE payloads refused
};
extern ModuleCounters g_counters;

// What one key holds, as a command sees it before running.
enum class KeyState { kEmpty, kFilter, kUnavailable, kPending, kOtherType };

// The FilterSpec a command's parameters become under `options`.
FilterSpec ToFilterSpec(const commands::CreateParams& params,
                        const ModuleOptions& options);

class ModuleKeyspace;

// The command layer's handle on a filter value: marks the keyspace mutated
// before any add or remove (replication, module.cc).
class ModuleFilter final : public commands::ShardedFilterHandle {
 public:
  ModuleFilter(ShardedFilter* f, ModuleKeyspace* ks)
      : ShardedFilterHandle(f), filter_(f), ks_(ks) {}
  ShardedFilter* filter() const { return filter_; }

 private:
  void BeforeMutation() override;
  ShardedFilter* filter_;
  ModuleKeyspace* ks_;
};

class ModuleKeyspace final : public commands::Keyspace {
 public:
  // `write`: keys are opened for writing (write commands). `obey`: the
  // command comes from the master or the AOF (module_memory.h).
  ModuleKeyspace(RedisModuleCtx* ctx, const ModuleOptions& options, bool write,
                 bool obey);
  ~ModuleKeyspace() override;

  // The command's own key (argv[1]): opened from this string, without a
  // copy. Must outlive the keyspace (Redis's argv does).
  void SetCommandKey(RedisModuleString* key);

  // The state of `key`; *value set for kFilter/kUnavailable/kPending.
  KeyState Probe(std::string_view key, FilterValue** value);
  // Installs `value` at `key` (replacing what is there). REQUIRES: write.
  bool Install(std::string_view key, std::unique_ptr<FilterValue> value);

  Result<std::shared_ptr<commands::FilterHandle>> Lookup(
      std::string_view key) override;
  Result<std::shared_ptr<commands::FilterHandle>> Create(
      std::string_view key, const commands::CreateParams& params) override;
  // The generic key commands are Redis's own; these are not reached.
  Result<bool> Delete(std::string_view key) override;
  std::vector<std::string> Keys() override { return {}; }
  uint64_t Size() override { return 0; }
  Status Flush() override;
  Status Checkpoint() override;
  int64_t LastCheckpointUnix() override { return 0; }
  size_t MaxKeyBytes() const override { return size_t{512} << 20; }
  // LOADCHUNK staging and SCANDUMP copies in Redis's memory, refused past
  // maxmemory and the module's budget unless obeyed (module_staging.h).
  Result<std::unique_ptr<commands::StagingBuffer>> NewStaging(
      uint64_t bytes, std::string_view what) override;
  // The dump of a filter of MAX-FILTER-BYTES (module_staging.h).
  uint64_t MaxRestoreBytes() const override;
  // The command comes from the master or the AOF (module_memory.h).
  bool MustObey() const override { return obey_; }

  // The filter in shardfilter's dump format (the export: engine/export.h),
  // and a filter created from one; the command layer's SCANDUMP/LOADCHUNK
  // (Keyspace::Dump/Restore). A restore replicates itself as SFM.LOADCHUNK
  // commands (module_internal.h).
  // NotFound; AlreadyExists, and the export's errors (nothing created).
  Result<std::string> Dump(std::string_view key) override;
  // SF.UNION over the keys' values (replicated verbatim: deterministic).
  Status Union(std::string_view dest,
               std::span<const std::string_view> sources) override;
  Status Restore(std::string_view key, std::string_view bytes) override;

  // Set by Create: the resolved spec of the filter this command created.
  const std::optional<FilterSpec>& created() const { return created_; }
  // Set when an add or remove ran on a filter.
  bool mutated() const { return mutated_; }
  void MarkMutated() { mutated_ = true; }

 private:
  RedisModuleKey* Open(std::string_view key);

  RedisModuleCtx* ctx_;
  const ModuleOptions& options_;
  int mode_;
  // Keys opened by this command, closed by the destructor (after the
  // handler: handles point into their values). The command's own key (the
  // one every BF/CF command has) is kept apart: no string copy, no map
  // node, per command.
  RedisModuleString* command_key_ = nullptr;
  std::string_view command_key_view_;
  RedisModuleKey* command_key_open_ = nullptr;
  std::map<std::string, RedisModuleKey*, std::less<>> open_;
  // The handle Lookup gives for the first filter asked for; handed out as a
  // non-owning shared_ptr (the handler's handles die with this keyspace),
  // so a command allocates no handle.
  std::optional<ModuleFilter> handle_;
  std::optional<FilterSpec> created_;
  bool mutated_ = false;
  const bool obey_;
};

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_KEYSPACE_H_
