// BF/CF.SCANDUMP and LOADCHUNK: a filter dumped in chunks and loaded under
// another name answers alike; bad headers, order and types are refused.
#include <string>
#include <utility>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

class DumpTest : public CommandsFixture {
 protected:
  // Parses "*2\r\n:<iter>\r\n$<n>\r\n<data>\r\n" (or a null bulk).
  static std::pair<int64_t, std::string> Chunk(const std::string& reply) {
    EXPECT_EQ(reply.rfind("*2\r\n:", 0), 0u) << reply;
    const size_t nl = reply.find("\r\n", 5);
    const int64_t iter = std::stoll(reply.substr(5, nl - 5));
    const size_t bulk = nl + 2;
    if (reply.compare(bulk, 3, "$-1") == 0) return {iter, ""};
    const size_t nl2 = reply.find("\r\n", bulk);
    const size_t len = std::stoul(reply.substr(bulk + 1, nl2 - bulk - 1));
    return {iter, reply.substr(nl2 + 2, len)};
  }

  // SCANDUMP src to the end; LOADCHUNK every chunk into dst.
  size_t Copy(const std::string& family, const std::string& src,
              const std::string& dst) {
    std::vector<std::pair<int64_t, std::string>> chunks;
    int64_t iter = 0;
    for (;;) {
      auto [next, data] =
          Chunk(Run({family + ".SCANDUMP", src, std::to_string(iter)}));
      if (next == 0) break;
      chunks.emplace_back(next, std::move(data));
      iter = next;
    }
    for (const auto& [it, data] : chunks) {
      EXPECT_EQ(Run({family + ".LOADCHUNK", dst, std::to_string(it), data}),
                "+OK\r\n");
    }
    return chunks.size();
  }
};

TEST_F(DumpTest, BloomRoundTripsThroughSeveralChunks) {
  // ~24 MB of table: two 16 MB chunks after the header.
  ASSERT_EQ(Run({"BF.RESERVE", "b", "0.01", "20000000"}), "+OK\r\n");
  ASSERT_EQ(Run({"BF.MADD", "b", "a", "b", "c"}), "*3\r\n:1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Copy("BF", "b", "b2"), 3u);
  EXPECT_EQ(Run({"BF.MEXISTS", "b2", "a", "b", "c", "zz"}),
            "*4\r\n:1\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"BF.INFO", "b2"}), Run({"BF.INFO", "b"}));
  EXPECT_EQ(Run({"BF.SCANDUMP", "missing", "0"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"BF.SCANDUMP", "b", "x"}),
            "-Second argument must be numeric\r\n");
}

TEST_F(DumpTest, CuckooRoundTripsAndKeepsCounts) {
  ASSERT_EQ(Run({"CF.INSERT", "c", "ITEMS", "a", "a", "b"}),
            "*3\r\n:1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Copy("CF", "c", "c2"), 2u);
  EXPECT_EQ(Run({"CF.COUNT", "c2", "a"}), ":2\r\n");
  EXPECT_EQ(Run({"CF.INFO", "c2"}), Run({"CF.INFO", "c"}));
  // The end of a cuckoo dump is [0, nil], as RedisBloom's.
  Run({"CF.SCANDUMP", "c", "0"});
  const std::string last = Run({"CF.SCANDUMP", "c", "1000000000"});
  EXPECT_EQ(last, "*2\r\n:0\r\n$-1\r\n");
}

TEST_F(DumpTest, LoadRefusesBadInput) {
  ASSERT_EQ(Run({"BF.ADD", "b", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"CF.ADD", "c", "a"}), ":1\r\n");
  auto [one, header] = Chunk(Run({"BF.SCANDUMP", "b", "0"}));
  ASSERT_EQ(one, 1);
  auto [end, body] = Chunk(Run({"BF.SCANDUMP", "b", "1"}));
  EXPECT_EQ(Run({"BF.LOADCHUNK", "b", "1", header}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "c", "1", header}),
            "-WRONGTYPE Operation against a key holding the wrong kind of "
            "value\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", "1", "garbage"})
                .rfind("-ERR invalid header", 0),
            0u);
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", "x", header}),
            "-ERR Second argument must be numeric\r\n");
  // A chunk without its header, or out of order.
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", std::to_string(end), body})
                .rfind("-ERR invalid chunk position", 0),
            0u);
  ASSERT_EQ(Run({"BF.LOADCHUNK", "n", "1", header}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", std::to_string(end + 5), body})
                .rfind("-ERR invalid chunk position", 0),
            0u);
  // Damaged bytes: refused by the dump's checksum, nothing created.
  std::string damaged = body;
  damaged[damaged.size() / 2] ^= 0x40;
  ASSERT_EQ(Run({"BF.LOADCHUNK", "n", "1", header}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", std::to_string(end), damaged})
                .rfind("-ERR could not load the dump", 0),
            0u);
  EXPECT_EQ(Run({"EXISTS", "n"}), ":0\r\n");
  // A Bloom dump is not a cuckoo filter.
  ASSERT_EQ(Run({"CF.LOADCHUNK", "n", "1", header}), "+OK\r\n");
  EXPECT_EQ(Run({"CF.LOADCHUNK", "n", std::to_string(end), body}),
            "-ERR the dump is not a cuckoo filter's\r\n");
  EXPECT_EQ(Run({"EXISTS", "n"}), ":0\r\n");
}

}  // namespace
}  // namespace shardfilter::testing
