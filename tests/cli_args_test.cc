// Unit tests of the CLI's flag, number and escaping functions
// (tools/cli/cli_args.h). Built with the tools library; skipped when the build
// has no tools (SHARDFILTER_BUILD_TOOLS=OFF, e.g. the sanitizer builds).
#include "tools/cli/cli_args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardfilter::tools {
namespace {

uint64_t CountOk(std::string_view s) {
  Result<uint64_t> r = ParseCount(s);
  EXPECT_TRUE(r.ok()) << "'" << s << "': " << r.status().ToString();
  return r.ok() ? *r : ~uint64_t{0};
}

// The message of the error, or "(ok)" so that a wrong success fails the
// substring checks loudly.
std::string CountError(std::string_view s) {
  Result<uint64_t> r = ParseCount(s);
  if (r.ok()) return "(ok: " + std::to_string(*r) + ")";
  EXPECT_TRUE(r.status().IsInvalidArgument());
  return r.status().message();
}

TEST(ParseCountTest, PlainIntegers) {
  EXPECT_EQ(CountOk("0"), 0u);
  EXPECT_EQ(CountOk("1"), 1u);
  EXPECT_EQ(CountOk("000123"), 123u);
  EXPECT_EQ(CountOk("10000000"), 10000000u);
  EXPECT_EQ(CountOk("18446744073709551615"), UINT64_MAX);
}

TEST(ParseCountTest, ScientificAndSuffixes) {
  EXPECT_EQ(CountOk("1e6"), 1000000u);
  EXPECT_EQ(CountOk("1E6"), 1000000u);
  EXPECT_EQ(CountOk("2.5e6"), 2500000u);
  EXPECT_EQ(CountOk("1.5e+3"), 1500u);
  EXPECT_EQ(CountOk("1000e-3"), 1u);
  EXPECT_EQ(CountOk("0e0"), 0u);
  EXPECT_EQ(CountOk("1.8e19"), 18000000000000000000u);
  EXPECT_EQ(CountOk("10k"), 10000u);
  EXPECT_EQ(CountOk("10K"), 10000u);
  EXPECT_EQ(CountOk("1M"), 1000000u);
  EXPECT_EQ(CountOk("1m"), 1000000u);
  EXPECT_EQ(CountOk("2.5G"), 2500000000u);
  EXPECT_EQ(CountOk("3T"), 3000000000000u);
  EXPECT_EQ(CountOk("1e3k"), 1000000u);
  EXPECT_EQ(CountOk("10_000_000"), 10000000u);
}

TEST(ParseCountTest, RejectsNegativesAndSigns) {
  EXPECT_NE(CountError("-5").find("negative"), std::string::npos);
  EXPECT_NE(CountError("-0").find("negative"), std::string::npos);
  EXPECT_NE(CountError("+5").find("sign"), std::string::npos);
}

TEST(ParseCountTest, RejectsOverflow) {
  EXPECT_NE(CountError("18446744073709551616").find("larger"),
            std::string::npos);
  EXPECT_NE(CountError("99999999999999999999999").find("larger"),
            std::string::npos);
  EXPECT_NE(CountError("1e20").find("larger"), std::string::npos);
  EXPECT_NE(CountError("20T").find("(ok"), std::string::npos);
  EXPECT_NE(CountError("20000000T").find("larger"), std::string::npos);
  EXPECT_NE(CountError("1e9999").find("larger"), std::string::npos);
  EXPECT_NE(CountError("1e99999").find("exponent"), std::string::npos);
}

TEST(ParseCountTest, RejectsJunkAndFractions) {
  for (std::string_view bad :
       {"",   "abc",  "12abc", "1e6 ", " 1",    "1 ",    "e6",
        ".",  "1e",   "1e+",   "0x10", "1MM",   "1Mi",   "1_",
        "_1", "1__0", "nan",   "inf",  "1,000", "1.5.5", "5%"}) {
    Result<uint64_t> r = ParseCount(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << *r;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("not a valid number"),
                std::string::npos)
          << r.status().message();
    }
  }
  EXPECT_NE(CountError("1.5").find("whole"), std::string::npos);
  EXPECT_NE(CountError("1e-1").find("whole"), std::string::npos);
  EXPECT_NE(CountError("12abc").find("'abc'"), std::string::npos);
}

TEST(ParseCountTest, Range) {
  EXPECT_EQ(*ParseCountInRange("256", 1, 256), 256u);
  Result<uint64_t> zero = ParseCountInRange("0", 1, 256);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("out of range"), std::string::npos);
  EXPECT_FALSE(ParseCountInRange("257", 1, 256).ok());
  EXPECT_FALSE(ParseCountInRange("x", 1, 256).ok());
}

TEST(ParseSeedTest, DecimalAndHex) {
  EXPECT_EQ(*ParseSeed("0"), 0u);
  EXPECT_EQ(*ParseSeed("42"), 42u);
  EXPECT_EQ(*ParseSeed("0xff"), 255u);
  EXPECT_EQ(*ParseSeed("0XFF"), 255u);
  EXPECT_EQ(*ParseSeed("0xffffffffffffffff"), UINT64_MAX);
  for (std::string_view bad : {"", "0x", "-1", "+1", "0x1g", "12a", "1e6",
                               "18446744073709551616", "0x10000000000000000"}) {
    EXPECT_FALSE(ParseSeed(bad).ok()) << bad;
  }
}

TEST(ParseProbabilityTest, Valid) {
  EXPECT_DOUBLE_EQ(*ParseProbability("0.01"), 0.01);
  EXPECT_DOUBLE_EQ(*ParseProbability("1e-3"), 0.001);
  EXPECT_DOUBLE_EQ(*ParseProbability("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseProbability("1%"), 0.01);
  EXPECT_DOUBLE_EQ(*ParseProbability("0.999999"), 0.999999);
  EXPECT_DOUBLE_EQ(*ParseProbability("1e-300"), 1e-300);
}

TEST(ParseProbabilityTest, Bounds) {
  for (std::string_view bad :
       {"0", "0.0", "1", "1.0", "1.5", "-0.1", "100%", "0%", "-1%"}) {
    Result<double> r = ParseProbability(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("between 0 and 1"), std::string::npos)
        << r.status().message();
  }
}

TEST(ParseProbabilityTest, Junk) {
  for (std::string_view bad :
       {"", "abc", "nan", "NaN", "inf", "-inf", "0.01x", "0.01 ", " 0.01",
        "+0.1", "1e-400", "%", "0x0.1", "1e999"}) {
    EXPECT_FALSE(ParseProbability(bad).ok()) << bad;
  }
}

// ParseArgs with the flag set of the real CLI's shape.
constexpr FlagDef kTestFlags[] = {
    {"db", true}, {"help", false}, {"capacity", true}, {"json", false}};

Result<ParsedArgs> Parse(std::vector<std::string_view> words) {
  return ParseArgs(words, kTestFlags);
}

TEST(ParseArgsTest, FlagsBeforeAndAfterTheCommand) {
  Result<ParsedArgs> a =
      Parse({"--db", "/x", "info", "name", "--json", "--capacity=5"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->command, "info");
  EXPECT_EQ(a->positional, std::vector<std::string>{"name"});
  EXPECT_EQ(*a->Get("db"), "/x");
  EXPECT_TRUE(a->Has("json"));
  EXPECT_EQ(*a->Get("json"), "");
  EXPECT_EQ(*a->Get("capacity"), "5");
  EXPECT_EQ(a->Get("help"), nullptr);

  Result<ParsedArgs> b = Parse({"info", "name", "--db", "/y"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b->Get("db"), "/y");
}

TEST(ParseArgsTest, DoubleDashAndDash) {
  Result<ParsedArgs> a = Parse({"add", "f", "-", "--", "--json", "-k", "-"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->positional,
            (std::vector<std::string>{"f", "-", "--json", "-k", "-"}));
  EXPECT_FALSE(a->Has("json"));
}

TEST(ParseArgsTest, ValueMayLookLikeAFlag) {
  Result<ParsedArgs> a = Parse({"create", "--capacity", "-5"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a->Get("capacity"), "-5");
  Result<ParsedArgs> b = Parse({"create", "--capacity="});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b->Get("capacity"), "");
}

TEST(ParseArgsTest, ShortHelp) {
  Result<ParsedArgs> a = Parse({"list", "-h"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->Has("help"));
}

TEST(ParseArgsTest, Errors) {
  struct Case {
    std::vector<std::string_view> words;
    std::string_view message;
  } cases[] = {
      {{"list", "--bogus"}, "unknown flag '--bogus'"},
      {{"list", "--bogus=1"}, "unknown flag '--bogus'"},
      {{"list", "-x"}, "unknown flag '-x'"},
      {{"list", "-5"}, "put it after --"},
      {{"list", "--db"}, "--db needs a value"},
      {{"list", "--json=yes"}, "--json takes no value"},
      {{"list", "--json", "--json"}, "--json given more than once"},
      {{"--db", "a", "list", "--db", "b"}, "--db given more than once"},
  };
  for (const Case& c : cases) {
    Result<ParsedArgs> r = Parse(c.words);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status().message();
  }
}

TEST(EscapeTest, Bytes) {
  EXPECT_EQ(EscapeBytes("users-1 a.b"), "users-1 a.b");
  EXPECT_EQ(EscapeBytes("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeBytes("a\nb\r\t"), "a\\nb\\r\\t");
  EXPECT_EQ(EscapeBytes(std::string_view("\0\x7f\xff", 3)), "\\x00\\x7f\\xff");
  EXPECT_EQ(EscapeBytes(""), "");
  EXPECT_EQ(Quoted("a'b"), "'a'b'");
}

TEST(EscapeTest, Json) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("q\"b\\"), "\"q\\\"b\\\\\\\\\"");
  EXPECT_EQ(JsonString("\n\xc3"), "\"\\\\n\\\\xc3\"");
}

TEST(ClosestWordTest, SuggestsOnlyNearWords) {
  const std::vector<std::string_view> names = {"create", "list", "exists",
                                               "migrate", "import"};
  EXPECT_EQ(ClosestWord("crate", names), "create");   // a missing letter
  EXPECT_EQ(ClosestWord("craete", names), "create");  // a swap
  EXPECT_EQ(ClosestWord("lsit", names), "list");
  EXPECT_EQ(ClosestWord("exist", names), "exists");
  EXPECT_EQ(ClosestWord("frobnicate", names), "");
  EXPECT_EQ(ClosestWord("ls", names), "");  // too short to guess
  EXPECT_EQ(ClosestWord("", names), "");
}

}  // namespace
}  // namespace shardfilter::tools
