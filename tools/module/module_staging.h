// LOADCHUNK staging and SCANDUMP copies inside redis-server
// (tools/commands/staging.h): allocated with RedisModule_TryAlloc, so
// used_memory and maxmemory count them as they count the filters, and
// charged to the module's budget (module_memory.h) until destroyed.
//
// Thread safety: Redis's main thread only.
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_STAGING_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_STAGING_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "tools/commands/staging.h"
#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

// `bytes` of Redis's memory for `what`. Unless `obey` (a command from the
// master or the AOF, module_memory.h), it is refused with
// ResourceExhausted, nothing taken, when it would take used_memory past
// maxmemory (as Redis refuses a deny-oom command once over it) or the
// module's budget past its limit. ResourceExhausted too when the allocator
// has no memory.
Result<std::unique_ptr<commands::StagingBuffer>> NewRedisStaging(
    RedisModuleCtx* ctx, uint64_t bytes, std::string_view what, bool obey);

// The largest dump one restore may stage: the dump of a filter of
// `max_filter_bytes` (MAX-FILTER-BYTES) with room for its framing.
uint64_t MaxRestoreBytes(uint64_t max_filter_bytes);

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_STAGING_H_
