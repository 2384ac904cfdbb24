// The CLI's exit codes follow the engine's status codes, never a message:
// a bad command line (InvalidArgument) exits 2, anything the store or a
// limit refuses exits 3, and a refused input changes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.h"

namespace shardfilter::testing {
namespace {

class CliErrorCodesTest : public CliDirTest {};

// A file that is not an export at all is refused before the store is
// opened: it exits 3 and leaves no store behind. Before: the store
// directory was created first.
TEST_F(CliErrorCodesTest, ForeignImportFileCreatesNoStore) {
  WriteFile(Path("foreign"), "hello, world\n");
  CliRun r = Run({"--db", Path("db"), "import-filter", Path("foreign"), "x"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("not a shardfilter export"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(Path("db")));
}

// A valid export under a name the engine refuses is a bad command line.
TEST_F(CliErrorCodesTest, ImportUnderAnInvalidNameIsAUsageError) {
  ASSERT_EQ(Run({"--db", Path("a"), "create", "f", "--type", "bloom",
                 "--capacity", "1000", "--fpp", "0.01"})
                .code,
            0);
  ASSERT_EQ(Run({"--db", Path("a"), "export", "f", Path("f.sfex")}).code, 0);
  const std::string too_long(2000, 'n');
  CliRun r =
      Run({"--db", Path("b"), "import-filter", Path("f.sfex"), too_long});
  EXPECT_EQ(r.code, 2) << r.err;
}

// Over the filter's own memory limit: the engine says TooLarge (exit 3),
// naming the limit. Before: InvalidArgument, a usage error (exit 2).
TEST_F(CliErrorCodesTest, CreateOverTheFilterLimitIsTooLarge) {
  CliRun r = Run({"--db", Path("db"), "create", "big", "--type", "bloom",
                  "--capacity", "1e11", "--fpp", "0.01", "--shards", "1"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("TooLarge: "), std::string::npos) << r.err;
  EXPECT_EQ(Run({"--db", Path("db"), "list"}).out, "");
}

}  // namespace
}  // namespace shardfilter::testing
