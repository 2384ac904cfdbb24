// ReplyReader (tools/resp/reply_reader.h): every RESP2/RESP3 reply type,
// partial input, and malformed or oversized replies from a hostile server.
#include <gtest/gtest.h>

#include <string>

#include "tools/resp/reply_reader.h"

namespace shardfilter::resp {
namespace {

ReplyStatus ParseAll(std::string_view bytes, Reply* r, size_t* used,
                     ReplyLimits limits = {}) {
  ReplyReader reader(limits);
  ReplyStatus s = reader.Parse(bytes, r);
  *used = s == ReplyStatus::kReply ? reader.consumed() : 0;
  return s;
}

TEST(ReplyReaderTest, Resp2Types) {
  Reply r;
  size_t used = 0;
  ASSERT_EQ(ParseAll("+OK\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.type, Reply::Type::kSimple);
  EXPECT_EQ(r.str, "OK");
  EXPECT_EQ(used, 5u);
  ASSERT_EQ(ParseAll("-MOVED 3999 127.0.0.1:6381\r\n", &r, &used),
            ReplyStatus::kReply);
  EXPECT_TRUE(r.IsErrorCode("MOVED"));
  EXPECT_FALSE(r.IsErrorCode("MOV"));
  EXPECT_FALSE(r.IsErrorCode("ASK"));
  ASSERT_EQ(ParseAll(":-42\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.integer, -42);
  ASSERT_EQ(ParseAll("$5\r\na\r\nbc\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.str, std::string("a\r\nbc"));
  ASSERT_EQ(ParseAll("$-1\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.type, Reply::Type::kNull);
  ASSERT_EQ(ParseAll("*-1\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.type, Reply::Type::kNull);
  ASSERT_EQ(ParseAll("*3\r\n:1\r\n-ERR x\r\n*1\r\n$0\r\n\r\n+tail", &r, &used),
            ReplyStatus::kReply);
  ASSERT_EQ(r.elements.size(), 3u);
  EXPECT_EQ(r.elements[1].str, "ERR x");
  EXPECT_EQ(r.elements[2].elements[0].str, "");
  EXPECT_EQ(used, std::string("*3\r\n:1\r\n-ERR x\r\n*1\r\n$0\r\n\r\n").size());
}

TEST(ReplyReaderTest, Resp3Types) {
  Reply r;
  size_t used = 0;
  ASSERT_EQ(ParseAll("%2\r\n+a\r\n#t\r\n+b\r\n,1.5\r\n", &r, &used),
            ReplyStatus::kReply);
  EXPECT_EQ(r.type, Reply::Type::kMap);
  ASSERT_EQ(r.elements.size(), 4u);
  EXPECT_EQ(r.elements[1].type, Reply::Type::kBoolean);
  EXPECT_EQ(r.elements[1].integer, 1);
  EXPECT_DOUBLE_EQ(r.elements[3].number, 1.5);
  ASSERT_EQ(ParseAll("_\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.type, Reply::Type::kNull);
  ASSERT_EQ(ParseAll("=8\r\ntxt:abcd\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.str, "abcd");
  ASSERT_EQ(ParseAll("!5\r\nERR x\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_TRUE(r.is_error());
  ASSERT_EQ(ParseAll("~1\r\n:1\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.type, Reply::Type::kArray);
  ASSERT_EQ(ParseAll("(-123\r\n", &r, &used), ReplyStatus::kReply);
  EXPECT_EQ(r.str, "-123");
}

TEST(ReplyReaderTest, EveryPrefixNeedsMore) {
  const std::string whole = "*2\r\n$3\r\nabc\r\n%1\r\n+k\r\n:7\r\n";
  for (size_t n = 0; n < whole.size(); ++n) {
    Reply r;
    size_t used = 0;
    EXPECT_EQ(ParseAll(whole.substr(0, n), &r, &used), ReplyStatus::kNeedMore)
        << n;
  }
}

TEST(ReplyReaderTest, MalformedRepliesAreErrors) {
  for (std::string bad :
       {"?x\r\n", ":12a\r\n", ":\r\n", "$-2\r\n", "$3\r\nabcd\r\n", "*-2\r\n",
        "#x\r\n", ",\r\n", "+OK\n", "_x\r\n", "=3\r\nabc\r\n", "~-1\r\n",
        "|1\r\n+a\r\n+b\r\n", "(12x\r\n"}) {
    Reply r;
    ReplyReader reader;
    EXPECT_EQ(reader.Parse(bad, &r), ReplyStatus::kError) << bad;
    EXPECT_EQ(reader.error().rfind("Protocol error: ", 0), 0u) << bad;
  }
}

TEST(ReplyReaderTest, LimitsHoldAgainstAHostileServer) {
  ReplyLimits limits;
  limits.max_bulk_bytes = 100;
  limits.max_elements = 10;
  limits.max_depth = 3;
  limits.max_line_bytes = 32;
  Reply r;
  size_t used = 0;
  EXPECT_EQ(ParseAll("$101\r\n", &r, &used, limits), ReplyStatus::kError);
  EXPECT_EQ(ParseAll("*11\r\n", &r, &used, limits), ReplyStatus::kError);
  EXPECT_EQ(ParseAll("%6\r\n", &r, &used, limits), ReplyStatus::kError);
  EXPECT_EQ(ParseAll("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", &r, &used, limits),
            ReplyStatus::kError);
  EXPECT_EQ(ParseAll("+" + std::string(40, 'a'), &r, &used, limits),
            ReplyStatus::kError);
  // A huge announced array with few bytes present allocates nothing large.
  EXPECT_EQ(ParseAll("*9999999\r\n:1\r\n", &r, &used), ReplyStatus::kNeedMore);
  EXPECT_EQ(ParseAll("*99999999999\r\n", &r, &used), ReplyStatus::kError);
}

}  // namespace
}  // namespace shardfilter::resp
