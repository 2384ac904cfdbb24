#include "tools/module/module_type.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "shardfilter/engine/export.h"
#include "tools/module/filter_value.h"
#include "tools/module/module_keyspace.h"
#include "tools/module/module_memory.h"

namespace shardfilter::module {
namespace {

std::string g_chunk_command;

// The bytes a value saves: its envelope, or the bytes it was read from.
std::string SavedBytes(const FilterValue& v) {
  if (v.available()) return EncodeValue(*v.filter);
  return v.raw;
}

// The name of the key being loaded, for the log ("?" when Redis gives none).
std::string KeyName(RedisModuleIO* io) {
  const RedisModuleString* key = RedisModule_GetKeyNameFromIO(io);
  if (key == nullptr) return "?";
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(key, &len);
  return std::string(p, len);
}

void* RdbLoad(RedisModuleIO* io, int encver) {
  // Whatever the encoding version, the value is one string
  // (filter_value.h): read it, so that Redis can go on past it.
  size_t len = 0;
  char* buf = RedisModule_LoadStringBuffer(io, &len);
  if (RedisModule_IsIOError(io) || buf == nullptr) {
    if (buf != nullptr) RedisModule_Free(buf);
    RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING,
                           "shardfilter: cannot read the value of key '%s' "
                           "(RDB encoding version %d): not one string",
                           KeyName(io).c_str(), encver);
    return nullptr;
  }
  std::string bytes(buf, len);
  RedisModule_Free(buf);
  RedisModuleCtx* ctx = RedisModule_GetContextFromIO(io);
  std::unique_ptr<FilterValue> v;
  {
    // A replica's full sync or RESTORE from its master, and a restart's
    // load, hold what the master (or this server) held (module_memory.h).
    const ObeyScope obey(ValueMustObey(ctx));
    v = ValueFromRdb(encver, std::move(bytes), g_budget);
  }
  if (!v->available()) {
    const bool loading =
        (RedisModule_GetContextFlags(ctx) &
         (REDISMODULE_CTX_FLAGS_LOADING |
          REDISMODULE_CTX_FLAGS_ASYNC_LOADING)) != 0;
    if (!loading) {
      // Redis replies its own "Bad data format"; the reason is here.
      ++g_counters.restores_refused;
      RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING,
                             "shardfilter: refused the value for key '%s' "
                             "(RESTORE or MIGRATE; nothing created): %s",
                             KeyName(io).c_str(), v->damage.c_str());
      return nullptr;
    }
    ++g_counters.unavailable_loaded;
    RedisModule_LogIOError(io, REDISMODULE_LOGLEVEL_WARNING,
                           "shardfilter: the filter at key '%s' is "
                           "unavailable (%s); its bytes are kept and saved "
                           "back as they are",
                           KeyName(io).c_str(), v->damage.c_str());
  }
  if (v->available()) ++g_counters.values_loaded;
  return v.release();
}

void RdbSave(RedisModuleIO* io, void* value) {
  const std::string bytes = SavedBytes(*static_cast<FilterValue*>(value));
  RedisModule_SaveStringBuffer(io, bytes.data(), bytes.size());
}

void AofRewrite(RedisModuleIO* aof, RedisModuleString* key, void* value) {
  const std::string bytes = SavedBytes(*static_cast<FilterValue*>(value));
  const size_t n =
      bytes.empty() ? 1 : (bytes.size() + kAofChunkBytes - 1) / kAofChunkBytes;
  for (size_t i = 0; i < n; ++i) {
    const size_t at = i * kAofChunkBytes;
    const size_t len = std::min(kAofChunkBytes, bytes.size() - at);
    RedisModule_EmitAOF(aof, g_chunk_command.c_str(), "sllb", key,
                        static_cast<long long>(i), static_cast<long long>(n),
                        bytes.data() + at, len);
  }
}

// DEBUG DIGEST / DIGEST-VALUE: the saved bytes (identical on a master and
// its replicas).
void Digest(RedisModuleDigest* md, void* value) {
  const std::string bytes = SavedBytes(*static_cast<FilterValue*>(value));
  RedisModule_DigestAddStringBuffer(md, bytes.data(), bytes.size());
  RedisModule_DigestEndSequence(md);
}

size_t MemUsage(const void* value) {
  return static_cast<const FilterValue*>(value)->MemoryBytes();
}

void Free(void* value) { delete static_cast<FilterValue*>(value); }

size_t FreeEffort(RedisModuleString*, const void* value) {
  // One unit per shard and per MiB: Redis frees values of more than 64
  // units in a background thread (UNLINK), so big filters never stall it.
  const auto* v = static_cast<const FilterValue*>(value);
  const size_t shards = v->available() ? v->filter->shard_count() : 1;
  return shards + static_cast<size_t>(v->MemoryBytes() >> 20);
}

void* Copy(RedisModuleString* from, RedisModuleString* to,
           const void* value) {
  const auto* v = static_cast<const FilterValue*>(value);
  auto out = std::make_unique<FilterValue>();
  if (v->available()) {
    // COPY replicated to a replica is obeyed (module_memory.h); Redis gives
    // this callback no context.
    const ObeyScope obey(ValueMustObey(nullptr));
    auto copy = LoadExportedFilter(ExportShardedFilter(*v->filter), g_budget);
    if (!copy.ok()) {
      // Redis replies its own "module key failed to copy".
      size_t from_len = 0, to_len = 0;
      const char* f = RedisModule_StringPtrLen(from, &from_len);
      const char* t = RedisModule_StringPtrLen(to, &to_len);
      RedisModule_Log(nullptr, REDISMODULE_LOGLEVEL_WARNING,
                      "shardfilter: cannot copy the filter at key '%.*s' to "
                      "'%.*s': %s",
                      static_cast<int>(from_len), f, static_cast<int>(to_len),
                      t, copy.status().ToString().c_str());
      return nullptr;
    }
    out->filter = std::move(copy).value();
  } else {
    out->raw = v->raw;
    out->damage = v->damage;
    out->pending = v->pending;
  }
  return out.release();
}

}  // namespace

bool RegisterFilterType(RedisModuleCtx* ctx, const std::string& chunk_command) {
  g_chunk_command = chunk_command;
  RedisModuleTypeMethods tm{};
  tm.version = REDISMODULE_TYPE_METHOD_VERSION_USED;
  tm.rdb_load = RdbLoad;
  tm.rdb_save = RdbSave;
  tm.aof_rewrite = AofRewrite;
  tm.mem_usage = MemUsage;
  tm.digest = Digest;
  tm.free = Free;
  tm.free_effort = FreeEffort;
  tm.copy = Copy;
  g_filter_type =
      RedisModule_CreateDataType(ctx, kTypeName, kTypeEncodingVersion, &tm);
  return g_filter_type != nullptr;
}

}  // namespace shardfilter::module
