// The module's own commands, which serve persistence and replication only
// (docs/redis-module.md): accepted only from the master's replication
// stream or an AOF being loaded (a client is refused, and nothing changes),
// and never prefixed, so an AOF or a replication stream loads whatever
// PREFIX the reading server uses:
//
//   SFM.CREATE key spec
//       a filter with exactly the resolved spec (replicated creates)
//   SFM.CHUNK key i n bytes
//       part i of n of a value's envelope (the AOF rewrite): part 0 puts a
//       pending value at the key, part n-1 decodes it
//   SFM.LOADCHUNK key id offset total bytes
//       bytes [offset, offset + len) of the dump (an export,
//       docs/format-export.md) of `total` bytes that restore `id` loads
//       into key: offset 0 starts it (abandoning an unfinished restore of
//       the key), the chunk that completes it creates the key
//
// A completed BF/CF.LOADCHUNK sequence is replicated, and written to the
// AOF, as SFM.LOADCHUNK chunks of at most kAofChunkBytes under a new
// restore id, all from the command that completed it: Redis wraps them in
// one MULTI/EXEC, so no restore ever spans a full sync, an AOF rewrite or
// a failover, and a replica or a reloading server gathers them by key and
// restore id, whatever other clients' restores ran meanwhile on the master.
//
// Thread safety: Redis's main thread only.
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_INTERNAL_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_INTERNAL_H_

#include <string_view>

#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

inline constexpr char kCreateCommand[] = "sfm.create";
inline constexpr char kChunkCommand[] = "sfm.chunk";
inline constexpr char kLoadChunkCommand[] = "sfm.loadchunk";

int SfmCreate(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);
int SfmChunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);
int SfmLoadChunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

// Replicates the restore that just created `key` from the dump `bytes` as
// SFM.LOADCHUNK commands (above).
void ReplicateRestore(RedisModuleCtx* ctx, std::string_view key,
                      std::string_view bytes);

// Drops the restores SFM.LOADCHUNK is gathering: called when a load starts
// or ends, which no replicated restore spans (an unfinished one is the tail
// of a truncated AOF, or of a stream a full sync replaces).
void DropReplicatedRestores();

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_INTERNAL_H_
