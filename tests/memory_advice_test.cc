// SetHugePageAdvice (filters/memory_advice.h): with the advice off, a large
// filter table is not advised MADV_HUGEPAGE (the Redis module turns it off:
// THP inflates copy-on-write during BGSAVE). Read back from the mapping's
// VmFlags in /proc/self/smaps ("hg" = advised).
#include "shardfilter/filters/memory_advice.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "shardfilter/filters/detail/atomic_table.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::VmFlagsOf;

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
