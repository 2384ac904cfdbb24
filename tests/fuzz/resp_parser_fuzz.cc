// libFuzzer target for tools/resp/request_parser.h. The input is a byte
// stream a client might send; the first byte picks how it is cut into
// reads (so partial frames at every position get exercised) and whether the
// client is authenticated. Checks: never a crash or an out-of-bounds view;
// consumed() within the buffer; every request non-empty; and the same
// requests whether the stream arrives whole or cut.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tools/resp/request_parser.h"

namespace {

using shardfilter::resp::ParserLimits;
using shardfilter::resp::ParseStatus;
using shardfilter::resp::RequestParser;

struct Outcome {
  std::vector<std::vector<std::string>> requests;
  std::string error;
};

Outcome Drive(std::string_view stream, size_t chunk, bool authenticated) {
  ParserLimits limits;
  limits.max_bulk_bytes = 1 << 16;  // keep allocations small
  limits.max_args = 1 << 12;
  RequestParser parser(limits);
  Outcome out;
  std::string buffer;
  size_t fed = 0;
  while (fed < stream.size()) {
    const size_t n = std::min(chunk, stream.size() - fed);
    buffer.append(stream.substr(fed, n));
    fed += n;
    for (;;) {
      const ParseStatus st = parser.Parse(buffer, authenticated);
      if (st == ParseStatus::kNeedMore) break;
      if (st == ParseStatus::kError) {
        if (parser.error().rfind("Protocol error: ", 0) != 0) std::abort();
        out.error = parser.error();
        return out;
      }
      if (parser.args().empty() || parser.consumed() == 0 ||
          parser.consumed() > buffer.size()) {
        std::abort();
      }
      std::vector<std::string> request;
      for (std::string_view a : parser.args()) request.emplace_back(a);
      out.requests.push_back(std::move(request));
      buffer.erase(0, parser.consumed());
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + (data[0] & 0x3f);
  const bool authenticated = (data[0] & 0x40) == 0;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1,
                                size - 1);
  const Outcome whole = Drive(stream, stream.size() + 1, authenticated);
  const Outcome cut = Drive(stream, chunk, authenticated);
  // A stream cut into reads parses exactly as the whole stream does (the
  // whole stream may only see more requests when an error comes later:
  // compare the common prefix and the error).
  if (whole.error != cut.error) std::abort();
  if (whole.requests != cut.requests) std::abort();
  return 0;
}
