// The module's memory budget: every filter table a command, a restore or a
// load creates inside redis-server is charged to g_budget
// (engine/memory_budget.h), whose limit is the MEMORY-BUDGET load argument
// (default: MemoryBudget::DefaultLimit(), half of the machine's or the
// cgroup's memory). Redis's own maxmemory applies besides (the tables come
// from Redis's allocator, filters/memory_advice.h's SetTableAllocator).
//
// Writes Redis must obey (valkey-bloom's must_obey_client): what the master
// replicates and what an AOF replays was applied on the master, so a
// replica or a restarting server applies it whatever its own limits say
// (its budget, its maxmemory, the bounds on LOADCHUNK staging), as Redis
// itself never refuses the master's or the AOF's commands
// (mustObeyClient). Otherwise the replica would silently lack what its
// master holds.
//
// Thread safety: Redis's main thread only (a BGSAVE fork child only reads
// filters).
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_MEMORY_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_MEMORY_H_

#include <cstdint>
#include <memory>

#include "shardfilter/engine/memory_budget.h"
#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

// Set in RedisModule_OnLoad, before any filter exists.
extern std::shared_ptr<MemoryBudget> g_budget;

// The command running in `ctx` comes from the master's replication stream
// (REDISMODULE_CTX_FLAGS_REPLICATED: the master client) or from an AOF
// being loaded (LOADING or ASYNC_LOADING: the AOF client).
bool CommandMustObey(RedisModuleCtx* ctx);
// The same from the context's flags (RedisModule_GetContextFlags).
bool MustObey(int context_flags);

// A value being loaded or copied outside a command of the module (rdb_load:
// RDB, a replica's full sync, RESTORE; copy: COPY), where Redis gives no
// client: while loading, or on a replica, whose keys change only through its
// master (unless replica-read-only is turned off). `ctx` may be null.
bool ValueMustObey(RedisModuleCtx* ctx);

// While an active scope lives, g_budget refuses nothing (its limit is
// lifted, and put back by the destructor). Obeyed tables are still charged,
// so once the scope ends the server's own clients meet a budget that the
// master's writes may have filled. Scopes nest.
class ObeyScope {
 public:
  explicit ObeyScope(bool obey);
  ~ObeyScope();
  ObeyScope(const ObeyScope&) = delete;
  ObeyScope& operator=(const ObeyScope&) = delete;

 private:
  bool active_;
  uint64_t saved_limit_ = 0;
};

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_MEMORY_H_
