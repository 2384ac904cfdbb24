// The CLI's expansion flags: `create --nonscaling`, `--expansion N`, and
// `info` reporting links per shard.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli/cli.h"

namespace shardfilter::tools {
namespace {

class CliExpansionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shardfilter_cli_expansion.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  int Run(std::vector<std::string> args, const std::string& in = "",
          std::string* out_text = nullptr, std::string* err_text = nullptr) {
    args.insert(args.begin(), {"shardfilter", "--db", dir_ + "/store"});
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::istringstream input(in);
    std::ostringstream out, err;
    int code =
        RunCli(static_cast<int>(argv.size()), argv.data(), input, out, err);
    if (out_text) *out_text = out.str();
    if (err_text) *err_text = err.str();
    return code;
  }
  static std::string Keys(int n) {
    std::string t;
    for (int i = 0; i < n; ++i) t += "k" + std::to_string(i) + "\n";
    return t;
  }
  std::string dir_;
};

TEST_F(CliExpansionTest, ScalableGrowsAndInfoShowsLinks) {
  ASSERT_EQ(Run({"create", "s", "--type", "bloom", "--capacity", "100", "--fpp",
                 "0.01", "--expansion", "4"}),
            0);
  ASSERT_EQ(Run({"add", "s"}, Keys(1000)), 0);
  std::string out;
  ASSERT_EQ(Run({"info", "s"}, "", &out), 0);
  EXPECT_NE(out.find("scaling               yes, expansion 4"),
            std::string::npos)
      << out;
  ASSERT_EQ(Run({"info", "s", "--json"}, "", &out), 0);
  EXPECT_NE(out.find("\"scalable\":true,\"expansion\":4"), std::string::npos);
  EXPECT_NE(out.find("\"links\":3"), std::string::npos) << out;  // 100+400+1600
}

TEST_F(CliExpansionTest, NonScalingRefusesAndFlagsAreChecked) {
  ASSERT_EQ(Run({"create", "n", "--type", "counting", "--capacity", "100",
                 "--fpp", "0.01", "--nonscaling"}),
            0);
  std::string out, err;
  EXPECT_NE(Run({"add", "n"}, Keys(150), &out, &err), 0);
  EXPECT_NE(err.find("Full"), std::string::npos) << err;
  ASSERT_EQ(Run({"info", "n", "--json"}, "", &out), 0);
  EXPECT_NE(out.find("\"scalable\":false"), std::string::npos);
  EXPECT_NE(out.find("\"items\":100"), std::string::npos) << out;
  EXPECT_NE(Run({"create", "x", "--type", "bloom", "--capacity", "10", "--fpp",
                 "0.01", "--expansion", "17"},
                "", &out, &err),
            0);
  EXPECT_NE(Run({"create", "y", "--type", "bloom", "--capacity", "10", "--fpp",
                 "0.01", "--nonscaling", "--expansion", "2"},
                "", &out, &err),
            0);
  EXPECT_NE(err.find("--expansion applies to scalable"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace shardfilter::tools
