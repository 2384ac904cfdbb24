#include "shardfilter/filters/envelope.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace shardfilter {
namespace {

std::string Sample() {
  std::string out;
  BeginEnvelope(FilterType::kBloom, 1, "PARAMS", 4, &out);
  out += "BODY";
  FinishEnvelope(&out);
  return out;
}

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h += d[c >> 4];
    h += d[c & 15];
  }
  return h;
}

// Pins the envelope bytes: a change here is a format change (docs/format.md).
TEST(Envelope, PinnedBytes) {
  const std::string e = Sample();
  ASSERT_EQ(e.size(), kEnvelopeHeaderSize + 6 + 4 + kEnvelopeTrailerSize);
  EXPECT_EQ(Hex(e.substr(0, 20)),
            "53464c54"            // "SFLT"
            "01"                  // type bloom
            "01"                  // version 1
            "0000"                // reserved
            "06000000"            // params length 6
            "0400000000000000");  // body length 4
  EXPECT_EQ(e.substr(20, 10), "PARAMSBODY");
  EXPECT_EQ(Hex(e.substr(30)), Hex([&] {
              std::string c;
              uint64_t sum = Checksum64(e.data(), 30);
              for (int i = 0; i < 8; ++i)
                c += static_cast<char>(sum >> (8 * i));
              return c;
            }()));
}

TEST(Envelope, OpensWhatItSealed) {
  const std::string sealed = Sample();  // the view points into it
  auto v = OpenEnvelope(sealed);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->type, FilterType::kBloom);
  EXPECT_EQ(v->version, 1);
  EXPECT_EQ(v->params, "PARAMS");
  EXPECT_EQ(v->body, "BODY");
  EXPECT_OK(CheckEnvelopeVersion(*v, 1));
}

TEST(Envelope, RejectsForeignBytes) {
  EXPECT_TRUE(OpenEnvelope("").status().IsInvalidArgument());
  EXPECT_TRUE(OpenEnvelope("hello world, not a filter at all")
                  .status()
                  .IsInvalidArgument());
}

TEST(Envelope, RejectsEveryTruncationAndPadding) {
  const std::string e = Sample();
  for (size_t len = 4; len < e.size(); ++len) {
    auto v = OpenEnvelope(std::string_view(e).substr(0, len));
    EXPECT_TRUE(v.status().IsCorruption())
        << len << " " << v.status().ToString();
  }
  EXPECT_TRUE(OpenEnvelope(e + "x").status().IsCorruption());
}

TEST(Envelope, RejectsEveryBitFlip) {
  const std::string e = Sample();
  for (size_t i = 0; i < e.size() * 8; ++i) {
    std::string bad = e;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_FALSE(OpenEnvelope(bad).ok()) << "bit " << i;
  }
}

TEST(Envelope, FutureAndZeroVersions) {
  std::string out;
  BeginEnvelope(FilterType::kCuckoo, 9, "", 0, &out);
  FinishEnvelope(&out);
  auto v = OpenEnvelope(out);
  ASSERT_TRUE(v.ok());
  Status s = CheckEnvelopeVersion(*v, 1);
  EXPECT_TRUE(s.IsNotSupported());
  EXPECT_NE(s.message().find("version 9"), std::string::npos) << s.message();
  BeginEnvelope(FilterType::kCuckoo, 0, "", 0, &out);
  FinishEnvelope(&out);
  EXPECT_TRUE(CheckEnvelopeVersion(*OpenEnvelope(out), 1).IsCorruption());
}

TEST(Envelope, HugeAnnouncedLengthsAreCorruptionNotCrash) {
  std::string e = Sample();
  for (int i = 12; i < 20; ++i) e[i] = static_cast<char>(0xff);  // body len
  EXPECT_TRUE(OpenEnvelope(e).status().IsCorruption());
  e = Sample();
  for (int i = 8; i < 12; ++i) e[i] = static_cast<char>(0xff);  // params len
  EXPECT_TRUE(OpenEnvelope(e).status().IsCorruption());
}

TEST(FilterType, NamesRoundTrip) {
  for (auto t :
       {FilterType::kBloom, FilterType::kCountingBloom, FilterType::kCuckoo}) {
    auto p = ParseFilterType(FilterTypeName(t));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, t);
  }
  EXPECT_TRUE(ParseFilterType("blom").status().IsInvalidArgument());
}

TEST(Status, ToStringAndContext) {
  EXPECT_EQ(Status::OK().ToString(), "OK");
  Status s = Status::Corruption("bad chunk").WithContext("filter \"x\"");
  EXPECT_EQ(s.ToString(), "Corruption: filter \"x\": bad chunk");
  Result<int> r = Status::NotFound("nope");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound());
  Result<int> v = 3;
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
}

}  // namespace
}  // namespace shardfilter
