// BF.* through the command layer: RedisBloom's replies, defaults and error
// texts, under RESP2 and RESP3.
#include <string>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

using BloomCommandsTest = CommandsFixture;

TEST_F(BloomCommandsTest, ReserveAddExists) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "1000"}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"bf.add", "k", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"bf.add", "k", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "zz"}), ":0\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "missing", "a"}), ":0\r\n");
  // A repeated item within one BF.MADD is new only the first time.
  EXPECT_EQ(Run({"BF.MADD", "k", "a", "b", "c", "b"}),
            "*4\r\n:0\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"BF.MEXISTS", "k", "a", "b", "nope"}),
            "*3\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"BF.CARD", "k"}), ":3\r\n");
  EXPECT_EQ(Run({"BF.CARD", "missing"}), ":0\r\n");
}

TEST_F(BloomCommandsTest, AddCreatesWithRedisBloomDefaults) {
  EXPECT_EQ(Run({"BF.ADD", "auto", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.INFO", "auto", "CAPACITY"}), "*1\r\n:100\r\n");
  EXPECT_EQ(Run({"BF.INFO", "auto", "EXPANSION"}), "*1\r\n:2\r\n");
  EXPECT_EQ(Run({"BF.INFO", "auto", "ITEMS"}), "*1\r\n:1\r\n");
  EXPECT_EQ(Run({"BF.INFO", "auto", "FILTERS"}), "*1\r\n:1\r\n");
  EXPECT_EQ(Run({"BF.INFO", "auto", "bogus"}),
            "-Invalid information value\r\n");
  const std::string info = Run({"BF.INFO", "auto"});
  EXPECT_EQ(info.rfind("*10\r\n+Capacity\r\n:100\r\n+Size\r\n", 0), 0u) << info;
  EXPECT_NE(info.find("+Number of filters\r\n:1\r\n+Number of items "
                      "inserted\r\n:1\r\n+Expansion rate\r\n:2\r\n"),
            std::string::npos)
      << info;
}

TEST_F(BloomCommandsTest, Resp3UsesBooleansAndMaps) {
  writer_.SetProtocol(3);
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), "#t\r\n");
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), "#f\r\n");
  EXPECT_EQ(Run({"BF.MEXISTS", "k", "a", "b"}), "*2\r\n#t\r\n#f\r\n");
  EXPECT_EQ(Run({"BF.INFO", "k", "capacity"}), "%1\r\n+Capacity\r\n:100\r\n");
  EXPECT_EQ(Run({"BF.INFO", "k"}).rfind("%5\r\n", 0), 0u);
  EXPECT_EQ(Run({"BF.RESERVE", "n", "0.01", "10", "NONSCALING"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.INFO", "n", "expansion"}),
            "%1\r\n+Expansion rate\r\n_\r\n");
}

TEST_F(BloomCommandsTest, ReserveErrorsAreRedisBloomsTexts) {
  EXPECT_EQ(Run({"BF.RESERVE", "k", "x", "100"}), "-ERR bad error rate\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "1.5", "100"}),
            "-ERR (0 < error rate range < 1) \r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0", "100"}),
            "-ERR (0 < error rate range < 1) \r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "x"}), "-ERR bad capacity\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "0"}),
            "-ERR (capacity should be larger than 0)\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "1073741825"}),
            "-ERR capacity must be at most 1073741824 (shardfilter)\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION"}),
            "-ERR no expansion\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "x"}),
            "-ERR bad expansion\r\n");
  EXPECT_EQ(
      Run({"BF.RESERVE", "k", "0.01", "100", "NONSCALING", "EXPANSION", "2"}),
      "-Nonscaling filters cannot expand\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "0"}),
            "-ERR expansion should be greater or equal to 1\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "40000"}),
            "-ERR expansion must be in the range [1, 16] (shardfilter)\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "17"}),
            "-ERR expansion must be in the range [1, 16] (shardfilter)\r\n");
  // Redis 7 names the command in lowercase, whatever the client typed.
  EXPECT_EQ(Run({"BF.RESERVE", "k", "0.01"}),
            "-ERR wrong number of arguments for 'bf.reserve' command\r\n");
  EXPECT_EQ(Run({"bf.add", "k"}),
            "-ERR wrong number of arguments for 'bf.add' command\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");  // nothing was created
}

TEST_F(BloomCommandsTest, NonScalingFilterFillsUp) {
  ASSERT_EQ(Run({"BF.RESERVE", "n", "0.01", "3", "NONSCALING"}), "+OK\r\n");
  std::string reply = Run({"BF.MADD", "n", "a", "b", "c", "d", "e"});
  // Three fit; the fourth item's error ends the reply (RedisBloom stops).
  EXPECT_EQ(reply,
            "*4\r\n:1\r\n:1\r\n:1\r\n-ERR non scaling filter is full\r\n");
  EXPECT_EQ(Run({"BF.ADD", "n", "zz"}), "-ERR non scaling filter is full\r\n");
  EXPECT_EQ(Run({"BF.ADD", "n", "a"}), ":0\r\n");  // present: no room needed
}

TEST_F(BloomCommandsTest, InsertParsesOptions) {
  EXPECT_EQ(Run({"BF.INSERT", "i", "CAPACITY", "500", "ERROR", "0.001", "ITEMS",
                 "a", "b"}),
            "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"BF.INFO", "i", "CAPACITY"}), "*1\r\n:500\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "NOCREATE", "ITEMS", "a"}),
            "-ERR not found\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "NONSCALING", "ITEMS", "a"}),
            "*1\r\n:1\r\n");
  EXPECT_EQ(Run({"BF.INFO", "j", "EXPANSION"}), "*1\r\n$-1\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY", "x", "ITEMS", "a"}),
            "-Bad capacity\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "ERROR", "x", "ITEMS", "a"}),
            "-Bad error rate\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "EXPANSION", "x", "ITEMS", "a"}),
            "-Bad expansion\r\n");
  // Values out of range: RedisBloom's one text, once the items are found.
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY", "0", "ITEMS", "a"}),
            "-Bad argument received\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "ERROR", "2", "ITEMS", "a"}),
            "-Bad argument received\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "EXPANSION", "0", "ITEMS", "a"}),
            "-Bad argument received\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "EXPANSION", "-1", "ITEMS", "a"}),
            "-Bad argument received\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "BOGUS", "ITEMS", "a"}),
            "-Unknown argument received\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY", "10", "ITEMS"}),
            "-ERR wrong number of arguments for 'bf.insert' command\r\n");
  EXPECT_EQ(Run({"BF.INSERT", "j", "CAPACITY"}),
            "-ERR wrong number of arguments for 'bf.insert' command\r\n");
}

TEST_F(BloomCommandsTest, WrongTypeAndKeyLimits) {
  ASSERT_EQ(Run({"CF.RESERVE", "c", "1000"}), "+OK\r\n");
  const std::string wrongtype =
      "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
  EXPECT_EQ(Run({"BF.ADD", "c", "a"}), wrongtype);
  EXPECT_EQ(Run({"BF.RESERVE", "c", "0.01", "10"}), wrongtype);
  EXPECT_EQ(Run({"BF.INFO", "c"}), wrongtype);
  EXPECT_EQ(Run({"BF.CARD", "c"}), wrongtype);
  EXPECT_EQ(Run({"BF.EXISTS", "c", "a"}), ":0\r\n");  // as RedisBloom
  EXPECT_EQ(Run({"BF.INFO", "missing"}), "-ERR not found\r\n");
  const std::string too_long(1025, 'k');
  EXPECT_EQ(Run({"BF.ADD", too_long, "a"}),
            "-ERR key length must be 1..1024 bytes (shardfilter-server)\r\n");
  EXPECT_EQ(Run({"BF.ADD", "", "a"}),
            "-ERR key length must be 1..1024 bytes (shardfilter-server)\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", too_long, "a"}), ":0\r\n");
  EXPECT_EQ(Run({"BF.ADD", std::string(1024, 'k'), "a"}), ":1\r\n");
}

TEST_F(BloomCommandsTest, FilterOverTheMemoryBudgetIsRefused) {
  ks_options_.max_filter_bytes = 1 << 20;
  OpenStore();
  EXPECT_EQ(Run({"BF.RESERVE", "big", "0.0001", "100000000"}),
            "-ERR Insufficient memory to create filter\r\n");
  EXPECT_EQ(Run({"EXISTS", "big"}), ":0\r\n");
}

TEST_F(BloomCommandsTest, DataSurvivesReopen) {
  ASSERT_EQ(Run({"BF.MADD", "p", "a", "b"}), "*2\r\n:1\r\n:1\r\n");
  OpenStore();
  EXPECT_EQ(Run({"BF.MEXISTS", "p", "a", "b", "c"}),
            "*3\r\n:1\r\n:1\r\n:0\r\n");
}

}  // namespace
}  // namespace shardfilter::testing
