// ReplyWriter: how the command layer (tools/commands/) answers, whatever the
// host. The server writes RESP bytes into the connection's output buffer
// (RespWriter below); the Redis module maps each call onto
// RedisModule_ReplyWith* (ModuleWriter, tools/module/module_writer.h).
// Aggregates are announced with their element count first, then their
// elements are written, as RESP does.
//
// RESP3 types fall back under RESP2 as Redis does: a map of n pairs is an
// array of 2n, a set is an array, a boolean is the integer 0/1, a double is
// a bulk string, a verbatim string is a bulk string, null is $-1.
//
// Thread safety: a writer belongs to one connection (one thread).
#ifndef SHARDFILTER_TOOLS_RESP_REPLY_WRITER_H_
#define SHARDFILTER_TOOLS_RESP_REPLY_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardfilter::resp {

class ReplyWriter {
 public:
  virtual ~ReplyWriter() = default;

  // 2 or 3: the protocol the client chose (HELLO).
  virtual int protocol() const = 0;
  virtual void SetProtocol(int protocol) = 0;

  // "+OK". Must not contain '\r' or '\n' (replaced by spaces).
  virtual void SimpleString(std::string_view s) = 0;
  // The whole error text including its code, e.g. "ERR not found",
  // "WRONGTYPE Operation ...", or RedisBloom's bare "Bad capacity".
  // '\r' and '\n' are replaced by spaces.
  virtual void Error(std::string_view text) = 0;
  virtual void Integer(int64_t v) = 0;
  virtual void Bulk(std::string_view s) = 0;
  // RESP2 "$-1" (null bulk), RESP3 "_".
  virtual void Null() = 0;
  // RESP2 "*-1" (null array), RESP3 "_".
  virtual void NullArray() = 0;
  virtual void Array(size_t n) = 0;
  // n key/value pairs follow (2n elements).
  virtual void Map(size_t pairs) = 0;
  virtual void Set(size_t n) = 0;
  virtual void Boolean(bool b) = 0;
  virtual void Double(double d) = 0;
  // RESP3 "=len\r\ntxt:..." (format is 3 chars, e.g. "txt").
  virtual void Verbatim(std::string_view format, std::string_view s) = 0;
};

// RESP bytes appended to a std::string the host owns (and drains).
class RespWriter final : public ReplyWriter {
 public:
  explicit RespWriter(std::string* out, int protocol = 2)
      : out_(out), protocol_(protocol) {}

  int protocol() const override { return protocol_; }
  void SetProtocol(int protocol) override { protocol_ = protocol; }
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

  std::string* buffer() { return out_; }

  // Bounds the buffer (a host's output limit, checked at every append as
  // Redis's client-output-buffer-limit is): a reply part that would take
  // the buffer past `max_size` bytes is not appended, nor is anything
  // after it, and *stop is set (the command layer stops a pipeline on
  // Session::close_after_reply, which a host passes). The host then closes
  // the connection without sending the buffer's last, partial reply.
  void SetLimit(size_t max_size, bool* stop) {
    max_size_ = max_size;
    stop_ = stop;
  }
  bool overflowed() const { return overflowed_; }

 private:
  // False (and overflowed) when `n` more bytes would pass the limit.
  bool Room(size_t n) {
    if (overflowed_) return false;
    if (out_->size() + n <= max_size_) return true;
    overflowed_ = true;
    if (stop_ != nullptr) *stop_ = true;
    return false;
  }
  void Header(char type, uint64_t n);
  void Line(char type, std::string_view s);

  std::string* out_;
  int protocol_;
  size_t max_size_ = SIZE_MAX;
  bool* stop_ = nullptr;
  bool overflowed_ = false;
};

// Formats a double as Redis does for replies (%.17g, "inf" / "-inf",
// "nan"), the RESP2 bulk and RESP3 ',' payload.
std::string FormatDouble(double d);

}  // namespace shardfilter::resp

#endif  // SHARDFILTER_TOOLS_RESP_REPLY_WRITER_H_
