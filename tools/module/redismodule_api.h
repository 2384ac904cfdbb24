// The part of the Redis module API shardfilter.so uses, declared here from
// Redis's documented module API reference (no Debian package ships
// redismodule.h, and none is copied in). Pinned to API version 1 as served
// by Redis 7.0 (Debian 12's redis-server 7.0.15).
//
// How the API is reached (the reference's "Loading modules" / RM_GetApi):
// the first word of the RedisModuleCtx handed to RedisModule_OnLoad is a
// pointer to RedisModule_GetApi(name, &fnptr), which fills one function
// pointer per exported name. ResolveApi (redismodule_api.cc) does that for
// every pointer below and then calls RedisModule_SetModuleAttribs; a
// missing function is reported by name and the load fails.
//
// Only functions, constants and structs this module uses are here; their
// values are the documented ones of Redis 7.0 and are part of Redis's ABI.
#ifndef SHARDFILTER_TOOLS_MODULE_REDISMODULE_API_H_
#define SHARDFILTER_TOOLS_MODULE_REDISMODULE_API_H_

#include <cstddef>
#include <cstdint>

extern "C" {

// --- Opaque handles ---
typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleDigest RedisModuleDigest;
typedef struct RedisModuleCommand RedisModuleCommand;
typedef struct RedisModuleInfoCtx RedisModuleInfoCtx;
typedef struct RedisModuleServerInfoData RedisModuleServerInfoData;

// --- Constants ---
inline constexpr int REDISMODULE_OK = 0;
inline constexpr int REDISMODULE_ERR = 1;
inline constexpr int REDISMODULE_APIVER_1 = 1;

// RedisModule_OpenKey modes.
inline constexpr int REDISMODULE_READ = 1 << 0;
inline constexpr int REDISMODULE_WRITE = 1 << 1;

// RedisModule_KeyType results.
inline constexpr int REDISMODULE_KEYTYPE_EMPTY = 0;
inline constexpr int REDISMODULE_KEYTYPE_MODULE = 6;

// RedisModule_GetContextFlags bits (7.0).
inline constexpr int REDISMODULE_CTX_FLAGS_MULTI = 1 << 1;
inline constexpr int REDISMODULE_CTX_FLAGS_MASTER = 1 << 2;
inline constexpr int REDISMODULE_CTX_FLAGS_SLAVE = 1 << 3;
inline constexpr int REDISMODULE_CTX_FLAGS_REPLICATED = 1 << 12;
inline constexpr int REDISMODULE_CTX_FLAGS_LOADING = 1 << 13;
inline constexpr int REDISMODULE_CTX_FLAGS_RESP3 = 1 << 22;
inline constexpr int REDISMODULE_CTX_FLAGS_ASYNC_LOADING = 1 << 23;

// RedisModule_SetModuleOptions: rdb_load checks RedisModule_IsIOError
// instead of Redis exiting on a short read.
inline constexpr int REDISMODULE_OPTIONS_HANDLE_IO_ERRORS = 1 << 0;

// RedisModule_CreateDataType: the methods struct version this module fills
// (3: free_effort, unlink, copy, defrag; the fields of later versions are
// left out).
inline constexpr uint64_t REDISMODULE_TYPE_METHOD_VERSION_USED = 3;

// RedisModule_Log levels.
inline constexpr const char* REDISMODULE_LOGLEVEL_WARNING = "warning";
inline constexpr const char* REDISMODULE_LOGLEVEL_NOTICE = "notice";

// Key spec flags (RedisModule_SetCommandInfo).
inline constexpr uint64_t REDISMODULE_CMD_KEY_RO = 1ull << 0;
inline constexpr uint64_t REDISMODULE_CMD_KEY_RW = 1ull << 1;
inline constexpr uint64_t REDISMODULE_CMD_KEY_OW = 1ull << 2;
inline constexpr uint64_t REDISMODULE_CMD_KEY_ACCESS = 1ull << 4;
inline constexpr uint64_t REDISMODULE_CMD_KEY_UPDATE = 1ull << 5;
inline constexpr uint64_t REDISMODULE_CMD_KEY_INSERT = 1ull << 6;
inline constexpr uint64_t REDISMODULE_CMD_KEY_DELETE = 1ull << 7;

// --- Data type methods ---
typedef void* (*RedisModuleTypeLoadFunc)(RedisModuleIO* rdb, int encver);
typedef void (*RedisModuleTypeSaveFunc)(RedisModuleIO* rdb, void* value);
typedef void (*RedisModuleTypeRewriteFunc)(RedisModuleIO* aof,
                                           RedisModuleString* key, void* value);
typedef size_t (*RedisModuleTypeMemUsageFunc)(const void* value);
typedef void (*RedisModuleTypeDigestFunc)(RedisModuleDigest* digest,
                                          void* value);
typedef void (*RedisModuleTypeFreeFunc)(void* value);
typedef void (*RedisModuleTypeAuxLoadFunc)(RedisModuleIO* rdb, int encver,
                                           int when);
typedef void (*RedisModuleTypeAuxSaveFunc)(RedisModuleIO* rdb, int when);
typedef size_t (*RedisModuleTypeFreeEffortFunc)(RedisModuleString* key,
                                                const void* value);
typedef void (*RedisModuleTypeUnlinkFunc)(RedisModuleString* key,
                                          const void* value);
typedef void* (*RedisModuleTypeCopyFunc)(RedisModuleString* fromkey,
                                         RedisModuleString* tokey,
                                         const void* value);
typedef int (*RedisModuleTypeDefragFunc)(void* ctx, RedisModuleString* key,
                                         void** value);

// Field order is the ABI; Redis reads only the fields of `version`.
struct RedisModuleTypeMethods {
  uint64_t version;
  RedisModuleTypeLoadFunc rdb_load;
  RedisModuleTypeSaveFunc rdb_save;
  RedisModuleTypeRewriteFunc aof_rewrite;
  RedisModuleTypeMemUsageFunc mem_usage;
  RedisModuleTypeDigestFunc digest;
  RedisModuleTypeFreeFunc free;
  RedisModuleTypeAuxLoadFunc aux_load;        // version 2
  RedisModuleTypeAuxSaveFunc aux_save;        // version 2
  int aux_save_triggers;                      // version 2
  RedisModuleTypeFreeEffortFunc free_effort;  // version 3
  RedisModuleTypeUnlinkFunc unlink;           // version 3
  RedisModuleTypeCopyFunc copy;               // version 3
  RedisModuleTypeDefragFunc defrag;           // version 3
};

// --- Command info (RedisModule_SetCommandInfo, 7.0) ---
inline constexpr int REDISMODULE_COMMAND_INFO_VERSION = 1;

enum RedisModuleKeySpecBeginSearchType {
  REDISMODULE_KSPEC_BS_INVALID = 0,
  REDISMODULE_KSPEC_BS_UNKNOWN,
  REDISMODULE_KSPEC_BS_INDEX,
  REDISMODULE_KSPEC_BS_KEYWORD,
};
enum RedisModuleKeySpecFindKeysType {
  REDISMODULE_KSPEC_FK_OMITTED = 0,
  REDISMODULE_KSPEC_FK_UNKNOWN,
  REDISMODULE_KSPEC_FK_RANGE,
  REDISMODULE_KSPEC_FK_KEYNUM,
};

struct RedisModuleCommandKeySpec {
  const char* notes;
  uint64_t flags;
  RedisModuleKeySpecBeginSearchType begin_search_type;
  union {
    struct {
      int pos;
    } index;
    struct {
      const char* keyword;
      int startfrom;
    } keyword;
  } bs;
  RedisModuleKeySpecFindKeysType find_keys_type;
  union {
    struct {
      int lastkey;
      int keystep;
      int limit;
    } range;
    struct {
      int keynumidx;
      int firstkey;
      int keystep;
    } keynum;
  } fk;
};

struct RedisModuleCommandHistoryEntry {
  const char* since;
  const char* changes;
};

// Not filled by this module (args == nullptr); declared for its size only.
struct RedisModuleCommandArg {
  const char* name;
  int type;
  int key_spec_index;
  const char* token;
  const char* summary;
  const char* since;
  int flags;
  const char* deprecated_since;
  RedisModuleCommandArg* subargs;
  const char* display_text;
};

struct RedisModuleCommandInfoVersion {
  int version;
  size_t sizeof_historyentry;
  size_t sizeof_keyspec;
  size_t sizeof_arg;
};

struct RedisModuleCommandInfo {
  const RedisModuleCommandInfoVersion* version;
  const char* summary;
  const char* complexity;
  const char* since;
  RedisModuleCommandHistoryEntry* history;  // zero-terminated, or null
  const char* tips;
  int arity;                             // 0: not checked by Redis
  RedisModuleCommandKeySpec* key_specs;  // zero-terminated
  RedisModuleCommandArg* args;           // null
};

typedef int (*RedisModuleCmdFunc)(RedisModuleCtx* ctx, RedisModuleString** argv,
                                  int argc);
typedef void (*RedisModuleInfoFunc)(RedisModuleInfoCtx* ctx,
                                    int for_crash_report);

// Server events (RedisModule_SubscribeToServerEvent).
struct RedisModuleEvent {
  uint64_t id;
  uint64_t dataver;
};
inline constexpr uint64_t REDISMODULE_EVENT_LOADING = 3;
inline constexpr uint64_t REDISMODULE_EVENT_CLIENT_CHANGE = 4;
inline constexpr uint64_t REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED = 1;
// The ClientChange event's data, version 1 (only `id` is read).
struct RedisModuleClientInfoV1 {
  uint64_t version;
  uint64_t flags;
  uint64_t id;
  char addr[46];
  uint16_t port;
  uint16_t db;
};
typedef void (*RedisModuleEventCallback)(RedisModuleCtx* ctx,
                                         RedisModuleEvent eid,
                                         uint64_t subevent, void* data);

// --- Functions, resolved by ResolveApi ---
// Each X(name, return, params) is a pointer RedisModule_<name>.
#define SF_REDISMODULE_API(X)                                                  \
  X(SetModuleAttribs, void, (RedisModuleCtx*, const char*, int, int))          \
  X(IsModuleNameBusy, int, (const char*))                                      \
  X(Alloc, void*, (size_t))                                                    \
  X(TryAlloc, void*, (size_t))                                                 \
  X(Free, void, (void*))                                                       \
  X(Log, void, (RedisModuleCtx*, const char*, const char*, ...))               \
  X(LogIOError, void, (RedisModuleIO*, const char*, const char*, ...))         \
  X(CreateCommand, int,                                                        \
    (RedisModuleCtx*, const char*, RedisModuleCmdFunc, const char*, int, int,  \
     int))                                                                     \
  X(GetCommand, RedisModuleCommand*, (RedisModuleCtx*, const char*))           \
  X(SetCommandInfo, int, (RedisModuleCommand*, const RedisModuleCommandInfo*)) \
  X(SetModuleOptions, void, (RedisModuleCtx*, int))                            \
  X(GetContextFlags, int, (RedisModuleCtx*))                                   \
  X(GetContextFromIO, RedisModuleCtx*, (RedisModuleIO*))                       \
  X(GetKeyNameFromIO, const RedisModuleString*, (RedisModuleIO*))              \
  X(WrongArity, int, (RedisModuleCtx*))                                        \
  X(StringPtrLen, const char*, (const RedisModuleString*, size_t*))            \
  X(CreateString, RedisModuleString*, (RedisModuleCtx*, const char*, size_t))  \
  X(FreeString, void, (RedisModuleCtx*, RedisModuleString*))                   \
  X(OpenKey, RedisModuleKey*, (RedisModuleCtx*, RedisModuleString*, int))      \
  X(CloseKey, void, (RedisModuleKey*))                                         \
  X(KeyType, int, (RedisModuleKey*))                                           \
  X(DeleteKey, int, (RedisModuleKey*))                                         \
  X(CreateDataType, RedisModuleType*,                                          \
    (RedisModuleCtx*, const char*, int, RedisModuleTypeMethods*))              \
  X(ModuleTypeSetValue, int, (RedisModuleKey*, RedisModuleType*, void*))       \
  X(ModuleTypeGetType, RedisModuleType*, (RedisModuleKey*))                    \
  X(ModuleTypeGetValue, void*, (RedisModuleKey*))                              \
  X(ReplyWithLongLong, int, (RedisModuleCtx*, long long))                      \
  X(ReplyWithError, int, (RedisModuleCtx*, const char*))                       \
  X(ReplyWithSimpleString, int, (RedisModuleCtx*, const char*))                \
  X(ReplyWithArray, int, (RedisModuleCtx*, long))                              \
  X(ReplyWithMap, int, (RedisModuleCtx*, long))                                \
  X(ReplyWithSet, int, (RedisModuleCtx*, long))                                \
  X(ReplyWithNullArray, int, (RedisModuleCtx*))                                \
  X(ReplyWithStringBuffer, int, (RedisModuleCtx*, const char*, size_t))        \
  X(ReplyWithVerbatimString, int, (RedisModuleCtx*, const char*, size_t))      \
  X(ReplyWithNull, int, (RedisModuleCtx*))                                     \
  X(ReplyWithBool, int, (RedisModuleCtx*, int))                                \
  X(ReplyWithDouble, int, (RedisModuleCtx*, double))                           \
  X(Replicate, int, (RedisModuleCtx*, const char*, const char*, ...))          \
  X(ReplicateVerbatim, int, (RedisModuleCtx*))                                 \
  X(SaveUnsigned, void, (RedisModuleIO*, uint64_t))                            \
  X(LoadUnsigned, uint64_t, (RedisModuleIO*))                                  \
  X(SaveStringBuffer, void, (RedisModuleIO*, const char*, size_t))             \
  X(LoadStringBuffer, char*, (RedisModuleIO*, size_t*))                        \
  X(IsIOError, int, (RedisModuleIO*))                                          \
  X(EmitAOF, void, (RedisModuleIO*, const char*, const char*, ...))            \
  X(DigestAddStringBuffer, void, (RedisModuleDigest*, const char*, size_t))    \
  X(DigestEndSequence, void, (RedisModuleDigest*))                             \
  X(RegisterInfoFunc, int, (RedisModuleCtx*, RedisModuleInfoFunc))             \
  X(InfoAddSection, int, (RedisModuleInfoCtx*, const char*))                   \
  X(InfoAddFieldCString, int, (RedisModuleInfoCtx*, const char*, const char*)) \
  X(GetClientId, unsigned long long, (RedisModuleCtx*))                        \
  X(GetSelectedDb, int, (RedisModuleCtx*))                                     \
  X(SubscribeToServerEvent, int,                                               \
    (RedisModuleCtx*, RedisModuleEvent, RedisModuleEventCallback))             \
  X(InfoAddFieldULongLong, int,                                                \
    (RedisModuleInfoCtx*, const char*, unsigned long long))                    \
  X(GetServerInfo, RedisModuleServerInfoData*, (RedisModuleCtx*, const char*)) \
  X(FreeServerInfo, void, (RedisModuleCtx*, RedisModuleServerInfoData*))       \
  X(ServerInfoGetFieldUnsigned, unsigned long long,                            \
    (RedisModuleServerInfoData*, const char*, int*))                           \
  X(GetUsedMemoryRatio, float, ())

#define SF_DECLARE_API(name, ret, params) \
  extern ret(*RedisModule_##name) params;
SF_REDISMODULE_API(SF_DECLARE_API)
#undef SF_DECLARE_API

}  // extern "C"

namespace shardfilter::module {

// Fills every RedisModule_* pointer through the GetApi pointer at the
// start of `ctx`, then registers the module's name and version. False (and
// a log line naming the first missing function, when Log resolved) when the
// server lacks one, or the name is taken.
bool ResolveApi(RedisModuleCtx* ctx, const char* name, int version);

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_REDISMODULE_API_H_
