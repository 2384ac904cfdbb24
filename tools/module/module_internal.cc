#include "tools/module/module_internal.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>

#include "shardfilter/engine/export.h"
#include "tools/commands/util.h"
#include "tools/module/filter_value.h"
#include "tools/module/module_keyspace.h"
#include "tools/module/module_memory.h"
#include "tools/module/module_staging.h"
#include "tools/module/module_type.h"

namespace shardfilter::module {
namespace {

std::string_view View(RedisModuleString* s) {
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(s, &len);
  return {p, len};
}

bool ParseU64(std::string_view s, uint64_t* out) {
  int64_t v = 0;
  if (!commands::ParseLongLong(s, &v) || v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

int ReplyError(RedisModuleCtx* ctx, const std::string& text) {
  return RedisModule_ReplyWithError(ctx, text.c_str());
}

// The SFM.* commands change keys in ways no client may ask for (a value
// replaced by a pending one, a spec with any seed or budget): they are
// accepted only where Redis itself must obey (module_memory.h), from the
// master's replication stream or an AOF being loaded. False after
// replying to anyone else.
bool AcceptInternal(RedisModuleCtx* ctx, const char* name) {
  if (CommandMustObey(ctx)) return true;
  ReplyError(ctx, std::string("ERR shardfilter: ") + name +
                      " is internal (accepted only from the master or while "
                      "loading); use the BF.*/CF.*/SF.* commands");
  return false;
}

// A restore SFM.LOADCHUNK is gathering.
struct StagedRestore {
  uint64_t id = 0;
  uint64_t filled = 0;  // bytes received, in order
  std::unique_ptr<commands::StagingBuffer> bytes;  // size(): the dump's
};
// By database and key ("<db>:<key>"): one restore per key at a time.
std::unordered_map<std::string, StagedRestore> g_restores;

// Restore ids: distinct for the restores of one process, from a random
// start so that two processes writing one AOF in turn rarely reuse one
// (an id only has to differ from the previous restore of the same key).
uint64_t NextRestoreId() {
  static uint64_t next = std::random_device{}() & 0xFFFFFFFFull;
  next = (next + 1) & ((uint64_t{1} << 62) - 1);
  return next;
}

}  // namespace

// SFM.CREATE key spec: creates a filter with exactly `spec`, as the master
// resolved it (its budget, MAX-FILTER-BYTES included).
int SfmCreate(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 3) return RedisModule_WrongArity(ctx);
  if (!AcceptInternal(ctx, "SFM.CREATE")) return REDISMODULE_OK;
  auto spec = DecodeSpec(View(argv[2]));
  if (!spec.ok()) return ReplyError(ctx, "ERR " + spec.status().message());
  const ObeyScope obey(true);
  ModuleKeyspace ks(ctx, g_options, /*write=*/true, /*obey=*/true);
  const std::string_view key = View(argv[1]);
  if (ks.Probe(key, nullptr) != KeyState::kEmpty) {
    return RedisModule_ReplyWithError(ctx, "ERR item exists");
  }
  auto f = ShardedFilter::Create(*spec, g_budget);
  if (!f.ok()) return ReplyError(ctx, "ERR " + f.status().message());
  auto value = std::make_unique<FilterValue>();
  value->filter = std::move(f).value();
  if (!ks.Install(key, std::move(value))) {
    return RedisModule_ReplyWithError(ctx, "ERR cannot set the key");
  }
  ++g_counters.filters_created;
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// SFM.CHUNK key i n bytes: part i (0-based) of the n parts of a value's
// envelope; part 0 replaces the key with a pending value, part n-1
// decodes it (a damaged envelope leaves an unavailable value, as RDB
// loading does).
int SfmChunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 5) return RedisModule_WrongArity(ctx);
  if (!AcceptInternal(ctx, "SFM.CHUNK")) return REDISMODULE_OK;
  int64_t i = 0, n = 0;
  if (!commands::ParseLongLong(View(argv[2]), &i) ||
      !commands::ParseLongLong(View(argv[3]), &n) || n < 1 || i < 0 || i >= n) {
    return RedisModule_ReplyWithError(ctx, "ERR invalid chunk index");
  }
  const ObeyScope obey(true);
  ModuleKeyspace ks(ctx, g_options, /*write=*/true, /*obey=*/true);
  const std::string_view key = View(argv[1]);
  FilterValue* v = nullptr;
  const KeyState state = ks.Probe(key, &v);
  if (i == 0) {
    if (state == KeyState::kOtherType) {
      return ReplyError(ctx, std::string(commands::kWrongTypeError));
    }
    auto fresh = std::make_unique<FilterValue>();
    fresh->pending = true;
    v = fresh.get();
    if (!ks.Install(key, std::move(fresh))) {
      return RedisModule_ReplyWithError(ctx, "ERR cannot set the key");
    }
  } else if (state != KeyState::kPending ||
             v->damage != std::to_string(i) + "/" + std::to_string(n)) {
    return RedisModule_ReplyWithError(ctx, "ERR chunk out of sequence");
  }
  v->raw.append(View(argv[4]));
  if (i + 1 < n) {
    // The next expected part, kept in `damage` while pending.
    v->damage = std::to_string(i + 1) + "/" + std::to_string(n);
  } else {
    std::unique_ptr<FilterValue> done =
        ValueFromBytes(std::move(v->raw), g_budget);
    ++(done->available() ? g_counters.values_loaded
                         : g_counters.unavailable_loaded);
    if (!ks.Install(key, std::move(done))) {
      return RedisModule_ReplyWithError(ctx, "ERR cannot set the key");
    }
  }
  RedisModule_ReplicateVerbatim(ctx);
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

// SFM.LOADCHUNK key id offset total bytes (module_internal.h). Only from
// the master or the AOF, which are obeyed: nothing here is refused for
// this server's limits.
int SfmLoadChunk(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc != 6) return RedisModule_WrongArity(ctx);
  if (!AcceptInternal(ctx, "SFM.LOADCHUNK")) return REDISMODULE_OK;
  uint64_t id = 0, offset = 0, total = 0;
  if (!ParseU64(View(argv[2]), &id) || !ParseU64(View(argv[3]), &offset) ||
      !ParseU64(View(argv[4]), &total) || total == 0) {
    return RedisModule_ReplyWithError(ctx, "ERR invalid restore chunk");
  }
  const std::string_view key = View(argv[1]), data = View(argv[5]);
  const ObeyScope obey(true);
  const std::string slot =
      std::to_string(RedisModule_GetSelectedDb(ctx)) + ":" + std::string(key);
  if (offset == 0) {
    g_restores.erase(slot);  // an unfinished older restore of the key
    auto staged = NewRedisStaging(ctx, total, "a replicated restore", true);
    if (!staged.ok()) return ReplyError(ctx, "ERR " + staged.status().message());
    g_restores[slot] = StagedRestore{id, 0, std::move(staged).value()};
  }
  auto it = g_restores.find(slot);
  if (it == g_restores.end() || it->second.id != id ||
      it->second.filled != offset || it->second.bytes->size() != total ||
      data.size() > total - offset) {
    if (it != g_restores.end()) g_restores.erase(it);
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                    "shardfilter: SFM.LOADCHUNK for key '%.*s' out of "
                    "sequence (restore %llu at offset %llu): its restore is "
                    "dropped",
                    static_cast<int>(key.size()), key.data(),
                    static_cast<unsigned long long>(id),
                    static_cast<unsigned long long>(offset));
    return RedisModule_ReplyWithError(ctx, "ERR restore chunk out of sequence");
  }
  StagedRestore& r = it->second;
  std::memcpy(r.bytes->data() + r.filled, data.data(), data.size());
  r.filled += data.size();
  // This server's own AOF gets the chunks it accepted.
  RedisModule_ReplicateVerbatim(ctx);
  if (r.filled < total) return RedisModule_ReplyWithSimpleString(ctx, "OK");
  const StagedRestore done = std::move(r);
  g_restores.erase(it);
  ModuleKeyspace ks(ctx, g_options, /*write=*/true, /*obey=*/true);
  if (ks.Probe(key, nullptr) != KeyState::kEmpty) {
    return RedisModule_ReplyWithError(ctx, "ERR item exists");
  }
  const std::string_view bytes = done.bytes->view();
  auto value = std::make_unique<FilterValue>();
  auto f = LoadExportedFilter(bytes, g_budget);
  if (f.ok()) {
    value->filter = std::move(f).value();
    ++g_counters.values_loaded;
  } else {
    // The master restored it: a dump this module cannot decode (a newer
    // format) is kept, in an envelope, as an unavailable value that a
    // newer module reads, as RDB loading keeps it.
    value = ValueFromBytes(EncodeEnvelope(bytes), g_budget);
    ++g_counters.unavailable_loaded;
    RedisModule_Log(ctx, REDISMODULE_LOGLEVEL_WARNING,
                    "shardfilter: the restored filter at key '%.*s' is "
                    "unavailable (%s); its bytes are kept",
                    static_cast<int>(key.size()), key.data(),
                    f.status().ToString().c_str());
  }
  if (!ks.Install(key, std::move(value))) {
    return RedisModule_ReplyWithError(ctx, "ERR cannot set the key");
  }
  return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

void ReplicateRestore(RedisModuleCtx* ctx, std::string_view key,
                      std::string_view bytes) {
  const long long id = static_cast<long long>(NextRestoreId());
  const long long total = static_cast<long long>(bytes.size());
  for (size_t at = 0; at < bytes.size(); at += kAofChunkBytes) {
    const size_t len = std::min(kAofChunkBytes, bytes.size() - at);
    RedisModule_Replicate(ctx, kLoadChunkCommand, "blllb", key.data(),
                          key.size(), id, static_cast<long long>(at), total,
                          bytes.data() + at, len);
  }
}

void DropReplicatedRestores() { g_restores.clear(); }

}  // namespace shardfilter::module
