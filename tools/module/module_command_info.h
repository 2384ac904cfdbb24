// COMMAND metadata of the module's commands (RedisModule_SetCommandInfo):
// summary, arity (0: not checked by Redis, the module checks it) and one key
// spec, the key at argv[1], so COMMAND INFO / COMMAND DOCS and cluster
// clients see the key and what the command does with it.
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_COMMAND_INFO_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_COMMAND_INFO_H_

#include <string>
#include <string_view>

#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

enum class KeyAccess {
  kRead,       // RO ACCESS: queries
  kInsert,     // RW INSERT: adds (and creates)
  kRemove,     // RW DELETE: CF.DEL
  kOverwrite,  // OW UPDATE: SFM.CREATE / SFM.CHUNK replace the value
};

// Logs and carries on when Redis refuses (the command then keeps the key
// spec Redis derived from CreateCommand's first/last/step).
void SetKeySpecInfo(RedisModuleCtx* ctx, const std::string& name,
                    const char* summary, int arity, KeyAccess access);

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_COMMAND_INFO_H_
