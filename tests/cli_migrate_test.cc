// `shardfilter migrate`: round trips between every pair of types (from
// retained hashes, and from keys under a new seed), folding, another store,
// an interrupted-and-resumed run ending with the same filter as an
// uninterrupted one, saved states that do not fit, and every refusal.
#include <filesystem>

#include "cli_test_util.h"
#include "shardfilter/engine/database.h"

namespace shardfilter {
namespace {

using testing::CliDirTest;

constexpr int kKeys = 20000;

const char* const kTypes[] = {"bloom", "counting", "cuckoo"};

class CliMigrateTest : public CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    std::string keys;
    for (int i = 0; i < kKeys; ++i) keys += "key-" + std::to_string(i) + "\n";
    WriteFile(Path("keys.txt"), keys);
  }
  std::string Db(const std::string& d = "db") { return Path(d); }
  // Creates NAME of TYPE holding the key file.
  void Fill(const std::string& db, const std::string& name,
            const std::string& type, bool retain) {
    std::vector<std::string> args = {"--db",   db,     "create",     name,
                                     "--type", type,   "--capacity", "40000",
                                     "--fpp",  "0.001"};
    if (retain) args.push_back("--retain-hashes");
    ASSERT_EQ(Run(args).code, 0);
    ASSERT_EQ(
        Run({"--db", db, "import", name, Path("keys.txt"), "--quiet"}).code, 0);
  }
  // Every key of the file is in the filter, and it has the given type.
  void ExpectAllKeys(const std::string& db, const std::string& name,
                     FilterType type) {
    DatabaseOptions o;
    o.path = db;
    o.read_only = true;
    auto d = Database::Open(o);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto f = (*d)->Get(name);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ((*f)->type(), type);
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_TRUE((*f)->MayContain("key-" + std::to_string(i))) << i;
    }
  }
  std::string Field(const std::string& out, const std::string& key) {
    auto at = out.find(key + " ");
    if (at == std::string::npos) return "";
    auto end = out.find('\n', at);
    return out.substr(at + key.size() + 1, end - at - key.size() - 1);
  }
};

TEST_F(CliMigrateTest, EveryTypePairFromRetainedHashesAndFromKeys) {
  for (const char* from : kTypes) {
    for (const char* to : kTypes) {
      SCOPED_TRACE(std::string(from) + " -> " + to);
      const std::string db = Db(std::string(from) + "-" + to);
      Fill(db, "h", from, true);
      auto r = Run({"--db", db, "migrate", "h", "--type", to, "--capacity",
                    "60000", "--shards", "4", "--quiet"});
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(Field(r.out, "from"), "hashes");
      EXPECT_EQ(Field(r.out, "missing"), "0");
      EXPECT_EQ(Field(r.out, "verified"), std::to_string(kKeys));
      EXPECT_LE(std::stod(Field(r.out, "measured_fpr")), 0.002);
      ExpectAllKeys(db, "h", *ParseFilterType(to));
      // From keys, with a new seed (the filter keeps no hashes).
      Fill(db, "k", from, false);
      r = Run({"--db", db, "migrate", "k", Path("keys.txt"), "--type", to,
               "--seed", "99", "--quiet"});
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(Field(r.out, "from"), "keys");
      ExpectAllKeys(db, "k", *ParseFilterType(to));
    }
  }
}

TEST_F(CliMigrateTest, FoldAndAnotherStore) {
  Fill(Db(), "b", "bloom", false);
  auto r =
      Run({"--db", Db(), "migrate", "b", "--to-db", Db("other"), "--to-name",
           "c", "--type", "cuckoo", Path("keys.txt"), "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  ExpectAllKeys(Db("other"), "c", FilterType::kCuckoo);
  ExpectAllKeys(Db(), "b", FilterType::kBloom);  // the source is as it was
  r = Run({"--db", Db(), "migrate", "b", "--fold", "2", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Field(r.out, "from"), "fold");
  EXPECT_EQ(Field(r.out, "verified"), std::to_string(kKeys));
  ExpectAllKeys(Db(), "b", FilterType::kBloom);
  r = Run({"--db", Db(), "info", "b"});
  EXPECT_NE(r.out.find("20000"), std::string::npos) << r.out;
}

// The same filter whether or not the run was interrupted and resumed.
TEST_F(CliMigrateTest, InterruptedAndResumedGivesTheSameFilter) {
  for (const bool from_keys : {false, true}) {
    SCOPED_TRACE(from_keys ? "keys" : "hashes");
    const std::string a = Db(from_keys ? "ka" : "ha");
    const std::string b = Db(from_keys ? "kb" : "hb");
    Fill(a, "f", "counting", !from_keys);
    Fill(b, "f", "counting", !from_keys);
    std::vector<std::string> cmd = {"migrate",  "f", "--type", "cuckoo",
                                    "--shards", "2", "--quiet"};
    if (from_keys) cmd.push_back(Path("keys.txt"));
    auto with = [&](const std::string& db, std::vector<std::string> extra) {
      std::vector<std::string> args = {"--db", db};
      args.insert(args.end(), cmd.begin(), cmd.end());
      args.insert(args.end(), extra.begin(), extra.end());
      return Run(args);
    };
    auto r = with(a, {"--stop-after", "5000"});
    ASSERT_EQ(r.code, 130) << r.err;
    EXPECT_NE(r.err.find("run the same command again"), std::string::npos);
    r = with(a, {"--stop-after", "5000"});  // a second slice
    ASSERT_EQ(r.code, 130) << r.err;
    r = with(a, {});
    ASSERT_EQ(r.code, 0) << r.err;
    r = with(b, {});
    ASSERT_EQ(r.code, 0) << r.err;
    for (const auto& e : std::filesystem::directory_iterator(a)) {
      EXPECT_NE(e.path().extension(), ".state");  // removed once done
    }
    DatabaseOptions oa, ob;
    oa.path = a;
    ob.path = b;
    oa.read_only = ob.read_only = true;
    auto da = Database::Open(oa);
    auto dbb = Database::Open(ob);
    ASSERT_TRUE(da.ok() && dbb.ok());
    auto fa = (*da)->Get("f");
    auto fb = (*dbb)->Get("f");
    ASSERT_TRUE(fa.ok() && fb.ok());
    EXPECT_TRUE((*fa)->Equals(**fb));
    EXPECT_EQ((*fa)->type(), FilterType::kCuckoo);
  }
}

TEST_F(CliMigrateTest, SavedStatesThatDoNotFitAreRefused) {
  Fill(Db(), "f", "cuckoo", true);
  std::vector<std::string> cmd = {"--db",   Db(),    "migrate", "f",
                                  "--type", "bloom", "--quiet"};
  auto stop = cmd;
  stop.insert(stop.end(), {"--stop-after", "1000"});
  ASSERT_EQ(Run(stop).code, 130);
  std::string state;
  for (const auto& e : std::filesystem::directory_iterator(Db())) {
    if (e.path().extension() == ".state") state = e.path();
  }
  ASSERT_FALSE(state.empty());
  const std::string good = ReadFile(state);
  // Damaged: refused, names the way out, changes nothing.
  std::string bad = good;
  bad[bad.size() / 2] ^= 1;
  WriteFile(state, bad);
  auto r = Run(cmd);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("checksum"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--restart"), std::string::npos) << r.err;
  WriteFile(state, good.substr(0, 20));
  EXPECT_EQ(Run(cmd).code, 3);
  WriteFile(state, "not a state file at all");
  EXPECT_EQ(Run(cmd).code, 3);
  // The source changed since: refused.
  WriteFile(state, good);
  ASSERT_EQ(Run({"--db", Db(), "add", "f", "new-key", "--quiet"}).code, 0);
  r = Run(cmd);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("another request"), std::string::npos) << r.err;
  auto restarted = cmd;
  restarted.push_back("--restart");
  r = Run(restarted);
  ASSERT_EQ(r.code, 0) << r.err;
  ExpectAllKeys(Db(), "f", FilterType::kBloom);
}

TEST_F(CliMigrateTest, RefusesWhatItCannotDoAndSaysWhy) {
  Fill(Db(), "plain", "cuckoo", false);
  Fill(Db(), "kept", "bloom", true);
  auto r = Run({"--db", Db(), "migrate", "plain", "--capacity", "90000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("retain"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("KEYFILE"), std::string::npos) << r.err;
  r = Run({"--db", Db(), "migrate", "kept", "--seed", "5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("seed"), std::string::npos) << r.err;
  r = Run({"--db", Db(), "migrate", "plain", "--fold", "2"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run({"--db", Db(), "migrate", "kept", "--fold", "3"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run(
      {"--db", Db(), "migrate", "plain", Path("keys.txt"), "--retain-hashes"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run(
      {"--db", Db(), "migrate", "kept", "--retain-hashes", "--drop-hashes"});
  EXPECT_EQ(r.code, 2);
  r = Run({"--db", Db(), "migrate", "nope"});
  EXPECT_EQ(r.code, 3);
  r = Run({"--db", Db(), "migrate", "kept", "--from", "sideways"});
  EXPECT_EQ(r.code, 2);
  r = Run({"--db", Db(), "migrate", "kept", Path("missing-file.txt")});
  EXPECT_EQ(r.code, 3) << r.err;
  // A target too small for the keys: refused, the source unchanged.
  r = Run({"--db", Db(), "migrate", "kept", "--type", "cuckoo", "--capacity",
           "1000", "--nonscaling", "--quiet"});
  EXPECT_EQ(r.code, 3) << r.err;
  ExpectAllKeys(Db(), "kept", FilterType::kBloom);
  ExpectAllKeys(Db(), "plain", FilterType::kCuckoo);
}

}  // namespace
}  // namespace shardfilter
