#include "tools/module/module_writer.h"

#include <string>

namespace shardfilter::module {
namespace {

// Simple strings and errors are C strings on the API, one line on the wire.
std::string OneLine(std::string_view s) {
  std::string line(s);
  for (char& c : line) {
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  }
  return line;
}

}  // namespace

ModuleWriter::ModuleWriter(RedisModuleCtx* ctx)
    : ModuleWriter(ctx, RedisModule_GetContextFlags(ctx)) {}

ModuleWriter::ModuleWriter(RedisModuleCtx* ctx, int context_flags)
    : ctx_(ctx),
      protocol_((context_flags & REDISMODULE_CTX_FLAGS_RESP3) != 0 ? 3 : 2) {}

void ModuleWriter::SimpleString(std::string_view s) {
  RedisModule_ReplyWithSimpleString(ctx_, OneLine(s).c_str());
}

void ModuleWriter::Error(std::string_view text) {
  // Redis takes the first word as the error code ("ERR", "WRONGTYPE", or
  // RedisBloom's bare "Bad ..."), as the server writes it.
  RedisModule_ReplyWithError(ctx_, OneLine(text).c_str());
}

void ModuleWriter::Integer(int64_t v) {
  RedisModule_ReplyWithLongLong(ctx_, v);
}

void ModuleWriter::Bulk(std::string_view s) {
  RedisModule_ReplyWithStringBuffer(ctx_, s.data(), s.size());
}

void ModuleWriter::Null() { RedisModule_ReplyWithNull(ctx_); }

void ModuleWriter::NullArray() { RedisModule_ReplyWithNullArray(ctx_); }

void ModuleWriter::Array(size_t n) {
  RedisModule_ReplyWithArray(ctx_, static_cast<long>(n));
}

void ModuleWriter::Map(size_t pairs) {
  RedisModule_ReplyWithMap(ctx_, static_cast<long>(pairs));
}

void ModuleWriter::Set(size_t n) {
  RedisModule_ReplyWithSet(ctx_, static_cast<long>(n));
}

void ModuleWriter::Boolean(bool b) { RedisModule_ReplyWithBool(ctx_, b); }

void ModuleWriter::Double(double d) { RedisModule_ReplyWithDouble(ctx_, d); }

void ModuleWriter::Verbatim(std::string_view format, std::string_view s) {
  // 7.0's RedisModule_ReplyWithVerbatimString is always "txt"; a bulk string
  // under RESP2 either way.
  (void)format;
  RedisModule_ReplyWithVerbatimString(ctx_, s.data(), s.size());
}

}  // namespace shardfilter::module
