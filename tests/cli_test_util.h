// A fixture for CLI tests that drive RunCli (tools/cli/cli.h) in process
// against a fresh temporary directory (removed afterwards).
#ifndef SHARDFILTER_TESTS_CLI_TEST_UTIL_H_
#define SHARDFILTER_TESTS_CLI_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "tools/cli/cli.h"

namespace shardfilter::testing {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

class CliDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shardfilter_cli7_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // `shardfilter ARGS...` with `in` as stdin.
  CliRun Run(const std::vector<std::string>& args, const std::string& in = "") {
    std::istringstream input(in);
    return RunWith(args, input);
  }
  CliRun RunWith(const std::vector<std::string>& args, std::istream& input) {
    std::vector<const char*> argv = {"shardfilter"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    CliRun r;
    r.code = tools::RunCli(static_cast<int>(argv.size()), argv.data(), input,
                           out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string ReadFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f),
                       std::istreambuf_iterator<char>());
  }
  static void WriteFile(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes;
  }

  std::string dir_;
};

// Options of a store at `path` (all other fields default).
inline DatabaseOptions StoreAt(std::string path, bool read_only = false) {
  DatabaseOptions o;
  o.path = std::move(path);
  o.read_only = read_only;
  return o;
}

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_CLI_TEST_UTIL_H_
