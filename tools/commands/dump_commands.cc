// BF.SCANDUMP / BF.LOADCHUNK / CF.SCANDUMP / CF.LOADCHUNK in RedisBloom's
// shape, over shardfilter's own dump format (the engine's export:
// versioned, checksummed; RedisBloom's dumps cannot be loaded, nor ours by
// RedisBloom).
//
//   SCANDUMP key 0    -> [1, header]   header = "SFDUMP01" + u64 LE length
//   SCANDUMP key it   -> [it + n, the n dump bytes at offset it - 1]
//   SCANDUMP key end  -> [0, ""] (CF: [0, nil])
//   LOADCHUNK key it data, for every pair in order, on one connection.
//
// The dump is taken once, at iterator 0, as one consistent instant, and
// kept by the connection until its last chunk is served (RedisBloom reads
// the live filter at each call). LOADCHUNK gathers the chunks in the
// connection and creates the key, durably and all at once, when the last
// one arrives: until then the key does not exist.
//
// Both copies are memory a client makes the host hold between commands:
// each is a StagingBuffer (staging.h) of the host's, charged to its budget
// before it is taken (a LOADCHUNK header reserves the whole announced dump)
// and given back when the work completes or is abandoned (a newer header
// or SCANDUMP on the connection, the connection closed); a header past the
// host's MaxRestoreBytes, or beyond kMaxPendingRestores sequences pending
// in the process, is refused.
#include <atomic>
#include <cstring>
#include <string>

#include "shardfilter/engine/export.h"
#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

constexpr char kMagic[8] = {'S', 'F', 'D', 'U', 'M', 'P', '0', '1'};
constexpr size_t kHeaderBytes = 16;
// Largest chunk (RedisBloom's MAX_SCANDUMP_SIZE), under the 512 MB bulk.
constexpr size_t kChunkBytes = 16u << 20;
// Largest dump length a header may state at all.
constexpr uint64_t kMaxDumpBytes = 64ull << 30;
// LOADCHUNK sequences pending in the process (PendingRestore).
std::atomic<int> g_pending_restores{0};

// A staging buffer the host refused: over its budget (ResourceExhausted)
// answers as Redis does past maxmemory; anything else says why.
void ReplyStagingError(CommandContext& ctx, const Status& status) {
  if (status.code() == StatusCode::kResourceExhausted) {
    return ctx.out.Error(kOomError);
  }
  ctx.out.Error("ERR " + status.message());
}

void ScanDump(CommandContext& ctx, Args args, FilterType type) {
  const bool bloom = type == FilterType::kBloom;
  int64_t iter = 0;
  if (!ParseLongLong(args[2], &iter) || iter < 0) {
    return ctx.out.Error(bloom ? "Second argument must be numeric"
                               : "Invalid position");
  }
  TypedLookup found = LookupTyped(ctx, args[1], type);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (found.handle == nullptr) return ctx.out.Error(kNotFoundError);
  Session& s = ctx.session;
  if (iter == 0 || s.dump_key != args[1] || s.dump == nullptr) {
    // The connection's older copy goes back before a new one is taken.
    s.dump.reset();
    s.dump_key.clear();
    auto dump = ctx.keyspace.Dump(args[1]);
    if (!dump.ok()) return ctx.out.Error("ERR " + dump.status().message());
    auto staged = ctx.keyspace.NewStaging(dump->size(), "a SCANDUMP copy");
    if (!staged.ok()) return ReplyStagingError(ctx, staged.status());
    s.dump = std::move(staged).value();
    std::memcpy(s.dump->data(), dump->data(), dump->size());
    s.dump_key = std::string(args[1]);
  }
  const std::string_view bytes = s.dump->view();
  ctx.out.Array(2);
  if (iter == 0) {
    char header[kHeaderBytes];
    std::memcpy(header, kMagic, 8);
    uint64_t n = bytes.size();
    for (int i = 0; i < 8; ++i) header[8 + i] = static_cast<char>(n >> (8 * i));
    ctx.out.Integer(1);
    return ctx.out.Bulk(std::string_view(header, kHeaderBytes));
  }
  const uint64_t offset = static_cast<uint64_t>(iter) - 1;
  if (offset >= bytes.size()) {
    s.dump_key.clear();
    s.dump.reset();  // the last chunk was served
    ctx.out.Integer(0);
    return bloom ? ctx.out.Bulk("") : ctx.out.Null();
  }
  const size_t n = std::min<uint64_t>(kChunkBytes, bytes.size() - offset);
  ctx.out.Integer(iter + static_cast<int64_t>(n));
  ctx.out.Bulk(bytes.substr(offset, n));
}

void LoadChunk(CommandContext& ctx, Args args, FilterType type) {
  const bool bloom = type == FilterType::kBloom;
  int64_t iter = 0;
  if (!ParseLongLong(args[2], &iter) || iter <= 0) {
    return ctx.out.Error(bloom ? "ERR Second argument must be numeric"
                               : "Invalid position");
  }
  const std::string_view key = args[1], data = args[3];
  Session& s = ctx.session;
  if (iter == 1) {  // the header: a new load
    TypedLookup found = LookupTyped(ctx, key, type);
    if (found.handle != nullptr) return ctx.out.Error(kItemExistsError);
    if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
    if (ReplyIfUnreadable(ctx, key, found)) return;
    if (RefuseKeyName(ctx, key)) return;
    if (data.size() != kHeaderBytes ||
        std::memcmp(data.data(), kMagic, 8) != 0) {
      return ctx.out.Error(
          "ERR invalid header (not a shardfilter SCANDUMP; RedisBloom's dumps "
          "cannot be loaded)");
    }
    uint64_t total = 0;
    for (int i = 0; i < 8; ++i) {
      total |= uint64_t{static_cast<unsigned char>(data[8 + i])} << (8 * i);
    }
    if (total == 0 || total > kMaxDumpBytes) {
      return ctx.out.Error("ERR invalid header (dump length)");
    }
    if (total > ctx.keyspace.MaxRestoreBytes()) {
      return ctx.out.Error(
          "ERR the dump (" + std::to_string(total) +
          " bytes) is larger than this server restores (at most " +
          std::to_string(ctx.keyspace.MaxRestoreBytes()) + " bytes)");
    }
    // A new load abandons the connection's older one, whose bytes and slot
    // go back before new ones are taken.
    s.load.reset();
    auto pending =
        PendingRestore::Start(std::string(key), ctx.keyspace.MustObey());
    if (pending == nullptr) {
      return ctx.out.Error("ERR too many restores in progress (at most " +
                           std::to_string(kMaxPendingRestores) +
                           "; complete or abandon one)");
    }
    auto staged = ctx.keyspace.NewStaging(total, "a LOADCHUNK restore");
    if (!staged.ok()) return ReplyStagingError(ctx, staged.status());
    pending->bytes = std::move(staged).value();
    s.load = std::move(pending);
    return ctx.out.SimpleString("OK");
  }
  // The iterator SCANDUMP returned with a chunk is its end offset + 1.
  const uint64_t end = static_cast<uint64_t>(iter) - 1;
  PendingRestore* p = s.load.get();
  if (p == nullptr || p->key != key || end < data.size() ||
      end - data.size() != p->filled || end > p->bytes->size()) {
    return ctx.out.Error(
        "ERR invalid chunk position (shardfilter: send the header, then "
        "every chunk in order, on one connection)");
  }
  std::memcpy(p->bytes->data() + p->filled, data.data(), data.size());
  p->filled += data.size();
  if (p->filled < p->bytes->size()) return ctx.out.SimpleString("OK");
  // Complete: the staging goes back when `done` does, whatever follows.
  const std::unique_ptr<PendingRestore> done = std::move(s.load);
  const std::string_view bytes = done->bytes->view();
  // The dump's family is checked first, so nothing is created for a dump
  // of the other one.
  auto parsed = ParseExport(bytes);
  if (!parsed.ok()) {
    return ctx.out.Error("ERR could not load the dump: " +
                         parsed.status().message());
  }
  if (parsed->spec.type != type) {
    return ctx.out.Error(bloom ? "ERR the dump is not a Bloom filter's"
                               : "ERR the dump is not a cuckoo filter's");
  }
  const Status restored = ctx.keyspace.Restore(key, bytes);
  if (!restored.ok()) {
    if (restored.code() == StatusCode::kAlreadyExists) {
      return ctx.out.Error(kItemExistsError);
    }
    if (restored.code() == StatusCode::kResourceExhausted) {
      return ctx.out.Error(kOomError);
    }
    return ctx.out.Error("ERR could not load the dump: " + restored.message());
  }
  ctx.out.SimpleString("OK");
}

}  // namespace

std::unique_ptr<PendingRestore> PendingRestore::Start(std::string key,
                                                      bool obey) {
  // Taken first, then checked: concurrent headers never overshoot.
  if (g_pending_restores.fetch_add(1, std::memory_order_relaxed) >=
          kMaxPendingRestores &&
      !obey) {
    g_pending_restores.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  return std::unique_ptr<PendingRestore>(new PendingRestore(std::move(key)));
}

PendingRestore::~PendingRestore() {
  g_pending_restores.fetch_sub(1, std::memory_order_relaxed);
}

namespace handlers {

void BfScanDump(CommandContext& ctx, Args args) {
  ScanDump(ctx, args, FilterType::kBloom);
}
void CfScanDump(CommandContext& ctx, Args args) {
  ScanDump(ctx, args, FilterType::kCuckoo);
}
void BfLoadChunk(CommandContext& ctx, Args args) {
  LoadChunk(ctx, args, FilterType::kBloom);
}
void CfLoadChunk(CommandContext& ctx, Args args) {
  LoadChunk(ctx, args, FilterType::kCuckoo);
}

}  // namespace handlers
}  // namespace shardfilter::commands
