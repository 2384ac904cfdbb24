#include "tools/module/module_staging.h"

#include <string>
#include <utility>

#include "tools/module/module_memory.h"

namespace shardfilter::module {
namespace {

class RedisStaging final : public commands::StagingBuffer {
 public:
  RedisStaging(char* data, uint64_t size) : StagingBuffer(data, size) {}
  ~RedisStaging() override {
    RedisModule_Free(data());
    g_budget->Release(size());
  }
};

// True when `bytes` more would take Redis's used memory (as maxmemory
// counts it: less replica output buffers and the AOF buffer) past
// maxmemory; false when there is no maxmemory.
bool OverMaxmemory(RedisModuleCtx* ctx, uint64_t bytes) {
  RedisModuleServerInfoData* info = RedisModule_GetServerInfo(ctx, "memory");
  if (info == nullptr) return false;
  int err = 0;
  const unsigned long long maxmemory =
      RedisModule_ServerInfoGetFieldUnsigned(info, "maxmemory", &err);
  RedisModule_FreeServerInfo(ctx, info);
  if (err != 0 || maxmemory == 0) return false;
  const double used =
      static_cast<double>(RedisModule_GetUsedMemoryRatio()) *
      static_cast<double>(maxmemory);
  return used + static_cast<double>(bytes) > static_cast<double>(maxmemory);
}

}  // namespace

Result<std::unique_ptr<commands::StagingBuffer>> NewRedisStaging(
    RedisModuleCtx* ctx, uint64_t bytes, std::string_view what, bool obey) {
  if (!obey && OverMaxmemory(ctx, bytes)) {
    return Status::ResourceExhausted(std::string(what) + " of " +
                                     std::to_string(bytes) +
                                     " bytes would exceed maxmemory");
  }
  // Obeyed commands run in an ObeyScope: the budget takes them.
  SF_RETURN_IF_ERROR(g_budget->Reserve(bytes, what));
  void* data = RedisModule_TryAlloc(bytes);
  if (data == nullptr) {
    g_budget->Release(bytes);
    return Status::ResourceExhausted(std::string(what) + " of " +
                                     std::to_string(bytes) +
                                     " bytes cannot be allocated");
  }
  return std::unique_ptr<commands::StagingBuffer>(
      new RedisStaging(static_cast<char*>(data), bytes));
}

uint64_t MaxRestoreBytes(uint64_t max_filter_bytes) {
  // Per link and shard an envelope and a checksum: well under 1/64 of the
  // tables plus 4 MiB for filters of up to 256 shards.
  return max_filter_bytes + max_filter_bytes / 64 + (uint64_t{4} << 20);
}

}  // namespace shardfilter::module
