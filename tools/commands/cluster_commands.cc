// Cluster emulation: CLUSTER SLOTS | SHARDS | NODES | INFO | MYID | KEYSLOT |
// COUNTKEYSINSLOT | GETKEYSINSLOT | HELP, READONLY, READWRITE, ASKING, as a
// one-node cluster owning slots 0-16383 (Host::Cluster() names the node).
// Reply shapes are Redis 7.0's, RESP2 and RESP3 (docs/server.md, "Cluster
// emulation"). Without a node: Redis's "cluster support disabled".
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "tools/commands/command_table.h"
#include "tools/commands/key_slot.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

constexpr std::string_view kDisabled =
    "ERR This instance has cluster support disabled";
constexpr int64_t kLastSlot = kClusterSlots - 1;

// Redis 7.0's CLUSTER subcommands; arity as Redis checks it (0 = not
// emulated: refused with a clear error in cluster mode).
struct Subcommand {
  const char* name;
  int arity;
};
constexpr Subcommand kSubcommands[] = {
    {"addslots", 0},
    {"addslotsrange", 0},
    {"bumpepoch", 0},
    {"count-failure-reports", 0},
    {"countkeysinslot", 3},
    {"delslots", 0},
    {"delslotsrange", 0},
    {"failover", 0},
    {"flushslots", 0},
    {"forget", 0},
    {"getkeysinslot", 4},
    {"help", 2},
    {"info", 2},
    {"keyslot", 3},
    {"links", 0},
    {"meet", 0},
    {"myid", 2},
    {"nodes", 2},
    {"replicas", 0},
    {"replicate", 0},
    {"reset", 0},
    {"saveconfig", 0},
    {"set-config-epoch", 0},
    {"setslot", 0},
    {"shards", 2},
    {"slaves", 0},
    {"slots", 2},
};

constexpr const char* kHelp[] = {
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node.",
    "SLOTS",
    "    Return information about slots range mappings.",
    "SHARDS",
    "    Return information about slot range mappings and the nodes.",
    "HELP",
    "    Prints this help.",
    "(shardfilter-server emulates a one-node cluster owning every slot.)",
};

const Subcommand* FindSubcommand(std::string_view name) {
  for (const Subcommand& s : kSubcommands) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

// getLongLongFromObjectOrReply: a strict integer or Redis's error.
bool ParseInteger(CommandContext& ctx, std::string_view arg, int64_t* v) {
  if (!ParseLongLong(arg, v)) {
    ctx.out.Error("ERR value is not an integer or out of range");
    return false;
  }
  return true;
}

// Up to `max` keys of one slot, in byte order. The keyspace counts keys per
// slot but keeps no list per slot: this reads SCAN pages until it has
// min(max, the slot's count) keys, so an empty slot costs nothing and a
// full one about keys / slots' share of the keyspace per key returned.
std::vector<std::string> KeysInSlot(CommandContext& ctx, uint16_t slot,
                                    int64_t max) {
  std::vector<std::string> out;
  const uint64_t want = std::min<uint64_t>(static_cast<uint64_t>(max),
                                           ctx.keyspace.CountInSlot(slot));
  uint64_t cursor = 0;
  while (out.size() < want) {
    ScanPage page = ctx.keyspace.Scan(cursor, 1024);
    for (std::string& k : page.keys) {
      if (out.size() < want && KeySlot(k) == slot) out.push_back(std::move(k));
    }
    cursor = page.next;
    if (cursor == 0) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ReplySlots(CommandContext& ctx, const ClusterNode& node) {
  resp::ReplyWriter& out = ctx.out;
  out.Array(1);
  out.Array(3);
  out.Integer(0);
  out.Integer(kLastSlot);
  out.Array(4);  // ip, port, id, networking metadata (none)
  out.Bulk(node.ip);
  out.Integer(node.port);
  out.Bulk(node.id);
  out.Map(0);
}

void ReplyShards(CommandContext& ctx, const ClusterNode& node) {
  resp::ReplyWriter& out = ctx.out;
  out.Array(1);
  out.Map(2);
  out.Bulk("slots");
  out.Array(2);
  out.Integer(0);
  out.Integer(kLastSlot);
  out.Bulk("nodes");
  out.Array(1);
  out.Map(7);
  out.Bulk("id");
  out.Bulk(node.id);
  out.Bulk("port");
  out.Integer(node.port);
  out.Bulk("ip");
  out.Bulk(node.ip);
  out.Bulk("endpoint");
  out.Bulk(node.ip);
  out.Bulk("role");
  out.Bulk("master");
  out.Bulk("replication-offset");
  out.Integer(0);
  out.Bulk("health");
  out.Bulk("online");
}

std::string NodesText(const ClusterNode& node) {
  return node.id + " " + node.ip + ":" + std::to_string(node.port) + "@" +
         std::to_string(node.port + 10000) +
         " myself,master - 0 0 0 connected 0-" + std::to_string(kLastSlot) +
         "\n";
}

std::string InfoText() {
  static constexpr std::array<std::pair<const char*, const char*>, 12> kFields =
      {{
          {"cluster_state", "ok"},
          {"cluster_slots_assigned", "16384"},
          {"cluster_slots_ok", "16384"},
          {"cluster_slots_pfail", "0"},
          {"cluster_slots_fail", "0"},
          {"cluster_known_nodes", "1"},
          {"cluster_size", "1"},
          {"cluster_current_epoch", "0"},
          {"cluster_my_epoch", "0"},
          {"cluster_stats_messages_sent", "0"},
          {"cluster_stats_messages_received", "0"},
          {"total_cluster_links_buffer_limit_exceeded", "0"},
      }};
  std::string text;
  for (const auto& [name, value] : kFields) {
    text += name;
    text += ':';
    text += value;
    text += "\r\n";
  }
  return text;
}

}  // namespace

namespace handlers {

void Cluster(CommandContext& ctx, Args args) {
  const std::string sub = ToLower(args[1]);
  const Subcommand* s = FindSubcommand(sub);
  if (s == nullptr) {
    return ctx.out.Error("ERR unknown subcommand '" +
                         std::string(args[1].substr(0, 128)) +
                         "'. Try CLUSTER HELP.");
  }
  if (s->arity > 0 && static_cast<int>(args.size()) != s->arity) {
    return ReplyWrongArity(ctx.out, "cluster|" + sub);
  }
  const ClusterNode* node = ctx.host.Cluster();
  if (node == nullptr) return ctx.out.Error(kDisabled);
  if (s->arity == 0) {
    std::string upper = sub;
    for (char& c : upper) c = c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
    return ctx.out.Error("ERR CLUSTER " + upper +
                         " is not supported: shardfilter-server emulates a "
                         "one-node cluster owning every slot");
  }
  if (sub == "slots") return ReplySlots(ctx, *node);
  if (sub == "shards") return ReplyShards(ctx, *node);
  if (sub == "nodes") return ctx.out.Verbatim("txt", NodesText(*node));
  if (sub == "info") return ctx.out.Verbatim("txt", InfoText());
  if (sub == "myid") return ctx.out.Bulk(node->id);
  if (sub == "keyslot") return ctx.out.Integer(KeySlot(args[2]));
  if (sub == "help") {
    ctx.out.Array(std::size(kHelp));
    for (const char* line : kHelp) ctx.out.SimpleString(line);
    return;
  }
  if (sub == "countkeysinslot") {
    int64_t slot = 0;
    if (!ParseInteger(ctx, args[2], &slot)) return;
    if (slot < 0 || slot > kLastSlot) return ctx.out.Error("ERR Invalid slot");
    return ctx.out.Integer(static_cast<int64_t>(
        ctx.keyspace.CountInSlot(static_cast<uint16_t>(slot))));
  }
  // getkeysinslot: Redis parses the count first.
  int64_t max = 0, slot = 0;
  if (!ParseInteger(ctx, args[3], &max) || !ParseInteger(ctx, args[2], &slot)) {
    return;
  }
  if (slot < 0 || slot > kLastSlot || max < 0) {
    return ctx.out.Error("ERR Invalid slot or number of keys");
  }
  const std::vector<std::string> keys =
      KeysInSlot(ctx, static_cast<uint16_t>(slot), max);
  ctx.out.Array(keys.size());
  for (const std::string& k : keys) ctx.out.Bulk(k);
}

void ReadOnly(CommandContext& ctx, Args) {
  if (ctx.host.Cluster() == nullptr) return ctx.out.Error(kDisabled);
  ctx.out.SimpleString("OK");
}

void ReadWrite(CommandContext& ctx, Args) {
  if (ctx.host.Cluster() == nullptr) return ctx.out.Error(kDisabled);
  ctx.out.SimpleString("OK");
}

void Asking(CommandContext& ctx, Args) {
  if (ctx.host.Cluster() == nullptr) return ctx.out.Error(kDisabled);
  ctx.out.SimpleString("OK");
}

}  // namespace handlers
}  // namespace shardfilter::commands
