// A directory that holds a damaged store is Corruption (exit 3) naming what
// is missing, never "no store", and no command re-initialises it; a
// non-empty directory that is not a store is refused and left as it was
// (DESIGN.md invariant 6).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "cli_test_util.h"
#include "store_test_util.h"

namespace shardfilter::testing {
namespace {

namespace fs = std::filesystem;

std::string Lines(int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += "key-" + std::to_string(i) + "\n";
  return s;
}

// Every file's name and bytes under dir.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    out[fs::relative(e.path(), dir).string()] = std::string(
        std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return out;
}

class StoreSafetyTest : public CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    db_ = Path("db");
  }
  // A store with 500 checkpointed keys and 100 more only in the WAL.
  void MakeStore() {
    ASSERT_EQ(Run({"--db", db_, "create", "f", "--type", "cuckoo", "--capacity",
                   "10000", "--fpp", "0.001"})
                  .code,
              0);
    ASSERT_EQ(Run({"--db", db_, "add", "f", "--quiet"}, Lines(0, 500)).code, 0);
    ASSERT_EQ(Run({"--db", db_, "checkpoint"}).code, 0);
    ASSERT_EQ(Run({"--db", db_, "add", "f", "--quiet"}, Lines(500, 600)).code,
              0);
    ASSERT_EQ(Run({"--db", db_, "dedup", "s", "--quiet"}, Lines(0, 50)).code,
              0);
  }
  // Every command that may write or create refuses with exit 3 and the
  // message, and leaves every file as it was.
  void ExpectRefusedUntouched(const std::string& message) {
    const auto before = Snapshot(db_);
    const std::vector<std::vector<std::string>> commands = {
        {"list"},
        {"exists", "f", "key-1"},
        {"verify"},
        {"create", "g", "--type", "bloom", "--capacity", "100", "--fpp",
         "0.01"},
        {"create", "g", "--type", "bloom", "--capacity", "100", "--fpp",
         "0.01"},
        {"dedup", "s"},
        {"add", "f", "key-x"},
        {"checkpoint"},
        {"import", "f"},
    };
    for (const auto& c : commands) {
      std::vector<std::string> args = {"--db", db_};
      args.insert(args.end(), c.begin(), c.end());
      CliRun r = Run(args, "key-new\n");
      // verify reports the store that does not open as its problem.
      const bool verify = c[0] == "verify";
      const std::string& text = verify ? r.out : r.err;
      EXPECT_EQ(r.code, verify ? 1 : 3) << c[0] << ": " << r.err;
      EXPECT_NE(text.find("Corruption"), std::string::npos) << text;
      EXPECT_NE(text.find(message), std::string::npos) << text;
      EXPECT_EQ(r.err.find("no shardfilter store"), std::string::npos);
    }
    EXPECT_EQ(Snapshot(db_), before) << "a refused command changed files";
  }
  // After restoring the removed files, all 600 keys are there.
  void ExpectAllKeys() {
    CliRun r = Run({"--db", db_, "exists", "f"}, Lines(0, 600));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find('0'), std::string::npos);
  }
  std::string db_;
};

TEST_F(StoreSafetyTest, MissingCurrentIsCorruptionNotANewStore) {
  MakeStore();
  const std::string current = ReadFile(db_ + "/CURRENT");
  fs::remove(db_ + "/CURRENT");
  ExpectRefusedUntouched("CURRENT is missing");
  WriteFile(db_ + "/CURRENT", current);
  ExpectAllKeys();
}

TEST_F(StoreSafetyTest, MissingCurrentAndWalIsCorruption) {
  MakeStore();
  fs::remove(db_ + "/CURRENT");
  for (const auto& e : fs::directory_iterator(db_)) {
    if (e.path().extension() == ".log") fs::remove(e.path());
  }
  ExpectRefusedUntouched("CURRENT is missing");
}

TEST_F(StoreSafetyTest, MissingManifestIsCorruption) {
  MakeStore();
  std::string current = ReadFile(db_ + "/CURRENT");
  const std::string manifest = current.substr(0, current.size() - 1);
  const std::string bytes = ReadFile(db_ + "/" + manifest);
  fs::remove(db_ + "/" + manifest);
  ExpectRefusedUntouched(manifest + ", named by CURRENT, is missing");
  WriteFile(db_ + "/" + manifest, bytes);
  ExpectAllKeys();
}

TEST_F(StoreSafetyTest, TruncatedManifestIsCorruptionExit3) {
  MakeStore();
  std::string current = ReadFile(db_ + "/CURRENT");
  const std::string manifest = current.substr(0, current.size() - 1);
  const std::string bytes = ReadFile(db_ + "/" + manifest);
  WriteFile(db_ + "/" + manifest, bytes.substr(0, 20));
  ExpectRefusedUntouched("MANIFEST");
  WriteFile(db_ + "/" + manifest, bytes);
  ExpectAllKeys();
}

TEST_F(StoreSafetyTest, MissingWalIsCorruption) {
  MakeStore();
  std::map<std::string, std::string> logs;
  for (const auto& e : fs::directory_iterator(db_)) {
    if (e.path().extension() == ".log") {
      logs[e.path().string()] = ReadFile(e.path().string());
      fs::remove(e.path());
    }
  }
  ASSERT_FALSE(logs.empty());
  ExpectRefusedUntouched("write-ahead log");
  for (const auto& [path, bytes] : logs) WriteFile(path, bytes);
  ExpectAllKeys();
}

TEST_F(StoreSafetyTest, CreateRefusesNonEmptyDirectoryThatIsNoStore) {
  fs::create_directories(db_);
  WriteFile(db_ + "/LOG", "my own log\n");
  WriteFile(db_ + "/LOG.old.1", "older\n");
  WriteFile(db_ + "/notes.txt", "keep me\n");
  const auto before = Snapshot(db_);
  for (const std::vector<std::string>& c :
       {std::vector<std::string>{"create", "f", "--type", "bloom", "--capacity",
                                 "100", "--fpp", "0.01"},
        {"dedup", "s"},
        {"list"}}) {
    std::vector<std::string> args = {"--db", db_};
    args.insert(args.end(), c.begin(), c.end());
    CliRun r = Run(args, "a\n");
    EXPECT_NE(r.code, 0) << c[0];
    EXPECT_NE(r.err.find("not a shardfilter store"), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(Snapshot(db_), before);
  // An empty directory is fine.
  const std::string empty = Path("empty");
  fs::create_directories(empty);
  EXPECT_EQ(Run({"--db", empty, "create", "f", "--type", "bloom", "--capacity",
                 "100", "--fpp", "0.01"})
                .code,
            0);
}

TEST_F(StoreSafetyTest, MigrateToDbRefusesNonEmptyDirectoryThatIsNoStore) {
  MakeStore();
  const std::string other = Path("other");
  fs::create_directories(other);
  WriteFile(other + "/LOG", "mine\n");
  const auto before = Snapshot(other);
  WriteFile(Path("keys.txt"), Lines(0, 600));
  CliRun r = Run({"--db", db_, "migrate", "f", Path("keys.txt"), "--to-db",
                  other, "--capacity", "20000", "--quiet"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("not a shardfilter store"), std::string::npos) << r.err;
  EXPECT_EQ(Snapshot(other), before);
}

// Case 10: one damaged filter is unavailable with its reason; the others
// keep serving (before: every command on every filter failed, exit 3).
TEST_F(StoreSafetyTest, OneDamagedFilterDoesNotTakeTheStoreDown) {
  for (const char* name : {"good", "bad"}) {
    ASSERT_EQ(Run({"--db", db_, "create", name, "--type", "cuckoo",
                   "--capacity", "10000", "--fpp", "0.001", "--shards", "2"})
                  .code,
              0);
    ASSERT_EQ(Run({"--db", db_, "add", name, "--quiet"}, Lines(0, 500)).code,
              0);
  }
  ASSERT_EQ(Run({"--db", db_, "checkpoint"}).code, 0);
  std::string damaged_key, damaged_value;
  {
    RawStore raw(db_);
    ASSERT_TRUE(raw.ok());
    for (auto& [k, v] : raw.Scan("shards")) {
      if (k.find("bad") == std::string::npos) continue;
      v[v.size() / 2] ^= 0x40;
      raw.Put("shards", k, v);
      damaged_key = k;
      damaged_value = v;
      break;
    }
  }
  ASSERT_FALSE(damaged_key.empty());
  CliRun r = Run({"--db", db_, "list"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "bad\ngood\n");
  EXPECT_NE(r.err.find("\"bad\" is unavailable"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"--db", db_, "info", "good"}).code, 0);
  r = Run({"--db", db_, "exists", "good"}, Lines(0, 500));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('0'), std::string::npos);
  r = Run({"--db", db_, "exists", "bad", "key-1"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("Corruption"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chunk"), std::string::npos) << r.err;
  r = Run({"--db", db_, "verify"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("problem: Corruption"), std::string::npos) << r.out;
  // Writes to the healthy filter work; the damaged one is left as it is.
  EXPECT_EQ(Run({"--db", db_, "add", "good", "more"}).code, 0);
  EXPECT_EQ(Run({"--db", db_, "checkpoint"}).code, 0);
  r = Run({"--db", db_, "create", "bad", "--type", "bloom", "--capacity", "10",
           "--fpp", "0.1"});
  // Refused: the name is taken (the CLI's create does not load "bad" to
  // find it damaged: filters load on first use).
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  {
    RawStore raw(db_);
    bool found = false;
    for (auto& [k, v] : raw.Scan("shards")) {
      if (k == damaged_key) found = v == damaged_value;
    }
    EXPECT_TRUE(found) << "the damaged filter's data was changed";
  }
  // Dropping it is the user's choice; then the store is clean.
  EXPECT_EQ(Run({"--db", db_, "drop", "bad"}).code, 0);
  EXPECT_EQ(Run({"--db", db_, "verify"}).code, 0);
  EXPECT_EQ(Run({"--db", db_, "list"}).out, "good\n");
}

}  // namespace
}  // namespace shardfilter::testing
