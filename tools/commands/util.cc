#include "tools/commands/util.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "tools/commands/keyspace.h"
#include "tools/resp/request_parser.h"

namespace shardfilter::commands {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

// Matches one [...] class at pattern[p] (just after '['); sets p past ']'.
bool MatchClass(std::string_view pattern, size_t& p, char c, bool nocase) {
  bool negate = false;
  if (p < pattern.size() && pattern[p] == '^') {
    negate = true;
    ++p;
  }
  bool match = false;
  const char cc = nocase ? Lower(c) : c;
  while (p < pattern.size() && pattern[p] != ']') {
    if (pattern[p] == '\\' && p + 1 < pattern.size()) {
      ++p;
      if ((nocase ? Lower(pattern[p]) : pattern[p]) == cc) match = true;
      ++p;
    } else if (p + 2 < pattern.size() && pattern[p + 1] == '-' &&
               pattern[p + 2] != ']') {
      char lo = pattern[p], hi = pattern[p + 2];
      if (lo > hi) std::swap(lo, hi);
      if (nocase) {
        lo = Lower(lo);
        hi = Lower(hi);
      }
      if (cc >= lo && cc <= hi) match = true;
      p += 3;
    } else {
      if ((nocase ? Lower(pattern[p]) : pattern[p]) == cc) match = true;
      ++p;
    }
  }
  if (p < pattern.size()) ++p;  // ']'; an unterminated class ends here
  return negate ? !match : match;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string ToLower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = Lower(c);
  return r;
}

bool ParseLongLong(std::string_view s, int64_t* out) {
  return resp::ParseInt64(s, out);
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty() || s.size() > 256) return false;
  const unsigned char first = s[0];
  if (std::isspace(first)) return false;
  std::string copy(s);  // strtod needs a terminator
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || std::isnan(v) ||
      (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0))) {
    return false;
  }
  *out = v;
  return true;
}

// Greedy matching with one backtrack point per '*': the last star seen
// absorbs one more character whenever the rest fails (linear in practice,
// O(n*m) at worst, no recursion).
bool GlobMatch(std::string_view pattern, std::string_view s, bool nocase) {
  size_t p = 0, i = 0;
  size_t star_p = std::string_view::npos, star_i = 0;
  while (i < s.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        while (p < pattern.size() && pattern[p] == '*') ++p;
        if (p == pattern.size()) return true;
        star_p = p;
        star_i = i;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++i;
        continue;
      }
      if (pc == '[') {
        size_t q = p + 1;
        if (MatchClass(pattern, q, s[i], nocase)) {
          p = q;
          ++i;
          continue;
        }
      } else {
        char lit = pc;
        size_t next = p + 1;
        if (pc == '\\' && p + 1 < pattern.size()) {
          lit = pattern[p + 1];
          next = p + 2;
        }
        if (nocase ? Lower(lit) == Lower(s[i]) : lit == s[i]) {
          p = next;
          ++i;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    i = ++star_i;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

void ReplyWrongArity(resp::ReplyWriter& out, std::string_view name) {
  out.Error("ERR wrong number of arguments for '" + ToLower(name) +
            "' command");
}

bool RefuseKeyName(CommandContext& ctx, std::string_view key) {
  const size_t max = ctx.keyspace.MaxKeyBytes();
  if (!key.empty() && key.size() <= max) return false;
  ctx.out.Error("ERR key length must be 1.." + std::to_string(max) +
                " bytes (shardfilter-server)");
  return true;
}

bool IsAbsent(const Status& s) {
  return s.IsNotFound() || s.IsInvalidArgument();
}

void ReplyUnreadable(CommandContext& ctx, std::string_view key,
                     const Status& s) {
  ctx.out.Error("ERR key '" + std::string(key) +
                "' cannot be loaded: " + s.message());
}

const char* TypeName(FilterType type) {
  switch (type) {
    case FilterType::kBloom:
      return "MBbloom--";
    case FilterType::kCuckoo:
      return "MBbloomCF";
    case FilterType::kCountingBloom:
      return "SFcountbf";
  }
  return "none";
}

std::string Keyspace::TypeOf(std::string_view key) {
  auto found = Lookup(key);
  return found.ok() ? TypeName((*found)->type()) : "none";
}

}  // namespace shardfilter::commands
