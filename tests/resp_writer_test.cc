// RespWriter: every reply type's bytes under RESP2 and RESP3.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tools/resp/reply_writer.h"

namespace shardfilter::resp {
namespace {

std::string Write(int protocol, void (*fn)(ReplyWriter&)) {
  std::string out;
  RespWriter w(&out, protocol);
  fn(w);
  return out;
}

TEST(RespWriterTest, ScalarsAreTheSameUnderBothProtocols) {
  for (int proto : {2, 3}) {
    EXPECT_EQ(Write(proto, [](ReplyWriter& w) { w.SimpleString("OK"); }),
              "+OK\r\n");
    EXPECT_EQ(Write(proto, [](ReplyWriter& w) { w.Error("ERR not found"); }),
              "-ERR not found\r\n");
    EXPECT_EQ(Write(proto, [](ReplyWriter& w) { w.Integer(-42); }), ":-42\r\n");
    EXPECT_EQ(
        Write(proto, [](ReplyWriter& w) { w.Bulk(std::string("a\0b", 3)); }),
        std::string("$3\r\na\0b\r\n", 9));
    EXPECT_EQ(Write(proto, [](ReplyWriter& w) { w.Array(2); }), "*2\r\n");
  }
}

TEST(RespWriterTest, LineRepliesCannotBreakTheFraming) {
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Error("ERR a\r\nb"); }),
            "-ERR a  b\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.SimpleString("x\ny"); }),
            "+x y\r\n");
}

TEST(RespWriterTest, Resp3TypesFallBackUnderResp2) {
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Null(); }), "$-1\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Null(); }), "_\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.NullArray(); }), "*-1\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.NullArray(); }), "_\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Map(3); }), "*6\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Map(3); }), "%3\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Set(2); }), "*2\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Set(2); }), "~2\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Boolean(true); }), ":1\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Boolean(false); }), ":0\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Boolean(true); }), "#t\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Boolean(false); }), "#f\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Double(0.5); }), "$3\r\n0.5\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Double(0.5); }), ",0.5\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Double(INFINITY); }), ",inf\r\n");
  EXPECT_EQ(Write(2, [](ReplyWriter& w) { w.Verbatim("txt", "hi"); }),
            "$2\r\nhi\r\n");
  EXPECT_EQ(Write(3, [](ReplyWriter& w) { w.Verbatim("txt", "hi"); }),
            "=6\r\ntxt:hi\r\n");
}

TEST(RespWriterTest, ProtocolCanChangeMidStream) {
  std::string out;
  RespWriter w(&out, 2);
  w.Boolean(true);
  w.SetProtocol(3);
  w.Boolean(true);
  EXPECT_EQ(out, ":1\r\n#t\r\n");
  EXPECT_EQ(w.protocol(), 3);
}

TEST(RespWriterTest, FormatDoubleMatchesRedis) {
  EXPECT_EQ(FormatDouble(0.25), "0.25");
  EXPECT_EQ(FormatDouble(3), "3");
  EXPECT_EQ(FormatDouble(-INFINITY), "-inf");
  EXPECT_EQ(FormatDouble(NAN), "nan");
}

}  // namespace
}  // namespace shardfilter::resp
