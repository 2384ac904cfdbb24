#include "tools/commands/command_table.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "tools/commands/command_stats.h"
#include "tools/commands/key_slot.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

using namespace handlers;  // NOLINT: the table names every handler

constexpr uint32_t kBfWrite = kWrite | kDenyOom | kModule;
constexpr uint32_t kBfRead = kReadonly | kFast | kModule;
constexpr uint32_t kSetWrite = kWrite | kDenyOom | kModule | kServerOnly;
constexpr uint32_t kSetRead = kReadonly | kModule | kServerOnly;

// Sorted by name (FindCommand binary-searches; a test checks the order).
constexpr CommandSpec kCommands[] = {
    {"asking", 1, kFast, 0, 0, 0, "cluster",
     "Cluster emulation: accepted (one node owns every slot).", Asking},
    {"auth", -2, kNoAuth | kNoScript | kLoading | kStale | kFast, 0, 0, 0,
     "connection", "Authenticates the connection.", Auth},
    {"bf.add", 3, kBfWrite, 1, 1, 1, "bf",
     "Adds an item to a Bloom filter, creating it when missing.", BfAdd},
    {"bf.card", 2, kBfRead, 1, 1, 1, "bf",
     "Returns the number of items added to a Bloom filter.", BfCard},
    {"bf.debug", 2, kReadonly | kModule, 1, 1, 1, "bf",
     "Returns a Bloom filter's links, in RedisBloom's lines.", BfDebug},
    {"bf.exists", 3, kBfRead, 1, 1, 1, "bf",
     "Checks whether an item may be in a Bloom filter.", BfExists},
    {"bf.info", -2, kBfRead, 1, 1, 1, "bf",
     "Returns information about a Bloom filter.", BfInfo},
    {"bf.insert", -4, kBfWrite, 1, 1, 1, "bf",
     "Adds items to a Bloom filter, creating it with the given parameters.",
     BfInsert},
    {"bf.loadchunk", 4, kBfWrite, 1, 1, 1, "bf",
     "Restores a Bloom filter from BF.SCANDUMP chunks.", BfLoadChunk},
    {"bf.madd", -3, kBfWrite, 1, 1, 1, "bf",
     "Adds items to a Bloom filter, creating it when missing.", BfMAdd},
    {"bf.mexists", -3, kBfRead, 1, 1, 1, "bf",
     "Checks whether items may be in a Bloom filter.", BfMExists},
    {"bf.reserve", -4, kBfWrite | kFast, 1, 1, 1, "bf",
     "Creates an empty Bloom filter.", BfReserve},
    {"bf.scandump", 3, kBfRead, 1, 1, 1, "bf",
     "Dumps a Bloom filter in chunks.", BfScanDump},
    {"bgsave", -1, kAdmin | kNoScript | kFsyncs, 0, 0, 0, "server",
     "Checkpoints every filter (synchronously).", Bgsave},
    {"cf.add", 3, kBfWrite, 1, 1, 1, "cf",
     "Adds an item to a cuckoo filter, creating it when missing.", CfAdd},
    {"cf.addnx", 3, kBfWrite, 1, 1, 1, "cf",
     "Adds an item to a cuckoo filter unless it may already be there.",
     CfAddNx},
    {"cf.compact", 2, kWrite | kModule, 1, 1, 1, "cf",
     "Accepted for RedisBloom's clients: a cuckoo filter's chain is never "
     "compacted.",
     CfCompact},
    {"cf.count", 3, kBfRead, 1, 1, 1, "cf",
     "Returns how many copies of an item a cuckoo filter may hold.", CfCount},
    {"cf.debug", 2, kReadonly | kModule, 1, 1, 1, "cf",
     "Returns a cuckoo filter's figures, in RedisBloom's line.", CfDebug},
    {"cf.del", 3, kWrite | kFast | kModule, 1, 1, 1, "cf",
     "Removes one copy of an item from a cuckoo filter.", CfDel},
    {"cf.exists", 3, kBfRead, 1, 1, 1, "cf",
     "Checks whether an item may be in a cuckoo filter.", CfExists},
    {"cf.info", 2, kBfRead, 1, 1, 1, "cf",
     "Returns information about a cuckoo filter.", CfInfo},
    {"cf.insert", -4, kBfWrite, 1, 1, 1, "cf", "Adds items to a cuckoo filter.",
     CfInsert},
    {"cf.insertnx", -4, kBfWrite, 1, 1, 1, "cf",
     "Adds items to a cuckoo filter unless they may already be there.",
     CfInsertNx},
    {"cf.loadchunk", 4, kBfWrite, 1, 1, 1, "cf",
     "Restores a cuckoo filter from CF.SCANDUMP chunks.", CfLoadChunk},
    {"cf.mexists", -3, kBfRead, 1, 1, 1, "cf",
     "Checks whether items may be in a cuckoo filter.", CfMExists},
    {"cf.reserve", -3, kBfWrite | kFast, 1, 1, 1, "cf",
     "Creates an empty cuckoo filter.", CfReserve},
    {"cf.scandump", 3, kBfRead, 1, 1, 1, "cf",
     "Dumps a cuckoo filter in chunks.", CfScanDump},
    {"client", -2, kNoScript | kLoading | kStale, 0, 0, 0, "connection",
     "CLIENT ID | SETNAME | GETNAME | SETINFO | LIST | INFO.", Client},
    {"cluster", -2, kLoading | kStale, 0, 0, 0, "cluster",
     "Cluster emulation: SLOTS | SHARDS | NODES | INFO | MYID | KEYSLOT | "
     "COUNTKEYSINSLOT | GETKEYSINSLOT.",
     Cluster},
    {"command", -1, kLoading | kStale, 0, 0, 0, "server",
     "Returns details about commands.", Command},
    {"config", -2, kAdmin | kNoScript | kLoading | kStale, 0, 0, 0, "server",
     "CONFIG GET | SET | RESETSTAT.", Config},
    {"dbsize", 1, kReadonly | kFast, 0, 0, 0, "server",
     "Returns the number of keys.", Dbsize},
    {"del", -2, kWrite | kFsyncs, 1, -1, 1, "generic", "Deletes keys.", Del},
    {"discard", 1, kNoScript | kLoading | kStale | kFast | kNoMulti, 0, 0, 0,
     "transactions", "Discards a transaction.", Discard},
    {"echo", 2, kFast, 0, 0, 0, "connection", "Returns the given string.",
     Echo},
    {"exec", 1, kNoScript | kLoading | kStale | kNoMulti, 0, 0, 0,
     "transactions", "Executes the queued commands.", Exec},
    {"exists", -2, kReadonly | kFast, 1, -1, 1, "generic",
     "Counts the given keys that exist.", Exists},
    {"expire", -3, kWrite | kFast | kSetsDeadline, 1, 1, 1, "generic",
     "Sets a key's time to live in seconds.", ExpireCmd},
    {"expireat", -3, kWrite | kFast | kSetsDeadline, 1, 1, 1, "generic",
     "Sets a key's deadline as a unix time in seconds.", ExpireAtCmd},
    {"expiretime", 2, kReadonly | kFast, 1, 1, 1, "generic",
     "Returns a key's deadline as a unix time in seconds.", ExpireTimeCmd},
    {"flushall", -1, kWrite | kFsyncs, 0, 0, 0, "server", "Deletes every key.",
     Flush},
    {"flushdb", -1, kWrite | kFsyncs, 0, 0, 0, "server", "Deletes every key.",
     Flush},
    {"hello", -1, kNoAuth | kNoScript | kLoading | kStale | kFast, 0, 0, 0,
     "connection", "Handshake: protocol, authentication, name.", Hello},
    {"info", -1, kLoading | kStale, 0, 0, 0, "server",
     "Returns information and statistics about the server.", Info},
    {"keys", 2, kReadonly, 0, 0, 0, "generic",
     "Returns the keys matching a pattern.", Keys},
    {"lastsave", 1, kLoading | kStale | kFast, 0, 0, 0, "server",
     "Returns the Unix time of the last checkpoint.", Lastsave},
    {"multi", 1, kNoScript | kLoading | kStale | kFast | kNoMulti, 0, 0, 0,
     "transactions", "Starts a transaction.", Multi},
    {"persist", 2, kWrite | kFast | kSetsDeadline, 1, 1, 1, "generic",
     "Removes a key's deadline.", PersistCmd},
    {"pexpire", -3, kWrite | kFast | kSetsDeadline, 1, 1, 1, "generic",
     "Sets a key's time to live in milliseconds.", PExpireCmd},
    {"pexpireat", -3, kWrite | kFast | kSetsDeadline, 1, 1, 1, "generic",
     "Sets a key's deadline as a unix time in milliseconds.", PExpireAtCmd},
    {"pexpiretime", 2, kReadonly | kFast, 1, 1, 1, "generic",
     "Returns a key's deadline as a unix time in milliseconds.",
     PExpireTimeCmd},
    {"ping", -1, kFast, 0, 0, 0, "connection", "Returns PONG.", Ping},
    {"pttl", 2, kReadonly | kFast, 1, 1, 1, "generic",
     "Returns a key's time to live in milliseconds.", PTtlCmd},
    {"quit", -1, kNoAuth | kNoScript | kLoading | kStale | kFast | kNoMulti, 0,
     0, 0, "connection", "Closes the connection.", Quit},
    {"readonly", 1, kLoading | kStale | kFast, 0, 0, 0, "cluster",
     "Cluster emulation: reads from this node (a no-op).", ReadOnly},
    {"readwrite", 1, kLoading | kStale | kFast, 0, 0, 0, "cluster",
     "Cluster emulation: ends READONLY (a no-op).", ReadWrite},
    {"reset", 1, kNoAuth | kNoScript | kLoading | kStale | kFast | kNoMulti, 0,
     0, 0, "connection", "Resets the connection.", Reset},
    {"save", 1, kAdmin | kNoScript | kFsyncs, 0, 0, 0, "server",
     "Checkpoints every filter.", Save},
    {"scan", -2, kReadonly, 0, 0, 0, "generic", "Iterates over the keys.",
     Scan},
    {"select", 2, kLoading | kStale | kFast, 0, 0, 0, "connection",
     "Selects database 0 (the only one).", Select},
    {"sf.add", 3, kBfWrite | kFast, 1, 1, 1, "sf",
     "Adds an item to a filter of any type.", SfAdd},
    {"sf.count", 3, kBfRead, 1, 1, 1, "sf",
     "Returns how many copies of an item a filter may hold.", SfCount},
    {"sf.create", -4, kBfWrite | kFast, 1, 1, 1, "sf",
     "Creates a Bloom, counting Bloom or cuckoo filter.", SfCreate},
    {"sf.dedupadd", 3, kSetWrite, 1, 1, 1, "sf",
     "Adds an item to a dedup set: 1 when it was new.", SfDedupAdd},
    {"sf.dedupcreate", -2, kSetWrite, 1, 1, 1, "sf",
     "Creates a dedup set (an exact set of items, optional TTL).",
     SfDedupCreate},
    {"sf.dedupdel", -3, kWrite | kModule | kServerOnly, 1, 1, 1, "sf",
     "Removes items from a dedup set.", SfDedupDel},
    {"sf.dedupexists", 3, kSetRead, 1, 1, 1, "sf",
     "Checks whether an item is in a dedup set (exact).", SfDedupExists},
    {"sf.dedupinfo", 2, kSetRead, 1, 1, 1, "sf",
     "Returns a dedup set's parameters and figures.", SfDedupInfo},
    {"sf.dedupmadd", -3, kSetWrite, 1, 1, 1, "sf",
     "Adds items to a dedup set: per item, 1 when it was new.", SfDedupMAdd},
    {"sf.dedupmexists", -3, kSetRead, 1, 1, 1, "sf",
     "Checks whether items are in a dedup set (exact).", SfDedupMExists},
    {"sf.exists", 3, kBfRead, 1, 1, 1, "sf",
     "Checks whether an item may be in a filter.", SfExists},
    {"sf.info", 2, kBfRead, 1, 1, 1, "sf",
     "Returns a filter's parameters and figures.", SfInfo},
    {"sf.madd", -3, kBfWrite | kFast, 1, 1, 1, "sf",
     "Adds items to a filter of any type.", SfMAdd},
    {"sf.mexists", -3, kBfRead, 1, 1, 1, "sf",
     "Checks whether items may be in a filter.", SfMExists},
    {"sf.migrate", -4, kWrite | kDenyOom | kModule | kFsyncs, 1, 1, 1, "sf",
     "Starts rebuilding a filter online into another type, size or shard "
     "count.",
     SfMigrate},
    {"sf.migration", 2, kBfRead, 1, 1, 1, "sf",
     "Returns the progress of a filter's migration.", SfMigration},
    {"sf.remove", 3, kWrite | kFast | kModule, 1, 1, 1, "sf",
     "Removes one copy of an item from a counting or cuckoo filter.", SfRemove},
    {"sf.shards", 2, kBfRead, 1, 1, 1, "sf",
     "Returns per-shard figures of a filter.", SfShards},
    {"sf.tieradd", 3, kSetWrite, 1, 1, 1, "sf",
     "Adds an item to every level of a tiered filter.", SfTierAdd},
    {"sf.tiercreate", -5, kSetWrite, 1, 1, 1, "sf",
     "Creates a tiered filter: levels from coarse to precise.", SfTierCreate},
    {"sf.tierdel", 3, kWrite | kModule | kServerOnly, 1, 1, 1, "sf",
     "Removes an item from a tiered filter with an exact level.", SfTierDel},
    {"sf.tierexists", 3, kSetRead, 1, 1, 1, "sf",
     "Checks whether an item may be in a tiered filter.", SfTierExists},
    {"sf.tierinfo", 2, kSetRead, 1, 1, 1, "sf",
     "Returns a tiered filter's levels and figures.", SfTierInfo},
    {"sf.tiermadd", -3, kSetWrite, 1, 1, 1, "sf",
     "Adds items to every level of a tiered filter.", SfTierMAdd},
    {"sf.tiermexists", -3, kSetRead, 1, 1, 1, "sf",
     "Checks whether items may be in a tiered filter.", SfTierMExists},
    {"sf.union", -3, kWrite | kDenyOom | kModule | kFsyncs, 1, -1, 1, "sf",
     "ORs Bloom filters into the first one.", SfUnion},
    {"shutdown", -1, kAdmin | kNoScript | kLoading | kStale, 0, 0, 0, "server",
     "Checkpoints and stops the server.", Shutdown},
    {"time", 1, kLoading | kStale | kFast, 0, 0, 0, "server",
     "Returns the server time.", Time},
    {"ttl", 2, kReadonly | kFast, 1, 1, 1, "generic",
     "Returns a key's time to live in seconds.", TtlCmd},
    {"type", 2, kReadonly | kFast, 1, 1, 1, "generic",
     "Returns the type of a key.", Type},
    {"unlink", -2, kWrite | kFast | kFsyncs, 1, -1, 1, "generic",
     "Deletes keys.", Del},
};

void UnknownCommand(resp::ReplyWriter& out, Args args) {
  std::string text = "ERR unknown command '" +
                     std::string(args[0].substr(0, 128)) +
                     "', with args beginning with: ";
  std::string listed;
  for (size_t i = 1; i < args.size() && listed.size() < 128; ++i) {
    const std::string_view arg = args[i].substr(0, 128 - listed.size());
    listed += '\'';
    listed.append(arg.data(), arg.size());
    listed += "' ";
  }
  out.Error(text + listed);
}

}  // namespace

std::span<const CommandSpec> AllCommands() { return kCommands; }

const CommandSpec* FindCommand(std::string_view name) {
  if (name.size() > 32) return nullptr;
  char lower[32];
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    lower[i] = c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
  }
  const std::string_view key(lower, name.size());
  const CommandSpec* end = std::end(kCommands);
  const CommandSpec* it = std::lower_bound(
      std::begin(kCommands), end, key,
      [](const CommandSpec& s, std::string_view k) { return s.name < k; });
  if (it == end || it->name != key) return nullptr;
  return it;
}

namespace {

enum class Outcome { kUnknown, kRejected, kQueued, kRan };

bool CrossSlot(const CommandSpec& spec, Args args) {
  const int n = static_cast<int>(args.size());
  const int last = spec.last_key < 0 ? n + spec.last_key : spec.last_key;
  const uint16_t first = KeySlot(args[spec.first_key]);
  for (int i = spec.first_key + spec.key_step; i <= last && i < n;
       i += spec.key_step) {
    if (KeySlot(args[i]) != first) return true;
  }
  return false;
}

Outcome Run(CommandContext& ctx, Args args, const CommandSpec* spec) {
  Session& session = ctx.session;
  ++session.commands;
  const auto refuse_in_multi = [&session] {
    if (session.in_multi) session.multi_failed = true;
  };
  if (spec == nullptr) {
    refuse_in_multi();
    UnknownCommand(ctx.out, args);
    return Outcome::kUnknown;
  }
  if (ctx.host.RequiresPassword() && !session.authenticated &&
      (spec->flags & kNoAuth) == 0) {
    refuse_in_multi();
    ctx.out.Error("NOAUTH Authentication required.");
    return Outcome::kRejected;
  }
  const int n = static_cast<int>(args.size());
  if ((spec->arity > 0 && n != spec->arity) ||
      (spec->arity < 0 && n < -spec->arity)) {
    refuse_in_multi();
    ReplyWrongArity(ctx.out, spec->name);
    return Outcome::kRejected;
  }
  // Emulated cluster mode refuses a multi-key command over several slots,
  // as a real cluster does (a client tested here then works on one).
  if (spec->last_key != spec->first_key && spec->first_key > 0 &&
      ctx.host.Cluster() != nullptr && CrossSlot(*spec, args)) {
    refuse_in_multi();
    ctx.out.Error("CROSSSLOT Keys in request don't hash to the same slot");
    return Outcome::kRejected;
  }
  if (session.in_multi && (spec->flags & kNoMulti) == 0) {
    session.queued.emplace_back(args.begin(), args.end());
    ctx.out.SimpleString("QUEUED");
    return Outcome::kQueued;
  }
  spec->handler(ctx, args);
  return Outcome::kRan;
}

}  // namespace

void Dispatch(CommandContext& ctx, Args args) {
  const CommandSpec* spec = FindCommand(args[0]);
  CommandStats* stats = ctx.host.Stats();
  if (stats == nullptr) {
    (void)Run(ctx, args, spec);
    return;
  }
  // Counted through a StatsWriter over the connection's real writer (under
  // EXEC: the outer one's, so the queued command's errors count once, as
  // its own and not as EXEC's).
  Session& session = ctx.session;
  StatsWriter* const outer = session.stats_writer;
  StatsWriter writer(outer != nullptr ? outer->inner() : ctx.out, *stats);
  CommandContext counted{session, ctx.keyspace, ctx.host, writer};
  session.stats_writer = &writer;
  const auto start = std::chrono::steady_clock::now();
  const Outcome outcome = Run(counted, args, spec);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  session.stats_writer = outer;
  if (outcome == Outcome::kRan) {
    stats->RecordCall(*spec, static_cast<uint64_t>(nanos), writer.errors() > 0);
  } else if (outcome == Outcome::kRejected) {
    stats->RecordRejected(*spec);
  }
}

}  // namespace shardfilter::commands
