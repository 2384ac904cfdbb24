// RequestParser: an incremental, zero-copy parser of RESP requests, as
// clients send them: multibulk arrays of bulk strings (`*2\r\n$4\r\nPING
// \r\n...`) and inline commands (`PING\r\n`, split on blanks, with Redis's
// quoting rules), as Redis's networking.c accepts them.
//
//   RequestParser p(limits);
//   // buf: the unconsumed bytes of the connection, oldest first.
//   while (p.Parse(buf, authenticated) == ParseStatus::kCommand) {
//     Run(p.args());                 // views into buf (or the parser)
//     buf.remove_prefix(p.consumed());
//   }
//
// Incremental: a partial request is scanned once. The parser remembers how
// far it got as offsets from the request's first byte, so the host may move
// or compact its buffer between calls as long as it passes the same
// unconsumed bytes again, followed by whatever arrived since. Zero copy:
// bulk arguments and unquoted inline words are views into the buffer passed
// to the Parse call that returned kCommand; quoted inline words (escapes
// resolved) live in the parser. Both stay valid until the next Parse/Reset.
//
// Malformed input gives kError with Redis's message ("Protocol error:
// invalid bulk length", ...): the host replies `-ERR <error()>` and closes
// the connection. The parser is then unusable until Reset.
//
// Thread safety: one parser per connection; not shared.
#ifndef SHARDFILTER_TOOLS_RESP_REQUEST_PARSER_H_
#define SHARDFILTER_TOOLS_RESP_REQUEST_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shardfilter::resp {

struct ParserLimits {
  // Largest bulk argument (Redis's proto-max-bulk-len, 512 MB).
  uint64_t max_bulk_bytes = 512ull << 20;
  // Most arguments in one request (Redis allows INT_MAX; a million is far
  // above any BF.MADD a client sends and bounds the per-request index).
  uint64_t max_args = 1u << 20;
  // Largest inline request line (Redis's PROTO_INLINE_MAX_SIZE, 64 KB), and
  // longest `*N` / `$N` header line.
  uint64_t max_inline_bytes = 64 * 1024;
  // Before AUTH (when the host requires a password): at most this many
  // arguments and this many bytes per bulk (Redis 7's limits).
  uint64_t unauthenticated_max_args = 10;
  uint64_t unauthenticated_max_bulk = 16 * 1024;
};

enum class ParseStatus {
  kCommand,   // args() holds one request of >= 1 argument
  kNeedMore,  // the buffer ends inside a request; call again with more
  kError,     // malformed: error() says why; close the connection
};

class RequestParser {
 public:
  explicit RequestParser(const ParserLimits& limits = {}) : limits_(limits) {}

  // Parses the next request from `buf`, which starts at the first byte not
  // yet consumed. Empty requests (`*0\r\n`, `*-1\r\n`, blank inline lines)
  // are skipped: they count in consumed() of the next request.
  ParseStatus Parse(std::string_view buf, bool authenticated);

  // After kCommand: the arguments, and how many bytes of buf the request
  // took (the host drops them after using args()).
  std::span<const std::string_view> args() const { return args_; }
  size_t consumed() const { return consumed_; }
  // After kError: "Protocol error: ..." (without "ERR ").
  const std::string& error() const { return error_; }
  // While a request is partial: at least how many more bytes it needs
  // beyond what has been passed (0 when unknown). Lets the host read a
  // large bulk with one allocation.
  size_t bytes_needed() const { return needed_; }

  // Forgets any partial request and error (e.g. RESET, or a new buffer).
  void Reset();

 private:
  struct Piece {
    size_t offset;  // into the buffer (multibulk, unquoted inline words)
    size_t length;  // or into scratch_ when `scratch`
    bool scratch;
  };
  enum class Mode { kUnknown, kMultibulk, kInline };
  enum class Step { kCommand, kNeedMore, kError, kSkipped };
  Step ParseMultibulk(std::string_view buf, bool authenticated);
  Step ParseInline(std::string_view buf);
  Step Fail(std::string message);
  Step Finish(size_t end);
  bool SplitInline(std::string_view buf, size_t begin, size_t end);

  ParserLimits limits_;
  // State of the partial request. Offsets count from the first byte of the
  // buffer passed (the host keeps unconsumed bytes in place, in order).
  Mode mode_ = Mode::kUnknown;
  size_t frame_start_ = 0;      // > 0 only after skipping empty requests
  size_t pos_ = 0;              // first byte not yet parsed
  size_t scanned_ = 0;          // bytes already searched for '\n'
  int64_t expected_args_ = -1;  // -1: `*N` header not parsed yet
  int64_t bulk_len_ = -1;       // -1: next `$N` header not parsed yet
  size_t needed_ = 0;
  bool have_result_ = false;
  std::string_view buffer_;  // the buffer of the current Parse call
  std::vector<Piece> pieces_;
  std::string scratch_;
  // Results.
  std::vector<std::string_view> args_;
  size_t consumed_ = 0;
  std::string error_;
  bool failed_ = false;
};

// Parses a decimal int64 as Redis's string2ll does: optional '-', digits,
// no leading zeros (except "0"), no '+', no blanks. False on any other
// input or overflow.
bool ParseInt64(std::string_view s, int64_t* out);

}  // namespace shardfilter::resp

#endif  // SHARDFILTER_TOOLS_RESP_REQUEST_PARSER_H_
