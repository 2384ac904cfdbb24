// ReplyReader: the client side of RESP. Parses the replies a Redis server
// (or shardfilter-server) sends, RESP2 and RESP3, into Reply trees; the CLI's
// cluster client (tools/cluster/) is its user.
//
//   ReplyReader r;
//   Reply reply;
//   // buf: bytes received and not yet consumed, oldest first.
//   while (r.Parse(buf, &reply) == ReplyStatus::kReply) {
//     Use(reply);
//     buf.remove_prefix(r.consumed());
//   }
//
// Each call parses one whole reply from the start of buf, or answers
// kNeedMore without consuming anything (the caller passes the same bytes
// again with more appended). A reply is scanned again after each partial
// read, which is cheap for what a client receives (a bulk's header says its
// length; arrays hold small elements) and keeps the reader stateless.
//
// The bytes come from a server, which is trusted less than the caller:
// every length is checked against the limits and against the bytes present
// before anything is allocated, nesting is bounded, and malformed input is
// kError with a message, never a crash.
//
// Thread safety: one reader per connection; not shared.
#ifndef SHARDFILTER_TOOLS_RESP_REPLY_READER_H_
#define SHARDFILTER_TOOLS_RESP_REPLY_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardfilter::resp {

struct Reply {
  enum class Type {
    kSimple,     // +OK
    kError,      // -ERR ...           (str: the text without '-')
    kInteger,    // :1
    kBulk,       // $3 abc, RESP3 verbatim =... (str: without the "txt:")
    kNull,       // $-1, *-1, _
    kArray,      // *N, RESP3 set ~N and push >N
    kMap,        // RESP3 %N: elements hold key, value, key, value, ...
    kDouble,     // RESP3 ,1.5 (str: the text; number: its value)
    kBoolean,    // RESP3 #t / #f (integer: 1 / 0)
    kBigNumber,  // RESP3 (123... (str: the digits)
  };
  Type type = Type::kNull;
  std::string str;
  int64_t integer = 0;
  double number = 0;
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::kError; }
  // True for an error whose text starts with `code` followed by a blank or
  // the end ("MOVED", "ASK", "TRYAGAIN", ...).
  bool IsErrorCode(std::string_view code) const;
};

enum class ReplyStatus { kReply, kNeedMore, kError };

struct ReplyLimits {
  uint64_t max_bulk_bytes = 512ull << 20;  // Redis's proto-max-bulk-len
  uint64_t max_elements = 1ull << 24;      // per aggregate
  uint32_t max_depth = 32;                 // nesting of aggregates
  uint64_t max_line_bytes = 64 * 1024;     // a +, -, :, header line
};

class ReplyReader {
 public:
  explicit ReplyReader(const ReplyLimits& limits = {}) : limits_(limits) {}

  ReplyStatus Parse(std::string_view buf, Reply* out);
  // After kReply: the bytes the reply took.
  size_t consumed() const { return consumed_; }
  // After kError: why.
  const std::string& error() const { return error_; }

 private:
  enum class Step { kDone, kNeedMore, kError };
  Step ParseOne(std::string_view buf, size_t* pos, uint32_t depth, Reply* out);
  Step Line(std::string_view buf, size_t* pos, std::string_view* line);
  Step Fail(std::string message);

  ReplyLimits limits_;
  size_t consumed_ = 0;
  std::string error_;
};

}  // namespace shardfilter::resp

#endif  // SHARDFILTER_TOOLS_RESP_REPLY_READER_H_
