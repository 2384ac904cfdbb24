// The command table and the dispatcher every host calls with one request.
//
//   commands::CommandContext ctx{session, keyspace, host, writer};
//   commands::Dispatch(ctx, args);  // exactly one reply written
//
// Dispatch finds the command (case-insensitively), checks authentication
// and arity, queues it inside MULTI, and runs its handler, which writes one
// reply through ctx.out (EXEC: one array of the queued commands' replies).
// Error texts are Redis's and RedisBloom's (docs/server.md lists them).
//
// With a host that offers CommandStats (Host::Stats), Dispatch counts every
// command for INFO commandstats / errorstats (command_stats.h).
//
// Thread safety: the table is immutable; Dispatch may run on any number of
// threads at once with different Sessions.
#ifndef SHARDFILTER_TOOLS_COMMANDS_COMMAND_TABLE_H_
#define SHARDFILTER_TOOLS_COMMANDS_COMMAND_TABLE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "tools/commands/session.h"

namespace shardfilter::commands {

enum CommandFlag : uint32_t {
  kWrite = 1 << 0,
  kReadonly = 1 << 1,
  kDenyOom = 1 << 2,
  kFast = 1 << 3,
  kAdmin = 1 << 4,
  kNoAuth = 1 << 5,   // allowed before AUTH
  kNoMulti = 1 << 6,  // runs even inside MULTI (EXEC, DISCARD, ...)
  kLoading = 1 << 7,
  kStale = 1 << 8,
  kModule = 1 << 9,  // RedisBloom's: arity errors name argv[0] as typed
  kNoScript = 1 << 10,
  // Needs a store the Redis module has not (dedup sets, tiered filters):
  // the module does not register it.
  kServerOnly = 1 << 11,
  // Waits for an fsync whatever the key's durability (it drops filters or
  // takes a checkpoint: synced writes). A host that answers from an event
  // loop runs it off the loop (shardfilter-server's SyncWorkers); not
  // reported by COMMAND.
  kFsyncs = 1 << 12,
  // Stores a key's deadline (the EXPIRE family, PERSIST): waits for an
  // fsync when the key's writes do (durability sync) or when it drops the
  // key (a deadline already past); a journal or none filter's deadline is
  // written unsynced, as its adds are. Not reported by COMMAND.
  kSetsDeadline = 1 << 13,
};

using Handler = void (*)(CommandContext& ctx, Args args);

struct CommandSpec {
  const char* name;  // lower case, as COMMAND reports it
  int arity;         // Redis's: N exact, -N at least N (incl. the name)
  uint32_t flags;
  // Key positions for COMMAND, COMMAND GETKEYS and cluster routing:
  // first key, last key (-1: the last argument), step; 0 0 0 = no keys.
  int first_key;
  int last_key;
  int key_step;
  const char* group;    // COMMAND DOCS group ("bf", "cf", "generic", ...)
  const char* summary;  // COMMAND DOCS summary
  Handler handler;
};

// Every command, sorted by name.
std::span<const CommandSpec> AllCommands();
// Case-insensitive lookup; nullptr when unknown.
const CommandSpec* FindCommand(std::string_view name);

// Runs one request (args[0] is the command name; args is non-empty).
void Dispatch(CommandContext& ctx, Args args);

// Runs requests in order with exactly Dispatch's replies and effects, but
// a run of consecutive BF.ADD / BF.MADD (or CF.ADD) of one existing key is
// applied as one batch: one engine call, one journal write (one fsync in
// sync mode) for the run instead of one per command. Replies are written
// after the batch is durable. A run of BF.EXISTS / BF.MEXISTS (or CF.EXISTS
// / CF.MEXISTS) of one key is one batch query (one lookup, the engine's
// prefetching MayContainMany), with the same replies. Stops after a request
// that set
// session.close_after_reply (QUIT, SHUTDOWN); returns how many requests
// ran. Hosts that receive pipelines (the server) call this; one request at
// a time (the module) calls Dispatch.
size_t DispatchPipeline(CommandContext& ctx, std::span<const Args> requests);

// Handlers, by family (bloom_commands.cc, cuckoo_commands.cc, ...).
namespace handlers {
void BfReserve(CommandContext&, Args);
void BfAdd(CommandContext&, Args);
void BfMAdd(CommandContext&, Args);
void BfInsert(CommandContext&, Args);
void BfExists(CommandContext&, Args);
void BfMExists(CommandContext&, Args);
void BfInfo(CommandContext&, Args);
void BfCard(CommandContext&, Args);
void CfReserve(CommandContext&, Args);
void CfAdd(CommandContext&, Args);
void CfAddNx(CommandContext&, Args);
void CfInsert(CommandContext&, Args);
void CfInsertNx(CommandContext&, Args);
void CfExists(CommandContext&, Args);
void CfMExists(CommandContext&, Args);
void CfCount(CommandContext&, Args);
void CfDel(CommandContext&, Args);
void CfInfo(CommandContext&, Args);
// BF.DEBUG, CF.DEBUG, CF.COMPACT: debug_commands.cc.
void BfDebug(CommandContext&, Args);
void CfDebug(CommandContext&, Args);
void CfCompact(CommandContext&, Args);
// shardfilter's own: sf_commands.cc.
void SfCreate(CommandContext&, Args);
void SfAdd(CommandContext&, Args);
void SfMAdd(CommandContext&, Args);
void SfRemove(CommandContext&, Args);
void SfExists(CommandContext&, Args);
void SfMExists(CommandContext&, Args);
void SfCount(CommandContext&, Args);
void SfInfo(CommandContext&, Args);
void SfShards(CommandContext&, Args);
void SfDedupCreate(CommandContext&, Args);
void SfDedupAdd(CommandContext&, Args);
void SfDedupMAdd(CommandContext&, Args);
void SfDedupExists(CommandContext&, Args);
void SfDedupMExists(CommandContext&, Args);
void SfDedupDel(CommandContext&, Args);
void SfDedupInfo(CommandContext&, Args);
void SfTierCreate(CommandContext&, Args);
void SfTierAdd(CommandContext&, Args);
void SfTierMAdd(CommandContext&, Args);
void SfTierExists(CommandContext&, Args);
void SfTierMExists(CommandContext&, Args);
void SfTierDel(CommandContext&, Args);
void SfUnion(CommandContext&, Args);
void SfTierInfo(CommandContext&, Args);
void SfMigrate(CommandContext&, Args);
void SfMigration(CommandContext&, Args);
// Dumps: dump_commands.cc.
void BfScanDump(CommandContext&, Args);
void BfLoadChunk(CommandContext&, Args);
void CfScanDump(CommandContext&, Args);
void CfLoadChunk(CommandContext&, Args);
// Connection: connection_commands.cc.
void Ping(CommandContext&, Args);
void Echo(CommandContext&, Args);
void Hello(CommandContext&, Args);
void Auth(CommandContext&, Args);
void Select(CommandContext&, Args);
void Quit(CommandContext&, Args);
void Reset(CommandContext&, Args);
void Client(CommandContext&, Args);
void Multi(CommandContext&, Args);
void Exec(CommandContext&, Args);
void Discard(CommandContext&, Args);
// Keyspace: key_commands.cc.
void Dbsize(CommandContext&, Args);
void Del(CommandContext&, Args);
void Exists(CommandContext&, Args);
void Type(CommandContext&, Args);
void Keys(CommandContext&, Args);
void Scan(CommandContext&, Args);
void Flush(CommandContext&, Args);
void Save(CommandContext&, Args);
void Bgsave(CommandContext&, Args);
void Lastsave(CommandContext&, Args);
void Shutdown(CommandContext&, Args);
void Time(CommandContext&, Args);
// Expiry: expire_commands.cc (the server only: inside Redis, Redis's own).
void ExpireCmd(CommandContext&, Args);
void PExpireCmd(CommandContext&, Args);
void ExpireAtCmd(CommandContext&, Args);
void PExpireAtCmd(CommandContext&, Args);
void TtlCmd(CommandContext&, Args);
void PTtlCmd(CommandContext&, Args);
void ExpireTimeCmd(CommandContext&, Args);
void PExpireTimeCmd(CommandContext&, Args);
void PersistCmd(CommandContext&, Args);
// Server: server_commands.cc.
void Command(CommandContext&, Args);
void Info(CommandContext&, Args);
void Config(CommandContext&, Args);
// Cluster emulation: cluster_commands.cc.
void Cluster(CommandContext&, Args);
void ReadOnly(CommandContext&, Args);
void ReadWrite(CommandContext&, Args);
void Asking(CommandContext&, Args);
}  // namespace handlers

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_COMMAND_TABLE_H_
