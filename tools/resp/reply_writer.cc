#include "tools/resp/reply_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace shardfilter::resp {

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%.17g", d);
  return std::string(buf, n > 0 ? n : 0);
}

// Each public call checks Room for what it appends (a header is at most
// 1 + 20 + 2 bytes) before appending anything.
constexpr size_t kHeaderBytes = 23;

void RespWriter::Header(char type, uint64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
  out_->push_back(type);
  out_->append(buf, end);
  out_->append("\r\n", 2);
}

void RespWriter::Line(char type, std::string_view s) {
  out_->push_back(type);
  const size_t start = out_->size();
  out_->append(s);
  for (size_t i = start; i < out_->size(); ++i) {
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') (*out_)[i] = ' ';
  }
  out_->append("\r\n", 2);
}

void RespWriter::SimpleString(std::string_view s) {
  if (Room(s.size() + 3)) Line('+', s);
}

void RespWriter::Error(std::string_view text) {
  if (Room(text.size() + 3)) Line('-', text);
}

void RespWriter::Integer(int64_t v) {
  if (!Room(kHeaderBytes)) return;
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out_->push_back(':');
  out_->append(buf, end);
  out_->append("\r\n", 2);
}

void RespWriter::Bulk(std::string_view s) {
  if (!Room(kHeaderBytes + s.size() + 2)) return;
  Header('$', s.size());
  out_->append(s);
  out_->append("\r\n", 2);
}

void RespWriter::Null() {
  if (!Room(5)) return;
  if (protocol_ >= 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("$-1\r\n", 5);
  }
}

void RespWriter::NullArray() {
  if (!Room(5)) return;
  if (protocol_ >= 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("*-1\r\n", 5);
  }
}

void RespWriter::Array(size_t n) {
  if (Room(kHeaderBytes)) Header('*', n);
}

void RespWriter::Map(size_t pairs) {
  if (!Room(kHeaderBytes)) return;
  if (protocol_ >= 3) {
    Header('%', pairs);
  } else {
    Header('*', 2 * static_cast<uint64_t>(pairs));
  }
}

void RespWriter::Set(size_t n) {
  if (Room(kHeaderBytes)) Header(protocol_ >= 3 ? '~' : '*', n);
}

void RespWriter::Boolean(bool b) {
  if (!Room(4)) return;
  if (protocol_ >= 3) {
    out_->append(b ? "#t\r\n" : "#f\r\n", 4);
  } else {
    out_->append(b ? ":1\r\n" : ":0\r\n", 4);
  }
}

void RespWriter::Double(double d) {
  const std::string s = FormatDouble(d);
  if (protocol_ >= 3) {
    if (Room(s.size() + 3)) Line(',', s);
  } else {
    Bulk(s);
  }
}

void RespWriter::Verbatim(std::string_view format, std::string_view s) {
  if (protocol_ >= 3 && format.size() == 3) {
    if (!Room(kHeaderBytes + s.size() + 6)) return;
    Header('=', s.size() + 4);
    out_->append(format);
    out_->push_back(':');
    out_->append(s);
    out_->append("\r\n", 2);
  } else {
    Bulk(s);
  }
}

}  // namespace shardfilter::resp
