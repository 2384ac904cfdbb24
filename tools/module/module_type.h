// The module's native data type "shardfltr": RDB save/load through the
// FilterValue envelope (filter_value.h), AOF rewrite as chunked SFM.CHUNK
// commands, digest (DEBUG DIGEST), memory usage, free, free effort and
// copy. DUMP, RESTORE and
// MIGRATE go through rdb_save / rdb_load.
//
// Loading policy (rdb_load): a value that is damaged or from a future
// version (of the envelope, of the export inside it, or of the RDB encoding
// version Redis stamped on it) is kept as an *unavailable* value while
// Redis loads its dataset (RDB at startup, DEBUG RELOAD, a replica's full
// sync), so one bad filter never stops the server from starting; every
// command on it then answers with the damage, and saving writes its bytes
// back unchanged. Outside loading (RESTORE, MIGRATE's receiving side) such
// a payload is refused ("Bad data format", Redis's reply; the log names the
// key and the reason) and nothing is created. Only bytes that are not one
// string stop the load: Redis cannot skip a value.
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_TYPE_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_TYPE_H_

#include <string>

#include "tools/module/filter_value.h"
#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

// 9 characters, unique across modules; not RedisBloom's ("MBbloom--",
// "MBbloomCF"): the encodings differ, and both modules can be loaded.
inline constexpr char kTypeName[] = "shardfltr";
// Redis's per-type encoding version. The RDB layout under it (one string)
// never changes: versions live inside the envelope (filter_value.h).
inline constexpr int kTypeEncodingVersion = kRdbEncodingVersion;
// AOF rewrite: bytes per SFM.CHUNK command.
inline constexpr size_t kAofChunkBytes = size_t{8} << 20;

// Creates the type; false when Redis refuses it. `chunk_command` is the
// name of the SFM.CHUNK command the AOF rewrite emits.
bool RegisterFilterType(RedisModuleCtx* ctx, const std::string& chunk_command);

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_TYPE_H_
