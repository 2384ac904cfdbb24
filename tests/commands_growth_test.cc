// Growth through RedisBloom's commands: a cuckoo filter stops at 32
// sub-filters as RedisBloom's does and answers its text; a scaling Bloom
// filter of EXPANSION 1 goes on past 32 links of its first size, and when
// it truly cannot grow answers RedisBloom's text for that (not the
// non-scaling filter's).
#include <string>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

class GrowthCommandsTest : public CommandsFixture {
 protected:
  // Reopens the keyspace with a per-filter memory limit.
  void LimitFilterBytes(uint64_t bytes) {
    ks_options_.max_filter_bytes = bytes;
    OpenStore();
  }
};

// RedisBloom (cf-max-expansions 32): CF.RESERVE k 64, then ~1,856 adds in
// 2,600 bytes, then "Maximum expansions reached". Here the links past
// link 7 were sized at ever lower loads (838 MB for 1,856 items) until the
// filter's 1 GiB limit; with a 64 MiB limit the 1,601st add answered
// "Filter is full".
TEST_F(GrowthCommandsTest,
       CuckooStopsAtThirtyTwoSubFiltersWithRedisBloomsText) {
  LimitFilterBytes(64u << 20);
  ASSERT_EQ(Run({"CF.RESERVE", "k", "64"}), "+OK\r\n");
  std::string last;
  int added = 0;
  for (int i = 0; i < 5000; ++i) {
    last = Run({"CF.ADD", "k", "item:" + std::to_string(i)});
    if (last != ":1\r\n") break;
    ++added;
  }
  EXPECT_EQ(last, "-Maximum expansions reached\r\n");
  EXPECT_GE(added, 31 * 60);
  const std::string info = Run({"CF.INFO", "k"});
  EXPECT_NE(info.find("+Number of filters\r\n:32\r\n"), std::string::npos)
      << info;
  // Every item added is still there; the refused one changed nothing.
  for (int i = 0; i < added; ++i) {
    ASSERT_EQ(Run({"CF.EXISTS", "k", "item:" + std::to_string(i)}), ":1\r\n")
        << i;
  }
  // CF.INSERT reports each refused item as RedisBloom's multi form does.
  EXPECT_EQ(Run({"CF.INSERT", "k", "ITEMS", "new:a"}), "*1\r\n:-1\r\n");
}

// BF.RESERVE k 0.01 100 EXPANSION 1 held 3,200 items (32 links of 100),
// then answered "ERR non scaling filter is full".
TEST_F(GrowthCommandsTest, ExpansionOneBloomHoldsFarMoreThanThirtyTwoLinks) {
  ASSERT_EQ(Run({"BF.RESERVE", "k", "0.01", "100", "EXPANSION", "1"}),
            "+OK\r\n");
  constexpr int kBatch = 500, kItems = 20'000;
  std::string all_added = "*" + std::to_string(kBatch) + "\r\n";
  for (int i = 0; i < kBatch; ++i) all_added += ":1\r\n";
  int refused_batches = 0;
  for (int b = 0; b < kItems / kBatch; ++b) {
    std::vector<std::string> cmd = {"BF.MADD", "k"};
    for (int i = 0; i < kBatch; ++i) {
      cmd.push_back("item:" + std::to_string(b * kBatch + i));
    }
    const std::string reply = Run(cmd);
    // Every reply element is 1 but a Bloom false positive's 0.
    if (const size_t error = reply.find("\r\n-"); error != std::string::npos) {
      ++refused_batches;
      if (refused_batches == 1) {
        ADD_FAILURE() << "batch " << b << ": "
                      << reply.substr(error + 2,
                                      reply.find('\r', error + 2) - error - 2);
      }
    }
  }
  EXPECT_EQ(refused_batches, 0);
  const std::string info = Run({"BF.INFO", "k", "ITEMS"});
  EXPECT_GE(std::stoll(info.substr(info.find(':') + 1)), kItems * 99 / 100)
      << info;
}

// A scaling filter that cannot grow (here: its next link does not fit the
// per-filter limit) answers what RedisBloom answers when SBChain_Add cannot
// add a link (with the reason); "non scaling filter is full" stays the
// non-scaling answer.
TEST_F(GrowthCommandsTest, ScalingBloomThatCannotGrowAnswersRedisBloomsText) {
  LimitFilterBytes(4096);
  ASSERT_EQ(Run({"BF.RESERVE", "s", "0.01", "1000"}), "+OK\r\n");
  ASSERT_EQ(Run({"BF.RESERVE", "n", "0.01", "1000", "NONSCALING"}), "+OK\r\n");
  for (const char* key : {"s", "n"}) {
    std::string last;
    for (int i = 0; i < 5000; ++i) {
      last = Run({"BF.ADD", key, "item:" + std::to_string(i)});
      if (last[0] == '-') break;
    }
    if (std::string(key) == "s") {
      // RedisBloom's text, then why (the reason the server adds to it).
      EXPECT_EQ(last.rfind("-ERR problem inserting into filter: ", 0), 0u)
          << last;
      EXPECT_NE(last.find("cannot grow"), std::string::npos) << last;
    } else {
      EXPECT_EQ(last, "-ERR non scaling filter is full\r\n");
    }
  }
}

}  // namespace
}  // namespace shardfilter::testing
