// Resolution of the RedisModule_* pointers (redismodule_api.h).
#include "tools/module/redismodule_api.h"

extern "C" {
#define SF_DEFINE_API(name, ret, params) \
  ret(*RedisModule_##name) params = nullptr;
SF_REDISMODULE_API(SF_DEFINE_API)
#undef SF_DEFINE_API
}

namespace shardfilter::module {
namespace {

using GetApiFn = int (*)(const char* name, void* fnptr);

}  // namespace

bool ResolveApi(RedisModuleCtx* ctx, const char* name, int version) {
  // The documented loading protocol: the context's first field is
  // RedisModule_GetApi.
  void* first = static_cast<void**>(static_cast<void*>(ctx))[0];
  const auto get_api = reinterpret_cast<GetApiFn>(first);
  if (get_api == nullptr) return false;
  // Log first, so later failures can be reported.
  (void)get_api("RedisModule_Log", static_cast<void*>(&RedisModule_Log));
  const char* missing = nullptr;
#define SF_RESOLVE_API(fn, ret, params)                                     \
  if (get_api("RedisModule_" #fn, static_cast<void*>(&RedisModule_##fn)) != \
          REDISMODULE_OK &&                                                 \
      missing == nullptr) {                                                 \
    missing = "RedisModule_" #fn;                                           \
  }
  SF_REDISMODULE_API(SF_RESOLVE_API)
#undef SF_RESOLVE_API
  if (missing != nullptr) {
    if (RedisModule_Log != nullptr) {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                      "shardfilter: this Redis lacks %s (Redis 7.0 or newer "
                      "is required)",
                      missing);
    }
    return false;
  }
  if (RedisModule_IsModuleNameBusy(name)) return false;
  RedisModule_SetModuleAttribs(ctx, name, version, REDISMODULE_APIVER_1);
  return true;
}

}  // namespace shardfilter::module
