// ModuleWriter: the command layer's ReplyWriter (tools/resp/reply_writer.h)
// over RedisModule_ReplyWith*. Redis itself encodes for the client's
// protocol (maps, sets, booleans and doubles fall back under RESP2 as the
// interface specifies), so the writer only forwards; protocol() reads
// REDISMODULE_CTX_FLAGS_RESP3 so that handlers choosing a reply shape per
// protocol (RedisBloom's) see the client's.
//
// Thread safety: one per command, on Redis's main thread.
#ifndef SHARDFILTER_TOOLS_MODULE_MODULE_WRITER_H_
#define SHARDFILTER_TOOLS_MODULE_MODULE_WRITER_H_

#include "tools/module/redismodule_api.h"
#include "tools/resp/reply_writer.h"

namespace shardfilter::module {

class ModuleWriter final : public resp::ReplyWriter {
 public:
  explicit ModuleWriter(RedisModuleCtx* ctx);
  // `context_flags`: RedisModule_GetContextFlags(ctx), already read.
  ModuleWriter(RedisModuleCtx* ctx, int context_flags);

  int protocol() const override { return protocol_; }
  // The protocol is the client's (HELLO is Redis's own command).
  void SetProtocol(int) override {}
  void SimpleString(std::string_view s) override;
  void Error(std::string_view text) override;
  void Integer(int64_t v) override;
  void Bulk(std::string_view s) override;
  void Null() override;
  void NullArray() override;
  void Array(size_t n) override;
  void Map(size_t pairs) override;
  void Set(size_t n) override;
  void Boolean(bool b) override;
  void Double(double d) override;
  void Verbatim(std::string_view format, std::string_view s) override;

 private:
  RedisModuleCtx* ctx_;
  int protocol_;
};

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_MODULE_WRITER_H_
