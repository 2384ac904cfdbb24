// SF.* through the command layer (docs/server.md, "shardfilter's own
// commands"): every type, the options of SF.CREATE and their errors,
// removal, statistics and online migration with progress.
#include <chrono>
#include <string>
#include <thread>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

using SfCommandsTest = CommandsFixture;

TEST_F(SfCommandsTest, CountingFilterAddRemoveCount) {
  EXPECT_EQ(Run({"SF.CREATE", "c", "counting", "1000", "ERROR", "0.001",
                 "SHARDS", "2"}),
            "+OK\r\n");
  EXPECT_EQ(Run({"TYPE", "c"}).substr(0, 1), "+");
  EXPECT_EQ(Run({"SF.ADD", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.ADD", "c", "a"}), ":1\r\n");  // a multiset
  EXPECT_EQ(Run({"SF.COUNT", "c", "a"}), ":2\r\n");
  EXPECT_EQ(Run({"SF.MADD", "c", "b", "d"}), "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"SF.MEXISTS", "c", "a", "b", "zz"}),
            "*3\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.REMOVE", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.COUNT", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.REMOVE", "c", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.REMOVE", "c", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.EXISTS", "c", "a"}), ":0\r\n");
  // Missing keys: queries answer "absent", mutations "not found".
  EXPECT_EQ(Run({"SF.EXISTS", "none", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.COUNT", "none", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.MEXISTS", "none", "a", "b"}), "*2\r\n:0\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.ADD", "none", "a"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.REMOVE", "none", "a"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.INFO", "none"}), "-ERR not found\r\n");
}

TEST_F(SfCommandsTest, BloomAnswersAlreadyPresentAndRefusesRemove) {
  EXPECT_EQ(Run({"SF.CREATE", "b", "bloom", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.ADD", "b", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.ADD", "b", "x"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.COUNT", "b", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.REMOVE", "b", "x"}),
            "-ERR bloom filters cannot remove items (use a counting or "
            "cuckoo filter)\r\n");
  EXPECT_EQ(Run({"SF.EXISTS", "b", "x"}), ":1\r\n");
  // SF.* and BF.* see the same filter.
  EXPECT_EQ(Run({"BF.EXISTS", "b", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "b", "bloom", "10"}), "-ERR item exists\r\n");
}

TEST_F(SfCommandsTest, UnionOfBloomFilters) {
  EXPECT_EQ(Run({"BF.RESERVE", "day1", "0.01", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "day2", "0.01", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "week", "0.01", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.MADD", "day1", "a", "b"}), "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"BF.MADD", "day2", "c", "d"}), "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"SF.UNION", "week", "day1", "day2"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.MEXISTS", "week", "a", "b", "c", "d"}),
            "*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n");
  // The sources are unchanged; a filter with itself is a no-op.
  EXPECT_EQ(Run({"BF.EXISTS", "day1", "c"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.UNION", "week", "week"}), "+OK\r\n");
  // BF.CARD: the distinct items the bits imply; a repeat changes nothing.
  EXPECT_EQ(Run({"BF.CARD", "week"}), ":4\r\n");
  EXPECT_EQ(Run({"SF.UNION", "week", "day1", "day2"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.CARD", "week"}), ":4\r\n");

  // Errors change nothing.
  EXPECT_EQ(Run({"SF.UNION", "week"}),
            "-ERR wrong number of arguments for 'sf.union' command\r\n");
  EXPECT_EQ(Run({"SF.UNION", "nosuch", "day1"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.UNION", "day1", "nosuch"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"BF.RESERVE", "big", "0.01", "5000"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.ADD", "big", "z"}), ":1\r\n");
  const std::string shape = Run({"SF.UNION", "day1", "day2", "big"});
  EXPECT_EQ(shape.rfind("-ERR ", 0), 0u) << shape;
  EXPECT_NE(shape.find("differ in shape"), std::string::npos) << shape;
  EXPECT_EQ(Run({"BF.EXISTS", "day1", "c"}), ":0\r\n");  // day2 not ORed
  EXPECT_EQ(Run({"CF.RESERVE", "cf", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.UNION", "day1", "cf"}),
            "-ERR union of filter \"cf\" into filter \"day1\": only Bloom "
            "filters can be unioned\r\n");
  EXPECT_EQ(Run({"SF.UNION", "cf", "day1"}),
            "-ERR union of filter \"day1\" into filter \"cf\": only Bloom "
            "filters can be unioned\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "seen"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.UNION", "day1", "seen"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(Run({"SF.UNION", "seen", "day1"}).substr(0, 10), "-WRONGTYPE");
  EXPECT_EQ(Run({"SF.CREATE", "kept", "bloom", "1000", "RETAIN"}), "+OK\r\n");
  const std::string retained = Run({"SF.UNION", "kept", "day1"});
  EXPECT_NE(retained.find("retains hashes"), std::string::npos) << retained;
}

TEST_F(SfCommandsTest, CreateOptionsAndErrors) {
  EXPECT_EQ(
      Run({"SF.CREATE", "k", "bloomy", "10"}),
      "-ERR unknown filter type 'bloomy' (bloom, counting or cuckoo)\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "0"}).substr(0, 17),
            "-ERR bad capacity");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "x"}).substr(0, 17),
            "-ERR bad capacity");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "ERROR", "1"}),
            "-ERR 0 < error rate range < 1\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "ERROR", "nan"}),
            "-ERR 0 < error rate range < 1\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "SHARDS", "3"}),
            "-ERR SHARDS must be a power of two in 1..256\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "SHARDS", "512"}),
            "-ERR SHARDS must be a power of two in 1..256\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "EXPANSION", "0"}),
            "-ERR EXPANSION must be in 1..16\r\n");
  EXPECT_EQ(
      Run({"SF.CREATE", "k", "bloom", "10", "NONSCALING", "EXPANSION", "2"}),
      "-Nonscaling filters cannot expand\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "BUCKETSIZE", "4"}),
            "-ERR BUCKETSIZE must be 2, 4 or 8 (cuckoo filters)\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "cuckoo", "10", "BUCKETSIZE", "3"}),
            "-ERR BUCKETSIZE must be 2, 4 or 8 (cuckoo filters)\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "DURABILITY", "maybe"}),
            "-ERR DURABILITY must be none, journal or sync\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "ERROR"}),
            "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom", "10", "WHAT", "1"}),
            "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "bloom"}),
            "-ERR wrong number of arguments for 'sf.create' command\r\n");
  // Nothing of the refused ones was created.
  EXPECT_EQ(Run({"EXISTS", "k"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.CREATE", "k", "cuckoo", "5000", "BUCKETSIZE", "8",
                 "MAXITERATIONS", "100", "SHARDS", "4", "NONSCALING",
                 "DURABILITY", "sync", "RETAIN"}),
            "+OK\r\n");
  auto f = db_->Get("k");
  ASSERT_TRUE(f.ok());
  const FilterSpec spec = (*f)->spec();
  EXPECT_EQ(spec.type, FilterType::kCuckoo);
  EXPECT_EQ(spec.bucket_size, 8u);
  EXPECT_EQ(spec.max_kicks, 100u);
  EXPECT_EQ(spec.shards, 4u);
  EXPECT_FALSE(spec.scalable);
  EXPECT_EQ(spec.durability, Durability::kSync);
  EXPECT_TRUE(spec.retain_hashes);
  // Retained hashes need a journal: refused with none.
  EXPECT_EQ(
      Run({"SF.CREATE", "r", "bloom", "10", "DURABILITY", "none", "RETAIN"})
          .substr(0, 5),
      "-ERR ");
  EXPECT_EQ(Run({"EXISTS", "r"}), ":0\r\n");
}

TEST_F(SfCommandsTest, InfoAndShards) {
  ASSERT_EQ(Run({"SF.CREATE", "c", "cuckoo", "1000", "SHARDS", "2"}),
            "+OK\r\n");
  ASSERT_EQ(Run({"SF.MADD", "c", "a", "b", "c"}), "*3\r\n:1\r\n:1\r\n:1\r\n");
  const std::string info = Run({"SF.INFO", "c"});
  EXPECT_EQ(info.substr(0, 5), "*36\r\n") << info;  // 18 pairs, RESP2
  EXPECT_NE(info.find("+type\r\n$6\r\ncuckoo\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("+items\r\n:3\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("+shards\r\n:2\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("+durability\r\n$7\r\njournal\r\n"), std::string::npos)
      << info;
  const std::string shards = Run({"SF.SHARDS", "c"});
  EXPECT_EQ(shards.substr(0, 9), "*2\r\n*20\r\n") << shards;
  EXPECT_NE(shards.find("+shard\r\n:1\r\n"), std::string::npos) << shards;
  // RESP3: maps, doubles.
  writer_.SetProtocol(3);
  const std::string info3 = Run({"SF.INFO", "c"});
  EXPECT_EQ(info3.substr(0, 5), "%18\r\n") << info3;
  EXPECT_NE(info3.find("+error_rate\r\n,0.01\r\n"), std::string::npos) << info3;
}

TEST_F(SfCommandsTest, MigrateOnlineWithProgress) {
  ASSERT_EQ(Run({"SF.CREATE", "m", "counting", "2000", "RETAIN"}), "+OK\r\n");
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(Run({"SF.ADD", "m", "k" + std::to_string(i)}), ":1\r\n");
  }
  EXPECT_EQ(Run({"SF.MIGRATION", "m"}), "-ERR no migration\r\n");
  EXPECT_EQ(Run({"SF.MIGRATE", "none", "cuckoo", "10"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.MIGRATE", "m", "cuckoo", "20000", "SHARDS", "4"}),
            "+OK\r\n");
  std::string progress;
  for (int i = 0; i < 500; ++i) {
    progress = Run({"SF.MIGRATION", "m"});
    if (progress.find("$4\r\ndone\r\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(progress.find("+phase\r\n$4\r\ndone\r\n"), std::string::npos)
      << progress;
  EXPECT_NE(progress.find("+items_done\r\n:500\r\n"), std::string::npos)
      << progress;
  const std::string info = Run({"SF.INFO", "m"});
  EXPECT_NE(info.find("$6\r\ncuckoo\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("+shards\r\n:4\r\n"), std::string::npos) << info;
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(Run({"SF.COUNT", "m", "k" + std::to_string(i)}), ":1\r\n") << i;
  }
  // Without retained hashes a counting filter cannot be rebuilt.
  ASSERT_EQ(Run({"SF.CREATE", "n", "counting", "100"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.MIGRATE", "n", "cuckoo", "100"}).substr(0, 5), "-ERR ");
}

}  // namespace
}  // namespace shardfilter::testing
