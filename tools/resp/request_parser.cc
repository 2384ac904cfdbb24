#include "tools/resp/request_parser.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace shardfilter::resp {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' ||
         c == '\f';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Position of the first '\n' in buf[from, end), or npos.
size_t FindNewline(std::string_view buf, size_t from) {
  if (from >= buf.size()) return std::string_view::npos;
  const void* p = std::memchr(buf.data() + from, '\n', buf.size() - from);
  if (p == nullptr) return std::string_view::npos;
  return static_cast<const char*>(p) - buf.data();
}

}  // namespace

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] == '0' && s.size() > i + 1) return false;  // no leading zeros
  if (negative && s[i] == '0') return false;          // no "-0"
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const uint64_t d = s[i] - '0';
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  const uint64_t max_pos = std::numeric_limits<int64_t>::max();
  if (negative) {
    if (v > max_pos + 1) return false;
    *out = v == max_pos + 1 ? std::numeric_limits<int64_t>::min()
                            : -static_cast<int64_t>(v);
  } else {
    if (v > max_pos) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

void RequestParser::Reset() {
  mode_ = Mode::kUnknown;
  frame_start_ = pos_ = scanned_ = needed_ = 0;
  expected_args_ = bulk_len_ = -1;
  pieces_.clear();
  scratch_.clear();
  args_.clear();
  consumed_ = 0;
  error_.clear();
  failed_ = false;
  have_result_ = false;
}

ParseStatus RequestParser::Parse(std::string_view buf, bool authenticated) {
  if (failed_) return ParseStatus::kError;
  if (have_result_) {  // the previous request's views die here
    args_.clear();
    scratch_.clear();
    have_result_ = false;
  }
  needed_ = 0;
  for (;;) {
    if (mode_ == Mode::kUnknown) {
      if (frame_start_ >= buf.size()) return ParseStatus::kNeedMore;
      mode_ = buf[frame_start_] == '*' ? Mode::kMultibulk : Mode::kInline;
      pos_ = scanned_ = frame_start_;
    }
    const Step step = mode_ == Mode::kMultibulk
                          ? ParseMultibulk(buf, authenticated)
                          : ParseInline(buf);
    switch (step) {
      case Step::kCommand:
        return ParseStatus::kCommand;
      case Step::kNeedMore:
        return ParseStatus::kNeedMore;
      case Step::kError:
        return ParseStatus::kError;
      case Step::kSkipped:  // an empty request: parse the next one
        mode_ = Mode::kUnknown;
        frame_start_ = pos_;
        expected_args_ = bulk_len_ = -1;
        break;
    }
  }
}

RequestParser::Step RequestParser::Fail(std::string message) {
  failed_ = true;
  error_ = std::move(message);
  return Step::kError;
}

RequestParser::Step RequestParser::Finish(size_t end) {
  args_.clear();
  args_.reserve(pieces_.size());
  // Views are made now: the buffer of this call is the one they point into.
  for (const Piece& p : pieces_) {
    args_.emplace_back(
        p.scratch ? scratch_.data() + p.offset : buffer_.data() + p.offset,
        p.length);
  }
  pieces_.clear();
  consumed_ = end;
  mode_ = Mode::kUnknown;
  frame_start_ = pos_ = scanned_ = 0;
  expected_args_ = bulk_len_ = -1;
  have_result_ = true;
  return Step::kCommand;
}

RequestParser::Step RequestParser::ParseMultibulk(std::string_view buf,
                                                  bool authenticated) {
  buffer_ = buf;
  if (expected_args_ < 0) {
    const size_t nl = FindNewline(buf, std::max(scanned_, pos_));
    if (nl == std::string_view::npos) {
      if (buf.size() - pos_ > limits_.max_inline_bytes) {
        return Fail("Protocol error: too big mbulk count string");
      }
      scanned_ = buf.size();
      return Step::kNeedMore;
    }
    if (nl - pos_ > limits_.max_inline_bytes) {  // as if cut before nl
      return Fail("Protocol error: too big mbulk count string");
    }
    int64_t n = 0;
    if (nl < pos_ + 2 || buf[nl - 1] != '\r' ||
        !ParseInt64(buf.substr(pos_ + 1, nl - 1 - (pos_ + 1)), &n) ||
        n > static_cast<int64_t>(limits_.max_args)) {
      return Fail("Protocol error: invalid multibulk length");
    }
    if (!authenticated &&
        n > static_cast<int64_t>(limits_.unauthenticated_max_args)) {
      return Fail("Protocol error: unauthenticated multibulk length");
    }
    pos_ = scanned_ = nl + 1;
    if (n <= 0) return Step::kSkipped;
    expected_args_ = n;
    pieces_.clear();
    pieces_.reserve(std::min<int64_t>(n, 1024));
  }
  while (static_cast<int64_t>(pieces_.size()) < expected_args_) {
    if (bulk_len_ < 0) {
      if (pos_ >= buf.size()) return Step::kNeedMore;
      if (buf[pos_] != '$') {
        const unsigned char c = buf[pos_];
        std::string got = c >= 0x20 && c < 0x7f
                              ? std::string(1, static_cast<char>(c))
                              : "\\x" +
                                    std::string(1, "0123456789abcdef"[c >> 4]) +
                                    "0123456789abcdef"[c & 15];
        return Fail("Protocol error: expected '$', got '" + got + "'");
      }
      const size_t nl = FindNewline(buf, std::max(scanned_, pos_));
      if (nl == std::string_view::npos) {
        if (buf.size() - pos_ > limits_.max_inline_bytes) {
          return Fail("Protocol error: too big bulk count string");
        }
        scanned_ = buf.size();
        return Step::kNeedMore;
      }
      if (nl - pos_ > limits_.max_inline_bytes) {
        return Fail("Protocol error: too big bulk count string");
      }
      int64_t len = 0;
      if (nl < pos_ + 2 || buf[nl - 1] != '\r' ||
          !ParseInt64(buf.substr(pos_ + 1, nl - 1 - (pos_ + 1)), &len) ||
          len < 0 || static_cast<uint64_t>(len) > limits_.max_bulk_bytes) {
        return Fail("Protocol error: invalid bulk length");
      }
      if (!authenticated &&
          static_cast<uint64_t>(len) > limits_.unauthenticated_max_bulk) {
        return Fail("Protocol error: unauthenticated bulk length");
      }
      pos_ = scanned_ = nl + 1;
      bulk_len_ = len;
    }
    const size_t need = static_cast<size_t>(bulk_len_) + 2;
    if (buf.size() - pos_ < need) {
      needed_ = need - (buf.size() - pos_);
      return Step::kNeedMore;
    }
    if (buf[pos_ + bulk_len_] != '\r' || buf[pos_ + bulk_len_ + 1] != '\n') {
      return Fail("Protocol error: expected CRLF after bulk data");
    }
    pieces_.push_back({pos_, static_cast<size_t>(bulk_len_), false});
    pos_ = scanned_ = pos_ + need;
    bulk_len_ = -1;
  }
  return Finish(pos_);
}

RequestParser::Step RequestParser::ParseInline(std::string_view buf) {
  buffer_ = buf;
  const size_t nl = FindNewline(buf, std::max(scanned_, pos_));
  if (nl == std::string_view::npos) {
    if (buf.size() - frame_start_ > limits_.max_inline_bytes) {
      return Fail("Protocol error: too big inline request");
    }
    scanned_ = buf.size();
    return Step::kNeedMore;
  }
  if (nl - frame_start_ > limits_.max_inline_bytes) {
    return Fail("Protocol error: too big inline request");
  }
  size_t end = nl;
  if (end > frame_start_ && buf[end - 1] == '\r') --end;
  pieces_.clear();
  scratch_.clear();
  if (!SplitInline(buf, frame_start_, end)) {
    return Fail("Protocol error: unbalanced quotes in request");
  }
  pos_ = nl + 1;
  if (pieces_.empty()) return Step::kSkipped;
  return Finish(pos_);
}

// Redis's sdssplitargs rules: words split on blanks; "double quotes" take
// \n \r \t \b \a \\ \" and \xHH escapes; 'single quotes' take \' only; a
// closing quote must be followed by a blank or the end of the line.
bool RequestParser::SplitInline(std::string_view buf, size_t begin,
                                size_t end) {
  size_t p = begin;
  for (;;) {
    while (p < end && IsSpace(buf[p])) ++p;
    if (p >= end) return true;
    const size_t word_start = p;
    const size_t scratch_start = scratch_.size();
    bool quoted = false, in_double = false, in_single = false, done = false;
    while (!done) {
      if (in_double) {
        if (p >= end) return false;
        const char c = buf[p];
        if (c == '\\' && p + 3 < end && buf[p + 1] == 'x' &&
            HexValue(buf[p + 2]) >= 0 && HexValue(buf[p + 3]) >= 0) {
          scratch_.push_back(static_cast<char>(HexValue(buf[p + 2]) * 16 +
                                               HexValue(buf[p + 3])));
          p += 3;
        } else if (c == '\\' && p + 1 < end) {
          ++p;
          char e = buf[p];
          switch (e) {
            case 'n':
              e = '\n';
              break;
            case 'r':
              e = '\r';
              break;
            case 't':
              e = '\t';
              break;
            case 'b':
              e = '\b';
              break;
            case 'a':
              e = '\a';
              break;
            default:
              break;
          }
          scratch_.push_back(e);
        } else if (c == '"') {
          if (p + 1 < end && !IsSpace(buf[p + 1])) return false;
          done = true;
        } else {
          scratch_.push_back(c);
        }
      } else if (in_single) {
        if (p >= end) return false;
        const char c = buf[p];
        if (c == '\\' && p + 1 < end && buf[p + 1] == '\'') {
          ++p;
          scratch_.push_back('\'');
        } else if (c == '\'') {
          if (p + 1 < end && !IsSpace(buf[p + 1])) return false;
          done = true;
        } else {
          scratch_.push_back(c);
        }
      } else {
        if (p >= end) break;
        const char c = buf[p];
        if (IsSpace(c) || c == '\0') {
          done = true;
        } else if (c == '"') {
          in_double = quoted = true;
        } else if (c == '\'') {
          in_single = quoted = true;
        } else {
          scratch_.push_back(c);
        }
      }
      if (p < end) ++p;
    }
    if (quoted) {
      pieces_.push_back({scratch_start, scratch_.size() - scratch_start, true});
    } else {  // a plain word: a view into the buffer, no copy
      const size_t len = scratch_.size() - scratch_start;
      scratch_.resize(scratch_start);
      pieces_.push_back({word_start, len, false});
    }
  }
}

}  // namespace shardfilter::resp
