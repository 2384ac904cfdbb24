// MemoryBudget as the process's one limit: the cgroup limit it starts from
// is the process's own cgroup's (or an ancestor's), and memory a host
// measures outside reservations counts against it.
#include "shardfilter/engine/memory_budget.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::TempDir;

void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// A service's MemoryMax (systemd) sits on its own cgroup, not the root.
// Before: only <root>/memory.max was read, so such a limit was missed.
TEST(CgroupLimitTest, V2ReadsTheProcessCgroupAndItsAncestors) {
  TempDir dir;
  const std::string root = dir.path();
  Put(root + "/memory.max", "max\n");
  Put(root + "/system.slice/memory.max", "max\n");
  Put(root + "/system.slice/sf.service/memory.max", "1073741824\n");
  EXPECT_EQ(MemoryBudget::CgroupLimit("0::/system.slice/sf.service\n", root),
            uint64_t{1} << 30);
  // A lower limit on an ancestor bounds the process too.
  Put(root + "/system.slice/memory.max", "536870912\n");
  EXPECT_EQ(MemoryBudget::CgroupLimit("0::/system.slice/sf.service\n", root),
            uint64_t{1} << 29);
  // A container (cgroup namespace): its root is "/".
  Put(root + "/memory.max", "268435456\n");
  EXPECT_EQ(MemoryBudget::CgroupLimit("0::/\n", root), uint64_t{1} << 28);
  // No limit anywhere.
  TempDir none;
  Put(none.path() + "/memory.max", "max\n");
  EXPECT_EQ(MemoryBudget::CgroupLimit("0::/a/b\n", none.path()), 0u);
}

TEST(CgroupLimitTest, V1FindsTheMemoryControllersLine) {
  TempDir dir;
  const std::string root = dir.path();
  Put(root + "/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Put(root + "/memory/jobs/memory.limit_in_bytes", "9223372036854771712\n");
  Put(root + "/memory/jobs/j1/memory.limit_in_bytes", "2147483648\n");
  const std::string cgroup =
      "9:name=systemd:/\n5:devices:/\n4:cpu,memory:/jobs/j1\n1:cpu:/\n0::/\n";
  EXPECT_EQ(MemoryBudget::CgroupLimit(cgroup, root), uint64_t{2} << 30);
  // v1's "unlimited" (~2^63) is no limit.
  EXPECT_EQ(MemoryBudget::CgroupLimit("4:memory:/jobs\n", root), 0u);
}

// Measured memory (a host's caches and buffers) leaves less room for
// reservations, is never refused itself, and is part of the peak.
TEST(MemoryBudgetExternalTest, ExternalMemoryCountsAgainstTheLimit) {
  MemoryBudget b(1000);
  b.AddExternal(600);
  EXPECT_EQ(b.total(), 600u);
  Status s = b.Reserve(500, "a table");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(b.used(), 0u);
  EXPECT_TRUE(b.Reserve(400, "a table").ok());
  EXPECT_EQ(b.total(), 1000u);
  b.AddExternal(500);  // over the limit: measured, not refused
  EXPECT_EQ(b.total(), 1500u);
  EXPECT_EQ(b.peak(), 1500u);
  b.AddExternal(-1100);
  EXPECT_EQ(b.external(), 0u);
  EXPECT_TRUE(b.Reserve(600, "a table").ok());
  b.AddExternal(-5);  // never below 0
  EXPECT_EQ(b.external(), 0u);
  MemoryBudget unlimited(MemoryBudget::kUnlimited);
  unlimited.AddExternal(1000);
  EXPECT_TRUE(unlimited.Reserve(uint64_t{1} << 60, "a table").ok());
}

}  // namespace
}  // namespace shardfilter
