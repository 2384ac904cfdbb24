// RespWriter's output bound (the server's client-output-buffer-limit,
// checked at every append): the buffer never passes it, the reply part
// that would have is dropped with everything after it, and the host's stop
// flag is raised.
#include <gtest/gtest.h>

#include <string>

#include "tools/resp/reply_writer.h"

namespace shardfilter::resp {
namespace {

TEST(RespWriterLimitTest, NothingIsAppendedPastTheLimit) {
  std::string out = "already sent";
  RespWriter w(&out);
  bool stop = false;
  w.SetLimit(out.size() + 100, &stop);
  w.Bulk(std::string(50, 'a'));  // 57 bytes: fits
  EXPECT_FALSE(w.overflowed());
  EXPECT_FALSE(stop);
  const size_t kept = out.size();
  w.Bulk(std::string(50, 'b'));  // would pass the limit
  EXPECT_TRUE(w.overflowed());
  EXPECT_TRUE(stop);
  EXPECT_EQ(out.size(), kept);
  w.Integer(1);  // later parts too, however small
  w.SimpleString("OK");
  w.Array(2);
  EXPECT_EQ(out.size(), kept);
  EXPECT_LE(out.size(), std::string("already sent").size() + 100);
}

TEST(RespWriterLimitTest, NoLimitByDefault) {
  std::string out;
  RespWriter w(&out);
  w.Bulk(std::string(1 << 20, 'x'));
  EXPECT_FALSE(w.overflowed());
  EXPECT_EQ(out.size(), (1u << 20) + 12);  // "$1048576\r\n" ... "\r\n"
}

}  // namespace
}  // namespace shardfilter::resp
