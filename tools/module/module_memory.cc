#include "tools/module/module_memory.h"

#include <limits>

namespace shardfilter::module {

std::shared_ptr<MemoryBudget> g_budget;

bool MustObey(int context_flags) {
  return (context_flags &
          (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING |
           REDISMODULE_CTX_FLAGS_ASYNC_LOADING)) != 0;
}

bool CommandMustObey(RedisModuleCtx* ctx) {
  return MustObey(RedisModule_GetContextFlags(ctx));
}

bool ValueMustObey(RedisModuleCtx* ctx) {
  return (RedisModule_GetContextFlags(ctx) &
          (REDISMODULE_CTX_FLAGS_SLAVE | REDISMODULE_CTX_FLAGS_LOADING |
           REDISMODULE_CTX_FLAGS_ASYNC_LOADING)) != 0;
}

ObeyScope::ObeyScope(bool obey) : active_(obey) {
  if (!active_) return;
  saved_limit_ = g_budget->limit();
  g_budget->SetLimit(std::numeric_limits<uint64_t>::max());
}

ObeyScope::~ObeyScope() {
  if (active_) g_budget->SetLimit(saved_limit_);
}

}  // namespace shardfilter::module
