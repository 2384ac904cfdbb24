// SetHugePageAdvice (filters/memory_advice.h): with the advice off, a large
// filter table is not advised MADV_HUGEPAGE (the Redis module turns it off:
// THP inflates copy-on-write during BGSAVE). Read back from the mapping's
// VmFlags in /proc/self/smaps ("hg" = advised).
#include "shardfilter/filters/memory_advice.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "shardfilter/filters/internal/atomic_table.h"

namespace shardfilter {
namespace {

// The VmFlags line of the mapping holding `p`; "" when not found.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(line);
    if (line.find(':') == std::string::npos ||
        line.find('-') < line.find(':')) {
      in >> std::hex >> lo >> dash >> hi;
      if (dash == '-' && hi > lo) {
        inside = addr >= lo && addr < hi;
        continue;
      }
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool Advised(bool advice) {
  SetHugePageAdvice(advice);
  internal::AtomicWordTable table;
  EXPECT_TRUE(table.Allocate(uint64_t{2} << 20));  // 16 MiB
  const std::string flags = VmFlagsOf(table.data());
  SetHugePageAdvice(true);
  return flags.find(" hg") != std::string::npos;
}

TEST(MemoryAdviceTest, OffMeansNoHugePageAdvice) {
  if (VmFlagsOf(&errno).empty()) GTEST_SKIP() << "no /proc/self/smaps";
  if (!Advised(true)) GTEST_SKIP() << "this kernel ignores MADV_HUGEPAGE";
  EXPECT_FALSE(Advised(false));
  EXPECT_TRUE(HugePageAdvice());  // restored by Advised
}

}  // namespace
}  // namespace shardfilter
