// End-to-end tests of the shardfilter CLI, driven in process through
// RunCli (tools/cli/cli.h) against a fresh store directory per test. Skipped
// when the build has no tools (SHARDFILTER_BUILD_TOOLS=OFF).
//
// Over 400 lines: one end-to-end case per CLI command, on one fixture.
#include "tools/cli/cli.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "test_util.h"

namespace shardfilter::tools {
namespace {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string KeysText(const std::string& prefix, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += prefix + std::to_string(i) + "\n";
  return text;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shardfilter_cli_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/store";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `shardfilter ARGS...` exactly as given (no --db added).
  CliResult RunRaw(const std::vector<std::string>& args,
                   const std::string& in = "") {
    std::vector<const char*> argv = {"shardfilter"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::istringstream input(in);
    std::ostringstream out, err;
    CliResult r;
    r.code =
        RunCli(static_cast<int>(argv.size()), argv.data(), input, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }
  // Runs `shardfilter --db <test store> ARGS...`.
  CliResult Run(std::vector<std::string> args, const std::string& in = "") {
    args.insert(args.begin(), {"--db", db_});
    return RunRaw(args, in);
  }
  void Create(const std::string& name, const std::string& type,
              const std::string& capacity = "10000",
              const std::string& fpp = "0.0001") {
    CliResult r = Run(
        {"create", name, "--type", type, "--capacity", capacity, "--fpp", fpp});
    ASSERT_EQ(r.code, 0) << r.err;
  }

  std::string dir_;
  std::string db_;
};

TEST_F(CliTest, RoundTrip) {
  Create("users", "cuckoo");
  CliResult r = Run({"add", "users", "alice", "bob", "carol"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // stdout stays clean without --ack
  EXPECT_NE(r.err.find("3 keys, 3 added, 0 failed"), std::string::npos)
      << r.err;

  r = Run({"exists", "users", "bob", "mallory", "alice", "carol", "trent"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n0\n1\n1\n0\n");

  r = Run({"info", "users"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("type                  cuckoo"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("items                 3\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("target_fpr            0.0001"), std::string::npos);
  EXPECT_NE(r.out.find("durability            journal"), std::string::npos);
  EXPECT_NE(r.out.find("shard"), std::string::npos);

  r = Run({"info", "users", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"name\":\"users\",\"type\":\"cuckoo\"", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("\"items\":3,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"per_shard\":[{\"shard\":0"), std::string::npos);

  Create("seen", "bloom");
  r = Run({"list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "seen\nusers\n");

  ASSERT_EQ(Run({"add", "seen", "x"}).code, 0);
  r = Run({"checkpoint", "seen"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("shards_written "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_lock_hold_ms "), std::string::npos) << r.out;
  r = Run({"checkpoint"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("shards_written 0\n"), std::string::npos) << r.out;

  r = Run({"verify"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("filters 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("problems 0\n"), std::string::npos) << r.out;

  r = Run({"drop", "users"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"compact"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"list"});
  EXPECT_EQ(r.out, "seen\n");
  EXPECT_EQ(Run({"exists", "seen", "x"}).out, "1\n");
  r = Run({"exists", "users", "alice"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

TEST_F(CliTest, GlobalFlagsAfterTheCommand) {
  CliResult r = RunRaw({"create", "f", "--type", "bloom", "--capacity", "1e4",
                        "--fpp", "1%", "--db", db_});
  ASSERT_EQ(r.code, 0) << r.err;
  r = RunRaw({"list", "--db=" + db_});
  EXPECT_EQ(r.out, "f\n");
}

TEST_F(CliTest, ExistsFromStdinInInputOrder) {
  Create("b", "bloom", "5000", "1e-4");
  CliResult r = Run({"add", "b"}, KeysText("in-", 2000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("2000 keys, 2000 added"), std::string::npos) << r.err;

  // Interleave present and absent keys; one output line per input line.
  std::string query;
  for (int i = 0; i < 2000; ++i) {
    query += "in-" + std::to_string(i) + "\nout-" + std::to_string(i) + "\n";
  }
  r = Run({"exists", "b"}, query);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4000u);
  int false_positives = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_TRUE(lines[i] == "0" || lines[i] == "1") << lines[i];
    if (i % 2 == 0) {
      ASSERT_EQ(lines[i], "1") << "false negative at line " << i;
    } else {
      false_positives += lines[i] == "1";
    }
  }
  EXPECT_LE(false_positives, 5);
}

TEST_F(CliTest, StdinLinesCrlfAndEmptyKeys) {
  Create("c", "counting");
  // "a\r\n" is key "a"; the empty line is the empty key; no final newline.
  CliResult r = Run({"add", "c"}, "a\r\n\nb");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("3 keys, 3 added"), std::string::npos) << r.err;
  r = Run({"exists", "c", "a", "b", "", "a\r", "zz"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n1\n1\n0\n0\n");
  r = Run({"exists", "c"}, "\n\nzz\n");
  EXPECT_EQ(r.out, "1\n1\n0\n");
  r = Run({"exists", "c"}, "");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, KeysStartingWithDashGoAfterDoubleDash) {
  Create("c", "cuckoo");
  CliResult r = Run({"add", "c", "-k"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("after --"), std::string::npos) << r.err;
  ASSERT_EQ(Run({"add", "c", "--", "-k", "--json"}).code, 0);
  r = Run({"exists", "c", "--", "-k", "--json", "-"});
  EXPECT_EQ(r.out, "1\n1\n0\n");
}

// Parses "ack N" lines; checks they are strictly increasing and returns them.
std::vector<uint64_t> Acks(const std::string& out) {
  std::vector<uint64_t> acks;
  for (const std::string& line : Lines(out)) {
    EXPECT_EQ(line.rfind("ack ", 0), 0u) << "not an ack line: " << line;
    acks.push_back(std::stoull(line.substr(4)));
    if (acks.size() > 1) {
      EXPECT_GT(acks.back(), acks[acks.size() - 2]);
    }
  }
  return acks;
}

TEST_F(CliTest, AckJournalAndSyncAfterEveryBatch) {
  Create("f", "counting", "100000");
  for (std::string mode : {"journal", "sync"}) {
    CliResult r =
        Run({"add", "f", "--ack", "--durability", mode}, KeysText(mode, 10000));
    ASSERT_EQ(r.code, 0) << r.err;
    std::vector<uint64_t> acks = Acks(r.out);
    ASSERT_EQ(acks.size(), 3u) << r.out;  // 4096, 8192, 10000
    EXPECT_EQ(acks.back(), 10000u);
  }
  // Keys as arguments: one batch, one ack.
  CliResult r = Run({"add", "f", "--ack", "x", "y"});
  EXPECT_EQ(r.out, "ack 2\n");
  // Nothing to add still ends with the count.
  r = Run({"add", "f", "--ack"}, "");
  EXPECT_EQ(r.out, "ack 0\n");
}

TEST_F(CliTest, AckNoneOnlyAfterTheCheckpoint) {
  Create("f", "bloom", "100000", "0.01");
  CliResult r =
      Run({"add", "f", "--ack", "--durability", "none"}, KeysText("k", 10000));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "ack 10000\n") << r.err;
  EXPECT_EQ(r.err.find("not in effect"), std::string::npos) << r.err;
  // The session override leaves the stored durability as it was.
  r = Run({"info", "f"});
  EXPECT_NE(r.out.find("durability            journal"), std::string::npos);
  r = Run({"exists", "f", "k0", "k9999"});
  EXPECT_EQ(r.out, "1\n1\n");
}

TEST_F(CliTest, CuckooFullIsCountedAndExitsOne) {
  ASSERT_EQ(Run({"create", "tiny", "--type", "cuckoo", "--capacity", "100",
                 "--fpp", "0.01", "--nonscaling"})
                .code,
            0);
  CliResult r = Run({"add", "tiny", "--ack"}, KeysText("k", 5000));
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("Full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more failed keys not shown"), std::string::npos);
  EXPECT_NE(r.err.find("5000 keys, "), std::string::npos) << r.err;
  std::vector<uint64_t> acks = Acks(r.out);
  ASSERT_FALSE(acks.empty());
  EXPECT_EQ(acks.back(), 5000u);
  // The keys that were added are still there: the first ones all fit.
  r = Run({"exists", "tiny", "k0", "k1", "k2"});
  EXPECT_EQ(r.out, "1\n1\n1\n");
}

TEST_F(CliTest, RemoveNotFoundExitsOne) {
  Create("c", "cuckoo");
  ASSERT_EQ(Run({"add", "c", "a", "b"}).code, 0);
  CliResult r = Run({"remove", "c", "a", "never-added"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("key #2 'never-added': NotFound"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("2 keys, 1 removed, 1 failed"), std::string::npos);
  r = Run({"exists", "c", "a", "b"});
  EXPECT_EQ(r.out, "0\n1\n");
}

TEST_F(CliTest, UnionOfBloomFilters) {
  Create("week", "bloom");
  Create("mon", "bloom");
  Create("tue", "bloom");
  Create("cf", "cuckoo");
  ASSERT_EQ(Run({"add", "mon", "a", "b"}).code, 0);
  ASSERT_EQ(Run({"add", "tue", "c"}).code, 0);
  CliResult r = Run({"union", "week", "mon", "tue"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("union of 2 filter(s) into 'week'"), std::string::npos);
  EXPECT_EQ(Run({"exists", "week", "a", "b", "c"}).out, "1\n1\n1\n");
  // A bad source changes nothing, the good one before it included.
  ASSERT_EQ(Run({"add", "tue", "late"}).code, 0);
  r = Run({"union", "week", "tue", "cf"});
  EXPECT_EQ(r.code, kExitUsage);  // InvalidArgument
  EXPECT_NE(r.err.find("only Bloom filters can be unioned"), std::string::npos)
      << r.err;
  EXPECT_EQ(Run({"exists", "week", "late"}).out, "0\n");
  r = Run({"union", "week", "nosuch"});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(Run({"union", "week"}).code, kExitUsage);
}

TEST_F(CliTest, RemoveOnBloomIsNotSupported) {
  Create("b", "bloom");
  ASSERT_EQ(Run({"add", "b", "a"}).code, 0);
  CliResult r = Run({"remove", "b", "a"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_NE(r.err.find("shardfilter: NotSupported: "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("bloom"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"exists", "b", "a"}).out, "1\n");
}

TEST_F(CliTest, UnknownFilterAndStoreErrorsExitThree) {
  Create("f", "bloom");
  for (std::vector<std::string> args :
       {std::vector<std::string>{"exists", "nope", "k"},
        {"add", "nope", "k"},
        {"remove", "nope", "k"},
        {"info", "nope"},
        {"drop", "nope"},
        {"checkpoint", "nope"}}) {
    CliResult r = Run(args);
    EXPECT_EQ(r.code, kExitError) << args[0];
    EXPECT_EQ(r.err.rfind("shardfilter: NotFound: ", 0), 0u) << r.err;
  }
  CliResult r = Run(
      {"create", "f", "--type", "cuckoo", "--capacity", "10", "--fpp", "0.1"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_NE(r.err.find("AlreadyExists"), std::string::npos) << r.err;
}

TEST_F(CliTest, ReadCommandsOnAMissingStoreCreateNothing) {
  for (std::vector<std::string> args : {std::vector<std::string>{"list"},
                                        {"verify"},
                                        {"info", "f"},
                                        {"exists", "f", "k"},
                                        {"add", "f", "k"},
                                        {"drop", "f"},
                                        {"checkpoint"}}) {
    CliResult r = Run(args);
    EXPECT_EQ(r.code, kExitError) << args[0];
    EXPECT_NE(r.err.find("no shardfilter store"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(db_)) << args[0];
  }
}

TEST_F(CliTest, StoreHeldByAWriterGivesAClearError) {
  Create("f", "bloom");
  DatabaseOptions options;
  options.path = db_;
  auto db = Database::Open(options);
  ASSERT_OK(db.status());
  CliResult r = Run({"add", "f", "k"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_NE(r.err.find("another process"), std::string::npos) << r.err;
  ASSERT_OK((*db)->Close());
}

TEST_F(CliTest, ReopenPersists) {
  Create("c", "counting", "10000", "0.001");
  ASSERT_EQ(Run({"add", "c"}, KeysText("k", 3000)).code, 0);
  ASSERT_EQ(Run({"remove", "c", "k7"}).code, 0);
  ASSERT_EQ(Run({"add", "c", "--durability", "sync", "late"}).code, 0);
  // Every Run is a fresh process-like open: recovery from the store.
  CliResult r = Run({"exists", "c", "k0", "k2999", "k7", "late", "absent"});
  EXPECT_EQ(r.out, "1\n1\n0\n1\n0\n");
  r = Run({"info", "c", "--json"});
  EXPECT_NE(r.out.find("\"items\":3000,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"deletes\":1,"), std::string::npos) << r.out;
  EXPECT_EQ(Run({"verify"}).code, 0);
}

TEST_F(CliTest, CreateOptionsAreStored) {
  CliResult r =
      Run({"create", "cf", "--type", "cuckoo", "--capacity", "1M", "--fpp",
           "0.001", "--shards", "4", "--seed", "0x2a", "--durability", "sync",
           "--fingerprint-bits", "16", "--bucket-size", "8"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 shards"), std::string::npos) << r.out;
  r = Run({"info", "cf"});
  EXPECT_NE(r.out.find("shards                4\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("seed                  0x000000000000002a"),
            std::string::npos);
  EXPECT_NE(r.out.find("durability            sync"), std::string::npos);
  EXPECT_NE(r.out.find("fingerprint_bits      16"), std::string::npos);
  EXPECT_NE(r.out.find("bucket_size           8"), std::string::npos);
  ASSERT_EQ(Run({"create", "bl", "--type", "bloom", "--capacity", "1000",
                 "--fpp", "0.01", "--layout", "classic", "--k", "5"})
                .code,
            0);
  r = Run({"info", "bl"});
  EXPECT_NE(r.out.find("layout                classic"), std::string::npos);
  EXPECT_NE(r.out.find("k                     5\n"), std::string::npos)
      << r.out;
}

TEST_F(CliTest, NamesAreListedEscaped) {
  ASSERT_EQ(Run({"create", "a\nb\\c\x01", "--type", "bloom", "--capacity",
                 "100", "--fpp", "0.1"})
                .code,
            0);
  ASSERT_EQ(Run({"create", "--type", "bloom", "--capacity", "100", "--fpp",
                 "0.1", "--", "-dash"})
                .code,
            0);
  CliResult r = Run({"list"});
  EXPECT_EQ(r.out, "-dash\na\\nb\\\\c\\x01\n");
  r = Run({"info", "a\nb\\c\x01", "--json"});
  EXPECT_EQ(r.out.rfind("{\"name\":\"a\\\\nb\\\\\\\\c\\\\x01\"", 0), 0u)
      << r.out;
}

TEST_F(CliTest, UsageErrorsExitTwoAndChangeNothing) {
  const std::vector<std::string> kCreate = {"create", "f",          "--type",
                                            "bloom",  "--capacity", "1000"};
  auto create_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = kCreate;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{}, "no command given"},
      {{"frobnicate"}, "unknown command 'frobnicate' (see"},
      {{"crate", "f"}, "unknown command 'crate'; did you mean create?"},
      {{"lsit"}, "did you mean list?"},
      {{"create"}, "'create' needs a filter NAME"},
      {kCreate, "create needs --fpp"},
      {{"create", "f", "--fpp", "0.1", "--capacity", "5"}, "needs --type"},
      {create_with({"--fpp", "0.1", "--bogus"}), "unknown flag '--bogus'"},
      {create_with({"--fpp", "0.1", "--ack"}), "--ack does not apply"},
      {create_with({"--fpp"}), "--fpp needs a value"},
      {create_with({"--fpp", "0"}), "between 0 and 1"},
      {create_with({"--fpp", "1"}), "between 0 and 1"},
      {create_with({"--fpp", "abc"}), "--fpp: 'abc' is not a valid number"},
      {{"create", "f", "--type", "bloom", "--fpp", "0.1", "--capacity", "-5"},
       "--capacity: '-5' is not a valid number: must not be negative"},
      {{"create", "f", "--type", "bloom", "--fpp", "0.1", "--capacity", "0"},
       "out of range"},
      {{"create", "f", "--type", "bloom", "--fpp", "0.1", "--capacity",
        "12abc"},
       "unexpected 'abc'"},
      {{"create", "f", "--type", "bloom", "--fpp", "0.1", "--capacity",
        "99999999999999999999"},
       "larger than"},
      {{"create", "f", "--type", "bogus", "--fpp", "0.1", "--capacity", "9"},
       "not a filter type"},
      {create_with({"--fpp", "0.1", "--shards", "3"}), "not a power of two"},
      {create_with({"--fpp", "0.1", "--shards", "512"}), "out of range"},
      {create_with({"--fpp", "0.1", "--seed", "0xzz"}), "--seed"},
      {create_with({"--fpp", "0.1", "--durability", "forever"}),
       "not none, journal or sync"},
      {create_with({"--fpp", "0.1", "--fingerprint-bits", "16"}),
       "applies to cuckoo filters only"},
      {create_with({"--fpp", "0.1", "--layout", "diagonal"}),
       "not auto, split, blocked or classic"},
      {{"create", "f", "--type", "cuckoo", "--fpp", "0.1", "--capacity", "9",
        "--layout", "classic"},
       "applies to bloom filters only"},
      {{"create", "f", "--type", "cuckoo", "--fpp", "0.1", "--capacity", "9",
        "--fingerprint-bits", "10"},
       "must be 8, 12 or 16"},
      {{"create", "f", "--type", "cuckoo", "--fpp", "0.1", "--capacity", "9",
        "--bucket-size", "3"},
       "must be 2, 4 or 8"},
      {{"create", "f", "g", "--type", "bloom"}, "unexpected argument 'g'"},
      {{"info"}, "'info' needs a filter NAME"},
      {{"info", "a", "b"}, "unexpected argument 'b'"},
      {{"list", "x"}, "unexpected argument 'x'"},
      {{"list", "--json"}, "--json does not apply to 'list'"},
      {{"list", "--json=1"}, "--json takes no value"},
      {{"add", "f", "--durability", "forever", "k"}, "not none, journal"},
      {{"add"}, "'add' needs a filter NAME"},
      {{"exists", "f", "--ack"}, "--ack does not apply to 'exists'"},
      {{"drop", "f", "-x"}, "unknown flag '-x'"},
      {{"demo", "--items", "0"}, "--items: '0' is out of range"},
      {{"demo", "--fpp", "2"}, "between 0 and 1"},
  };
  for (const Case& c : cases) {
    CliResult r = Run(c.args);
    std::string what = c.args.empty() ? "(none)" : c.args[0];
    EXPECT_EQ(r.code, kExitUsage) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("shardfilter: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_FALSE(std::filesystem::exists(db_)) << what;
  }
}

// A file as the store is a usage error naming it (was RocksDB's "IO error:
// ... Not a directory", exit 1), and the file is left alone.
TEST_F(CliTest, DbThatIsAFileIsAUsageError) {
  for (const char* path : {"/etc/passwd", "/dev/null"}) {
    for (std::vector<std::string> args :
         {std::vector<std::string>{"list"},
          {"create", "f", "--type", "bloom", "--capacity", "9", "--fpp",
           "0.1"}}) {
      args.push_back("--db");
      args.push_back(path);
      CliResult r = RunRaw(args);
      EXPECT_EQ(r.code, kExitUsage) << path << ": " << r.err;
      EXPECT_NE(
          r.err.find(std::string("--db '") + path + "' is not a directory"),
          std::string::npos)
          << r.err;
    }
  }
}

TEST_F(CliTest, EmptyDbIsAUsageError) {
  CliResult r = RunRaw({"list", "--db", ""});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--db needs a directory"), std::string::npos) << r.err;
}

TEST_F(CliTest, EngineInvalidArgumentIsAUsageError) {
  // 2000 name bytes: over kMaxFilterNameBytes, rejected by the engine.
  CliResult r = Run({"create", std::string(2000, 'n'), "--type", "bloom",
                     "--capacity", "10", "--fpp", "0.1"});
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_NE(r.err.find("InvalidArgument"), std::string::npos) << r.err;
}

TEST_F(CliTest, HelpAndVersion) {
  CliResult r = RunRaw({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
  EXPECT_EQ(RunRaw({"-h"}).out, r.out);
  for (std::string cmd : {"create", "add", "remove", "exists", "info", "list",
                          "drop", "checkpoint", "verify", "demo"}) {
    EXPECT_NE(r.out.find("  " + cmd), std::string::npos) << cmd;
    CliResult c = RunRaw({cmd, "--help"});
    EXPECT_EQ(c.code, 0) << cmd;
    EXPECT_EQ(c.out.rfind("Usage: shardfilter " + cmd, 0), 0u) << c.out;
    EXPECT_NE(c.out.find("Example"), std::string::npos) << cmd;
    EXPECT_EQ(RunRaw({"-h", cmd}).out, c.out) << cmd;
  }
  r = RunRaw({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("shardfilter ", 0), 0u);
  EXPECT_FALSE(std::filesystem::exists(db_));
}

TEST_F(CliTest, DemoRunsSmall) {
  CliResult r = RunRaw({"demo", "--items", "20000", "--probes", "20000"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("cuckoo"), std::string::npos) << r.out;
  // Every Bloom layout, the default named (split block at 1%).
  EXPECT_NE(r.out.find("bloom (split, default)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bloom (blocked)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bloom (classic)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace shardfilter::tools
