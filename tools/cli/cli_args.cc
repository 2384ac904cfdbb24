#include "tools/cli/cli_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace shardfilter::tools {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

Status NotANumber(std::string_view text, std::string_view why) {
  std::string m = Quoted(text) + " is not a valid number";
  if (!why.empty()) m += std::string(": ") + std::string(why);
  return Status::InvalidArgument(std::move(m));
}

// Reads digits (with '_' allowed only between two digits) from text[*pos].
// Appends them to *digits; returns how many were read.
size_t ReadDigits(std::string_view text, size_t* pos, std::string* digits,
                  bool* bad_underscore) {
  size_t n = 0;
  while (*pos < text.size()) {
    char c = text[*pos];
    if (IsDigit(c)) {
      digits->push_back(c);
      ++n;
      ++*pos;
    } else if (c == '_' && n > 0 && *pos + 1 < text.size() &&
               IsDigit(text[*pos + 1])) {
      ++*pos;
    } else {
      if (c == '_') *bad_underscore = true;
      break;
    }
  }
  return n;
}

}  // namespace

Result<uint64_t> ParseCount(std::string_view text) {
  if (text.empty()) return NotANumber(text, "empty");
  if (text[0] == '-') return NotANumber(text, "must not be negative");
  if (text[0] == '+') return NotANumber(text, "no sign allowed");
  // mantissa = int_digits . frac_digits, value = mantissa * 10^exp10.
  std::string digits;
  size_t pos = 0;
  bool bad_underscore = false;
  size_t int_n = ReadDigits(text, &pos, &digits, &bad_underscore);
  size_t frac_n = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    frac_n = ReadDigits(text, &pos, &digits, &bad_underscore);
  }
  if (bad_underscore) {
    return NotANumber(text, "'_' only between digits");
  }
  if (int_n + frac_n == 0) return NotANumber(text, "no digits");
  int64_t exp10 = -static_cast<int64_t>(frac_n);
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    bool neg = false;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      neg = text[pos] == '-';
      ++pos;
    }
    size_t start = pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    if (pos == start) return NotANumber(text, "exponent has no digits");
    if (pos - start > 4) return NotANumber(text, "exponent out of range");
    int64_t e = 0;
    for (size_t i = start; i < pos; ++i) e = e * 10 + (text[i] - '0');
    exp10 += neg ? -e : e;
  }
  if (pos < text.size()) {
    switch (text[pos]) {
      case 'k':
      case 'K':
        exp10 += 3;
        ++pos;
        break;
      case 'm':
      case 'M':
        exp10 += 6;
        ++pos;
        break;
      case 'g':
      case 'G':
        exp10 += 9;
        ++pos;
        break;
      case 't':
      case 'T':
        exp10 += 12;
        ++pos;
        break;
      default:
        break;
    }
  }
  if (pos != text.size()) {
    return NotANumber(text, "unexpected '" + EscapeBytes(text.substr(pos)) +
                                "' after the number");
  }
  // Normalize: no leading zeros; fold trailing zeros into the exponent.
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return uint64_t{0};
  digits.erase(0, first);
  while (exp10 < 0 && digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  if (exp10 < 0) return NotANumber(text, "not a whole number");
  if (static_cast<int64_t>(digits.size()) + exp10 > 20) {
    return NotANumber(text, "larger than 18446744073709551615");
  }
  uint64_t value = 0;
  auto push = [&value](unsigned d) {
    return !__builtin_mul_overflow(value, uint64_t{10}, &value) &&
           !__builtin_add_overflow(value, uint64_t{d}, &value);
  };
  for (char c : digits) {
    if (!push(static_cast<unsigned>(c - '0'))) {
      return NotANumber(text, "larger than 18446744073709551615");
    }
  }
  for (int64_t i = 0; i < exp10; ++i) {
    if (!push(0)) return NotANumber(text, "larger than 18446744073709551615");
  }
  return value;
}

Result<uint64_t> ParseCountInRange(std::string_view text, uint64_t min,
                                   uint64_t max) {
  Result<uint64_t> v = ParseCount(text);
  if (!v.ok()) return v;
  if (*v < min || *v > max) {
    return Status::InvalidArgument(
        Quoted(text) + " is out of range: must be in [" + std::to_string(min) +
        ", " + std::to_string(max) + "]");
  }
  return v;
}

Result<uint64_t> ParseSeed(std::string_view text) {
  int base = 10;
  std::string_view body = text;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    base = 16;
    body.remove_prefix(2);
  }
  if (body.empty() || body[0] == '-' || body[0] == '+') {
    return NotANumber(text, "expected decimal digits or 0x and hex digits");
  }
  uint64_t v = 0;
  auto [ptr, ec] =
      std::from_chars(body.data(), body.data() + body.size(), v, base);
  if (ec == std::errc::result_out_of_range) {
    return NotANumber(text, "larger than 64 bits");
  }
  if (ec != std::errc() || ptr != body.data() + body.size()) {
    return NotANumber(text, "expected decimal digits or 0x and hex digits");
  }
  return v;
}

Result<double> ParseProbability(std::string_view text) {
  std::string_view body = text;
  double scale = 1.0;
  if (!body.empty() && body.back() == '%') {
    body.remove_suffix(1);
    scale = 0.01;
  }
  if (body.empty() || body[0] == '+') {
    return NotANumber(text, "expected a probability such as 0.01 or 1e-3");
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v,
                                   std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    return NotANumber(text, "out of range");
  }
  if (ec != std::errc() || ptr != body.data() + body.size() ||
      !std::isfinite(v)) {
    return NotANumber(text, "expected a probability such as 0.01 or 1e-3");
  }
  v *= scale;
  if (!(v > 0.0 && v < 1.0)) {
    return Status::InvalidArgument(Quoted(text) +
                                   " is not a probability strictly between "
                                   "0 and 1");
  }
  return v;
}

bool ParsedArgs::Has(std::string_view name) const {
  return Get(name) != nullptr;
}

const std::string* ParsedArgs::Get(std::string_view name) const {
  for (const auto& [n, v] : flags) {
    if (n == name) return &v;
  }
  return nullptr;
}

Result<ParsedArgs> ParseArgs(std::span<const std::string_view> args,
                             std::span<const FlagDef> known) {
  ParsedArgs out;
  bool flags_done = false;
  auto add_word = [&out](std::string_view w) {
    if (out.command.empty() && out.positional.empty()) {
      out.command = std::string(w);
    } else {
      out.positional.emplace_back(w);
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (flags_done || a.size() < 2 || a[0] != '-') {
      add_word(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    std::string_view name;
    std::optional<std::string_view> inline_value;
    if (a == "-h") {
      name = "help";
    } else if (a.substr(0, 2) == "--") {
      name = a.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string_view::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
    } else {
      return Status::InvalidArgument(
          "unknown flag '" + EscapeBytes(a) +
          "' (to pass a key or name that starts with '-', put it after --)");
    }
    const FlagDef* def = nullptr;
    for (const FlagDef& f : known) {
      if (f.name == name) def = &f;
    }
    if (def == nullptr) {
      return Status::InvalidArgument("unknown flag '--" + EscapeBytes(name) +
                                     "'");
    }
    std::string value;
    if (def->takes_value) {
      if (inline_value) {
        value = std::string(*inline_value);
      } else if (i + 1 < args.size()) {
        value = std::string(args[++i]);
      } else {
        return Status::InvalidArgument("flag --" + std::string(name) +
                                       " needs a value");
      }
    } else if (inline_value) {
      return Status::InvalidArgument("flag --" + std::string(name) +
                                     " takes no value");
    }
    if (out.Has(name)) {
      return Status::InvalidArgument("flag --" + std::string(name) +
                                     " given more than once");
    }
    out.flags.emplace_back(std::string(name), std::move(value));
  }
  return out;
}

std::string EscapeBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c <= 0x7e) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string_view ClosestWord(std::string_view word,
                             std::span<const std::string_view> candidates) {
  // Optimal string alignment distance, three rows of the usual table.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1),
        cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          cur[j] = std::min(cur[j], prev2[j - 2] + 1);
        }
      }
      prev2.swap(prev);
      prev.swap(cur);
    }
    return prev[b.size()];
  };
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance && 2 * d < word.size()) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string Quoted(std::string_view bytes) {
  std::string out(1, '\'');
  out += EscapeBytes(bytes);
  out.push_back('\'');
  return out;
}

std::string JsonString(std::string_view bytes) {
  std::string escaped = EscapeBytes(bytes);  // printable ASCII only now
  std::string out = "\"";
  for (char c : escaped) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace shardfilter::tools
