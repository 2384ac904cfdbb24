#include "tools/module/module_command_info.h"

namespace shardfilter::module {
namespace {

uint64_t Flags(KeyAccess access) {
  switch (access) {
    case KeyAccess::kRead:
      return REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS;
    case KeyAccess::kInsert:
      return REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_INSERT;
    case KeyAccess::kRemove:
      return REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_DELETE;
    case KeyAccess::kOverwrite:
      return REDISMODULE_CMD_KEY_OW | REDISMODULE_CMD_KEY_UPDATE;
  }
  return REDISMODULE_CMD_KEY_RW;
}

}  // namespace

void SetKeySpecInfo(RedisModuleCtx* ctx, const std::string& name,
                    const char* summary, int arity, KeyAccess access) {
  static const RedisModuleCommandInfoVersion kVersion = {
      REDISMODULE_COMMAND_INFO_VERSION, sizeof(RedisModuleCommandHistoryEntry),
      sizeof(RedisModuleCommandKeySpec), sizeof(RedisModuleCommandArg)};
  RedisModuleCommand* cmd = RedisModule_GetCommand(ctx, name.c_str());
  if (cmd == nullptr) return;
  // One key at argv[1], then the zeroed terminator.
  RedisModuleCommandKeySpec specs[2] = {};
  specs[0].flags = Flags(access);
  specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
  specs[0].bs.index.pos = 1;
  specs[0].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
  specs[0].fk.range.lastkey = 0;
  specs[0].fk.range.keystep = 1;
  specs[0].fk.range.limit = 0;
  RedisModuleCommandInfo info = {};
  info.version = &kVersion;
  info.summary = summary;
  info.arity = arity;
  info.key_specs = specs;
  if (RedisModule_SetCommandInfo(cmd, &info) != REDISMODULE_OK) {
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                    "shardfilter: COMMAND info refused for %s", name.c_str());
  }
}

}  // namespace shardfilter::module
