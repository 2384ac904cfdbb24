// libFuzzer target for tools/resp/reply_reader.h: bytes a server (or a
// hostile peer posing as one) might send to the CLI's cluster client.
// Checks: never a crash; consumed() within the buffer and > 0; errors say
// "Protocol error"; and the same replies whether the stream arrives whole
// or cut into reads of the size the first byte picks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tools/resp/reply_reader.h"

namespace {

using shardfilter::resp::Reply;
using shardfilter::resp::ReplyLimits;
using shardfilter::resp::ReplyReader;
using shardfilter::resp::ReplyStatus;

void Flatten(const Reply& r, std::string* out) {
  out->push_back(static_cast<char>(r.type));
  out->append(r.str);
  out->append(std::to_string(r.integer));
  out->push_back('[');
  for (const Reply& e : r.elements) Flatten(e, out);
  out->push_back(']');
}

std::string Drive(std::string_view stream, size_t chunk) {
  ReplyLimits limits;
  limits.max_bulk_bytes = 1 << 16;
  limits.max_elements = 1 << 12;
  ReplyReader reader(limits);
  std::string buffer, out;
  size_t fed = 0, used = 0;
  while (fed < stream.size()) {
    size_t n = std::min(chunk, stream.size() - fed);
    buffer.append(stream.substr(fed, n));
    fed += n;
    for (;;) {
      Reply r;
      std::string_view rest = std::string_view(buffer).substr(used);
      ReplyStatus s = reader.Parse(rest, &r);
      if (s == ReplyStatus::kNeedMore) break;
      if (s == ReplyStatus::kError) {
        if (reader.error().rfind("Protocol error: ", 0) != 0) std::abort();
        return out + "!error";
      }
      if (reader.consumed() == 0 || reader.consumed() > rest.size()) {
        std::abort();
      }
      used += reader.consumed();
      Flatten(r, &out);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t chunk = 1 + data[0] % 17;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (Drive(stream, chunk) != Drive(stream, stream.size() + 1)) std::abort();
  return 0;
}
