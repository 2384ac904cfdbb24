#include "shardfilter/engine/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace shardfilter {
namespace {

std::string Figure(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu bytes (%.1f MiB)",
                static_cast<unsigned long long>(bytes), bytes / 1048576.0);
  return buf;
}

// The first number in the file, or 0 when it is absent or says "max".
uint64_t ReadLimit(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return 0;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size()) return 0;
  return v;
}

}  // namespace

uint64_t MemoryBudget::AvailableMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  uint64_t total = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) *
                                               static_cast<uint64_t>(page)
                                         : uint64_t{1} << 32;
  // cgroup v2, then v1 (which reports ~2^63 when unlimited: the min
  // takes care of it).
  for (const char* path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const uint64_t limit = ReadLimit(path);
    if (limit > 0) total = std::min(total, limit);
  }
  return total;
}

uint64_t MemoryBudget::DefaultLimit() {
  return static_cast<uint64_t>(static_cast<double>(AvailableMemory()) *
                               kDefaultBudgetShare);
}

const std::shared_ptr<MemoryBudget>& MemoryBudget::Default() {
  static const std::shared_ptr<MemoryBudget> budget =
      std::make_shared<MemoryBudget>(DefaultLimit());
  return budget;
}

Status MemoryBudget::Reserve(uint64_t bytes, std::string_view what) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    if (bytes > limit || used > limit - bytes) {
      return Status::ResourceExhausted(
          std::string(what) + " needs " + Figure(bytes) +
          " but the memory budget of " + Figure(limit) + " has " +
          Figure(used < limit ? limit - used : 0) +
          " left; nothing was changed (raise it with --memory-budget, or "
          "DatabaseOptions::memory_budget)");
    }
    if (used_.compare_exchange_weak(used, used + bytes,
                                    std::memory_order_relaxed)) {
      return Status::OK();
    }
  }
}

void MemoryBudget::Release(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  while (!used_.compare_exchange_weak(used, used >= bytes ? used - bytes : 0,
                                      std::memory_order_relaxed)) {
  }
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  auto bad = [&] {
    // Appended, not operator+ (GCC 12 -Wrestrict false positive).
    std::string m = "'";
    m.append(text);
    m.append("' is not a byte size (e.g. 512M, 4G, 1.5GiB, 1000000)");
    return Status::InvalidArgument(std::move(m));
  };

  std::string s(text);
  size_t digits = 0;
  while (digits < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[digits])) ||
          s[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return bad();
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + digits, value);
  if (ec != std::errc() || end != s.data() + digits) return bad();
  std::string unit = s.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::toupper(c));
  double scale = 1;
  if (!unit.empty() && unit != "B") {
    const char* units = "KMGT";
    const char* at = std::strchr(units, unit[0]);
    if (at == nullptr || *at == '\0') return bad();
    const std::string rest = unit.substr(1);
    if (!rest.empty() && rest != "B" && rest != "IB") return bad();
    scale = std::pow(1024.0, static_cast<double>(at - units + 1));
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes >= 1.8e19) return bad();
  return static_cast<uint64_t>(bytes);
}

}  // namespace shardfilter
