// RequestParser: multibulk and inline requests, pipelining split at every
// byte, Redis's limits and error texts for malformed input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/resp/request_parser.h"

namespace shardfilter::resp {
namespace {

using Request = std::vector<std::string>;

// Feeds `wire` to one parser as a host does: bytes arrive in the given
// chunks, each Parse sees every unconsumed byte. Returns the requests, and
// the error text when parsing failed ("" otherwise).
std::vector<Request> Drive(const std::string& wire,
                           const std::vector<size_t>& cuts,
                           std::string* error = nullptr,
                           const ParserLimits& limits = {},
                           bool authenticated = true) {
  RequestParser p(limits);
  std::string buffer;  // unconsumed bytes
  std::vector<Request> out;
  size_t fed = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(wire.size());
  for (size_t end : ends) {
    buffer.append(wire, fed, end - fed);
    fed = end;
    for (;;) {
      const ParseStatus st = p.Parse(buffer, authenticated);
      if (st == ParseStatus::kNeedMore) break;
      if (st == ParseStatus::kError) {
        if (error != nullptr) *error = p.error();
        return out;
      }
      Request r;
      for (std::string_view a : p.args()) r.emplace_back(a);
      out.push_back(r);
      // Consume by copying into a fresh string: the parser must not rely
      // on the buffer's address.
      buffer = buffer.substr(p.consumed());
    }
  }
  if (error != nullptr) error->clear();
  return out;
}

std::vector<Request> Whole(const std::string& wire,
                           std::string* error = nullptr,
                           const ParserLimits& limits = {},
                           bool authenticated = true) {
  return Drive(wire, {}, error, limits, authenticated);
}

std::string Error(const std::string& wire, const ParserLimits& limits = {},
                  bool authenticated = true) {
  std::string error;
  Whole(wire, &error, limits, authenticated);
  return error;
}

using namespace std::string_literals;  // NOLINT: "..."s keeps NUL bytes

const std::string kPipeline =
    "*3\r\n$6\r\nBF.ADD\r\n$3\r\nkey\r\n$5\r\nitem1\r\n"
    "PING\r\n"
    "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
    "*0\r\n"
    "\r\n"
    "set 'a b' \"c\\x41\\n\" plain\r\n"
    "*1\r\n$8\r\nbin\r\n\0ry\r\n"s;

const std::vector<Request> kPipelineRequests = {
    {"BF.ADD", "key", "item1"},      {"PING"},         {"ECHO", ""},
    {"set", "a b", "cA\n", "plain"}, {"bin\r\n\0ry"s},
};

TEST(RespParserTest, ParsesMultibulkAndInlineRequests) {
  std::string error;
  EXPECT_EQ(Whole(kPipeline, &error), kPipelineRequests);
  EXPECT_EQ(error, "");
}

TEST(RespParserTest, EveryByteSplitOfAPipelineGivesTheSameRequests) {
  const std::string& wire = kPipeline;
  const auto& want = kPipelineRequests;
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    std::string error;
    EXPECT_EQ(Drive(wire, {cut}, &error), want) << "cut at " << cut;
    EXPECT_EQ(error, "") << "cut at " << cut;
  }
  // Pairs of cuts, and one byte at a time.
  for (size_t a = 0; a <= wire.size(); a += 3) {
    for (size_t b = a; b <= wire.size(); b += 5) {
      EXPECT_EQ(Drive(wire, {a, b}), want) << a << "," << b;
    }
  }
  std::vector<size_t> bytewise;
  for (size_t i = 1; i < wire.size(); ++i) bytewise.push_back(i);
  EXPECT_EQ(Drive(wire, bytewise), want);
}

TEST(RespParserTest, ArgsAreViewsIntoTheBuffer) {
  RequestParser p;
  const std::string wire = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n";
  ASSERT_EQ(p.Parse(wire, true), ParseStatus::kCommand);
  ASSERT_EQ(p.args().size(), 2u);
  EXPECT_EQ(p.args()[0].data(), wire.data() + 8);  // no copy
  EXPECT_EQ(p.consumed(), 20u);
  std::string_view rest(wire);
  rest.remove_prefix(p.consumed());
  ASSERT_EQ(p.Parse(rest, true), ParseStatus::kCommand);
  EXPECT_EQ(p.args()[0].data(), rest.data());  // unquoted inline: no copy
  EXPECT_EQ(p.consumed(), rest.size());
}

TEST(RespParserTest, ReportsTheBytesALargeBulkStillNeeds) {
  RequestParser p;
  const std::string head = "*2\r\n$3\r\nSET\r\n$100000\r\nabc";
  ASSERT_EQ(p.Parse(head, true), ParseStatus::kNeedMore);
  EXPECT_EQ(p.bytes_needed(), 100000u + 2 - 3);
}

TEST(RespParserTest, EmptyRequestsAreSkipped) {
  EXPECT_EQ(Whole("*0\r\n*-1\r\n\r\n   \r\nPING\r\n"),
            (std::vector<Request>{{"PING"}}));
  EXPECT_TRUE(Whole("*0\r\n\r\n").empty());
}

TEST(RespParserTest, InlineQuotingFollowsRedis) {
  EXPECT_EQ(Whole("a \"b\\tc\" 'd\\'e' \"\\x4a\\x4B\"\r\n"),
            (std::vector<Request>{{"a", "b\tc", "d'e", "JK"}}));
  EXPECT_EQ(Whole("x\"y z\"\n"), (std::vector<Request>{{"xy z"}}));
  EXPECT_EQ(Error("set \"abc\r\n"),
            "Protocol error: unbalanced quotes in request");
  EXPECT_EQ(Error("set \"abc\"def\r\n"),
            "Protocol error: unbalanced quotes in request");
  EXPECT_EQ(Error("set 'abc\r\n"),
            "Protocol error: unbalanced quotes in request");
}

TEST(RespParserTest, MalformedMultibulkGetsRedisErrors) {
  EXPECT_EQ(Error("*abc\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(Error("*1x\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(Error("*3\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(Error("*\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(Error("*99999999999999999999\r\n"),
            "Protocol error: invalid multibulk length");
  EXPECT_EQ(Error("*2\r\n+foo\r\n"), "Protocol error: expected '$', got '+'");
  EXPECT_EQ(Error("*1\r\n\x01"), "Protocol error: expected '$', got '\\x01'");
  EXPECT_EQ(Error("*1\r\n$-5\r\n"), "Protocol error: invalid bulk length");
  EXPECT_EQ(Error("*1\r\n$abc\r\n"), "Protocol error: invalid bulk length");
  EXPECT_EQ(Error("*1\r\n$3\r\nabcXY"),
            "Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(Error("*1\r\n$" + std::string(70000, '1')),
            "Protocol error: too big bulk count string");
  EXPECT_EQ(Error("*" + std::string(70000, '1')),
            "Protocol error: too big mbulk count string");
  EXPECT_EQ(Error(std::string(70000, 'a')),
            "Protocol error: too big inline request");
  EXPECT_EQ(Error(std::string(70000, 'a') + "\r\n"),
            "Protocol error: too big inline request");
}

TEST(RespParserTest, LimitsAreEnforced) {
  ParserLimits small;
  small.max_bulk_bytes = 10;
  small.max_args = 3;
  EXPECT_EQ(Error("*1\r\n$11\r\n", small),
            "Protocol error: invalid bulk length");
  EXPECT_EQ(Error("*1\r\n$10\r\n0123456789\r\n", small), "");
  EXPECT_EQ(Error("*4\r\n", small), "Protocol error: invalid multibulk length");
  // Before AUTH: at most 10 arguments and 16 KB per bulk.
  EXPECT_EQ(Error("*11\r\n", {}, /*authenticated=*/false),
            "Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(Error("*10\r\n", {}, false), "");
  EXPECT_EQ(Error("*1\r\n$16385\r\n", {}, false),
            "Protocol error: unauthenticated bulk length");
  EXPECT_EQ(Error("*1\r\n$16384\r\n", {}, false), "");
  EXPECT_EQ(Error("*1\r\n$16385\r\n", {}, true), "");
}

TEST(RespParserTest, ErrorsAreStickyUntilReset) {
  RequestParser p;
  ASSERT_EQ(p.Parse("*x\r\n", true), ParseStatus::kError);
  EXPECT_EQ(p.Parse("PING\r\n", true), ParseStatus::kError);
  p.Reset();
  EXPECT_EQ(p.Parse("PING\r\n", true), ParseStatus::kCommand);
}

TEST(RespParserTest, ParseInt64IsStrict) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ParseInt64("-12", &v));
  EXPECT_EQ(v, -12);
  EXPECT_TRUE(ParseInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "01", "-0", "1e3",
                          "9223372036854775808", "18446744073709551616"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << bad;
  }
}

}  // namespace
}  // namespace shardfilter::resp
