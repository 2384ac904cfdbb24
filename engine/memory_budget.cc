#include "shardfilter/engine/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace shardfilter {
namespace {

std::string Figure(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu bytes (%.1f MiB)",
                static_cast<unsigned long long>(bytes), bytes / 1048576.0);
  return buf;
}

// Above this a cgroup v1 limit means "none" (v1 reports ~2^63 rounded
// down to a page when unlimited).
constexpr uint64_t kNoCgroupLimit = uint64_t{1} << 62;

// The first number in the file, or 0 when it is absent or says "max".
uint64_t ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return 0;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size()) return 0;
  return v;
}

}  // namespace

uint64_t MemoryBudget::PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
             : uint64_t{1} << 32;
}

uint64_t MemoryBudget::CgroupLimit(std::string_view proc_self_cgroup,
                                   const std::string& root) {
  uint64_t lowest = 0;
  auto consider = [&](const std::string& file) {
    const uint64_t limit = ReadLimit(file);
    if (limit > 0 && limit < kNoCgroupLimit &&
        (lowest == 0 || limit < lowest)) {
      lowest = limit;
    }
  };
  // Each line: "id:controllers:path". A limit set on an ancestor bounds
  // the process too (systemd's MemoryMax sits on the service's cgroup, a
  // container's on its root), so the path is walked up to the root.
  auto walk = [&](const std::string& dir, std::string_view path,
                  const char* file_name) {
    std::string p(path);
    for (;;) {
      consider(dir + p + (p.empty() || p.back() != '/' ? "/" : "") + file_name);
      if (p.empty() || p == "/") break;
      const size_t slash = p.find_last_of('/');
      p = slash == std::string::npos || slash == 0 ? "/" : p.substr(0, slash);
    }
  };
  size_t at = 0;
  while (at < proc_self_cgroup.size()) {
    size_t end = proc_self_cgroup.find('\n', at);
    if (end == std::string_view::npos) end = proc_self_cgroup.size();
    const std::string_view line = proc_self_cgroup.substr(at, end - at);
    at = end + 1;
    const size_t c1 = line.find(':');
    const size_t c2 =
        c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, c1);
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string_view path = line.substr(c2 + 1);
    if (id == "0" && controllers.empty()) {
      walk(root, path, "memory.max");  // v2 (unified)
      continue;
    }
    // v1: the line whose controller list holds "memory".
    size_t from = 0;
    while (from <= controllers.size()) {
      size_t comma = controllers.find(',', from);
      if (comma == std::string_view::npos) comma = controllers.size();
      if (controllers.substr(from, comma - from) == "memory") {
        walk(root + "/memory", path, "memory.limit_in_bytes");
        break;
      }
      from = comma + 1;
    }
  }
  return lowest;
}

uint64_t MemoryBudget::AvailableMemory() {
  uint64_t total = PhysicalMemory();
  std::ifstream in("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  const uint64_t limit = CgroupLimit(text, "/sys/fs/cgroup");
  if (limit > 0) total = std::min(total, limit);
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
    const uint64_t external = external_.load(std::memory_order_relaxed);
    const uint64_t taken =
        used > UINT64_MAX - external ? UINT64_MAX : used + external;
    if (bytes > limit || taken > limit - bytes) {
      return Status::ResourceExhausted(
          std::string(what) + " needs " + Figure(bytes) +
          " but the memory budget of " + Figure(limit) + " has " +
          Figure(taken < limit ? limit - taken : 0) +
          " left; nothing was changed (raise it with --memory-budget or "
          "--maxmemory, or DatabaseOptions::memory_budget)");
    }
    if (used_.compare_exchange_weak(used, used + bytes,
                                    std::memory_order_relaxed)) {
      NotePeak();
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

void MemoryBudget::AddExternal(int64_t delta) {
  // |delta| in modular arithmetic: exact for every int64_t.
  const uint64_t magnitude = delta >= 0 ? static_cast<uint64_t>(delta)
                                        : 0 - static_cast<uint64_t>(delta);
  uint64_t v = external_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t next =
        delta >= 0 ? v + magnitude : (v > magnitude ? v - magnitude : 0);
    if (external_.compare_exchange_weak(v, next, std::memory_order_relaxed)) {
      break;
    }
  }
  if (delta > 0) NotePeak();
}

void MemoryBudget::NotePeak() {
  const uint64_t now = total();
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
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
