// `shardfilter import`: keys from files and stdin, --binary records, resume
// with --skip after an interrupt (a real SIGINT, raised while the input is
// read), and the plain progress lines of non-terminal output.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <streambuf>
#include <string>

#include "cli_test_util.h"
#include "shardfilter/engine/database.h"
#include "test_util.h"

namespace shardfilter::testing {
namespace {

std::string Lines(int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += "k" + std::to_string(i) + "\n";
  return s;
}

// An input served 1 KiB at a time that raises SIGINT (the real handler
// runs) once `after` bytes have been handed out.
class InterruptingBuf : public std::streambuf {
 public:
  InterruptingBuf(std::string text, size_t after)
      : text_(std::move(text)), after_(after) {}

 protected:
  int_type underflow() override {
    if (!raised_ && pos_ >= after_) {
      raised_ = true;
      raise(SIGINT);
    }
    if (pos_ >= text_.size()) return traits_type::eof();
    const size_t n = std::min<size_t>(1024, text_.size() - pos_);
    char* p = text_.data() + pos_;
    setg(p, p, p + n);
    pos_ += n;
    return traits_type::to_int_type(*p);
  }

 private:
  std::string text_;
  size_t after_;
  size_t pos_ = 0;
  bool raised_ = false;
};

class CliImportTest : public CliDirTest {
 protected:
  void Create(const std::string& db, const std::string& name,
              const std::string& type = "counting") {
    CliRun r = Run({"--db", Path(db), "create", name, "--type", type,
                    "--capacity", "100000", "--fpp", "0.01", "--shards", "4"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  bool SameFilter(const std::string& db1, const std::string& db2,
                  const std::string& name) {
    auto a = Database::Open(testing::StoreAt(Path(db1), true));
    auto b = Database::Open(testing::StoreAt(Path(db2), true));
    if (!a.ok() || !b.ok()) return false;
    auto fa = (*a)->Get(name);
    auto fb = (*b)->Get(name);
    return fa.ok() && fb.ok() && (*fa)->Equals(**fb);
  }
};

TEST_F(CliImportTest, FilesAndStdinGiveTheSameFilterAsAdd) {
  Create("a", "f");
  Create("b", "f");
  WriteFile(Path("1.txt"), Lines(0, 6000));
  WriteFile(Path("2.txt"), Lines(6000, 9000) + "crlf\r\n");
  CliRun r =
      Run({"--db", Path("a"), "import", "f", Path("1.txt"), "-", Path("2.txt")},
          "stdin-key\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("9002 keys read, 0 skipped, 9002 added"),
            std::string::npos)
      << r.err;
  r = Run({"--db", Path("b"), "add", "f", "--quiet"},
          Lines(0, 6000) + "stdin-key\n" + Lines(6000, 9000) + "crlf\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(SameFilter("a", "b", "f"));
}

TEST_F(CliImportTest, BinaryRecords) {
  Create("a", "f");
  Create("b", "f");
  std::string bin;
  std::string lines;
  for (int i = 0; i < 5000; ++i) {
    std::string key = "bin\n" + std::to_string(i);  // newlines are fine
    if (i == 7) key.clear();
    uint32_t n = static_cast<uint32_t>(key.size());
    for (int b = 0; b < 4; ++b) bin.push_back(static_cast<char>(n >> (8 * b)));
    bin += key;
  }
  WriteFile(Path("keys.bin"), bin);
  CliRun r =
      Run({"--db", Path("a"), "import", "f", Path("keys.bin"), "--binary"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto db = Database::Open(testing::StoreAt(Path("a"), true));
  ASSERT_OK(db.status());
  auto f = (*db)->Get("f");
  ASSERT_OK(f.status());
  EXPECT_TRUE((*f)->MayContain("bin\n4999"));
  EXPECT_TRUE((*f)->MayContain(""));
  EXPECT_EQ((*f)->Stats().total.items, 5000u);
  // A truncated record: exit 3, the keys before it loaded.
  WriteFile(Path("trunc.bin"), bin.substr(0, bin.size() - 2));
  r = Run({"--db", Path("b"), "import", "f", Path("trunc.bin"), "--binary"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("truncated key"), std::string::npos) << r.err;
}

TEST_F(CliImportTest, InterruptThenSkipResumesToTheSameFilter) {
  Create("a", "f", "cuckoo");
  Create("b", "f", "cuckoo");
  const std::string keys = Lines(0, 50000);
  CliRun whole = Run({"--db", Path("a"), "import", "f", "--quiet"}, keys);
  ASSERT_EQ(whole.code, 0) << whole.err;

  InterruptingBuf buf(keys, keys.size() / 3);
  std::istream in(&buf);
  CliRun first = RunWith({"--db", Path("b"), "import", "f"}, in);
  ASSERT_EQ(first.code, 130) << first.err;
  const std::string marker = "resume with --skip ";
  size_t at = first.err.find(marker);
  ASSERT_NE(at, std::string::npos) << first.err;
  const std::string done = first.err.substr(
      at + marker.size(), first.err.find('\n', at) - at - marker.size());
  EXPECT_GT(std::stoul(done), 0u);
  EXPECT_LT(std::stoul(done), 50000u);
  EXPECT_EQ(std::stoul(done) % 4096, 0u);  // whole batches only
  CliRun second =
      Run({"--db", Path("b"), "import", "f", "--skip", done, "--quiet"}, keys);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_TRUE(SameFilter("a", "b", "f"));
}

TEST_F(CliImportTest, PlainProgressLinesWhenNotATerminal) {
  Create("a", "f", "bloom");
  WriteFile(Path("k.txt"), Lines(0, 20000));
  CliRun r = Run({"--db", Path("a"), "import", "f", Path("k.txt"),
                  "--progress-every", "4096"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  int lines = 0;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    if (line.rfind("import f: ", 0) != 0) continue;
    ++lines;
    EXPECT_NE(line.find("keys/s"), std::string::npos) << line;
    EXPECT_NE(line.find("%"), std::string::npos) << line;  // size known
  }
  EXPECT_GE(lines, 4) << r.err;  // 4 batch lines + the final one
  EXPECT_NE(r.err.find("20000 keys, "), std::string::npos) << r.err;
  r = Run({"--db", Path("a"), "import", "f", "--quiet"}, "x\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliImportTest, Errors) {
  Create("a", "f");
  EXPECT_EQ(Run({"--db", Path("a"), "import", "nope"}, "x\n").code, 3);
  EXPECT_EQ(Run({"--db", Path("a"), "import", "f", Path("missing")}).code, 3);
  EXPECT_EQ(Run({"--db", Path("a"), "import", "f", "--skip", "-1"}).code, 2);
  EXPECT_EQ(Run({"--db", Path("a"), "import"}).code, 2);
}

}  // namespace
}  // namespace shardfilter::testing
