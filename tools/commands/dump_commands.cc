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
#include <cstring>
#include <string>

#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

constexpr char kMagic[8] = {'S', 'F', 'D', 'U', 'M', 'P', '0', '1'};
constexpr size_t kHeaderBytes = 16;
// Largest chunk (RedisBloom's MAX_SCANDUMP_SIZE), under the 512 MB bulk.
constexpr size_t kChunkBytes = 16u << 20;
// Largest dump LOADCHUNK accepts (the bytes are held until complete).
constexpr uint64_t kMaxDumpBytes = 64ull << 30;

void ScanDump(CommandContext& ctx, Args args, FilterType type) {
  const bool bloom = type == FilterType::kBloom;
  int64_t iter = 0;
  if (!ParseLongLong(args[2], &iter) || iter < 0) {
    return ctx.out.Error(bloom ? "Second argument must be numeric"
                               : "Invalid position");
  }
  TypedLookup found = LookupTyped(ctx, args[1], type);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (found.handle == nullptr) return ctx.out.Error(kNotFoundError);
  Session& s = ctx.session;
  if (iter == 0 || s.dump_key != args[1] || s.dump_bytes.empty()) {
    auto dump = ctx.keyspace.Dump(args[1]);
    if (!dump.ok()) return ctx.out.Error("ERR " + dump.status().message());
    s.dump_key = std::string(args[1]);
    s.dump_bytes = std::move(dump).value();
  }
  ctx.out.Array(2);
  if (iter == 0) {
    char header[kHeaderBytes];
    std::memcpy(header, kMagic, 8);
    uint64_t n = s.dump_bytes.size();
    for (int i = 0; i < 8; ++i) header[8 + i] = static_cast<char>(n >> (8 * i));
    ctx.out.Integer(1);
    return ctx.out.Bulk(std::string_view(header, kHeaderBytes));
  }
  const uint64_t offset = static_cast<uint64_t>(iter) - 1;
  if (offset >= s.dump_bytes.size()) {
    s.dump_key.clear();
    std::string().swap(s.dump_bytes);  // the last chunk was served
    ctx.out.Integer(0);
    return bloom ? ctx.out.Bulk("") : ctx.out.Null();
  }
  const size_t n =
      std::min<uint64_t>(kChunkBytes, s.dump_bytes.size() - offset);
  ctx.out.Integer(iter + static_cast<int64_t>(n));
  ctx.out.Bulk(std::string_view(s.dump_bytes).substr(offset, n));
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
    s.load_key = std::string(key);
    s.load_total = total;
    s.load_bytes.clear();
    return ctx.out.SimpleString("OK");
  }
  // The iterator SCANDUMP returned with a chunk is its end offset + 1.
  const uint64_t end = static_cast<uint64_t>(iter) - 1;
  if (s.load_key != key || end < data.size() ||
      end - data.size() != s.load_bytes.size() || end > s.load_total) {
    return ctx.out.Error(
        "ERR invalid chunk position (shardfilter: send the header, then "
        "every chunk in order, on one connection)");
  }
  s.load_bytes.append(data);
  if (s.load_bytes.size() < s.load_total) return ctx.out.SimpleString("OK");
  const std::string bytes = std::move(s.load_bytes);
  s.load_key.clear();
  s.load_bytes.clear();
  s.load_total = 0;
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
  TypedLookup loaded = LookupTyped(ctx, key, type);
  if (loaded.handle == nullptr) {  // a dump of the other family
    (void)ctx.keyspace.Delete(key);
    return ctx.out.Error(bloom ? "ERR the dump is not a Bloom filter's"
                               : "ERR the dump is not a cuckoo filter's");
  }
  ctx.out.SimpleString("OK");
}

}  // namespace

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
