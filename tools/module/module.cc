// shardfilter.so: RedisModule_OnLoad, load arguments, and the commands.
//
// Every BF.* / CF.* command of the host-independent command layer
// (tools/commands/) is registered with its flags and key spec; a command
// runs its handler against a ModuleKeyspace (Redis's keyspace) and a
// ModuleWriter (RedisModule_ReplyWith*). The module's own SFM.* commands,
// which serve persistence and replication, are in module_internal.h.
//
// Replication (deterministic: filters are seeded, so a replica applying
// the same operations holds identical bits). A command that created a
// filter replicates SFM.CREATE with the resolved spec (shards, budget and
// seed included), never its own arguments, so a replica loaded with other
// options cannot diverge; a command that added or removed items is then
// replicated verbatim (on the replica the key exists, so nothing is
// created again). Redis wraps the two in MULTI/EXEC. A LOADCHUNK sequence
// replicates nothing until its last chunk, which replicates the whole
// restore as SFM.LOADCHUNK (module_internal.h).
//
// The command layer's per-connection state (Session) is kept per Redis
// client id, except for LOADCHUNK sequences from the master or the AOF,
// which all arrive through one client and are kept per key.

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shardfilter/filters/memory_advice.h"
#include "tools/commands/command_table.h"
#include "tools/commands/util.h"
#include "tools/module/module_command_info.h"
#include "tools/module/module_internal.h"
#include "tools/module/module_keyspace.h"
#include "tools/module/module_memory.h"
#include "tools/module/module_type.h"
#include "tools/module/module_writer.h"
#include "tools/module/redismodule_api.h"

namespace shardfilter::module {

ModuleOptions g_options;

namespace {

// The BF/CF commands registered, by trampoline index.
std::vector<const commands::CommandSpec*> g_specs;
// Whether each registered command is a BF/CF.LOADCHUNK.
std::vector<bool> g_is_loadchunk;
// The command layer's per-connection state (SCANDUMP / LOADCHUNK
// progress), by Redis client id; dropped when the client disconnects.
std::unordered_map<unsigned long long, commands::Session> g_sessions;
// BF/CF.LOADCHUNK sequences from the master or an AOF (written verbatim by
// modules that replicated them so), by database and key ("<db>:<key>"):
// those all arrive through one client, on which two clients' sequences
// interleave. Dropped once complete, and when a load starts or ends.
std::unordered_map<std::string, commands::Session> g_key_sessions;

void OnClientChange(RedisModuleCtx*, RedisModuleEvent, uint64_t subevent,
                    void* data) {
  if (subevent != REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED) return;
  g_sessions.erase(static_cast<RedisModuleClientInfoV1*>(data)->id);
}

// A load (RDB, AOF, a replica's full sync) starts or ends: no obeyed
// restore spans it.
void OnLoading(RedisModuleCtx*, RedisModuleEvent, uint64_t, void*) {
  g_key_sessions.clear();
  DropReplicatedRestores();
}
// The command layer's host services, as far as BF/CF commands reach them
// (the generic commands are Redis's own).
class ModuleHost final : public commands::Host {
 public:
  bool RequiresPassword() const override { return false; }
  bool CheckPassword(std::string_view, std::string_view) const override {
    return true;
  }
  bool AppendInfoSection(std::string_view, std::string*) override {
    return false;
  }
  std::vector<std::pair<std::string, std::string>> ConfigValues()
      const override {
    return {};
  }
  std::string ClientList(const commands::Session&) override { return ""; }
  void RequestShutdown() override {}
};

std::string_view View(RedisModuleString* s) {
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(s, &len);
  return {p, len};
}

// Replies for a key the command cannot use; true when it did. A read of a
// key of another Redis type goes on to the command layer, which answers as
// RedisBloom does (BF/CF.EXISTS, MEXISTS and CF.COUNT: 0; the rest
// WRONGTYPE; docs/design.md "Errors are never answers"); a write is
// refused here, before anything could touch the other type's value.
bool RefuseKey(RedisModuleCtx* ctx, ModuleKeyspace& ks, std::string_view key,
               bool write) {
  FilterValue* v = nullptr;
  switch (ks.Probe(key, &v)) {
    case KeyState::kEmpty:
    case KeyState::kFilter:
      return false;
    case KeyState::kOtherType:
      if (!write) return false;
      RedisModule_ReplyWithError(
          ctx, std::string(commands::kWrongTypeError).c_str());
      return true;
    case KeyState::kPending:
      RedisModule_ReplyWithError(
          ctx,
          "ERR shardfilter: this filter is being restored (an "
          "incomplete SFM.CHUNK sequence)");
      return true;
    case KeyState::kUnavailable: {
      const std::string text =
          "ERR shardfilter: this filter is unavailable: " + v->damage;
      RedisModule_ReplyWithError(ctx, text.c_str());
      return true;
    }
  }
  return false;
}

void ReplicateEffects(RedisModuleCtx* ctx, const ModuleKeyspace& ks,
                      std::string_view key) {
  if (ks.created().has_value()) {
    const std::string spec = EncodeSpec(*ks.created());
    RedisModule_Replicate(ctx, kCreateCommand, "bb", key.data(), key.size(),
                          spec.data(), spec.size());
  }
  if (ks.mutated()) RedisModule_ReplicateVerbatim(ctx);
}

int RunCommand(size_t index, RedisModuleCtx* ctx, RedisModuleString** argv,
               int argc) {
  const commands::CommandSpec& spec = *g_specs[index];
  // The arguments as views, on the stack for the usual sizes.
  std::array<std::string_view, 32> inline_args;
  std::vector<std::string_view> heap_args;
  std::span<std::string_view> args;
  if (static_cast<size_t>(argc) <= inline_args.size()) {
    args = std::span(inline_args.data(), static_cast<size_t>(argc));
  } else {
    heap_args.resize(static_cast<size_t>(argc));
    args = heap_args;
  }
  for (int i = 0; i < argc; ++i) args[i] = View(argv[i]);
  if ((spec.arity > 0 && argc != spec.arity) ||
      (spec.arity < 0 && argc < -spec.arity)) {
    return RedisModule_WrongArity(ctx);
  }
  const bool write = (spec.flags & commands::kWrite) != 0;
  const int flags = RedisModule_GetContextFlags(ctx);
  // The master's and the AOF's writes are applied whatever this server's
  // own limits say (module_memory.h).
  const bool obeyed = MustObey(flags);
  const ObeyScope obey(obeyed);
  ModuleKeyspace ks(ctx, g_options, write, obeyed);
  const std::string_view key = args[1];  // every BF/CF command has one
  ks.SetCommandKey(argv[1]);
  if (RefuseKey(ctx, ks, key, write)) return REDISMODULE_OK;
  ModuleWriter writer(ctx, flags);
  ModuleHost host;
  std::string by_key;  // an obeyed LOADCHUNK: its sequence is the key's
  commands::Session* session = nullptr;
  if (obeyed && g_is_loadchunk[index]) {
    by_key = std::to_string(RedisModule_GetSelectedDb(ctx)) + ":" +
             std::string(key);
    session = &g_key_sessions[by_key];
  } else {
    const unsigned long long client = RedisModule_GetClientId(ctx);
    session = &g_sessions[client];
    session->id = client;
  }
  commands::CommandContext cctx{*session, ks, host, writer};
  spec.handler(cctx, args);
  if (!by_key.empty() && session->load == nullptr) {
    g_key_sessions.erase(by_key);
  }
  // A completed LOADCHUNK restore replicated itself (ModuleKeyspace::
  // Restore); the other chunks change nothing anywhere.
  if (write) ReplicateEffects(ctx, ks, key);
  return REDISMODULE_OK;
}

// Module commands cannot carry user data: one trampoline per command.
constexpr size_t kMaxCommands = 64;
template <size_t I>
int Trampoline(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  return RunCommand(I, ctx, argv, argc);
}
template <size_t... I>
constexpr std::array<RedisModuleCmdFunc, sizeof...(I)> MakeTrampolines(
    std::index_sequence<I...>) {
  return {&Trampoline<I>...};
}
constexpr auto kTrampolines =
    MakeTrampolines(std::make_index_sequence<kMaxCommands>());

// INFO shardfilter (and INFO everything / modules).
void Info(RedisModuleInfoCtx* ctx, int) {
  RedisModule_InfoAddSection(ctx, "");
  RedisModule_InfoAddFieldCString(ctx, "prefix", g_options.prefix.c_str());
  RedisModule_InfoAddFieldULongLong(ctx, "shards", g_options.shards);
  RedisModule_InfoAddFieldULongLong(ctx, "max_filter_bytes",
                                    g_options.max_filter_bytes);
  RedisModule_InfoAddFieldULongLong(ctx, "memory_budget", g_budget->limit());
  RedisModule_InfoAddFieldULongLong(ctx, "memory_budget_used",
                                    g_budget->used());
  RedisModule_InfoAddFieldCString(ctx, "huge_pages",
                                  g_options.huge_pages ? "yes" : "no");
  RedisModule_InfoAddFieldULongLong(ctx, "filters_created",
                                    g_counters.filters_created);
  RedisModule_InfoAddFieldULongLong(ctx, "values_loaded",
                                    g_counters.values_loaded);
  RedisModule_InfoAddFieldULongLong(ctx, "unavailable_loaded",
                                    g_counters.unavailable_loaded);
  RedisModule_InfoAddFieldULongLong(ctx, "restores_refused",
                                    g_counters.restores_refused);
}

bool ParseU64(std::string_view s, uint64_t* out) {
  int64_t v = 0;
  if (!commands::ParseLongLong(s, &v) || v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

// PREFIX p | SHARDS n | MAX-FILTER-BYTES n | MEMORY-BUDGET size |
// HUGE-PAGES yes|no
bool ParseOptions(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  for (int i = 0; i < argc; i += 2) {
    const std::string name = commands::ToLower(View(argv[i]));
    if (i + 1 >= argc) {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                      "shardfilter: load argument %s needs a value",
                      name.c_str());
      return false;
    }
    const std::string_view value = View(argv[i + 1]);
    uint64_t n = 0;
    bool ok = true;
    if (name == "prefix") {
      g_options.prefix = commands::ToLower(value);
      ok = !value.empty() && value.find(' ') == std::string_view::npos;
    } else if (name == "shards") {
      ok = ParseU64(value, &n) && n <= kMaxShards && (n & (n - 1)) == 0;
      g_options.shards = static_cast<uint32_t>(n);
    } else if (name == "max-filter-bytes") {
      ok = ParseU64(value, &n) && n > 0;
      g_options.max_filter_bytes = n;
    } else if (name == "memory-budget") {
      auto bytes = ParseByteSize(value);
      ok = bytes.ok() && *bytes > 0;
      if (ok) g_options.memory_budget = *bytes;
    } else if (name == "huge-pages") {
      ok = value == "yes" || value == "no";
      g_options.huge_pages = value == "yes";
    } else {
      ok = false;
    }
    if (!ok) {
      RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                      "shardfilter: bad load argument %s %.*s", name.c_str(),
                      static_cast<int>(value.size()), value.data());
      return false;
    }
  }
  return true;
}

std::string Prefixed(const char* name) {
  return g_options.prefix.empty() ? std::string(name)
                                  : g_options.prefix + "." + name;
}

bool RegisterCommands(RedisModuleCtx* ctx) {
  g_specs.clear();
  g_is_loadchunk.clear();
  for (const commands::CommandSpec& spec : commands::AllCommands()) {
    const std::string_view group = spec.group;
    if (group != "bf" && group != "cf" && group != "sf") continue;
    if ((spec.flags & commands::kServerOnly) != 0) continue;
    if (g_specs.size() == kMaxCommands) return false;
    const size_t index = g_specs.size();
    g_specs.push_back(&spec);
    const std::string_view base(spec.name);
    g_is_loadchunk.push_back(base.size() >= 10 &&
                             base.substr(base.size() - 10) == ".loadchunk");
    const std::string name = Prefixed(spec.name);
    const bool write = (spec.flags & commands::kWrite) != 0;
    std::string flags = write ? "write" : "readonly";
    if (spec.flags & commands::kDenyOom) flags += " deny-oom";
    if (spec.flags & commands::kFast) flags += " fast";
    if (RedisModule_CreateCommand(ctx, name.c_str(), kTrampolines[index],
                                  flags.c_str(), spec.first_key, spec.last_key,
                                  spec.key_step) != REDISMODULE_OK) {
      return false;
    }
    SetKeySpecInfo(
        ctx, name, spec.summary,
        // RedisBloom checks arity itself (RedisModule_WrongArity): so does
        // the module for kModule commands, and COMMAND shows -1.
        (spec.flags & commands::kModule) != 0 ? 0 : spec.arity,
        write ? (std::string_view(spec.name) == "cf.del" ? KeyAccess::kRemove
                                                         : KeyAccess::kInsert)
              : KeyAccess::kRead);
  }
  // Never prefixed (RedisBloom has no SFM.*): an AOF or a replication
  // stream stays loadable whatever PREFIX the reading server uses.
  const struct {
    const char* name;
    RedisModuleCmdFunc fn;
    int arity;
  } internal[] = {{kCreateCommand, SfmCreate, 3},
                  {kChunkCommand, SfmChunk, 5},
                  {kLoadChunkCommand, SfmLoadChunk, 6}};
  for (const auto& c : internal) {
    if (RedisModule_CreateCommand(ctx, c.name, c.fn, "write deny-oom", 1, 1,
                                  1) != REDISMODULE_OK) {
      return false;
    }
    SetKeySpecInfo(ctx, c.name,
                   "shardfilter persistence and replication (internal).",
                   c.arity, KeyAccess::kOverwrite);
  }
  return true;
}

}  // namespace
}  // namespace shardfilter::module

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(
    RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  using namespace shardfilter::module;  // NOLINT
  if (!ResolveApi(ctx, "shardfilter", 1)) return REDISMODULE_ERR;
  g_options = ModuleOptions{};
  if (!ParseOptions(ctx, argv, argc)) return REDISMODULE_ERR;
  g_budget = std::make_shared<shardfilter::MemoryBudget>(
      g_options.memory_budget != 0 ? g_options.memory_budget
                                   : shardfilter::MemoryBudget::DefaultLimit());
  shardfilter::SetHugePageAdvice(g_options.huge_pages);
  // Filter tables come from Redis's allocator: maxmemory, INFO memory and
  // the deny-oom flag of the write commands count them. (No table exists
  // yet: the data type is registered below.)
  shardfilter::SetTableAllocator(RedisModule_Alloc, RedisModule_Free);
  // rdb_load checks RedisModule_IsIOError instead of Redis exiting on a
  // short read (module_type.h).
  RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);
  if (!RegisterFilterType(ctx, kChunkCommand)) {
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                    "shardfilter: cannot create the data type %s", kTypeName);
    return REDISMODULE_ERR;
  }
  if (!RegisterCommands(ctx)) {
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                    "shardfilter: cannot register the commands (a name is "
                    "taken? load with PREFIX <p> beside RedisBloom)");
    return REDISMODULE_ERR;
  }
  (void)RedisModule_RegisterInfoFunc(ctx, Info);
  (void)RedisModule_SubscribeToServerEvent(
      ctx, RedisModuleEvent{REDISMODULE_EVENT_CLIENT_CHANGE, 1},
      OnClientChange);
  (void)RedisModule_SubscribeToServerEvent(
      ctx, RedisModuleEvent{REDISMODULE_EVENT_LOADING, 1}, OnLoading);
  RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_NOTICE,
                  "shardfilter: loaded (prefix '%s', shards %u, max filter "
                  "bytes %llu, memory budget %llu, huge pages %s)",
                  g_options.prefix.c_str(), g_options.shards,
                  static_cast<unsigned long long>(g_options.max_filter_bytes),
                  static_cast<unsigned long long>(g_budget->limit()),
                  g_options.huge_pages ? "yes" : "no");
  return REDISMODULE_OK;
}
