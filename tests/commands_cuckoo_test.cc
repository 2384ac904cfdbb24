// CF.* through the command layer: RedisBloom's replies and errors, the
// bucket-size mapping, RESP3 forms.
#include <memory>
#include <string>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

using CuckooCommandsTest = CommandsFixture;

TEST_F(CuckooCommandsTest, AddExistsCountDel) {
  EXPECT_EQ(Run({"CF.ADD", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.ADD", "c", "a"}), ":1\r\n");  // a multiset: 2 copies
  EXPECT_EQ(Run({"CF.COUNT", "c", "a"}), ":2\r\n");
  EXPECT_EQ(Run({"CF.ADDNX", "c", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"CF.ADDNX", "c", "b"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.EXISTS", "c", "b"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.MEXISTS", "c", "a", "b", "zz"}),
            "*3\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"CF.DEL", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.COUNT", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.DEL", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.DEL", "c", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"CF.DEL", "missing", "a"}), "-Not found\r\n");
  EXPECT_EQ(Run({"CF.EXISTS", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"CF.COUNT", "missing", "a"}), ":0\r\n");
}

TEST_F(CuckooCommandsTest, InsertAndInsertNx) {
  EXPECT_EQ(Run({"CF.INSERT", "c", "CAPACITY", "1000", "ITEMS", "a", "a"}),
            "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"CF.INSERTNX", "c", "ITEMS", "a", "b", "b"}),
            "*3\r\n:0\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "d", "NOCREATE", "ITEMS", "a"}),
            "-ERR not found\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "d", "CAPACITY", "x", "ITEMS", "a"}),
            "-Bad capacity\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "d", "CAPACITY", "3", "ITEMS", "a"}),
            "-Capacity must be in the range [cf-bucket-size * 2, "
            "1073741824]\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "d", "XYZ", "ITEMS", "a"}),
            "-Unknown argument received\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "d", "ITEMS"}),
            "-ERR wrong number of arguments for 'CF.INSERT' command\r\n");
}

// Growth that the server's --maxmemory refuses is an error element, never
// -1, which says the filter is full (an error is never an answer); a
// single add answers the same error.
TEST_F(CuckooCommandsTest, GrowthRefusedByMaxmemoryIsAnErrorNotFull) {
  memory_budget_ = std::make_shared<MemoryBudget>(uint64_t{64} << 20);
  OpenStore();
  ASSERT_EQ(Run({"CF.RESERVE", "c", "1000"}), "+OK\r\n");
  memory_budget_->SetLimit(memory_budget_->total());  // no room to grow
  std::vector<std::string> insert = {"CF.INSERT", "c", "ITEMS"};
  for (int i = 0; i < 3000; ++i) insert.push_back("i" + std::to_string(i));
  const std::string reply = Run(insert);
  const std::string oom =
      "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
  EXPECT_NE(reply.find(oom), std::string::npos) << reply.substr(0, 200);
  EXPECT_EQ(reply.find(":-1\r\n"), std::string::npos);
  std::string last;
  for (int i = 0; i < 3000 && last != oom; ++i) {
    last = Run({"CF.ADD", "c", "a" + std::to_string(i)});
  }
  EXPECT_EQ(last, oom);
  EXPECT_EQ(Run({"CF.EXISTS", "c", "i0"}), ":1\r\n");
}

TEST_F(CuckooCommandsTest, Resp3Forms) {
  writer_.SetProtocol(3);
  EXPECT_EQ(Run({"CF.ADD", "c", "a"}), "#t\r\n");
  EXPECT_EQ(Run({"CF.ADDNX", "c", "a"}), "#f\r\n");
  // CF.INSERTNX keeps integers under RESP3, as RedisBloom does.
  EXPECT_EQ(Run({"CF.INSERTNX", "c", "ITEMS", "a", "b"}), "*2\r\n:0\r\n:1\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "c", "ITEMS", "z"}), "*1\r\n#t\r\n");
  EXPECT_EQ(Run({"CF.EXISTS", "c", "a"}), "#t\r\n");
  EXPECT_EQ(Run({"CF.COUNT", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.DEL", "c", "a"}), "#t\r\n");
  EXPECT_EQ(Run({"CF.INFO", "c"}).rfind("%8\r\n+Size\r\n", 0), 0u);
}

TEST_F(CuckooCommandsTest, ReserveMapsBucketSizeAndReportsInfo) {
  EXPECT_EQ(Run({"CF.RESERVE", "c", "1000", "BUCKETSIZE", "3", "MAXITERATIONS",
                 "50", "EXPANSION", "2"}),
            "+OK\r\n");
  const std::string info = Run({"CF.INFO", "c"});
  EXPECT_NE(info.find("+Bucket size\r\n:4\r\n+Expansion rate\r\n:2\r\n+Max "
                      "iterations\r\n:50\r\n"),
            std::string::npos)
      << info;
  EXPECT_EQ(info.rfind("*16\r\n", 0), 0u);
  EXPECT_EQ(Run({"CF.RESERVE", "c", "1000"}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "1000", "BUCKETSIZE", "9"}),
            "-ERR BUCKETSIZE must be in the range [1, 8] (shardfilter: "
            "buckets of 2, 4 or 8 slots)\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "1000", "BUCKETSIZE", "256"}),
            "-BUCKETSIZE: value must be in the range [1, 255]\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "1000", "BUCKETSIZE", "x"}),
            "-Couldn't parse BUCKETSIZE\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "1000", "MAXITERATIONS", "0"}),
            "-MAXITERATIONS: value must be in the range [1, 65535]\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "1000", "EXPANSION", "40000"}),
            "-EXPANSION: value must be in the range [0, 32768]\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "x"}), "-Bad capacity\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "3"}),
            "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n");
  EXPECT_EQ(Run({"CF.RESERVE", "e", "100", "BUCKETSIZE"}),
            "-ERR wrong number of arguments for 'CF.RESERVE' command\r\n");
  EXPECT_EQ(Run({"CF.INFO", "missing"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"TYPE", "c"}), "+MBbloomCF\r\n");
}

TEST_F(CuckooCommandsTest, NonScalingFilterReportsFull) {
  ASSERT_EQ(Run({"CF.RESERVE", "f", "4", "EXPANSION", "0"}), "+OK\r\n");
  std::string last;
  int added = 0;
  for (int i = 0; i < 200; ++i) {
    last = Run({"CF.ADD", "f", "item" + std::to_string(i)});
    if (last != ":1\r\n") break;
    ++added;
  }
  EXPECT_EQ(last, "-Filter is full\r\n");
  EXPECT_GE(added, 4);
  const std::string many = Run({"CF.INSERT", "f", "ITEMS", "p", "q"});
  EXPECT_EQ(many, "*2\r\n:-1\r\n:-1\r\n");
  writer_.SetProtocol(3);
  EXPECT_EQ(Run({"CF.INSERT", "f", "ITEMS", "p"}), "*1\r\n#f\r\n");
  EXPECT_EQ(Run({"CF.INSERTNX", "f", "ITEMS", "p"}), "*1\r\n:-1\r\n");
}

// DESIGN.md invariant 8: copies of one key are bounded (2 x bucket size,
// what its two buckets hold) and never make the filter grow. Before the
// bound, the 5th..12th CF.ADD of one item appended sub-filters.
TEST_F(CuckooCommandsTest, CopiesOfOneItemNeverGrowTheFilter) {
  // Bucket size 2: the engine keeps at most 2 x 2 - 1 = 3 copies of a key.
  ASSERT_EQ(Run({"CF.RESERVE", "c", "1000"}), "+OK\r\n");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Run({"CF.ADD", "c", "same"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.ADD", "c", "same"}), "-Filter is full\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "c", "ITEMS", "same", "other", "other"}),
            "*3\r\n:-1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"CF.INSERT", "c", "ITEMS", "other", "other", "other"}),
            "*3\r\n:1\r\n:-1\r\n:-1\r\n");
  EXPECT_EQ(Run({"CF.COUNT", "c", "same"}), ":3\r\n");
  const std::string info = Run({"CF.INFO", "c"});
  EXPECT_NE(info.find("+Number of filters\r\n:1\r\n"), std::string::npos)
      << info;
  EXPECT_EQ(Run({"CF.DEL", "c", "same"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.ADD", "c", "same"}), ":1\r\n");  // room again
}

TEST_F(CuckooCommandsTest, WrongType) {
  ASSERT_EQ(Run({"BF.ADD", "b", "a"}), ":1\r\n");
  const std::string wrongtype =
      "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
  EXPECT_EQ(Run({"CF.ADD", "b", "a"}), wrongtype);
  EXPECT_EQ(Run({"CF.RESERVE", "b", "100"}), wrongtype);
  EXPECT_EQ(Run({"CF.INFO", "b"}), wrongtype);
  EXPECT_EQ(Run({"CF.EXISTS", "b", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"CF.DEL", "b", "a"}), "-Not found\r\n");
}

}  // namespace
}  // namespace shardfilter::testing
