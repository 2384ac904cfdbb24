// The module's memory budget: every filter table a command, a restore or a
// load creates inside redis-server is charged to g_budget
// (engine/memory_budget.h), whose limit is the MEMORY-BUDGET load argument
// (default: MemoryBudget::DefaultLimit(), half of the machine's or the
// cgroup's memory). Redis's own maxmemory applies besides (the tables come
// from Redis's allocator, filters/memory_advice.h's SetTableAllocator).
//
// Thread safety: Redis's main thread only (a BGSAVE fork child only reads
// filters).
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_MEMORY_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_MEMORY_H_

#include <cstdint>
#include <memory>

#include "shardfilter/engine/memory_budget.h"

namespace shardfilter::module {

// Set in RedisModule_OnLoad, before any filter exists.
extern std::shared_ptr<MemoryBudget> g_budget;

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_MEMORY_H_
