// ReplyReader (tools/resp/reply_reader.h): RESP2 / RESP3 replies.
#include "tools/resp/reply_reader.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "tools/resp/request_parser.h"

namespace shardfilter::resp {

bool Reply::IsErrorCode(std::string_view code) const {
  if (type != Type::kError || str.size() < code.size()) return false;
  if (std::string_view(str).substr(0, code.size()) != code) return false;
  return str.size() == code.size() || str[code.size()] == ' ';
}

ReplyStatus ReplyReader::Parse(std::string_view buf, Reply* out) {
  error_.clear();
  size_t pos = 0;
  *out = Reply{};
  switch (ParseOne(buf, &pos, 0, out)) {
    case Step::kDone:
      consumed_ = pos;
      return ReplyStatus::kReply;
    case Step::kNeedMore:
      return ReplyStatus::kNeedMore;
    case Step::kError:
      break;
  }
  return ReplyStatus::kError;
}

ReplyReader::Step ReplyReader::Fail(std::string message) {
  error_ = "Protocol error: " + std::move(message);
  return Step::kError;
}

// The text up to the next "\r\n" from *pos (which moves past it).
ReplyReader::Step ReplyReader::Line(std::string_view buf, size_t* pos,
                                    std::string_view* line) {
  size_t limit = buf.size() - *pos;
  if (limit > limits_.max_line_bytes + 2) limit = limits_.max_line_bytes + 2;
  std::string_view rest = buf.substr(*pos, limit);
  size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) {
    if (rest.size() > limits_.max_line_bytes + 1) {
      return Fail("reply line too long");
    }
    return Step::kNeedMore;
  }
  if (nl == 0 || rest[nl - 1] != '\r') return Fail("line not ended by CRLF");
  *line = rest.substr(0, nl - 1);
  *pos += nl + 1;
  return Step::kDone;
}

ReplyReader::Step ReplyReader::ParseOne(std::string_view buf, size_t* pos,
                                        uint32_t depth, Reply* out) {
  if (*pos >= buf.size()) return Step::kNeedMore;
  char kind = buf[*pos];
  size_t at = *pos + 1;
  std::string_view line;
  if (Step s = Line(buf, &at, &line); s != Step::kDone) return s;
  int64_t n = 0;
  switch (kind) {
    case '+':
      out->type = Reply::Type::kSimple;
      out->str = std::string(line);
      break;
    case '-':
      out->type = Reply::Type::kError;
      out->str = std::string(line);
      break;
    case ':':
      if (!ParseInt64(line, &n)) return Fail("bad integer");
      out->type = Reply::Type::kInteger;
      out->integer = n;
      break;
    case '_':
      if (!line.empty()) return Fail("bad null");
      out->type = Reply::Type::kNull;
      break;
    case '#':
      if (line != "t" && line != "f") return Fail("bad boolean");
      out->type = Reply::Type::kBoolean;
      out->integer = line == "t" ? 1 : 0;
      break;
    case ',': {
      std::string text(line);
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) {
        return Fail("bad double");
      }
      out->type = Reply::Type::kDouble;
      out->str = std::move(text);
      out->number = v;
      break;
    }
    case '(':
      if (line.empty()) return Fail("bad big number");
      for (size_t i = line[0] == '-' ? 1 : 0; i < line.size(); ++i) {
        if (line[i] < '0' || line[i] > '9') return Fail("bad big number");
      }
      out->type = Reply::Type::kBigNumber;
      out->str = std::string(line);
      break;
    case '$':
    case '=':
    case '!': {
      if (!ParseInt64(line, &n) || n < -1) return Fail("bad bulk length");
      if (n == -1) {
        if (kind != '$') return Fail("bad bulk length");
        out->type = Reply::Type::kNull;
        break;
      }
      if (static_cast<uint64_t>(n) > limits_.max_bulk_bytes) {
        return Fail("bulk longer than the limit");
      }
      size_t len = static_cast<size_t>(n);
      if (buf.size() - at < len + 2) return Step::kNeedMore;
      if (buf[at + len] != '\r' || buf[at + len + 1] != '\n') {
        return Fail("bulk not ended by CRLF");
      }
      std::string_view body = buf.substr(at, len);
      at += len + 2;
      if (kind == '!') {
        out->type = Reply::Type::kError;
      } else if (kind == '=') {
        // "txt:..." : the format is three bytes and a colon.
        if (body.size() < 4 || body[3] != ':') return Fail("bad verbatim");
        body.remove_prefix(4);
        out->type = Reply::Type::kBulk;
      } else {
        out->type = Reply::Type::kBulk;
      }
      out->str = std::string(body);
      break;
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      if (!ParseInt64(line, &n) || n < -1) return Fail("bad aggregate length");
      if (n == -1) {
        if (kind != '*') return Fail("bad aggregate length");
        out->type = Reply::Type::kNull;
        break;
      }
      uint64_t count = static_cast<uint64_t>(n);
      if (kind == '%') {
        if (count > limits_.max_elements / 2) return Fail("map too large");
        count *= 2;
      } else if (count > limits_.max_elements) {
        return Fail("aggregate too large");
      }
      if (depth + 1 > limits_.max_depth) return Fail("nesting too deep");
      out->type = kind == '%' ? Reply::Type::kMap : Reply::Type::kArray;
      // Every element takes at least 3 bytes ("_\r\n"): never reserve for
      // more than the bytes present could hold.
      uint64_t room = (buf.size() - at) / 3;
      out->elements.reserve(static_cast<size_t>(count < room ? count : room));
      for (uint64_t i = 0; i < count; ++i) {
        out->elements.emplace_back();
        if (Step s = ParseOne(buf, &at, depth + 1, &out->elements.back());
            s != Step::kDone) {
          return s;
        }
      }
      break;
    }
    case '|':
      return Fail("attributes are not expected");
    default:
      return Fail("unknown reply type byte");
  }
  *pos = at;
  return Step::kDone;
}

}  // namespace shardfilter::resp
